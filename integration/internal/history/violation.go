package history

import (
	"fmt"
	"strings"
)

// Kinds of Violation.
const (
	ViolationExclusion       = "exclusion"
	ViolationFencing         = "fencing"
	ViolationLinearizability = "linearizability"
)

// maxViolations bounds the violations a checker lists; a final one counts
// the rest. A broken lock over a long history would otherwise report every
// pair of its holds.
const maxViolations = 1000

// A Violation is one broken rule, with the holds or ops that break it.
type Violation struct {
	Kind   string // ViolationExclusion, ViolationFencing or ViolationLinearizability
	Detail string
	Ops    []Op   `json:",omitempty"`
	Holds  []Hold `json:",omitempty"`
}

// String describes the violation over a few lines, for reports.
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Kind, v.Detail)
	for _, h := range v.Holds {
		fmt.Fprintf(&b, "\n\thold %s", h)
	}
	for _, op := range v.Ops {
		fmt.Fprintf(&b, "\n\top %s", op)
	}
	return b.String()
}

// collector gathers up to maxViolations violations of one kind and counts
// the rest.
type collector struct {
	kind    string
	list    []Violation
	dropped int
}

func (c *collector) add(v Violation) {
	if len(c.list) < maxViolations {
		v.Kind = c.kind
		c.list = append(c.list, v)
		return
	}
	c.dropped++
}

func (c *collector) result() []Violation {
	if c.dropped > 0 {
		c.list = append(c.list, Violation{Kind: c.kind, Detail: fmt.Sprintf("%d more not listed", c.dropped)})
	}
	return c.list
}
