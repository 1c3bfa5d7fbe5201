#!/bin/sh
# The shipped models (models/): each file's size and SHA-256 what MANIFEST
# records, each loads; 'frae models' lists them; the C default model
# (tests/c/default_model.c, over libfrae.a, found beside the program); the
# codec with no model argument (encode: the default; decode: the model the
# stream's hash names) equals the codec with the file given, to the byte;
# hostile cases (a hash no model has, not a stream, stdin, no models) one
# line and exit 2; 'frae models' and Python's frae.models() the same list
# (libfrae's one search: the tree, a user's directory that hides a name,
# 70 models in one directory, FRAE_MODELS).  The bit-for-bit rebuild is 'make check-models' (long,
# outside ./test.sh).  Usage: tests/models_test.sh [BUILD_DIR]
BUILD=${1:-build}
FRAE=$BUILD/frae
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "    ok   $1"; }
bad() { fail=$((fail + 1)); echo "    FAIL $1"; }
unset FRAE_MODELS
ROOT_MODELS=$(pwd)/models

# MANIFEST: file, bytes, SHA-256, rate, data
n=0
while IFS="$(printf '\t')" read -r file bytes sum rate data; do
    case $file in '#'*|'') continue ;; esac
    n=$((n + 1))
    got_bytes=$(wc -c <"models/$file" | tr -d ' ')
    got_sum=$(sha256sum "models/$file" | cut -d' ' -f1)
    if [ "$got_bytes" = "$bytes" ] && [ "$got_sum" = "$sum" ]; then
        ok "models/$file: $bytes bytes, SHA-256 as MANIFEST records"
    else
        bad "models/$file: $got_bytes bytes, $got_sum; MANIFEST: $bytes, $sum"
    fi
    if "$FRAE" info "models/$file" >"$tmp/info" 2>&1 && grep -q bf16 "$tmp/info"; then
        ok "models/$file loads (bf16 weights)"
    else
        bad "models/$file does not load as bf16: $(head -c 300 "$tmp/info")"
    fi
    [ -n "$rate" ] && [ -n "$data" ] || bad "models/$file: MANIFEST has no rate or data"
done <models/MANIFEST

# ./run.sh --train retrains the 1.6 kbit/s codec as the shipped one was
# (tools/demo.py's SHIPPED_EPOCHS and SHIPPED_SPEECH) and compares the
# bytes: its options must be the ones MANIFEST records for the file
demo_epochs=$(sed -n 's/^SHIPPED_EPOCHS = \([0-9]*\)$/\1/p' tools/demo.py)
demo_opts=$(sed -n 's/^SHIPPED_SPEECH = \[\(.*\)\]$/\1/p' tools/demo.py | tr -d '",')
want="frae train --recipe speech $demo_opts, $demo_epochs epochs;"
if [ -n "$demo_epochs" ] && [ -n "$demo_opts" ] &&
    grep "^speech.safetensors" models/MANIFEST | grep -qF -- "$want"; then
    ok "tools/demo.py --train trains speech as MANIFEST records ($demo_opts, $demo_epochs epochs)"
else
    bad "tools/demo.py --train ('$want') is not how MANIFEST says speech.safetensors was trained"
fi
[ "$n" = 4 ] && ok "MANIFEST lists 4 models" || bad "MANIFEST lists $n models, not 4"
[ "$(ls models/*.safetensors | wc -l)" = "$n" ] && ok "every models/*.safetensors is in MANIFEST" ||
    bad "models/ holds files MANIFEST does not list"

if "$FRAE" models >"$tmp/models" 2>&1 && grep -q "^  speech  *1.60 kbit/s fixed" "$tmp/models" &&
    grep -q "^  speech-vbr  *variable rate" "$tmp/models" &&
    grep -q "^  speech-3k2  *3.20 kbit/s fixed: 32 bits a frame (28 codes" "$tmp/models" &&
    grep -q "^  speech-3k2-vbr  *variable rate, about 3.0-3.2 kbit/s .*: 48 codes" "$tmp/models" &&
    [ "$(grep -c 'trained on: .*--recipe' "$tmp/models")" = 4 ] &&
    [ "$(grep -c 'trained on: .*voices-aug' "$tmp/models")" = 4 ] &&
    [ "$(grep -c 'latency 52.5 ms (.*its polish 22.5)' "$tmp/models")" = 2 ] &&
    grep -A1 "^  speech-vbr " "$tmp/models" | grep -q "latency 62.5 ms (.*look-ahead 10" &&
    grep -A1 "^  speech-3k2-vbr " "$tmp/models" | grep -q "latency 62.5 ms (.*look-ahead 10"; then
    ok "frae models: all four, with rate, latency, hash and the whole training data line"
