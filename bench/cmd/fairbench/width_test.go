package main

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWrapText(t *testing.T) {
	for _, tc := range []struct {
		first, indent, s string
		width            int
		want             []string
	}{
		{"", "", "", 10, []string{""}},
		{"a: ", "   ", "one two three", 10, []string{"a: one two", "   three"}},
		{"", "  ", "one two three four", 9, []string{"one two", "  three", "  four"}},
		{"x ", "  ", "abcdefghijkl", 6, []string{"x abcd", "  efgh", "  ijkl"}},
		{"", "", "fits exactly", 12, []string{"fits exactly"}},
	} {
		got := wrapText(tc.first, tc.indent, tc.s, tc.width)
		if !slices.Equal(got, tc.want) {
			t.Errorf("wrapText(%q, %q, %q, %d) = %q, want %q", tc.first, tc.indent, tc.s, tc.width, got, tc.want)
		}
		for _, l := range got {
			if utf8.RuneCountInString(l) > tc.width {
				t.Errorf("line %q is over %d runes", l, tc.width)
			}
		}
		if words := strings.Join(strings.Fields(strings.Join(got, " ")), ""); strings.ReplaceAll(tc.first+tc.s, " ", "") != words {
			// Every word kept, in order (cut words join up again).
			t.Errorf("wrapText lost words: %q", got)
		}
	}
}

// checkWidth fails t for every line of out over maxColumns runes.
func checkWidth(t *testing.T, out string) {
	t.Helper()
	for line := range strings.Lines(out) {
		if n := utf8.RuneCountInString(strings.TrimRight(line, "\n")); n > maxColumns {
			t.Errorf("line of %d runes (max %d):\n%s", n, maxColumns, line)
		}
	}
}
