#!/usr/bin/env bash
# The exactness regression, no-MPICH part: the message-layer (ml-*) and
# bgl-traffic (traffic-*) jobs of tests/regress/jobs must give --report JSON
# identical to tests/regress/ref/. One "ok"/"not ok" line per job.
exec "$(dirname "$0")/../regress/run.sh" --filter '^(ml|traffic)-' "$@"
