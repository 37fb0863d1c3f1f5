package coordinator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// Run runs a coordinator node on c until the job stops or fails, or ctx is
// done. newCoordinator builds the app's coordinator. On success the model is
// at opts.Out and the metrics at opts.Metrics; on failure neither file is
// left behind, and every other node of the job is told to stop.
func Run[P, R, U, S any](ctx context.Context, c *wire.Conn, newCoordinator func(ctx context.Context) (schmp.Coordinator[P, R, U, S], error), opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.fill()
	n := &node[P, R, U, S]{c: c, opts: opts, log: opts.Logger.With("role", "coordinator")}
	res, err := n.run(ctx, newCoordinator)
	if err != nil {
		n.abort(err)
		return nil, err
	}
	return res, nil
}

type node[P, R, U, S any] struct {
	c    *wire.Conn
	opts Options
	log  *slog.Logger
	app  schmp.Coordinator[P, R, U, S]

	partials *wire.Inbox[protocol.Partial[R, S]]
	metrics  *atomicfile.File
	start    time.Time
	res      Result
}

func (n *node[P, R, U, S]) run(ctx context.Context, newCoordinator func(ctx context.Context) (schmp.Coordinator[P, R, U, S], error)) (*Result, error) {
	var err error
	readies, err := wire.Subscribe[protocol.Ready[S]](n.c, protocol.SubjectReady)
	if err != nil {
		return nil, err
	}
	defer readies.Close()
	if n.partials, err = wire.Subscribe[protocol.Partial[R, S]](n.c, protocol.SubjectPartial); err != nil {
		return nil, err
	}
	defer n.partials.Close()
	joins, err := n.admit()
	if err != nil {
		return nil, err
	}
	defer joins.Unsubscribe()

	if n.app, err = newCoordinator(ctx); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if n.opts.Metrics != "" {
		// Open now, so that a bad path fails before the job runs.
		if n.metrics, err = atomicfile.Create(n.opts.Metrics); err != nil {
			return nil, err
		}
		defer n.metrics.Abort()
		n.metrics.WriteString("time_s,round,objective,nnz,updates,gap\n")
	}

	summaries, err := n.awaitWorkers(ctx, readies)
	if err != nil {
		return nil, err
	}
	u, err := n.app.Start(summaries)
	if err != nil {
		return nil, fmt.Errorf("coordinator: start: %w", err)
	}
	n.log.Info("workers ready; starting", "workers", n.opts.Workers)
	if u, err = n.rounds(ctx, u); err != nil {
		return nil, err
	}
	if err := n.finish(ctx, u); err != nil {
		return nil, err
	}
	return &n.res, nil
}

