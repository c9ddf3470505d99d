#!/usr/bin/env bash
# tests/integration/quiet_check.sh for the MPI jobs of tests/regress/jobs:
# under BGLEMU_QUIET=check no promise answered other than a sync, and the
# reports stay identical to the references.
BGLEMU_QUIET=check exec "$(dirname "$0")/../regress/run.sh" --filter '^mpi-' "$@"
