package monitor_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/monitor"
)

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// value returns the value of the sample of metric (with its labels, as
// written by Prometheus) in the exposition text.
func value(t *testing.T, text, metric string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(metric) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %s in\n%.2000s", metric, text)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestServe runs a job whose nodes report to one Metrics, served over
// HTTP, and checks the metrics and the end of the history (/series)
// against the job's result, and that the page and pprof answer.
func TestServe(t *testing.T) {
	m := monitor.New()
	srv, err := monitor.ServeWith("127.0.0.1:0", m, nil, monitor.HandlerOptions{Pprof: true, Cmdline: []string{"strads", "--nats", "nats://u:xxxxx@h"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prog := nnls.Program(nnls.Config{Rows: 50, Cols: 10, Seed: 1, Block: 2})
	res, err := job.Run(ctx, prog, job.Options{
		Job:         "monitor",
		Coordinator: coordinator.Options{Workers: 2, Depth: 2, MaxRounds: 30, ReportEvery: 5},
		Timeout:     10 * time.Second,
		Monitor:     m,
	})
	if err != nil {
		t.Fatal(err)
	}
	text := get(t, "http://"+srv.Addr()+"/metrics")
	checks := []struct {
		metric string
		want   float64
	}{
		{"strads_coordinator_rounds_total", float64(res.Rounds)},
		{"strads_coordinator_updates_total", float64(res.Updates)},
		{"strads_coordinator_round_seconds_count", float64(res.Rounds)},
		{"strads_coordinator_objective", res.Final.Objective},
		{`strads_scheduler_plans_total{part="0"}`, float64(res.Rounds)},
		// Every round, and the stop task.
		{`strads_worker_tasks_total{shard="0"}`, float64(res.Rounds + 1)},
		{`strads_worker_tasks_total{shard="1"}`, float64(res.Rounds + 1)},
	}
	for _, c := range checks {
		if got := value(t, text, c.metric); got != c.want {
			t.Errorf("%s = %v, want %v", c.metric, got, c.want)
		}
	}
	if v := value(t, text, `strads_nats_out_bytes_total{conn="coordinator"}`); v <= 0 {
		t.Errorf("coordinator sent %v bytes", v)
	}
	if v := value(t, text, `strads_nats_reconnects_total{conn="coordinator"}`); v != 0 {
		t.Errorf("coordinator reconnected %v times, the server never went away", v)
	}
	if !strings.Contains(text, `strads_coordinator_phase_seconds_total{phase="pull"}`) {
		t.Error("no pull phase")
	}
	// The live page's history: the sample of the request is the job's end.
	var series monitor.Series
	if err := json.Unmarshal([]byte(get(t, "http://"+srv.Addr()+"/series")), &series); err != nil {
		t.Fatal(err)
	}
	last := series.Samples[len(series.Samples)-1]
	if last.Rounds != float64(res.Rounds) || last.Updates != float64(res.Updates) || float64(last.Objective) != res.Final.Objective {
		t.Errorf("/series ends with rounds %v, updates %v, objective %v; want %d, %d, %v",
			last.Rounds, last.Updates, last.Objective, res.Rounds, res.Updates, res.Final.Objective)
	}
	if last.NATSOutBytes["coordinator"] <= 0 || len(last.WorkerSeconds) != 2 || len(last.SchedulerSeconds) != 1 {
		t.Errorf("/series: NATS out %v, worker seconds %v, scheduler seconds %v", last.NATSOutBytes, last.WorkerSeconds, last.SchedulerSeconds)
	}
	if page := get(t, "http://"+srv.Addr()+"/"); !strings.Contains(page, "<svg") {
		t.Errorf("page %.200q", page)
	}
	if body := get(t, "http://"+srv.Addr()+"/debug/pprof/"); !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index %.200q", body)
	}
	if body := get(t, "http://"+srv.Addr()+"/debug/pprof/cmdline"); body != "strads\x00--nats\x00nats://u:xxxxx@h" {
		t.Errorf("pprof cmdline %q, want the one given", body)
	}
}

// TestPprofSwitch checks that the profiles are served only when asked for,
// and that the command line they show is the one given, never os.Args.
func TestPprofSwitch(t *testing.T) {
	tests := []struct {
		name    string
		opts    monitor.HandlerOptions
		code    int
		cmdline string
	}{
		{"off", monitor.HandlerOptions{}, http.StatusNotFound, ""},
		{"on, no command line", monitor.HandlerOptions{Pprof: true}, http.StatusOK, os.Args[0]},
		{"on", monitor.HandlerOptions{Pprof: true, Cmdline: []string{"a", "b"}}, http.StatusOK, "a\x00b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := monitor.New().HandlerWith(tt.opts)
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
				if w.Code != tt.code {
					t.Fatalf("%s: status %d, want %d", path, w.Code, tt.code)
				}
				if path == "/debug/pprof/cmdline" && tt.code == http.StatusOK && w.Body.String() != tt.cmdline {
					t.Errorf("cmdline %q, want %q", w.Body.String(), tt.cmdline)
				}
			}
		})
	}
}

func TestServeBadAddress(t *testing.T) {
	if _, err := monitor.Serve("256.0.0.1:x", monitor.New(), nil); err == nil || !strings.Contains(err.Error(), "256.0.0.1:x") {
		t.Errorf("error %v, want one naming the address", err)
	}
}

// TestServeAppMetrics runs a Lasso job on the column layout, whose updates
// the app's feedback counts and whose reports carry a test MSE, and
// checks that /series ends with both, and the gap, as the job's result
// has them.
func TestServeAppMetrics(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, seed uint64) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := lasso.Generate(f, lasso.GenConfig{Samples: 200, Features: 400, Density: 0.05, TrueNNZ: 10, Noise: 0.1, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg := lasso.Config{Data: gen("train.svm", 1), Test: gen("test.svm", 2), LambdaRatio: 0.1, Intercept: true, Layout: lasso.LayoutColumns}
	m := monitor.New()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := job.Run(ctx, lasso.ColumnProgram(cfg, 2), job.Options{
		Job:         "monitorapp",
		Coordinator: coordinator.Options{Workers: 2, Tol: 1e-6, ReportEvery: 1},
		Timeout:     10 * time.Second,
		Monitor:     m,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Sample(time.Now()); err != nil {
		t.Fatal(err)
	}
	_, _, body := fetch(t, m.Handler(), "/series")
	var s monitor.Series
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	last := s.Samples[len(s.Samples)-1]
	var mse float64
	for _, a := range res.Final.Metrics {
		if a.Name == "test_mse" {
			mse = a.Value
		}
	}
	if res.Updates == 0 || last.Updates != float64(res.Updates) || mse == 0 || float64(last.App["test_mse"]) != mse || float64(last.Gap) != res.Final.Gap {
		t.Errorf("/series ends with updates %v, test_mse %v, gap %v; the result: %d, %v, %v", last.Updates, last.App["test_mse"], last.Gap, res.Updates, mse, res.Final.Gap)
	}
}
