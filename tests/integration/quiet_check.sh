#!/usr/bin/env bash
# The engine's promises to running processors (torus-sim/tsim_quiet.c,
# packetlayer/pl.c): under BGLEMU_QUIET=check every answer a promise gave (a
# poll, an injection FIFO's room) is held against a sync's, and a rank
# whose answers differ aborts naming both. The no-MPICH jobs of
# tests/regress/jobs run so, and their reports must stay identical to the
# references (the checks' syncs charge nothing). One "ok"/"not ok" line per job.
BGLEMU_QUIET=check exec "$(dirname "$0")/../regress/run.sh" --filter '^(ml|traffic)-' "$@"
