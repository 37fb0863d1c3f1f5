#!/usr/bin/env bash
# bench/rollback/run.sh: what a rollback to a checkpoint costs the nodes
# that survive it (DESIGN "Spares and replacement"). A Lasso job in the
# row layout on a few hundred MB of LIBSVM, its roles as separate
# processes on a `strads server --store`, with a spare worker; once both
# workers are ready and a checkpoint is committed, worker 1 is killed with
# SIGKILL. The spare takes its place, the job goes back to the checkpoint,
# and every node says how it restored (--verbose: "restored … in_place=…
# took=…"): a survivor restores its app in place, the spare builds its own
# (reads its shard) as every node did before. The coordinator's log gives
# the rollback's wall time, from "replacing lost nodes" to "rolled back;
# going on".
#
# Usage (from the repository root):
#
#	go build -o /tmp/strads-bench ./cmd/strads
#	bench/rollback/run.sh [BIN [DIR]]    # BIN /tmp/strads-bench, DIR /tmp/rbb
#
# SAMPLES (150000) sets the data's rows (2,000 features, 4 % dense: about
# 290 MB at 150,000), KILL_AFTER (8) the seconds between the workers'
# readiness and the kill, ROUNDS (3000) the job's rounds. It prints each
# node's restore line and the coordinator's two lines, and keeps every log
# in DIR/run-*/.
set -euo pipefail

BIN=${1:-/tmp/strads-bench}
DIR=${2:-/tmp/rbb}
SAMPLES=${SAMPLES:-150000}
KILL_AFTER=${KILL_AFTER:-8}
ROUNDS=${ROUNDS:-3000}

mkdir -p "$DIR"
DATA=$DIR/data-$SAMPLES.svm
if [[ ! -f $DATA ]]; then
	"$BIN" gen lasso --samples "$SAMPLES" --features 2000 --density 0.04 --seed 1 -o "$DATA.tmp"
	mv "$DATA.tmp" "$DATA"
fi
echo "data: $DATA, $(stat -c %s "$DATA") bytes"

RUN=$(mktemp -d "$DIR/run-XXXX")
PORT=$((20000 + RANDOM % 20000))
URL=nats://127.0.0.1:$PORT
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
}
trap cleanup EXIT

"$BIN" server --addr "127.0.0.1:$PORT" --store "$RUN/store" >"$RUN/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
	grep -q listening "$RUN/server.log" && break
	sleep 0.2
done

J=(--nats "$URL" --job "rb$$" --data "$DATA" --workers 2 --layout rows --lambda-ratio 0.1 --tol 0
	--max-rounds "$ROUNDS" --timeout 120s --join-timeout 300s --progress 0)
t0=$(date +%s.%N)
"$BIN" coordinator "${J[@]}" --checkpoint-every 20 --spares 1 --out "$RUN/beta.csv" --verbose 2>"$RUN/coordinator.log" &
coord=$!
pids+=($coord)
"$BIN" scheduler "${J[@]}" --verbose 2>"$RUN/scheduler.log" &
pids+=($!)
"$BIN" worker "${J[@]}" --verbose 2>"$RUN/worker0.log" &
pids+=($!)
"$BIN" worker "${J[@]}" --verbose 2>"$RUN/worker1.log" &
victim=$!
pids+=($victim)
# Both workers ready: the spare joins after them, and the checkpoints begin.
until grep -q 'msg=ready' "$RUN/worker0.log" && grep -q 'msg=ready' "$RUN/worker1.log"; do
	sleep 0.2
done
echo "workers ready after $(echo "$(date +%s.%N) - $t0" | bc) s"
"$BIN" worker "${J[@]}" --verbose 2>"$RUN/spare.log" &
pids+=($!)
sleep "$KILL_AFTER"
kill -9 "$victim"
echo "worker 1 killed"
if ! wait "$coord"; then
	echo "the coordinator failed: $RUN/coordinator.log" >&2
	tail -5 "$RUN/coordinator.log" >&2
	exit 1
fi
# ts LINE: the time of a log line, in seconds.
ts() { date -d "$(sed -E 's/^time=([^ ]*) .*/\1/' <<<"$1")" +%s.%N; }
# Each node's time from the rollback's news (a spare: its place) to its
# readiness, from its log: what the job waits for (either binary logs it).
for f in scheduler worker0 spare; do
	from=$(grep -E 'msg="rolling back"' "$RUN/$f.log" | tail -1 || true)
	[[ $f == spare ]] && from=$(grep -E 'msg=joined' "$RUN/$f.log" | tail -1)
	ready=$(grep -E 'msg=ready' "$RUN/$f.log" | tail -1)
	printf '%-9s back to ready %.3f s; %s\n' "$f:" "$(echo "$(ts "$ready") - $(ts "$from")" | bc)" \
		"$(grep -o 'msg=restored.*' "$RUN/$f.log" || echo "(no restore line: an older binary)")"
done
grep -E 'replacing lost nodes|rolled back; going on' "$RUN/coordinator.log" | cut -c1-160
echo "logs in $RUN"
