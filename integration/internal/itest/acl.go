package itest

import (
	"crypto/rand"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

func AclPassword() string { return "pw-" + rand.Text() }

// aclClient is a Client of the ACL user user, closed at cleanup.
func AclClient(t *testing.T, r *redistest.Redis, user, password string, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	opt := r.ClientOption()
	opt.Username, opt.Password = user, password
	c, err := fairrw.New(append([]fairrw.Option{fairrw.WithClientOption(opt)}, opts...)...)
	if err != nil {
		t.Fatalf("New as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
