//go:build !unix

// Package holder runs a lock holder in a child process (unix only).
package holder

// RunIfChild does nothing where the holder cannot run.
func RunIfChild() {}
