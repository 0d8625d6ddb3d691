package history

import "testing"

func TestCheckFencing(t *testing.T) {
	tests := []struct {
		name  string
		holds []Hold
		want  int
	}{
		{"increasing", []Hold{hold("A", W, 0, 10, 1), hold("B", W, 10, 20, 2), hold("A", W, 20, 30, 3)}, 0},
		{"gaps allowed", []Hold{hold("A", W, 0, 10, 1), hold("B", W, 10, 20, 7)}, 0},
		{"1, 2, 2 of another owner", []Hold{hold("A", W, 0, 10, 1), hold("B", W, 10, 20, 2), hold("C", W, 20, 30, 2)}, 1},
		{"1, 2, 2 of the same owner later", []Hold{hold("A", W, 0, 10, 1), hold("B", W, 10, 20, 2), hold("B", W, 25, 30, 2)}, 1},
		{"decreasing", []Hold{hold("A", W, 0, 10, 5), hold("B", W, 10, 20, 4)}, 1},
		{"reentrant write keeps the token", []Hold{hold("A", W, 0, 10, 3), hold("A", W, 2, 8, 3), hold("B", W, 10, 20, 4)}, 0},
		{"reentrant chain", []Hold{hold("A", W, 0, 10, 3), hold("A", W, 9, 30, 3), hold("A", W, 20, 40, 3), hold("B", W, 40, 50, 4)}, 0},
		{"reentrant write lowers the token", []Hold{hold("A", W, 0, 10, 3), hold("A", W, 2, 8, 2)}, 1},
		{"read gets the current token", []Hold{hold("A", W, 0, 10, 3), hold("A", R, 2, 8, 3), hold("B", R, 10, 20, 3)}, 0},
		{"read below an earlier write", []Hold{hold("A", W, 0, 10, 3), hold("B", R, 10, 20, 2)}, 1},
		{"read after the last token expired", []Hold{hold("A", W, 0, 10, 3), hold("B", R, 20, 30, 0)}, 0},
		{"read above every known write", []Hold{hold("A", W, 0, 10, 3), hold("B", R, 10, 20, 5)}, 0},
		{"read before any write", []Hold{hold("B", R, 0, 10, 0), hold("A", W, 10, 20, 1)}, 0},
		{"locks apart", []Hold{hold("A", W, 0, 10, 5), {Owner: "B", Lock: "M", Mode: W, From: at(10), To: at(20), Token: 1}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckFencing(tt.holds)
			if len(got) != tt.want {
				t.Fatalf("%d violations, want %d: %v", len(got), tt.want, got)
			}
			for _, v := range got {
				if v.Kind != ViolationFencing {
					t.Errorf("violation %v: want kind %q", v, ViolationFencing)
				}
			}
		})
	}
}