else
    bad "frae models: $(cat "$tmp/models")"
fi
# speech-vbr's encoder sees 2 frames ahead, each with its flag, within
# 40 ms packets: 80 + 240 (h_dec) + 2 x (80 + 1) inputs, read from the
# weights themselves
if "$FRAE" info models/speech-vbr.safetensors >"$tmp/info" 2>&1 &&
    grep -q "^  encoder  482 -> GRU 240 -> 20 " "$tmp/info" &&
    grep -q "look-ahead: .*next 2 frames, none past the first of the next packet of 4 frames (10 ms" "$tmp/info"; then
    ok "frae info speech-vbr: the encoder's 482 inputs and its look-ahead to the 40 ms packet's end"
else
    bad "frae info speech-vbr: $(cat "$tmp/info")"
fi
FRAE_MODELS=$tmp/none "$FRAE" models >"$tmp/models" 2>&1 && grep -q "no shipped models found" "$tmp/models" &&
    ok "frae models with none: says so, exit 0" || bad "frae models with none: $(cat "$tmp/models")"

# a hostile models directory: a MANIFEST of junk, a line longer than the
# reader's buffer whose tail looks like an entry, a junk checkpoint
mkdir -p "$tmp/hostile"
cp models/speech.safetensors "$tmp/hostile/"
head -c 4000 /dev/urandom >"$tmp/hostile/MANIFEST"
/usr/bin/python3 -c "print('\n' + 'y' * 2047 + 'speech.safetensors\t1\t2\t3\tFORGED')" >>"$tmp/hostile/MANIFEST"
head -c 3000 /dev/urandom >"$tmp/hostile/junk.safetensors"
FRAE_MODELS=$tmp/hostile "$FRAE" models >"$tmp/models" 2>"$tmp/err"
st=$?
if [ "$st" = 0 ] && grep -q "not in the directory's MANIFEST" "$tmp/models" &&
    ! grep -q FORGED "$tmp/models" && grep -q "junk.safetensors" "$tmp/err"; then
    ok "frae models over a hostile directory: the good model listed, junk named, no forged line"
else
    bad "frae models over a hostile directory: exit $st: $(cat "$tmp/models" "$tmp/err")"
fi