// admit answers join requests: each new worker ID gets the next shard.
func (n *node[P, R, U, S]) admit() (*nats.Subscription, error) {
	var mu sync.Mutex
	shards := map[string]int{}
	sub, err := n.c.NATS().Subscribe(n.c.Subject(protocol.SubjectJoin), func(msg *nats.Msg) {
		var req protocol.JoinRequest
		rep := protocol.JoinReply{Shards: n.opts.Workers}
		if err := wire.Unmarshal(msg.Data, &req); err != nil {
			rep.Err = err.Error()
		} else {
			mu.Lock()
			shard, ok := shards[req.ID]
			if !ok && len(shards) < n.opts.Workers {
				shard, ok = len(shards), true
				shards[req.ID] = shard
			}
			mu.Unlock()
			if ok {
				rep.Shard = shard
			} else {
				rep.Err = fmt.Sprintf("the job already has its %d workers", n.opts.Workers)
			}
		}
		if err := wire.Reply(n.c, msg, rep); err != nil {
			n.log.Warn("join reply", "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("coordinator: subscribe to joins: %w", err)
	}
	return sub, nil
}

// awaitWorkers collects every worker's shard summary.
func (n *node[P, R, U, S]) awaitWorkers(ctx context.Context, readies *wire.Inbox[protocol.Ready[S]]) ([]S, error) {
	w := n.opts.Workers
	summaries := make([]S, w)
	ready := make([]bool, w)
	count := 0
	jctx, cancel := context.WithTimeout(ctx, n.opts.JoinTimeout)
	defer cancel()
	for count < w {
		r, msg, err := readies.Next(jctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("coordinator: only %d of %d workers ready after %s (missing shards %v)", count, w, n.opts.JoinTimeout, missing(ready))
			}
			return nil, fmt.Errorf("coordinator: %w", err)
		}
		var ack protocol.Ack
		switch {
		case r.Shard < 0 || r.Shard >= w:
			ack.Err = fmt.Sprintf("no shard %d in a job of %d workers", r.Shard, w)
		case r.Err != "":
			ack.Err = "noted"
		}
		if msg.Reply != "" {
			if err := wire.Reply(n.c, msg, ack); err != nil {
				n.log.Warn("ready reply", "err", err)
			}
		}
		if r.Err != "" {
			return nil, fmt.Errorf("worker %s", r.Err)
		}
		if ack.Err != "" || ready[r.Shard] {
			continue
		}
		summaries[r.Shard], ready[r.Shard] = r.Summary, true
		count++
		n.log.Info("worker ready", "shard", r.Shard, "id", r.ID)
	}
	return summaries, nil
}

func missing(ok []bool) []int {
	var m []int
	for i, b := range ok {
		if !b {
			m = append(m, i)
		}
	}
	return m
}

// rounds runs rounds until a stop condition holds and returns the last
// update, which the workers have not applied yet.
func (n *node[P, R, U, S]) rounds(ctx context.Context, u U) (U, error) {
	w := n.opts.Workers
	partials := make([]R, w)
	reports := make([]S, w)
	var fb schmp.Feedback
	var prev float64
	havePrev := false
	lastProgress := time.Now()
	n.start = time.Now()
	for round := uint64(1); ; round++ {
		t0 := time.Now()
		plan, info, err := n.plan(ctx, round, fb)
		if err != nil {
			return u, err
		}
		report := (round-1)%uint64(n.opts.ReportEvery) == 0
		task := protocol.Task[P, U]{Round: round, Update: u, Plan: plan, Report: report}
		if err := wire.Publish(n.c, protocol.SubjectTask, task); err != nil {
			return u, fmt.Errorf("coordinator: round %d: %w", round, err)
		}
		if err := n.gather(ctx, round, partials, reports); err != nil {
			return u, err
		}
		converged := false
		if report {
			prog, err := n.record(round-1, reports)
			if err != nil {
				return u, err
			}
			if prog.HasGap {
				converged = prog.Gap <= n.opts.Tol*math.Abs(prog.Objective)
			} else {
				converged = havePrev && relChange(prev, prog.Objective) < n.opts.Tol
			}
			prev, havePrev = prog.Objective, true
		}
		if u, fb, err = n.app.Pull(round, plan, partials); err != nil {
			return u, fmt.Errorf("coordinator: round %d: pull: %w", round, err)
		}
		n.res.Rounds = round
		n.res.Updates += int64(info.Selected)
		n.res.Candidates += int64(info.Candidates)
		n.res.RoundTimes = append(n.res.RoundTimes, time.Since(t0))

		if n.opts.Progress != nil && time.Since(lastProgress) >= n.opts.ProgressEvery {
			lastProgress = time.Now()
			n.progressLine()
		}
		switch {
		case converged:
			n.res.Reason = "converged"
		case n.opts.MaxRounds > 0 && round >= n.opts.MaxRounds:
			n.res.Reason = "max-rounds"
		case n.opts.TimeLimit > 0 && time.Since(n.start) >= n.opts.TimeLimit:
			n.res.Reason = "time-limit"
		default:
			continue
		}
		return u, nil
	}
}

// relChange returns |a−b|/|b| (∞ when b is 0 and a is not).
func relChange(a, b float64) float64 {
	d := math.Abs(a - b)
	if d == 0 {
		return 0
	}
	return d / math.Abs(b)
}

// plan asks the scheduler for the plan of round. The scheduler may still
// be loading its data when the first round starts: until JoinTimeout, a
// missing scheduler is waited for.
func (n *node[P, R, U, S]) plan(ctx context.Context, round uint64, fb schmp.Feedback) (P, schmp.PlanInfo, error) {
	req := protocol.PlanRequest{Round: round, Feedback: fb}
	wait := n.opts.Timeout
	if round == 1 {
		wait = n.opts.JoinTimeout
	}
	deadline := time.Now().Add(wait)
	for {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		rep, err := wire.Request[protocol.PlanRequest, protocol.PlanReply[P]](rctx, n.c, protocol.SubjectPlan, req)
		cancel()
		switch {
		case err == nil && rep.Err != "":
			return rep.Plan, rep.Info, fmt.Errorf("scheduler: round %d: %s", round, rep.Err)
		case err == nil:
			return rep.Plan, rep.Info, nil
		case ctx.Err() != nil:
			return rep.Plan, rep.Info, ctx.Err()
		case errors.Is(err, wire.ErrNoResponders) && time.Now().Before(deadline):
			time.Sleep(20 * time.Millisecond)
		case errors.Is(err, wire.ErrNoResponders), errors.Is(err, context.DeadlineExceeded):
			return rep.Plan, rep.Info, fmt.Errorf("coordinator: round %d: no plan from the scheduler within %s", round, wait)
		default:
			return rep.Plan, rep.Info, fmt.Errorf("coordinator: round %d: %w", round, err)
		}
	}
}

// gather collects one partial per worker for round.
func (n *node[P, R, U, S]) gather(ctx context.Context, round uint64, partials []R, reports []S) error {
	w := n.opts.Workers
	got := make([]bool, w)
	count := 0
	gctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	for count < w {
		p, _, err := n.partials.Next(gctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("coordinator: round %d: no answer from worker shard(s) %v within %s", round, missing(got), n.opts.Timeout)
			}
			return fmt.Errorf("coordinator: round %d: %w", round, err)
		}
		if p.Err != "" {
			return fmt.Errorf("worker shard %d: %s", p.Shard, p.Err)
		}
		if p.Round != round || p.Shard < 0 || p.Shard >= w || got[p.Shard] {
			n.log.Warn("unexpected partial", "round", p.Round, "shard", p.Shard, "want_round", round)
			continue
		}
		got[p.Shard] = true
		count++
		partials[p.Shard] = p.Partial
		if p.HasReport {
			reports[p.Shard] = p.Report
		}
	}
	return nil
}

// record computes the objective from the reports, for the state after
// round rounds, and appends it to the trace and the metrics.
func (n *node[P, R, U, S]) record(round uint64, reports []S) (schmp.Progress, error) {
	prog, err := n.app.Objective(reports)
	if err != nil {
		return prog, fmt.Errorf("coordinator: objective after round %d: %w", round, err)
	}
	s := Sample{Time: time.Since(n.start), Round: round, Progress: prog, Updates: n.res.Updates}
	n.res.Trace = append(n.res.Trace, s)
	n.res.Final = prog
	if n.metrics != nil {
		writeSample(n.metrics.Writer, s)
	}
	return prog, nil
}

func writeSample(w *bufio.Writer, s Sample) {
	w.WriteString(strconv.FormatFloat(s.Time.Seconds(), 'f', 6, 64))
	w.WriteByte(',')
	w.WriteString(strconv.FormatUint(s.Round, 10))
	w.WriteByte(',')
	w.WriteString(strconv.FormatFloat(s.Objective, 'g', 17, 64))
	w.WriteByte(',')
	w.WriteString(strconv.Itoa(s.NNZ))
	w.WriteByte(',')
	w.WriteString(strconv.FormatInt(s.Updates, 10))
	w.WriteByte(',')
	if s.HasGap {
		w.WriteString(strconv.FormatFloat(s.Gap, 'g', 6, 64))
	}
	w.WriteByte('\n')
}

func (n *node[P, R, U, S]) progressLine() {
	el := time.Since(n.start)
	gap := ""
	if n.res.Final.HasGap {
		gap = fmt.Sprintf("  gap %.2g", n.res.Final.Gap)
	}
	fmt.Fprintf(n.opts.Progress, "round %d  elapsed %s  objective %.9g%s  nnz %d  updates/s %.0f\n",
		n.res.Rounds, el.Round(10*time.Millisecond), n.res.Final.Objective, gap, n.res.Final.NNZ,
		float64(n.res.Updates)/el.Seconds())
}

// finish sends the last update with the stop, takes the final reports,
// stops the scheduler and writes the outputs.
func (n *node[P, R, U, S]) finish(ctx context.Context, u U) error {
	round := n.res.Rounds + 1
	if err := wire.Publish(n.c, protocol.SubjectTask, protocol.Task[P, U]{Round: round, Update: u, Stop: true}); err != nil {
		return fmt.Errorf("coordinator: stop: %w", err)
	}
	reports := make([]S, n.opts.Workers)
	if err := n.gather(ctx, round, make([]R, n.opts.Workers), reports); err != nil {
		return err
	}
	n.res.Elapsed = time.Since(n.start)
	if _, err := n.record(n.res.Rounds, reports); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	_, err := wire.Request[protocol.PlanRequest, protocol.PlanReply[P]](sctx, n.c, protocol.SubjectPlan, protocol.PlanRequest{Round: round, Stop: true})
	cancel()
	if err != nil {
		n.log.Warn("scheduler did not acknowledge the stop", "err", err)
	}
	if n.opts.Progress != nil {
		n.progressLine()
		fmt.Fprintf(n.opts.Progress, "stopped: %s after %d rounds, %d updates, %s; median round %s\n",
			n.res.Reason, n.res.Rounds, n.res.Updates, n.res.Elapsed.Round(time.Millisecond), n.res.MedianRound())
	}
	if n.opts.Out != "" {
		if err := atomicfile.Write(n.opts.Out, func(w *bufio.Writer) error { return n.app.WriteModel(w) }); err != nil {
			return fmt.Errorf("coordinator: %w", err)
		}
	}
	if n.metrics != nil {
		if err := n.metrics.Commit(); err != nil {
			return fmt.Errorf("coordinator: %w", err)
		}
	}
	return nil
}

// abort tells every other node that the job failed.
func (n *node[P, R, U, S]) abort(cause error) {
	msg := cause.Error()
	if err := wire.Publish(n.c, protocol.SubjectTask, protocol.Task[P, U]{Stop: true, Abort: msg}); err != nil {
		n.log.Warn("abort workers", "err", err)
	}
	if err := wire.Publish(n.c, protocol.SubjectPlan, protocol.PlanRequest{Stop: true, Abort: msg}); err != nil {
		n.log.Warn("abort scheduler", "err", err)
	}
	if err := n.c.NATS().Flush(); err != nil {
		n.log.Warn("abort flush", "err", err)
	}
}
