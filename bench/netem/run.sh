#!/bin/sh
# Issue 29, goal 4: strads across a slow network. Three network namespaces
# joined by virtual Ethernet links stand for three machines: A runs the
# NATS server, the coordinator and the scheduler; B and C a worker each,
# which reach the server only through netem (bench/netem), a proxy in A
# that adds a round-trip time and limits each direction of each
# connection to 1 Gbit/s. For each RTT (0, 1 ms, 10 ms), RUNS times:
#   - LDA and mf (DSGD), 2 workers, the ring (worker to worker) and the
#     star (through the coordinator);
#   - the Lasso's row layout at --depth 1 and --depth 4.
# One line per job: app, rtt, variant, run, wall seconds of the
# coordinator's process, the rounds' seconds (the metrics CSV's time_s,
# from its first row to its last), rounds, and the coordinator's NATS bytes and messages per round
# (the metrics' means, weighted by rounds).
#
# Usage (as root, with unshare, nsenter and ip):
#   go build -o /tmp/strads ./cmd/strads && go build -o /tmp/netem ./bench/netem
#   sh bench/netem/run.sh /tmp/strads /tmp/netem /tmp/netem-work [RUNS]
set -eu
S=$(realpath "$1")
N=$(realpath "$2")
D=$3
RUNS=${4:-3}
mkdir -p "$D"
D=$(realpath "$D")

[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (network namespaces)" >&2; exit 2; }

# The machines: a process holds each namespace.
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM
ns() { # ns VAR: a namespace held by a sleep, its pid in VAR
	unshare --net sleep 100000 &
	p=$!
	pids="$pids $p"
	while [ "$(readlink /proc/$p/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.01; done
	eval "$1=$p"
}
ns A
ns B
ns C
inA() { nsenter -t "$A" -n "$@"; }
for m in $A $B $C; do nsenter -t "$m" -n ip link set lo up; done
inA ip link add ab type veth peer name ba netns "$B"
inA ip link add ac type veth peer name ca netns "$C"
inA ip addr add 10.77.1.1/24 dev ab
inA ip link set ab up
inA ip addr add 10.77.2.1/24 dev ac
inA ip link set ac up
nsenter -t "$B" -n ip addr add 10.77.1.2/24 dev ba
nsenter -t "$B" -n ip link set ba up
nsenter -t "$C" -n ip addr add 10.77.2.2/24 dev ca
nsenter -t "$C" -n ip link set ca up

# The data (deterministic by seed).
[ -f "$D/c.docword.txt" ] || "$S" gen lda -o "$D/c" -docs 10000 -vocab 10000 -doc-len 100 -topics 20 -seed 1 >/dev/null
[ -f "$D/r.train.txt" ] || "$S" gen mf -o "$D/r" -ratings 2000000 -seed 1 >/dev/null
[ -f "$D/l.svm" ] || "$S" gen lasso --samples 2000 --features 2000 --density 0.05 --true-nnz 100 --seed 1 -o "$D/l.svm" >/dev/null

# Started with nsenter itself, not a shell function, so that $! is the
# process (nsenter execs it) and kill reaches it.
nsenter -t "$A" -n "$S" server --addr 127.0.0.1:4222 >"$D/server.log" 2>&1 &
pids="$pids $!"
sleep 1

# job NAME APP VARIANT RTT RUN COMMON...: the roles of one job, the
# workers in B and C through netem, and its line.
job() {
	name=$1 app=$2 variant=$3 rtt=$4 run=$5
	shift 5
	m="$D/$name.csv"
	rm -f "$m"
	nsenter -t "$B" -n "$S" worker --app "$app" --nats nats://10.77.1.1:14222 --job "$name" "$@" >"$D/$name.w1.log" 2>&1 &
	w1=$!
	nsenter -t "$C" -n "$S" worker --app "$app" --nats nats://10.77.2.1:14222 --job "$name" "$@" >"$D/$name.w2.log" 2>&1 &
	w2=$!
	nsenter -t "$A" -n "$S" scheduler --app "$app" --nats nats://127.0.0.1:4222 --job "$name" "$@" >"$D/$name.s.log" 2>&1 &
	sc=$!
	t0=$(date +%s.%N)
	inA "$S" coordinator --app "$app" --nats nats://127.0.0.1:4222 --job "$name" --workers 2 --metrics "$m" --progress 0 "$@" >"$D/$name.c.log" 2>&1
	t1=$(date +%s.%N)
	wait $w1 $w2 $sc
	awk -F, -v app="$app" -v rtt="$rtt" -v variant="$variant" -v run="$run" -v wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '
		NR == 1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
		NR == 2 { prev = $col["round"]; t0 = $col["time_s"]; t = t0; next }
		{ n = $col["round"] - prev; prev = $col["round"]; R += n; b += n * $col["bytes"]; ms += n * $col["msgs"]; t = $col["time_s"] }
		END { printf "%s rtt=%s %s run=%d wall=%.2f fit=%.2f rounds=%d bytes/round=%.0f msgs/round=%.1f\n", app, rtt, variant, run, wall, t - t0, prev, (R ? b / R : 0), (R ? ms / R : 0) }' "$m"
}

for rtt in 0ms 1ms 10ms; do
	nsenter -t "$A" -n "$N" -listen 0.0.0.0:14222 -upstream 127.0.0.1:4222 -rtt "$rtt" -rate 1e9 >"$D/netem-$rtt.log" 2>&1 &
	proxy=$!
	sleep 0.5
	kill -0 $proxy 2>/dev/null || { echo "run.sh: netem at $rtt: $(cat "$D/netem-$rtt.log")" >&2; exit 1; }
	for run in $(seq 1 "$RUNS"); do
		for ring in true false; do
			v=ring
			[ $ring = true ] || v=star
			job "lda-$rtt-$v-$run" lda "$v" "$rtt" "$run" --docword "$D/c.docword.txt" --topics 100 --iters 20 --ring=$ring
			job "mf-$rtt-$v-$run" mf "$v" "$rtt" "$run" --train "$D/r.train.txt" --rank 10 --iters 20 --report-every 5 --ring=$ring
		done
		for depth in 1 4; do
			job "lasso-$rtt-d$depth-$run" lasso "depth=$depth" "$rtt" "$run" --data "$D/l.svm" --lambda-ratio 0.05 \
				--layout rows --depth $depth --max-rounds 2000 --tol 0 --intercept=false
		done
	done
	kill $proxy
	wait $proxy 2>/dev/null || true
done
