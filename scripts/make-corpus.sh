#!/bin/sh
# Builds the demo's speech corpus: synthetic English speech from espeak-ng
# and flite (Debian packages), several voices, speeds and pitches, 70
# sentences; then the log-mel features the demo trains on.
#   train: voices the model learns from
#   test:  held-out voices never seen in training
# Deterministic and idempotent: an existing complete corpus is kept.
# Usage: scripts/make-corpus.sh [OUT_DIR] [FRAE]   (data/corpus, build/frae)
#
# With --human, the recorded human speech instead (issue 38), in
# OUT_DIR/human/{wav,feats}/{train,test}: the voice-acted dialogs of Fish
# Fillets (Debian's fillets-ng-data-cs and fillets-ng-data-nl, GPL-2),
# split by cast so that no held-out voice is heard in training (see
# human() below and docs/speech.md, "Recorded human speech"):
#   scripts/make-corpus.sh --human [--per-speaker N] [--test-per-speaker M]
#       [OUT_DIR] [FRAE]
# N and M cap the clips a speaker gives (train, test; default all), taken
# evenly through its sorted clips; FILLETS_SOUND names the game's sound
# directory (/usr/share/games/fillets-ng/sound).
#
# With --voices, the many-voices corpus (issue 48) in OUT_DIR/voices: about
# 60 speakers of 25 languages from Debian packages (KDE's readers, Asterisk's
# telephone voices, Warzone 2100's and Fish Fillets' English casts, CMU's
# test recordings), split by speaker as scripts/voices.tsv fixes it; made by
# scripts/make-voices.py (its opening comment: conversion, splitting, the
# non-speech rule), the packages by WITH_VOICES=1 scripts/install-deps.sh:
#   scripts/make-corpus.sh --voices [--per-speaker N] [--test-per-speaker M]
#       [OUT_DIR] [FRAE]
# Neither --human's corpus nor the synthetic one changes with it.
set -eu

