// Package wire is fairrw's protocol with its Lua scripts, in one place: for
// each script fairrw calls (lua/*.lua), a request type with named, typed
// fields renders the script's KEYS and ARGV in the order its header
// documents, and a decoder next to it reads the script's reply. fairrw's own
// keys (keys.go) and the fair policies' messages (messages.go) live here too;
// internal/compat keeps only what Java Redisson defines.
//
// Each request renders through two layouts (layout.go), one for KEYS and one
// for ARGV: tables that pair every position with the name of what the
// script's header documents there. header_test.go reads every header and
// checks each table against it, so that a KEYS or ARGV added, dropped or
// moved on one side only fails the tests.
//
// Units are in the types (time.Duration, time.Time, bool, Mode); the one
// place that turns them into the scripts' strings is units.go.
package wire
