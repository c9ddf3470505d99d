#!/usr/bin/env bash
# Host cost of one round trip between two processes through the engine
# (1 hop, one-packet messages): the floor under every ping-pong latency.
set -eu
bench_rtt "${BENCH_RTT_N:-20000}"
