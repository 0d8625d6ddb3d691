package wait

// Who gets woken by what: the targeted wake-ups (see Registry) that a
// release's message, an invalidation, a grant or a reader's entry turn into.

// Granted is called when a waiter got the lock: a reader passes the turn to
// the next idle reader, which may share the lock with it.
func (r *Registry) Granted(w *Waiter) {
	if w.mode != Read {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range w.group.waiters {
		if x != w && x.mode == Read && !x.busy {
			r.signalLocked(x, Handover)
			return
		}
	}
}

// wakeOneLocked wakes one waiter of mode (0: any): one already retrying
// absorbs it; otherwise the longest-waiting idle one is woken.
func (r *Registry) wakeOneLocked(g *Group, src Source, mode Mode) {
	var idle *Waiter
	for _, w := range g.waiters {
		if mode != 0 && w.mode != mode {
			continue
		}
		if w.busy {
			r.signalLocked(w, src)
			return
		}
		if idle == nil {
			idle = w
		}
	}
	if idle != nil {
		r.signalLocked(idle, src)
	}
}

// wakeAllLocked wakes every waiter.
func (r *Registry) wakeAllLocked(g *Group, src Source) {
	for _, w := range g.waiters {
		r.signalLocked(w, src)
	}
}

func (r *Registry) signalLocked(w *Waiter, src Source) {
	w.busy = true
	select {
	case w.wake <- src:
	default: // a wake-up is pending already: the waiter will retry anyway
	}
}

func (r *Registry) wakeReadersLocked(g *Group, src Source) {
	for _, w := range g.waiters {
		if w.mode == Read {
			r.signalLocked(w, src)
		}
	}
}

// Deliver tells the waiter of owner on lock k, if it waits in this Client,
// that a release granted it the lock with token: the releasing Unlock's
// reply, which arrives before the release's message.
func (r *Registry) Deliver(k *Keys, owner string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.groups[k.Channel]; g != nil {
		r.applyLocked(g, signal{writer: writerNamed, owner: owner, granted: true, token: token}, Reply)
	}
}

// applyLocked wakes the waiters sig lets in.
func (r *Registry) applyLocked(g *Group, sig signal, src Source) {
	if sig.readers {
		r.wakeReadersLocked(g, src)
	}
	switch sig.writer {
	case writerOne:
		r.wakeOneLocked(g, src, Write)
	case writerOrAnyMode:
		r.wakeOneLocked(g, src, 0)
	case writerUnqueued:
		for _, w := range g.waiters {
			if w.mode == Write && w.unqueued {
				r.signalLocked(w, src)
				break
			}
		}
	case writerNamed:
		for _, w := range g.waiters {
			if w.mode != Write || w.owner != sig.owner {
				continue
			}
			if sig.granted && w.granted && sig.token <= w.token {
				// A grant it was told of already: the reply and the
				// message of one release both name it. The first
				// wake-up makes it look at the grant; a second would
				// stay pending until it leaves and be passed on to a
				// waiter that then retries for nothing.
				continue
			}
			if sig.granted { // the latest grant counts
				w.granted, w.token = true, sig.token
				w.grantBy = Grant
				if src == Reply {
					w.grantBy = Reply
				}
			}
			r.signalLocked(w, w.grantBy)
		}
	}
}
