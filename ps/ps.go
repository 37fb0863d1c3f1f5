// Package ps is the stale-synchronous parameter server: the other half of
// the seeds (Bösen), for data-parallel programs such as SGD.
//
// A job's model lives in tables of rows of float64, sharded over the
// server nodes (row r on server r mod servers). A worker reads rows with
// Get, adds to them with Inc, and ends each of its passes with Clock. Every
// worker keeps a cache of the rows it reads, and a table's consistency model
// bounds how stale a cached row may be when it is read:
//
//   - BSP: a read at clock c sees every worker's updates of clocks before c;
//   - SSP(s): a read at clock c sees every update of clocks before c-s;
//     a worker more than s clocks ahead of the slowest waits;
//   - ESSP(s): SSP(s), and the servers push fresh rows to the workers that
//     read them as soon as every worker has clocked, instead of waiting to
//     be asked;
//   - Async: no bound; reads never wait once a row is cached, and the
//     servers push fresh rows after each of the reader's own clocks.
//
// A worker always reads its own updates (read-my-writes), including those
// of the current clock.
//
// A table is dense, Rows × Width values held whole by the servers and by
// every worker's cache, or sparse (Table.Sparse): each row held by its
// nonzero values only, as a SparseRow of increasing columns, at the
// servers, in the caches and in messages, and a worker caching only the
// rows it reads or adds to, so that memory goes with the nonzeros and the
// rows touched, not with Rows × Width. GetSparse and IncSparse read and add
// to a row by its nonzeros, with the same bounds, and work on dense tables
// too; Get and Inc work on sparse tables, Get returning a dense copy of
// the row.
//
// This package holds the two pure cores of the protocol, with no network,
// clock or goroutine: Shard, the state of one server, and Cache, the state
// of one worker's view; package ps/node runs them over NATS. An increment
// is applied exactly once however often its message is sent again, and
// integer increments add up exactly: the tests check both, and the
// staleness bound, under random delays, duplicates and reorderings.
package ps

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
)

// Model is a table's consistency model.
type Model uint8

// The consistency models.
const (
	BSP Model = iota
	SSP
	ESSP
	Async
)

var modelNames = [...]string{BSP: "bsp", SSP: "ssp", ESSP: "essp", Async: "async"}

// String returns the model's name as ParseModel takes it.
func (m Model) String() string {
	if int(m) < len(modelNames) {
		return modelNames[m]
	}
	return fmt.Sprintf("Model(%d)", m)
}

// ParseModel parses bsp, ssp, essp or async.
func ParseModel(s string) (Model, error) {
	for m, name := range modelNames {
		if s == name {
			return Model(m), nil
		}
	}
	return 0, fmt.Errorf("ps: unknown consistency model %q (bsp, ssp, essp or async)", s)
}

// Table describes one table: Rows rows of Width values, all starting at
// the values Init gives them, or at 0 for a sparse table.
type Table struct {
	// Name names the table in errors and metrics.
	Name string `msgpack:"name"`
	// Rows and Width are the table's shape.
	Rows  int `msgpack:"rows"`
	Width int `msgpack:"width"`
	// Model and Staleness are the read bound: Staleness is SSP's and
	// ESSP's s, and is 0 for BSP and ignored for Async.
	Model     Model `msgpack:"model"`
	Staleness int   `msgpack:"staleness"`
	// Init gives every value its start.
	Init Init `msgpack:"init"`
	// Sparse keeps each row by its nonzero values only, at the servers, in
	// the workers' caches and in messages, and a worker caches only the
	// rows it reads or adds to: for tables whose rows are mostly 0, or
	// whose workers each touch few of the rows. A sparse table starts at 0.
	Sparse bool `msgpack:"sparse,omitempty"`
}

// Init is how a table's values start: 0 when Scale is 0, otherwise
// Scale·z with z standard normal, drawn from (Seed, row), so that every
// server makes the same rows whatever their number.
type Init struct {
	Seed  uint64  `msgpack:"seed"`
	Scale float64 `msgpack:"scale"`
}

// Fill writes row's start values into v (len Width).
func (in Init) Fill(row int, v []float64) {
	if in.Scale == 0 {
		clear(v)
		return
	}
	rng := rand.New(rand.NewPCG(in.Seed, uint64(row)))
	for i := range v {
		v[i] = in.Scale * rng.NormFloat64()
	}
}

// bound is how many clocks a read may miss: -1 for no bound.
func (t Table) bound() int {
	switch t.Model {
	case BSP:
		return 0
	case Async:
		return -1
	}
	return t.Staleness
}

// eager reports whether servers push the table's rows to their readers.
func (t Table) eager() bool { return t.Model == ESSP || t.Model == Async }

// Config is what every server and worker of a job agrees on.
type Config struct {
	Tables  []Table `msgpack:"tables"`
	Servers int     `msgpack:"servers"`
	Workers int     `msgpack:"workers"`
	// Every asks the servers for a cut every Every clocks (0: none): the
	// tables as of stamp k·Every exactly, for a checkpoint.
	Every int `msgpack:"every,omitempty"`
}

// MaxAhead is how many of a worker's clocks a server may not have
// confirmed before the worker waits: it bounds what either end holds for
// the other.
const MaxAhead = 64

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	if c.Servers < 1 || c.Workers < 1 {
		return fmt.Errorf("ps: %d servers and %d workers: each needs at least 1", c.Servers, c.Workers)
	}
	if c.Every < 0 {
		return fmt.Errorf("ps: a cut every %d clocks", c.Every)
	}
	if len(c.Tables) == 0 {
		return errors.New("ps: no tables")
	}
	for i, t := range c.Tables {
		switch {
		case t.Rows < 1 || t.Width < 1:
			return fmt.Errorf("ps: table %d (%s): %d rows of width %d", i, t.Name, t.Rows, t.Width)
		case t.Rows > math.MaxInt32:
			return fmt.Errorf("ps: table %d (%s): %d rows, at most %d", i, t.Name, t.Rows, math.MaxInt32)
		case t.Model > Async:
			return fmt.Errorf("ps: table %d (%s): %v", i, t.Name, t.Model)
		case t.Staleness < 0 || t.Staleness >= MaxAhead:
			return fmt.Errorf("ps: table %d (%s): staleness %d, want 0 to %d", i, t.Name, t.Staleness, MaxAhead-1)
		case t.Model == BSP && t.Staleness != 0:
			return fmt.Errorf("ps: table %d (%s): bsp has staleness 0, not %d", i, t.Name, t.Staleness)
		case math.IsNaN(t.Init.Scale) || math.IsInf(t.Init.Scale, 0):
			return fmt.Errorf("ps: table %d (%s): init scale %v", i, t.Name, t.Init.Scale)
		case t.Sparse && t.Init.Scale != 0:
			return fmt.Errorf("ps: table %d (%s): a sparse table starts at 0, not at init scale %v", i, t.Name, t.Init.Scale)
		case t.Sparse && t.Width > math.MaxInt32:
			return fmt.Errorf("ps: table %d (%s): a sparse table of width %d, at most %d", i, t.Name, t.Width, math.MaxInt32)
		}
	}
	return nil
}

// Sum is a checksum of c, by which the roles of a job check that they
// were started with the same tables.
func (c Config) Sum() uint32 {
	return crc32.ChecksumIEEE(fmt.Appendf(nil, "%+v", c))
}

// Server returns the server that holds row.
func (c Config) Server(row int) int { return row % c.Servers }

// localRows is how many of a table's rows server s holds.
func (c Config) localRows(t, s int) int {
	n := c.Tables[t].Rows
	return (n - s + c.Servers - 1) / c.Servers
}
