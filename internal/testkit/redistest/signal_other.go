//go:build !unix

package redistest

import "os"

// Pause and Resume are not supported here; Stop falls back to Kill.
var sigStop, sigCont, sigTerm os.Signal
