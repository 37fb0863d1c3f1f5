package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/libsvm"
)

// cvUsage is the help of --cv, for the Lasso and logistic regression.
const cvUsage = "K-fold cross-validation along the path of --lambda-path, as cv.glmnet: the rows are dealt into K folds (by --seed), and each fold's path job, on the other rows at the whole data's penalties, reports the fold's error (Lasso: mean squared error; logreg: misclassification); " +
	"--out PREFIX then writes PREFIX.cv.csv (step,lambda,cv_error,cv_se,chosen: min, the λ of the lowest error, and 1se, the largest within a standard error of it) and PREFIX.coef.csv (the path's coefficients, a column per step); a whole job only, the folds run one after another in this process (0: none)"

// checkCV checks --cv k against the path's length and the role.
func checkCV(k, path int, role cli.Role) error {
	switch {
	case k == 0:
		return nil
	case k < 2:
		return cli.Usagef("--cv %d: want at least 2 folds", k)
	case path < 2:
		return cli.Usagef("--cv needs --lambda-path K (20, say): the folds are solved at the path's penalties")
	case role != cli.All:
		return cli.Usagef("--cv: a whole job only (the folds are files this process writes)")
	}
	return nil
}

// cvRun is --cv as a job runs it: the folds (0: none), the seed that
// deals them (--seed), the runtime's options of their jobs, and where the
// table is printed.
type cvRun struct {
	folds int
	seed  uint64
	opts  coordinator.Options
	w     io.Writer
}

// writePath writes the files of the path p (writePath) to prefix, after
// cross-validating it on data when the job asks: fold runs a fold, whose
// error is measure; the table is printed, and its files written with the
// path's.
func (c cvRun) writePath(ctx context.Context, prefix, data string, p *lasso.Path, measure string, fold foldRun) error {
	if c.folds == 0 || p == nil {
		return writePath(prefix, p)
	}
	r, err := crossValidate(ctx, data, c.folds, c.seed, p.LambdaMax(), p.Lambdas()[p.Len()-1], p.Len(), measure, fold, c.w)
	if err != nil {
		return err
	}
	r.print(c.w, c.folds, prefix, p.Len())
	if err := writePath(prefix, p); err != nil || prefix == "" {
		return err
	}
	return r.writeFiles(prefix, p)
}

// foldRun runs one fold's path job on the rows of train, tested on test,
// at penalties from start down to last, and returns the fold's error at
// each step of the path.
type foldRun func(ctx context.Context, train, test string, start, last float64) ([]float64, error)

// foldOptions returns the runtime's options of a fold's job: those of the
// job the user asked for, without its outputs, progress, metrics or
// checkpoints.
func foldOptions(o *coordinator.Options) coordinator.Options {
	return coordinator.Options{
		Workers: o.Workers, Schedulers: o.Schedulers, Depth: o.Depth, MaxRounds: o.MaxRounds, TimeLimit: o.TimeLimit,
		Tol: o.Tol, RiseTol: o.RiseTol, ReportEvery: o.ReportEvery, JoinTimeout: o.JoinTimeout, Timeout: o.Timeout,
		Logger: quietLogger,
	}
}

// quietLogger drops the fold jobs' logs: the command reports each fold.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// foldErrors returns the errors along a fold's path, of the app's metric
// name (err maps it to an error: the metric itself, or one minus an
// accuracy), checking that the fold solved every step.
func foldErrors(p *lasso.Path, steps int, name string, err func(float64) float64) ([]float64, error) {
	if p == nil {
		return nil, fmt.Errorf("the fold's job solved no path")
	}
	pts := p.Points()
	if len(pts) != steps || pts[len(pts)-1].Stop != "converged" {
		last := ""
		if len(pts) > 0 {
			last = pts[len(pts)-1].Stop
		}
		return nil, fmt.Errorf("the fold's path ended at step %d of %d (%s): give it more --max-rounds or --time-limit", len(pts), steps, last)
	}
	out := make([]float64, steps)
	for i := range pts {
		out[i] = err(pts[i].Metric(name))
		if math.IsNaN(out[i]) {
			return nil, fmt.Errorf("the fold's path has no %s at step %d", name, i+1)
		}
	}
	return out, nil
}

