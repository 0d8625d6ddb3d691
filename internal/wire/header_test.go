package wire

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairrw/rwlock/internal/lua"
)

// This file checks every request type against the header of its script:
// the header's "-- KEYS[n] ..." and "-- ARGV[n] ..." lines are the
// protocol's specification, and the layouts (layout.go) are what Go sends.

// spec is the position a header line documents: KEYS[3] (fixed 3), KEYS[8..]
// (run from 8: one position per entry), or ARGV[3i-1] (periodic: a*i+b for
// entry i = 1, 2, ...).
type spec struct {
	fixed int
	run   int
	a, b  int
}

func (s spec) String() string {
	switch {
	case s.fixed > 0:
		return strconv.Itoa(s.fixed)
	case s.run > 0:
		return strconv.Itoa(s.run) + ".."
	default:
		return fmt.Sprintf("%di%+d", s.a, s.b)
	}
}

// entry is one documented position, with its description (continuation
// lines joined).
type entry struct {
	array string // "KEYS" or "ARGV"
	pos   spec
	text  string
}

var (
	// An include: "KEYS[1]..KEYS[9] and ARGV[1]..ARGV[8] as in fair_lib.lua".
	includeRE = regexp.MustCompile(`^KEYS\[1\]\.\.KEYS\[(\d+)\] and ARGV\[1\]\.\.ARGV\[(\d+)\] as in (\w+)\.lua(.*)$`)
	// A position: "KEYS[10]", "ARGV[12..]", "ARGV[2i+1]".
	positionRE = regexp.MustCompile(`(KEYS|ARGV)\[([^\]]+)\]`)
	fixedRE    = regexp.MustCompile(`^(\d+)$`)
	runRE      = regexp.MustCompile(`^(\d+)\.\.$`)
	periodicRE = regexp.MustCompile(`^(\d*)i([+-]\d+)?$`)
)

func parseSpec(s string) (spec, error) {
	if m := fixedRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return spec{fixed: n}, nil
	}
	if m := runRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return spec{run: n}, nil
	}
	if m := periodicRE.FindStringSubmatch(s); m != nil {
		a, b := 1, 0
		if m[1] != "" {
			a, _ = strconv.Atoi(m[1])
		}
		if m[2] != "" {
			b, _ = strconv.Atoi(m[2])
		}
		return spec{a: a, b: b}, nil
	}
	return spec{}, fmt.Errorf("position %q is none of n, n.., ai+b", s)
}

// header is what a script's header documents.
type header struct {
	entries []entry
	// include is the "as in" form: KEYS[1..keys] and ARGV[1..args] are
	// those of file's header.
	include *struct {
		keys, args int
		file       string
	}
}

// parseHeader reads the comment block a script opens with. A line that
// starts with KEYS[...] or ARGV[...] documents one position, or several
// separated by "; "; a more indented line continues it; a parenthesis
// opened on an include line is prose until it closes.
func parseHeader(src string) (header, error) {
	var h header
	var last *entry
	depth := 0
	for _, line := range strings.Split(src, "\n") {
		raw, ok := strings.CutPrefix(line, "--")
		if !ok {
			break // the header ends with the first line of code
		}
		if depth > 0 {
			depth += strings.Count(raw, "(") - strings.Count(raw, ")")
			continue
		}
		text := strings.TrimPrefix(raw, " ")
		if last != nil && strings.HasPrefix(text, " ") && strings.TrimSpace(text) != "" {
			last.text += " " + strings.TrimSpace(text)
			continue
		}
		last = nil
		if m := includeRE.FindStringSubmatch(text); m != nil {
			keys, _ := strconv.Atoi(m[1])
			args, _ := strconv.Atoi(m[2])
			h.include = &struct {
				keys, args int
				file       string
			}{keys, args, m[3]}
			depth = strings.Count(m[4], "(") - strings.Count(m[4], ")")
			continue
		}
		if !strings.HasPrefix(text, "KEYS[") && !strings.HasPrefix(text, "ARGV[") {
			continue
		}
		// Positions start the line or follow "; ".
		locs := positionRE.FindAllStringSubmatchIndex(text, -1)
		var starts [][]int
		for _, l := range locs {
			if l[0] == 0 || strings.HasSuffix(text[:l[0]], "; ") {
				starts = append(starts, l)
			}
		}
		for i, l := range starts {
			end := len(text)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			pos, err := parseSpec(text[l[4]:l[5]])
			if err != nil {
				return h, fmt.Errorf("%q: %w", line, err)
			}
			h.entries = append(h.entries, entry{array: text[l[2]:l[3]], pos: pos, text: strings.TrimSpace(text[l[1]:end])})
			last = &h.entries[len(h.entries)-1]
		}
	}
	return h, nil
}

