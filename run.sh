#!/bin/sh
# The main job: frae's shipped speech codecs at work.  Installs what is
# missing, builds, makes the synthetic speech corpus (espeak-ng, flite) and
# the held-out side of the recorded human one (Fish Fillets' Dutch cast,
# scripts/make-corpus.sh --human), codes both held-out sets with the
# shipped models (models/: 1.6 kbit/s fixed, variable rate and 3.2 kbit/s
# fixed, trained on the synthetic training voices, the human ones (the
# Czech cast) and 44 sets of many voices, some under drawn conditions),
# runs Codec2 and Opus on the same audio, measures every system through
# its decoded audio, prints a table for each set and writes the WAVs,
# pictures and the listening page to demo/ (about 4 minutes on 2 cores;
# it opens nothing).
#   ./run.sh --train  also trains the 1.6 kbit/s codec as make models does
#                     (all four training sets, 32 epochs: the same bytes as
#                     models/speech.safetensors; installs the voices'
#                     packages, WITH_VOICES=1; about 25 minutes more)
#   ./run.sh --full   the full study instead: trains every model (the
#                     rate-quality curve, search, DTX, denoising; on the
#                     synthetic voices alone), checks the issues' bars
#                     and codes the human held-out clips too (a second
#                     table; about 20 minutes in all)
# Other arguments go to tools/demo.py (e.g. --full --epochs 20).
set -eu
cd "$(dirname "$0")"
echo "frae main job: installing what is missing (scripts/install-deps.sh), building"
sh scripts/install-deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" build/frae >/dev/null
exec /usr/bin/python3 tools/demo.py "$@"
