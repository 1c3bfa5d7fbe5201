#!/usr/bin/python3
"""The demo's listening page (tools/listening_page.py) in a real browser:
a small demo directory (WAVs of known lengths, figures, a table) made into
index.html by the demo's own code, rendered in headless Chromium (Debian's
chromium): every audio element and image must load, each audio element
must report its file's duration, and a screenshot is written; a page with
a missing file and one with a cut WAV must be caught.  The page is for
people: each sentence's text above its players, the original first and
the codecs beside it in one row, systems past the first few behind "more
systems", the sentence's picture after its players, and the tables below
every sentence.

Usage: page_test.py   Prints "N passed, N failed" last (after "1 skipped"
when Chromium is not installed)."""
import os
import shutil
import struct
import sys
import tempfile
import wave
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import listening_page as lp  # noqa: E402
from checks import check, summary  # noqa: E402


def write_wav(path, seconds, rate=16000):
    n = int(seconds * rate)
    with wave.open(path, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * ((i // 40) % 2 - 0.5)))
                               for i in range(n)))


def write_png(path, width, height):
    """A grey PNG, by hand (zlib and struct)."""
    raw = b"".join(b"\x00" + bytes([(x * 7 + y) % 256 for x in range(width)])
                   for y in range(height))
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0,
                                                              0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    open(path, "wb").write(png)


def make_demo(out):
    os.makedirs(os.path.join(out, "wav"))
    os.makedirs(os.path.join(out, "spec"))
    utts, systems = [], []
    lengths = {"utt-a": 1.25, "utt-b": 2.5}
    for label, key in (("original", "original"), ("FRAE GRU 1.6 kbit/s", "frae"),
                       ("Codec2 1300", "codec2"), ("Opus 6 kbit/s", "opus")):
        wavs = {}
        for name, secs in lengths.items():
            p = os.path.join(out, "wav", "%s-%s.wav" % (name, key))
            write_wav(p, secs + (0.01 if key == "opus" else 0))
            wavs[name] = p
        systems.append((label, wavs))
    for name in lengths:
        spec = os.path.join(out, "spec", name + ".png")
        write_png(spec, 320, 120)
        utts.append((name, spec))
    fig = os.path.join(out, "rate_quality.png")
    write_png(fig, 200, 150)
    table = ("| system | kbit/s | LSD |\n| --- | --- | --- |\n| FRAE GRU 1.6 kbit/s | 1.68 | 6.3 |\n"
             "| Codec2 1300 | 1.30 | 7.1 |")
    return lp.write_page(out, utts, systems, tables=[("Results", table)],
                         figures=[("rate and quality", fig)], notes=["a test page"],
                         texts=TEXTS, primary=3, intro="Listen.")


TEXTS = {"utt-a": "The quick brown fox jumps over the lazy dog.",
         "utt-b": "Glue the sheet to the dark blue background."}


def main():
    if not lp.chromium():
        print("    skip: no chromium (scripts/install-deps.sh installs it)")
        print("1 skipped")
        return summary()
    tmp = tempfile.mkdtemp(prefix="frae-page-")
    try:
        out = os.path.join(tmp, "demo")
        os.makedirs(out)
        page = make_demo(out)
        text = open(page).read()
        check("http://" not in text and "https://" not in text,
              "the page names nothing on the network")
        problems, rep = lp.check(out)
        check(not problems and len(rep["audio"]) == 8 and len(rep["images"]) == 3,
              "in Chromium: 8 audio players and 3 images load, each audio's duration its "
              "file's", "; ".join(problems) or str(rep)[:400])
        utts = rep["utts"]
        check([u["text"] for u in utts] == [TEXTS["utt-a"], TEXTS["utt-b"]],
              "each sentence's text heads its players", str([u["text"] for u in utts]))
        check(all([p["label"] for p in u["players"]] ==
                  ["original", "FRAE GRU 1.6 kbit/s", "Codec2 1300"] for u in utts),
              "the original first, then the codecs, in each sentence's row",
              str([[p["label"] for p in u["players"]] for u in utts]))
        check(all(len({round(p["top"]) for p in u["players"]}) == 1 and
                  sorted(p["left"] for p in u["players"]) == [p["left"] for p in u["players"]]
                  for u in utts),
              "side by side: one row, left to right", str(utts)[:400])
        check(text.count("<details>") == 2 and text.count("1 more systems") == 2,
              "past primary=3, the rest behind 'more systems'", "")
        check(all(u["textTop"] < min(p["top"] for p in u["players"]) < u["imgTop"]
                  for u in utts),
              "text, then the players, then the sentence's picture", str(utts)[:400])
        check(rep["tables"] and min(t["top"] for t in rep["tables"]) >
              max(u["imgTop"] for u in utts),
              "the tables below every sentence", str(rep["tables"]))
        durations = sorted(round(a["duration"], 2) for a in rep["audio"])
        check(durations[:3] == [1.25] * 3 and durations[-1] == 2.51,
              "the durations are the files' own (1.25 s, 2.5 s, 2.51 s)", str(durations))
        shot = os.path.join(out, "index.png")
        check(os.path.exists(shot) and open(shot, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
              and os.path.getsize(shot) > 10000, "a screenshot is written",
              shot if os.path.exists(shot) else "none")
        # what the check must catch
        os.remove(os.path.join(out, "wav", "utt-b-codec2.wav"))
        problems, _ = lp.check(out, screenshot=False)
        check(any("utt-b-codec2.wav" in p for p in problems),
              "a missing WAV is caught", "; ".join(problems))
        os.remove(os.path.join(out, "spec", "utt-a.png"))
        problems, _ = lp.check(out, screenshot=False)
        check(any("utt-a.png" in p for p in problems), "a missing picture is caught",
              "; ".join(problems))
        cut = os.path.join(out, "wav", "utt-a-frae.wav")
        write_wav(cut, 0.5)
        lengths = {a["src"]: a["duration"] for a in lp.render(page)["audio"]}
        check(abs(lengths["wav/utt-a-frae.wav"] - 0.5) < 0.01,
              "the browser reads each file's own length (a shortened WAV: 0.5 s)",
              str(lengths))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
