package columnar

import (
	"fmt"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// Plan is the plan of a round of the dynamic engine: the variables it
// updates.
type Plan struct {
	Vars codec.Int32s `msgpack:"v"`
}

// Scheduler is a scheduler part for a model with one variable per
// column of a LIBSVM file (Lasso, logistic regression): the dynamic engine
// over a contiguous range of the columns, whose dependency check uses the
// columns' correlation.
type Scheduler struct {
	d     *scheduler.Dynamic
	first int32 // the engine's variable k is column first+k
	vars  int32 // the number of columns of the part
}

// NewScheduler reads part of parts of the columns of the LIBSVM file
// at path and starts the engine over them, with Pearson correlations for
// the dependency check if centered and cosines otherwise. c.Vars is set
// from the data, its zero fields take their defaults (scheduler.Config);
// a negative c.Warmup means one sweep of the part, ⌈Vars/Block⌉ rounds.
// Parts other than the first seed their draws with c.Seed+part. Without a
// dependency check (scheduler.Config.Checks) only the number of columns is read.
func NewScheduler(path string, centered bool, c scheduler.Config, part, parts int) (*Scheduler, error) {
	c = c.WithDefaults()
	var cols scheduler.Dependencies
	var first, vars, total int
	if !c.Checks() {
		var line, entries int
		err := libsvm.Read(path, func(l int, row libsvm.Row) error {
			entries += len(row.Index)
			if w := row.Width(); w > total {
				total, line = w, l
			}
			return nil
		})
		if err == nil {
			err = libsvm.CheckWidth(path, total, line, entries)
		}
		if err != nil {
			return nil, err
		}
		var hi int
		first, hi = libsvm.ShardRange(total, part, parts)
		vars = hi - first
	} else {
		x, lo, n, err := libsvm.ReadColumns(path, part, parts)
		if err != nil {
			return nil, err
		}
		cols, first, vars, total = scheduler.NewSparseColumns(x, centered), lo, x.Cols, n
	}
	if total == 0 {
		return nil, fmt.Errorf("%s: no features", path)
	}
	if vars == 0 {
		return nil, fmt.Errorf("%s: %d features are too few for %d schedulers", path, total, parts)
	}
	c.Vars = vars
	c.Seed += uint64(part)
	if c.Warmup < 0 {
		c.Warmup = (c.Vars + c.Block - 1) / c.Block
	}
	d, err := scheduler.NewDynamic(c, cols)
	if err != nil {
		return nil, err
	}
	return &Scheduler{d: d, first: int32(first), vars: int32(vars)}, nil
}

// ValidateConfig reports the first bad field of c for
// NewScheduler, before the data are read: c.Vars is not checked (it
// comes from the data), and a negative c.Warmup is allowed (one sweep).
func ValidateConfig(c scheduler.Config) error {
	c.Vars = max(c.Vars, 1)
	c.Warmup = max(c.Warmup, 0)
	return c.Validate()
}

// Schedule implements schmp.Scheduler. The feedback must name columns of
// this part.
func (s *Scheduler) Schedule(round uint64, fbs []schmp.Feedback) (Plan, schmp.PlanInfo, error) {
	for _, fb := range fbs {
		if len(fb.Delta) != len(fb.Vars) {
			return Plan{}, schmp.PlanInfo{}, fmt.Errorf("feedback of round %d with %d variables and %d deltas", fb.Round, len(fb.Vars), len(fb.Delta))
		}
		local := make([]int32, len(fb.Vars))
		for k, j := range fb.Vars {
			local[k] = j - s.first
			if local[k] < 0 || local[k] >= s.vars {
				return Plan{}, schmp.PlanInfo{}, fmt.Errorf("feedback of round %d for column %d, outside this scheduler's [%d, %d)", fb.Round, j, s.first, s.first+s.vars)
			}
		}
		s.d.Feedback(local, fb.Delta)
	}
	sel := s.d.Next()
	vars := make(codec.Int32s, len(sel.Vars))
	for k, j := range sel.Vars {
		vars[k] = j + s.first
	}
	info := s.d.Info(sel)
	info.Vars = vars
	return Plan{Vars: vars}, info, nil
}
