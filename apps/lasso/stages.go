package lasso

import (
	"fmt"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/schmp"
)

// PathStages runs a coordinator's regularization path, if its job is one,
// through the runtime's stages (it implements schmp.Staged): the
// coordinators of the column layout, the Lasso's and logistic
// regression's, embed it and start it with StartPath. Every update the
// coordinator sends carries its penalty, which PathStages keeps at the λ
// of the path being solved, so that the workers switch to it. The zero
// value is a job of one λ.
type PathStages struct {
	path   *Path                // nil unless the job is a regularization path
	lambda *float64             // the coordinator's penalty
	model  func() *linear.Model // the coordinator's model
}

// StartPath makes the job a regularization path of k penalties from
// lambdaMax down to *lambda, the coordinator's penalty, if k > 0 (NewPath,
// whose points keep the app's metrics named in columns), and sets *lambda
// to the first; model returns the coordinator's model, which the path
// records at the end of each stage.
func (s *PathStages) StartPath(k int, lambdaMax float64, lambda *float64, columns []string, model func() *linear.Model) error {
	s.lambda, s.model = lambda, model
	if k <= 0 {
		return nil
	}
	var err error
	if s.path, err = NewPath(k, lambdaMax, *lambda, columns); err != nil {
		return err
	}
	*lambda = s.path.Lambda()
	return nil
}

// Path returns the regularization path, nil unless the job is one (known
// after Start).
func (s *PathStages) Path() *Path { return s.path }

// Stage implements schmp.Staged: the λ of the path being solved, ""
// for a job of one λ.
func (s *PathStages) Stage() string {
	if s.path == nil {
		return ""
	}
	return s.path.Stage()
}

// FinalStage implements schmp.Staged.
func (s *PathStages) FinalStage() bool { return s.path == nil || s.path.Final() }

// EndStage implements schmp.Staged: it records the coordinator's model and
// the report sample at the λ being solved, and moves to the next λ of the
// path, which the next update carries to the workers.
func (s *PathStages) EndStage(sample schmp.Sample, stop string) error {
	if s.path == nil {
		return nil
	}
	s.path.End(sample, stop, s.model())
	*s.lambda = s.path.Lambda()
	return nil
}

// PathMetrics returns ms with, on a path, the metric lambda: the λ being
// solved.
func (s *PathStages) PathMetrics(ms []schmp.Metric) []schmp.Metric {
	if s.path == nil {
		return ms
	}
	return append(ms, schmp.Metric{Name: "lambda", Value: *s.lambda})
}

// SnapshotPath returns the path's part of the coordinator's snapshot: the
// path's (Path.Snapshot), nil without a path.
func (s *PathStages) SnapshotPath() ([]byte, error) {
	if s.path == nil {
		return nil, nil
	}
	return s.path.Snapshot()
}

// CheckPath checks b, the path's part of a coordinator's snapshot, before
// the coordinator changes anything: a snapshot with a path for a job of
// one λ, or the other way round, is an error.
func (s *PathStages) CheckPath(b []byte) error {
	if (b != nil) != (s.path != nil) {
		return fmt.Errorf("snapshot with a path: %t, this job's: %t", b != nil, s.path != nil)
	}
	return nil
}

// RestorePath restores the path from b, checked (CheckPath), and the
// coordinator's penalty with it.
func (s *PathStages) RestorePath(b []byte) error {
	if s.path == nil {
		return nil
	}
	if err := s.path.Restore(b); err != nil {
		return err
	}
	*s.lambda = s.path.Lambda()
	return nil
}
