#!/bin/sh
# The examples, built and run under a memory checker: examples/stream.c
# against BUILD's libfrae.a with a frames model and two models that code
# pitch (with and without a prior), each trained here in seconds; its
# frames must equal 'frae decode' of 'frae encode' to the bit.  The
# sanitizer build (BUILD build-asan) builds the example with ASan and UBSan
# against its instrumented library; the plain build runs it under valgrind
# (where installed: it sees the library's accesses too), else under ASan.
# Prints "N passed, N failed" last.  Usage: tests/examples_test.sh BUILD
BUILD=${1:-build}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "    ok   $1"; }
bad() { fail=$((fail + 1)); echo "    FAIL $1"; }
root=$(pwd)
FRAE="$root/$BUILD/frae"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
checker=""
case "$BUILD" in
*asan*) cflags="-O1 $san" how="ASan + UBSan, instrumented libfrae" ;;
*)
    if command -v valgrind >/dev/null 2>&1; then
        cflags="-O1" how="valgrind"
        checker="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
    else
        cflags="-O1 $san" how="ASan + UBSan (the example's own accesses)"
    fi ;;
esac
if cc -std=c11 -g -Wall -Wextra -Werror $cflags -Iinclude examples/stream.c \
    "$BUILD/libfrae.a" -lzip -lm -pthread -o "$tmp/stream" 2>"$tmp/log"; then
    ok "examples/stream.c builds against $BUILD/libfrae.a with -Wall -Wextra -Werror ($how)"
else
    bad "examples/stream.c does not build: $(cat "$tmp/log")"
fi
cd "$tmp" || exit 1
/usr/bin/python3 - <<'PY'
import wave
import numpy as np
t = np.arange(150)[:, None]
np.save("x.npy", (0.6 * np.sin(0.07 * t + np.arange(10)[None, :])).astype("<f4"))
rate = 16000
s = np.arange(3 * rate) / rate
f0 = 140 * (1 + 0.05 * np.sin(2 * np.pi * 3 * s))
phase = 2 * np.pi * np.cumsum(f0) / rate
v = sum(np.sin(h * phase) * np.exp(-((h * 140 - 700) / 900) ** 2) / h for h in range(1, 30))
with wave.open("v.wav", "wb") as w:
    w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
    w.writeframes((0.3 * v / np.abs(v).max() * 32767).astype("<i2").tobytes())
PY
small="--enc 8 --dec 8 --latent 4 --history 1 --quantizer binary --epochs 1 --progress off"
"$FRAE" train --frame-dim 10 $small --sequences 4 --frames 40 \
    --save frames.safetensors >/dev/null 2>&1
"$FRAE" train v.wav --pitch $small --save pitch.safetensors >/dev/null 2>&1
"$FRAE" train v.wav --pitch $small --rate-lambda 0.01 \
    --save prior.safetensors >/dev/null 2>&1
"$FRAE" features --pitch v.wav -o f.npy >/dev/null 2>&1
# MODEL INPUT.npy WHAT: the example's frames == frae decode's, under the checker
# (the example codes the network's own codes, as the library does unless
# told; frae encode searches a pitch model's by default, so --search 0)
stream_check() {
    "$FRAE" encode "$1" "$2" -o s.fbs --search 0 >/dev/null 2>&1 &&
        "$FRAE" decode "$1" s.fbs -o d.npy >/dev/null 2>&1
    /usr/bin/python3 -c "import numpy as np; np.load('$2').astype('<f4').tofile('in.f32')"
    $checker ./stream "$1" <in.f32 >out.f32 2>log
    status=$?
    same=$(/usr/bin/python3 -c "
import numpy as np
d = np.load('d.npy'); y = np.fromfile('out.f32', '<f4')
print(int(y.size == d.size and np.array_equal(y.reshape(d.shape), d)))" 2>&1)
    if [ "$status" = 0 ] && [ "$same" = 1 ] && ! grep -q "ERROR\|runtime error" log; then
        ok "$3: clean under $how, frames == frae decode's ($(tail -n 1 log))"
    else
        bad "$3: status $status, same '$same': $(head -c 2000 log)"
    fi
}
stream_check frames.safetensors x.npy "a frames model (D 10)"
stream_check pitch.safetensors f.npy "a model that codes pitch (D 80 + f0, voicing)"
stream_check prior.safetensors f.npy "a pitch model with a prior (its fixed-rate codes)"
# the README's C quick start, as a user copies it: it builds with the
# installed headers' names and decodes what it encodes, frame for frame
awk '/^```c$/ { f = 1; next } /^```$/ { if (f) exit } f' "$root/README.md" >quick.c
/usr/bin/python3 -c "import numpy as np; np.load('f.npy').astype('<f4').tofile('f.f32')"
if cc -std=c11 -Wall -Wextra -Werror -I"$root/include" quick.c "$root/$BUILD/libfrae.a" \
    -lzip -lm -pthread $san -o quick 2>log &&
    ./quick "$root/models/speech.safetensors" <f.f32 >quick.f32 2>>log; then
    n=$(/usr/bin/python3 -c "
import numpy as np
print(np.fromfile('quick.f32', '<f4').size // 82)")
    if [ "${n:-0}" -gt 0 ]; then
        ok "the README's C quick start builds (-Werror) and codes $n frames with the shipped model"
    else
        bad "the README's C quick start wrote no frames: $(head -c 2000 log)"
    fi
else
    bad "the README's C quick start: $(head -c 2000 log)"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
