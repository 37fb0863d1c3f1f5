// Package schmp is the programming interface of scheduled model parallelism
// (SchMP): an iterative-convergent program is an update equation plus an
// order in which to run it, written as three functions.
//
//   - Schedule runs on the scheduler node. Given the round number and how much
//     variables moved lately (Feedback), it returns a plan P: which variables
//     are updated this round, and by whom.
//   - Push runs on every worker node over the worker's own data shard. Given
//     the plan, it returns a partial update R.
//   - Pull runs on the coordinator node. Given the plan and every worker's
//     partial, it computes the new variable values and returns the update U
//     that workers apply to their local state, and the Feedback that feeds the
//     scheduler's priorities.
//
// Besides these, a worker describes its shard (S) when it joins and reports
// on it when asked, so that the coordinator can set the job up (Start) and
// compute the objective (Objective). The runtime (packages scheduler, worker,
// coordinator and job) moves the typed values between the nodes over NATS
// as msgpack; an app never encodes or decodes bytes itself.
//
// The roles share nothing but messages: a Scheduler, a Worker and a
// Coordinator of the same app may run in three processes on three machines.
package schmp
