#!/bin/sh
# The same bits on every machine (issue 49): a committed WAV's committed
# features (speech-features.npy, with pitch) encoded by both shipped
# models, the committed streams decoded to frames and audio, and two short
# training runs (a dense model with tanh latents and a prior; the speech
# recipe's GRU on those features, with the level term and a frame of
# look-ahead, then its stream of them), each output's
# SHA-256 held to tests/fixtures/arch/SHA256SUMS, on every instruction set
# the machine has
# (x86-64: scalar, avx2, avx512; aarch64: scalar, neon).
# The features of the WAV itself are held only near the committed ones:
# FFTW picks SIMD codelets by CPU (NEON on aarch64, SSE/AVX on x86), whose
# sums round differently (docs/performance.md, "On ARM").
# Usage: sh tests/arch_test.sh FRAE [RUNNER]   (from the repository root)
#   sh tests/arch_test.sh build/frae
#   sh tests/arch_test.sh build-aarch64/frae qemu-aarch64
# FRAE_ARCH_UPDATE=1 rewrites SHA256SUMS and the committed streams (from
# the x86-64 build: they are the reference).
set -u
FRAE=$1
RUNNER=${2:-}
fx=tests/fixtures/arch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { echo "    ok   $1"; pass=$((pass + 1)); }
bad() { echo "    FAIL $1"; fail=$((fail + 1)); }
fr() { $RUNNER "$FRAE" "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; return 1; }; }

# one ISA's outputs into $tmp/$1/, their sums into $tmp/$1.sums
outputs() {
    d=$tmp/$1
    mkdir -p "$d"
    export FRAE_ISA=$1
    fr encode models/speech.safetensors $fx/speech-features.npy \
        -o "$d/speech.fbs" &&
        fr encode models/speech-vbr.safetensors $fx/speech-features.npy \
            -o "$d/speech-vbr.fbs" &&
        fr decode models/speech.safetensors $fx/speech.fbs \
            -o "$d/speech.npy" --wav "$d/speech-out.wav" &&
        fr decode models/speech-vbr.safetensors $fx/speech-vbr.fbs \
            -o "$d/speech-vbr.npy" --wav "$d/speech-vbr-out.wav" &&
        fr train --sequences 8 --frames 20 --frame-dim 16 --enc 24 \
            --dec 24 --latent 6 --activation tanh --quantizer uniform:5 \
            --prior 8 --rate-lambda 0.01 --batch 4 --epochs 2 --threads 1 \
            --save "$d/dense.safetensors" &&
        fr train "$tmp/mels.npy" --audio-features --family gru \
            --quantizer binary --latent 12 --normalize on --prior 8 \
            --rate-lambda 0.0002 --level-loss 0.5 --enc 24 --dec 24 \
            --lookahead 1 --frames 50 --epochs 2 --threads 1 \
            --save "$d/gru.safetensors" &&
        fr encode "$d/gru.safetensors" "$tmp/mels.npy" -o "$d/gru.fbs" ||
        return 1
    unset FRAE_ISA
    (cd "$d" && sha256sum -- *) >"$tmp/$1.sums"
}

# the mel bands alone, which training takes (the pitch is the codec's)
/usr/bin/python3 -c "import sys, numpy as np; np.save(sys.argv[2], np.load(sys.argv[1])[:, :80])" \
    $fx/speech-features.npy "$tmp/mels.npy" || exit 1
isas=""
for isa in scalar avx2 avx512 neon; do
    if FRAE_ISA=$isa $RUNNER "$FRAE" encode models/speech.safetensors \
        $fx/speech.wav -o "$tmp/probe.fbs" >/dev/null 2>&1; then
        isas="$isas $isa"
    fi
done
echo "    instruction sets here:$isas"
first=${isas# }
first=${first%% *}
if [ "${FRAE_ARCH_UPDATE:-}" = 1 ] && [ -n "$first" ]; then
    # the new streams first, so that every decode below reads them (the
    # old ones may be another model's, which the decoder refuses)
    for m in speech speech-vbr; do
        FRAE_ISA=$first fr encode models/$m.safetensors $fx/speech-features.npy \
            -o "$fx/$m.fbs" || exit 1
    done
fi
for isa in $isas; do
    if outputs "$isa"; then
        ok "FRAE_ISA=$isa: encoded, decoded and trained"
    else
        bad "FRAE_ISA=$isa: a command failed"
    fi
done
if [ "${FRAE_ARCH_UPDATE:-}" = 1 ] && [ -n "$first" ]; then
    cp "$tmp/$first.sums" $fx/SHA256SUMS
    echo "    rewrote $fx/SHA256SUMS and the streams from FRAE_ISA=$first"
fi
for isa in $isas; do
    [ -f "$tmp/$isa.sums" ] || continue
    differ=$(diff $fx/SHA256SUMS "$tmp/$isa.sums" | sed -n 's/^> [0-9a-f]*  //p' | tr '\n' ' ')
    if [ -z "$differ" ]; then
        ok "FRAE_ISA=$isa: $(wc -l <$fx/SHA256SUMS) outputs as committed, to the bit"
    else
        bad "FRAE_ISA=$isa: differ from $fx/SHA256SUMS: $differ"
    fi
done
# the WAV's features: near the committed ones (measured: x86-64 against
# aarch64 under qemu, 8,269 of 16,646 values differ, by 4.3e-5 at most)
if fr features $fx/speech.wav --pitch -o "$tmp/features.npy"; then
    if /usr/bin/python3 - "$tmp/features.npy" $fx/speech-features.npy <<'PY'; then
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = float(np.abs(a.astype(np.float64) - b).max()) if a.shape == b.shape else 1e9
print("    features of the WAV: %d of %d values differ from the committed ones, by %.2g at most"
      % (int((a != b).sum()), b.size, d))
sys.exit(0 if d <= 1e-4 else 1)
PY
        ok "the WAV's features within 1e-4 of the committed ones"
    else
        bad "the WAV's features are more than 1e-4 from the committed ones"
    fi
else
    bad "frae features failed"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
