package fairness

// Jain returns Jain's fairness index of x,
//
//	J = (sum x_i)^2 / (n * sum x_i^2),
//
// 1 when every x_i is equal, 1/n when one of them has everything. It
// returns 0 when x is empty or all zero (nothing to share).
func Jain(x []int) float64 {
	var sum, squares float64
	for _, v := range x {
		sum += float64(v)
		squares += float64(v) * float64(v)
	}
	if squares == 0 {
		return 0
	}
	return sum * sum / (float64(len(x)) * squares)
}

// Grants describes how grants were spread over the clients of a class.
type Grants struct {
	Min, Max int
	Mean     float64
	Jain     float64
	// Unfair is max > 2 x min, the flag of measuring.md.
	Unfair bool
}

// SpreadOf returns the Grants of per-client grant counts x (see
// GrantsPerClient). An empty x gives the zero Grants.
func SpreadOf(x []int) Grants {
	if len(x) == 0 {
		return Grants{}
	}
	g := Grants{Min: x[0], Max: x[0], Jain: Jain(x)}
	sum := 0
	for _, v := range x {
		g.Min, g.Max = min(g.Min, v), max(g.Max, v)
		sum += v
	}
	g.Mean = float64(sum) / float64(len(x))
	g.Unfair = g.Max > 2*g.Min
	return g
}

// GrantsPerClient counts the granted requests of each of n clients
// (Request.Client in [0, n)); a client without grants counts 0. Requests
// of other clients are ignored.
func GrantsPerClient(reqs []Request, n int) []int {
	x := make([]int, n)
	for _, q := range reqs {
		if !q.TimedOut && q.Client >= 0 && q.Client < n {
			x[q.Client]++
		}
	}
	return x
}
