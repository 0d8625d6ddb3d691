package fairrw_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

func ExampleNewQuorum() {
	ctx := context.Background()
	// Three independent Redis servers: in a service, three addresses, each
	// its own rueidis.ClientOption. Here they run in-process.
	var nodes []*fairrwtest.Server
	var clients []*fairrw.Client
	for range 3 {
		node, err := fairrwtest.Start()
		if err != nil {
			log.Fatal(err)
		}
		defer node.Close()
		nodes = append(nodes, node)
		c, err := fairrw.New(fairrw.WithClientOption(node.ClientOption()))
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	q, err := fairrw.NewQuorum(clients)
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close() // runs before the Clients close

	nodes[0].Close() // a minority of nodes may be down
	l, err := q.RWMutex("orders:42").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("write lock held with one node of three down:", l.Err() == nil)
	_, err = q.RWMutex("orders:42").TryRLock(ctx)
	fmt.Println("another owner's read:", errors.Is(err, fairrw.ErrNotAcquired))
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// write lock held with one node of three down: true
	// another owner's read: true
}
