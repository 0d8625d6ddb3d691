package wire

// A column is one position of a script's KEYS or ARGV: the name of what the
// script's header documents there, which header_test.go finds in the
// header's line for that position, and how a request of type R renders it.
// Name and rendering sit on one line, so a position cannot move without
// its name.
type column[R any] struct {
	name   string
	render func(*R) string
}

// A layout renders one of a script's two arrays, KEYS or ARGV: head fills
// the fixed positions 1..len(head); then, for a script that takes a run of
// entries (a renewal's holds, the lease keys Inspect reads), each of
// entries(r) fills the columns of each in turn.
type layout[R, E any] struct {
	head    []column[R]
	each    []column[E]
	entries func(*R) []E
}

// none is the entry type of a layout without a run.
type none struct{}

// fixed is a layout of fixed positions only.
func fixed[R any](head ...column[R]) layout[R, none] {
	return layout[R, none]{head: head}
}

// entriesOf returns r's run of entries, if the layout has one.
func (l *layout[R, E]) entriesOf(r *R) []E {
	if l.entries == nil {
		return nil
	}
	return l.entries(r)
}

// size is how many values the layout renders for r, given its entries.
func (l *layout[R, E]) size(entries []E) int {
	return len(l.head) + len(entries)*len(l.each)
}

// fill appends the array to out, which has room for it.
func (l *layout[R, E]) fill(out []string, r *R, entries []E) []string {
	for _, c := range l.head {
		out = append(out, c.render(r))
	}
	for i := range entries {
		for _, c := range l.each {
			out = append(out, c.render(&entries[i]))
		}
	}
	return out
}

// renderBoth renders a script's KEYS and ARGV into one allocation of
// exactly their total size: a request is rendered on every call, and both
// arrays live exactly as long as the command built from them. keys is
// capped at its length, so that appending to it never writes into args.
func renderBoth[R, EK, EA any](k *layout[R, EK], a *layout[R, EA], r *R) (keys, args []string) {
	ke, ae := k.entriesOf(r), a.entriesOf(r)
	nk := k.size(ke)
	out := make([]string, 0, nk+a.size(ae))
	out = k.fill(out, r, ke)
	out = a.fill(out, r, ae)
	return out[:nk:nk], out[nk:]
}

// names returns the names of the fixed positions and of an entry's
// columns, for header_test.go.
func (l *layout[R, E]) names() (head, each []string) {
	for _, c := range l.head {
		head = append(head, c.name)
	}
	for _, c := range l.each {
		each = append(each, c.name)
	}
	return head, each
}

// prefixed returns cols rendered from the part of R that at selects: the
// columns a script shares with a library (fair_lib.lua's), reused by every
// request that embeds that part.
func prefixed[R, P any](at func(*R) *P, cols []column[P]) []column[R] {
	out := make([]column[R], len(cols))
	for i, c := range cols {
		render := c.render
		out[i] = column[R]{c.name, func(r *R) string { return render(at(r)) }}
	}
	return out
}
