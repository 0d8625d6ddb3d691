package itest

import (
	"fmt"
	"testing"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/internal/testkit/redistest"
)

// newClusterClient returns a Client on the cluster over tr, closed at cleanup.
func NewClusterClient(t testing.TB, c *redistest.Cluster, tr Transport, opts ...fairrw.Option) *fairrw.Client {
	t.Helper()
	return NewClientOn(t, c.ClientOption(), tr, opts...)
}

// clusterNames returns lock names spread over every shard: hash-tagged ones
// (several sharing a tag), and plain ones each hashed whole.
func ClusterNames(n int) []string {
	names := []string{"{tenant-1}:a", "{tenant-1}:b", "orders:{t}:42", "ünï:名前"}
	for i := range n {
		names = append(names, fmt.Sprintf("cluster:lock:%d", i))
	}
	return names
}