// documented returns the positions the header of script documents, the
// included ones first, in the header's order.
func documented(t *testing.T, script string) []entry {
	t.Helper()
	h, err := parseHeader(lua.Source(script))
	if err != nil {
		t.Fatalf("%s.lua: %v", script, err)
	}
	if h.include == nil {
		return h.entries
	}
	var out []entry
	for _, e := range documented(t, h.include.file) {
		n := h.include.keys
		if e.array == "ARGV" {
			n = h.include.args
		}
		if e.pos.fixed >= 1 && e.pos.fixed <= n {
			out = append(out, e)
		}
	}
	if keys, args := countOf(out, "KEYS"), countOf(out, "ARGV"); keys != h.include.keys || args != h.include.args {
		t.Fatalf("%s.lua takes KEYS[1..%d] and ARGV[1..%d] as in %s.lua, which documents %d and %d of them",
			script, h.include.keys, h.include.args, h.include.file, keys, args)
	}
	return append(out, h.entries...)
}

func countOf(entries []entry, array string) int {
	n := 0
	for _, e := range entries {
		if e.array == array {
			n++
		}
	}
	return n
}

// namer is a layout, of whatever request.
type namer interface{ names() (head, each []string) }

// request is what the test knows of the Go side of one script: its two
// layouts, and a sample request rendered with two entries of any run.
type request struct {
	keys, args namer
	render     func() (keys, args []string)
}

// requests holds every script fairrw calls, by its file name.
var requests = map[string]request{
	"fair_acquire":     {&fairAcquireKeys, &fairAcquireArgs, (&FairAcquire{}).Render},
	"fair_unlock":      {&fairUnlockKeys, &fairUnlockArgs, (&FairUnlock{}).Render},
	"fair_unlock_fast": {&fairUnlockFastKeys, &fairUnlockFastArgs, (&FairUnlockFast{}).Render},
	"fair_force_unlock": {&fairForceUnlockKeys, &fairForceUnlockArgs,
		(&FairForceUnlock{}).Render},
	"fair_renew": {&fairRenewKeys, &fairRenewArgs,
		(&FairRenew{Holds: make([]FairRenewHold, 2)}).Render},
	"redisson_read_acquire":  {&redissonReadAcquireKeys, &redissonReadAcquireArgs, (&RedissonReadAcquire{}).Render},
	"redisson_write_acquire": {&redissonWriteAcquireKeys, &redissonWriteAcquireArgs, (&RedissonWriteAcquire{}).Render},
	"redisson_unlock": {&redissonUnlockKeys, &redissonUnlockArgs,
		(&RedissonUnlock{Release: Release{Kept: Kept{Reads: make([]time.Duration, 2)}}}).Render},
	"redisson_force_unlock": {&redissonForceUnlockKeys, &redissonForceUnlockArgs, (&RedissonForceUnlock{}).Render},
	"redisson_renew": {&redissonRenewKeys, &redissonRenewArgs,
		(&RedissonRenew{Holds: make([]RedissonRenewHold, 2)}).Render},
	"redisson_lock_acquire":      {&mutexAcquireKeys, &mutexAcquireArgs, (&MutexAcquire{}).Render},
	"redisson_lock_unlock":       {&mutexUnlockKeys, &mutexUnlockArgs, (&MutexUnlock{}).Render},
	"redisson_lock_force_unlock": {&mutexForceUnlockKeys, &mutexForceUnlockArgs, (&MutexForceUnlock{}).Render},
	"inspect":                    {&inspectKeys, &inspectArgs, (&Inspect{LeaseKeys: make([]string, 2)}).Render},
	"probe":                      {&probeKeys, &probeArgs, (&Probe{}).Render},
	"fence_raise":                {&fenceRaiseKeys, &fenceRaiseArgs, (&FenceRaise{}).Render},
}

// parts are the files that are only a part of a composed script (see
// lua.Compose): libraries, and the fast path that runs before a full
// script and takes exactly its KEYS and ARGV.
var parts = map[string]string{
	"common":            "",
	"fair_lib":          "",
	"redisson_lib":      "",
	"fair_acquire_fast": "fair_acquire",
}

