// Package coordinator runs the coordinator node of a job: it admits the
// workers and gives each its shard, then drives the rounds (plan from the
// scheduler, task to the workers, partials back, Pull, feedback to the
// scheduler), computes the objective every few rounds, decides when to stop,
// and writes the model and the metrics.
//
// The rules of the rounds are those of package coordinator/pipeline, a pure
// state machine; this package's node is its I/O loop over NATS.
package coordinator
