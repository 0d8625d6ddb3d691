package fairrw_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fairrw/rwlock/fairrw"
	"github.com/fairrw/rwlock/fairrw/fairrwtest"
)

func Example() {
	ctx := context.Background()
	// An in-process Redis, so that this runs anywhere. A service passes its
	// own: fairrw.WithClientOption(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	redis, err := fairrwtest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	m := c.RWMutex("orders:42")
	l, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding the write lock, fencing token > 0:", l.Token() > 0)
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: holding the write lock, fencing token > 0: true
}

func ExampleRWMutex_RLock() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Two owners read together; a writer must wait for both.
	r1, _ := c.RWMutex("catalog").RLock(ctx)
	r2, _ := c.RWMutex("catalog").RLock(ctx)
	_, err = c.RWMutex("catalog").TryLock(ctx)
	fmt.Println("writer:", errors.Is(err, fairrw.ErrNotAcquired))
	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	w, err := c.RWMutex("catalog").TryLock(ctx)
	fmt.Println("writer after the readers left:", err == nil)
	_ = w.Unlock(ctx)
	// Output:
	// writer: true
	// writer after the readers left: true
}

func ExampleRWMutex_TryLock() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	held, _ := c.RWMutex("report").Lock(ctx)
	defer held.Unlock(ctx)
	if _, err := c.RWMutex("report").TryLock(ctx); errors.Is(err, fairrw.ErrNotAcquired) {
		fmt.Println("someone else is writing the report")
	}
	// Output: someone else is writing the report
}

func ExampleClient_Mutex() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A Java service locks the same name with redisson.getLock("payment:7").
	m := c.Mutex("payment:7")
	l, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Reentrant, as a Java thread, but explicitly: the holder locks again
	// from its Lease, and each Lease is unlocked once.
	again, err := l.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Every Lock on the handle is a new owner, as on a sync.Mutex.
	_, err = m.TryLock(ctx)
	fmt.Println("another owner:", errors.Is(err, fairrw.ErrNotAcquired))
	// A name is a mutex or a read-write lock, never both.
	_, err = c.RWMutex("payment:7").TryRLock(ctx)
	fmt.Println("as a read-write lock:", errors.Is(err, fairrw.ErrPolicyMismatch))
	_ = again.Unlock(ctx)
	_ = l.Unlock(ctx)

	next, err := c.Mutex("payment:7").TryLock(ctx)
	fmt.Println("another owner after both unlocks:", err == nil)
	_ = next.Unlock(ctx)
	// Output:
	// another owner: true
	// as a read-write lock: true
	// another owner after both unlocks: true
}

func ExampleLease_RLock() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A downgrade: the writer takes a read from its write Lease, releases
	// the write, and keeps reading with no writer in between.
	m := c.RWMutex("prices")
	w, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	r, err := w.RLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	other, err := m.TryRLock(ctx)
	fmt.Println("another reader:", err == nil)
	_ = other.Unlock(ctx)
	_, err = m.TryLock(ctx)
	fmt.Println("another writer:", errors.Is(err, fairrw.ErrNotAcquired))
	// A read is never upgraded to the write.
	_, err = r.Lock(ctx)
	fmt.Println("upgrade:", errors.Is(err, fairrw.ErrNotAcquired))
	_ = r.Unlock(ctx)
	// Output:
	// another reader: true
	// another writer: true
	// upgrade: true
}

