package main

import (
	"math"

	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
)

// checkPSCheckpoints refuses the checkpoint flags that a parameter-server
// mode cannot take: a duration (it takes one every N clocks, of which per
// says how many make what) and --resume without --checkpoint-every.
func checkPSCheckpoints(opts *coordinator.Options, mode, per string) error {
	switch {
	case opts.CheckpointInterval > 0:
		return cli.Usagef("--checkpoint-every %v: --mode %s takes a checkpoint every N clocks (%s), not at a time", opts.CheckpointInterval, mode, per)
	case opts.Resume && opts.CheckpointEvery == 0:
		// The servers cut the tables every N clocks, which their
		// checksum holds: a job of another N has other tables.
		return cli.Usagef("--resume in --mode %s: give the job's --checkpoint-every N too", mode)
	}
	return nil
}

// psCheckpoints sets o's checkpoints from rt (a worker's come from the
// coordinator as it joins) and returns the interval in clocks.
func psCheckpoints(rt *cli.Runtime, o *node.Options) int {
	every := int(min(rt.Options.CheckpointEvery, math.MaxInt32))
	o.Checkpoints, o.Resume = every > 0, rt.Options.Resume
	return every
}

// psReporter returns what puts a parameter-server job's evaluations on
// the live page m: the clocks and the work done so far, the objective, the
// nnz (NaN: none), the app's measures, and the staleness of the reads.
func psReporter(m *monitor.Metrics) func(clocks, work, objective, nnz float64, app map[string]float64, st ps.Stats) {
	var lastClocks, lastWork float64
	return func(clocks, work, objective, nnz float64, app map[string]float64, st ps.Stats) {
		m.Rounds.Add(clocks - lastClocks)
		m.Updates.Add(work - lastWork)
		lastClocks, lastWork = clocks, work
		app["staleness_mean"], app["staleness_var"], app["staleness_max"] = st.Mean(), st.Var(), float64(st.Max)
		m.Report(objective, math.NaN(), nnz, app)
	}
}
