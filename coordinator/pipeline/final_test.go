package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/schmp"
)

// TestFinal checks the final request (Config.Final): once the check has
// confirmed the stop, the stop task asks every worker for its final
// report, of the state the check reported; the job is done once every
// worker's is in, and not before; each worker's is taken once, and one
// that nobody asked for is refused.
func TestFinal(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"max-rounds", Config{Workers: 3, MaxRounds: 5}},
		{"tol", Config{Workers: 2, Tol: 1e-3}},
		{"two parts", Config{Workers: 2, Parts: 2, MaxRounds: 6}},
	}
	for _, tc := range cases {
		for depth := 1; depth <= 3; depth++ {
			t.Run(fmt.Sprintf("%s/depth=%d", tc.name, depth), func(t *testing.T) {
				cfg := tc.cfg
				cfg.Depth, cfg.Final, cfg.Timeout = depth, true, time.Second
				s := newSim(t, cfg, &toyApp{}, 0)
				s.start()
				finalPending := func() bool {
					return slices.ContainsFunc(s.pending, func(e toyEvent) bool { return e.Final })
				}
				for !finalPending() {
					if s.done {
						t.Fatal("the job is done before the final reports came")
					}
					if err := s.deliver(); err != nil {
						t.Fatal(err)
					}
				}
				st := s.core.Status()
				stops := filter(s.log, "send")
				if last := stops[len(stops)-1]; !strings.Contains(last, "report true check false stop true final true") {
					t.Fatalf("the last task sent is %q, want a stop asking for the final reports", last)
				}
				if _, what, ok := s.core.Deadline(); !ok || !strings.Contains(what, "no answer from worker shard") {
					t.Errorf("the final reports have no deadline: %q, %v", what, ok)
				}
				// A final report of another round is refused.
				e := s.pending[0]
				e.Round++
				if err := s.core.Step(e); !errors.Is(err, ErrRefused) {
					t.Fatalf("a final report of round %d: %v, want ErrRefused", e.Round, err)
				}
				for len(s.pending) > 0 {
					if s.done {
						t.Fatal("the job is done before every final report came")
					}
					e := s.pending[0]
					if err := s.deliver(); err != nil {
						t.Fatal(err)
					}
					if !s.done {
						// The same worker's again is refused.
						if err := s.core.Step(e); !errors.Is(err, ErrRefused) {
							t.Fatalf("a second final report of worker %d: %v, want ErrRefused", e.From, err)
						}
					}
				}
				if !s.done {
					t.Fatal("not done once every final report came")
				}
				want := slices.Repeat([]report{int64(st.Last)}, cfg.Workers)
				if got := s.core.Finals(); !slices.Equal(got, want) {
					t.Fatalf("final reports %v, want the state after round %d from every worker: %v", got, st.Last, want)
				}
				if n := len(filter(s.log, "done")); n != 1 {
					t.Fatalf("done %d times", n)
				}
			})
		}
	}
	// Without Config.Final the stop needs no answer, and there are no
	// final reports.
	s := newSim(t, Config{Workers: 2, MaxRounds: 3}, &toyApp{}, 0)
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	if f := s.core.Finals(); f != nil || len(s.pending) != 0 {
		t.Fatalf("final reports %v, %d answers pending, without Config.Final", f, len(s.pending))
	}
}

// iterApp is a toy app whose rounds come in iterations (schmp.Iterated): it
// records the calls of LastRound, and how many rounds it had pulled then.
type iterApp struct {
	*toyApp
	period uint64
	lasts  []uint64
	pulled []int
}

func (a *iterApp) RoundsPerIteration() uint64 { return a.period }
func (a *iterApp) LastRound(last uint64) error {
	a.lasts = append(a.lasts, last)
	a.pulled = append(a.pulled, len(a.pulls))
	return nil
}

