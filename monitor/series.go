package monitor

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Capacity is the most samples a Metrics keeps of its history; see Series.
const Capacity = 1800

// Number is a float64 that encodes to JSON as null where it is not finite
// (JSON has no NaN or infinities), and decodes null as NaN.
type Number float64

// MarshalJSON implements json.Marshaler.
func (n Number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler: null is NaN.
func (n *Number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Number(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("monitor: number %q: %w", b, err)
	}
	*n = Number(f)
	return nil
}

// Sample is the state of a Metrics at one moment: its counters (totals
// since the process started) and gauges, read as /metrics would show them.
// Maps are keyed by the metric's label (shard, part, phase or connection)
// and omitted when empty.
type Sample struct {
	// T is the time of the sample, in seconds since the Metrics were made
	// (New).
	T float64 `json:"t"`
	// Rounds and Updates are the coordinator's rounds pulled and variable
	// updates made.
	Rounds  float64 `json:"rounds"`
	Updates float64 `json:"updates"`
	// UpdatesPerSecond is the rate of Updates since the sample before.
	UpdatesPerSecond Number `json:"updates_per_s"`
	// PlanCapacity, PlanDeferred and PlanRejected are the totals of the
	// plans pulled: the most variables they could have held, and the
	// candidates put off (in flight) and rejected (dependency check).
	PlanCapacity float64 `json:"plan_capacity"`
	PlanDeferred float64 `json:"plan_deferred"`
	PlanRejected float64 `json:"plan_rejected"`
	// Objective, Gap and NNZ are those of the coordinator's last report:
	// null before its first report, or where they are not finite.
	Objective Number `json:"objective"`
	Gap       Number `json:"gap"`
	NNZ       Number `json:"nnz"`
	// App holds the app's own measures at the coordinator's last report,
	// by name (Metrics.App); omitted before its first report.
	App map[string]Number `json:"app,omitempty"`
	// InFlight is the number of rounds in flight.
	InFlight float64 `json:"in_flight"`
	// PhaseSeconds is the coordinator's time per phase (plan, dispatch,
	// push, wait, pull, objective).
	PhaseSeconds map[string]float64 `json:"phase_seconds,omitempty"`
	// WorkerSeconds and WorkerTasks are the busy (compute) time and tasks
	// run of each worker, by shard.
	WorkerSeconds map[string]float64 `json:"worker_seconds,omitempty"`
	WorkerTasks   map[string]float64 `json:"worker_tasks,omitempty"`
	// SchedulerSeconds and Plans are the busy (planning) time and plans
	// made of each scheduler, by part.
	SchedulerSeconds map[string]float64 `json:"scheduler_seconds,omitempty"`
	Plans            map[string]float64 `json:"scheduler_plans,omitempty"`
	// NATSInBytes and NATSOutBytes are the bytes received and sent by
	// each node's NATS connection (AddConn), by the node's name.
	NATSInBytes  map[string]float64 `json:"nats_in_bytes,omitempty"`
	NATSOutBytes map[string]float64 `json:"nats_out_bytes,omitempty"`
	// Dropped is the number of messages dropped unused, all roles and
	// reasons together.
	Dropped float64 `json:"dropped"`
}

// Series is the history that /series serves as JSON.
type Series struct {
	// Start is when the Metrics were made; a sample's T counts from it.
	Start time.Time `json:"start"`
	// Interval is the time between two samples, in seconds: 1 at first,
	// doubled each time the history fills up (Capacity samples), when
	// every other sample is dropped, so that the history always spans the
	// whole run. The last sample may be closer to the one before it.
	Interval float64 `json:"interval_s"`
	// Capacity is the most samples the history holds.
	Capacity int `json:"capacity"`
	// Info is what the process said about its job (SetInfo).
	Info map[string]string `json:"info"`
	// Samples are the samples, oldest first; with ?since=T, only those
	// after T.
	Samples []Sample `json:"samples"`
}

// history is a bounded history of samples taken every second: once it holds
// cap samples, it drops every other one and keeps one sample per stride,
// twice the one before.
type history struct {
	mu        sync.Mutex
	cap       int
	stride    float64 // seconds between committed samples
	samples   []Sample
	tentative bool // the last sample is within stride of the one before: the next one replaces it
}

func newHistory(capacity int) *history {
	return &history{cap: max(capacity, 4), stride: 1}
}

// add adds s, taken after every sample in h. A sample not kept is replaced
// by the next one, as is one within a stride of the sample before.
func (h *history) add(s Sample, keep bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tentative {
		h.samples = h.samples[:len(h.samples)-1]
	}
	s.UpdatesPerSecond = Number(math.NaN())
	if n := len(h.samples); n > 0 {
		prev := h.samples[n-1]
		if dt := s.T - prev.T; dt > 0 {
			s.UpdatesPerSecond = Number((s.Updates - prev.Updates) / dt)
		}
	}
	h.samples = append(h.samples, s)
	n := len(h.samples)
	// Half a second's slack for a ticker a little early.
	h.tentative = !keep || n > 1 && s.T-h.samples[n-2].T < h.stride-0.5
	if n <= h.cap {
		return
	}
	last := h.samples[n-1]
	kept := h.samples[:0]
	for i := 0; i < n-1; i += 2 {
		kept = append(kept, h.samples[i])
	}
	h.samples = append(kept, last)
	h.stride *= 2
	n = len(h.samples)
	h.tentative = !keep || s.T-h.samples[n-2].T < h.stride-0.5
}

// since returns a copy of the samples after t, and the stride.
func (h *history) since(t float64) ([]Sample, float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, _ := slices.BinarySearchFunc(h.samples, t, func(s Sample, t float64) int {
		if s.T <= t {
			return -1
		}
		return 1
	})
	return slices.Clone(h.samples[i:]), h.stride
}

// reportGauge is a gauge that remembers whether it was ever set: the
// coordinator sets Objective at each report.
type reportGauge struct {
	prometheus.Gauge
	set *atomic.Bool
}

// Set implements prometheus.Gauge.
func (g reportGauge) Set(v float64) {
	g.Gauge.Set(v)
	g.set.Store(true)
}

// SetInfo records what the process's job is (its name, app, settings) for
// the live page and /series; m may be nil.
func (m *Metrics) SetInfo(key, value string) {
	if m == nil {
		return
	}
	m.infoMu.Lock()
	defer m.infoMu.Unlock()
	m.info[key] = value
}

// Sample reads m's metrics, as at now, into its history, which /series
// serves; Serve samples every second. (A request to /series samples too,
// but that sample only stands in for the next.)
func (m *Metrics) Sample(now time.Time) error {
	return m.sample(now, true)
}

// sample reads m's metrics into its history; one not kept is replaced by
// the next.
func (m *Metrics) sample(now time.Time, keep bool) error {
	families, err := m.reg.Gather()
	if err != nil {
		return fmt.Errorf("monitor: gather: %w", err)
	}
	s := Sample{T: now.Sub(m.start).Seconds(), Objective: Number(math.NaN()), Gap: Number(math.NaN()), NNZ: Number(math.NaN())}
	reported := m.reported.Load()
	for _, f := range families {
		name := f.GetName()
		for _, metric := range f.GetMetric() {
			v := metric.GetCounter().GetValue() + metric.GetGauge().GetValue()
			label := func(name string) string {
				for _, l := range metric.GetLabel() {
					if l.GetName() == name {
						return l.GetValue()
					}
				}
				return ""
			}
			put := func(mp *map[string]float64, key string) {
				if *mp == nil {
					*mp = map[string]float64{}
				}
				(*mp)[key] += v
			}
			switch name {
			case "strads_coordinator_rounds_total":
				s.Rounds = v
			case "strads_coordinator_updates_total":
				s.Updates = v
			case "strads_coordinator_plan_capacity_total":
				s.PlanCapacity = v
			case "strads_coordinator_plan_deferred_total":
				s.PlanDeferred = v
			case "strads_coordinator_plan_rejected_total":
				s.PlanRejected = v
			case "strads_coordinator_rounds_in_flight":
				s.InFlight = v
			case "strads_coordinator_objective":
				if reported {
					s.Objective = Number(v)
				}
			case "strads_coordinator_gap":
				if reported {
					s.Gap = Number(v)
				}
			case "strads_coordinator_nnz":
				if reported {
					s.NNZ = Number(v)
				}
			case "strads_coordinator_app_metric":
				if reported {
					if s.App == nil {
						s.App = map[string]Number{}
					}
					s.App[label("name")] = Number(v)
				}
			case "strads_coordinator_phase_seconds_total":
				put(&s.PhaseSeconds, label("phase"))
			case "strads_worker_compute_seconds_total":
				put(&s.WorkerSeconds, label("shard"))
			case "strads_worker_tasks_total":
				put(&s.WorkerTasks, label("shard"))
			case "strads_scheduler_plan_seconds_total":
				put(&s.SchedulerSeconds, label("part"))
			case "strads_scheduler_plans_total":
				put(&s.Plans, label("part"))
			case "strads_nats_in_bytes_total":
				put(&s.NATSInBytes, label("conn"))
			case "strads_nats_out_bytes_total":
				put(&s.NATSOutBytes, label("conn"))
			case "strads_dropped_messages_total":
				s.Dropped += v
			}
		}
	}
	m.hist.add(s, keep)
	return nil
}

// serveSeries serves the history as JSON (Series); ?since=T leaves out
// the samples at or before T.
func (m *Metrics) serveSeries(w http.ResponseWriter, r *http.Request) {
	since := math.Inf(-1)
	if q := r.URL.Query().Get("since"); q != "" {
		t, err := strconv.ParseFloat(q, 64)
		if err != nil {
			http.Error(w, fmt.Sprintf("since=%q: want seconds", q), http.StatusBadRequest)
			return
		}
		since = t
	}
	if err := m.sample(time.Now(), false); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	samples, stride := m.hist.since(since)
	m.infoMu.Lock()
	info := maps.Clone(m.info)
	m.infoMu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(Series{Start: m.start, Interval: stride, Capacity: m.hist.cap, Info: info, Samples: samples})
}
