#!/bin/sh
# make install into a temporary prefix, build examples/stream.c against the
# installed library with pkg-config, and check it streams frames exactly as
# 'frae predict' reconstructs them.  Prints "N passed, N failed" last.
BUILD=${1:-build}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "    ok   $1"; }
bad() { fail=$((fail + 1)); echo "    FAIL $1"; }
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

if make -s BUILD="$BUILD" install PREFIX="$prefix" >"$prefix/log" 2>&1 &&
    [ -f "$prefix/include/frae.h" ] && [ -f "$prefix/lib/libfrae.a" ] &&
    [ -f "$prefix/include/frae_audio.h" ] && [ -f "$prefix/lib/libfrae-audio.so" ] &&
    [ -f "$prefix/include/frae_train.h" ] && [ -f "$prefix/include/frae_codec.h" ] &&
    [ -x "$prefix/bin/frae" ] && [ -f "$prefix/lib/pkgconfig/frae.pc" ] &&
    [ -f "$prefix/lib/pkgconfig/frae-audio.pc" ]; then
    ok "make install PREFIX=...: headers, libraries, frae, frae.pc, frae-audio.pc"
else
    bad "make install: $(cat "$prefix/log")"
fi
# the shipped models: installed, found by the installed frae beside it
# (PREFIX/bin/../share/frae/models), and by libfrae.so beside itself
# (PREFIX/lib/../share/frae/models), the tree's models/ out of reach
if cmp -s models/speech.safetensors "$prefix/share/frae/models/speech.safetensors" &&
    cmp -s models/MANIFEST "$prefix/share/frae/models/MANIFEST" &&
    (cd / && env -u FRAE_MODELS "$prefix/bin/frae" models) >"$prefix/models.out" 2>&1 &&
    grep -q "^$prefix/share/frae/models:" "$prefix/models.out" &&
    ! grep -q "$PWD/models" "$prefix/models.out"; then
    ok "make install: the shipped models in PREFIX/share/frae/models, which frae models lists"
else
    bad "installed models: $(cat "$prefix/models.out" 2>/dev/null)"
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs frae 2>&1)
if cc examples/stream.c $flags -o "$prefix/stream" 2>"$prefix/log"; then
    ok "the example builds with \$(pkg-config --cflags --libs frae)"
else
    bad "building the example: $flags: $(cat "$prefix/log")"
fi
# the C default model through the installed shared library: found beside it
mkdir -p "$prefix/empty"
if cc -std=c11 tests/c/default_model.c $flags -o "$prefix/default_model" 2>"$prefix/log" &&
    (cd / && env -u FRAE_MODELS LD_LIBRARY_PATH="$prefix/lib" "$prefix/default_model" \
        "$prefix/share/frae/models/speech.safetensors" "$prefix/empty") >"$prefix/dm.out" 2>&1; then
    ok "frae_load_shipped(NULL) through the installed libfrae.so: PREFIX/share/frae/models"
else
    bad "the C default model, installed: $(cat "$prefix/log" "$prefix/dm.out" 2>/dev/null | tail -n 5)"
fi
# the training API from the installed headers alone: a fit over arrays
if cc examples/fit.c $flags -lm -o "$prefix/fit" 2>"$prefix/log" &&
    LD_LIBRARY_PATH="$prefix/lib" "$prefix/fit" "$prefix/fit.safetensors" \
        latent 6 enc 32 dec 32 epochs 2 >"$prefix/fit.out" 2>&1 &&
    grep -q "^epoch 2/2" "$prefix/fit.out" &&
    "$prefix/bin/frae" info "$prefix/fit.safetensors" >/dev/null 2>&1; then
    ok "examples/fit.c builds with pkg-config and trains through frae_train.h"
else
    bad "examples/fit.c: $(cat "$prefix/log" "$prefix/fit.out" 2>/dev/null)"
fi
# libfrae.a itself, its dependencies (shared: Debian ships libsndfile
# without a static archive) from pkg-config --static
deps=$(pkg-config --static --libs frae | sed 's/-lfrae//')
if cc examples/stream.c $(pkg-config --cflags frae) "$prefix/lib/libfrae.a" \
    $deps -o "$prefix/stream_static" 2>"$prefix/log"; then
    ok "and with libfrae.a, dependencies from pkg-config --static"
else
    bad "static libfrae: $deps: $(cat "$prefix/log")"
fi