// TestIterationStop checks that a stop of an app whose rounds come in
// iterations (the rotation) lands at the end of an iteration, a function
// of the deciding round and the configuration: ⌈(t+depth−1)/P⌉·P, no later
// than MaxRounds; that the app learns of its last round before it pulls
// the deciding round; and that the check reports the state after it.
func TestIterationStop(t *testing.T) {
	// converge: the objective 1 + 2^−s changes by less than 1e-3 from the
	// state before once s ≥ 10; with reports every P rounds, that is the
	// first report of a state ≥ 10.
	cases := []struct {
		name   string
		cfg    Config
		reason schmp.Reason
		script func(int, int64) schmp.Progress
	}{
		{"tol", Config{Workers: 3, Tol: 1e-3, ReportEvery: 3}, schmp.StopConverged, nil},
		{"tol, reports every round", Config{Workers: 3, Tol: 1e-3}, schmp.StopConverged, nil},
		{"target", Config{Workers: 4, Target: 1 + 0x1p-7, HasTarget: true}, schmp.StopTarget, nil},
		{"max-rounds within an iteration", Config{Workers: 3, MaxRounds: 7}, schmp.StopMaxRounds, nil},
		{"time limit", Config{Workers: 3, TimeLimit: 20 * time.Millisecond}, schmp.StopTimeLimit, nil},
		// The app asks to stop from state 8 on, within an iteration.
		{"app", Config{Workers: 3, ReportEvery: 3}, schmp.StopApp, appStop(8)},
		{"app, reports every round", Config{Workers: 4}, schmp.StopApp, appStop(8)},
	}
	for _, tc := range cases {
		for depth := 1; depth <= 2; depth++ {
			t.Run(fmt.Sprintf("%s/depth=%d", tc.name, depth), func(t *testing.T) {
				cfg := tc.cfg
				cfg.Depth = depth
				period := uint64(cfg.Workers)
				var logs [][]string
				for seed := uint64(0); seed <= 6; seed++ {
					app := &iterApp{toyApp: &toyApp{script: tc.script}, period: period}
					s := newSimHooks(t, cfg, app.toyApp, app, seed)
					if err := s.run(); err != nil {
						t.Fatal(err)
					}
					st := s.core.Status()
					want := st.Decided + uint64(depth-1)
					if r := want % period; r != 0 {
						want += period - r
					}
					if cfg.MaxRounds > 0 {
						want = min(want, cfg.MaxRounds)
					}
					if st.Reason != tc.reason || st.Last != want || st.Rounds != want {
						t.Fatalf("seed %d: stopped (%s) at %d, last %d, %d rounds; want %s, last %d", seed, st.Reason, st.Decided, st.Last, st.Rounds, tc.reason, want)
					}
					if cfg.MaxRounds == 0 && st.Last%period != 0 {
						t.Fatalf("seed %d: last round %d is not the end of an iteration of %d rounds", seed, st.Last, period)
					}
					if !slices.Equal(app.lasts, []uint64{st.Last}) || app.pulled[0] != int(st.Decided)-1 {
						t.Fatalf("seed %d: LastRound(%v) after %v pulls; want LastRound(%d) before the pull of round %d", seed, app.lasts, app.pulled, st.Last, st.Decided)
					}
					if final := st.Trace[len(st.Trace)-1]; final.Round != st.Last || s.states[0] != int64(st.Last) {
						t.Fatalf("seed %d: the check reported the state after round %d, workers in state %d; want %d", seed, final.Round, s.states[0], st.Last)
					}
					if want := appText(tc.reason, st.Last); st.AppReason != want {
						t.Fatalf("seed %d: the app's reason is %q, want %q", seed, st.AppReason, want)
					}
					if tc.reason != schmp.StopTimeLimit {
						logs = append(logs, s.log)
					}
				}
				for i := 1; i < len(logs); i++ {
					l := logs[i]
					for _, kind := range []string{"send", "record", "stop", "done"} {
						if got, want := filter(l, kind), filter(logs[0], kind); !slices.Equal(got, want) {
							t.Fatalf("the runs differ:\n%v\n%v", got, want)
						}
					}
				}
			})
		}
	}
	// A period of 0 from the app is refused.
	app := &iterApp{toyApp: &toyApp{}}
	if _, err := New(Config{Workers: 1}, schmp.Coordinator[plan, partial, update, report](app.toyApp), app); err == nil {
		t.Error("New took an app with 0 rounds an iteration")
	}
}
