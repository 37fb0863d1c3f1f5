// Package coordinator runs the coordinator node of a job: it admits the
// workers and gives each its shard, then drives the rounds (plan from the
// scheduler, task to the workers, partials back, Pull, feedback to the
// scheduler), computes the objective every few rounds, decides when to stop,
// and writes the model and the metrics.
package coordinator
