package fairrw

import (
	"testing"

	"github.com/fairrw/rwlock/internal/compat"
	"github.com/fairrw/rwlock/internal/wait"
	"github.com/fairrw/rwlock/internal/wire"
)

// TestPolicyWakeKeys: each policy hands its waiters the channel its
// releases publish on and the format of those messages (internal/wait
// decodes them by it: Java's for the Redisson and mutex policies, the fair
// policies' own), and the key whose invalidation wakes them, if any (none
// for the fair policies, whose waiters' own attempts write the state).
func TestPolicyWakeKeys(t *testing.T) {
	const name = "orders:42"
	for _, tc := range []struct {
		policy string
		impl   policyImpl
		want   wait.Keys
	}{
		{"writer-preferring and phase-fair", fairPolicy{}, wait.Keys{Channel: wire.Fair(name).Channel, Format: wait.FairFormat}},
		{"redisson", redissonPolicy{}, wait.Keys{Channel: compat.Channel(name), Tracked: name, Format: wait.JavaFormat}},
		{"mutex", mutexPolicy{}, wait.Keys{Channel: compat.MutexChannel(name), Tracked: name, Format: wait.JavaFormat}},
	} {
		k, err := tc.impl.keys(name)
		if err != nil {
			t.Fatalf("%s: %v", tc.policy, err)
		}
		if k.Keys != tc.want {
			t.Errorf("%s: waiters listen on %+v, want %+v", tc.policy, k.Keys, tc.want)
		}
	}
}
