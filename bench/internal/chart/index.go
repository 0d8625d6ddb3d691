package chart

import (
	"bytes"
	"fmt"
	"html/template"
	"path/filepath"
)

// Entry is one chart of an index page.
type Entry struct {
	// Group heads the entries that follow it with the same Group, e.g. a
	// scenario's name.
	Group string
	// Title says what the chart shows.
	Title string
	// File is the chart's file name, relative to the index page (its SVG:
	// the page shows it and links to it).
	File string
}

// Index writes to path an HTML page to open first: title, the lines of
// summary (e.g. a verdict, as preformatted text), then every entry's
// title and chart, grouped in the order given, with a table of contents.
// The page links to the files; it does not check that they exist.
func Index(path, title string, summary []string, entries []Entry) error {
	type group struct {
		Name    string
		Anchor  string
		Entries []Entry
	}
	var groups []*group
	for _, e := range entries {
		if len(groups) == 0 || groups[len(groups)-1].Name != e.Group {
			groups = append(groups, &group{Name: e.Group, Anchor: fmt.Sprintf("g%d", len(groups)+1)})
		}
		g := groups[len(groups)-1]
		g.Entries = append(g.Entries, e)
	}
	var buf bytes.Buffer
	err := indexPage.Execute(&buf, struct {
		Title   string
		Summary []string
		Groups  []*group
		Count   int
	}{title, summary, groups, len(entries)})
	if err != nil {
		return fmt.Errorf("index %s: %w", path, err)
	}
	if filepath.Ext(path) == "" {
		return fmt.Errorf("index %s: no extension (want .html)", path)
	}
	return writeFile(path, &buf)
}

// indexPage is the index's template: html/template escapes every text.
var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: 'Liberation Sans', Arial, Helvetica, sans-serif; margin: 2em auto; max-width: 70em; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; }
img { width: 100%; max-width: 60em; border: 1px solid #ddd; }
figure { margin: 1em 0 2em 0; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Summary}}<pre>{{range .Summary}}{{.}}
{{end}}</pre>{{end}}
<p>{{.Count}} charts (SVG; each links to itself):</p>
<ul>
{{range .Groups}}<li><a href="#{{.Anchor}}">{{.Name}}</a>: {{range $i, $e := .Entries}}{{if $i}}, {{end}}<a href="{{$e.File}}">{{$e.File}}</a>{{end}}</li>
{{end}}</ul>
{{range .Groups}}<h2 id="{{.Anchor}}">{{.Name}}</h2>
{{range .Entries}}<figure><figcaption>{{.Title}} (<a href="{{.File}}">{{.File}}</a>)</figcaption>
<a href="{{.File}}"><img src="{{.File}}" alt="{{.Title}}"></a></figure>
{{end}}{{end}}</body>
</html>
`))
