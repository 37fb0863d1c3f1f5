package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/wire"
)

// Work is a worker's program: it reads and adds through cl and ends its
// clocks with cl.Clock.
type Work func(ctx context.Context, worker int, cl *Client) error

// Run runs a whole data-parallel job: cfg.Servers servers and cfg.Workers
// workers, each on its own connection from dial, the workers running work.
// Once every worker has returned and its clocks are confirmed, after runs
// (to read the tables with Read, on its own connection); then the servers
// stop. The first error ends the job and is returned.
func Run(ctx context.Context, dial func(name string) (*wire.Conn, error), cfg ps.Config, opts Options, work Work, after func(ctx context.Context, c *wire.Conn) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var servers sync.WaitGroup
	defer servers.Wait()
	defer cancel(nil)
	if err := startCommitter(ctx, cancel, &servers, dial, cfg, opts); err != nil {
		return err
	}
	all := make([]int, cfg.Servers)
	for i := range all {
		all[i] = i
	}
	if err := serveAll(ctx, cancel, &servers, dial, cfg, opts, all); err != nil {
		return err
	}
	var workers sync.WaitGroup
	for w := range cfg.Workers {
		c, err := dial(fmt.Sprintf("ps-worker-%d", w))
		if err != nil {
			cancel(err)
			break
		}
		workers.Go(func() {
			if err := runWorker(ctx, c, cfg, w, opts, work); err != nil {
				cancel(err)
			}
		})
	}
	workers.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if after == nil {
		return nil
	}
	c, err := dial("ps-observer")
	if err != nil {
		return err
	}
	if err := after(ctx, c); err != nil {
		return err
	}
	return context.Cause(ctx)
}

func runWorker(ctx context.Context, c *wire.Conn, cfg ps.Config, w int, opts Options, work Work) error {
	cl, err := Dial(ctx, c, cfg, w, opts)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := work(ctx, w, cl); err != nil {
		return fmt.Errorf("ps: worker %d: %w", w, err)
	}
	return cl.Sync(ctx)
}
