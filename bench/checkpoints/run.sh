#!/bin/sh
# Reproduces bench/RESULTS.md, "Checkpoints: what they cost (issue 12)",
# from the repository root: builds strads and the measuring program, then
# runs every app without checkpoints, with --checkpoint-every 1, 10 and 100,
# and --resume, 3 runs interleaved (--runs 5 for bench/RESULTS.md), under
# nice: about 4 minutes on 2 cores at load 10, 7 with --runs 5.
# The data sets are generated into $DATA (default /tmp/ckb) when missing.
set -e
DATA=${DATA:-/tmp/ckb}
go build -o /tmp/strads-bench ./cmd/strads
go build -o /tmp/strads-ckpt-bench ./bench/checkpoints
exec nice -n 10 /tmp/strads-ckpt-bench --bin /tmp/strads-bench --data "$DATA" --out bench/checkpoints/results "$@"
