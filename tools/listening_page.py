#!/usr/bin/python3
"""The demo's listening page: demo/index.html, plain HTML that needs
nothing but a browser, offline (every file it names sits beside it, no
script or style from the network).

For every held-out utterance, audio players side by side: the original and
each system (every FRAE codec the demo trains, Codec2, Opus), and the
utterance's spectrogram picture; above them the results table and the
figures.  A small script in the page checks, once the page has loaded,
that every audio element's metadata and every image loaded, and writes what
it found (each audio's duration, each image's size) into the element
#selfcheck as JSON: tests/page_test.py renders the page in headless
Chromium and reads it back.

Also usable alone: listening_page.py check DIR renders DIR/index.html in
headless Chromium, checks it (durations against the WAV files) and writes
DIR/index.png, a screenshot."""
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import wave

STYLE = """
body { font-family: sans-serif; margin: 1.5em; max-width: 1400px; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
th { background: #f0f0f0; }
.utt { margin: 1.5em 0; padding-top: 0.5em; border-top: 2px solid #ddd; }
.players { display: flex; flex-wrap: wrap; gap: 0.6em; }
.player { border: 1px solid #ddd; padding: 0.3em 0.5em; width: 300px; }
.player .label { font-size: 0.85em; margin-bottom: 0.2em; }
audio { width: 100%; }
img { max-width: 100%; }
.utt > img { display: block; margin-top: 0.5em; }
.figs img { max-width: 32%; vertical-align: top; }
#selfcheck { display: none; }
"""

# Runs once everything has settled: every audio element's metadata (or
# error) and every image, then the findings as JSON in #selfcheck.
SCRIPT = """
(function () {
  var audios = Array.prototype.slice.call(document.querySelectorAll('audio'));
  var images = Array.prototype.slice.call(document.querySelectorAll('img'));
  var pending = audios.length + images.length;
  var report = {audio: [], images: [], done: false};
  function finish() {
    if (--pending > 0) return;
    report.done = true;
    document.getElementById('selfcheck').textContent = JSON.stringify(report);
    document.title = document.title.replace(/ \\[.*\\]$/, '') + ' [checked]';
  }
  audios.forEach(function (a) {
    var src = a.getAttribute('src');
    function ok() { report.audio.push({src: src, duration: a.duration, error: null}); finish(); }
    function bad() { report.audio.push({src: src, duration: null,
                                        error: a.error ? a.error.code : 'error'}); finish(); }
    if (a.readyState >= 1) ok();
    else { a.addEventListener('loadedmetadata', ok, {once: true});
           a.addEventListener('error', bad, {once: true}); a.load(); }
  });
  images.forEach(function (im) {
    function done() { report.images.push({src: im.getAttribute('src'),
                      width: im.naturalWidth, height: im.naturalHeight}); finish(); }
    if (im.complete) done();
    else { im.addEventListener('load', done, {once: true});
           im.addEventListener('error', done, {once: true}); }
  });
  if (pending === 0) { pending = 1; finish(); }
})();
"""


