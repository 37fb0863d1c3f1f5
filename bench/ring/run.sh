#!/bin/sh
# Issue 14, item 3: the rotation's blocks on the ring (worker to worker)
# against the star (through the coordinator), for LDA and mf's DSGD at 2
# workers: the coordinator's NATS bytes and messages per sub-round (the
# metrics CSV's bytes and msgs columns, the coordinator's connection) and
# the sub-round time (time_s between the first and the last row over
# the rounds between), 3 runs each, alternating; one line per run.
# Usage: bench/ring/run.sh STRADS_BINARY WORKDIR
set -eu
S=$1
D=$2
mkdir -p "$D"
[ -f "$D/c.docword.txt" ] || "$S" gen lda -o "$D/c" -docs 5000 -vocab 5000 -doc-len 100 -topics 20 -seed 1
[ -f "$D/r.train.txt" ] || "$S" gen mf -o "$D/r" -seed 1
for i in 1 2 3; do
	for ring in true false; do
		"$S" lda --docword "$D/c.docword.txt" --workers 2 --topics 100 --iters 20 --ring=$ring \
			--metrics "$D/lda-$ring-$i.csv" >/dev/null
		"$S" mf --train "$D/r.train.txt" --workers 2 --rank 10 --iters 20 --report-every 5 --ring=$ring \
			--metrics "$D/mf-$ring-$i.csv" >/dev/null
	done
done
for app in lda mf; do
	for ring in true false; do
		for i in 1 2 3; do
			# Rows after the first: their bytes and msgs are means per
			# round since the row before; the first row holds the start.
			awk -F, -v app=$app -v ring=$ring 'NR==1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
				NR==2 { r0 = $col["round"]; t0 = $col["time_s"]; prev = r0; next }
				{ n = $col["round"] - prev; prev = $col["round"]; b += n * $col["bytes"]; m += n * $col["msgs"]; t = $col["time_s"] }
				END { r = prev - r0; printf "%s ring=%s bytes/subround=%.0f msgs/subround=%.1f ms/subround=%.1f\n", app, ring, b / r, m / r, 1000 * (t - t0) / r }' "$D/$app-$ring-$i.csv"
		done
	done
done
