"""python3 -m frae: the frae command's codec commands, from Python.

    python3 -m frae encode IN.wav -o OUT.fbs          # the default model
    python3 -m frae decode OUT.fbs --wav OUT.wav      # the stream's model
    python3 -m frae models                            # what is installed
    python3 -m frae features IN.wav -o f.npy [--pitch] [--f0 STEPS]
    python3 -m frae vocode f.npy -o OUT.wav
    python3 -m frae info MODEL
    python3 -m frae train WAVDIR --recipe speech --epochs 50 --save M.safetensors

Each writes what the frae command of the same name writes (the same bytes
for encode, decode --wav, features and vocode), through the Python module
(frae.Codec, frae.features, frae.vocode, frae.FRAE); exit codes as the
command's: 0 done, 2 bad usage or input (one line on stderr)."""
import argparse
import glob
import os
import sys

import numpy as np

import frae


def _fail(msg):
    print("python3 -m frae: %s" % msg, file=sys.stderr)
    return 2


def _report(*outputs):
    """Where the command's report goes: standard output, or standard error
    once an output is standard output itself ("-", /dev/stdout), so that
    the report never mixes with the output's bytes (as the frae command)."""
    return sys.stderr if any(p and frae._output_fd(p) == 1 for p in outputs) else sys.stdout


def _shared_descriptor(a, b):
    """Two outputs naming one descriptor ("-o - --wav /dev/stdout"): refused
    as the frae command refuses them."""
    return a and b and frae._output_fd(a) >= 0 and frae._output_fd(a) == frae._output_fd(b)


def _is_model(arg):
    if arg in frae.models():
        return True
    try:  # a FIFO is no model, and is not waited on
        with frae._open_regular(arg) as f:
            head = f.read(9)
    except (OSError, frae.FraeError):
        return False
    return len(head) == 9 and head[8:9] == b"{"


def _codec_given(a, side):
    """The codec options given on the command line ({keyword: text, or
    True for a flag}), for the library to parse as 'frae encode' does."""
    given = {}
    for row, metavar, sides, _, _ in frae._frae.codec_options():
        v = getattr(a, row.replace("-", "_"), None)
        if sides & side and v not in (None, False):
            given[row.replace("-", "_")] = v
    return given


def cmd_encode(a):
    pos = list(a.args)
    model = pos.pop(0) if len(pos) == 2 or (pos and _is_model(pos[0]) and len(pos) > 1) else None
    if len(pos) != 1 or not a.output:
        return _fail("encode: needs [MODEL] IN and -o OUT.fbs")
    c = frae.Codec(model)
    src = pos[0]
    x = np.load(src) if src.endswith(".npy") else src
    stream = c.encode(x, fbs=a.output, **_codec_given(a, frae.ENCODES))
    print("%s -> %s: %d bytes (%s)" % (src, a.output, len(stream), os.path.basename(c.path)),
          file=_report(a.output))
    return 0


def cmd_decode(a):
    pos = list(a.args)
    model = pos.pop(0) if pos and _is_model(pos[0]) else None
    if len(pos) == 2 and not a.wav and not pos[1].endswith(".npy"):
        a.wav = pos.pop()
    elif len(pos) == 2 and not a.output:
        a.output = pos.pop()
    if len(pos) != 1 or not (a.wav or a.output):
        return _fail("decode: needs [MODEL] IN.fbs and --wav OUT.wav or -o OUT.npy")
    if _shared_descriptor(a.output, a.wav):
        return _fail("decode: -o %s and --wav %s: two outputs cannot share one descriptor"
                     % (a.output, a.wav))
    c = frae.Codec(model) if model else None
    with frae._open_regular(pos[0]) as f:
        stream = f.read()
    if c is None:
        c = frae.Codec()
    if a.output:
        y = c.decode(stream, frames=True)
        with frae._output(a.output) as f:  # the name as given: no .npy added
            np.save(f, y)
        del y
    if a.wav:  # frame by frame into the WAV, as frae decode --wav
        c.decode_to_wav(stream, a.wav, **_codec_given(a, frae.DECODES))
    print("%s -> %s" % (pos[0], a.wav or a.output), file=_report(a.output, a.wav))
    return 0


