package history

import (
	"sync"
	"testing"
)

func TestStoreRefusesStaleToken(t *testing.T) {
	var s Store
	accepted := 0
	for _, token := range []uint64{1, 1, 2} { // a tenure may write more than once
		if !s.Increment(token) {
			t.Fatalf("token %d refused after highest %d", token, s.Highest())
		}
		accepted++
	}
	if s.Increment(1) { // a holder that lost its lease unaware writes late
		t.Fatal("stale token 1 accepted after token 2")
	}
	if s.Value() != 3 || s.Rejected() != 1 || s.Highest() != 2 {
		t.Fatalf("value %d, rejected %d, highest %d; want 3, 1, 2", s.Value(), s.Rejected(), s.Highest())
	}
	if err := s.Check(accepted); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(accepted + 1); err == nil {
		t.Fatal("Check accepted a wrong count")
	}
}

// TestStoreConcurrent: holders serialised by a mutex lose no update.
func TestStoreConcurrent(t *testing.T) {
	var (
		s  Store
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for range 100 {
				mu.Lock()
				s.Increment(1)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := s.Check(800); err != nil {
		t.Fatal(err)
	}
}
