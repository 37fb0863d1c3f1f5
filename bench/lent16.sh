#!/bin/bash
# lent16.sh: the runs that need the lent 16-core machine, in one go (issues
# 26 and 29; bench/RESULTS.md "Sixteen cores"), each result kept as soon as
# it is in, so that a run cut short still gives what finished.
#
#   bench/lent16.sh STRADS SSP OUT
#
# STRADS is a built strads, SSP a built bench/ssp; OUT gets r.tgz (the
# summaries, logs and metrics; the data stays out). The parts, in order:
#
#  1. the parameter server's modes and CCD++ on 1, 2, 8, 16 workers, then a
#     straggler that comes and goes on 8 (bench/ssp, 1.5M ratings);
#  2. scheduled mf, rank 40, default flags, on a Netflix-shaped 10M-rating
#     set (RESULTS "Netflix scale: memory"'s n10m) at 1, 2, 16 workers;
#  3. the same on the 100M set (n100m) at 16 workers (generated while 2
#     runs).
#
# SMALL=1 runs every part at a thousandth of the size, to check the script.
set -u
S=$(realpath "$1") SSP=$(realpath "$2") OUT=$3
W=$(mktemp -d)
mkdir -p "$OUT" "$W/res" "$W/data"
div=1
[ "${SMALL:-0}" = 1 ] && div=1000
log() { echo "$(date +%T) $*" | tee -a "$W/res/log.txt"; }
pack() {
	local t
	t=$(mktemp "$OUT/r.XXXXXX") && tar czf "$t" -C "$W/res" . && mv "$t" "$OUT/r.tgz"
}

# measure NAME CMD...: runs CMD with its output in res/NAME.out, and logs its
# wall time and peak resident memory (VmHWM, polled; one process holds every
# role of an all-in-one job).
measure() {
	local name=$1
	shift
	local t0 hwm=0 h
	t0=$(date +%s.%N)
	"$@" >"$W/res/$name.out" 2>&1 &
	local pid=$!
	while kill -0 $pid 2>/dev/null; do
		h=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null)
		[ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
		sleep 0.2
	done
	wait $pid
	local rc=$?
	log "$name rc=$rc wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')s peak=$((hwm / 1024))MB"
	pack
}

log "machine: $(nproc) cores, $(awk '/MemTotal/ {print int($2/1048576)}' /proc/meminfo) GiB, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
log "strads: $("$S" version 2>&1 | head -1)"

# 1. The parameter server (issue 26).
sspargs=(--strads "$S" --dir "$W/data/ssp" --ratings $((1500000 / div)) --users $((20000 / div + 200)) --items $((4000 / div + 100)) --targets 0.14,0.145)
measure ssp-scaling "$SSP" "${sspargs[@]}" --variants bsp,ssp:3,essp:3,async,ccd --workers 1,2,8,16 --slow 1 --runs 3
measure ssp-straggler "$SSP" "${sspargs[@]}" --reuse --variants bsp,ssp:3,essp:3,async --workers 8 --slow 2t --runs 3
cp "$W"/data/ssp/*.csv "$W/res/" 2>/dev/null
pack

# 2 and 3. Scheduled mf at Netflix's shape (issue 29).
gen() { # gen NAME USERS RATINGS
	measure "gen-$1" "$S" gen mf --users "$2" --items 17770 --rank 10 --ratings "$3" --noise 0.5 --mean 3.6 \
		--user-bias 0.4 --item-bias 0.5 --alpha 1 --test-fraction 0.02 --seed 1 -o "$W/data/$1"
}
mf() { # mf NAME SET WORKERS
	measure "$1" "$S" mf --train "$W/data/$2.train.txt" --test "$W/data/$2.test.txt" --rank 40 --workers "$3" \
		--metrics "$W/res/$1.csv" --out "$W/data/$1" --join-timeout 10m
}
gen n10m $((48000 / div + 100)) $((10000000 / div))
# n100m's generation (one core) overlaps the runs of 1 and 2 workers.
gen n100m $((480000 / div + 100)) $((100000000 / div)) &
for w in 1 2; do
	mf "n10m-w$w" n10m $w
done
wait
mf n10m-w16 n10m 16
rm -f "$W"/data/n10m*
mf n100m-w16 n100m 16
log done
pack
