#!/usr/bin/env bash
# bench/faults/run.sh: the fault kinds of issue 28's probe, each run as
# trials of the tests that inject it, and a table of how each trial ended:
# with the model of the job that lost nothing (bit for bit, which the tests
# check), or failed cleanly (an error naming the cause, within the seconds
# the tests allow), or not (a test failure: a different model, a hang past
# its deadline, a silent success).
#
# Usage (from the repository root):
#
#	bench/faults/run.sh [TRIALS [DIR]]    # TRIALS 5, DIR /tmp/faults
#
# Each in-process test runs TRIALS times (go test -count); the OS-process
# kill tests take TRIALS trials of each kind (-survive.trials 3·TRIALS,
# -survive.resume TRIALS). The
# go test -json output is kept in DIR; the table goes to stdout.
set -euo pipefail

TRIALS=${1:-5}
DIR=${2:-/tmp/faults}
mkdir -p "$DIR"

run() { # package, pattern, extra flags...
	local pkg=$1 pat=$2
	shift 2
	go test -json -count "$TRIALS" -timeout 60m -run "$pat" "$pkg" "$@" >>"$DIR/tests.json" || true
}
: >"$DIR/tests.json"
run ./job '^(TestSpareAnyMoment|TestLostStore|TestReplayedHeartbeats|TestSecondJobRefused|TestNATSOutageCheckpoints)$'
run ./cli '^TestSettings$/^data_changed_in_one_byte$'
go test -json -count 1 -timeout 60m -run '^(TestKillWithSpare|TestKillAndResume)$' ./cmd/strads \
	-survive.trials $((3 * TRIALS)) -survive.resume "$TRIALS" >>"$DIR/tests.json" || true

python3 - "$DIR/tests.json" <<'PY'
import json, re, statistics, sys
from collections import defaultdict

kinds = [
    ("TestSpareAnyMoment/a_worker,_no_checkpoints", "a worker lost before any checkpoint, a spare waiting", "model"),
    ("TestSpareAnyMoment/a_worker_and_the_scheduler,_no_checkpoints", "a worker and the scheduler lost together, no checkpoint", "model"),
    ("TestSpareAnyMoment/a_worker_and_the_scheduler,_checkpoints", "a worker and the scheduler lost together, checkpoints", "model"),
    ("TestSpareAnyMoment/a_worker_after_a_reconnect", "a worker lost right after a NATS restart", "model"),
    ("TestSpareAnyMoment/a_spare_lost_during_the_rollback", "a spare lost during the rollback, another waiting", "model"),
    ("TestKillWithSpare/0", "kill -9 of a worker at a random round (OS processes), spares waiting", "model"),
    ("TestKillWithSpare/1", "kill -9 of a worker before the first checkpoint (OS processes)", "model"),
    ("TestKillWithSpare/2", "kill -9 of a worker and the scheduler at once (OS processes)", "model"),
    ("TestKillAndResume/worker_1", "kill -9 of a worker, no spare: the others end, --resume", "both"),
    ("TestKillAndResume/scheduler", "kill -9 of the scheduler, no spare: the others end, --resume", "both"),
    ("TestKillAndResume/coordinator", "kill -9 of the coordinator: the others end, --resume", "both"),
    ("TestNATSOutageCheckpoints", "NATS server restarts while checkpoints are stored", "model"),
    ("TestLostStore", "the server loses the job's checkpoint buckets", "model"),
    ("TestReplayedHeartbeats", "a lost worker's heartbeats replayed, MACs and all", "clean"),
    ("TestSecondJobRefused", "a second job of a taken name (same key, other key, none)", "clean"),
    ("TestSettings/data_changed_in_one_byte", "a role reading data changed in one byte", "clean"),
]
runs = defaultdict(list)  # test → [(passed, seconds)]
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("Action") in ("pass", "fail") and e.get("Test"):
        # Repeated subtests are named name#01, name#02, …; the trials of
        # TestKillWithSpare go in turn through its three kinds.
        name = re.sub(r"#\d+", "", e["Test"])
        if m := re.fullmatch(r"TestKillWithSpare/trial_(\d+)", name):
            name = f"TestKillWithSpare/{int(m[1]) % 3}"
        runs[name].append((e["Action"] == "pass", e.get("Elapsed", 0)))

def trials(test):
    return runs.get(test, [])

print("| fault | trials | as the job that lost nothing | failed cleanly | other | median s a trial |")
print("|---|---:|---:|---:|---:|---:|")
for test, what, outcome in kinds:
    got = trials(test)
    if not got:
        print(f"| {what} (`{test}`) | 0 | | | | |")
        continue
    ok = sum(1 for p, _ in got if p)
    model = ok if outcome in ("model", "both") else 0
    clean = ok if outcome in ("clean", "both") else 0
    med = statistics.median(s for _, s in got)
    print(f"| {what} (`{test}`) | {len(got)} | {model} | {clean} | {len(got) - ok} | {med:.1f} |")
PY
