#!/usr/bin/python3
"""The many-voices corpus (issue 48): recorded speech of many speakers,
languages and recording conditions from Debian packages, split by speaker
as scripts/voices.tsv says (a fixed, committed list: held-out speakers are
never trained on).  scripts/make-corpus.sh --voices runs this; the packages
come with WITH_VOICES=1 scripts/install-deps.sh.  docs/2026-12-04-voices.md
has each source's licence, speakers and hours.

For each speaker line of voices.tsv, every file its sources match (sorted;
a source is a glob under ROOT, "/" or $VOICES_ROOT, or zip:ARCHIVE:GLOB for
files inside a zip archive such as Warzone 2100's base.wz):
  1. sox: channels mixed, 16 kHz, 16-bit, normalised to -3 dBFS peak,
     leading and trailing silence below -50 dBFS trimmed (50 ms kept), as
     make-corpus.sh --human makes its clips.  8 and 11.025 kHz sources stay
     band-limited (upsampled, nothing added above their Nyquist): the
     clip list says "nb" for a source under 16 kHz, "wb" otherwise;
  2. split when long: a clip over 10 s is cut at its quietest 20 ms
     between 4 and 10 s after the last cut, again until the rest is short;
  3. non-speech dropped, by one rule on frae's features and pitch track (frae
     features --f0 yin: YIN's reading alone, which the rule was set on, so
     that the clips stay those the shipped models heard): a piece is kept when it
     lasts at least 0.5 s, at least 15% of its frames are voiced, and no voiced stretch holds its f0
     within 1% from frame to frame for more than 0.5 s (a held note: music,
     a tone, a sung or synthetic sound; speech glides), and, when it lasts
     2 s or more, at least 10% of its frames are 20 dB or more below its
     loud ones (its 95th percentile of frame energy): speech pauses between
     syllables and words, music and noise hold their level;
  4. --per-speaker N / --test-per-speaker M keep at most N (M) pieces of a
     training (held-out) speaker, taken evenly through its sorted pieces.
Writes OUT/voices/wav/{train,test}/SPEAKER-STEM.wav (SPEAKER is LANG-NAME,
so a name's first two fields are its speaker, as in the --human corpus),
their log-mel features in OUT/voices/feats/{train,test}/ (frae features,
[T, 80]), OUT/voices/clips.tsv (split, speaker, group, language, band,
seconds, median f0, source, clip) and OUT/voices/.complete, whose line
names the recipe, the caps and voices.tsv's hash: an existing corpus made
the same way is kept.

Usage: scripts/make-voices.py [--per-speaker N] [--test-per-speaker M]
       [--only-split train|test] [OUT_DIR] [FRAE]   (data/corpus, build/frae)"""
import argparse
import concurrent.futures
import fnmatch
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import wave
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT_DIR = os.path.dirname(HERE)
RECIPE = "voices recipe 2"
LIST = os.path.join(HERE, "voices.tsv")
FIELDS = ["speaker", "split", "group", "lang", "sex", "kind", "licence", "package",
          "sources", "note"]
RATE = 16000
MAX_SECS, CUT_FROM, CUT_TO = 10.0, 4.0, 10.0
MIN_SECS, MIN_VOICED, MAX_HELD = 0.5, 0.15, 50  # frames of 10 ms
LEVEL_SECS, MIN_DIPS = 2.0, 0.10  # a piece of 2 s or more must pause


def die(msg):
    sys.stderr.write("make-voices.py: %s\n" % msg)
    sys.exit(2)


