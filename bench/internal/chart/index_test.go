package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndex checks that the index lists every entry under its group, in
// order, with the summary on top and every text escaped.
func TestIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.html")
	entries := []Entry{
		{Group: "contended", Title: "grants per second", File: "contended-throughput.svg"},
		{Group: "reader-flood", Title: "writer waits", File: "reader-flood-writer-waits.svg"},
		{Group: "reader-flood", Title: "writer wait tail <p99>", File: "reader-flood-writer-tail.svg"},
	}
	if err := Index(path, "fairbench & charts", []string{"verdict: phase-fair", "line 2"}, entries); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"<title>fairbench &amp; charts</title>", "verdict: phase-fair\nline 2", "3 charts",
		`<h2 id="g1">contended</h2>`, `<h2 id="g2">reader-flood</h2>`, "writer wait tail &lt;p99&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q:\n%s", want, page)
		}
	}
	last := -1
	for _, e := range entries {
		i := strings.Index(page, `<img src="`+e.File+`"`)
		if i < 0 || i < last {
			t.Errorf("%s: not shown, or out of order", e.File)
		}
		last = i
	}
	if err := Index(filepath.Join(t.TempDir(), "index"), "T", nil, nil); err == nil {
		t.Error("an index without extension: no error")
	}
}