# The recorded corpus.  A clip's file name tells its character apart:
# LEVEL/LANG/PREFIX-C-WORD.ogg (or WORD-C.ogg), C "m" for the small fish
# (mala ryba) and "v" for the big one (velka ryba), the two heroes, who
# speak 84% of the clips; every other character has a per-level code
# (digits, "pap", "hs", ...) or none (help*.ogg, init-*.ogg), so those
# are pooled as one speaker per language, "o".  Each language is its own
# cast (the Czech original and the Dutch dub), so the split is by
# language: every Czech voice trains, every Dutch voice is held out.
#   cs-m, cs-v, cs-o: train (1,882 clips, 1.76 h before trimming)
#   nl-m, nl-v, nl-o: test  (1,616 clips, 1.60 h)
# Each clip: mono (its channels mixed), 16 kHz, 16 bits, normalised to -3 dBFS peak like the
# synthetic voices, leading and trailing silence below -50 dBFS trimmed
# (50 ms kept), clips under 0.5 s after that left out.  Names:
# LANG-C-LEVEL-STEM.wav, so the speaker is the name's first two fields.
HUMAN_RECIPE="human recipe 1"
HUMAN_TRAIN_LANG=cs
HUMAN_TEST_LANG=nl
human() {
    per=0 per_test=0
    while [ $# -gt 0 ]; do
        case $1 in
        --per-speaker) per=${2-}; shift $(($# > 1 ? 2 : 1)) ;;
        --test-per-speaker) per_test=${2-}; shift $(($# > 1 ? 2 : 1)) ;;
        -*) echo "make-corpus.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
        esac
    done
    for n in "$per" "$per_test"; do
        case $n in
        '' | *[!0-9]*)
            echo "make-corpus.sh: --per-speaker and --test-per-speaker take a count, not '$n'" >&2
            exit 2 ;;
        esac
    done
    out=${1:-data/corpus}/human
    frae=${2:-build/frae}
    sound=${FILLETS_SOUND:-/usr/share/games/fillets-ng/sound}
    stamp="$HUMAN_RECIPE, per speaker ${per}/${per_test}, $sound"
    [ -f "$out/.complete" ] && grep -qF "($stamp)" "$out/.complete" && return 0
    rm -rf "$out"
    mkdir -p "$out/tmp" "$out/wav/train" "$out/wav/test" "$out/feats/train" \
        "$out/feats/test"
    # every clip with its split, speaker and output name, sorted
    for lang in $HUMAN_TRAIN_LANG $HUMAN_TEST_LANG; do
        split=train cap=$per
        [ "$lang" = "$HUMAN_TEST_LANG" ] && split=test cap=$per_test
        ls "$sound"/*/"$lang"/*.ogg 2>/dev/null | LC_ALL=C sort | awk -v lang="$lang" \
            -v side="$split" -v cap="$cap" '{
                n = split($0, part, "/"); stem = part[n]; sub(/\.ogg$/, "", stem)
                c = "o"
                if (stem ~ /^[^-_]+[-_]m([-_]|$)/) c = "m"
                else if (stem ~ /^[^-_]+[-_]v([-_]|$)/) c = "v"
                gsub(/[^A-Za-z0-9_-]/, "_", stem)
                spk = lang "-" c
                k = count[spk]++
                line[spk, k] = side "\t" spk "\t" spk "-" part[n - 2] "-" stem "\t" $0
            } END {
                for (spk in count) {
                    step = (cap > 0 && count[spk] > cap) ? count[spk] / cap : 1
                    for (i = 0; i * step < count[spk] && (cap == 0 || i < cap); i++)
                        print line[spk, int(i * step)]
                }
            }'
    done | LC_ALL=C sort -t "$(printf '\t')" -k3,3 >"$out/tmp/list"
    [ -s "$out/tmp/list" ] || {
        echo "make-corpus.sh: no clips in $sound/*/{$HUMAN_TRAIN_LANG,$HUMAN_TEST_LANG}" \
            "(scripts/install-deps.sh installs fillets-ng-data-cs and -nl)" >&2
        exit 2
    }
    printf 'split\tspeaker\tname\tsource\n' >"$out/speakers.tsv"
    tab=$(printf '\t')
    while IFS=$tab read -r split spk name src; do
        wav="$out/wav/$split/$name.wav"
        sox -R -q "$src" -b 16 "$out/tmp/clip.wav" remix - gain -3 rate 16000 norm -3 \
            silence 1 0.01 -50d reverse silence 1 0.01 -50d reverse pad 0.05 0.05
        # too short to be speech once trimmed (a grunt, a click): left out
        if awk "BEGIN { exit !($(soxi -D "$out/tmp/clip.wav") < 0.5) }"; then
            continue
        fi
        mv "$out/tmp/clip.wav" "$wav"
        "$frae" features "$wav" -o "$out/feats/$split/$name.npy" >/dev/null
        printf '%s\t%s\t%s\t%s\n' "$split" "$spk" "$name" "$src" >>"$out/speakers.tsv"
    done <"$out/tmp/list"
    rm -rf "$out/tmp"
    printf '%s training and %s held-out clips, speakers %s / %s (%s)\n' \
        "$(ls "$out/wav/train" | wc -l)" "$(ls "$out/wav/test" | wc -l)" \
        "$(awk -F'\t' '$1 == "train" { print $2 }' "$out/speakers.tsv" | sort -u | tr '\n' ' ')" \
        "$(awk -F'\t' '$1 == "test" { print $2 }' "$out/speakers.tsv" | sort -u | tr '\n' ' ')" \
        "$stamp" >"$out/.complete"
    cat "$out/.complete"
}
if [ "${1:-}" = --voices ]; then
    shift
    exec /usr/bin/python3 "$(dirname "$0")/make-voices.py" "$@"
fi
if [ "${1:-}" = --human ]; then
    shift
    human "$@"
    exit 0
fi

OUT=${1:-data/corpus}
FRAE=${2:-build/frae}
SENTENCES=$(dirname "$0")/corpus-sentences.txt
# the recipe's version: a corpus made by an older recipe is made again
RECIPE="recipe 3"
[ -f "$OUT/.complete" ] && grep -q "($RECIPE)" "$OUT/.complete" && exit 0
# (OUT_DIR/human, the recorded corpus, is kept)
rm -rf "$OUT/tmp" "$OUT/wav" "$OUT/feats" "$OUT/.complete"
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
