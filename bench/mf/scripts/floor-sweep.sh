#!/bin/bash
# The noise-floor measurements of bench/RESULTS.md ("The noise-floor clause
# (issue 13)"): strads mf at rank 10 on a generated set, every algorithm, λ
# weighted and unweighted, with and without the validation stop, then the
# converged runs (--tol 0). Prints one line per job: its name, the result
# line's test RMSE, iterations and stop, and the load average.
#
# Usage, from the repository root:
#   go build -o /tmp/fl/strads ./cmd/strads
#   /tmp/fl/strads gen mf --users 10000 --items 2000 --rank 10 --ratings 1000000 --noise 0.5 \
#       --mean 3.5 --user-bias 0.4 --item-bias 0.6 --alpha 1 --seed 1 -o /tmp/fl/g1m
#   nice -n 10 bench/mf/scripts/floor-sweep.sh /tmp/fl/strads /tmp/fl/g1m /tmp/fl/out
set -u
strads=$1 data=$2 out=$3
mkdir -p "$out"
run() { # name, then strads mf's flags
	n=$1
	shift
	"$strads" mf --train "$data.train.txt" --test "$data.test.txt" --rank 10 --workers 2 --progress 0 \
		--metrics "$out/$n.csv" "$@" >"$out/$n.out" 2>&1
	echo "$n $(grep -oE 'test RMSE [0-9.]+ .*iterations [0-9]+ .*' "$out/$n.out" | sed 's/objective [0-9.]* //;s/rounds [0-9]* //') | $(uptime | sed 's/.*load/load/')"
}
for algo in ccd sgd als; do
	case $algo in als) it=30 ;; ccd) it=60 ;; sgd) it=100 ;; esac
	for l in 0.001 0.003 0.01 0.03; do
		run $algo-w$l-v0 --algo $algo --lambda $l --validate 0 --iters $it
		run $algo-w$l-vdef --algo $algo --lambda $l --iters $it
	done
	for l in 0.3 1 3 10; do
		run $algo-u$l-v0 --algo $algo --unweighted --lambda $l --validate 0 --iters $it
		run $algo-u$l-vdef --algo $algo --unweighted --lambda $l --iters $it
	done
done
# Converged: no --tol stop.
for l in 0.005 0.007 0.01 0.015 0.02; do run long-ccd-w$l-v0 --tol 0 --algo ccd --lambda $l --validate 0 --iters 150; done
run long-ccd-u1-v0 --tol 0 --algo ccd --unweighted --lambda 1 --validate 0 --iters 150
run long-sgd-w0.01-v0 --tol 0 --algo sgd --lambda 0.01 --validate 0 --iters 200
run long-sgd-w0.01-v0-lr0.02 --tol 0 --algo sgd --lambda 0.01 --validate 0 --iters 200 --lr 0.02 --decay 0
run long-als-w0.01-v0 --tol 0 --algo als --lambda 0.01 --validate 0 --iters 60
for a in ccd sgd als; do run long-$a-w0.01-vp10 --tol 0 --algo $a --lambda 0.01 --patience 10 --iters 200; done
run long-als-w0.01-vdef --tol 0 --algo als --lambda 0.01 --iters 200