// cvResult is the cross-validated error along a path.
type cvResult struct {
	measure string    // what the error is: "mse" or "misclassification"
	lambdas []float64 // the path's penalties
	// mean and se are the error averaged over the folds (weighted by their
	// rows) and its standard error, per step.
	mean, se []float64
	// min is the step (0-based) of the lowest mean error, oneSE the
	// first (largest λ) whose mean is within a standard error of it.
	min, oneSE int
}

// crossValidate deals the rows of data into k folds by seed, runs each
// fold's path at penalties from start to last, and averages the errors.
func crossValidate(ctx context.Context, data string, k int, seed uint64, start, last float64, steps int, measure string, run foldRun, progress io.Writer) (*cvResult, error) {
	dir, err := os.MkdirTemp("", "strads-cv-")
	if err != nil {
		return nil, fmt.Errorf("--cv: %w", err)
	}
	defer os.RemoveAll(dir)
	sizes, err := splitFolds(data, dir, k, seed)
	if err != nil {
		return nil, err
	}
	errs := make([][]float64, k)
	for f := range k {
		train, test := foldFile(dir, "train", f), foldFile(dir, "test", f)
		if errs[f], err = run(ctx, train, test, start, last); err != nil {
			return nil, fmt.Errorf("--cv: fold %d of %d: %w", f+1, k, err)
		}
		fmt.Fprintf(progress, "cv: fold %d of %d done (%d rows held out)\n", f+1, k, sizes[f])
	}
	r := &cvResult{measure: measure, lambdas: lasso.PathLambdas(steps, start, last), mean: make([]float64, steps), se: make([]float64, steps)}
	n := 0
	for _, s := range sizes {
		n += s
	}
	for i := range steps {
		// cv.glmnet's: the fold-size weighted mean, and the square root of
		// the weighted mean squared deviation over k − 1.
		for f := range k {
			r.mean[i] += float64(sizes[f]) * errs[f][i] / float64(n)
		}
		var v float64
		for f := range k {
			d := errs[f][i] - r.mean[i]
			v += float64(sizes[f]) * d * d / float64(n)
		}
		r.se[i] = math.Sqrt(v / float64(k-1))
		if r.mean[i] < r.mean[r.min] {
			r.min = i
		}
	}
	r.oneSE = slices.IndexFunc(r.mean, func(m float64) bool { return m <= r.mean[r.min]+r.se[r.min] })
	return r, nil
}

// foldFile names fold f's training or test file in dir.
func foldFile(dir, kind string, f int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%d.svm", kind, f))
}

