package monitor_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/monitor"
)

// fetch GETs path from h and returns the response's status, content type
// and body.
func fetch(t *testing.T, h http.Handler, path string) (int, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Code, rec.Header().Get("Content-Type"), string(body)
}

// TestPage checks that / serves the live page, whole: HTML with its
// script and style inline, nothing to fetch from another host, and the
// charts it promises.
func TestPage(t *testing.T) {
	code, ctype, body := fetch(t, monitor.New().Handler(), "/")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") {
		t.Fatalf("GET /: %d %s", code, ctype)
	}
	for _, want := range []string{"<!DOCTYPE html>", "<script>", "<style>", `fetch("series?since="`, "<svg",
		"Objective against time", "Objective against rounds", "Gap against time", "Gap against rounds",
		"Updates per second", "through NATS", "Busy time per worker", "appCharts(reported)", "the roles are joining and reading their data"} {
		if !strings.Contains(body, want) {
			t.Errorf("page has no %q", want)
		}
	}
	// Self-contained: no script, style, image or font from elsewhere.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=|@import|url\(|//[a-z0-9.-]+\.[a-z]{2,}/`).FindString(body); m != "" {
		t.Errorf("page loads something: %q", m)
	}
	if code, _, _ := fetch(t, monitor.New().Handler(), "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
}

// series GETs path (/series…) from h and decodes it.
func series(t *testing.T, h http.Handler, path string) monitor.Series {
	t.Helper()
	code, ctype, body := fetch(t, h, path)
	if code != http.StatusOK || ctype != "application/json" {
		t.Fatalf("GET %s: %d %s: %s", path, code, ctype, body)
	}
	var s monitor.Series
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	return s
}

// TestSeries sets the metrics of every role, samples them, and checks that
// /series serves them as set, with nulls for an objective not yet reported
// or not finite.
func TestSeries(t *testing.T) {
	m := monitor.New()
	h := m.Handler()
	start := time.Now()
	if err := m.Sample(start); err != nil {
		t.Fatal(err)
	}
	m.Rounds.Add(10)
	m.Updates.Add(320)
	m.InFlight.Set(2)
	m.Objective.Set(2.5)
	m.Gap.Set(0.01)
	m.NNZ.Set(17)
	m.App.WithLabelValues("test_rmse").Set(0.9)
	m.App.WithLabelValues("test_perplexity").Set(math.NaN())
	m.PhaseSeconds.WithLabelValues("push").Add(0.25)
	m.WorkerSeconds.WithLabelValues(monitor.Label(0)).Add(1.5)
	m.WorkerSeconds.WithLabelValues(monitor.Label(1)).Add(0.5)
	m.WorkerTasks.WithLabelValues(monitor.Label(1)).Add(11)
	m.PlanSeconds.WithLabelValues(monitor.Label(0)).Add(0.75)
	m.Plans.WithLabelValues(monitor.Label(0)).Add(10)
	m.Drop("worker", "foreign")
	m.Drop("coordinator", "garbage")
	m.SetInfo("job", "lasso-1")
	if err := m.Sample(start.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	m.Objective.Set(math.Inf(1))
	if err := m.Sample(start.Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}

	s := series(t, h, "/series")
	if len(s.Samples) != 4 { // three, and the request's own
		t.Fatalf("%d samples, want 4: %+v", len(s.Samples), s.Samples)
	}
	if s.Interval != 1 || s.Capacity != monitor.Capacity || s.Info["job"] != "lasso-1" || s.Start.IsZero() {
		t.Errorf("interval %v, capacity %d, info %v, start %v", s.Interval, s.Capacity, s.Info, s.Start)
	}
	first, set, inf := s.Samples[0], s.Samples[1], s.Samples[2]
	if !math.IsNaN(float64(first.Objective)) || !math.IsNaN(float64(first.Gap)) || first.Rounds != 0 {
		t.Errorf("before any report: %+v", first)
	}
	if dt := set.T - first.T; math.Abs(dt-2) > 1e-9 {
		t.Errorf("samples %v s apart, want 2", dt)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"rounds", set.Rounds, 10},
		{"updates", set.Updates, 320},
		{"updates/s", float64(set.UpdatesPerSecond), 160},
		{"in flight", set.InFlight, 2},
		{"objective", float64(set.Objective), 2.5},
		{"gap", float64(set.Gap), 0.01},
		{"nnz", float64(set.NNZ), 17},
		{"push seconds", set.PhaseSeconds["push"], 0.25},
		{"worker 0 seconds", set.WorkerSeconds["0"], 1.5},
		{"worker 1 seconds", set.WorkerSeconds["1"], 0.5},
		{"worker 1 tasks", set.WorkerTasks["1"], 11},
		{"scheduler 0 seconds", set.SchedulerSeconds["0"], 0.75},
		{"scheduler 0 plans", set.Plans["0"], 10},
		{"dropped", set.Dropped, 2},
		{"updates/s while idle", float64(inf.UpdatesPerSecond), 0},
	}
	for _, c := range checks {
		// Times are differences of time.Now: the rate is 160 to rounding.
		if math.Abs(c.got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if first.App != nil || float64(set.App["test_rmse"]) != 0.9 || !math.IsNaN(float64(set.App["test_perplexity"])) || len(set.App) != 2 {
		t.Errorf("app metrics: before any report %v, after %v; want none, then test_rmse 0.9 and test_perplexity null", first.App, set.App)
	}
	if !math.IsNaN(float64(inf.Objective)) || float64(inf.Gap) != 0.01 {
		t.Errorf("an infinite objective: %v (want null), gap %v", inf.Objective, inf.Gap)
	}

	if got := series(t, h, "/series?since=0.5").Samples; len(got) == 0 || got[0].T != set.T {
		t.Errorf("since=0.5: %+v, want from the sample at %v on", got, set.T)
	}
	if code, _, _ := fetch(t, h, "/series?since=x"); code != http.StatusBadRequest {
		t.Errorf("since=x: %d, want 400", code)
	}
}
