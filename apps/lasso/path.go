package lasso

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/schmp"
)

// Path is a regularization path as one job solves it: K penalties
// λ_1 = λ_max > λ_2 > … > λ_K, geometric as glmnet's (PathLambdas), solved
// one after the other, each from the solution at the one before (a warm
// start), and what the job found at each. The coordinator of the column
// layout (the Lasso's, and logistic regression's) holds one and runs it
// through the runtime's stages (schmp.Staged): when a report at λ_k
// certifies the objective within the tolerance, the coordinator records
// the model and the report, and the next update it sends the workers
// carries λ_{k+1}.
type Path struct {
	lambdas   []float64
	lambdaMax float64
	columns   []string // the app's metrics that each point keeps
	stage     int      // the index of the λ being solved
	from      uint64   // the round after which its stage started
	points    []PathPoint
}

// PathPoint is what a path found at one of its penalties.
type PathPoint struct {
	// Step is the penalty's place on the path, 1 for λ_max.
	Step   int
	Lambda float64
	// Sample is the report that ended the step: the objective, gap and nnz
	// of Model at Lambda, the app's metrics, the round and the time since
	// the first round.
	schmp.Sample
	// Rounds is the number of rounds run at this penalty.
	Rounds uint64
	// Stop is "converged", or for the step during which the job stopped,
	// the job's reason (coordinator.Result.Reason).
	Stop string
	// Model is the model the report describes.
	Model *linear.Model
}

// PathLambdas returns k ≥ 2 penalties from lambdaMax down to last
// (0 < last < lambdaMax), geometric: λ_i = λ_max·(last/λ_max)^((i−1)/(k−1)).
// The first is lambdaMax and the last is last, exactly.
func PathLambdas(k int, lambdaMax, last float64) []float64 {
	ls := make([]float64, k)
	r := math.Log(last / lambdaMax)
	for i := range ls {
		ls[i] = lambdaMax * math.Exp(float64(i)/float64(k-1)*r)
	}
	ls[0], ls[k-1] = lambdaMax, last
	return ls
}

// NewPath returns the path of k penalties from lambdaMax down to last
// (PathLambdas); each of its points keeps the value of the app's metrics
// named in columns (see WriteCSV).
func NewPath(k int, lambdaMax, last float64, columns []string) (*Path, error) {
	switch {
	case k < 2:
		return nil, fmt.Errorf("a regularization path needs at least 2 penalties, got %d", k)
	case !(lambdaMax > 0) || math.IsInf(lambdaMax, 0):
		return nil, fmt.Errorf("λ_max is %v: the data have no regularization path (every coefficient is 0 at any λ)", lambdaMax)
	case !(last > 0 && last < lambdaMax):
		return nil, fmt.Errorf("the path's last λ, %v, must be in (0, λ_max = %v)", last, lambdaMax)
	}
	return &Path{lambdas: PathLambdas(k, lambdaMax, last), lambdaMax: lambdaMax, columns: columns}, nil
}

// Len returns the number of penalties on the path.
func (p *Path) Len() int { return len(p.lambdas) }

// Lambdas returns the penalties, in order (owned by p).
func (p *Path) Lambdas() []float64 { return p.lambdas }

// LambdaMax returns λ_max, the first penalty.
func (p *Path) LambdaMax() float64 { return p.lambdaMax }

// Lambda returns the penalty being solved.
func (p *Path) Lambda() float64 { return p.lambdas[p.stage] }

// Final reports whether the penalty being solved is the last.
func (p *Path) Final() bool { return p.stage == len(p.lambdas)-1 }

// Stage describes the penalty being solved, e.g. "λ 3/20 0.0123".
func (p *Path) Stage() string {
	return fmt.Sprintf("λ %d/%d %.4g", p.stage+1, len(p.lambdas), p.Lambda())
}

// End records the model m and the report s that ends the penalty being
// solved, with stop "converged" or the job's reason for stopping, and
// moves to the next penalty if the stage converged and is not the last.
func (p *Path) End(s schmp.Sample, stop string, m *linear.Model) {
	p.points = append(p.points, PathPoint{
		Step: p.stage + 1, Lambda: p.Lambda(), Sample: s,
		Rounds: s.Round - min(p.from, s.Round), Stop: stop, Model: m,
	})
	p.from = s.Round
	if stop == "converged" && !p.Final() {
		p.stage++
	}
}

// Points returns the points recorded so far, in order (owned by p).
func (p *Path) Points() []PathPoint { return p.points }

// Columns returns the names of the app's metrics that each point keeps
// (owned by p).
func (p *Path) Columns() []string { return p.columns }

// PathCSV returns the name of the path's table for the output prefix.
func PathCSV(prefix string) string { return prefix + ".path.csv" }

// ModelFile returns the name of the model file of step (1-based) of a path
// of k penalties for the output prefix: PREFIX.lambda-NN.csv, with NN
// zero-padded to the width of k so that the names sort in path order.
func ModelFile(prefix string, step, k int) string {
	return fmt.Sprintf("%s.lambda-%0*d.csv", prefix, len(strconv.Itoa(k)), step)
}

// WriteCSV writes the path's table: a header, then a row per point,
// step,lambda,lambda_ratio,objective,gap,nnz,rounds,time_s,stop and the
// app's metrics named at NewPath (an empty cell where the report had none,
// or NaN). lambda_ratio is λ/λ_max; rounds are the rounds run at the
// penalty, and time_s the time from the first round to the report that
// ended it.
func (p *Path) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("step,lambda,lambda_ratio,objective,gap,nnz,rounds,time_s,stop")
	for _, c := range p.columns {
		bw.WriteString("," + c)
	}
	bw.WriteByte('\n')
	var b []byte
	for _, pt := range p.points {
		b = strconv.AppendInt(b[:0], int64(pt.Step), 10)
		for _, v := range []float64{pt.Lambda, pt.Lambda / p.lambdaMax, pt.Objective, pt.Gap} {
			b = append(b, ',')
			b = strconv.AppendFloat(b, v, 'g', 17, 64)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(pt.NNZ), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, pt.Rounds, 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, pt.Time.Seconds(), 'f', 6, 64)
		b = append(b, ',')
		b = append(b, pt.Stop...)
		for _, c := range p.columns {
			b = append(b, ',')
			if v := pt.Metric(c); !math.IsNaN(v) {
				b = strconv.AppendFloat(b, v, 'g', 17, 64)
			}
		}
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}

// Metric returns the value of the app's metric name in the point's report,
// or NaN if it has none.
func (pt *PathPoint) Metric(name string) float64 {
	for _, m := range pt.Metrics {
		if m.Name == name {
			return m.Value
		}
	}
	return math.NaN()
}

// WriteFiles writes the path's outputs for the prefix: the model of every
// point to ModelFile, then the table to PathCSV, each to a temporary file
// renamed into place. If one fails, the files written before it are
// removed, so that a failure leaves no output.
func (p *Path) WriteFiles(prefix string) error {
	var written []string
	fail := func(err error) error {
		for _, f := range written {
			os.Remove(f)
		}
		return err
	}
	for _, pt := range p.points {
		name := ModelFile(prefix, pt.Step, p.Len())
		if err := atomicfile.Write(name, func(w *bufio.Writer) error { return pt.Model.Write(w) }); err != nil {
			return fail(err)
		}
		written = append(written, name)
	}
	if err := atomicfile.Write(PathCSV(prefix), func(w *bufio.Writer) error { return p.WriteCSV(w) }); err != nil {
		return fail(err)
	}
	return nil
}
