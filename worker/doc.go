// Package worker runs the worker node of a job: it joins the job, loads its
// own data shard, and then, round after round, applies the coordinator's
// updates to its local state and pushes partial updates for the plan.
package worker
