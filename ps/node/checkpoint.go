package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/wire"
)

// A checkpoint of a parameter-server job at clock k (ps.Config.Every) is a
// piece per server, its ps.Cut at stamp k, and a piece per worker, the
// state the worker gives Client.Checkpoint at the start of its clock k.
// Each role stores its own piece in the job's checkpoint store and says so
// on ps.stored; Commit writes the manifest once every piece of a clock is
// in, so a checkpoint is whole or absent.

const storedSubject = "ps.stored"

// stored says that a role stored its piece of the checkpoint of Clock.
type stored struct {
	Piece  string `msgpack:"piece"`
	Clock  int    `msgpack:"clock"`
	Digest string `msgpack:"digest"`
	Sum    uint32 `msgpack:"sum"`
}

func serverPiece(i int) string { return checkpoint.Piece("ps-server", i) }
func workerPiece(w int) string { return checkpoint.Piece("ps-worker", w) }

// settings are what a checkpoint's manifest says of the job's tables.
func settings(cfg ps.Config) map[string]string {
	return map[string]string{"ps-tables": strconv.FormatUint(uint64(cfg.Sum()), 16)}
}

// put stores a role's piece and says so.
func put(ctx context.Context, c *wire.Conn, store *checkpoint.Store, cfg ps.Config, clock int, piece string, data []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	digest, err := store.Put(ctx, uint64(clock), piece, data)
	if err != nil {
		return err
	}
	return wire.Publish(c, storedSubject, stored{Piece: piece, Clock: clock, Digest: digest, Sum: cfg.Sum()})
}

// latest returns the last checkpoint's clock and piece of a role.
func latest(ctx context.Context, store *checkpoint.Store, cfg ps.Config, piece string, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := store.Latest(ctx)
	if err != nil {
		return 0, nil, err
	}
	if got, want := m.Settings["ps-tables"], settings(cfg)["ps-tables"]; got != want {
		return 0, nil, fmt.Errorf("ps: the checkpoint of clock %d has other tables (checksum %s, this job's %s): resume with the same settings", m.Round, got, want)
	}
	data, err := store.Get(ctx, m.Round, piece, m.Pieces[piece])
	if err != nil {
		return 0, nil, err
	}
	return int(m.Round), data, nil
}

// Commit commits the job's checkpoints as their pieces come in, keeping
// the last opts.Keep, until ctx is done. It must be running before the
// first piece is stored.
func Commit(ctx context.Context, c *wire.Conn, cfg ps.Config, opts Options) error {
	return commit(ctx, c, cfg, opts, make(chan struct{}))
}

// commit is Commit, closing ready once it listens (or has failed).
func commit(ctx context.Context, c *wire.Conn, cfg ps.Config, opts Options, ready chan struct{}) error {
	opts = opts.withDefaults()
	listening := false
	defer func() {
		if !listening {
			close(ready)
		}
	}()
	store, err := checkpoint.OpenConn(ctx, c, true)
	if err != nil {
		return err
	}
	in, err := wire.Subscribe[stored](c, storedSubject)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := c.Flush(opts.Timeout); err != nil {
		return err
	}
	listening = true
	close(ready)
	pieces := map[int]map[string]string{}
	done := -1
	for {
		m, _, err := in.Next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil || m.Sum != cfg.Sum() || m.Clock <= done {
			continue
		}
		if pieces[m.Clock] == nil {
			pieces[m.Clock] = map[string]string{}
		}
		pieces[m.Clock][m.Piece] = m.Digest
		if len(pieces[m.Clock]) < cfg.Servers+cfg.Workers {
			continue
		}
		man := checkpoint.Manifest{Job: c.Job(), App: "ps", Round: uint64(m.Clock), Workers: cfg.Workers,
			Settings: settings(cfg), Pieces: pieces[m.Clock], Time: time.Now()}
		cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		err = store.Commit(cctx, man, opts.Keep)
		cancel()
		if err != nil {
			return fmt.Errorf("ps: the checkpoint of clock %d: %w", m.Clock, err)
		}
		opts.Log.Info("ps: checkpoint committed", "clock", m.Clock)
		for k := range pieces {
			if k <= m.Clock {
				delete(pieces, k)
			}
		}
		done = m.Clock
	}
}

// Checkpoint stores the worker's piece of the checkpoint of its current
// clock, if one is due (ps.Config.Every, with Options.Checkpoints), with
// the state state returns: what the worker needs, besides the tables, to go
// on from this clock. Call it at the start of every clock.
func (cl *Client) Checkpoint(ctx context.Context, state func() ([]byte, error)) error {
	k := cl.core.Clock()
	if !cl.opts.Checkpoints || cl.cfg.Every == 0 || k == 0 || k%cl.cfg.Every != 0 || k == cl.resumedAt {
		return nil
	}
	if cl.store == nil {
		store, err := checkpoint.OpenConn(ctx, cl.c, true)
		if err != nil {
			return err
		}
		cl.store = store
	}
	data, err := state()
	if err != nil {
		return fmt.Errorf("ps: worker %d's state at clock %d: %w", cl.worker, k, err)
	}
	return put(ctx, cl.c, cl.store, cl.cfg, k, workerPiece(cl.worker), data, cl.opts.Timeout)
}

// Resumed returns the state the worker stored at the checkpoint the job
// resumed from, nil if it did not resume; Clocks is that checkpoint's.
func (cl *Client) Resumed() []byte { return cl.resumed }

// resume sets the client to the last checkpoint.
func (cl *Client) resume(ctx context.Context) error {
	store, err := checkpoint.OpenConn(ctx, cl.c, false)
	if err != nil {
		return err
	}
	k, data, err := latest(ctx, store, cl.cfg, workerPiece(cl.worker), cl.opts.Timeout)
	if err != nil {
		return err
	}
	if err := cl.core.Resume(k); err != nil {
		return err
	}
	cl.store, cl.resumed, cl.resumedAt = store, data, k
	if cl.resumed == nil {
		cl.resumed = []byte{}
	}
	cl.opts.Log.Info("ps: resumed from the checkpoint of clock", "clock", k, "worker", cl.worker)
	return nil
}

// serverCheckpoints returns what a server needs for checkpoints: the store,
// and the cut to start from when resuming.
func serverCheckpoints(ctx context.Context, c *wire.Conn, cfg ps.Config, index int, opts Options) (*checkpoint.Store, *ps.Cut, error) {
	if !opts.Checkpoints && !opts.Resume {
		return nil, nil, nil
	}
	store, err := checkpoint.OpenConn(ctx, c, !opts.Resume)
	if err != nil {
		return nil, nil, err
	}
	if !opts.Resume {
		return store, nil, nil
	}
	_, data, err := latest(ctx, store, cfg, serverPiece(index), opts.Timeout)
	if err != nil {
		return nil, nil, err
	}
	var cut ps.Cut
	if err := codec.Unmarshal(data, &cut); err != nil {
		return nil, nil, fmt.Errorf("ps: server %d's piece: %w", index, err)
	}
	return store, &cut, nil
}

// storeCut stores a server's cut.
func storeCut(ctx context.Context, c *wire.Conn, store *checkpoint.Store, cfg ps.Config, cut ps.Cut, timeout time.Duration) error {
	if store == nil {
		return errors.New("no checkpoint store")
	}
	data, err := codec.Marshal(cut)
	if err != nil {
		return err
	}
	return put(ctx, c, store, cfg, cut.Stamp, serverPiece(cut.Server), data, timeout)
}
