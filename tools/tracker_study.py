#!/usr/bin/python3
"""Pitch trackers side by side: several frae builds that differ in their
tracker (say, one built with docs/experiments/2026-12-07-voicing-threshold.patch
and -DVOICED_THRESHOLD=0.3) read each clip's f0 and voicing (frae
features --pitch), and every track goes through the same vocoder and the
same codec (the --frae build's frae vocode, encode MODEL and decode --wav),
measured as tools/human_study.py measures a system: LSD / MCD over 0-4 kHz
of the audio's features against the clip's own (the --frae build's), STOI
and ESTOI of the aligned audio, and the tracker's and the audio's gross
pitch and voicing decision errors (GPE / VDE, %) against aubio's track
(demo.py's reference tracker, as run.sh counts them).  Also the share of
frames the tracker reads voiced and the codec's kbit/s (every stream
byte, the file's header included).  Per clip, STOI's change against the
first build, with its standard error over the clips.

The models train on the 80 mel values alone, so a tracker is an
encoder-side change: the streams' format, the decoder and the models
stay.  Choose on training speakers' clips (--split train --every 10);
the held-out ones are the study's.

Usage: tools/tracker_study.py --build NAME=FRAE [--build NAME=FRAE ...]
       [--frae BIN] [--model PATH] [--corpus DIR] [--split train|test]
       [--every N] [--jobs N]
Prints a markdown table, the first build the baseline."""
import argparse
import multiprocessing
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import augment  # noqa: E402  (16-bit WAV in)
import demo  # noqa: E402  (running frae, the reference tracker)
import human_study  # noqa: E402  (the study's measures of one system's audio)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_clip(job):
    a, wav = job
    x = augment.read_wav(wav)[0]
    res = {}
    with tempfile.TemporaryDirectory() as work:
        p = lambda name: os.path.join(work, name)  # noqa: E731
        demo.sh([a.frae, "features", "--pitch", wav, "-o", p("orig.npy")])
        ref = np.load(p("orig.npy"))[:, :80]
        ref_pitch = demo.pitch_track(wav, len(ref))
        for name, build in a.builds:
            demo.sh([build, "features", "--pitch", wav, "-o", p(name + ".npy")])
            f = np.load(p(name + ".npy"))
            demo.sh([a.frae, "vocode", p(name + ".npy"), "-o", p(name + ".v.wav")])
            demo.sh([a.frae, "encode", a.model, p(name + ".npy"), "-o", p(name + ".fbs")])
            demo.sh([a.frae, "decode", p(name + ".fbs"), "--wav", p(name + ".c.wav")])
            res[name] = {
                "vocoder": human_study.through_audio(a.frae, ref, ref_pitch, p(name + ".v.wav"),
                                                     work, x),
                "coded": human_study.through_audio(a.frae, ref, ref_pitch, p(name + ".c.wav"),
                                                   work, x),
                "tracker": human_study.pitch_vs(ref_pitch, f[:, 80], f[:, 81]),
                "voiced": float(np.mean(f[:, 81] > 0.5)),
                "bytes": os.path.getsize(p(name + ".fbs")), "secs": len(x) / 16000.0}
    return res


def rate(counts):
    """GPE and VDE (%) of summed pitch_errors counts."""
    c = np.sum(counts, axis=0)
    return 100.0 * c[0] / max(c[1], 1), 100.0 * c[2] / max(c[3], 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", default=[], metavar="NAME=FRAE",
                    help="a frae whose tracker reads the clips (the first: the baseline)")
    ap.add_argument("--frae", default=os.path.join(ROOT, "build", "frae"),
                    help="the frae that vocodes, codes and measures")
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "speech-vbr.safetensors"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpus", "voices"))
    ap.add_argument("--split", default="train", help="train (the default) or test")
    ap.add_argument("--every", type=int, default=10, help="every Nth clip of the split")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if not a.build or any("=" not in b for b in a.build) or a.every < 1:
        sys.exit("tracker_study.py: needs --build NAME=FRAE (one or more) and --every >= 1")
    a.builds = [tuple(b.split("=", 1)) for b in a.build]
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(a.corpus, "clips.tsv"))]
    col = {name: i for i, name in enumerate(rows[0])}
    wavs = [os.path.join(a.corpus, "wav", a.split, r[col["clip"]] + ".wav")
            for r in rows[1:] if r[col["split"]] == a.split][::a.every]
    with multiprocessing.Pool(a.jobs) as pool:
        results = pool.map(one_clip, [(a, w) for w in wavs])
    base = a.builds[0][0]
    print("%d clips (%s, every %d)\n" % (len(results), a.split, a.every))
    print("| tracker | voiced | tracker GPE / VDE | vocoder alone: LSD / MCD, STOI | "
          "coded: LSD / MCD, STOI, ESTOI, kbit/s | coded STOI less %s | audio VDE, vocoder / coded |"
          % base)
    print("| --- " * 7 + "|")
    for name, _ in a.builds:
        r = [c[name] for c in results]
        mean = lambda side, k: np.nanmean([c[side][k] for c in r], axis=0)  # noqa: E731
        vn, cn, vs, cs = mean("vocoder", "nb"), mean("coded", "nb"), \
            mean("vocoder", "stoi"), mean("coded", "stoi")
        d = np.array([c[name]["coded"]["stoi"][0] - c[base]["coded"]["stoi"][0]
                      for c in results])
        d = d[~np.isnan(d)]
        kb = 8 * sum(c["bytes"] for c in r) / sum(c["secs"] for c in r) / 1000
        print("| %s | %.3f | %.2f%% / %.2f%% | %.3f / %.3f, %.4f | %.3f / %.3f, %.4f, %.4f, %.3f "
              "| %+.4f +- %.4f (%d up, %d down) | %.2f%% / %.2f%% |"
              % (name, np.mean([c["voiced"] for c in r]), *rate([c["tracker"] for c in r]),
                 vn[0], vn[1], vs[0], cn[0], cn[1], cs[0], cs[1], kb, d.mean(),
                 d.std() / np.sqrt(max(len(d), 1)), np.sum(d > 0), np.sum(d < 0),
                 rate([c["vocoder"]["pitch"] for c in r])[1],
                 rate([c["coded"]["pitch"] for c in r])[1]))


if __name__ == "__main__":
    main()