def cmd_models(a):
    found = frae.models()
    if not found:
        print("no shipped models found (FRAE_MODELS, PREFIX/share/frae/models, or the "
              "source tree's models/: 'make models' builds them)")
        return 0
    manifest = {}
    for d in frae.models_dirs():
        p = os.path.join(d, "MANIFEST")
        if os.path.exists(p):
            for line in open(p, encoding="utf-8"):
                f = line.rstrip("\n").split("\t")
                if not line.startswith("#") and len(f) == 5:
                    manifest.setdefault(os.path.join(d, f[0]), f)
    for name, path in found.items():
        # as frae models: a listing goes on past a bad file, and says why
        try:
            m = frae.load(path)
        except (frae.FraeError, OSError, ValueError) as e:
            print("python3 -m frae: models: %s" % e, file=sys.stderr)
            print("  %-14s does not load (stderr says why)" % name)
            continue
        cfg, info = m._config(), m._inference(1).info()
        f = manifest.get(path)
        rate = f[3] if f else ("variable rate" if cfg["prior_hidden"] else
                               "%.2f kbit/s fixed" % (info["bits_per_frame"] / 10))
        lat = m.latency  # load checked the features it is computed from
        print("  %-14s %s, %d codes%s; latency %s%s; hash %016x" % (
            name, rate, cfg["latent_dim"], " + pitch" if cfg["pitch"] else "",
            "%g ms" % lat if lat is not None else "unknown (no audio features)",
            " + the packet" if cfg["prior_hidden"] else "", info["hash"]))
        print("                 %s; trained on: %s" % (path, f[4] if f else "(no MANIFEST)"))
    return 0


def cmd_features(a):
    if len(a.args) != 1 or not a.output:
        return _fail("features: needs IN and -o OUT.npy")
    if not frae._output_seekable(a.output):  # as frae features refuses it
        return _fail("features: %s: the frames are counted only at the end, and the .npy "
                     "header that holds the count comes first: give a file, not a pipe"
                     % a.output)
    f = frae.features(a.args[0], pitch=a.pitch, f0=a.f0)
    with frae._output(a.output) as out:  # the name as given: no .npy added
        np.save(out, f)
    print("%s -> %s: %d frames x %d" % (a.args[0], a.output, f.shape[0], f.shape[1]),
          file=_report(a.output))
    return 0


def cmd_vocode(a):
    if len(a.args) != 1 or not a.output:
        return _fail("vocode: needs IN.npy and -o OUT.wav")
    frae.write_wav(a.output, frae.vocode(np.load(a.args[0])))
    print("%s -> %s" % (a.args[0], a.output), file=_report(a.output))
    return 0


def cmd_info(a):
    if len(a.args) != 1:
        return _fail("info: needs MODEL")
    path = frae.Codec._resolve(a.args[0])
    m = frae.load(path)
    print("%s: %s, hash %016x" % (path, m.summary(), m._inference(1).info()["hash"]))
    return 0


def cmd_train(a):
    if not a.args or not a.save:
        return _fail("train: needs DATA (WAV files or directories) and --save MODEL")
    wavs = []
    for p in a.args:
        wavs += sorted(glob.glob(os.path.join(p, "*.wav"))) if os.path.isdir(p) else [p]
    # the envelope trains (the pitch coder is fixed): the log-mel columns
    x = [frae.features(w) for w in wavs]
    m = frae.FRAE(recipe=a.recipe)
    m.fit(x, epochs=a.epochs, verbose=1)
    # the features it was trained on (frae.features' defaults), recorded as
    # 'frae train' records them, so that frae encode takes audio for it
    feats = (16000, 80, 160, 400, 512, 0.0, 8000.0, 1e-7, 5.0, 5.0)
    meta = {"features." + k: "%.9g" % v for k, v in zip(frae._FEATURE_KEYS, feats)}
    m._any().save(os.fspath(a.save), True, meta)
    print("%d files, %d epochs -> %s" % (len(wavs), a.epochs, a.save))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m frae", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    for name, fn in (("encode", cmd_encode), ("decode", cmd_decode), ("models", cmd_models),
                     ("features", cmd_features), ("vocode", cmd_vocode), ("info", cmd_info),
                     ("train", cmd_train)):
        p = sub.add_parser(name, help=(fn.__doc__ or name))
        p.set_defaults(fn=fn)
        p.add_argument("args", nargs="*")
        if name in ("encode", "decode", "features", "vocode"):
            p.add_argument("-o", "--output")
        if name in ("encode", "decode"):  # libfrae's codec table's rows
            side = frae.ENCODES if name == "encode" else frae.DECODES
            for row, metavar, sides, help_, deflt in frae._frae.codec_options():
                if sides & side:
                    p.add_argument("--" + row, help=help_,
                                   **({"action": "store_true"} if metavar is None
                                      else {"metavar": metavar}))
        if name == "decode":
            p.add_argument("--wav")
        if name == "features":
            p.add_argument("--pitch", action="store_true")
            p.add_argument("--f0", metavar="STEPS", help="yin, yin-hp or refined (the default)")
        if name == "train":
            p.add_argument("--recipe", default="speech")
            p.add_argument("--epochs", type=int, default=50)
            p.add_argument("--save")
    a = ap.parse_args(argv)
    if not a.cmd:
        ap.print_help()
        return 2
    try:
        return a.fn(a)
    except (frae.FraeError, OSError, ValueError) as e:
        return _fail("%s: %s" % (a.cmd, e))


if __name__ == "__main__":
    sys.exit(main())
