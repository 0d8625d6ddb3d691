// Package compat builds the wire format of Java Redisson's RReadWriteLock
// (Redisson 4.x, the current line; the layout has been stable since 3.x apart
// from the unlock latch and the per-client renewal noted below): the key
// names, hash fields, channel, messages and argument conventions that fairrw's
// Redisson policy must reproduce byte for byte, so that Go and Java services
// can share one lock on one Redis; and those of Java's RLock, the reentrant
// mutex (mutex.go).
//
// Everything here is a pure function of the lock name and the owner. The
// scripts that act on these keys live in the public lua package; the public
// compat package documents the format for readers.
//
// Keys that fairrw adds for its own needs (the fence, the fair policies'
// state, the give-up markers) are not Redisson's: internal/wire names them,
// with the scripts' requests. They never live inside the Redisson hash: Java
// counts the hash's fields, and an extra field would leave a Java-visible
// lock stuck in read mode.
package compat
