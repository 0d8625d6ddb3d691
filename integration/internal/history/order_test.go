package history

import (
	"testing"
	"time"
)

func wg(owner string, call, ret int, token uint64, keeps bool, endsAfter int) WriteGrant {
	w := WriteGrant{Owner: owner, Lock: "L", Call: at(call), Return: at(ret), Token: token, KeepsPlace: keeps}
	if endsAfter > 0 {
		w.EndsAfter = at(endsAfter)
	}
	return w
}

func TestCheckWriterFIFO(t *testing.T) {
	const gap = 100 * time.Millisecond
	tests := []struct {
		name   string
		writes []WriteGrant
		want   int
	}{
		{"in order", []WriteGrant{wg("a", 0, 500, 1, true, 0), wg("b", 200, 900, 2, true, 0)}, 0},
		{"overtaken", []WriteGrant{wg("a", 0, 900, 2, true, 0), wg("b", 200, 500, 1, true, 0)}, 1},
		{"overtaken by a TryLock", []WriteGrant{wg("a", 0, 900, 2, true, 0), wg("t", 300, 301, 1, false, 0)}, 1},
		{"too close to tell", []WriteGrant{wg("a", 0, 900, 2, true, 0), wg("b", 50, 500, 1, true, 0)}, 0},
		{"earlier one may have lost its place", []WriteGrant{wg("a", 0, 900, 2, false, 0), wg("b", 200, 500, 1, true, 0)}, 0},
		{"returned out of order, granted in order", []WriteGrant{wg("a", 0, 900, 1, true, 0), wg("b", 200, 500, 2, true, 0)}, 0},
		{"overtaken within a long lead", []WriteGrant{{Owner: "a", Lock: "L", Call: at(0), Return: at(900), Token: 2, KeepsPlace: true, Lead: time.Second}, wg("b", 300, 500, 1, true, 0)}, 0},
		{"overtaken past a long lead", []WriteGrant{{Owner: "a", Lock: "L", Call: at(0), Return: at(1900), Token: 2, KeepsPlace: true, Lead: time.Second}, wg("b", 1100, 1500, 1, true, 0)}, 1},
		{"locks apart", []WriteGrant{wg("a", 0, 900, 2, true, 0), {Owner: "b", Lock: "M", Call: at(200), Return: at(500), Token: 1}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckWriterFIFO(tt.writes, gap)
			if len(got) != tt.want {
				t.Fatalf("%d violations, want %d: %v", len(got), tt.want, got)
			}
			for _, v := range got {
				if v.Kind != ViolationFIFO {
					t.Errorf("violation %v: want kind %q", v, ViolationFIFO)
				}
			}
		})
	}
}

func TestCheckPhaseFairAdmission(t *testing.T) {
	const lead = 100 * time.Millisecond
	read := func(owner string, call, ret int) WaitingRead {
		return WaitingRead{Owner: owner, Lock: "L", Call: at(call), Return: at(ret)}
	}
	tests := []struct {
		name   string
		writes []WriteGrant
		reads  []WaitingRead
		want   int
	}{
		{"reader enters first", []WriteGrant{wg("w1", 0, 10, 1, false, 1000), wg("w2", 100, 1500, 2, false, 0)}, []WaitingRead{read("r", 200, 1010)}, 0},
		{"next writer first", []WriteGrant{wg("w1", 0, 10, 1, false, 1000), wg("w2", 100, 1005, 2, false, 0)}, []WaitingRead{read("r", 200, 1200)}, 1},
		{"reader came too late to tell", []WriteGrant{wg("w1", 0, 10, 1, false, 1000), wg("w2", 100, 1005, 2, false, 0)}, []WaitingRead{read("r", 950, 1200)}, 0},
		{"reader came before the write was granted", []WriteGrant{wg("w1", 0, 300, 1, false, 1000), wg("w2", 100, 1005, 2, false, 0)}, []WaitingRead{read("r", 200, 1200)}, 1},
		{"write granted after the reader returned", []WriteGrant{wg("w1", 0, 1300, 1, false, 2000), wg("w2", 100, 2005, 2, false, 0)}, []WaitingRead{read("r", 200, 1200)}, 0},
		{"write granted before w1", []WriteGrant{wg("w0", 0, 5, 1, false, 8), wg("w1", 0, 10, 2, false, 1000)}, []WaitingRead{read("r", 200, 1200)}, 0},
		{"end unknown", []WriteGrant{wg("w1", 0, 10, 1, false, 0), wg("w2", 100, 1005, 2, false, 0)}, []WaitingRead{read("r", 200, 1200)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckPhaseFairAdmission(tt.writes, tt.reads, lead)
			if len(got) != tt.want {
				t.Fatalf("%d violations, want %d: %v", len(got), tt.want, got)
			}
			for _, v := range got {
				if v.Kind != ViolationPhaseFair {
					t.Errorf("violation %v: want kind %q", v, ViolationPhaseFair)
				}
			}
		})
	}
}