# 'frae models' and frae.models() (the Python module in BUILD/python): the
# same files, names, paths and order, from libfrae's one search
same_list() { # DESCRIPTION, then the environment's settings
    desc=$1
    shift
    env "$@" "$FRAE" models >"$tmp/cli" 2>/dev/null
    env "$@" PYTHONPATH="$BUILD/python" /usr/bin/python3 - "$tmp/cli" >"$tmp/cmp" 2>&1 <<'PY'
import os, re, sys
import frae
cli, d = [], None
for line in open(sys.argv[1]):
    if re.match(r"^/.*:$", line):
        d = line[:-2]
    m = re.match(r"^  (\S+) +(.*)$", line)
    if m and not line.startswith("   "):
        cli.append((m.group(1), os.path.join(d, m.group(1) + ".safetensors"),
                    not m.group(2).startswith("not used")))
walk = [tuple(r) for r in frae._frae.models()]
used = [(n, p) for n, p, u in cli if u]
print("%d files, %d used" % (len(cli), len(used)))
assert cli == walk, (cli, walk)
assert used == list(frae.models().items()), (used, frae.models())
dirs = [os.path.dirname(p) for _, p, _ in cli]
assert sorted(set(dirs), key=dirs.index) == [x for x in frae.models_dirs() if x in dirs]
print("SAME")
PY
    if grep -q SAME "$tmp/cmp"; then
        ok "frae models and frae.models() the same list: $desc ($(head -n 1 "$tmp/cmp"))"
    else
        bad "frae models and frae.models() differ: $desc: $(cat "$tmp/cmp" "$tmp/cli" | head -c 2000)"
    fi
}
if [ -d "$BUILD/python/frae" ]; then
    mkdir -p "$tmp/xdg/frae/models" "$tmp/home/.local/share/frae/models" "$tmp/many"
    same_list "the source tree" XDG_DATA_HOME="$tmp/nothing"
    cp models/speech.safetensors "$tmp/xdg/frae/models/speech.safetensors"
    same_list "a user's speech (XDG_DATA_HOME) hides the tree's" XDG_DATA_HOME="$tmp/xdg"
    grep -q "^$tmp/xdg/frae/models:" "$tmp/cli" &&
        grep -q "^  speech  *not used: an earlier directory has this name" "$tmp/cli" &&
        ok "frae models: the user's directory first, the tree's speech marked not used" ||
        bad "frae models with a user's speech: $(cat "$tmp/cli")"
    cp models/speech-vbr.safetensors "$tmp/home/.local/share/frae/models/"
    same_list "a user's speech-vbr (HOME/.local/share)" -u XDG_DATA_HOME HOME="$tmp/home"
    same_list "a hostile directory (a junk checkpoint)" FRAE_MODELS="$tmp/hostile"
    grep -q "^  junk  *does not load" "$tmp/cli" && ok "frae models: the junk checkpoint listed as not loading" ||
        bad "frae models over junk: $(cat "$tmp/cli")"
    i=0
    while [ $i -lt 70 ]; do
        ln -s "$ROOT_MODELS/speech-vbr.safetensors" "$tmp/many/m$(printf %02d $i).safetensors"
        i=$((i + 1))
    done
    same_list "70 models in one directory" XDG_DATA_HOME="$tmp/nothing" \
        FRAE_MODELS="$tmp/many:$(pwd)/models"
    [ "$(grep -c "^  m[0-9][0-9] " "$tmp/cli")" = 70 ] && grep -q "^  m69 " "$tmp/cli" &&
        ok "frae models lists all 70 models of one directory" ||
        bad "frae models lists $(grep -c "^  m[0-9][0-9] " "$tmp/cli") of 70 models"
else
    echo "    (no $BUILD/python: frae models against frae.models() skipped)"
fi

