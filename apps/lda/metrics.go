package lda

import (
	"time"

	"github.com/strads-go/strads/schmp"
)

// Report is the state of a job at a report: a row of the metrics.
type Report struct {
	// Time is the time from the first round to the end of round Round
	// (when its last partial came in).
	Time time.Duration
	// Round is the number of rounds whose updates the report reflects,
	// and Iter the iterations they make.
	Round uint64
	Iter  float64
	// LogLik is the collapsed log-likelihood log p(w, z) per token.
	LogLik float64
	// Tokens is the number of tokens sampled so far, and SampleNanos the
	// time the workers spent sampling them, all workers together.
	Tokens      int64
	SampleNanos int64
	// Priors are the priors the report's log-likelihood is computed with.
	Priors Priors
	// Perplexity is the held-out perplexity (Config.TestDocword) of the
	// model at the report, NaN if none was computed; TestTime is the time
	// the coordinator spent computing it at this report and the earlier
	// ones, which the later reports' Time includes.
	Perplexity float64
	TestTime   time.Duration
}

// metrics returns the report as the app's columns of the runtime's
// metrics (schmp.Progress.Metrics): iter, tokens_per_s,
// sample_tokens_per_s_core, alpha_sum, alpha_min, alpha_max, beta, and
// with a test set, test_perplexity (empty where not computed).
func (r Report) metrics(test bool) []schmp.Metric {
	sum, lo, hi := alphaStats(r.Priors.Alpha)
	ms := []schmp.Metric{
		{Name: "iter", Value: r.Iter},
		{Name: "tokens_per_s", Value: r.TokensPerSecond()},
		{Name: "sample_tokens_per_s_core", Value: r.SamplingRate()},
		{Name: "alpha_sum", Value: sum},
		{Name: "alpha_min", Value: lo},
		{Name: "alpha_max", Value: hi},
		{Name: "beta", Value: r.Priors.Beta},
	}
	if test {
		ms = append(ms, schmp.Metric{Name: "test_perplexity", Value: r.Perplexity})
	}
	return ms
}

// TokensPerSecond returns the tokens sampled per second of the whole job
// (communication and reports included).
func (r Report) TokensPerSecond() float64 {
	if r.Time <= 0 {
		return 0
	}
	return float64(r.Tokens) / r.Time.Seconds()
}

// SamplingRate returns the tokens sampled per second of a worker's
// sampling time: the sampler's rate on one core.
func (r Report) SamplingRate() float64 {
	if r.SampleNanos <= 0 {
		return 0
	}
	return float64(r.Tokens) / (float64(r.SampleNanos) / 1e9)
}

// Trace returns every report of the job so far.
func (m *model) Trace() []Report { return m.trace }
