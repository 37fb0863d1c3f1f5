// Package member makes a process a member of a job: a worker or scheduler
// node joins the coordinator (Join, Enter), tells it that it is ready
// (Announce), waits as a spare until it is given a place (AwaitAssign),
// serves its place again after a rollback (ServePlace), and sends and
// follows heartbeats (Beat, Heartbeats, Pulse). The messages themselves
// and their validation are package protocol's; the roles' rules are
// their cores' (worker.Core, scheduler/node.Core).
package member
