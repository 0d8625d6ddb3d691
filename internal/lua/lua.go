// Package lua reads the Redis scripts embedded by the public package
// github.com/fairrw/rwlock/lua, where the .lua files live.
package lua

import (
	"io/fs"
	"sort"

	scripts "github.com/fairrw/rwlock/lua"
)

// Source returns the text of the script named name (without ".lua"). It
// panics when there is no such script: names are constants of this module,
// and a test loads every one of them.
func Source(name string) string {
	b, err := scripts.FS.ReadFile(name + ".lua")
	if err != nil {
		panic("lua: no script named " + name)
	}
	return string(b)
}

// Names returns the names of every embedded script, sorted.
func Names() []string {
	entries, err := fs.Glob(scripts.FS, "*.lua")
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

// FairAcquire returns the fair policies' acquire script: its fast path
// (a first hold on an idle lock), then the full state machine.
func FairAcquire() string {
	return Compose("fair_acquire_fast", "common", "fair_lib", "fair_acquire")
}

// FairUnlock returns the fair policies' release script, the full state
// machine. An owner's last release of a hold the fast path granted has a
// script of its own, fair_unlock_fast (Source), sent first.
func FairUnlock() string {
	return Compose("common", "fair_lib", "fair_unlock")
}

// FairForceUnlock returns the fair policies' force-unlock script.
func FairForceUnlock() string {
	return Compose("common", "fair_lib", "fair_force_unlock")
}