def speakers(path=LIST):
    """voices.tsv's speaker lines as dicts (comments and blank lines
    skipped); a malformed line is one clear error."""
    rows = []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.rstrip("\n").split("\t")
        if f[0] == "speaker":
            continue
        if len(f) != len(FIELDS):
            die("%s:%d: %d fields, not %d" % (path, n, len(f), len(FIELDS)))
        r = dict(zip(FIELDS, f))
        if r["split"] not in ("train", "test"):
            die("%s:%d: split '%s' is neither train nor test" % (path, n, r["split"]))
        if r["speaker"].count("-") != 1:
            die("%s:%d: speaker '%s' is not LANG-NAME" % (path, n, r["speaker"]))
        rows.append(r)
    groups = {}
    for r in rows:
        groups.setdefault(r["group"], set()).add(r["split"])
    both = sorted(g for g, s in groups.items() if len(s) > 1)
    if both:
        die("groups on both sides of the split: %s" % ", ".join(both))
    names = [r["speaker"] for r in rows]
    if len(set(names)) != len(names):
        die("a speaker listed twice")
    return rows


def sources(spk, root, tmp):
    """[(label, path)] of a speaker's source files, sorted, each once."""
    out = []
    for src in spk["sources"].split(","):
        src = src.strip()
        if src.startswith("zip:"):
            _, archive, pattern = src.split(":", 2)
            path = os.path.join(root, archive)
            if not os.path.exists(path):
                continue
            with zipfile.ZipFile(path) as z:
                names = sorted(n for n in z.namelist() if fnmatch.fnmatch(n, pattern))
                for n in names:
                    dst = os.path.join(tmp, "zip", spk["speaker"], n.replace("/", "_"))
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    with open(dst, "wb") as f:
                        f.write(z.read(n))
                    out.append(("%s:%s" % (archive, n), dst))
        else:
            for p in sorted(glob.glob(os.path.join(root, src))):
                if os.path.isfile(p):
                    out.append((os.path.relpath(p, root), p))
    seen, uniq = set(), []
    for label, p in out:
        if label not in seen:
            seen.add(label)
            uniq.append((label, p))
    return uniq


def read_wav(path):
    with wave.open(path) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")


def write_wav(path, x):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(x.astype("<i2").tobytes())


def cuts(x):
    """Piece boundaries: cut at the quietest 20 ms between CUT_FROM and
    CUT_TO seconds after the last cut while more than MAX_SECS remain."""
    bounds, start, hop = [0], 0, RATE // 50
    while len(x) - start > MAX_SECS * RATE:
        lo, hi = start + int(CUT_FROM * RATE), start + int(CUT_TO * RATE)
        seg = x[lo:hi].astype(np.float64)
        n = len(seg) // hop
        e = (seg[:n * hop].reshape(n, hop) ** 2).sum(axis=1)
        start = lo + int(np.argmin(e)) * hop + hop // 2
        bounds.append(start)
    bounds.append(len(x))
    return list(zip(bounds[:-1], bounds[1:]))


def speech_verdict(f0, voiced, mel=None):
    """(keep, reason, median f0) by the corpus's rule on a pitch track and
    the log-mel features (frae features, [T, 80])."""
    if len(f0) < MIN_SECS * 100:
        return False, "short", 0.0
    if mel is not None and len(mel) >= LEVEL_SECS * 100:
        e = np.log(np.exp(mel * 5 - 5).sum(axis=1) + 1e-9)  # frame energy, nepers
        if np.mean(e < np.percentile(e, 95) - np.log(100)) < MIN_DIPS:
            return False, "level held", 0.0
    v = voiced > 0.5
    if v.mean() < MIN_VOICED:
        return False, "unvoiced", 0.0
    held, run = 0, 0
    for t in range(1, len(f0)):
        if v[t] and v[t - 1] and abs(np.log(f0[t] / f0[t - 1])) < 0.01:
            run += 1
            held = max(held, run)
        else:
            run = 0
    med = float(np.median(f0[v]))
    if held > MAX_HELD:
        return False, "held note", med
    return True, "", med


