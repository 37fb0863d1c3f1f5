#!/bin/sh
# scaling.sh: the Lasso's column layout at 1, 2, 4, 8 workers on bench/peers's
# shapes (bench/RESULTS.md, "Two workers against one"), whole jobs of a
# prebuilt strads, with no network.
#
#   bench/peers/scripts/scaling.sh STRADS [STRADS2 ...]
#
# Given several binaries (e.g. before and after a change), their runs are
# interleaved. For each shape it generates the data (strads gen lasso, seed 1,
# bench/peers's sizes and file names, kept in $DATA), finds the optimum F* with
# the first binary at one worker (--tol 1e-10), then runs every binary at
# every worker count with --target F*·(1 + 1e-6) --tol 0, as bench/peers does,
# and prints one line per run and the medians: rounds, fit (first round to the
# end, as strads prints it), whole job (process start to exit) and the job's
# CPU time (user + system) in seconds and peak resident memory in MB, where
# GNU time is installed ($TIME_BIN, default /usr/bin/time).
#
# Environment: SHAPES (default "b c"; also a, bench/peers's large d and e, and
# f and h, 20,000 × 2,000,000 and 2,000,000 × 20,000 with 10^8 non-zeros),
# WORKERS (default "1 2 4 8"),
# RUNS (default 3), DATA (default ${TMPDIR:-/tmp}/strads-peers-data), FSTAR
# (F* of the one shape in SHAPES, known: skips the run that finds it),
# PROBLEM (lasso; logreg takes the logistic problem, without an intercept).
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 STRADS [STRADS2 ...]" >&2
	exit 2
fi
SHAPES=${SHAPES:-b c}
WORKERS=${WORKERS:-1 2 4 8}
RUNS=${RUNS:-3}
DATA=${DATA:-${TMPDIR:-/tmp}/strads-peers-data}
PROBLEM=${PROBLEM:-lasso}
mkdir -p "$DATA"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }

# timed runs a command, recording its CPU time (user + system) and peak
# resident set (KB) in $TMP/cpu where GNU time is installed.
TIME_BIN=${TIME_BIN:-/usr/bin/time}
TIME=""
if [ -x "$TIME_BIN" ]; then TIME=yes; fi
timed() {
	if [ -n "$TIME" ]; then
		"$TIME_BIN" -o "$TMP/cpu" -f "%U %S %M" "$@"
	else
		"$@"
	fi
}

# shape NAME sets FILE, the gen flags GEN and the fit flags FIT.
shape() {
	case $1 in
	a) GEN="120 12000 1 200 0.9 20"; FIT="--lambda-ratio 0.1 --intercept=true" ;;
	b) GEN="5000 50000 0.018 0 0 500"; FIT="--lambda-ratio 0.01 --intercept=false" ;;
	c) GEN="100000 1000 0.02 0 0 100"; FIT="--lambda-ratio 0.01 --intercept=true" ;;
	d) GEN="20000 500000 0.0025 5000 0.8 1000"; FIT="--lambda-ratio 0.01 --intercept=false" ;;
	e) GEN="1000000 20000 0.0025 0 0 200"; FIT="--lambda-ratio 0.01 --intercept=true" ;;
	f) GEN="20000 2000000 0.0025 20000 0.8 4000"; FIT="--lambda-ratio 0.01 --intercept=false" ;;
	h) GEN="2000000 20000 0.0025 0 0 200"; FIT="--lambda-ratio 0.01 --intercept=true" ;;
	*) echo "unknown shape $1 (a, b, c, d, e, f or h)" >&2; exit 2 ;;
	esac
	if [ "$PROBLEM" = logreg ]; then
		FIT=$(echo "$FIT" | sed 's/--intercept=true/--intercept=false/')
	fi
	set -- $GEN
	FILE="$DATA/$PROBLEM-$1x$2-d$3-g$4-c$5-k$6-s1.svm"
	if [ ! -f "$FILE" ]; then
		labels=""
		[ "$PROBLEM" = logreg ] && labels="--labels pm1"
		"$STRADS" gen "$PROBLEM" --samples "$1" --features "$2" --density "$3" --corr-groups "$4" \
			--corr "$5" --true-nnz "$6" --seed 1 $labels -o "$FILE" >&2
	fi
}

# final LOG prints "rounds fit" from strads's final line.
final() {
	sed -n 's/^objective .* rounds \([0-9]*\) .* time \([0-9.]*\)s .*/\1 \2/p' "$1" | tail -1
}

# median reads numbers, one a line, and prints their median.
median() {
	sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

STRADS=$1
echo "# $(uname -n), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# shape binary workers run rounds fit_s job_s cpu_s rss_mb status"
for s in $SHAPES; do
	shape "$s"
	fstar=${FSTAR:-}
	if [ -z "$fstar" ]; then
		"$STRADS" "$PROBLEM" --data "$FILE" $FIT --workers 1 --tol 1e-10 --progress 0 --out "$TMP/opt.csv" >"$TMP/opt.log" 2>&1
		fstar=$(sed -n 's/^objective \([^ ]*\) .*/\1/p' "$TMP/opt.log" | tail -1)
	fi
	target=$(awk -v f="$fstar" 'BEGIN {printf "%.17g", f * (1 + 1e-6)}')
	echo "# shape $s: $FILE, $FIT, F* = $fstar, target $target"
	for r in $(seq "$RUNS"); do
		for w in $WORKERS; do
			b=0
			for bin in "$@"; do
				b=$((b + 1))
				t0=$(now)
				if timed "$bin" "$PROBLEM" --data "$FILE" $FIT --workers "$w" --target "$target" --tol 0 \
					--progress 0 --out "$TMP/m.csv" >"$TMP/run.log" 2>&1; then
					status=ok
				else
					status=failed
				fi
				t1=$(now)
				rf=$(final "$TMP/run.log")
				rounds=${rf% *} fit=${rf#* }
				if [ -z "$rf" ]; then rounds=- fit=-; fi
				job=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
				cpu=- rss=-
				if [ -n "$TIME" ]; then
					cpu=$(tail -1 "$TMP/cpu" | awk '{printf "%.2f", $1 + $2}')
					rss=$(tail -1 "$TMP/cpu" | awk '{printf "%.0f", $3 / 1024}')
				fi
				echo "$s $b $w $r $rounds $fit $job $cpu $rss $status" | tee -a "$TMP/runs"
			done
		done
	done
done
echo "# medians: shape binary workers rounds fit_s job_s cpu_s rss_mb"
awk '{print $1, $2, $3}' "$TMP/runs" | sort -u | sort -k1,1 -k2,2n -k3,3n | while read -r s b w; do
	sel() { awk -v s="$s" -v b="$b" -v w="$w" -v c="$1" '$1 == s && $2 == b && $3 == w {print $c}' "$TMP/runs" | median; }
	echo "$s $b $w $(sel 5) $(sel 6) $(sel 7) $(sel 8) $(sel 9)"
done
