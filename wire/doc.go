// Package wire moves typed values between the nodes of a job: msgpack
// encoding (with fast paths for numeric slices), typed publish, request and
// subscribe over NATS, subjects under one job prefix, and an embedded
// nats-server for single-machine jobs and tests.
package wire
