package fairness

import (
	"math"
	"testing"
)

func TestJain(t *testing.T) {
	tests := []struct {
		name string
		x    []int
		want float64
	}{
		{"empty", nil, 0},
		{"all zero", []int{0, 0, 0}, 0},
		{"one client", []int{7}, 1},       // 49 / (1*49)
		{"even", []int{5, 5, 5, 5}, 1},    // 20^2=400 / (4*100=400)
		{"one has all", []int{10, 0}, .5}, // 100 / (2*100) = 1/n
		{"one of four", []int{0, 0, 8, 0}, .25},
		{"1,2,3", []int{1, 2, 3}, 36.0 / 42},   // 6^2=36 / (3*(1+4+9)=42) = 0.857142...
		{"10,20", []int{10, 20}, 900.0 / 1000}, // 30^2=900 / (2*(100+400)=1000) = 0.9
		{"4,0,2,2", []int{4, 0, 2, 2}, 0.667},  // 8^2=64 / (4*(16+0+4+4)=96) = 0.6666...
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Jain(tt.x); math.Abs(got-tt.want) > 1e-3 {
				t.Errorf("Jain(%v) = %v, want %v", tt.x, got, tt.want)
			}
		})
	}
}

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		name string
		x    []int
		want Grants
	}{
		{"empty", nil, Grants{}},
		// min 10, max 20, mean 15, J 0.9; 20 > 2*10 is false
		{"10,20", []int{10, 20}, Grants{Min: 10, Max: 20, Mean: 15, Jain: 0.9}},
		// min 10, max 21, mean 15.5; 21 > 20: unfair; J = 31^2/(2*(100+441)) = 961/1082
		{"10,21", []int{10, 21}, Grants{Min: 10, Max: 21, Mean: 15.5, Jain: 961.0 / 1082, Unfair: true}},
		// min 0: any grant elsewhere is unfair; mean 8/4 = 2; J = 64/96
		{"4,0,2,2", []int{4, 0, 2, 2}, Grants{Min: 0, Max: 4, Mean: 2, Jain: 64.0 / 96, Unfair: true}},
		// all zero: 0 > 0 is false
		{"0,0", []int{0, 0}, Grants{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SpreadOf(tt.x)
			if got.Min != tt.want.Min || got.Max != tt.want.Max || got.Unfair != tt.want.Unfair ||
				math.Abs(got.Mean-tt.want.Mean) > 1e-9 || math.Abs(got.Jain-tt.want.Jain) > 1e-9 {
				t.Errorf("SpreadOf(%v) = %+v, want %+v", tt.x, got, tt.want)
			}
		})
	}
}

func TestGrantsPerClient(t *testing.T) {
	reqs := []Request{
		{Client: 0}, {Client: 0}, {Client: 2},
		{Client: 1, TimedOut: true}, // not a grant
		{Client: 5},                 // outside [0, 3): ignored
	}
	got := GrantsPerClient(reqs, 3)
	want := []int{2, 0, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("GrantsPerClient = %v, want %v", got, want)
		}
	}
}
