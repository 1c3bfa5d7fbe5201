#!/usr/bin/python3
"""Decoder builds and options side by side on training clips, with the
voicing errors split by direction (thirty-second session,
docs/2026-12-08-polish.md): each clip encoded once by MODEL, decoded by each
variant's frae, and its audio tracked by aubio against the input's track.
Usage (from the tree, after make; other builds for other polish constants):
  docs/experiments/2026-12-08-polish-voicing.py MODEL EVERY \\
      "p2=build/frae|--polish 2;p4v2k=/tmp/pv2000/build/frae|--polish 4" [voices|synthetic]
(each variant NAME=FRAE|DECODE OPTIONS; the first the baseline; voices: the
many voices' training clips, synthetic: the synthetic training utterances)."""
import sys, os, glob, tempfile, multiprocessing
import numpy as np
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import augment, demo, human_study as hs
MODEL, EVERY = sys.argv[1], int(sys.argv[2])
VARS = []
for v in sys.argv[3].split(';'):
    name, rest = v.split('=', 1)
    frae, _, opts = rest.partition('|')
    VARS.append((name, frae, opts.split()))
SET = sys.argv[4] if len(sys.argv) > 4 else 'voices'
ENC = os.path.join(ROOT, 'build', 'frae')  # features and encoding: one build


def one(wav):
    x = augment.read_wav(wav)[0]
    res = {}
    with tempfile.TemporaryDirectory() as w:
        p = lambda n: os.path.join(w, n)
        demo.sh([ENC, "features", "--pitch", wav, "-o", p("orig.npy")])
        ref = np.load(p("orig.npy"))[:, :80]
        f_r, v_r = demo.pitch_track(wav, len(ref))
        demo.sh([ENC, "encode", MODEL, wav, "-o", p("s.fbs")])
        for name, frae, opts in VARS:
            demo.sh([frae, "decode", p("s.fbs"), "-o", p(name + ".npy"),
                     "--wav", p(name + ".wav"), *opts])
            t = hs.through_audio(ENC, ref, (f_r, v_r), p(name + ".wav"), w, x)
            _, v_t = demo.pitch_track(p(name + ".wav"), len(ref))
            k = min(len(v_r), len(v_t))
            res[name] = dict(vu=int((v_r[:k] & ~v_t[:k]).sum()),
                             uv=int((~v_r[:k] & v_t[:k]).sum()),
                             voiced=int(v_r[:k].sum()), frames=k,
                             lsd=t['nb'][0], stoi=t['stoi'][0], estoi=t['stoi'][1])
    return res


if SET == 'synthetic':
    jobs = sorted(glob.glob(os.path.join(ROOT, 'data/corpus/wav/train/*.wav')))[::EVERY]
else:
    C = os.path.join(ROOT, 'data/corpus/voices')
    rows = [l.rstrip("\n").split("\t") for l in open(C + "/clips.tsv")]
    col = {n: i for i, n in enumerate(rows[0])}
    jobs = [f"{C}/wav/train/{r[col['clip']]}.wav" for r in rows[1:]
            if r[col["split"]] == "train"][::EVERY]
with multiprocessing.Pool(2) as pool:
    R = pool.map(one, jobs)
print(len(R), "clips,", SET, MODEL)
base = VARS[0][0]
for name, _, _ in VARS:
    s = lambda k: sum(r[name][k] for r in R)
    d = np.array([r[name]['stoi'] - r[base]['stoi'] for r in R])
    de = np.array([r[name]['estoi'] - r[base]['estoi'] for r in R])
    print("%-8s voiced read unvoiced %.2f%%, unvoiced read voiced %.2f%%, VDE %.2f%%; "
          "LSD %.3f; STOI %.4f (%+.4f +- %.4f); ESTOI %.4f (%+.4f +- %.4f)" % (
              name, 100 * s('vu') / s('voiced'),
              100 * s('uv') / (s('frames') - s('voiced')),
              100 * (s('vu') + s('uv')) / s('frames'),
              np.nanmean([r[name]['lsd'] for r in R]),
              np.nanmean([r[name]['stoi'] for r in R]), np.nanmean(d),
              np.nanstd(d) / np.sqrt(len(d)),
              np.nanmean([r[name]['estoi'] for r in R]), np.nanmean(de),
              np.nanstd(de) / np.sqrt(len(de))), flush=True)