func ExampleLease_Lock() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A reentrant write: code that holds the write calls a helper that
	// locks again. The further hold is the same owner's, with its own
	// lease and the same fencing token.
	m := c.RWMutex("account:9")
	outer, err := m.Lock(ctx, fairrw.WithLease(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	inner, err := outer.Lock(ctx, fairrw.WithLease(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same owner:", inner.Owner() == outer.Owner(), "same token:", inner.Token() == outer.Token())
	// The handle itself is no owner: its TryLock is another owner's.
	_, err = m.TryLock(ctx)
	fmt.Println("the handle again:", errors.Is(err, fairrw.ErrNotAcquired))
	// Releasing the inner hold never shortens the outer one.
	_ = inner.Unlock(ctx)
	_, err = m.TryLock(ctx)
	fmt.Println("after the inner unlock:", errors.Is(err, fairrw.ErrNotAcquired))
	_ = outer.Unlock(ctx)
	next, err := m.TryLock(ctx)
	fmt.Println("after both:", err == nil)
	_ = next.Unlock(ctx)
	// Output:
	// same owner: true same token: true
	// the handle again: true
	// after the inner unlock: true
	// after both: true
}

func ExampleRWMutex_Lock_timeout() {
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	held, _ := c.RWMutex("invoice:7").Lock(context.Background())
	defer held.Unlock(context.Background())

	// Wait at most 100ms: Lock returns the context's error and holds nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.RWMutex("invoice:7").Lock(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output: true
}

func ExampleLease_Done() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A lease with an explicit time is not renewed: it ends when it runs out.
	l, err := c.RWMutex("batch").Lock(ctx, fairrw.WithLease(50*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	for step := 0; ; step++ {
		select {
		case <-l.Done():
			fmt.Println("lease lost:", errors.Is(l.Err(), fairrw.ErrLeaseLost))
			return
		case <-time.After(20 * time.Millisecond): // one step of work
		}
	}
	// Output: lease lost: true
}

// store is a storage layer guarded by a lock: it remembers the highest
// fencing token it has seen and refuses writes that carry a lower one, so a
// holder that lost its lease without knowing (a long GC pause, a failover)
// cannot overwrite the work of the holder after it.
type store struct {
	highest uint64
	value   string
}

var errStaleToken = errors.New("stale fencing token")

func (s *store) write(token uint64, value string) error {
	if token < s.highest {
		return errStaleToken
	}
	s.highest, s.value = token, value
	return nil
}

func ExampleLease_Token() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var s store

	// The first holder's lease runs out while it is paused.
	first, _ := c.RWMutex("ledger").Lock(ctx, fairrw.WithLease(30*time.Millisecond))
	<-first.Done()

	// Meanwhile a second holder takes the lock and writes.
	second, _ := c.RWMutex("ledger").Lock(ctx)
	fmt.Println("second:", s.write(second.Token(), "from second"))
	_ = second.Unlock(ctx)

	// The first holder wakes up and tries to write: the store refuses it.
	fmt.Println("first:", s.write(first.Token(), "from first"))
	fmt.Println("value:", s.value)
	// Output:
	// second: <nil>
	// first: stale fencing token
	// value: from second
}

// account is a balance kept by a store guarded by a lock, which its
// holders change by read-modify-write: read, compute, write back. The
// store checks and records the fencing token on the read as on the write:
// once a holder has read with a token, a holder with a lower one (its lease
// lost unaware) can neither read nor write.
type account struct {
	highest uint64
	balance int
}

// read returns the balance to the holder of token.
func (a *account) read(token uint64) (int, error) {
	if token < a.highest {
		return 0, errStaleToken
	}
	a.highest = token
	return a.balance, nil
}

// write sets the balance for the holder of token.
func (a *account) write(token uint64, balance int) error {
	if token < a.highest {
		return errStaleToken
	}
	a.highest, a.balance = token, balance
	return nil
}

// A read-modify-write guarded by a lock: the first holder's lease runs out
// between its read and its write, and a second holder adds 10 meanwhile.
// Had the store checked tokens on writes only, it would have taken the
// first holder's write (no later token had reached it), then the second's,
// computed from a balance read before it: the first update lost, unseen.
// Checking the token on the read too refuses the first holder's write, so
// no update is lost and its holder learns it. (A store can instead
// compare-and-set: write only if the value is still the one read.)
func ExampleLease_Token_readModifyWrite() {
	ctx := context.Background()
	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	acct := &account{balance: 100}
	m := c.RWMutex("account:42")

	// The first holder reads, then pauses past its lease.
	first, _ := m.Lock(ctx, fairrw.WithLease(30*time.Millisecond))
	balance, err := acct.read(first.Token())
	fmt.Println("first reads:", balance, err)
	<-first.Done()

	// The second holder adds 10: its read presents its token first.
	second, _ := m.Lock(ctx)
	balance, err = acct.read(second.Token())
	fmt.Println("second reads:", balance, err)

	// The first holder wakes up and writes back its +5: refused.
	fmt.Println("first writes:", acct.write(first.Token(), 100+5))
	fmt.Println("second writes:", acct.write(second.Token(), balance+10))
	_ = second.Unlock(ctx)
	fmt.Println("balance:", acct.balance)
	// Output:
	// first reads: 100 <nil>
	// second reads: 100 <nil>
	// first writes: stale fencing token
	// second writes: <nil>
	// balance: 110
}

func ExampleWithTracerProvider() {
	// A service would export its spans (e.g. with OTLP); a recorder keeps
	// them here to print them.
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	redis, err := fairrwtest.Start() // or your Redis: see Example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	c, err := fairrw.New(fairrw.WithClientOption(redis.ClientOption()), fairrw.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The request's span: the lock's spans are its children.
	ctx, request := tp.Tracer("shop").Start(context.Background(), "checkout")
	l, err := c.RWMutex("cart:7").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	request.End()

	names := map[trace.SpanID]string{}
	for _, s := range spans.Ended() {
		names[s.SpanContext().SpanID()] = s.Name()
	}
	for _, s := range spans.Ended() {
		fmt.Print(s.Name())
		attrs := attribute.NewSet(s.Attributes()...)
		for _, k := range []attribute.Key{"fairrw.lock.name", "fairrw.lock.mode", "fairrw.acquire.outcome", "fairrw.acquire.attempts", "db.stored_procedure.name"} {
			if v, ok := attrs.Value(k); ok {
				fmt.Printf(" %s=%s", k, v.String())
			}
		}
		if s.Parent().IsValid() {
			fmt.Print(" (in ", names[s.Parent().SpanID()], ")")
		}
		fmt.Println()
	}
	// Output:
	// EVALSHA db.stored_procedure.name=fairrw.acquire (in fairrw.Lock)
	// fairrw.Lock fairrw.lock.name=cart:7 fairrw.lock.mode=write fairrw.acquire.outcome=granted fairrw.acquire.attempts=1 (in checkout)
	// EVALSHA db.stored_procedure.name=fairrw.release (in fairrw.Unlock)
	// fairrw.Unlock fairrw.lock.name=cart:7 fairrw.lock.mode=write (in checkout)
	// checkout
}

func ExampleWithURL() {
	redis, err := fairrwtest.Start() // an in-process Redis for the example
	if err != nil {
		log.Fatal(err)
	}
	defer redis.Close()
	// In production: fairrw.WithURL("rediss://user:password@redis.internal:6379/0").
	// (This test server speaks RESP2 without client tracking.)
	c, err := fairrw.New(fairrw.WithURL("redis://" + redis.ClientOption().InitAddress[0] + "?protocol=2&client_cache=0"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	l, err := c.RWMutex("invoices:2026-11").Lock(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked:", l.Err() == nil)
	if err := l.Unlock(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output: locked: true
}
