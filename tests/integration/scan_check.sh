#!/usr/bin/env bash
# The processors a round leaves out (torus-sim/tsim_engine.c, "which
# processors a round looks at": drain, wake_if_ready, the horizon, the
# syncs, the promises) had nothing to find there: BGLEMU_SCAN=check verifies
# it every round and aborts naming one that had. The no-MPICH jobs of
# tests/regress/jobs run so, twice each (a processor that changes between
# the engine's looks does so only now and then), and their reports must
# stay identical to the references. One "ok"/"not ok" line per job.
BGLEMU_SCAN=check exec "$(dirname "$0")/../regress/run.sh" --filter '^(ml|traffic)-' --twice "$@"
