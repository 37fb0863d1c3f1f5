package main

import (
	"context"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
)

// runJob runs the job of cfg in this process (job.Run: an embedded NATS server
// unless opts.NATS is set) with the program of cfg's algorithm and the
// runtime options that cfg implies (setDefaults).
func runJob(ctx context.Context, cfg mf.Config, opts job.Options) (*coordinator.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	setDefaults(cfg, &opts.Coordinator)
	switch {
	case cfg.Algo == mf.ALS:
		return job.Run(ctx, mf.ALSProgram(cfg), opts)
	case cfg.Algo == mf.CCD:
		return job.Run(ctx, mf.CCDProgram(cfg), opts)
	case cfg.Schedule == mf.Unscheduled:
		return job.Run(ctx, mf.UnscheduledProgram(cfg), opts)
	}
	return job.Run(ctx, mf.RotationProgram(cfg), opts)
}

// setDefaults fills what the runtime needs from cfg where o leaves it 0:
// Workers is cfg.Workers, and MaxRounds and ReportEvery are cfg.Rounds.
func setDefaults(cfg mf.Config, o *coordinator.Options) {
	maxRounds, reportEvery := cfg.Rounds()
	if o.Workers == 0 {
		o.Workers = cfg.Workers
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = maxRounds
	}
	if o.ReportEvery == 0 {
		o.ReportEvery = reportEvery
	}
}
