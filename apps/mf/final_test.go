package mf

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/schmp"
)

// runLocal runs the job of cfg through the local driver with the runtime's
// tolerance tol, writing the model's files under out, and returns its
// status.
func runLocal[P, R, U any](t *testing.T, prog schmp.Program[P, R, U, Summary], cfg Config, tol float64, out string) (pipeline.Status, *Model) {
	t.Helper()
	rpi := uint64(cfg.RoundsPerIter())
	j, st, err := local.Run(context.Background(), prog, local.Options{
		Config: pipeline.Config{Workers: cfg.Workers, Tol: tol, MaxRounds: uint64(cfg.Iters) * rpi, ReportEvery: cfg.ReportEvery * int(rpi)},
		Out:    out,
		// The workers' contract (schmp.Worker) checked too; their
		// partials' times are measures.
		CheckContract: true, Ignore: []string{"ns"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, ModelOf(j.Coordinator)
}

// TestFinalState checks the model that every algorithm writes through the
// runtime's outputs: a --tol stop lands at the end of an iteration (on the
// rotation, once every worker has seen every block equally often); the
// check's evaluation is of that state, which is the one written, the users'
// factors coming once, in the workers' final reports; and the files are
// the same in a second run.
func TestFinalState(t *testing.T) {
	for _, algo := range []string{"rotation", "unscheduled", "ccd", "als"} {
		t.Run(algo, func(t *testing.T) {
			var files [][]byte
			for range 2 {
				cfg := config(t, algo, 3, 30)
				dir := t.TempDir()
				out := filepath.Join(dir, "m")
				var st pipeline.Status
				var m *Model
				switch algo {
				case "rotation":
					st, m = runLocal(t, RotationProgram(cfg), cfg, 1e-3, out)
				case "unscheduled":
					st, m = runLocal(t, UnscheduledProgram(cfg), cfg, 1e-3, out)
				case "ccd":
					st, m = runLocal(t, CCDProgram(cfg), cfg, 1e-3, out)
				case "als":
					st, m = runLocal(t, ALSProgram(cfg), cfg, 1e-3, out)
				}
				rpi := uint64(cfg.RoundsPerIter())
				if st.Reason != schmp.StopConverged || st.Last%rpi != 0 || st.Last >= uint64(cfg.Iters)*rpi {
					t.Fatalf("stopped (%s) after round %d; want converged before iteration %d, at the end of an iteration of %d rounds", st.Reason, st.Last, cfg.Iters, rpi)
				}
				if e := m.Final(); e.Round != st.Last {
					t.Fatalf("the last evaluation is of the state after round %d, the job ended after round %d", e.Round, st.Last)
				}
				var all []byte
				for _, name := range []string{"m.W.txt", "m.H.txt", "m.bias.txt"} {
					b, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil || len(b) == 0 {
						t.Fatalf("%s: %d bytes, %v", name, len(b), err)
					}
					all = append(all, b...)
				}
				// The W written is the workers' state: its objective is the
				// check's.
				if got, want := objectiveOf(t, cfg, m), m.Final().Objective; !near(got, want) {
					t.Fatalf("the factors written have objective %v, the check's report %v", got, want)
				}
				files = append(files, all)
			}
			if !bytes.Equal(files[0], files[1]) {
				t.Error("two runs wrote different models")
			}
		})
	}
}

// near reports whether a and b agree to 1e-9, relatively.
func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, b, -b)
}

// objectiveOf returns F of the model's factors on cfg's training ratings.
func objectiveOf(t *testing.T, cfg Config, m *Model) float64 {
	t.Helper()
	users := map[int64][2]int{}
	for s, ids := range m.Users {
		for k, id := range ids {
			users[id] = [2]int{s, k}
		}
	}
	items := map[int64]int{}
	for k, id := range m.ItemIDs {
		items[id] = k
	}
	nu, ni := map[int64]int{}, map[int64]int{}
	var sse float64
	err := ReadRatings(cfg.Train, func(_ int, r Rating) error {
		u, ok1 := users[r.User]
		i, ok2 := items[r.Item]
		if !ok1 || !ok2 {
			return fmt.Errorf("rating of unknown user %d or item %d", r.User, r.Item)
		}
		p := dot(m.W[u[0]][u[1]*m.Rank:(u[1]+1)*m.Rank], m.H[i*m.Rank:(i+1)*m.Rank])
		if m.Biased {
			p += m.Mean + m.B[u[0]][u[1]] + m.C[i]
		}
		d := r.Value - p
		sse += d * d
		nu[r.User]++
		ni[r.Item]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var reg, breg float64
	for id, n := range nu {
		u := users[id]
		w := m.W[u[0]][u[1]*m.Rank : (u[1]+1)*m.Rank]
		reg += cfg.weight(int32(n)) * dot(w, w)
		if m.Biased {
			breg += m.B[u[0]][u[1]] * m.B[u[0]][u[1]]
		}
	}
	for id, n := range ni {
		k := items[id]
		h := m.H[k*m.Rank : (k+1)*m.Rank]
		reg += cfg.weight(int32(n)) * dot(h, h)
		if m.Biased {
			breg += m.C[k] * m.C[k]
		}
	}
	return sse + cfg.Lambda*reg + cfg.BiasLambda*breg
}
