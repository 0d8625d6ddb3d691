package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/slot"
)

// FuzzKeys checks fairrw's own keys for any name and owner: their exact
// form "fairrw:<len>:<prefix>..." and "fairrw_attempt:<prefix>:<owner>"
// (prefix: "{N}", or N itself when it contains '{'), that each contains the
// name, and that each hashes to the name's slot whenever the brace rule
// defines it (a hash tag of its own, or a non-empty braceless name).
func FuzzKeys(f *testing.F) {
	for _, s := range []string{"", "a", "{", "}", "{}", "{a}b", "a{b}", "x}y", "orders:{tenant}:42", "锁:订单", "a\x00b", "fairrw:{a}"} {
		f.Add(s, "6b2f3a0e-8d4c-4d55-9f5e-2f0f3e1d9a77:7")
	}
	f.Fuzz(func(t *testing.T, name, owner string) {
		prefix := "{" + name + "}"
		if strings.Contains(name, "{") {
			prefix = name
		}
		base := FairPrefix + ":" + strconv.Itoa(len(name)) + ":" + prefix
		fk := Fair(name)
		got := map[string]string{
			"OwnerMarker":   OwnerMarker(name, owner),
			"Fence":         Fence(name),
			"Fair.State":    fk.State,
			"Fair.Readers":  fk.Readers,
			"Fair.Queue":    fk.Queue,
			"Fair.Waiting":  fk.Waiting,
			"Fair.Admitted": fk.Admitted,
			"Fair.Channel":  fk.Channel,
			"Fair.Fence":    fk.Fence,
		}
		want := map[string]string{
			"OwnerMarker":   OwnerMarkerPrefix + ":" + prefix + ":" + owner,
			"Fence":         base + ":fence",
			"Fair.State":    base,
			"Fair.Readers":  base + ":readers",
			"Fair.Queue":    base + ":queue",
			"Fair.Waiting":  base + ":waiting",
			"Fair.Admitted": base + ":admitted",
			"Fair.Channel":  base + ":wake",
			"Fair.Fence":    base + ":fence",
		}
		for fn, w := range want {
			if got[fn] != w {
				t.Fatalf("%s(%q) = %q, want %q", fn, name, got[fn], w)
			}
			if !strings.Contains(got[fn], name) {
				t.Fatalf("%s(%q) = %q does not contain the name", fn, name, got[fn])
			}
		}
		tagged := strings.Contains(name, "{") && slot.Tag(name) != name
		if !tagged && (name == "" || strings.ContainsAny(name, "{}")) {
			return // the brace rule cannot keep this name's slot: fairrw refuses such names
		}
		for fn, key := range got {
			if slot.Of(key) != slot.Of(name) {
				t.Fatalf("%s(%q) = %q hashes to slot %d, the name to %d", fn, name, key, slot.Of(key), slot.Of(name))
			}
		}
	})
}

// TestFairKeysAsConcatenated: Fair's keys, substrings of one string, are
// the concatenations they stand for, for names with and without braces.
func TestFairKeysAsConcatenated(t *testing.T) {
	for _, name := range []string{"x", "{x}", "orders:{42}:line", "a{b", "ключ", "a:b:c"} {
		b := base(name)
		want := FairKeys{
			State: b, Readers: b + ":readers", Queue: b + ":queue", Waiting: b + ":waiting", Admitted: b + ":admitted",
			Channel: b + ":wake", Fence: b + ":fence", Marker: OwnerMarker(name, ""), Latch: compat.UnlockLatch(name, ""),
		}
		if got := Fair(name); got != want {
			t.Errorf("Fair(%q) = %+v, want %+v", name, got, want)
		}
	}
}
