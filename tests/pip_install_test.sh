#!/bin/sh
# The Python module installed the Python way (issue 39): 'pip install .'
# into a fresh venv of Debian's python3 (--system-site-packages: NumPy from
# Debian), offline (--no-index, --no-build-isolation: setuptools from
# Debian), then docs/python-install.md's quick start run from outside the
# source tree with no PYTHONPATH: a tiny model trained, encoded, decoded,
# predicted; a speech recipe from a WAV through features with pitch to the
# vocoder's WAV, as 'frae vocode' writes it.
# Usage: tests/pip_install_test.sh [path/to/frae]   Prints "N passed, N failed" last.
FRAE=$(cd "$(dirname "${1:-build/frae}")" && pwd)/$(basename "${1:-build/frae}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "    ok   $1"; }
bad() { fail=$((fail + 1)); echo "    FAIL $1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a copy of the tree: pip builds in place, and the checkout stays as it is
mkdir "$tmp/src"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp --parents -t "$tmp/src" 2>/dev/null)
if /usr/bin/python3 -m venv --system-site-packages "$tmp/venv" >"$tmp/log" 2>&1 &&
    (cd "$tmp/src" && "$tmp/venv/bin/pip" install --no-build-isolation --no-index \
        --no-cache-dir . >>"$tmp/log" 2>&1); then
    ok "pip install . into a fresh venv, offline"
else
    bad "pip install .: $(tail -n 20 "$tmp/log")"
fi
mkdir "$tmp/work"
cd "$tmp/work" || exit 1
out=$(env -u PYTHONPATH FRAE="$FRAE" "$tmp/venv/bin/python" - 2>&1 <<'PY'
import os, subprocess, sys, wave
import numpy as np
import frae
assert frae.__file__.startswith(sys.prefix), frae.__file__  # the venv's, not the tree's
print("frae", frae.__version__, "from", os.path.dirname(frae.__file__))

# the quick start (docs/python-install.md): frames in, a codec out
x = np.random.default_rng(0).uniform(-1, 1, (8, 60, 16)).astype(np.float32)
m = frae.FRAE(frame_dim=16, latent=8, quantizer="binary", enc=(32,), dec=(32,))
history = m.fit(x, epochs=2, batch_size=4, verbose=0)
stream = m.encode(x[0])
y = m.decode(stream)
assert np.array_equal(y, m.predict(x[0])), "decode(encode(x)) is predict(x)"
m.save("tiny.safetensors")
assert np.array_equal(frae.load("tiny.safetensors").predict(x[0]), y)
print("tiny: loss %.4f -> %.4f, %d bytes" % (history["loss"][0], history["loss"][-1],
                                              len(stream)))

# speech: a WAV through the speech recipe, features with pitch, the vocoder
t = np.arange(16000) / 16000.0
voice = 0.3 * sum(np.sin(2 * np.pi * h * 140 * t) / h for h in range(1, 20))
with wave.open("voice.wav", "wb") as w:
    w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
    w.writeframes((voice * 32767).astype("<i2").tobytes())
feats = frae.features("voice.wav", pitch=True)           # [T, 82]
codec = frae.FRAE(recipe="speech")
codec.fit([feats[:, :80]], epochs=1, verbose=0)           # the envelope trains
decoded = codec.decode(codec.encode(feats))               # [T, 82]: + f0, voicing
frae.write_wav("decoded.wav", frae.vocode(decoded))
frae.write_wav("vocoded.wav", frae.vocode(feats))
np.save("feats.npy", feats)
cli = os.environ["FRAE"]
subprocess.run([cli, "features", "--pitch", "voice.wav", "-o", "cli.npy"], check=True,
               capture_output=True)
subprocess.run([cli, "vocode", "feats.npy", "-o", "cli.wav"], check=True, capture_output=True)
assert feats.shape[1] == 82 and np.array_equal(np.load("cli.npy"), feats), \
    "features(pitch=True) is 'frae features --pitch'"
assert open("cli.wav", "rb").read() == open("vocoded.wav", "rb").read(), \
    "vocode + write_wav is 'frae vocode'"
print("speech: %d frames, %d bytes of WAV" % (len(feats), os.path.getsize("decoded.wav")))
print("QUICKSTART OK")
PY
)
status=$?
printf '%s\n' "$out" | sed 's/^/    /'
if [ "$status" = 0 ] && printf '%s' "$out" | grep -q "QUICKSTART OK"; then
    ok "the quick start from the venv, outside the tree, no PYTHONPATH"
else
    bad "the quick start failed (exit $status)"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
