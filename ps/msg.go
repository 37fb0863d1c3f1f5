package ps

import (
	"fmt"

	"github.com/strads-go/strads/codec"
)

// ToServer is a message to a server: exactly one of its fields is set.
type ToServer struct {
	Flush *Flush `msgpack:"f,omitempty"`
	Read  *Read  `msgpack:"r,omitempty"`
	// Hello, Stop and Status are the node's, not the core's: a role
	// checks that a server has its job's tables, the job's end stops the
	// servers, and a worker that waits too long asks how far each worker
	// is (the answer is a Hello with Clocks).
	Hello  *Hello `msgpack:"h,omitempty"`
	Stop   *Hello `msgpack:"stop,omitempty"`
	Status *Hello `msgpack:"status,omitempty"`
}

// Hello carries a role's Config.Sum, and a server's in its answer, with,
// to a Status, how many of each worker's clocks it has applied.
type Hello struct {
	Sum    uint32 `msgpack:"sum"`
	Clocks []int  `msgpack:"clocks,omitempty"`
}

// Flush carries a worker's increments of one clock to one server. A worker
// sends one to every server at every clock, empty or not: it is how the
// server learns that the worker's clock has passed.
type Flush struct {
	Worker int `msgpack:"w"`
	// Clock is the clock whose increments these are; once applied, the
	// server counts Clock+1 of the worker's clocks.
	Clock  int     `msgpack:"c"`
	Deltas []Delta `msgpack:"d,omitempty"`
}

// Delta is the increments of some rows of one table. For a dense table,
// Values holds len(Rows) runs of the table's width. For a sparse one it
// holds each row's nonzero increments, at the columns Cols at the same
// places, in increasing order; Ends[k] is where row Rows[k]'s end, as in
// Nonzeros.
type Delta struct {
	Table  int            `msgpack:"t"`
	Rows   codec.Int32s   `msgpack:"r"`
	Values codec.Float64s `msgpack:"v"`
	Ends   codec.Int32s   `msgpack:"e,omitempty"`
	Cols   codec.Int32s   `msgpack:"c,omitempty"`
}

// Read asks a server for rows of a table as of a stamp: the answer
// includes every worker's increments of the clocks before Stamp.
type Read struct {
	// Worker is the reader; an observer, which does not clock, is -1.
	Worker int `msgpack:"w"`
	Table  int `msgpack:"t"`
	// Rows are the rows wanted; none: every row the server holds.
	Rows  codec.Int32s `msgpack:"r,omitempty"`
	Stamp int          `msgpack:"s"`
	// Seq ties the answer to the read.
	Seq uint64 `msgpack:"q"`
	// ReplyTo is where the answer goes; the core copies it to the answer's
	// Out and reads nothing into it.
	ReplyTo string `msgpack:"to,omitempty"`
}

// ToWorker is a message to a worker: exactly one of its fields is set.
type ToWorker struct {
	Rows *Rows `msgpack:"rows,omitempty"`
	Ack  *Ack  `msgpack:"ack,omitempty"`
}

// Rows are a server's values of some rows of a table.
type Rows struct {
	Server int          `msgpack:"s"`
	Table  int          `msgpack:"t"`
	Rows   codec.Int32s `msgpack:"r"`
	// Values holds len(Rows) runs of the table's width for a dense table;
	// for a sparse one, each row's nonzero values, at the columns Cols, and
	// Ends[k] is where row Rows[k]'s end, as in Nonzeros.
	Values codec.Float64s `msgpack:"v"`
	Ends   codec.Int32s   `msgpack:"e,omitempty"`
	Cols   codec.Int32s   `msgpack:"c,omitempty"`
	// Stamp is the server's clock when it sent them: every worker's
	// increments of the clocks before it are in.
	Stamp int `msgpack:"st"`
	// Own is how many of the receiving worker's clocks are in (-1 for an
	// observer).
	Own int `msgpack:"o"`
	// Seq is the read's, 0 for a push.
	Seq uint64 `msgpack:"q,omitempty"`
}

// Ack confirms that a server has applied a worker's clocks before Clock.
type Ack struct {
	Server int `msgpack:"s"`
	Clock  int `msgpack:"c"`
}

// Check reports the first thing wrong with r as an answer of one of cfg's
// servers: a server, table or row that is not one of cfg's or not the
// server's, or values that do not fit the table's shape or are not finite.
func (r *Rows) Check(cfg Config) error {
	if r.Server < 0 || r.Server >= cfg.Servers || r.Table < 0 || r.Table >= len(cfg.Tables) {
		return fmt.Errorf("rows of server %d, table %d", r.Server, r.Table)
	}
	tab := cfg.Tables[r.Table]
	for _, row := range r.Rows {
		if row < 0 || int(row) >= tab.Rows || cfg.Server(int(row)) != r.Server {
			return fmt.Errorf("row %d of table %s (%d rows) from server %d", row, tab.Name, tab.Rows, r.Server)
		}
	}
	return checkValues(tab, r.Rows, r.Ends, r.Cols, r.Values)
}

// Nonzeros returns r's rows by their nonzero values: r's own values for a
// sparse table, a copy of them for a dense one. r must be valid (Check).
func (r *Rows) Nonzeros(cfg Config) Nonzeros {
	if cfg.Tables[r.Table].Sparse {
		return Nonzeros{Rows: r.Rows, Ends: r.Ends, Cols: r.Cols, Vals: r.Values}
	}
	var nz Nonzeros
	w := cfg.Tables[r.Table].Width
	for k, row := range r.Rows {
		nz.Append(int(row), nonzeros(r.Values[k*w:(k+1)*w]))
	}
	return nz
}

// nonzeros returns d's rows, of a sparse table.
func (d *Delta) nonzeros() Nonzeros {
	return Nonzeros{Rows: d.Rows, Ends: d.Ends, Cols: d.Cols, Vals: d.Values}
}
