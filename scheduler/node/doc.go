// Package node is the scheduler role's node: it joins a job over NATS,
// builds the app's scheduler (schmp.Scheduler, usually an engine of package
// scheduler) for the part of the variables the coordinator gives it, and
// answers the coordinator's plan requests (DESIGN "Roles, subjects and messages"). The engines stay in
// package scheduler, which neither speaks NATS nor reads files, so that a
// test drives them without a network.
package node
