#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/:
small valid inputs of every format frae reads, and the hostile files of
tests/hostile_test.py, so that fuzzing starts from both sides of every
check.  The seeds are tracked; rerun this only to change them.

Usage: fuzz/make_seeds.py path/to/frae     (needs python3-numpy)"""
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import hostile_test as hostile  # noqa: E402

FRAE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/frae")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def main():
    tmp = tempfile.mkdtemp(prefix="frae-seeds-")
    try:
        rng = np.random.default_rng(3)
        # .npy: both dtypes, both ranks, a version 2 header
        put("npy", "f4_2d.npy", npy_bytes(rng.standard_normal((3, 4)).astype("<f4")))
        put("npy", "f8_3d.npy", npy_bytes(rng.standard_normal((2, 3, 2))))
        b = io.BytesIO()
        np.lib.format.write_array(b, np.ones((2, 2), "<f4"), version=(2, 0))
        put("npy", "v2.npy", b.getvalue())
        # a tiny model: D 2, K 1, encoder 3, L 2, decoder 3
        small = ["--frame-dim", "2", "--history", "1", "--enc", "3", "--latent", "2",
                 "--dec", "3", "--quantizer", "uniform:4"]
        ck = os.path.join(tmp, "m.safetensors")
        subprocess.run([FRAE, "train", *small, "--epochs", "1", "--sequences", "4",
                        "--frames", "5", "--batch", "2", "--save", ck, "--progress", "off"],
                       check=True, capture_output=True)
        put("safetensors", "checkpoint.safetensors", open(ck, "rb").read())
        subprocess.run([FRAE, "convert", ck, "-o", os.path.join(tmp, "b.safetensors"),
                        "--weights", "bf16"], check=True, capture_output=True)
        put("safetensors", "bf16.safetensors", open(os.path.join(tmp, "b.safetensors"), "rb").read())
        # the same shapes as a GRU model (both GRUs 3 units): a checkpoint
        # and, below, its Keras GRU(reset_after=True) weights
        ckg = os.path.join(tmp, "g.safetensors")
        subprocess.run([FRAE, "train", *small, "--family", "gru", "--epochs", "1",
                        "--sequences", "4", "--frames", "5", "--batch", "2", "--save", ckg,
                        "--progress", "off"], check=True, capture_output=True)
        put("safetensors", "gru.safetensors", open(ckg, "rb").read())
        # normalization statistics and crops in the metadata and training
        # state: a model trained with --normalize on and --crop
        ckn = os.path.join(tmp, "n.safetensors")
        subprocess.run([FRAE, "train", *small, "--normalize", "on", "--crop", "3",
                        "--epochs", "1", "--sequences", "4", "--frames", "5", "--batch", "2",
                        "--save", ckn, "--progress", "off"], check=True, capture_output=True)
        put("safetensors", "normalized_crops.safetensors", open(ckn, "rb").read())
        # the level term and the squared error's emphasis in the metadata
        cke = os.path.join(tmp, "e.safetensors")
        subprocess.run([FRAE, "train", *small, "--level-loss", "0.5", "--emphasis", "2",
                        "--emphasis-from", "1", "--emphasis-to", "2", "--epochs", "1",
                        "--sequences", "4", "--frames", "5", "--batch", "2", "--save", cke,
                        "--progress", "off"], check=True, capture_output=True)
        put("safetensors", "emphasis_level.safetensors", open(cke, "rb").read())
        gru_shapes = [(7, 9), (3, 9), (2, 9), (3, 2), (2,), (4, 9), (3, 9), (2, 9), (3, 2), (2,)]
        b = io.BytesIO()
        rng_gru = np.random.default_rng(4)  # its own: the older seeds stay as they were
        np.savez(b, *[rng_gru.standard_normal(s).astype("<f4") for s in gru_shapes])
        gru_npz = b.getvalue()
        npz_path = os.path.join(tmp, "g.npz")
        open(npz_path, "wb").write(gru_npz)
        subprocess.run([FRAE, "import", npz_path, "--family", "gru", "--quantizer", "uniform:4",
                        "-o", os.path.join(tmp, "gi.safetensors")], check=True,
                       capture_output=True)
        put("npz", "keras_gru.npz", gru_npz)
        # .npz: Keras get_weights() order of the same shapes
        shapes = [(4, 3), (3,), (3, 2), (2,), (4, 3), (3,), (3, 2), (2,)]
        b = io.BytesIO()
        np.savez(b, *[rng.standard_normal(s).astype("<f4") for s in shapes])
        put("npz", "keras.npz", b.getvalue())
        stored = np.load(io.BytesIO(b.getvalue()))
        b = io.BytesIO()  # the same arrays, deflated (np.savez_compressed)
        np.savez_compressed(b, *[stored["arr_%d" % i] for i in range(len(shapes))])
        put("npz", "keras_compressed.npz", b.getvalue())
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            for i, s in enumerate(shapes):
                with z.open("arr_%d.npy" % i, "w", force_zip64=True) as f:
                    f.write(npy_bytes(rng.standard_normal(s).astype("<f8")))
        put("npz", "keras_zip64.npz", b.getvalue())
        # audio: PCM 16 kHz, float 8 kHz stereo, FLAC, each a few hundred ms
        t = np.arange(1600) / 16000.0
        tone = 0.3 * np.sin(2 * np.pi * 440 * t)
        put("audio", "pcm16.wav", hostile.wav_bytes(tone, 16000, "pcm16"))
        put("audio", "float8k_stereo.wav",
            hostile.wav_bytes(np.stack([tone[::2], tone[1::2]], 1), 8000, "float"))
        wav = os.path.join(tmp, "t.wav")
        open(wav, "wb").write(hostile.wav_bytes(tone, 16000, "pcm16"))
        flac = os.path.join(tmp, "t.flac")
        if shutil.which("sox"):
            subprocess.run(["sox", wav, flac], check=True)
            put("audio", "tone.flac", open(flac, "rb").read())
        # the hostile files, each in its target's corpus
        for target, name, data in hostile.fuzz_seeds(tmp, ck):
            put(target, name, data)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
