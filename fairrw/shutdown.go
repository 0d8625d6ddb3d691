package fairrw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Shutdown closes the Client gracefully, as a service stopping on purpose
// should. It fails later calls and waiting acquires with ErrClosed, giving
// back a grant that lands meanwhile. It ends every lease still held (Err wraps
// ErrLeaseLost and ErrClosed), then releases their holds in Redis, so that
// waiters everywhere are woken at once. It waits for work left to the
// background, then closes the Client as Close does.
//
// Shutdown returns by ctx's deadline, or soon after its cancellation, whatever
// Redis does; then the error wraps ctx.Err(), and what is not released expires
// with its lease. It returns nil when every hold was released or found gone.
// A concurrent call waits for the first; after Close it returns ErrClosed.
// When Shutdown returns, the Client is closed.
func (c *Client) Shutdown(ctx context.Context) error {
	if !c.beginClose(true) {
		select {
		case <-c.finished:
		case <-ctx.Done():
			return fmt.Errorf("fairrw: shutdown: %w", ctx.Err())
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.graceful {
			return ErrClosed
		}
		return c.shutdownErr
	}
	defer context.AfterFunc(ctx, c.stopHalt)()
	sum := shutdownSummary{start: time.Now()}
	tctx, span := c.tel.startShutdown(ctx)
	err := c.releaseAll(tctx, &sum)
	c.mu.Lock()
	c.shutdownErr = err
	c.mu.Unlock()
	c.finishClose(ctx)
	c.tel.endShutdown(tctx, span, sum, err)
	return err
}

// errShutdownLease is the error of the leases that Shutdown ended.
var errShutdownLease = tag("fairrw: lease lost: the Client shut down and released it", ErrLeaseLost, ErrClosed)

// releaseAll ends every lease still held, lets the calls under way finish
// (they may take further holds, or give back grants that landed late),
// ends the leases they left, and releases every owner's holds, telling
// sum what it did. Closing has begun, so no call starts any more.
func (c *Client) releaseAll(ctx context.Context, sum *shutdownSummary) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.halt, cancel)()
	owners := c.endLeases(make(map[*owner]Mode), sum)
	if c.drain(rctx) != nil {
		sum.owners, sum.left = len(owners), len(owners)
		return fmt.Errorf("fairrw: shutdown: calls under way not waited for, %d lock owners not released, left to expire: %w", len(owners), c.stopCause(ctx))
	}
	owners = c.endLeases(owners, sum)
	// And the owners whose holds Redis may keep although none of their
	// Leases is alive (see heldOwners).
	c.held.addTo(owners, time.Now())
	var failed, total int
	var err error
	if len(owners) > 0 {
		failed, total, err = c.releaseOwners(rctx, owners)
	}
	sum.owners, sum.left = total, failed
	// Give-backs and releases that calls left to the background (their
	// callers have gone) are done before the Client closes, within ctx.
	if c.background.wait(rctx) != nil {
		return fmt.Errorf("fairrw: shutdown: background give-backs or releases not confirmed, left to expire: %w", c.stopCause(ctx))
	}
	if failed == 0 {
		return nil // nothing left: whatever ctx says
	}
	if why := c.stopCause(ctx); why != nil {
		err = errors.Join(why, err)
	}
	return fmt.Errorf("fairrw: shutdown: %d of %d lock owners not released, left to expire: %w", failed, total, err)
}

// stopCause says why a Shutdown stopped before its releases were done:
// its ctx ended, or Close cut it short (nil: neither).
func (c *Client) stopCause(ctx context.Context) error {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case c.halt.Err() != nil:
		return errCutShort
	default:
		return nil
	}
}

// errCutShort is why a Shutdown stopped releasing when Close was called.
var errCutShort = tag("Close cut the Shutdown short", ErrClosed) // always wrapped: "fairrw: shutdown: ..."

// endLeases ends every lease still held (not one an Unlock is releasing)
// and adds its owner to owners, with the mode its release must name: the
// write if the owner holds it (its release then frees its reads too), else
// a read. sum counts the leases.
func (c *Client) endLeases(owners map[*owner]Mode, sum *shutdownSummary) map[*owner]Mode {
	for _, l := range c.renewer.all() {
		if !l.lose(tag(fmt.Sprintf("fairrw: lease lost: %q: the Client shut down and released it", l.lockName()), errShutdownLease), lossShutdown) {
			continue
		}
		sum.leases++
		if mode, ok := owners[l.own]; !ok || mode == Read {
			owners[l.own] = l.mode
		}
	}
	return owners
}

// drain waits for the calls under way to end, or for ctx to. Waiters were
// woken by closing; attempts and releases end within the unlock timeout,
// or at once when ctx ends (halt).
func (c *Client) drain(ctx context.Context) error {
	if c.inflight.Load() == 0 {
		return nil // closing began, so no call enters any more
	}
	drained := make(chan struct{})
	go func() {
		c.ops.Wait() // Close waits again, so this goroutine ends with it
		close(drained)
	}()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdownParallel bounds the releases in flight at once. rueidis pipelines
// concurrent commands on one connection, so this many releases cost about
// one round trip, and 10,000 holds do not start 10,000 goroutines.
const shutdownParallel = 64

// releaseOwners releases every hold of each owner, concurrently, and
// returns how many owners' releases did not get a definite answer, of
// how many, and the first such failure.
func (c *Client) releaseOwners(ctx context.Context, owners map[*owner]Mode) (failed, total int, first error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	slots := make(chan struct{}, shutdownParallel)
	for o, mode := range owners {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := o.releaseAll(ctx, mode); err != nil {
				mu.Lock()
				failed++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed, len(owners), first
}

// releaseAll releases every hold of o in Redis in one release that leaves
// the owner nothing (an owner whose attempt had an outcome it never learned
// is given up instead, as its last Unlock would). Redis no longer having a
// hold is no failure: it is free already. It is bounded by ctx and by the
// unlock timeout.
func (o *owner) releaseAll(ctx context.Context, mode Mode) error {
	m := o.m
	ctx, cancel := releaseBound(ctx, m.c.unlockTimeout)
	defer cancel()
	if err := o.lock(ctx); err != nil {
		return fmt.Errorf("fairrw: release %q: %w", m.keys.name, err)
	}
	defer o.unlock()
	o.unshared = true
	res, err := m.releaseWithin(ctx, time.Time{}, o, mode, ownerState{}, o.unsure, false)
	if err == nil && res == releaseNotHeld && mode == Write && o.read {
		// The write may be gone while reads stay: an Unlock under way when
		// Shutdown began released it, counting the owner's ended write
		// leases as gone but reads that further holds took meanwhile as
		// alive. A write's release refuses an owner that no longer holds
		// the write, so its reads are released as reads.
		_, err = m.releaseWithin(ctx, time.Time{}, o, Read, ownerState{}, o.unsure, false)
	}
	if err == nil {
		m.c.held.released(o)
	}
	return err
}

// releaseBound bounds one of Shutdown's releases by d. When ctx has a
// deadline the bound is a deadline, which rueidis honours on every path,
// also in the handshake of a connection it makes again; without one, a
// timer (see withTimer), so that the cancellation of ctx, or a Close,
// stops a release under way at once.
func releaseBound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithTimeout(ctx, d)
	}
	return withTimer(ctx, d)
}
