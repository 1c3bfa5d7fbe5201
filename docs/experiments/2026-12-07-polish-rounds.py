#!/usr/bin/python3
"""Decoder options side by side on the many voices' training clips (thirty-first
session, docs/2026-12-07-held-out-more.md): each clip encoded by speech-vbr
and decoded per variant, measured as tools/human_study.py measures a system.
Usage (from the tree, after make): docs/experiments/2026-12-07-polish-rounds.py
  train 10 "p2=|;p3=|--polish 3;p4=|--polish 4;p6=|--polish 6"
(each variant NAME=ENCODE OPTIONS|DECODE OPTIONS; the first the baseline)."""
import sys, os, re, tempfile, multiprocessing, pickle
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools'))
import augment, demo, human_study as hs
ROOT=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
FRAE=os.environ.get('FRAE', os.path.join(ROOT, 'build', 'frae')); MODEL=os.path.join(ROOT, 'models', 'speech-vbr.safetensors')
C=os.path.join(ROOT, 'data', 'corpus', 'voices')
VARS=[v.split('=',1) for v in sys.argv[3].split(';')]
def one(job):
    clip, wav = job
    x = augment.read_wav(wav)[0]
    res = {}
    with tempfile.TemporaryDirectory() as w:
        p=lambda n: os.path.join(w,n)
        demo.sh([FRAE, "features", "--pitch", wav, "-o", p("orig.npy")])
        ref=np.load(p("orig.npy"))[:, :80]
        ref_pitch=demo.pitch_track(wav, len(ref))
        for name, opts in VARS:
            eo, _, do = opts.partition("|")
            out=demo.sh([FRAE, "encode", MODEL, wav, "-o", p(name+".fbs"), *eo.split()])
            demo.sh([FRAE, "decode", p(name+".fbs"), "-o", p(name+".o.npy"), "--wav", p(name+".c.wav"), *do.split()])
            tc=hs.through_audio(FRAE, ref, ref_pitch, p(name+".c.wav"), w, x)
            res[name]=dict(c=tc, bytes=os.path.getsize(p(name+".fbs")), secs=len(x)/16000)
    return clip, res
rows=[l.rstrip("\n").split("\t") for l in open(C+"/clips.tsv")]
col={n:i for i,n in enumerate(rows[0])}
split=sys.argv[1]; every=int(sys.argv[2])
jobs=[(r[col["clip"]], f"{C}/wav/{split}/{r[col['clip']]}.wav") for r in rows[1:] if r[col["split"]]==split][::every]
with multiprocessing.Pool(2) as pool: R=pool.map(one, jobs)

for name,_ in VARS:
    g=lambda m: np.nanmean([r[name]['c'][m] for _,r in R], axis=0)
    kb=8*sum(r[name]['bytes'] for _,r in R)/sum(r[name]['secs'] for _,r in R)/1000
    base=VARS[0][0]; d=np.array([r[name]["c"]["stoi"][0]-r[base]["c"]["stoi"][0] for _,r in R]); d=d[~np.isnan(d)]; de=np.array([r[name]["c"]["stoi"][1]-r[base]["c"]["stoi"][1] for _,r in R]); de=de[~np.isnan(de)]
    print(name, "coded nb", np.round(g("nb"),3), "stoi", np.round(g("stoi"),4), "kbit/s %.3f"%kb, "dSTOI %+.4f+-%.4f dESTOI %+.4f+-%.4f"%(d.mean(),d.std()/np.sqrt(len(d)),de.mean(),de.std()/np.sqrt(len(de))), flush=True)
for name,_ in VARS:
    c=np.sum([r[name]['c']['pitch'] for _,r in R],axis=0)
    print(name, 'audio GPE %.2f%% VDE %.2f%%'%(100*c[0]/c[1],100*c[2]/c[3]))
