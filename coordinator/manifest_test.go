package coordinator_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/worker"
)

// TestManifestRefused checks that a node whose manifest differs from the
// job's is refused at join with a message naming it and the field, that it
// returns that message (ErrManifest), and that the coordinator fails the
// job at once with it instead of waiting for the node.
func TestManifestRefused(t *testing.T) {
	host, pid := member.Self()
	me := fmt.Sprintf("(host %s, pid %d)", host, pid)
	ns := startServer(t)
	job := protocol.Manifest{App: "counting", Settings: map[string]string{"lambda": "0.1", "rho": "0.5"}}
	good := protocol.Manifest{App: "counting", Settings: map[string]string{"lambda": "0.1"}}
	with := func(f func(*protocol.Manifest)) protocol.Manifest {
		m := good
		m.Settings = maps.Clone(good.Settings)
		f(&m)
		return m
	}
	cases := []struct {
		name      string
		job       protocol.Manifest
		worker    protocol.Manifest // the second worker's; the first's is good
		scheduler protocol.Manifest
		want      string // the refusal; "" for a job that runs
	}{
		{"the same", job, good, good, ""},
		{"a role that names no setting", job, protocol.Manifest{App: "counting"}, protocol.Manifest{}, ""},
		{"a setting", job, with(func(m *protocol.Manifest) { m.Settings["lambda"] = "0.2" }), good,
			`worker ` + me + `: setting "lambda" is 0.2, the job's is 0.1`},
		{"a setting the job lacks", job, with(func(m *protocol.Manifest) { m.Settings["seed"] = "7" }), good,
			`worker ` + me + `: setting "seed" is 7, the job has no such setting`},
		{"the app", job, with(func(m *protocol.Manifest) { m.App = "lda" }), good,
			`worker ` + me + `: app is "lda", the job's is "counting"`},
		{"the version", job, with(func(m *protocol.Manifest) { m.Version = protocol.Version + 1 }), good,
			fmt.Sprintf(`worker %s: protocol version is %d, the job's is %d`, me, protocol.Version+1, protocol.Version)},
		{"the job's data", with(func(m *protocol.Manifest) { m.Data = "10-00000000000000aa" }),
			with(func(m *protocol.Manifest) { m.Data = "10-00000000000000aa" }),
			with(func(m *protocol.Manifest) { m.Data = "10-00000000000000bb" }),
			`scheduler ` + me + `: data fingerprint is 10-00000000000000bb, the job's is 10-00000000000000aa`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := func(m protocol.Manifest) worker.Options {
				return worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Manifest: m}
			}
			o := runRoles(t, ns, fmt.Sprintf("manifest%d", i), roles[uint64, uint64, uint64, uint64]{
				prog: counting{}.program(),
				coordinator: coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 5, Manifest: tc.job,
					JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second},
				workers:    []worker.Options{opts(good), opts(tc.worker)},
				schedulers: []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Manifest: tc.scheduler}},
			})
			if tc.want == "" {
				if o.err != nil || o.res.Rounds != 5 {
					t.Fatalf("result %+v, error %v; want 5 rounds", o.res, o.err)
				}
				return
			}
			if o.err == nil || o.err.Error() != "coordinator: refused "+tc.want || !errors.Is(o.err, coordinator.ErrManifest) {
				t.Fatalf("coordinator: %v, want ErrManifest: refused %s", o.err, tc.want)
			}
			if o.took > failFast {
				t.Errorf("the job failed after %s, the join timeout is 20s", o.took)
			}
			refused := o.workers[1]
			if strings.HasPrefix(tc.want, "scheduler") {
				refused = o.schedulers[0]
			}
			if refused == nil || refused.Error() != tc.want || !errors.Is(refused, worker.ErrManifest) {
				t.Errorf("the refused node: %v, want ErrManifest: %s", refused, tc.want)
			}
		})
	}
}

