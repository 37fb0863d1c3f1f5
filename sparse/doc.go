// Package sparse holds the compressed sparse column (CSC) matrix that the
// apps keep their data shards in and that the scheduler reads its columns
// from for dependency checks.
package sparse
