#!/bin/sh
# The Python module installed the Python way (issue 39): 'pip install .'
# into a fresh venv of Debian's python3 (--system-site-packages: NumPy from
# Debian), offline (--no-index, --no-build-isolation: setuptools from
# Debian), then docs/python-install.md's quick start run from outside the
# source tree with no PYTHONPATH: a tiny model trained, encoded, decoded,
# predicted; a speech recipe from a WAV through features with pitch to the
# vocoder's WAV, as 'frae vocode' writes it.  Then the shipped models as
# the package's data (issue 47): from a directory outside the tree, with no
# FRAE_MODELS, 'python -m frae encode/decode' and frae.Codec() with no
# model argument, the models found in the installed package (frae/models).
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

# the shipped models in the installed package: no FRAE_MODELS, no HOME
# models, outside the tree; a voice from espeak-ng
mkdir "$tmp/models-work" "$tmp/home"
cd "$tmp/models-work" || exit 1
py() { env -u PYTHONPATH -u FRAE_MODELS -u XDG_DATA_HOME HOME="$tmp/home" "$tmp/venv/bin/python" "$@"; }
pkg=$(py -c "import os, frae; print(os.path.dirname(frae.__file__))" 2>"$tmp/err")
same=1
for f in MANIFEST speech.safetensors speech-vbr.safetensors speech-3k2.safetensors speech-3k2-vbr.safetensors; do
    cmp -s "$ROOT/models/$f" "$pkg/models/$f" || same=0
done
[ -n "$pkg" ] && [ "$same" = 1 ] &&
    ok "pip install . puts models/MANIFEST, speech, speech-vbr, speech-3k2 and speech-3k2-vbr in the package (frae/models), byte for byte" ||
    bad "the package's models: '$pkg': $(ls "$pkg/models" 2>&1) $(cat "$tmp/err")"
if espeak-ng -w x.wav "The shipped models come with every install." 2>"$tmp/err" &&
    [ -s x.wav ]; then
    ok "espeak-ng -w x.wav"
else
    bad "espeak-ng: $(cat "$tmp/err")"
fi
if py -m frae encode x.wav -o x.fbs >"$tmp/out" 2>&1 && [ -s x.fbs ]; then
    ok "python -m frae encode x.wav -o x.fbs: no model argument, exit 0"
else
    bad "python -m frae encode: $(cat "$tmp/out")"
fi
if py -m frae decode x.fbs --wav y.wav >"$tmp/out" 2>&1 && [ -s y.wav ]; then
    ok "python -m frae decode x.fbs --wav y.wav: the stream's model, exit 0"
else
    bad "python -m frae decode: $(cat "$tmp/out")"
fi
out=$(py - "$pkg" 2>&1 <<'PY'
import os, sys
import numpy as np
import frae
models = os.path.join(sys.argv[1], "models")
found = frae.models()
assert found.get("speech") == os.path.join(models, "speech.safetensors") and \
    found.get("speech-vbr") == os.path.join(models, "speech-vbr.safetensors"), found
assert models in frae.models_dirs(), frae.models_dirs()
c = frae.Codec()
assert c.path == found["speech"], c.path
stream = c.encode("x.wav")
assert stream == open("x.fbs", "rb").read(), "Codec().encode is python -m frae encode's"
y = c.decode(stream, wav="z.wav")
assert y.dtype == np.float32 and y.ndim == 1 and len(y) > 8000, y.shape
assert open("z.wav", "rb").read() == open("y.wav", "rb").read(), "decode's WAV"
v = frae.Codec("speech-vbr")
assert np.array_equal(frae.Codec().decode(v.encode("x.wav")), v.decode(v.encode("x.wav")))
print("CODEC OK: %d bytes, %d samples, models from %s" % (len(stream), len(y), models))
PY
)
status=$?
printf '%s\n' "$out" | sed 's/^/    /'
if [ "$status" = 0 ] && printf '%s' "$out" | grep -q "CODEC OK"; then
    ok "frae.Codec().encode/decode with no model: the package's models, outside the tree"
else
    bad "frae.Codec() with the package's models (exit $status)"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
