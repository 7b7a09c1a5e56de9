// Package jobs runs one delegated Job on a spoke cluster (ADR-0046 §4):
// it submits a batch/v1 Job suspended (with the Kueue queue label when
// there is a queue; with none the runner admits it itself), labelled with
// the submitting broker's ID so that a startup sweep reaps only that
// broker's leftovers, bounded by activeDeadlineSeconds and reaped by
// ttlSecondsAfterFinished; it follows the Job by polling its status with
// bounded retry on transient errors (the deadline is the backstop),
// collects logs as monotonic snapshots (a failed snapshot skips a poll),
// and reads the result from sentinel lines in the logs and a trace from a
// size-capped base64 block.
//
// The package knows nothing of the Hub or the control channel: the broker
// gives it a client for the spoke (spoke/fleet builds it, per call) and a
// Report callback.
package jobs
