// Package lua holds every Redis script of fairrw as a .lua file, embedded in
// the binary. Each file opens with a header that states its KEYS, ARGV,
// return values and the invariant it keeps.
//
// A user needs nothing here: fairrw loads the scripts itself. The files are
// here to be read, as the specification of what fairrw does in Redis.
package lua

import "embed"

// FS holds the scripts, for fairrw's internal packages to load. It is
// exported only because Go embeds files from a package's own directory, and
// the scripts live here to be read; a user has no need of it.
//
//go:embed *.lua
var FS embed.FS
