package fairrw

import (
	"fmt"
	"strings"
)

// maxNamespaceLength bounds a namespace, in bytes: it starts every lock
// name of a tenant and every ACL pattern written for it (docs/acl.md).
const maxNamespaceLength = 64

// WithNamespace confines the Client to the lock names "<ns>:<rest>" (rest
// non-empty): any other name fails its handle's first call, and Inspect,
// with ErrInvalidName, before anything is sent. A Redis ACL user allowed
// the patterns docs/acl.md derives from ns reaches every key and channel
// of such names and nothing of another namespace's; the option catches a
// name outside it before Redis refuses it (ErrPermission). Names are used
// as given, so Java Redisson names the same locks with the same prefix.
//
// ns is 1 to 64 letters, digits, '-', '_' or '.', not starting with
// "fairrw" or "redisson" (the prefixes of the keys and channels fairrw and
// Redisson add beside a lock, which a tenant's patterns must never match):
// so it holds no glob character, brace or ':' that could widen a pattern.
// Anything else fails New with ErrInvalidOption. The guarantee: a Client
// with a namespace never sends a command for a lock outside it.
func WithNamespace(ns string) Option {
	return optionFunc(func(cfg *config) error {
		if err := validateNamespace(ns); err != nil {
			return err
		}
		cfg.namespace = ns
		return nil
	})
}

// validateNamespace checks a namespace (see WithNamespace).
func validateNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("%w: WithNamespace(\"\"): want a non-empty namespace", ErrInvalidOption)
	case len(ns) > maxNamespaceLength:
		return fmt.Errorf("%w: WithNamespace: %d bytes, the limit is %d", ErrInvalidOption, len(ns), maxNamespaceLength)
	case strings.HasPrefix(ns, "fairrw") || strings.HasPrefix(ns, "redisson"):
		return fmt.Errorf("%w: WithNamespace(%q): a namespace must not start with \"fairrw\" or \"redisson\", the prefixes of the keys and channels beside a lock", ErrInvalidOption, ns)
	}
	for _, r := range ns {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("%w: WithNamespace(%q): %q is not allowed: want letters, digits, '-', '_' or '.' (no glob character, brace or ':' that would widen an ACL pattern)", ErrInvalidOption, ns, r)
		}
	}
	return nil
}