// splitFolds writes, for each of k folds, the rows of data outside it and
// in it to files in dir, and returns the folds' sizes. Row r goes to fold
// fold[r] of a shuffle (by seed) of 0, 1, …, k−1, 0, 1, …: the folds
// differ in size by at most one row.
func splitFolds(data, dir string, k int, seed uint64) ([]int, error) {
	n := 0
	if err := libsvm.ReadLabels(data, func(int, float64) error { n++; return nil }); err != nil {
		return nil, dataError(err)
	}
	if n < k {
		return nil, cli.Usagef("--cv %d: %s has %d rows, fewer than the folds", k, data, n)
	}
	fold := make([]int, n)
	for r := range fold {
		fold[r] = r % k
	}
	rng := rand.New(rand.NewPCG(seed, 0xc5))
	rng.Shuffle(n, func(i, j int) { fold[i], fold[j] = fold[j], fold[i] })
	sizes := make([]int, k)
	ws := make([]*bufio.Writer, 2*k) // train files, then test files
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i := range ws {
		kind, f := "train", i
		if i >= k {
			kind, f = "test", i-k
		}
		file, err := os.Create(foldFile(dir, kind, f))
		if err != nil {
			return nil, fmt.Errorf("--cv: %w", err)
		}
		files = append(files, file)
		ws[i] = bufio.NewWriterSize(file, 1<<16)
	}
	var line []byte
	r := 0
	err := libsvm.Read(data, func(_ int, row libsvm.Row) error {
		line = strconv.AppendFloat(line[:0], row.Label, 'g', -1, 64)
		for i, j := range row.Index {
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(j)+1, 10)
			line = append(line, ':')
			line = strconv.AppendFloat(line, row.Value[i], 'g', -1, 64)
		}
		line = append(line, '\n')
		f := fold[r]
		r++
		sizes[f]++
		for g := range k {
			w := ws[g] // fold g's training rows: every row outside it
			if g == f {
				w = ws[k+g]
			}
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--cv: %w", err)
	}
	for _, w := range ws {
		if err := w.Flush(); err != nil {
			return nil, fmt.Errorf("--cv: %w", err)
		}
	}
	return sizes, nil
}

// print prints the cross-validation's table and choices.
func (r *cvResult) print(w io.Writer, k int, prefix string, steps int) {
	fmt.Fprintf(w, "cv: %d folds, %s\n%5s %12s %14s %12s\n", k, r.measure, "step", "lambda", "cv_error", "cv_se")
	for i := range r.mean {
		fmt.Fprintf(w, "%5d %12.6g %14.6g %12.3g%s\n", i+1, r.lambdas[i], r.mean[i], r.se[i], r.chosen(i, "  <- "))
	}
	for _, c := range []struct {
		name string
		step int
	}{{"min", r.min}, {"1se", r.oneSE}} {
		fmt.Fprintf(w, "λ_%s %.6g (step %d, %s %.6g ± %.3g)", c.name, r.lambdas[c.step], c.step+1, r.measure, r.mean[c.step], r.se[c.step])
		if prefix != "" {
			fmt.Fprintf(w, ": %s", lasso.ModelFile(prefix, c.step+1, steps))
		}
		fmt.Fprintln(w)
	}
}

// chosen returns the marks of step i: "min", "1se" or both, after sep; ""
// for neither.
func (r *cvResult) chosen(i int, sep string) string {
	var m []string
	if i == r.min {
		m = append(m, "min")
	}
	if i == r.oneSE {
		m = append(m, "1se")
	}
	if len(m) == 0 {
		return ""
	}
	s := sep + m[0]
	if len(m) == 2 {
		s += " " + m[1]
	}
	return s
}

// writeFiles writes PREFIX.cv.csv, the cross-validated error along the
// path, and PREFIX.coef.csv, the path's coefficients as a matrix (a row
// per coefficient that is non-zero at some step, index 0 the intercept; a
// column per step), together: both or neither.
func (r *cvResult) writeFiles(prefix string, p *lasso.Path) error {
	g, err := atomicfile.CreateGroup(prefix+".cv.csv", prefix+".coef.csv")
	if err != nil {
		return err
	}
	defer g.Abort()
	cv, coef := g.Files()[0], g.Files()[1]
	fmt.Fprintf(cv, "step,lambda,cv_%s,cv_se,chosen\n", r.measure)
	for i := range r.mean {
		fmt.Fprintf(cv, "%d,%v,%v,%v,%s\n", i+1, r.lambdas[i], r.mean[i], r.se[i], r.chosen(i, ""))
	}
	pts := p.Points()
	values := map[int32][]float64{}
	for s, pt := range pts {
		m := pt.Model
		put := func(j int32, v float64) {
			if values[j] == nil {
				values[j] = make([]float64, len(pts))
			}
			values[j][s] = v
		}
		if m.HasIntercept {
			put(-1, m.Intercept)
		}
		for i, j := range m.Index {
			put(j, m.Value[i])
		}
	}
	coef.WriteString("index")
	for s := range pts {
		fmt.Fprintf(coef, ",%d", s+1)
	}
	coef.WriteString("\n")
	for _, j := range slices.Sorted(maps.Keys(values)) {
		fmt.Fprintf(coef, "%d", j+1)
		for _, v := range values[j] {
			fmt.Fprintf(coef, ",%v", v)
		}
		coef.WriteString("\n")
	}
	return g.Commit()
}
