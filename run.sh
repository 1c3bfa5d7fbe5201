#!/bin/sh
# The main job: installs what is missing, builds, and trains the default
# FRAE (FRAE.md) on the built-in synthetic data.  Extra arguments go to
# 'frae train', e.g. ./run.sh --epochs 3 --feedback full
set -eu
cd "$(dirname "$0")"
sh scripts/install-deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" build/frae >/dev/null
exec build/frae train "$@"
