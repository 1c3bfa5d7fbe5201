#!/bin/sh
# Builds the demo's speech corpus: synthetic English speech from espeak-ng
# and flite (Debian packages), several voices, speeds and pitches, 70
# sentences; then the log-mel features the demo trains on.
#   train: voices the model learns from
#   test:  held-out voices never seen in training
# Deterministic and idempotent: an existing complete corpus is kept.
# Usage: scripts/make-corpus.sh [OUT_DIR] [FRAE]   (data/corpus, build/frae)
set -eu
OUT=${1:-data/corpus}
FRAE=${2:-build/frae}
SENTENCES=$(dirname "$0")/corpus-sentences.txt
# the recipe's version: a corpus made by an older recipe is made again
RECIPE="recipe 3"
[ -f "$OUT/.complete" ] && grep -q "($RECIPE)" "$OUT/.complete" && exit 0
rm -rf "$OUT"
mkdir -p "$OUT/tmp" "$OUT/wav/train" "$OUT/wav/test" "$OUT/feats/train" \
    "$OUT/feats/test"

# speaker = engine:voice, varied per utterance in speed and pitch.  Sixteen
# training voices (recipe 3; recipe 2 had the first eight for as many
# utterances): a codec that has heard more voices codes an unseen one
# better, and its prior predicts an unseen voice's codes as well as it
# does its training voices' (README, "Speech")
TRAIN_VOICES="espeak:en-us+m1 espeak:en-gb+f2 espeak:en-gb-scotland+m3
espeak:en-us+f3 espeak:en-gb-x-rp+m4 flite:kal flite:slt flite:awb
espeak:en-gb-x-gbclan+f1 espeak:en-gb-x-gbcwmd+m2 espeak:en-us+f5
espeak:en-gb+m6 espeak:en-gb-scotland+f3 espeak:en-us+m7
espeak:en-gb-x-rp+f2 flite:kal16"
TEST_VOICES="espeak:en-029+f4 flite:rms"

say() { # say ENGINE:VOICE SPEED PITCH TEXT OUT.wav
    engine=${1%%:*} voice=${1#*:}
    if [ "$engine" = espeak ]; then
        espeak-ng -v "$voice" -s "$2" -p "$3" -w "$OUT/tmp/raw.wav" "$4"
    else
        flite -voice "$voice" -t "$4" -o "$OUT/tmp/raw.wav"
    fi
    # 16 kHz mono, normalised to -3 dBFS, flite's speed varied by tempo
    # (-R: dither from a fixed seed, so the corpus is the same on every run)
    tempo=$(awk "BEGIN { printf \"%.2f\", $2 / 160 }")
    if [ "$engine" = flite ]; then
        sox -R -q "$OUT/tmp/raw.wav" -r 16000 -c 1 -b 16 "$5" tempo -s "$tempo" norm -3
    else
        sox -R -q "$OUT/tmp/raw.wav" -r 16000 -c 1 -b 16 "$5" norm -3
    fi
}

n=0
while IFS= read -r line; do
    [ -n "$line" ] || continue
    n=$((n + 1))
    # about three training utterances per sentence, from different voices
    k=0
    for v in $TRAIN_VOICES; do
        if [ $(((n + k) % 8)) = 0 ] || [ $(((n + 2 * k) % 14)) = 1 ]; then
            speed=$((130 + (n * 7 + k * 13) % 60))
            pitch=$((30 + (n * 11 + k * 17) % 45))
            say "$v" "$speed" "$pitch" "$line" \
                "$OUT/wav/train/$(printf %03d "$n")-$k.wav"
        fi
        k=$((k + 1))
    done
    # every fifth sentence also by the held-out voices
    if [ $((n % 5)) = 0 ]; then
        k=0
        for v in $TEST_VOICES; do
            say "$v" 160 50 "$line" "$OUT/wav/test/$(printf %03d "$n")-$k.wav"
            k=$((k + 1))
        done
    fi
done <"$SENTENCES"

for split in train test; do
    for w in "$OUT/wav/$split"/*.wav; do
        "$FRAE" features "$w" -o "$OUT/feats/$split/$(basename "$w" .wav).npy" \
            >/dev/null
    done
done
rm -rf "$OUT/tmp"
printf '%s training and %s held-out utterances (%s)\n' \
    "$(ls "$OUT/wav/train" | wc -l)" "$(ls "$OUT/wav/test" | wc -l)" \
    "$RECIPE" >"$OUT/.complete"
cat "$OUT/.complete"
