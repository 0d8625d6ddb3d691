package fairrw

import "time"

// How long a command may take to reach Redis, all told.
//
// A command whose reply is lost is retried, and any copy of it may still
// reach Redis much later: Redis was paused, a connection stalled in the
// kernel's buffers. No latch in Redis can outlive every such delay, so the
// scripts use time instead (lua/common.lua): a copy that reaches Redis more
// than acceptWindow after it was first sent takes nothing and changes
// nothing. The client retries one command for retryWindow only, and a give-up
// marker lives for giveUpWindow, so that a late copy meets either the marker
// or the window. (A give-up itself is never refused as late: it only
// removes, and is right whenever it runs.) What that assumes: the client's and Redis's wall
// clocks differ by less than the unlock timeout (the margin between the
// windows). A Redis clock that runs ahead by more makes acquires fail with
// ErrClockSkew rather than break exclusion.
//
// All three derive from the unlock timeout, the time an Unlock already
// waits for Redis: 5s, 10s and 15s with the defaults.

// retryWindow is how long the client sends copies of one command.
func (c *Client) retryWindow() time.Duration { return c.unlockTimeout }

// acceptWindow is how long after its first send Redis still accepts a copy.
func (c *Client) acceptWindow() time.Duration { return 2 * c.unlockTimeout }

// giveUpWindow is how long a give-up marker lives: past the accept window
// by the clock margin.
func (c *Client) giveUpWindow() time.Duration { return 3 * c.unlockTimeout }