// TestDataAgreed checks that, where the job has no data fingerprint, the
// nodes must agree with the first one to send one.
func TestDataAgreed(t *testing.T) {
	ns := startServer(t)
	for i, data := range [][]string{{"5-01", "5-01", ""}, {"5-01", "5-02", "5-01"}} {
		var ws []worker.Options
		for _, d := range data {
			ws = append(ws, worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Manifest: protocol.Manifest{Data: d}})
		}
		o := runRoles(t, ns, fmt.Sprintf("data%d", i), roles[uint64, uint64, uint64, uint64]{
			prog:        counting{}.program(),
			coordinator: coordinator.Options{Workers: 3, ReportEvery: 1, MaxRounds: 3, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second},
			workers:     ws,
			schedulers:  []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}},
		})
		agree := data[0] == data[1]
		switch {
		case agree && o.err != nil:
			t.Errorf("data %q: %v", data, o.err)
		// Whichever of 5-01 and 5-02 comes first, the other is refused.
		case !agree && (!errors.Is(o.err, coordinator.ErrManifest) ||
			!regexpMatch(`^coordinator: refused worker \(host .*\): data fingerprint is 5-0[12], that of worker \(host .*\), the first to send one, is 5-0[12]$`, o.err.Error())):
			t.Errorf("data %q: %v, want a refusal", data, o.err)
		}
	}
}

// TestAnotherApp checks that a worker of another app (other message types)
// is refused at join, by its app's name, rather than failing the job on a
// message it cannot decode.
func TestAnotherApp(t *testing.T) {
	ns := startServer(t)
	var werr error
	var wg sync.WaitGroup
	c := connect(t, ns, "other")
	wg.Go(func() {
		werr = worker.Run(t.Context(), c, halving{}.program().NewWorker, worker.Options{JoinTimeout: 20 * time.Second, Manifest: protocol.Manifest{App: "halving"}})
	})
	o := runRoles(t, ns, "other", roles[uint64, uint64, uint64, uint64]{
		prog:        counting{}.program(),
		coordinator: coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 3, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Manifest: protocol.Manifest{App: "counting"}},
		schedulers:  []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Manifest: protocol.Manifest{App: "counting"}}},
	})
	wg.Wait()
	if !errors.Is(o.err, coordinator.ErrManifest) || !strings.HasSuffix(o.err.Error(), `: app is "halving", the job's is "counting"`) {
		t.Errorf("coordinator: %v, want a refusal of app halving", o.err)
	}
	if !errors.Is(werr, worker.ErrManifest) {
		t.Errorf("worker: %v, want a refusal", werr)
	}
}

// TestConfigure checks that a node that was given no settings receives the
// job's through Configure before it is built, and that a failed Configure
// fails the job as a failed load does, naming the node.
func TestConfigure(t *testing.T) {
	ns := startServer(t)
	settings := map[string]string{"lambda": "0.1", "rho": "0.5"}
	var mu sync.Mutex
	var got []map[string]string
	configure := func(s map[string]string) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
		return nil
	}
	o := runRoles(t, ns, "configure", roles[uint64, uint64, uint64, uint64]{
		prog: counting{}.program(),
		coordinator: coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 3, Manifest: protocol.Manifest{Settings: settings},
			JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second},
		workers: times(2, worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Configure: configure,
			Manifest: protocol.Manifest{Settings: map[string]string{"rho": "0.5"}}}),
		schedulers: []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Configure: configure}},
	})
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(got) != 3 {
		t.Fatalf("Configure called %d times, want 3", len(got))
	}
	for _, s := range got {
		if !maps.Equal(s, settings) {
			t.Errorf("Configure(%v), want the job's %v", s, settings)
		}
	}

	host, pid := member.Self()
	o = runRoles(t, ns, "misconfigured", roles[uint64, uint64, uint64, uint64]{
		prog:        counting{}.program(),
		coordinator: coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 3, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second},
		workers: []worker.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second,
			Configure: func(map[string]string) error { return errors.New("no lambda") }}},
		schedulers: []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}},
	})
	want := fmt.Sprintf("worker shard 0 (host %s, pid %d): configure: no lambda", host, pid)
	if o.err == nil || o.err.Error() != want || o.workers[0] == nil || o.workers[0].Error() != want {
		t.Errorf("coordinator: %v, worker: %v; want %q", o.err, o.workers[0], want)
	}
}
