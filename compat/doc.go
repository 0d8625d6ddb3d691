// Package compat documents the wire format fairrw shares with Java Redisson,
// so that Go and Java services can hold one lock on one Redis. It exports
// nothing: a Go user shares a lock with Java by choosing the Redisson policy
// (fairrw.WithPolicy(fairrw.Redisson())) or a Mutex, and by giving both sides
// the same lock name; fairrw builds every key itself. The code that builds
// Redisson's names lives in internal/compat, fairrw's own keys and the
// scripts' requests in internal/wire, the scripts in the lua package, and
// docs/redisson.md says what each side may rely on.
//
// # RReadWriteLock (the Redisson policy)
//
// For a lock named N (Redisson 4.x; stable since 3.x apart from the unlock
// latch):
//
//   - the lock hash N: field "mode" = "read" or "write"; a reader's field is
//     its owner "<client UUID>:<owner id>" (Java's owner id is a thread id), a
//     writer's "<client UUID>:<owner id>:write"; values are hold counts;
//   - one key per read hold, "{N}:<owner>:rwlock_timeout:K" (K from 1), with
//     that hold's own PX lease;
//   - the channel "redisson_rwlock:{N}": "0" is published when the last reader
//     leaves (Java wakes one waiter per client), "1" when a writer leaves
//     (Java wakes every waiter of a client); PUBLISH on a single node,
//     SPUBLISH on a Redis 7+ cluster;
//   - the unlock latch "redisson_unlock_latch:{N}:<32 hex digits>", which
//     makes an unlock idempotent.
//
// The brace rule: a name that contains '{' is used as is ("prefix:N",
// "N:suffix"); any other name is wrapped, "{N}", so that every key of the lock
// hashes to the name's cluster slot.
//
// # RLock (Mutex)
//
// The hash N with one field "<client UUID>:<owner id>" = that owner's hold
// count, the channel "redisson_lock__channel:{N}" with the message "0" when
// the mutex is freed, and the same unlock latch.
//
// # fairrw's own keys
//
// fairrw adds nothing to the Redisson hash, since Java counts its fields. Its
// own keys live beside it in the same slot, each with a TTL, and Java neither
// reads nor writes them: "fairrw:<len>:{N}:fence" (the last fencing token),
// "fairrw_attempt:{N}:<owner>" (the marker of a given-up acquire) and, under
// the fair policies, "fairrw:<len>:{N}" and its ":readers", ":queue",
// ":waiting", ":admitted" and ":wake" keys, where <len> is the name's length
// in bytes.
package compat
