package coordinator

import (
	"fmt"
	"math"
	"strconv"
	"time"
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
