package compat

import (
	"testing"

	"github.com/fairrw/rwlock/internal/slot"
)

func TestNames(t *testing.T) {
	const u = "6b2f3a0e-8d4c-4d55-9f5e-2f0f3e1d9a77"
	owner := Owner(u, 7)
	tests := []struct {
		name                                       string
		channel, leaseKey, keyPrefix, latch, field string
		mutexChannel                               string
	}{
		{
			name:         "anyLock",
			channel:      "redisson_rwlock:{anyLock}",
			leaseKey:     "{anyLock}:" + u + ":7:rwlock_timeout:2",
			keyPrefix:    "{anyLock}",
			latch:        "redisson_unlock_latch:{anyLock}:0123456789abcdef0123456789abcdef",
			field:        u + ":7:write",
			mutexChannel: "redisson_lock__channel:{anyLock}",
		},
		{
			name:         "orders:{tenant}:42",
			channel:      "redisson_rwlock:orders:{tenant}:42",
			leaseKey:     "orders:{tenant}:42:" + u + ":7:rwlock_timeout:2",
			keyPrefix:    "orders:{tenant}:42",
			latch:        "redisson_unlock_latch:orders:{tenant}:42:0123456789abcdef0123456789abcdef",
			field:        u + ":7:write",
			mutexChannel: "redisson_lock__channel:orders:{tenant}:42",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Channel(tt.name); got != tt.channel {
				t.Errorf("Channel = %q, want %q", got, tt.channel)
			}
			if got := LeaseKey(tt.name, owner, 2); got != tt.leaseKey {
				t.Errorf("LeaseKey = %q, want %q", got, tt.leaseKey)
			}
			if got := KeyPrefix(tt.name); got != tt.keyPrefix {
				t.Errorf("KeyPrefix = %q, want %q", got, tt.keyPrefix)
			}
			if got := UnlockLatch(tt.name, "0123456789abcdef0123456789abcdef"); got != tt.latch {
				t.Errorf("UnlockLatch = %q, want %q", got, tt.latch)
			}
			if got := WriteField(owner); got != tt.field {
				t.Errorf("WriteField = %q, want %q", got, tt.field)
			}
			if got := MutexChannel(tt.name); got != tt.mutexChannel {
				t.Errorf("MutexChannel = %q, want %q", got, tt.mutexChannel)
			}
			if got := MutexField(owner); got != owner {
				t.Errorf("MutexField = %q, want the owner %q", got, owner)
			}
			want := slot.Of(tt.name)
			for _, k := range []string{Channel(tt.name), MutexChannel(tt.name), LeaseKey(tt.name, owner, 2), UnlockLatch(tt.name, "x")} {
				if got := slot.Of(k); got != want {
					t.Errorf("slot(%q) = %d, want the name's slot %d", k, got, want)
				}
			}
		})
	}
}
