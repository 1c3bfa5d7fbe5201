#!/usr/bin/python3
"""The many-voices corpus's training side under real recording conditions
(issue 48, item 2): a quarter of OUT/voices/wav/train's clips, each once
more under one seeded draw of the conditions real inputs bring
(tools/augment.py's), so that the shipped models hear them in training:

  every chosen clip: its peak at a level drawn from -40 to -3 dBFS (one in
    eight instead a loud, limited take: rms -16 to -10 dBFS)
  and each with its own chance, in this order:
    reverb:RT60   0.2-0.8 s                    15%
    mic:TILT:RES  tilt -6..+3 dB/decade, a 0-8 dB resonance at 3 kHz  25%
    tel | nb8k    a telephone (300-3400 Hz, mu-law) 15%, an 8 kHz source 15%
    noise:SNR:C   5-30 dB over the speech, white, pink or brown     35%
    dc:OFFSET     -0.05..+0.05 of full scale (after the level)      10%

A clip is chosen, and its draw made, from its name's hash alone, so the
corpus is the same on every machine and does not move when a clip is added
or dropped.  The held-out side is never augmented: tools/human_study.py
applies its own conditions to it.  Writes OUT/voices-aug/wav/train/*.wav,
their features in OUT/voices-aug/feats/train/ (frae features), clips.tsv
(clip, conditions) and .complete, whose line names the recipe and the
voices corpus it was made from: an existing one made the same way is kept.

Usage: scripts/augment-corpus.py [OUT_DIR] [FRAE]   (data/corpus, build/frae)"""
import concurrent.futures
import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
import augment  # noqa: E402  (tools/augment.py: the conditions themselves)

RECIPE = "voices-aug recipe 1, a quarter of the clips"
SHARE = 0.25


def draw(name):
    """(chosen, chain, seed) for the clip called name, from its hash."""
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
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


def one(clip, src, out, frae):
    chosen, chain, seed = draw(clip)
    if not chosen:
        return None
    x, rate = augment.read_wav(os.path.join(src, clip + ".wav"))
    if rate != augment.RATE:
        raise ValueError("%s: %d Hz" % (clip, rate))
    wav = os.path.join(out, "wav", "train", clip + ".wav")
    augment.write_wav(wav, augment.apply(x, chain, seed % (1 << 32)))
    subprocess.run([frae, "features", wav, "-o",
                    os.path.join(out, "feats", "train", clip + ".npy")],
                   check=True, capture_output=True)
    return clip, chain


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join("data", "corpus")
    frae = sys.argv[2] if len(sys.argv) > 2 else os.path.join("build", "frae")
    voices_done = os.path.join(corpus, "voices", ".complete")
    if not os.path.exists(voices_done):
        sys.stderr.write("augment-corpus.py: no voices corpus in %s (make-corpus.sh "
                         "--voices first)\n" % corpus)
        return 2
    stamp = "%s (from: %s)" % (RECIPE, open(voices_done).read().strip())
    out = os.path.join(corpus, "voices-aug")
    done = os.path.join(out, ".complete")
    if os.path.exists(done) and stamp in open(done).read():
        print(open(done).read().strip())
        return 0
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "wav", "train"))
    os.makedirs(os.path.join(out, "feats", "train"))
    src = os.path.join(corpus, "voices", "wav", "train")
    clips = sorted(f[:-4] for f in os.listdir(src) if f.endswith(".wav"))
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        rows = [r for r in ex.map(lambda c: one(c, src, out, frae), clips) if r]
    with open(os.path.join(out, "clips.tsv"), "w") as f:
        f.write("clip\tconditions\n")
        for clip, chain in rows:
            f.write("%s\t%s\n" % (clip, chain))
    msg = "%d of %d training clips under drawn conditions; %s" % (len(rows), len(clips), stamp)
    with open(done, "w") as f:
        f.write(msg + "\n")
    print(msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
