// Package history records what the reliability tests did to fairrw locks and
// checks the record: every acquire and release (Op), and every lease's
// believed-held interval (Hold).
//
// A Recorder wraps the fairrw calls (Recorder.Acquire, Recorder.Release) and
// watches every granted lease's Done channel. Acquires of other locks (a
// fairrw.QuorumRWMutex) are recorded with Recorder.Acquired; their leases
// are Held like a fairrw.Lease. Its record is checked by:
//
//   - CheckExclusion: no write hold overlaps a hold of another owner;
//   - CheckFencing: write tenures get strictly increasing tokens, and a read
//     never gets a token lower than a write granted before it;
//   - CheckLinearizable with Model: the operations fit a sequential
//     read-write lock (porcupine);
//   - a Store, the guarded resource of the fencing tests: it refuses stale
//     tokens and shows no lost update;
//   - CheckWriterFIFO and CheckPhaseFairAdmission: the fair policies'
//     order, over write grants (ordered by their tokens) and the reads
//     that waited for a write to end.
//
// Verify runs the history checkers, fails the test with a readable report
// and writes the artifacts (the history as JSON, porcupine's visualization)
// to $FAIRRW_ARTIFACTS, else to the test's temporary directory.
//
// # Lost leases and operations of unknown outcome
//
// A lease whose Done closes before its Unlock is called ended without a
// release: the Recorder records a synthetic Op of Kind Lost at that moment
// (Call = Return = the earlier of when the Recorder saw Done closed and the
// lease's local deadline), and the model treats it as the release of that
// hold. The lease's later Unlock returns ErrNotHeld and is recorded as a
// Release that ends nothing (Op.Lease ties it to its lease).
//
// An Op whose outcome is Unknown (a timeout, a lost connection: the call may
// or may not have taken effect in Redis) is given to porcupine with a return
// time after every other operation, and the model applies it if it was
// legal at its linearization point and ignores it otherwise. Since an
// operation that never returned may be linearized last, "took effect" and
// "never took effect" are both accepted.
package history
