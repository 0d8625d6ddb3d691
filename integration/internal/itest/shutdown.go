package itest

import (
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// pausableClient is a Client on r over a rueidis client of the test's own
// (closed at cleanup, after the server is resumed): closing a rueidis
// client whose server is frozen takes rueidis about a second per
// connection, which is no part of what Shutdown bounds.
func PausableClient(t *testing.T, r *redistest.Redis, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClient(r.Client(t, nil))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
