#!/usr/bin/env bash
# The determinism soak (issue 26): every MPI program of tests/mpi, run in
# -clock none idle and under 2 CPU hogs, whole --report JSON compared; a
# difference fails with the first differing field. tests/mpi/determinism.sh
# with SOAK=1 (the quick part, two programs, runs in make test). About
# 5-10 minutes on 2 cores. Fails if any program's runs differ.
set -u
SOAK=1 bash tests/mpi/determinism.sh 2>&1 | sed 's/^/  /'
exit "${PIPESTATUS[0]}"
