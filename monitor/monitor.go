// Package monitor exposes what a node is doing while a job runs: its
// metrics for Prometheus (github.com/prometheus/client_golang), a live web
// page of them with their history, and, if asked for, its profiles
// (net/http/pprof), served over HTTP, so that a long distributed run can be watched and
// profiled.
//
// Metrics holds the metrics of every role; a node updates only its own
// role's, so the same Metrics serves a process that runs one role or, for
// the all-in-one command, all of them. Worker and scheduler metrics are
// labelled by shard and part.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the metrics of the nodes of a process.
type Metrics struct {
	// Coordinator: rounds and updates pulled, the plans' capacity and
	// candidates put off and rejected (schmp.PlanInfo), the round latency,
	// where the time went, and the last report.
	Rounds       prometheus.Counter
	Updates      prometheus.Counter
	PlanCapacity prometheus.Counter
	PlanDeferred prometheus.Counter
	PlanRejected prometheus.Counter
	RoundSeconds prometheus.Histogram
	PhaseSeconds *prometheus.CounterVec // by phase: plan, dispatch, push, wait, pull, objective
	InFlight     prometheus.Gauge
	Objective    prometheus.Gauge
	Gap          prometheus.Gauge
	NNZ          prometheus.Gauge
	// App holds the app's own measures (schmp.Metric: a test RMSE, a
	// perplexity, an accuracy), by name: the last value a report computed.
	App *prometheus.GaugeVec

	// Workers, by shard: tasks run and compute time.
	WorkerTasks   *prometheus.CounterVec
	WorkerSeconds *prometheus.CounterVec

	// Schedulers, by part: plans made, their compute time, candidates
	// examined and variables selected.
	Plans       *prometheus.CounterVec
	PlanSeconds *prometheus.CounterVec
	Candidates  *prometheus.CounterVec
	Selected    *prometheus.CounterVec

	// Every role, by role and reason: messages dropped without being
	// applied (protocol.DropGarbage, DropForeign, …; DESIGN "Hostile traffic").
	Dropped *prometheus.CounterVec

	reg      *prometheus.Registry
	start    time.Time
	hist     *history
	reported atomic.Bool // Objective was set: the coordinator reported
	infoMu   sync.Mutex
	info     map[string]string
}

// New returns the metrics of a process in a new registry, which also holds
// the Go runtime's and the process's own metrics.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "strads", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	g := func(name, help string) prometheus.Gauge {
		c := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "strads", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	v := func(name, help, label string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "strads", Name: name, Help: help}, []string{label})
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{
		Rounds:       f("coordinator_rounds_total", "Rounds pulled."),
		Updates:      f("coordinator_updates_total", "Variable updates made."),
		PlanCapacity: f("coordinator_plan_capacity_total", "The most variables the plans pulled could have held (their schedulers' blocks)."),
		PlanDeferred: f("coordinator_plan_deferred_total", "Candidates the plans pulled put off because they depended on a round in flight."),
		PlanRejected: f("coordinator_plan_rejected_total", "Candidates the plans pulled rejected by the dependency check."),
		RoundSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "strads", Name: "coordinator_round_seconds",
			Help:    "Round latency: from sending a round to the workers to the end of its Pull.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 18),
		}),
		PhaseSeconds: v("coordinator_phase_seconds_total", "Time per phase of the rounds: plan (scheduler compute), dispatch, push (slowest worker's compute), wait (first to last partial), pull, objective.", "phase"),
		InFlight:     g("coordinator_rounds_in_flight", "Rounds in flight."),
		Objective:    g("coordinator_objective", "Objective at the last report."),
		Gap:          g("coordinator_gap", "Certified gap at the last report (NaN if the app has none)."),
		App: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "strads", Name: "coordinator_app_metric",
			Help: "The app's own measures (test RMSE, perplexity, accuracy …), by name: the last value a report computed."},
			[]string{"name"}),
		NNZ:           g("coordinator_nnz", "Non-zero model variables at the last report."),
		WorkerTasks:   v("worker_tasks_total", "Tasks run.", "shard"),
		WorkerSeconds: v("worker_compute_seconds_total", "Time spent applying updates, reporting and pushing.", "shard"),
		Plans:         v("scheduler_plans_total", "Plans made.", "part"),
		PlanSeconds:   v("scheduler_plan_seconds_total", "Time spent planning, feedback included.", "part"),
		Candidates:    v("scheduler_candidates_total", "Candidates examined.", "part"),
		Selected:      v("scheduler_selected_total", "Variables selected.", "part"),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "strads", Name: "dropped_messages_total",
			Help: "Messages dropped unused, by role and reason: garbage (does not decode, or of another type), foreign (another run id), duplicate (a replay), unexpected (nobody awaits it), incomplete (chunks missing), unauthenticated (no MAC, with a job key), forged (a MAC that does not verify)."},
			[]string{"role", "reason"}),
		reg:   reg,
		start: time.Now(),
		hist:  newHistory(Capacity),
		info:  map[string]string{},
	}
	m.Objective = reportGauge{m.Objective, &m.reported}
	reg.MustRegister(m.Dropped, m.App)
	reg.MustRegister(m.RoundSeconds, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Drop counts a message that a node of role dropped, for reason; m may be
// nil.
func (m *Metrics) Drop(role, reason string) {
	if m != nil {
		m.Dropped.WithLabelValues(role, reason).Inc()
	}
}

// Report sets what a report of the job says: its objective, gap and nnz
// (NaN: the app has none), and the app's own measures by name (NaN: not
// computed at this report, and the last value stands); m may be nil.
func (m *Metrics) Report(objective, gap, nnz float64, app map[string]float64) {
	if m == nil {
		return
	}
	m.Objective.Set(objective)
	m.Gap.Set(gap)
	m.NNZ.Set(nnz)
	for name, v := range app {
		if !math.IsNaN(v) {
			m.App.WithLabelValues(name).Set(v)
		}
	}
}

// Label returns the label value of shard or part i.
func Label(i int) string { return strconv.Itoa(i) }

// AddConn registers the traffic of a node's NATS connection, and its
// reconnects (strads_nats_reconnects_total), labelled by the node's name.
func (m *Metrics) AddConn(name string, nc *nats.Conn) error {
	stat := func(metric, help string, get func(nats.Statistics) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "strads", Name: metric, Help: help, ConstLabels: prometheus.Labels{"conn": name},
		}, func() float64 { return float64(get(nc.Stats())) })
	}
	for _, c := range []prometheus.Collector{
		stat("nats_in_msgs_total", "Messages received by the connection.", func(s nats.Statistics) uint64 { return s.InMsgs }),
		stat("nats_out_msgs_total", "Messages sent by the connection.", func(s nats.Statistics) uint64 { return s.OutMsgs }),
		stat("nats_in_bytes_total", "Bytes received by the connection.", func(s nats.Statistics) uint64 { return s.InBytes }),
		stat("nats_out_bytes_total", "Bytes sent by the connection.", func(s nats.Statistics) uint64 { return s.OutBytes }),
		stat("nats_reconnects_total", "Reconnects of the connection after the server was lost.", func(s nats.Statistics) uint64 { return s.Reconnects }),
	} {
		if err := m.reg.Register(c); err != nil {
			return fmt.Errorf("monitor: connection %s: %w", name, err)
		}
	}
	return nil
}

