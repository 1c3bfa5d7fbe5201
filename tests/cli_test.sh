#!/bin/sh
# CLI checks: help, bad flags and values (one clear line, exit 2), a short
# training run.  Usage: tests/cli_test.sh path/to/frae
# Prints one line per check and "N passed, N failed" last.
FRAE=${1:-build/frae}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); echo "    ok   $1"; }
bad() { fail=$((fail + 1)); echo "    FAIL $1"; }

# expect CODE PATTERN DESCRIPTION -- ARGS...: exit status CODE, and for a
# non-zero CODE exactly one line on stderr matching PATTERN.
expect() {
    code=$1 pattern=$2 desc=$3
    shift 4
    "$FRAE" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ "$got" != "$code" ]; then
        bad "$desc: exit $got, wanted $code ($(head -c 200 "$tmp/err"))"
        return
    fi
    if [ "$code" != 0 ]; then
        lines=$(wc -l <"$tmp/err")
        if [ "$lines" != 1 ] || ! grep -q -- "$pattern" "$tmp/err"; then
            bad "$desc: stderr was not one line matching '$pattern': $(cat "$tmp/err")"
            return
        fi
    fi
    ok "$desc"
}

expect 0 "" "--help" -- --help
expect 0 "" "train --help" -- train --help
expect 0 "" "--version" -- --version
expect 2 "unknown command 'fly'" "unknown command" -- fly
expect 2 "unknown option '--bogus'" "unknown option" -- train --bogus 1
expect 2 "needs a value" "missing value" -- train --epochs
expect 2 "--batch expects an integer" "batch zero" -- train --batch 0
expect 2 "--batch expects an integer" "batch not a number" -- train --batch 8x
expect 2 "--epochs expects an integer" "epochs negative" -- train --epochs -1
expect 2 "--lr expects a number" "lr zero" -- train --lr 0
expect 2 "--lr expects a number" "lr nan" -- train --lr nan
expect 2 "--warmup expects an integer" "warmup negative" -- train --warmup -1
expect 2 "--decay-steps expects an integer" "decay steps not a number" -- train --decay-steps x
expect 2 "--lr-floor expects a number in \\[0, 1\\]" "lr floor above 1" -- train --lr-floor 2
expect 2 "--enc expects positive widths" "enc zero width" -- train --enc 512,0
expect 2 "--enc takes at most" "enc too many" -- train --enc 1,1,1,1,1,1,1,1,1
expect 2 "--quantizer expects" "unknown quantizer" -- train --quantizer ternary
expect 2 "uniform:N expects an integer in 2..65536" "uniform 1 level" -- train --quantizer uniform:1
expect 2 "--feedback got 'partial'" "unknown feedback" -- train --feedback partial
expect 2 "--activation got 'gelu'" "unknown activation" -- train --activation gelu
expect 2 "--frame-dim expects an integer" "frame dim overflow" -- train --frame-dim 99999999999
expect 2 "more than this machine" "model too large" -- train --enc 300000,300000 --epochs 1
expect 2 "extra: cannot open" "missing data file" -- train extra
expect 2 "--replicas expects an integer" "replicas zero" -- train --replicas 0
expect 2 "--replicas expects an integer" "replicas too many" -- train --replicas 100000
expect 2 "--dist-timeout expects a number" "dist timeout zero" -- train --dist-timeout 0
expect 2 "--dist-timeout expects a number" "dist timeout nan" -- train --dist-timeout nan

# a short real run: loss printed every epoch, and it goes down
"$FRAE" train --frame-dim 8 --history 2 --enc 32 --latent 4 --dec 32 \
    --sequences 8 --frames 30 --batch 4 --epochs 6 --feedback full \
    --quantizer uniform:8 --save "$tmp/run.safetensors" >"$tmp/out" 2>"$tmp/err"
if [ $? = 0 ] && [ "$(grep -c '^epoch ' "$tmp/out")" = 6 ]; then
    first=$(grep '^epoch 1/' "$tmp/out" | awk '{print $4}')
    last=$(grep '^epoch 6/' "$tmp/out" | awk '{print $4}')
    if awk "BEGIN{exit !($last < $first)}"; then
        ok "train runs, prints 6 epochs, loss $first -> $last"
    else
        bad "loss did not go down: $first -> $last"
    fi
else
    bad "short training run: $(cat "$tmp/err")"
fi

# divergence: a huge learning rate stops with exit 1 and a clear line
expect 1 "training diverged" "divergence is reported" -- train --frame-dim 4 \
    --history 1 --enc 8 --latent 2 --dec 8 --sequences 4 --frames 10 \
    --batch 2 --epochs 50 --lr 1e30 --save none

# frae help CMD is CMD --help: a usage line, every option, an example
for spec in \
    "train --recipe --epochs --save --resume --targets --pitch" \
    "predict -o --isa --no-resample" \
    "info" \
    "import -o --activation --quantizer --latent --family --normalize" \
    "convert -o --weights" \
    "encode -o --frame-rate --isa --no-resample --packet-frames --search --search-lambda --dtx --dtx-level --packet-ms --resync-ms --resync-state" \
    "decode -o --wav --vocoder --gl-iters --through --isa" \
    "features -o --pitch --f0 --sample-rate --no-resample --mels --hop --win --fft --fmin --fmax" \
    "vocode -o --gl-iters --sample-rate --no-resample --mels --hop --win --fft --fmin --fmax"; do
    set -- $spec
    cmd=$1
    shift
    "$FRAE" help "$cmd" >"$tmp/help" 2>&1
    h=$?
    "$FRAE" "$cmd" --help >"$tmp/own" 2>&1
    missing=""
    for opt in "$@"; do
        grep -q -- "$opt[ ,]" "$tmp/help" || missing="$missing $opt"
    done
    if [ "$h" = 0 ] && cmp -s "$tmp/help" "$tmp/own" &&
        head -n 1 "$tmp/help" | grep -q "^usage: frae $cmd" &&
        grep -q "^example" "$tmp/help" && [ -z "$missing" ]; then
        ok "frae help $cmd: its --help, every option and an example"
    else
        bad "frae help $cmd: exit $h, missing:$missing; $(head -n 3 "$tmp/help")"
    fi
done
expect 2 "help: unknown command 'bogus'" "frae help of an unknown command" -- help bogus
"$FRAE" help >"$tmp/out" 2>&1 && grep -q "frae help <command>" "$tmp/out" &&
    ok "frae help: the general help" || bad "frae help: $(head -n 3 "$tmp/out")"
expect 2 "needs \[MODEL\] IN.fbs and --wav OUT.wav or -o OUT.npy" \
    "decode without an output: one line naming --wav" -- decode m.safetensors x.fbs

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
