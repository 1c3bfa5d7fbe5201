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
    [ -x "$prefix/bin/frae" ] && [ -f "$prefix/lib/pkgconfig/frae.pc" ]; then
    ok "make install PREFIX=...: header, libraries, frae, frae.pc"
else
    bad "make install: $(cat "$prefix/log")"
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs frae 2>&1)
if cc examples/stream.c $flags -o "$prefix/stream" 2>"$prefix/log"; then
    ok "the example builds with \$(pkg-config --cflags --libs frae)"
else
    bad "building the example: $flags: $(cat "$prefix/log")"
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
"$prefix/bin/frae" predict m.safetensors x.npy -o pred.npy >/dev/null 2>&1
LD_LIBRARY_PATH="$prefix/lib" ./stream m.safetensors <x.f32 >y.f32 2>log
status=$?
./stream_static m.safetensors <x.f32 >y_static.f32 2>/dev/null
same=$(/usr/bin/python3 -c "
import numpy as np
p = np.load('pred.npy'); y = np.fromfile('y.f32', '<f4').reshape(p.shape)
s = np.fromfile('y_static.f32', '<f4').reshape(p.shape)
print(int(np.array_equal(p, y) and np.array_equal(p, s)))" 2>&1)
if [ "$status" = 0 ] && [ "$same" = 1 ]; then
    ok "streaming stdin to stdout through the API equals frae predict ($(cat log))"
else
    bad "stream: status $status, same '$same', $(cat log)"
fi
# the deployment form: bf16 weights, through the same example
"$prefix/bin/frae" convert m.safetensors -o m16.safetensors --weights bf16 \
    >/dev/null 2>&1
"$prefix/bin/frae" predict m16.safetensors x.npy -o pred16.npy >/dev/null 2>&1
LD_LIBRARY_PATH="$prefix/lib" ./stream m16.safetensors <x.f32 >y16.f32 2>log
status=$?
same=$(/usr/bin/python3 -c "
import numpy as np
p = np.load('pred16.npy'); y = np.fromfile('y16.f32', '<f4').reshape(p.shape)
print(int(np.array_equal(p, y)))" 2>&1)
if [ "$status" = 0 ] && [ "$same" = 1 ]; then
    ok "a bf16 model streams through the API exactly as frae predict"
else
    bad "bf16 stream: status $status, same '$same', $(cat log)"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