# the C default model: the program in BUILD, so that BUILD/../models is found
if cc -std=c11 -Wall -Wextra -Werror -Iinclude tests/c/default_model.c "$BUILD/libfrae.a" \
    -lzip -lm -pthread -o "$BUILD/default_model_test" 2>"$tmp/cc"; then
    mkdir -p "$tmp/empty"
    "$BUILD/default_model_test" models/speech.safetensors "$tmp/empty" >"$tmp/c" 2>&1
    st=$?
    sed '$d' "$tmp/c"
    summary=$(tail -n 1 "$tmp/c")
    p=${summary%% passed*}
    f=${summary#*passed, }
    f=${f%% failed*}
    pass=$((pass + ${p:-0}))
    fail=$((fail + ${f:-1}))
    [ "$st" = 0 ] || [ "${f:-1}" != 0 ] || bad "default_model_test exited $st"
else
    bad "tests/c/default_model.c does not build: $(head -c 300 "$tmp/cc")"
fi

# the codec with no model: the same bytes as with the file named
# (data/corpus's held-out voice when the user made it, else a corpus made
# in the test's own directory: the checkout is left alone)
wav=data/corpus/wav/test/005-0.wav
if [ ! -f "$wav" ]; then
    sh scripts/make-corpus.sh "$tmp/corpus" "$FRAE" >/dev/null
    wav=$tmp/corpus/wav/test/005-0.wav
fi
if "$FRAE" encode "$wav" -o "$tmp/a.fbs" >/dev/null 2>"$tmp/err" &&
    "$FRAE" encode models/speech.safetensors "$wav" -o "$tmp/b.fbs" >/dev/null &&
    cmp -s "$tmp/a.fbs" "$tmp/b.fbs"; then
    ok "frae encode IN.wav -o OUT.fbs: the default model's stream, byte for byte"
else
    bad "frae encode without a model: $(cat "$tmp/err")"
fi
if "$FRAE" decode "$tmp/a.fbs" --wav "$tmp/a.wav" >/dev/null 2>"$tmp/err" &&
    "$FRAE" decode models/speech.safetensors "$tmp/b.fbs" --wav "$tmp/b.wav" >/dev/null &&
    cmp -s "$tmp/a.wav" "$tmp/b.wav"; then
    ok "frae decode OUT.fbs --wav OUT.wav: the model found by the stream's hash"
else
    bad "frae decode without a model: $(cat "$tmp/err")"
fi
"$FRAE" decode "$tmp/a.fbs" "$tmp/c.wav" >/dev/null 2>&1 && cmp -s "$tmp/a.wav" "$tmp/c.wav" &&
    ok "frae decode IN.fbs OUT.wav (positional) alike" || bad "frae decode IN.fbs OUT.wav"
if "$FRAE" encode speech-vbr "$wav" -o "$tmp/v.fbs" >/dev/null 2>"$tmp/err" &&
    "$FRAE" encode models/speech-vbr.safetensors "$wav" -o "$tmp/w.fbs" >/dev/null &&
    cmp -s "$tmp/v.fbs" "$tmp/w.fbs" &&
    "$FRAE" decode "$tmp/v.fbs" -o "$tmp/v.npy" >/dev/null 2>>"$tmp/err" &&
    "$FRAE" decode models/speech-vbr.safetensors "$tmp/w.fbs" -o "$tmp/w.npy" >/dev/null &&
    cmp -s "$tmp/v.npy" "$tmp/w.npy"; then
    ok "a shipped model by name (speech-vbr), and its stream decoded by its hash"
else
    bad "speech-vbr by name: $(cat "$tmp/err")"
fi
if "$FRAE" encode "$wav" -o "$tmp/p.fbs" --packet-ms 40 >/dev/null 2>"$tmp/err" &&
    "$FRAE" decode "$tmp/p.fbs" --wav "$tmp/p.wav" >/dev/null 2>>"$tmp/err"; then
    ok "real-time packets (--packet-ms 40) with no model, both ends"
else
    bad "packets with no model: $(cat "$tmp/err")"
fi

"$FRAE" encode - - --packet-ms 40 <"$wav" >"$tmp/live.fbs" 2>/dev/null
"$FRAE" encode models/speech.safetensors - - --packet-ms 40 <"$wav" >"$tmp/live2.fbs" 2>/dev/null
[ -s "$tmp/live.fbs" ] && cmp -s "$tmp/live.fbs" "$tmp/live2.fbs" &&
    ok "a live pipe with no model (frae encode - -): the stream alone on stdout" ||
    bad "frae encode - - --packet-ms 40 with no model differs from the model's"

# hostile: one line, exit 2
expect2() { # PATTERN DESCRIPTION CMD...
    pattern=$1 desc=$2
    shift 2
    "$@" >/dev/null 2>"$tmp/err"
    st=$?
    if [ "$st" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "$pattern" "$tmp/err"; then
        ok "$desc: one line, exit 2"
    else
        bad "$desc: exit $st, stderr: $(cat "$tmp/err")"
    fi
}
/usr/bin/python3 -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); b[9] ^= 0x40
open(sys.argv[2], 'wb').write(b)" "$tmp/a.fbs" "$tmp/forged.fbs"
expect2 "no installed model has hash" "a stream whose hash no model has" \
    "$FRAE" decode "$tmp/forged.fbs" --wav "$tmp/x.wav"
expect2 "not a frae stream" "not a stream, no model" "$FRAE" decode "$wav" --wav "$tmp/x.wav"
head -c 10 "$tmp/a.fbs" >"$tmp/short.fbs"
expect2 "not a frae stream" "a stream cut in its header, no model" \
    "$FRAE" decode "$tmp/short.fbs" --wav "$tmp/x.wav"
expect2 "stdin needs MODEL" "a stream on stdin, no model" \
    sh -c "\"$FRAE\" decode - --wav $tmp/x.wav < $tmp/a.fbs"
expect2 "no shipped model 'speech' found" "encode with no model and none installed" \
    env FRAE_MODELS="$tmp/none" "$FRAE" encode "$wav" -o "$tmp/x.fbs"
expect2 "no installed model has hash" "decode with no model and none installed" \
    env FRAE_MODELS="$tmp/none" "$FRAE" decode "$tmp/a.fbs" --wav "$tmp/x.wav"
[ ! -e "$tmp/x.wav" ] && [ ! -e "$tmp/x.fbs" ] && ok "the refusals wrote nothing" ||
    bad "a refusal wrote an output"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
