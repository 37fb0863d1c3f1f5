package coordinator

import (
	"bufio"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/schmp"
)

// stats sums where the time of a run goes, as it runs.
type stats struct {
	plan       time.Duration   // scheduler compute, all parts
	dispatch   time.Duration   // encoding and publishing tasks
	pull       time.Duration   // the app's Pull
	objective  time.Duration   // the app's Objective
	push       time.Duration   // the slowest worker's compute, per round
	wait       time.Duration   // from a round's first partial to its last
	latency    time.Duration   // from sending a round to the end of its Pull
	schedulers []time.Duration // compute per scheduler part
	workers    []time.Duration // compute per worker shard
	nats       nats.Statistics // the coordinator's traffic
	plans      planCounts      // the plans of the rounds pulled
}

// planCounts sums what the plans of rounds said of themselves
// (schmp.PlanInfo).
type planCounts struct {
	selected, rejected, deferred, capacity int64
}

func (p *planCounts) add(info schmp.PlanInfo) {
	p.selected += int64(info.Selected)
	p.rejected += int64(info.Rejected)
	p.deferred += int64(info.Deferred)
	p.capacity += int64(info.Capacity)
}

// planMeans are the per-round means of plan counts.
type planMeans struct {
	selected, rejected, deferred, capacity float64
}

// since returns the means per round of the plans counted since prev, over
// rounds rounds.
func (p planCounts) since(prev planCounts, rounds uint64) planMeans {
	if rounds == 0 {
		return planMeans{}
	}
	r := float64(rounds)
	return planMeans{
		selected: float64(p.selected-prev.selected) / r, rejected: float64(p.rejected-prev.rejected) / r,
		deferred: float64(p.deferred-prev.deferred) / r, capacity: float64(p.capacity-prev.capacity) / r,
	}
}

// mostlyEmpty reports whether plans of these means, which have a capacity,
// fill less than half of it.
func (m planMeans) mostlyEmpty() bool {
	return m.capacity > 0 && m.selected < m.capacity/2
}

func (s *stats) init(workers, schedulers int) {
	s.workers = make([]time.Duration, workers)
	s.schedulers = make([]time.Duration, schedulers)
}

func (s *stats) planned(part int, nanos int64) {
	if part >= 0 && part < len(s.schedulers) {
		s.schedulers[part] += time.Duration(nanos)
	}
	s.plan += time.Duration(nanos)
}

func (s *stats) work(shard int, nanos int64) { s.workers[shard] += time.Duration(nanos) }

func (s *stats) round(push, wait, pull, latency time.Duration) {
	s.push += push
	s.wait += wait
	s.pull += pull
	s.latency += latency
}

// copy returns a copy of s for since.
func (s *stats) copy() stats {
	c := *s
	c.workers, c.schedulers = nil, nil
	return c
}

// rowStats are the per-round means of a metrics row.
type rowStats struct {
	plan, dispatch, push, wait, pull, latency time.Duration
	msgs, bytes                               float64
	plans                                     planMeans
}

// since returns the means per round of what happened since prev, over
// rounds rounds.
func (s *stats) since(prev *stats, rounds uint64) rowStats {
	if rounds == 0 {
		return rowStats{}
	}
	d := func(a, b time.Duration) time.Duration { return (a - b) / time.Duration(rounds) }
	return rowStats{
		plan:     d(s.plan, prev.plan),
		dispatch: d(s.dispatch, prev.dispatch),
		push:     d(s.push, prev.push),
		wait:     d(s.wait, prev.wait),
		pull:     d(s.pull, prev.pull),
		latency:  d(s.latency, prev.latency),
		msgs:     float64(s.nats.InMsgs+s.nats.OutMsgs-prev.nats.InMsgs-prev.nats.OutMsgs) / float64(rounds),
		bytes:    float64(s.nats.InBytes+s.nats.OutBytes-prev.nats.InBytes-prev.nats.OutBytes) / float64(rounds),
		plans:    s.plans.since(prev.plans, rounds),
	}
}

// timing returns the totals of a run that took elapsed, of which the
// coordinator waited for messages for waited.
func (s *stats) timing(elapsed, waited time.Duration, traffic nats.Statistics) Timing {
	return Timing{
		Elapsed:     elapsed,
		Plan:        s.plan,
		Dispatch:    s.dispatch,
		Push:        s.push,
		Wait:        s.wait,
		Pull:        s.pull,
		Objective:   s.objective,
		Latency:     s.latency,
		Coordinator: max(elapsed-waited, 0),
		Schedulers:  slices.Clone(s.schedulers),
		Workers:     slices.Clone(s.workers),
		Msgs:        traffic.InMsgs + traffic.OutMsgs,
		Bytes:       traffic.InBytes + traffic.OutBytes,
	}
}

const metricsHeader = "time_s,round,objective,nnz,updates,gap,plan_ms,dispatch_ms,push_ms,wait_ms,pull_ms,latency_ms,msgs,bytes,selected,rejected,deferred,written\n"

// writeSample writes the runtime's columns of s's metrics row up to
// deferred, with r, the per-round means of the rounds pulled since the
// previous row; written and the app's metrics follow.
func writeSample(w *bufio.Writer, s schmp.Sample, r rowStats) {
	f := func(v float64, prec int) {
		w.WriteString(strconv.FormatFloat(v, 'g', prec, 64))
	}
	ms := func(d time.Duration) {
		w.WriteByte(',')
		w.WriteString(strconv.FormatFloat(float64(d)/1e6, 'f', 4, 64))
	}
	w.WriteString(strconv.FormatFloat(s.Time.Seconds(), 'f', 6, 64))
	w.WriteByte(',')
	w.WriteString(strconv.FormatUint(s.Round, 10))
	w.WriteByte(',')
	f(s.Objective, 17)
	w.WriteByte(',')
	w.WriteString(strconv.Itoa(s.NNZ))
	w.WriteByte(',')
	w.WriteString(strconv.FormatInt(s.Updates, 10))
	w.WriteByte(',')
	if s.HasGap {
		f(s.Gap, 6)
	}
	for _, d := range []time.Duration{r.plan, r.dispatch, r.push, r.wait, r.pull, r.latency} {
		ms(d)
	}
	w.WriteByte(',')
	f(r.msgs, 4)
	w.WriteByte(',')
	f(r.bytes, 6)
	for _, v := range []float64{r.plans.selected, r.plans.rejected, r.plans.deferred} {
		w.WriteByte(',')
		f(v, 4)
	}
}

// writeAppMetrics ends a metrics row with the app's metrics of s.
func writeAppMetrics(w *bufio.Writer, s schmp.Sample) {
	for _, m := range s.Metrics {
		w.WriteByte(',')
		if !math.IsNaN(m.Value) {
			w.WriteString(strconv.FormatFloat(m.Value, 'g', -1, 64))
		}
	}
	w.WriteByte('\n')
}
