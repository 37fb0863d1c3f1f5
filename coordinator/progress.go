package coordinator

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/schmp"
)

// position is where a job stands, as the progress line shows it (DESIGN
// "Observability"): how far it is, of how far it goes where that is known, and when it
// should end.
type position struct {
	// Rounds is the number of rounds pulled.
	Rounds uint64
	// MaxRounds is the job's last round (Options.MaxRounds); 0: unknown.
	MaxRounds uint64
	// Period is the number of rounds of an iteration, for an app whose
	// rounds come in iterations (schmp.Iterated); 0 for one whose do not.
	Period uint64
	// Elapsed is the time since the first round, and TimeLimit
	// Options.TimeLimit (0: none).
	Elapsed, TimeLimit time.Duration
	// Ended says that the job is over: no time is left.
	Ended bool
}

// String returns the position: "round n" or, with MaxRounds, "round n/N",
// for a schmp.Iterated app "iter n/N" in iterations; then the elapsed time;
// then, where the job has a known end (MaxRounds, TimeLimit), "eta" and
// the time left at the rate so far, the earlier of the two ends. A job
// with no known end, with no round pulled yet, or over, has no ETA.
func (p position) String() string {
	unit, n, of := "round", strconv.FormatUint(p.Rounds, 10), ""
	if p.Period > 0 {
		unit, n = "iter", iterations(p.Rounds, p.Period)
	}
	if p.MaxRounds > 0 {
		of = "/" + strconv.FormatUint(p.MaxRounds, 10)
		if p.Period > 0 {
			of = "/" + iterations(p.MaxRounds, p.Period)
		}
	}
	s := fmt.Sprintf("%s %s%s  elapsed %s", unit, n, of, p.Elapsed.Round(10*time.Millisecond))
	if eta, ok := p.eta(); ok {
		s += "  eta " + roughly(eta).String()
	}
	return s
}

// eta returns the time left: to MaxRounds at the rate of the rounds so
// far, or to TimeLimit, whichever comes first; ok is false without either.
func (p position) eta() (left time.Duration, ok bool) {
	if p.Ended {
		return 0, false
	}
	if p.MaxRounds > 0 && p.Rounds > 0 {
		rest := float64(p.MaxRounds) - float64(min(p.Rounds, p.MaxRounds))
		left, ok = time.Duration(float64(p.Elapsed)/float64(p.Rounds)*rest), true
	}
	if p.TimeLimit > 0 {
		t := max(p.TimeLimit-p.Elapsed, 0)
		if !ok || t < left {
			left, ok = t, true
		}
	}
	return left, ok
}

// iterations returns rounds in iterations of period rounds, to two
// decimals: "3", "2.5", "0.33".
func iterations(rounds, period uint64) string {
	it := math.Round(float64(rounds)/float64(period)*100) / 100
	return strconv.FormatFloat(it, 'f', -1, 64)
}

// roughly rounds a time left to what is worth showing: hundredths of a
// second under 1 s, tenths under 10 s, seconds under an hour, minutes
// beyond.
func roughly(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(10 * time.Millisecond)
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d < time.Hour:
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}

// progress is what the progress lines remember from one to the next, and
// what makes one; plain data, the node gives it what it reads.
type progress struct {
	at      time.Time  // the last line's time (the run's start before the first)
	updates int64      // the updates at the last line (at the run's start)
	plans   planCounts // the plans pulled at the last line
	round   uint64     // the rounds pulled at the last line
	sawNNZ  bool       // a report had a non-zero NNZ
	warned  bool       // the plans were warned of
}

// lineState is what a progress line shows, as the node reads it.
type lineState struct {
	now        time.Time
	pos        position
	final      schmp.Progress // the last report
	updates    int64          // the updates made, the run before a resume's included
	plans      planCounts     // the plans pulled in this run
	pulled     uint64         // the rounds pulled
	reconnects uint64
	stage      string // the app's stage, "" for none
}

// line returns the progress line of s, and the plans' fill since the line
// before when, the first time, they ran mostly empty over emptyWindow
// rounds or more: the node warns of it.
func (p *progress) line(s lineState) (line string, empty *planMeans) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  objective %.9g", s.pos, s.final.Objective)
	if s.final.HasGap {
		fmt.Fprintf(&b, "  gap %.2g", s.final.Gap)
	}
	// nnz once a report had any (mf's and LDA's models have none to
	// count).
	if p.sawNNZ = p.sawNNZ || s.final.NNZ > 0; p.sawNNZ {
		fmt.Fprintf(&b, "  nnz %d", s.final.NNZ)
	}
	// Updates per second since the line before, for an app that counts
	// its updates (a resumed job's count includes the run before, which
	// the first line's starts from).
	if s.updates > 0 {
		if dt := s.now.Sub(p.at).Seconds(); dt > 0 && s.updates >= p.updates { // not after a rollback
			fmt.Fprintf(&b, "  updates/s %.3g", float64(s.updates-p.updates)/dt)
		}
		p.at, p.updates = s.now, s.updates
	}
	for _, m := range s.final.Metrics {
		// A metric not computed at this report (a held-out perplexity
		// between evaluations) is left out, and so is the app's own
		// iteration count where the position gives the runtime's.
		if math.IsNaN(m.Value) || (m.Name == "iter" && s.pos.Period > 0) {
			continue
		}
		fmt.Fprintf(&b, "  %s %.6g", m.Name, m.Value)
	}
	if s.reconnects > 0 {
		fmt.Fprintf(&b, "  reconnects %d", s.reconnects)
	}
	rounds := s.pulled - p.round
	if m := s.plans.since(p.plans, rounds); m.capacity > 0 {
		fmt.Fprintf(&b, "  plan %.3g/%.3g", m.selected, m.capacity)
		if m.mostlyEmpty() && rounds >= emptyWindow && !p.warned {
			p.warned, empty = true, &m
		}
	}
	p.plans, p.round = s.plans, s.pulled
	if s.stage != "" {
		b.WriteString("  " + s.stage)
	}
	return b.String(), empty
}

// emptyWindow is the fewest rounds over which plans that ran mostly empty
// are warned of: the first rounds of a job, with nothing in flight yet,
// may be fuller or emptier than the rest.
const emptyWindow = 20
