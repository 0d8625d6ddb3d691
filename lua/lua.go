// Package lua holds every Redis script of fairrw as a .lua file, embedded in
// the binary. Each file opens with a header that states its KEYS, ARGV,
// return values and the invariant it keeps.
package lua

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.lua
var files embed.FS

// Source returns the text of the script named name (without ".lua"). It
// panics when there is no such script: names are constants of this module,
// and a test loads every one of them.
func Source(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic("lua: no script named " + name)
	}
	return string(b)
}

// Names returns the names of every embedded script, sorted.
func Names() []string {
	entries, err := fs.Glob(files, "*.lua")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e[:len(e)-len(".lua")]
	}
	sort.Strings(names)
	return names
}

// Compose returns the scripts named, joined in order: a library file first,
// then the operation that uses it (Lua in Redis has no modules).
func Compose(names ...string) string {
	var out string
	for _, n := range names {
		out += Source(n) + "\n"
	}
	return out
}