def md_table_to_html(md):
    """A markdown pipe table (the demo's report) as an HTML table."""
    rows = [r.strip().strip("|").split("|") for r in md.strip().splitlines()]
    rows = [[c.strip() for c in r] for r in rows if not set("".join(r)) <= set("-: ")]
    out = ["<table>", "<tr>" + "".join("<th>%s</th>" % html.escape(c) for c in rows[0])
           + "</tr>"]
    for r in rows[1:]:
        out.append("<tr>" + "".join("<td>%s</td>" % html.escape(c) for c in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def write_page(out, utterances, systems, tables=(), figures=(), notes=(),
               title="frae: listen to the codecs"):
    """Writes out/index.html.  utterances: [(name, spectrogram path or
    None)]; systems: [(label, {name: wav path})], the original first; paths
    are made relative to out and must lie inside it.  tables: [(caption,
    markdown table)]; figures: [(caption, png path)]; notes: paragraphs."""
    def rel(p):
        r = os.path.relpath(p, out)
        if r.startswith(".."):
            raise ValueError("%s is not inside %s" % (p, out))
        return html.escape(r.replace(os.sep, "/"))
    body = ["<h1>%s</h1>" % html.escape(title)]
    body += ["<p>%s</p>" % html.escape(n) for n in notes]
    for caption, md in tables:
        body.append("<h2>%s</h2>" % html.escape(caption))
        body.append(md_table_to_html(md))
    if figures:
        body.append('<h2>Figures</h2><div class="figs">')
        for caption, png in figures:
            body.append('<img src="%s" alt="%s" title="%s">'
                        % (rel(png), html.escape(caption), html.escape(caption)))
        body.append("</div>")
    body.append("<h2>Held-out utterances</h2>")
    for name, spec in utterances:
        body.append('<div class="utt" id="%s"><h3>%s</h3><div class="players">'
                    % (html.escape(name), html.escape(name)))
        for label, wavs in systems:
            if name in wavs:
                body.append('<div class="player"><div class="label">%s</div>'
                            '<audio controls preload="metadata" src="%s"></audio></div>'
                            % (html.escape(label), rel(wavs[name])))
        body.append("</div>")
        if spec:
            body.append('<img src="%s" alt="spectrograms of %s">' % (rel(spec),
                                                                     html.escape(name)))
        body.append("</div>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>%s</title><style>%s</style></head><body>\n%s\n"
            "<pre id=\"selfcheck\"></pre>\n<script>%s</script>\n</body></html>\n"
            % (html.escape(title), STYLE, "\n".join(body), SCRIPT))
    path = os.path.join(out, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def _chromium_args(profile):
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--mute-audio", "--allow-file-access-from-files",
            "--autoplay-policy=no-user-gesture-required", "--user-data-dir=" + profile]


def render(page, screenshot=None, width=1280, height=2400, budget_ms=20000):
    """Renders page (a path) in headless Chromium: the DOM once its script
    has run (virtual time: loads finish before the budget), and optionally
    a PNG screenshot.  Returns the #selfcheck JSON, or raises."""
    profile = tempfile.mkdtemp(prefix="frae-chromium-")
    url = "file://" + os.path.abspath(page)
    try:
        p = subprocess.run(_chromium_args(profile) + [
            "--virtual-time-budget=%d" % budget_ms, "--dump-dom", url],
            capture_output=True, text=True, timeout=180)
        if p.returncode:
            raise RuntimeError("chromium failed (%d): %s" % (p.returncode, p.stderr[-800:]))
        dom = p.stdout
        if screenshot:
            p = subprocess.run(_chromium_args(profile) + [
                "--virtual-time-budget=%d" % budget_ms, "--hide-scrollbars",
                "--window-size=%d,%d" % (width, height), "--screenshot=" + screenshot, url],
                capture_output=True, text=True, timeout=180)
            if p.returncode or not os.path.exists(screenshot):
                raise RuntimeError("chromium wrote no screenshot: %s" % p.stderr[-800:])
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    start = dom.find('<pre id="selfcheck">')
    end = dom.find("</pre>", start)
    text = html.unescape(dom[start + len('<pre id="selfcheck">'):end]) if start >= 0 else ""
    if not text.strip():
        raise RuntimeError("the page's self-check did not run (or did not finish)")
    return json.loads(text)


def wav_seconds(path):
    with wave.open(path) as w:
        return w.getnframes() / float(w.getframerate())


def check(out, screenshot=True):
    """Renders out/index.html and checks it: every audio element loaded,
    with the duration of its file (within 10 ms), every image loaded.
    Returns a list of problems (empty: all good) and the report."""
    page = os.path.join(out, "index.html")
    shot = os.path.join(out, "index.png") if screenshot else None
    rep = render(page, shot)
    problems = []
    if not rep.get("done"):
        problems.append("the self-check did not finish")
    for a in rep["audio"]:
        path = os.path.join(out, a["src"])
        if a["error"] is not None or a["duration"] is None:
            problems.append("%s did not load (error %s)" % (a["src"], a["error"]))
        elif not os.path.exists(path):
            problems.append("%s is missing" % a["src"])
        elif abs(a["duration"] - wav_seconds(path)) > 0.01:
            problems.append("%s: the browser says %.3f s, the file holds %.3f s"
                            % (a["src"], a["duration"], wav_seconds(path)))
    for im in rep["images"]:
        if not im["width"] or not im["height"]:
            problems.append("image %s did not load" % im["src"])
    if shot and not os.path.getsize(shot):
        problems.append("the screenshot is empty")
    return problems, rep


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "check":
        sys.exit("usage: listening_page.py check DIR")
    probs, rep = check(sys.argv[2])
    print("%s: %d audio players, %d images; %s" % (
        os.path.join(sys.argv[2], "index.html"), len(rep["audio"]), len(rep["images"]),
        "all loaded, durations match their files" if not probs else "; ".join(probs[:5])))
    sys.exit(1 if probs else 0)
