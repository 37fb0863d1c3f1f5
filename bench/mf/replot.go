package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strads-go/strads/apps/mf"
)

// metricsName is the file name of the metrics of run n of v.
func metricsName(v variant, n int) string {
	return fmt.Sprintf("mf-%s-r%d-w%d-run%d.csv", v.algo, v.rank, v.workers, n)
}

// readCurves reads the curve runs back from dir: their variants from
// runs.csv, their evaluations from their metrics files.
func readCurves(dir string) ([]*run, error) {
	rows, err := readCSV(filepath.Join(dir, "runs.csv"))
	if err != nil {
		return nil, err
	}
	var runs []*run
	for _, row := range rows {
		if row["phase"] != "curve" {
			continue
		}
		r := &run{phase: "curve", v: variant{algo: row["algo"]}, model: &mf.Model{}}
		var lr, decay float64
		var rank, workers, n int
		for _, f := range []struct {
			name string
			dst  any
		}{{"rank", &rank}, {"workers", &workers}, {"run", &n}, {"lr", &lr}, {"decay", &decay}} {
			if _, err := fmt.Sscan(row[f.name], f.dst); err != nil {
				return nil, fmt.Errorf("runs.csv: %s %q: %w", f.name, row[f.name], err)
			}
		}
		r.v.rank, r.v.workers, r.n, r.v.lr, r.v.decay = rank, workers, n, lr, decay
		evals, err := readCSV(filepath.Join(dir, metricsName(r.v, n)))
		if err != nil {
			return nil, err
		}
		for _, e := range evals {
			num := func(k string) float64 {
				v, err := strconv.ParseFloat(e[k], 64)
				if err != nil {
					return math.NaN()
				}
				return v
			}
			r.model.Trace = append(r.model.Trace, mf.Eval{
				Time: time.Duration(num("time_s") * 1e9), Iter: num("iter"),
				Objective: num("objective"), TrainRMSE: num("train_rmse"), TestRMSE: num("test_rmse"),
			})
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// readCSV reads a CSV file with a header into maps from column to value.
func readCSV(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(bufio.NewReader(f)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for k, name := range recs[0] {
			if k < len(rec) {
				row[name] = rec[k]
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}
