package itest

import (
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/hidden"
)

func MustLockMutex(t *testing.T, m *fairrw.Mutex, opts ...fairrw.AcquireOption) *fairrw.Lease {
	t.Helper()
	l, err := m.Lock(TestCtx(t), opts...)
	if err != nil {
		t.Fatalf("Mutex.Lock %s: %v", hidden.Name(m), err)
	}
	return l
}
