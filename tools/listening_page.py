#!/usr/bin/python3
"""The demo's listening page: demo/index.html, plain HTML that needs
nothing but a browser, offline (every file it names sits beside it, no
script or style from the network).

For every held-out sentence, its text, then audio players side by side:
the original first and each system (the FRAE codecs, Codec2, Opus; past
the first few, the rest behind "more systems"), then the sentence's
spectrogram picture; below all the sentences the results tables, the
figures and the notes.  A small script in the page checks, once the page has loaded,
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
.utt h3 { margin: 0.2em 0; font-weight: normal; font-size: 1.15em; }
.utt .name { color: #777; font-size: 0.8em; margin-bottom: 0.4em; }
.intro { max-width: 60em; }
details { margin-top: 0.4em; }
.results { margin-top: 3em; border-top: 3px solid #bbb; }
.players { display: flex; flex-wrap: wrap; gap: 0.5em; }
.player { border: 1px solid #ddd; padding: 0.3em 0.4em; flex: 1 1 0;
          min-width: 170px; max-width: 300px; }
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
  var report = {audio: [], images: [], done: false, utts: [], tables: []};
  function top(e) { var r = e.getBoundingClientRect(); return r.top + window.scrollY; }
  Array.prototype.forEach.call(document.querySelectorAll('.utt'), function (u) {
    var h = u.querySelector('h3');
    var row = u.querySelector('.players');
    report.utts.push({id: u.id, text: h ? h.textContent : null, top: top(u),
                      players: Array.prototype.map.call(row ? row.querySelectorAll('.player') : [],
                        function (p) { var r = p.getBoundingClientRect();
                          return {label: p.querySelector('.label').textContent,
                                  top: r.top + window.scrollY, left: r.left}; }),
                      textTop: h ? top(h) : null,
                      imgTop: u.querySelector(':scope > img') ? top(u.querySelector(':scope > img')) : null});
  });
  Array.prototype.forEach.call(document.querySelectorAll('table'), function (t) {
    report.tables.push({top: top(t), rows: t.rows.length});
  });
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
               title="frae: listen to the codecs", texts=None, primary=None, intro=None):
    """Writes out/index.html.  utterances: [(name, spectrogram path or
    None)]; systems: [(label, {name: wav path})], the original first; paths
    are made relative to out and must lie inside it.  texts: {name: the
    sentence spoken} (shown above its players); primary: how many systems
    (the original included) show in each sentence's row, the rest behind
    "more systems" (None: all); intro: a short paragraph at the top.
    tables: [(caption, markdown table)]; figures: [(caption, png path)];
    notes: paragraphs; all three below the sentences."""
    def rel(p):
        r = os.path.relpath(p, out)
        if r.startswith(".."):
            raise ValueError("%s is not inside %s" % (p, out))
        return html.escape(r.replace(os.sep, "/"))
    texts = texts or {}
    body = ["<h1>%s</h1>" % html.escape(title)]
    if intro:
        body.append('<p class="intro">%s</p>' % html.escape(intro))
    if tables or figures or notes:
        body.append('<p><a href="#results">The results: tables and figures</a>, below the '
                    'sentences.</p>')

    def player(label, wav):
        return ('<div class="player"><div class="label">%s</div>'
                '<audio controls preload="metadata" src="%s"></audio></div>'
                % (html.escape(label), rel(wav)))
    for name, spec in utterances:
        text = texts.get(name)
        body.append('<div class="utt" id="%s"><h3>%s</h3><div class="name">%s</div>'
                    % (html.escape(name), html.escape(text if text else name),
                       html.escape(name)))
        have = [(label, wavs[name]) for label, wavs in systems if name in wavs]
        first = have if primary is None else have[:primary]
        body.append('<div class="players">' + "".join(player(l, w) for l, w in first)
                    + "</div>")
        rest = have[len(first):]
        if rest:
            body.append('<details><summary>%d more systems</summary><div class="players">'
                        % len(rest) + "".join(player(l, w) for l, w in rest)
                        + "</div></details>")
        if spec:
            body.append('<img src="%s" alt="spectrograms of %s">' % (rel(spec),
                                                                     html.escape(name)))
        body.append("</div>")
    body.append('<div class="results" id="results">')
    for caption, md in tables:
        body.append("<h2>%s</h2>" % html.escape(caption))
        body.append(md_table_to_html(md))
    if figures:
        body.append('<h2>Figures</h2><div class="figs">')
        for caption, png in figures:
            body.append('<img src="%s" alt="%s" title="%s">'
                        % (rel(png), html.escape(caption), html.escape(caption)))
        body.append("</div>")
    if notes:
        body.append("<h2>Notes</h2>")
        body += ["<p>%s</p>" % html.escape(n) for n in notes]
    body.append("</div>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>%s</title><style>%s</style></head><body>\n%s\n"
            "<pre id=\"selfcheck\"></pre>\n<script>%s</script>\n</body></html>\n"
            % (html.escape(title), STYLE, "\n".join(body), SCRIPT))
    path = os.path.join(out, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path


def sentence_texts(names, corpus=None):
    """{name: sentence} for the corpus's utterances: the corpus's text.tsv
    (name, tab, text) where it has one, else scripts/corpus-sentences.txt's
    line N (nonempty lines, from 1) for a name NNN-k."""
    out = {}
    tsv = os.path.join(corpus, "text.tsv") if corpus else None
    if tsv and os.path.exists(tsv):
        for line in open(tsv, encoding="utf-8"):
            k, _, v = line.rstrip("\n").partition("\t")
            if k in names and v:
                out[k] = v
        return out
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "scripts", "corpus-sentences.txt")
    if not os.path.exists(path):
        return out
    lines = [l.strip() for l in open(path, encoding="utf-8") if l.strip()]
    for n in names:
        head = n.split("-")[0]
        if head.isdigit() and 1 <= int(head) <= len(lines):
            out[n] = lines[int(head) - 1]
    return out


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
            "--virtual-time-budget=%d" % budget_ms, "--window-size=%d,%d" % (width, height),
            "--dump-dom", url],
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
