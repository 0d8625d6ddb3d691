package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// svgTexts checks that path is a well-formed, NaN-free SVG document and
// returns the content of its <text> elements.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty", path)
	}
	for _, bad := range []string{"NaN", "Inf"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("%s contains %q", path, bad)
		}
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var (
		texts  []string
		depth  int
		root   string
		inText bool
		cur    strings.Builder
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				root = tok.Name.Local
			}
			depth++
			if tok.Name.Local == "text" {
				inText = true
				cur.Reset()
			}
		case xml.EndElement:
			depth--
			if tok.Name.Local == "text" {
				inText = false
				texts = append(texts, cur.String())
			}
		case xml.CharData:
			if inText {
				cur.Write(tok)
			}
		}
	}
	if root != "svg" || depth != 0 {
		t.Fatalf("%s: root element %q, depth at the end %d", path, root, depth)
	}
	return texts
}

// checkSVG checks that path is a valid SVG with a text element equal to
// each of want.
func checkSVG(t *testing.T, path string, want ...string) {
	t.Helper()
	texts := svgTexts(t, path)
	for _, w := range want {
		if !slices.Contains(texts, w) {
			t.Errorf("%s has no text %q; it has %q", filepath.Base(path), w, texts)
		}
	}
}

func millisecs(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
