// Package fairness computes the fairness metrics of
// shared/docs/measuring.md from recorded lock requests: per-class wait
// percentiles (timed-out requests counted at their timeout, never dropped),
// Jain's index and min/mean/max grants per client, overtakes, the share of
// requests not granted within a bound (writer starvation) and grants/s.
//
// It knows nothing of Redis or of any lock library: the harness
// (bench/cmd/fairbench) records one Request per acquire call in a Recorder
// and summarizes them here.
package fairness
