package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxColumns is the width of the default output: every line fits a
// 120-column terminal (-wide's tables do not).
const maxColumns = 120

// wrapText breaks s at spaces into lines of at most width runes: the first
// starts with first, the others with indent. A word longer than a line
// stays whole on its own line, cut at width.
func wrapText(first, indent, s string, width int) []string {
	var lines []string
	cur := first
	fresh := true // cur holds only its prefix
	for word := range strings.FieldsSeq(s) {
		sep := " "
		if fresh {
			sep = ""
		}
		if !fresh && utf8.RuneCountInString(cur+sep+word) > width {
			lines = append(lines, cur)
			cur, sep = indent, ""
		}
		cur += sep + word
		fresh = false
		for utf8.RuneCountInString(cur) > width && utf8.RuneCountInString(indent) < width { // a word longer than a line
			r := []rune(cur)
			lines = append(lines, string(r[:width]))
			cur = indent + string(r[width:])
		}
	}
	return append(lines, strings.TrimRight(cur, " "))
}

// writeWrapped prints s wrapped to maxColumns, its first line after first,
// the others after indent.
func writeWrapped(w io.Writer, first, indent, s string) {
	for _, l := range wrapText(first, indent, s, maxColumns) {
		fmt.Fprintln(w, l)
	}
}
