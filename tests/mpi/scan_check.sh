#!/usr/bin/env bash
# tests/integration/scan_check.sh for the MPI jobs of tests/regress/jobs:
# under BGLEMU_SCAN=check no round leaves out a processor that had
# something, and the reports stay identical to the references.
BGLEMU_SCAN=check exec "$(dirname "$0")/../regress/run.sh" --filter '^mpi-' "$@"
