package compat

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fairrw/rwlock/internal/slot"
)

// hasHashTag reports whether name carries its own cluster hash tag: a '{'
// followed, later, by a '}' with something in between.
func hasHashTag(name string) bool {
	return strings.Contains(name, "{") && slot.Tag(name) != name
}

// FuzzBraceRule checks Redisson's brace rule on any name, owner and request
// id: a name containing '{' is used as is, any other is wrapped in "{N}";
// every derived key and channel contains the name verbatim; and whenever the
// name's slot is well defined by the rule (it has a hash tag of its own, or
// it is non-empty and braceless), every key and channel derived from it
// hashes to the name's own slot. Nothing panics.
func FuzzBraceRule(f *testing.F) {
	for _, s := range []string{
		"", "a", "{", "}", "{}", "}{", "{{}}", "{}{a}", "a{b}", "{a}b", "x}y", "a{b", "anyLock",
		"orders:{tenant}:42", "锁:订单", "{锁}:订单", "a\x00b", "\xff", strings.Repeat("n", 4097),
		"redisson_rwlock:{a}", "fairrw:{a}", "{a}:x:rwlock_timeout:1",
	} {
		f.Add(s, "6b2f3a0e-8d4c-4d55-9f5e-2f0f3e1d9a77:7", "0123456789abcdef0123456789abcdef")
	}
	f.Add("n", "o{w}ner:1", "r}q")
	f.Fuzz(func(t *testing.T, name, owner, id string) {
		braced := strings.Contains(name, "{")
		prefix := "{" + name + "}"
		if braced {
			prefix = name
		}
		if got := KeyPrefix(name); got != prefix {
			t.Fatalf("KeyPrefix(%q) = %q, want %q", name, got, prefix)
		}
		exact := map[string]string{
			"Channel":        ChannelPrefix + ":" + prefix,
			"UnlockLatch":    UnlockLatchPrefix + ":" + prefix + ":" + id,
			"SuffixName":     prefix + ":" + id,
			"LeaseKeyPrefix": prefix + ":" + owner + LeaseKeySuffix,
			"LeaseKey":       prefix + ":" + owner + LeaseKeySuffix + ":3",
		}
		got := map[string]string{
			"Channel":        Channel(name),
			"UnlockLatch":    UnlockLatch(name, id),
			"SuffixName":     SuffixName(name, id),
			"LeaseKeyPrefix": LeaseKeyPrefix(name, owner),
			"LeaseKey":       LeaseKey(name, owner, 3),
		}
		for fn, want := range exact {
			if got[fn] != want {
				t.Fatalf("%s(%q) = %q, want %q", fn, name, got[fn], want)
			}
			if !strings.Contains(got[fn], name) {
				t.Fatalf("%s(%q) = %q does not contain the name", fn, name, got[fn])
			}
		}
		if PrefixName("p", name) != "p:"+prefix {
			t.Fatalf("PrefixName(p, %q) = %q", name, PrefixName("p", name))
		}
		if f := WriteField(owner); f != owner+WriteSuffix || ReadField(owner) != owner {
			t.Fatalf("fields of %q: %q, %q", owner, ReadField(owner), f)
		}
		if o := Owner(name, 42); o != name+":42" {
			t.Fatalf("Owner(%q, 42) = %q", name, o)
		}
		// The slot rule. Suffixes (ids, owners) cannot move a key out of its
		// prefix's hash tag, since the tag is the first "{...}".
		tagged := hasHashTag(name)
		if !tagged && !(name != "" && !strings.ContainsAny(name, "{}")) {
			return // the brace rule cannot keep this name's slot: fairrw refuses such names
		}
		want := slot.Of(name)
		for fn, key := range got {
			if slot.Of(key) != want {
				t.Fatalf("%s(%q) = %q hashes to slot %d, the name to %d", fn, name, key, slot.Of(key), want)
			}
			if slot.Tag(key) != slot.Tag(name) {
				t.Fatalf("%s(%q) = %q has hash tag %q, the name %q", fn, name, key, slot.Tag(key), slot.Tag(name))
			}
		}
		// A lease key rebuilt by the read-unlock script from KeyPrefix.
		rebuilt := KeyPrefix(name) + ":" + WriteField(owner) + LeaseKeySuffix + ":" + strconv.Itoa(1<<20)
		if slot.Of(rebuilt) != want {
			t.Fatalf("rebuilt lease key %q hashes to slot %d, the name to %d", rebuilt, slot.Of(rebuilt), want)
		}
	})
}
