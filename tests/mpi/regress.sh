#!/usr/bin/env bash
# The exactness regression, MPI part: the mpi-* jobs of tests/regress/jobs
# (ping-pong per protocol, VN, bidirectional sweep, one-way stream, the
# 16-rank MPI_Alltoall / MPI_Bcast benchmarks) must give --report JSON
# identical to tests/regress/ref/. One "ok"/"not ok" line per job.
exec "$(dirname "$0")/../regress/run.sh" --filter '^mpi-' "$@"
