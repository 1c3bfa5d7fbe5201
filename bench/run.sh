#!/bin/sh
# Benchmarks frae against PyTorch side by side.  Not a test: timings on a
# shared machine are noisy, so nothing here passes or fails on speed.
set -eu
BUILD=${1:-build}
exec /usr/bin/python3 "$(dirname "$0")/run.py" "$BUILD" ${BENCH_SECONDS:+--seconds "$BENCH_SECONDS"}
