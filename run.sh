#!/bin/sh
# The main job: the speech demo.  Installs what is missing, builds, makes
# the synthetic speech corpus (espeak-ng, flite), trains an FRAE codec on it,
# codes the held-out voices, writes decoded WAVs and figures to demo/, and
# compares with Codec2 and Opus.  Arguments go to tools/demo.py
# (e.g. --epochs 20).
set -eu
cd "$(dirname "$0")"
sh scripts/install-deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" build/frae >/dev/null
exec /usr/bin/python3 tools/demo.py "$@"
