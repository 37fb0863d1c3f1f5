package main

import (
	"fmt"
	"io"
	"math"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
)

// pathUsage is the help of --lambda-path, for the Lasso and logistic
// regression.
const pathUsage = "solve a regularization path: `K` penalties geometric from λ_max down to the λ of --lambda/--lambda-ratio (logreg: or --C), " +
	"each from the solution at the one before (warm starts), in one job; the column layout only (auto picks it); each λ ends when its gap is within --tol. " +
	"--out PREFIX then writes a model per λ to PREFIX.lambda-NN.csv (NN its step, 1 for λ_max) and the table step,lambda,lambda_ratio,objective,gap,nnz,rounds,time_s,stop and the test error to PREFIX.path.csv (0: one λ)"

// checkPathFlags checks the runtime's options of a job that solves a path of
// k penalties (0: none).
func checkPathFlags(k int, opts *coordinator.Options) error {
	if k > 0 && opts.Tol == 0 {
		return cli.Usagef("--lambda-path needs --tol > 0: each λ of the path ends when its duality gap is within tol of its objective")
	}
	return nil
}

// printPath prints the table of a path (nothing for nil) and, for a job
// that stopped before its last λ, where.
func printPath(w io.Writer, p *lasso.Path) {
	if p == nil || len(p.Points()) == 0 {
		return
	}
	pts := p.Points()
	last := pts[len(pts)-1]
	fmt.Fprintf(w, "path: %d λ from λ_max %.6g to %.6g", p.Len(), p.LambdaMax(), p.Lambdas()[p.Len()-1])
	if last.Step < p.Len() || last.Stop != "converged" {
		fmt.Fprintf(w, "; stopped (%s) at λ %d of %d", last.Stop, last.Step, p.Len())
	}
	fmt.Fprintf(w, "\n%5s %12s %10s %18s %9s %7s %7s %9s", "step", "lambda", "ratio", "objective", "gap", "nnz", "rounds", "time_s")
	for _, c := range p.Columns() {
		fmt.Fprintf(w, " %14s", c)
	}
	fmt.Fprintln(w)
	for _, pt := range pts {
		fmt.Fprintf(w, "%5d %12.6g %10.4g %18.12g %9.2g %7d %7d %9.3f", pt.Step, pt.Lambda, pt.Lambda/p.LambdaMax(),
			pt.Objective, pt.Gap, pt.NNZ, pt.Rounds, pt.Time.Seconds())
		for _, c := range p.Columns() {
			if v := pt.Metric(c); !math.IsNaN(v) {
				fmt.Fprintf(w, " %14.6g", v)
			} else {
				fmt.Fprintf(w, " %14s", "")
			}
		}
		fmt.Fprintln(w)
	}
}

// writePath writes the files of a path for the --out prefix (nothing for a
// nil path or an empty prefix).
func writePath(prefix string, p *lasso.Path) error {
	if p == nil || prefix == "" {
		return nil
	}
	return p.WriteFiles(prefix)
}
