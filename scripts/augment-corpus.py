#!/usr/bin/python3
"""The many-voices corpus's training side, twice more, for training:

OUT/voices-aug: under real recording conditions (issue 48, item 2): a
quarter of OUT/voices/wav/train's clips, each once more under one seeded
draw of the conditions real inputs bring (tools/augment.py's), so that the
shipped models hear them in training:

  every chosen clip: its peak at a level drawn from -40 to -3 dBFS (one in
    eight instead a loud, limited take: rms -16 to -10 dBFS)
  and each with its own chance, in this order:
    reverb:RT60   0.2-0.8 s                    15%
    mic:TILT:RES  tilt -6..+3 dB/decade, a 0-8 dB resonance at 3 kHz  25%
    tel | nb8k    a telephone (300-3400 Hz, mu-law) 15%, an 8 kHz source 15%
    noise:SNR:C   5-30 dB over the speech, white, pink or brown     35%
    dc:OFFSET     -0.05..+0.05 of full scale (after the level)      10%

OUT/voices-fast: adult voices played faster (docs/2026-12-07-emphasis.md,
"Adult voices played faster"): a quarter of the clips, drawn apart, each
resampled so that it plays 6/5, 5/4, 4/3 or 7/5 times faster, which raises
its pitch and its formants together, as from an adult's voice towards a
child's (speed perturbation).

OUT/voices-high: higher voices still: half of the clips whose voiced
frames' median f0 (frae's tracker, unrefined) is 165 Hz or more, played 5/4, 4/3, 7/5
or 3/2 times faster, so that most come out above 250 Hz, where the
held-out voices frae coded worst are (drawn with voices-fast's draw: a
clip in its share and the f0 band is in both, at the factor of the same
place in each list).

The variable-rate 1.6 kbit/s codec trains on both (models/build.sh).

A clip is chosen, and its draw made, from its name's hash alone (salted
apart for the two sets), so each set is the same on every machine and does
not move when a clip is added or dropped.  The held-out side is never
touched: tools/human_study.py applies its own conditions to it.  Each set
is written as SET/wav/train/*.wav, their features in SET/feats/train/
(frae features), clips.tsv (clip, what was done) and .complete, whose line
names the recipe and the voices corpus it was made from: an existing one
made the same way is kept.

Usage: scripts/augment-corpus.py [OUT_DIR] [FRAE]   (data/corpus, build/frae)"""
import concurrent.futures
import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np
from scipy.signal import resample_poly

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
import augment  # noqa: E402  (tools/augment.py: the conditions themselves)

AUG_RECIPE = "voices-aug recipe 1, a quarter of the clips"
FAST_RECIPE = "voices-fast recipe 1, a quarter of the clips played faster"
HIGH_RECIPE = ("voices-high recipe 1, half of the clips at a median f0 of 165 Hz or more "
               "played faster")
SHARE = 0.25
# played p / q times faster: voices-fast's, voices-high's
FAST_FACTORS = ((6, 5), (5, 4), (4, 3), (7, 5))
HIGH_SHARE = 0.5
HIGH_LOWEST_F0 = 165.0
HIGH_FACTORS = ((5, 4), (4, 3), (7, 5), (3, 2))