def convert(src, out_wav):
    """sox as make-corpus.sh --human: (source rate, ok)."""
    pre = []
    if src.endswith(".raw"):  # CMU's test audio: 16 kHz 16-bit mono, headerless
        pre = ["-t", "raw", "-r", "16000", "-e", "signed-integer", "-b", "16", "-c", "1"]
    rate = 16000
    if not pre:
        r = subprocess.run(["soxi", "-r", src], capture_output=True, text=True)
        rate = int(float(r.stdout.strip() or 0))
    p = subprocess.run(["sox", "-R", "-q"] + pre + [src, "-b", "16", out_wav, "remix", "-",
                        "gain", "-3", "rate", str(RATE), "norm", "-3", "silence", "1",
                        "0.01", "-50d", "reverse", "silence", "1", "0.01", "-50d",
                        "reverse", "pad", "0.05", "0.05"], capture_output=True, text=True)
    return rate, p.returncode == 0 and os.path.exists(out_wav)


def one_source(spk, i, label, src, frae, tmp):
    """The kept pieces of one source file: [(stem, samples, band, secs,
    median f0, label)] and the dropped ones' reasons."""
    work = os.path.join(tmp, "%s-%d" % (spk["speaker"], i))
    os.makedirs(work, exist_ok=True)
    rate, ok = convert(src, os.path.join(work, "c.wav"))
    kept, dropped = [], []
    if not ok:
        dropped.append("unreadable")
        shutil.rmtree(work)
        return kept, dropped
    x = read_wav(os.path.join(work, "c.wav"))
    stem = os.path.splitext(os.path.basename(label.split(":")[-1]))[0]
    parent = os.path.basename(os.path.dirname(label.split(":")[-1]))
    stem = "".join(c if c.isalnum() or c in "_" else "_" for c in parent + "_" + stem)
    pieces = cuts(x)
    for k, (a, b) in enumerate(pieces):
        name = stem if len(pieces) == 1 else "%s_p%d" % (stem, k)
        if b - a < MIN_SECS * RATE:
            dropped.append("short")
            continue
        p = os.path.join(work, "p.wav")
        write_wav(p, x[a:b])
        npy = os.path.join(work, "p.npy")
        if subprocess.run([frae, "features", "--f0", "yin", p, "-o", npy],
                          capture_output=True).returncode != 0:
            dropped.append("unreadable")
            continue
        f = np.load(npy)
        keep, why, med = speech_verdict(f[:, 80], f[:, 81], f[:, :80])
        if keep:
            kept.append((name, x[a:b].copy(), "nb" if rate < RATE else "wb",
                         (b - a) / RATE, med, label))
        else:
            dropped.append(why)
    shutil.rmtree(work)
    return kept, dropped


