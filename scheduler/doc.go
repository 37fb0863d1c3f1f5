// Package scheduler decides which model variables are updated together in
// each round: priority sampling, dependency checks, random/cyclic plans (the
// dynamic engine), and the rotation of blocks. It neither speaks NATS nor
// reads files: the node that serves plans over NATS is package
// scheduler/node, the engine over a LIBSVM file's columns package
// scheduler/columnar.
//
// The dynamic engine ([Dynamic]) draws candidate variables by a [Policy],
// keeps only those that are nearly independent of the ones already accepted
// in the round (as judged by a [Dependencies]: [SparseColumns] for variables
// that are a matrix's columns, [RowDependencies] for its rows or for
// variables given their feature sets), and splits the accepted variables
// into cost-balanced blocks, one per worker.
// A [Config] of zero fields but Vars is a working engine: every zero means a
// documented default.
package scheduler
