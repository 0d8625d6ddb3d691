package wire

// Probe is lua/probe.lua's request: publish a probe on a lock's channel, to
// learn whether a subscription made again receives the lock's messages.
type Probe struct {
	// Channel is the lock's channel, declared as the key so that a cluster
	// client routes the script to the slot's primary.
	Channel string
	// Publish is compat.Publish or compat.SPublish.
	Publish string
	// Probe is the message: a negative decimal number, which no policy
	// publishes.
	Probe string
}

var (
	probeKeys = fixed(column[Probe]{"channel", func(r *Probe) string { return r.Channel }})
	probeArgs = fixed(
		column[Probe]{"publish command", func(r *Probe) string { return r.Publish }},
		column[Probe]{"probe", func(r *Probe) string { return r.Probe }})
)

// Render returns the script's KEYS and ARGV. Its reply (the subscribers
// reached) is not read: a probe proves itself by coming back.
func (r *Probe) Render() (keys, args []string) {
	return renderBoth(&probeKeys, &probeArgs, r)
}