// TestEveryScriptHasARequest: each script of lua/ is a request's here, or a
// part of one; a new script without a Go request fails.
func TestEveryScriptHasARequest(t *testing.T) {
	for _, name := range lua.Names() {
		if _, ok := parts[name]; ok {
			continue
		}
		if _, ok := requests[name]; !ok {
			t.Errorf("%s.lua has no request type in internal/wire (or is not listed among the parts)", name)
		}
	}
	for name := range requests {
		if !slices.Contains(lua.Names(), name) {
			t.Errorf("request of %s: no such script", name)
		}
	}
}

// TestFastPathsTakeTheFullScripts: a fast path documents that it takes
// exactly its full script's KEYS and ARGV.
func TestFastPathsTakeTheFullScripts(t *testing.T) {
	for part, full := range parts {
		if full == "" {
			continue
		}
		h, err := parseHeader(lua.Source(part))
		if err != nil {
			t.Fatal(err)
		}
		entries := documented(t, full)
		switch {
		case h.include == nil || h.include.file != full:
			t.Errorf("%s.lua does not say it takes the KEYS and ARGV of %s.lua", part, full)
		case len(h.entries) > 0:
			t.Errorf("%s.lua documents positions of its own: %v", part, h.entries)
		case h.include.keys != countOf(entries, "KEYS") || h.include.args != countOf(entries, "ARGV"):
			t.Errorf("%s.lua takes KEYS[1..%d] and ARGV[1..%d]; %s.lua documents %d and %d",
				part, h.include.keys, h.include.args, full, countOf(entries, "KEYS"), countOf(entries, "ARGV"))
		}
	}
}

// TestRequestsMatchHeaders: for every script fairrw calls, its request
// renders exactly the KEYS and ARGV its header documents, in that order:
// position for position, the header documents the position the layout
// fills (fixed positions first, then an entry's columns, ai+b or n..), and
// its line names what the layout's column is (the column's name appears in
// it, case aside). A position added, dropped or moved on either side fails.
// A sample request, rendered, has as many values as its layouts say: no
// value is sent outside them.
func TestRequestsMatchHeaders(t *testing.T) {
	for name, req := range requests {
		t.Run(name, func(t *testing.T) {
			entries := documented(t, name)
			keys, args := req.render()
			for _, a := range []struct {
				array    string
				layout   namer
				rendered []string
			}{{"KEYS", req.keys, keys}, {"ARGV", req.args, args}} {
				head, each := a.layout.names()
				var doc []entry
				for _, e := range entries {
					if e.array == a.array {
						doc = append(doc, e)
					}
				}
				checkLayout(t, name, a.array, head, each, doc)
				want := len(head)
				if len(each) > 0 {
					want += 2 * len(each) // the samples have two entries
				}
				if len(a.rendered) != want {
					t.Errorf("%s: the sample renders %d %s, its layout has %d fixed and %d per entry (of 2 entries)",
						name, len(a.rendered), a.array, len(head), len(each))
				}
			}
		})
	}
}

// checkLayout compares one array's layout with its documented positions.
func checkLayout(t *testing.T, script, array string, head, each []string, doc []entry) {
	t.Helper()
	type want struct {
		name string
		ok   func(spec) bool
		desc string
	}
	var wants []want
	for i, n := range head {
		p := i + 1
		wants = append(wants, want{n, func(s spec) bool { return s == spec{fixed: p} }, fmt.Sprintf("%s[%d]", array, p)})
	}
	h, g := len(head), len(each)
	for j, n := range each {
		periodic := spec{a: g, b: h - g + j + 1}
		ok := func(s spec) bool { return s == periodic || g == 1 && s == spec{run: h + 1} }
		desc := fmt.Sprintf("%s[%v]", array, periodic)
		if g == 1 {
			desc += fmt.Sprintf(" or %s[%d..]", array, h+1)
		}
		wants = append(wants, want{n, ok, desc})
	}
	for i := range max(len(wants), len(doc)) {
		switch {
		case i >= len(doc):
			t.Errorf("%s: Go sends %s (%q), which its header does not document", script, wants[i].desc, wants[i].name)
		case i >= len(wants):
			t.Errorf("%s: the header documents %s[%v] (%q), which Go does not send", script, array, doc[i].pos, doc[i].text)
		case !wants[i].ok(doc[i].pos):
			t.Errorf("%s: Go sends %s (%q) where the header documents %s[%v] (%q)", script, wants[i].desc, wants[i].name, array, doc[i].pos, doc[i].text)
		case !strings.Contains(strings.ToLower(doc[i].text), strings.ToLower(wants[i].name)):
			t.Errorf("%s: Go sends %q as %s, which the header documents as %q", script, wants[i].name, wants[i].desc, doc[i].text)
		}
	}
}
