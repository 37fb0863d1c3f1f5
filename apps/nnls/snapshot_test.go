package nnls

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/internal/sealtest"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/local"
)

// TestRestore runs NNLS jobs with and without moving every role to a new
// one restored from its snapshot every k rounds (local.Options.RestoreEvery)
// and checks that they end alike: the same model, bit for bit, the same
// reports and the same stop; and so with the roles restored in place, as a
// rollback to a checkpoint does (local.Options.RestoreInPlace).
func TestRestore(t *testing.T) {
	for _, tc := range []struct {
		workers, parts, block int
		tol                   float64
	}{
		{1, 1, 1, 1e-9}, {2, 1, 3, 1e-9}, {3, 2, 2, 0}, {2, 3, 1, 1e-10},
	} {
		t.Run(fmt.Sprintf("workers=%d/parts=%d/block=%d", tc.workers, tc.parts, tc.block), func(t *testing.T) {
			cfg := Config{Rows: 120, Cols: 12, Seed: 3, Block: tc.block}
			pc := pipeline.Config{Workers: tc.workers, Parts: tc.parts, Depth: 1, ReportEvery: 4, Tol: tc.tol, MaxRounds: 300}
			// The workers keep their contract (schmp.Worker).
			if _, _, err := local.Run(context.Background(), Program(cfg), local.Options{Config: pc, CheckContract: true}); err != nil {
				t.Fatal(err)
			}
			testhelper.CheckRestores(t, Program(cfg), pc, nil, 1, 3, 7)
		})
	}
}

// TestRestoreBad checks that a snapshot that does not fit a role, or
// bytes that are no snapshot, are an error on Restore.
func TestRestoreBad(t *testing.T) {
	cfg := Config{Rows: 40, Cols: 6, Seed: 3}
	w0, _ := NewWorker(cfg, 0, 2)
	w1, _ := NewWorker(cfg, 1, 2)
	s0, _ := NewScheduler(cfg, 0, 2)
	s1, _ := NewScheduler(cfg, 1, 2)
	c, _ := NewCoordinator(cfg)
	c2, _ := NewCoordinator(Config{Rows: 40, Cols: 7, Seed: 3})
	wb, sb, cb := sealtest.Snap(t, w0), sealtest.Snap(t, s0), sealtest.Snap(t, c)
	for _, tc := range []struct {
		name string
		into interface{ Restore([]byte) error }
		b    []byte
	}{
		{"worker of another shard", w1, wb},
		{"scheduler of another part", s1, sb},
		{"coordinator of another size", c2, cb},
		{"worker from a scheduler", w0, sb},
		{"truncated worker", w0, wb[:len(wb)-3]},
		{"truncated scheduler", s0, sb[:len(sb)/2]},
		{"truncated coordinator", c, cb[:len(cb)-1]},
		{"empty", c, nil},
		{"garbage", w0, []byte("\xdf\xff\xff\xff\xffgarbage")},
		{"version 1, unsealed", c, unsealedV1(t, cb)},
	} {
		if err := tc.into.Restore(tc.b); err == nil {
			t.Errorf("%s: no error", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
}

// unsealedV1 returns snapshot b's body as version 1 encoded it: bare
// msgpack with a version field.
func unsealedV1(t *testing.T, b []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := unseal(b, kindCoordinator, &m); err != nil {
		t.Fatal(err)
	}
	m["version"] = 1
	b, err := codec.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreSealed checks that every role's snapshot is sealed: that its
// own body sealed again restores, and that a snapshot of another kind or
// version, an unsealed one of version 1, a truncated one or one with a
// byte changed is an error that names the role, and leaves it as it was.
func TestRestoreSealed(t *testing.T) {
	cfg := Config{Rows: 40, Cols: 6, Seed: 3}
	w, err := NewWorker(cfg, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScheduler(cfg, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCoordinator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind, other string
		role        sealtest.Role
	}{
		{kindWorker, kindScheduler, w},
		{kindScheduler, kindCoordinator, s},
		{kindCoordinator, kindWorker, c},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			sealed := sealtest.Sealed{Kind: tc.kind, Version: snapshotVersion, Others: []string{tc.other, strings.Replace(tc.kind, "nnls/", "lasso/", 1)},
				Unsealed: map[string]any{"version": 1}}
			sealed.Check(t, tc.role)
		})
	}
}