def name_seed(text):
    """A seed from text's hash alone: the same on every machine."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def draw(name):
    """(chosen, chain, seed) for the clip called name, from its hash."""
    seed = name_seed(name)
    rng = np.random.default_rng(seed)
    if rng.random() >= SHARE:
        return False, "", seed
    chain = []
    if rng.random() < 0.15:
        chain.append("reverb:%.2f" % rng.uniform(0.2, 0.8))
    if rng.random() < 0.25:
        chain.append("mic:%.1f:%.1f" % (rng.uniform(-6, 3), rng.uniform(0, 8)))
    band = rng.random()
    if band < 0.15:
        chain.append("tel")
    elif band < 0.30:
        chain.append("nb8k")
    if rng.random() < 0.35:
        chain.append("noise:%.1f:%s" % (rng.uniform(5, 30),
                                        ("white", "pink", "brown")[rng.integers(3)]))
    if rng.random() < 0.125:
        chain.append("rms:%.1f" % rng.uniform(-16, -10))
    else:
        chain.append("level:%.1f" % rng.uniform(-40, -3))
    if rng.random() < 0.10:
        chain.append("dc:%.3f" % rng.uniform(-0.05, 0.05))
    return True, ",".join(chain), seed


def draw_fast(name, share=SHARE, factors=FAST_FACTORS):
    """(p, q) for the clip called name (played p / q times faster), or None
    where it is not chosen."""
    rng = np.random.default_rng(name_seed("hi:" + name))
    if rng.random() >= share:
        return None
    return factors[rng.integers(len(factors))]


def median_f0(wav, frae, work):
    """The median f0 of the clip's voiced frames (frae's tracker without its
    refinement, --f0 yin-hp: what HIGH_LOWEST_F0 was set on and the shipped
    voices-high drawn by), 0 if none."""
    npy = os.path.join(work, os.path.basename(wav)[:-4] + ".f0.npy")
    subprocess.run([frae, "features", "--f0", "yin-hp", wav, "-o", npy], check=True,
                   capture_output=True)
    frames = np.load(npy)
    os.unlink(npy)
    voiced = frames[:, -1] > 0.5
    return float(np.median(frames[voiced, -2])) if voiced.any() else 0.0


# Each set: choose(clip, wav, frae, work) gives what to do to a clip, or
# None where it is not chosen (before its audio is read); make(x, what)
# gives (audio, what was done).
def choose_conditions(clip, wav, frae, work):
    chosen, chain, seed = draw(clip)
    return (chain, seed) if chosen else None


def under_conditions(x, chain_seed):
    chain, seed = chain_seed
    return augment.apply(x, chain, seed % (1 << 32)), chain


def choose_faster(clip, wav, frae, work):
    return draw_fast(clip)


def choose_higher(clip, wav, frae, work):
    factor = draw_fast(clip, HIGH_SHARE, HIGH_FACTORS)
    if factor is None or median_f0(wav, frae, work) < HIGH_LOWEST_F0:
        return None
    return factor


def played_faster(x, factor):
    p, q = factor
    return np.clip(resample_poly(x, q, p), -1, 1), "%d/%d" % (p, q)


def one(clip, src, out, frae, choose, make):
    wav_in = os.path.join(src, clip + ".wav")
    what = choose(clip, wav_in, frae, out)
    if what is None:
        return None
    x, rate = augment.read_wav(wav_in)
    if rate != augment.RATE:
        raise ValueError("%s: %d Hz" % (clip, rate))
    audio, done = make(x, what)
    wav = os.path.join(out, "wav", "train", clip + ".wav")
    augment.write_wav(wav, audio)
    subprocess.run([frae, "features", wav, "-o",
                    os.path.join(out, "feats", "train", clip + ".npy")],
                   check=True, capture_output=True)
    return clip, done


def make_set(corpus, frae, name, recipe, column, choose, make, what):
    """Writes corpus/name from the voices' training clips (kept as it is
    where its .complete names the same recipe and voices corpus)."""
    voices_done = os.path.join(corpus, "voices", ".complete")
    stamp = "%s (from: %s)" % (recipe, open(voices_done).read().strip())
    out = os.path.join(corpus, name)
    done = os.path.join(out, ".complete")
    if os.path.exists(done) and stamp in open(done).read():
        print(open(done).read().strip())
        return
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "wav", "train"))
    os.makedirs(os.path.join(out, "feats", "train"))
    src = os.path.join(corpus, "voices", "wav", "train")
    clips = sorted(f[:-4] for f in os.listdir(src) if f.endswith(".wav"))
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        rows = [r for r in ex.map(lambda c: one(c, src, out, frae, choose, make), clips) if r]
    with open(os.path.join(out, "clips.tsv"), "w") as f:
        f.write("clip\t%s\n" % column)
        for clip, done_to in rows:
            f.write("%s\t%s\n" % (clip, done_to))
    msg = "%d of %d training clips %s; %s" % (len(rows), len(clips), what, stamp)
    with open(done, "w") as f:
        f.write(msg + "\n")
    print(msg)


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join("data", "corpus")
    frae = sys.argv[2] if len(sys.argv) > 2 else os.path.join("build", "frae")
    if not os.path.exists(os.path.join(corpus, "voices", ".complete")):
        sys.stderr.write("augment-corpus.py: no voices corpus in %s (make-corpus.sh "
                         "--voices first)\n" % corpus)
        return 2
    make_set(corpus, frae, "voices-aug", AUG_RECIPE, "conditions", choose_conditions,
             under_conditions, "under drawn conditions")
    make_set(corpus, frae, "voices-fast", FAST_RECIPE, "factor", choose_faster, played_faster,
             "played faster")
    make_set(corpus, frae, "voices-high", HIGH_RECIPE, "factor", choose_higher, played_faster,
             "at a median f0 of 165 Hz or more played faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