def evenly(items, cap):
    if cap <= 0 or len(items) <= cap:
        return items
    step = len(items) / cap
    return [items[int(i * step)] for i in range(cap)]


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("Usage: ")[1])
    ap.add_argument("--per-speaker", type=int, default=0)
    ap.add_argument("--test-per-speaker", type=int, default=0)
    ap.add_argument("--only-split", choices=("train", "test"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("out", nargs="?", default=os.path.join("data", "corpus"))
    ap.add_argument("frae", nargs="?", default=os.path.join("build", "frae"))
    a = ap.parse_args()
    if a.per_speaker < 0 or a.test_per_speaker < 0:
        die("--per-speaker and --test-per-speaker take a count")
    root = os.environ.get("VOICES_ROOT", "/")
    rows = speakers()
    # the list's hash over what makes the corpus (not the notes, sex or kind)
    digest = hashlib.sha256("\n".join("\t".join(r[k] for k in (
        "speaker", "split", "group", "lang", "sources")) for r in rows).encode()).hexdigest()[:12]
    stamp = "%s, per speaker %d/%d%s, voices.tsv %s, %s" % (
        RECIPE, a.per_speaker, a.test_per_speaker,
        ", %s only" % a.only_split if a.only_split else "", digest, root)
    out = os.path.join(a.out, "voices")
    done = os.path.join(out, ".complete")
    if os.path.exists(done) and "(%s)" % stamp in open(done).read():
        print(open(done).read().strip())
        return 0
    if not os.access(a.frae, os.X_OK):
        die("no frae at %s (make first)" % a.frae)
    shutil.rmtree(out, ignore_errors=True)
    for s in ("train", "test"):
        os.makedirs(os.path.join(out, "wav", s))
        os.makedirs(os.path.join(out, "feats", s))
    tmp = tempfile.mkdtemp(prefix="frae-voices-")
    lines, missing, drops = [], [], {}
    try:
        for spk in rows:
            if a.only_split and spk["split"] != a.only_split:
                continue
            files = sources(spk, root, tmp)
            if not files:
                missing.append("%s (%s)" % (spk["speaker"], spk["package"]))
                continue
            cap = a.per_speaker if spk["split"] == "train" else a.test_per_speaker
            # convert and judge only as many files as the cap can use (taken
            # evenly), then top up evenly from the rest if some were dropped
            chosen, seen, kept, serial = evenly(files, cap) if cap else files, set(), [], 0
            with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
                for _ in range(4):
                    if not chosen:
                        break
                    jobs = [(serial + i, f) for i, f in enumerate(chosen)]
                    serial += len(jobs)
                    for k, d in ex.map(lambda t: one_source(spk, t[0], t[1][0], t[1][1],
                                                            a.frae, tmp), jobs):
                        kept += k
                        for why in d:
                            drops[why] = drops.get(why, 0) + 1
                    seen |= {f[0] for f in chosen}
                    need = cap - len(kept) if cap else 0
                    chosen = evenly([f for f in files if f[0] not in seen], need) \
                        if need > 0 else []
            # a file found twice (the same bytes under two names, as Fish
            # Fillets reuses clips across levels) kept once; a name taken
            # twice (the same stem in two folders) numbered
            uniq, sums, names = [], set(), {}
            for k in sorted(kept, key=lambda k: (k[0], k[5])):
                h = hashlib.sha256(k[1].tobytes()).hexdigest()
                if h in sums:
                    drops["duplicate"] = drops.get("duplicate", 0) + 1
                    continue
                sums.add(h)
                n = names[k[0]] = names.get(k[0], 0) + 1
                uniq.append(k if n == 1 else ("%s_%d" % (k[0], n),) + k[1:])
            kept = evenly(uniq, cap)
            for name, x, band, secs, med, label in kept:
                clip = "%s-%s" % (spk["speaker"], name)
                wav = os.path.join(out, "wav", spk["split"], clip + ".wav")
                write_wav(wav, x)
                subprocess.run([a.frae, "features", wav, "-o",
                                os.path.join(out, "feats", spk["split"], clip + ".npy")],
                               check=True, capture_output=True)
                lines.append([spk["split"], spk["speaker"], spk["group"], spk["lang"],
                              band, "%.2f" % secs, "%.0f" % med, label, clip])
    finally:
        shutil.rmtree(tmp)
    if missing:
        die("no source files for %s under %s (WITH_VOICES=1 scripts/install-deps.sh "
            "installs the packages; VOICES_ROOT names another root)" % (
                ", ".join(missing), root))
    lines.sort(key=lambda l: (l[0], l[-1]))
    with open(os.path.join(out, "clips.tsv"), "w") as f:
        f.write("split\tspeaker\tgroup\tlang\tband\tseconds\tf0\tsource\tclip\n")
        for l in lines:
            f.write("\t".join(l) + "\n")
    n = {s: sum(1 for l in lines if l[0] == s) for s in ("train", "test")}
    secs = {s: sum(float(l[5]) for l in lines if l[0] == s) for s in ("train", "test")}
    spk = {s: len({l[1] for l in lines if l[0] == s}) for s in ("train", "test")}
    msg = ("%d training clips (%d speakers, %.0f s) and %d held-out (%d speakers, %.0f s); "
           "dropped: %s (%s)" % (n["train"], spk["train"], secs["train"], n["test"],
                                 spk["test"], secs["test"],
                                 ", ".join("%d %s" % (v, k) for k, v in sorted(drops.items()))
                                 or "none", stamp))
    with open(done, "w") as f:
        f.write(msg + "\n")
    print(msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
