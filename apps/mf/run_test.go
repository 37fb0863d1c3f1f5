package mf

import (
	"context"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
)

// runJob runs the job of cfg in this process (job.Run: an embedded NATS server
// unless opts.NATS is set) with the program of cfg's algorithm and the
// runtime defaults of cfg.SetDefaults.
func runJob(ctx context.Context, cfg Config, opts job.Options) (*coordinator.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.SetDefaults(&opts.Coordinator)
	switch {
	case cfg.Algo == ALS:
		return job.Run(ctx, ALSProgram(cfg), opts)
	case cfg.Algo == CCD:
		return job.Run(ctx, CCDProgram(cfg), opts)
	case cfg.Schedule == Unscheduled:
		return job.Run(ctx, UnscheduledProgram(cfg), opts)
	}
	return job.Run(ctx, RotationProgram(cfg), opts)
}