# the Python module: make install-python, then import it from there
if [ -f "$BUILD/python/frae/__init__.py" ]; then
    site=$(/usr/bin/python3 -c "import sys; print('python%d.%d' % sys.version_info[:2])")
    if make -s BUILD="$BUILD" install-python PREFIX="$prefix" >"$prefix/log" 2>&1 &&
        out=$(cd / && PYTHONPATH="$prefix/lib/$site/dist-packages" /usr/bin/python3 -c "
import numpy as np, frae
m = frae.FRAE(frame_dim=6, history=2, enc=(16,), latent=3, dec=(16,), quantizer='binary')
x = np.sin(np.arange(40)[None, :, None] * np.linspace(0.1, 0.5, 6)).astype(np.float32)
h = m.fit(x, epochs=2, batch_size=1, verbose=0)
print(frae.__file__.startswith('$prefix'), len(h['loss']), m.decode(m.encode(x)).shape)
" 2>&1) && [ "$out" = "True 2 (1, 40, 6)" ]; then
        ok "make install-python PREFIX=...: import frae from there, fit, encode, decode"
    else
        bad "make install-python: $out $(cat "$prefix/log")"
    fi
fi

cd "$prefix" || exit 1
"$prefix/bin/frae" train --frame-dim 10 --history 3 --enc 32 --latent 6 \
    --dec 32 --quantizer uniform:4 --epochs 2 --sequences 8 --frames 40 \
    --save m.safetensors >/dev/null 2>&1
/usr/bin/python3 - <<'PY'
import numpy as np
t = np.arange(150)[:, None]
x = (0.6 * np.sin(0.07 * t + np.arange(10)[None, :])).astype("<f4")
np.save("x.npy", x)
x.tofile("x.f32")
PY
# streaming MODEL through the example (shared and static builds) must give
# exactly what frae predict gives
stream_check() {
    model=$1 what=$2
    "$prefix/bin/frae" predict "$model" x.npy -o pred.npy >/dev/null 2>&1
    LD_LIBRARY_PATH="$prefix/lib" ./stream "$model" <x.f32 >y.f32 2>log
    status=$?
    ./stream_static "$model" <x.f32 >y_static.f32 2>/dev/null
    same=$(/usr/bin/python3 -c "
import numpy as np
p = np.load('pred.npy'); y = np.fromfile('y.f32', '<f4').reshape(p.shape)
s = np.fromfile('y_static.f32', '<f4').reshape(p.shape)
print(int(np.array_equal(p, y) and np.array_equal(p, s)))" 2>&1)
    if [ "$status" = 0 ] && [ "$same" = 1 ]; then
        ok "$what streams stdin to stdout through the API exactly as frae predict ($(cat log))"
    else
        bad "$what: status $status, same '$same', $(cat log)"
    fi
}
stream_check m.safetensors "a dense model"
# the deployment form: bf16 weights, through the same example
"$prefix/bin/frae" convert m.safetensors -o m16.safetensors --weights bf16 \
    >/dev/null 2>&1
stream_check m16.safetensors "a bf16 model"
# the recurrent family, f32 and bf16
"$prefix/bin/frae" train --family gru --frame-dim 10 --history 1 --enc 24 \
    --latent 6 --dec 24 --quantizer uniform:4 --epochs 2 --sequences 8 \
    --frames 40 --save g.safetensors >/dev/null 2>&1
stream_check g.safetensors "a GRU model"
"$prefix/bin/frae" convert g.safetensors -o g16.safetensors --weights bf16 \
    >/dev/null 2>&1
stream_check g16.safetensors "a bf16 GRU model"

# the public surface: each shared library exports exactly the functions its
# header declares with FRAE_API, and the codec's library needs none of the
# audio libraries
cd "$OLDPWD" || exit 1
for pair in "libfrae.so include/frae.h include/frae_codec.h include/frae_train.h include/frae_io.h" \
            "libfrae-audio.so include/frae_audio.h"; do
    set -- $pair
    lib=$1
    shift
    # the name before the '(' of the declaration after each FRAE_API line
    # (a long one's return type may stand on a line of its own)
    declared=$(awk 'prev == "FRAE_API" { want = 1; buf = "" }
                    want { buf = buf " " $0
                           if (index(buf, "(")) {
                               sub(/\(.*/, "", buf); n = split(buf, w, /[ *]+/)
                               print w[n]; want = 0 } }
                    { prev = $0 }' "$@" | sort)
    exported=$(nm -D --defined-only "$BUILD/$lib" | awk '$2 == "T" {print $3}' | sort)
    if [ -n "$declared" ] && [ "$declared" = "$exported" ]; then
        ok "$lib exports exactly the $(echo "$declared" | wc -l) functions of $*"
    else
        bad "$lib exports: $(echo "$exported" | tr '\n' ' ') / $* declares: $(echo "$declared" | tr '\n' ' ')"
    fi
done
if readelf -d "$BUILD/libfrae.so" | grep NEEDED | grep -qE 'sndfile|fftw|samplerate'; then
    bad "libfrae.so depends on audio libraries: $(readelf -d "$BUILD/libfrae.so" | grep NEEDED)"
else
    ok "libfrae.so needs no audio library (libsndfile, FFTW, libsamplerate)"
fi
cat >"$prefix/feat.c" <<'C'
#include <stdio.h>
#include "frae_audio.h"
int main(void)
{
    frae_features f;
    frae_features_default(&f);
    char err[256];
    frae_mel *m = frae_mel_create(&f, err, sizeof err);
    float x[400] = {0}, feats[80];
    for (int i = 0; i < 400; i++)
        x[i] = (float)((i * 37) % 100) / 100.0f - 0.5f;
    frae_mel_compute(m, x, 400, feats);
    frae_mel_destroy(m);
    printf("%d\n", m != NULL && feats[0] == feats[0]);
    return 0;
}
C
if cc "$prefix/feat.c" $(pkg-config --cflags --libs frae-audio) -o "$prefix/feat" \
    2>"$prefix/log" && [ "$(LD_LIBRARY_PATH="$prefix/lib" "$prefix/feat")" = 1 ]; then
    ok "the audio front end builds and runs alone with pkg-config frae-audio"
else
    bad "frae-audio: $(cat "$prefix/log")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