// HandlerOptions says what a Metrics' handler serves besides the live
// page, its history and the metrics.
type HandlerOptions struct {
	// Pprof serves the profiles of net/http/pprof under /debug/pprof/.
	// Off by default: a profile shows the program's memory and the time it
	// spends, and anyone who reaches the address may take one.
	Pprof bool
	// Cmdline is the command line that /debug/pprof/cmdline shows, with
	// its credentials already removed; nil shows the program's name only,
	// never os.Args, which may hold a password (a NATS URL's, say).
	Cmdline []string
}

// Handler returns the HTTP handler of the live page (/), its history as
// JSON (/series) and the metrics for Prometheus (/metrics), without
// profiles: HandlerWith(HandlerOptions{}).
func (m *Metrics) Handler() http.Handler { return m.HandlerWith(HandlerOptions{}) }

// HandlerWith returns Handler's handler, with the profiles
// (/debug/pprof/) if o.Pprof.
func (m *Metrics) HandlerWith(o HandlerOptions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", servePage)
	mux.HandleFunc("GET /series", m.serveSeries)
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	if !o.Pprof {
		return mux
	}
	cmdline := o.Cmdline
	if cmdline == nil && len(os.Args) > 0 {
		cmdline = os.Args[:1]
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		// pprof.Cmdline's answer, of the command line given.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, strings.Join(cmdline, "\x00"))
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Server serves a Metrics' handler.
type Server struct {
	srv     *http.Server
	addr    string
	done    chan error
	stop    context.CancelFunc
	sampled chan struct{}
}

// Serve starts serving m's Handler on addr (host:port; port 0 picks a
// free one) and sampling m into its history every second, and returns once
// it listens. Errors after that are logged to log.
func Serve(addr string, m *Metrics, log *slog.Logger) (*Server, error) {
	return ServeWith(addr, m, log, HandlerOptions{})
}

// ServeWith is Serve of m's HandlerWith(o): with the profiles if o.Pprof.
func ServeWith(addr string, m *Metrics, log *slog.Logger, o HandlerOptions) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve metrics on %s: %w", addr, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{
		srv:     &http.Server{Handler: m.HandlerWith(o), ReadHeaderTimeout: 10 * time.Second},
		addr:    ln.Addr().String(),
		done:    make(chan error, 1),
		stop:    stop,
		sampled: make(chan struct{}),
	}
	go func() {
		defer close(s.sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if err := m.Sample(time.Now()); err != nil && log != nil {
				log.Warn("monitor", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	go func() {
		err := s.srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Error("monitor", "addr", s.addr, "err", err)
		}
		s.done <- err
	}()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Close stops the server and the sampling, waiting up to 5 seconds for
// requests in progress.
func (s *Server) Close() error {
	s.stop()
	<-s.sampled
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
