package nnls_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
)

// Example fits a small problem on two workers, with an embedded NATS
// server, and prints the positive coefficients of the model. The true ones
// are 0, 1, 2, 0, 1, 2; the fit keeps β_1 = β_4 = 0, where the noise would
// otherwise pull them below zero.
func Example() {
	dir, err := os.MkdirTemp("", "nnls-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	model := filepath.Join(dir, "model.csv")

	cfg := nnls.Config{Rows: 200, Cols: 6, Seed: 1}
	res, err := job.Run(context.Background(), nnls.Program(cfg), job.Options{
		Job: "nnls-example",
		Coordinator: coordinator.Options{
			Workers: 2, Tol: 1e-12, MaxRounds: 10000, ReportEvery: cfg.Cols,
			JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Out: model,
		},
		Timeout: 20 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s, objective %.4f\n", res.Reason, res.Final.Objective)

	// The model lists the positive β_j as "index,value" (1-based); the
	// others are exactly 0, where the constraint β_j ≥ 0 is active.
	out, err := os.ReadFile(model)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n")[1:] {
		j, v, _ := strings.Cut(line, ",")
		b, err := strconv.ParseFloat(v, 64)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("β_%s = %.3f\n", j, b)
	}
	// Output:
	// converged, objective 0.0052
	// β_2 = 0.998
	// β_3 = 2.006
	// β_5 = 1.003
	// β_6 = 1.988
}
