#!/bin/bash
# Peak memory of whole LDA jobs (issue 29; bench/RESULTS.md, "LDA at PubMed
# scale: memory"): runs `strads lda` on a corpus at K = 1000 under
# /usr/bin/time -v, for each binary and worker count given, interleaved so
# that the machine's load falls alike on each, and prints a row per run:
# the peak RSS (the all-in-one command runs every role in one process, so
# that is the job's total), bytes a token, the whole job's wall time, the
# sampler's tokens/s per core, the final log-likelihood per token and the
# held-out perplexity, as the job prints them.
#
#   bench/lda/scripts/memory.sh PREFIX ITERS "WORKERS..." BINARY...
#   bench/lda/scripts/memory.sh /tmp/z10m 3 "1 2" /tmp/strads.before /tmp/strads.after
#
# PREFIX is a corpus of `strads gen lda -o PREFIX --test-docs n`. The runs'
# logs are left in PREFIX.mem.*.log.
set -eu
prefix=$1 iters=$2 workers=$3
shift 3
tokens=""
printf '%-22s %7s %10s %8s %8s %12s %12s %10s\n' binary workers peak_MiB B/token wall_s tok/s/core loglik/token perplexity
for w in $workers; do
	for bin in "$@"; do
		log=$prefix.mem.$(basename "$bin").w$w.log
		/usr/bin/time -v "$bin" lda --docword "$prefix.docword.txt" --vocab "$prefix.vocab.txt" \
			--test-docword "$prefix.test.docword.txt" --topics 1000 --iters "$iters" --workers "$w" \
			--timeout 30m --progress 0 --out "$prefix.mem.topics.txt" >"$log" 2>&1 || echo "$bin, $w workers: failed (see $log)"
		rss=$(awk '/Maximum resident set size/ {print $NF}' "$log")
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$log")
		tps=$(grep -o 'sampling [0-9.e+]* tokens/s per core' "$log" | awk '{print $2}')
		ll=$(grep -o 'log-likelihood/token [-0-9.]*' "$log" | awk '{print $2}')
		perp=$(grep -o 'held-out perplexity [0-9.]*' "$log" | awk '{print $3}')
		[ -n "$tokens" ] || tokens=$(sed -n 4,\$p "$prefix.docword.txt" | awk '{s += $3} END {print s}')
		printf '%-22s %7s %10.0f %8.0f %8.1f %12s %12s %10s\n' "$(basename "$bin")" "$w" "$((rss / 1024))" \
			"$(echo "$rss * 1024 / $tokens" | bc -l)" "$wall" "$tps" "$ll" "$perp"
	done
done
