#!/usr/bin/python3
"""A faster check of one frae codec under loss (issue 37's levers), on the
loss study's own traces and measures: frae alone, LSD and MCD over 0-4 kHz
through the decoded audio as tools/loss_study.py measures them (no pitch
measures, no anchors), and the resynchronisation time after one lost
packet (the study's: within 1 dB LSD for 100 ms, median over utterances).
One line out, also appended to OUT (demo/loss-levers.txt).

  tools/loss_levers.py NAME MODEL [frae encode options...]
  e.g. tools/loss_levers.py state demo/model.safetensors --packet-ms 40 --resync-state

Environment: CONDS (random-0,random-5,gilbert-10), RESYNC (1: measure it),
LIMIT (the first N utterances), JOBS (2), FRAE (build/frae), OUT, CORPUS
(data/corpus: its wav/test; data/corpus/human for the recorded voices)."""
import concurrent.futures
import glob
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import demo  # noqa: E402
import loss_study as L  # noqa: E402

FRAE = os.environ.get("FRAE", os.path.join(demo.ROOT, "build", "frae"))
OUT = os.environ.get("OUT", os.path.join(demo.ROOT, "demo", "loss-levers.txt"))


def main():
    name, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    conds = os.environ.get("CONDS", "random-0,random-5,gilbert-10").split(",")
    if conds[0] != "random-0":
        conds.insert(0, "random-0")
    corpus = os.environ.get("CORPUS", os.path.join(demo.ROOT, "data", "corpus"))
    allt = sorted(glob.glob(os.path.join(corpus, "wav", "test", "*.wav")))
    alln = [os.path.basename(w)[:-4] for w in allt]
    lim = int(os.environ.get("LIMIT", "0")) or len(allt)
    tmp = tempfile.mkdtemp(prefix="frae-levers-")
    refs = {n: demo.features(FRAE, w, os.path.join(tmp, n + "-ref.npy"))
            for w, n in zip(allt, alln)}
    # the study's traces over all the held-out utterances: the same slices
    npk = {n: -(-len(demo.read_wav(w)) // L.SAMPLES) + 1 for w, n in zip(allt, alln)}
    traces, _ = L.write_traces(tmp, alln, npk)

    def one(n, w):
        head, packets = L.frae_encode(FRAE, model, w, os.path.join(tmp, n + ".fbs"), extra)
        out, lag = {}, None
        for c in conds:
            f = os.path.join(tmp, "%s-%s.fbs" % (n, c))
            wav = f[:-4] + ".wav"
            L.frae_lossy(head, packets, traces[c][n], f)
            L.frae_decode(FRAE, model, f, wav=wav)
            got = demo.features(FRAE, wav, wav[:-4] + "-feat.npy")
            if lag is None:
                lag = demo.best_lag(refs[n], got)
            t = demo.shift(len(refs[n]), got, lag)
            ok = ~np.isnan(t).any(axis=1)
            out[c] = demo.metrics(refs[n][ok], t[ok], L.NARROW)
        kbps = sum(len(p) for p, _ in packets) * 8 / (len(refs[n]) / 100.0) / 1000.0
        return out, kbps

    with concurrent.futures.ThreadPoolExecutor(int(os.environ.get("JOBS", "2"))) as ex:
        res = list(ex.map(lambda a: one(*a), list(zip(alln, allt))[:lim]))
    line = "%-28s %.3f kbit/s as 40 ms datagrams;" % (name, np.mean([r[1] for r in res]))
    for c in conds:
        line += " %s LSD %.3f MCD %.3f;" % (c, np.mean([r[0][c][0] for r in res]),
                                           np.mean([r[0][c][1] for r in res]))
    if "random-5" in conds:
        line += " 5%% rise %+.2f dB;" % np.mean([r[0]["random-5"][0] - r[0]["random-0"][0]
                                                 for r in res])
    if os.environ.get("RESYNC", "1") == "1":   # the study's section 7, on features
        rng = np.random.default_rng(L.SEED * 1000 + 200)
        med = []
        for w, n in zip(allt, alln):
            sp = demo.speech_frames(refs[n])
            cand = [k for k in range(1, len(sp) // L.FRAMES - 1)
                    if sp[k * L.FRAMES:(k + 1) * L.FRAMES].all()]
            ks = [int(rng.choice(t)) for t in np.array_split(np.array(cand), 3) if len(t)]
            if alln.index(n) >= lim:
                continue
            fbs = os.path.join(tmp, "rs.fbs")
            head, packets = L.frae_encode(FRAE, model, w, fbs, extra)
            L.frae_decode(FRAE, model, fbs, npy=os.path.join(tmp, "rs0.npy"))
            y0 = np.load(os.path.join(tmp, "rs0.npy"))
            per = []
            for k in ks:
                tr = np.zeros(len(packets), bool)
                tr[k] = True
                L.frae_lossy(head, packets, tr, os.path.join(tmp, "rs1.fbs"))
                L.frae_decode(FRAE, model, os.path.join(tmp, "rs1.fbs"),
                              npy=os.path.join(tmp, "rs1.npy"))
                per.append(L.resync_frames(np.load(os.path.join(tmp, "rs1.npy")), y0,
                                           k * L.FRAMES)["held"])
            med.append(float(np.median(per)))
        line += " resync median %.0f ms (mean %.0f)" % (10 * np.median(med), 10 * np.mean(med))
    print(line, flush=True)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "a") as f:
        f.write("%s  [%s %s]\n" % (line, os.path.basename(model), " ".join(extra)))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
