#!/usr/bin/python3
"""The recorded human-speech corpus (issue 38): builds a small one from the
installed Fish Fillets dialogs (scripts/make-corpus.sh --human, two clips
a speaker) and checks it as docs/speech.md states it:

  - every clip 16 kHz, mono, 16-bit PCM, at least 0.5 s, peak at -3 dBFS,
    leading and trailing silence trimmed (the first and the last sample
    above -50 dBFS within 0.1 s of the ends), its features [T, 80];
  - split by speaker: no speaker on both sides, and no language either
    (each language is its own cast), the speaker in the name (its first
    two fields) the one speakers.tsv lists, each clip's source in that
    speaker's language; every expected speaker present;
  - a second run keeps the corpus (idempotent).

Then it spoils copies of the corpus (a training speaker's clip among the
held-out ones, a stereo 22.05 kHz clip, one 6 dB too quiet, one with 0.3 s
of leading silence) and checks that each is caught, so the checks can fail.

Usage: tests/human_corpus_test.py [FRAE]   Prints "N passed, N failed" last."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import wave

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, summary  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = {"cs-m", "cs-v", "cs-o"}
TEST = {"nl-m", "nl-v", "nl-o"}


def read(path):
    """(rate, channels, sample width, samples as floats in [-1, 1))."""
    with wave.open(path) as w:
        rate, ch, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
        raw = w.readframes(w.getnframes())
    x = np.frombuffer(raw, dtype="<i2").astype(np.float64) / 32768.0 if width == 2 else None
    return rate, ch, width, x


def problems(corpus):
    """What is wrong with the corpus in corpus/human, one line each."""
    bad = []
    human = os.path.join(corpus, "human")
    try:
        rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(human, "speakers.tsv"))]
    except OSError as e:
        return ["no speakers.tsv: %s" % e]
    listed = {}
    for r in rows[1:]:
        if len(r) != 4:
            bad.append("speakers.tsv: a line of %d fields" % len(r))
            continue
        listed[r[0], r[2]] = r
    sides = {}
    for split in ("train", "test"):
        for wav in sorted(glob.glob(os.path.join(human, "wav", split, "*.wav"))):
            name = os.path.basename(wav)[:-4]
            spk = "-".join(name.split("-")[:2])
            sides.setdefault(spk, set()).add(split)
            r = listed.pop((split, name), None)
            if r is None:
                bad.append("%s/%s: not in speakers.tsv" % (split, name))
            elif r[1] != spk:
                bad.append("%s: speakers.tsv says %s, the name %s" % (name, r[1], spk))
            elif "/%s/" % spk.split("-")[0] not in r[3]:
                bad.append("%s: its source %s is not in %s" % (name, r[3], spk.split("-")[0]))
            rate, ch, width, x = read(wav)
            if (rate, ch, width) != (16000, 1, 2):
                bad.append("%s: %d Hz, %d channels, %d bytes a sample (not 16 kHz mono "
                           "16-bit)" % (name, rate, ch, width))
                continue
            if len(x) < 8000:
                bad.append("%s: %.2f s, under 0.5 s" % (name, len(x) / 16000))
                continue
            peak = 20 * np.log10(np.abs(x).max() + 1e-12)
            if abs(peak + 3.0) > 0.05:
                bad.append("%s: peak %.2f dBFS, not -3" % (name, peak))
            loud = np.nonzero(np.abs(x) > 10 ** (-50 / 20))[0]
            if len(loud) == 0 or loud[0] > 1600 or len(x) - 1 - loud[-1] > 1600:
                bad.append("%s: silence not trimmed (%s)" % (
                    name, "silent" if len(loud) == 0 else "%.2f s before, %.2f s after" % (
                        loud[0] / 16000, (len(x) - 1 - loud[-1]) / 16000)))
            npy = os.path.join(human, "feats", split, name + ".npy")
            try:
                f = np.load(npy)
                if f.ndim != 2 or f.shape[1] != 80 or abs(len(f) - len(x) / 160) > 3:
                    bad.append("%s: features of shape %s for %d samples" % (
                        name, f.shape, len(x)))
            except OSError:
                bad.append("%s: no features" % name)
    for (split, name) in listed:
        bad.append("%s/%s: listed, but no WAV" % (split, name))
    both = sorted(s for s, v in sides.items() if len(v) > 1)
    if both:
        bad.append("speakers on both sides: %s" % ", ".join(both))
    langs = {split: {s.split("-")[0] for s, v in sides.items() if split in v}
             for split in ("train", "test")}
    if langs["train"] & langs["test"]:
        bad.append("languages (casts) on both sides: %s" % ", ".join(
            sorted(langs["train"] & langs["test"])))
    for split, want in (("train", TRAIN), ("test", TEST)):
        have = {s for s, v in sides.items() if split in v}
        if have != want:
            bad.append("%s speakers %s, not %s" % (split, sorted(have), sorted(want)))
    return bad


def spoil(corpus, tmp, what):
    """A copy of corpus with one thing wrong."""
    out = os.path.join(tmp, what)
    shutil.copytree(corpus, out)
    human = os.path.join(out, "human")
    train = sorted(glob.glob(os.path.join(human, "wav", "train", "*.wav")))
    test = sorted(glob.glob(os.path.join(human, "wav", "test", "*.wav")))
    if what == "leak":  # a training speaker's clip held out, listed as such
        name = os.path.basename(train[0])[:-4]
        shutil.copy(train[0], os.path.join(human, "wav", "test", name + ".wav"))
        shutil.copy(os.path.join(human, "feats", "train", name + ".npy"),
                    os.path.join(human, "feats", "test", name + ".npy"))
        row = [l for l in open(os.path.join(human, "speakers.tsv")) if "\t%s\t" % name in l][0]
        with open(os.path.join(human, "speakers.tsv"), "a") as f:
            f.write(row.replace("train\t", "test\t", 1))
        return out
    sox = {"stereo": ["-r", "22050", "-c", "2"], "quiet": ["gain", "-6"],
           "untrimmed": ["pad", "0.3", "0"]}[what]
    w = test[0]
    tmpw = os.path.join(tmp, "x.wav")
    if what == "stereo":
        subprocess.run(["sox", w] + sox + [tmpw], check=True)
    else:
        subprocess.run(["sox", w, tmpw] + sox, check=True)
    shutil.move(tmpw, w)
    return out


def main():
    frae = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "frae")
    tmp = tempfile.mkdtemp(prefix="frae-human-")
    try:
        corpus = os.path.join(tmp, "corpus")
        cmd = ["sh", os.path.join(ROOT, "scripts", "make-corpus.sh"), "--human",
               "--per-speaker", "2", "--test-per-speaker", "2", corpus, frae]
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "make-corpus.sh --human builds a small corpus",
              (p.stderr or p.stdout).strip()[-400:] +
              " (scripts/install-deps.sh installs fillets-ng-data-cs and -nl)")
        if p.returncode != 0:
            return summary()
        n = {s: len(glob.glob(os.path.join(corpus, "human", "wav", s, "*.wav")))
             for s in ("train", "test")}
        check(1 <= n["train"] <= 6 and 1 <= n["test"] <= 6,
              "at most two clips a speaker (%d training, %d held out)" % (n["train"], n["test"]))
        bad = problems(corpus)
        check(not bad, "the corpus is as stated: 16 kHz mono 16-bit, -3 dBFS peak, trimmed, "
              "features [T, 80], no speaker or language on both sides", "; ".join(bad[:6]))
        stamp = os.stat(os.path.join(corpus, "human", ".complete")).st_mtime_ns
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0 and
              os.stat(os.path.join(corpus, "human", ".complete")).st_mtime_ns == stamp,
              "a second run keeps the corpus")
        for what, word in (("leak", "both sides"), ("stereo", "not 16 kHz mono"),
                           ("quiet", "not -3"), ("untrimmed", "not trimmed")):
            bad = problems(spoil(corpus, tmp, what))
            check(any(word in b for b in bad), "a spoiled corpus (%s) is caught" % what,
                  "; ".join(bad) or "no problem found")
    finally:
        shutil.rmtree(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
