"""The tree's shape (issue 36): no source file of the libraries, the
command or the extension over MAX_FILE lines unless its opening comment
says why (a line with "one file:"), and no function over MAX_FUNCTION
lines (MAX_CLI_FUNCTION in the command); and every tracked C file as .clang-format lays it out (clang-format
14).  Usage: layout_test.py [ROOT]"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, summary  # noqa: E402

MAX_FILE = 800
MAX_FUNCTION = 150
MAX_CLI_FUNCTION = 80  # the command is argument handling and printing (issue 47)


def strip(text):
    """Comments and string/char literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, lines) of each function definition."""
    code = strip(text)
    found, depth, start = [], 0, None
    for m in re.finditer(r"[{}]", code):
        if m.group() == "{":
            if depth == 0:
                before = code[:m.start()].rstrip()
                head = re.search(r"(\w+)\s*\([^;{}]*\)\s*$", before)
                if before.endswith(")") and head and head.group(1) not in ("if", "for", "while", "switch"):
                    start = (head.group(1), code.count("\n", 0, head.start()) + 1)
            depth += 1
        else:
            depth -= 1
            if depth == 0 and start:
                end = code.count("\n", 0, m.start()) + 1
                found.append((start[0], start[1], end - start[1] + 1))
                start = None
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = sorted(glob.glob(os.path.join(root, "src", "*", "*.c")) +
                   glob.glob(os.path.join(root, "src", "*", "*.h")) +
                   glob.glob(os.path.join(root, "include", "*.h")) +
                   glob.glob(os.path.join(root, "python", "frae", "*.c")))
    long_files, long_functions = [], []
    for path in files:
        with open(path) as f:
            text = f.read()
        rel = os.path.relpath(path, root)
        lines = text.count("\n")
        opening = text[:text.find("*/")] if text.startswith("/*") else ""
        if lines > MAX_FILE and "one file:" not in opening:
            long_files.append("%s (%d lines)" % (rel, lines))
        for name, at, n in functions(text):
            cli = rel.startswith("src/cli/")
            if n > (MAX_CLI_FUNCTION if cli else MAX_FUNCTION):
                long_functions.append("%s:%d %s (%d lines)" % (rel, at, name, n))
    check(len(files) > 40 and not long_files,
          "no source file over %d lines without its reason (%d files)" % (MAX_FILE, len(files)),
          "; ".join(long_files))
    check(not long_functions, "no function over %d lines (%d in src/cli)"
          % (MAX_FUNCTION, MAX_CLI_FUNCTION),
          "; ".join(long_functions))
    # docs/layout.md names every source file of src/ and python/frae/ in
    # its folder's entry (a file added without it is a map gone stale)
    layout = open(os.path.join(root, "docs", "layout.md")).read()
    entries, folder = {}, None
    for line in layout.splitlines():
        m = re.match(r"^(src/\w+/|python/frae/)\s", line)
        if m:
            folder = m.group(1)
        elif line and not line.startswith(" "):
            folder = None
        if folder:
            entries[folder] = entries.get(folder, "") + " " + line
    missing = []
    for path in files + glob.glob(os.path.join(root, "python", "frae", "*.py")):
        rel = os.path.relpath(path, root)
        folder, name = os.path.dirname(rel) + "/", os.path.basename(rel)
        if folder.startswith("include/"):
            continue
        stem, ext = os.path.splitext(name)
        text = entries.get(folder, "")
        if not re.search(r"(?<![\w.])%s(?![\w])" % re.escape(name), text) and \
                not re.search(r"(?<![\w.])%s(\.c)?/\.%s" % (re.escape(stem), ext[1:]), text) and \
                not (stem.startswith("kernels") and "kernels*.c" in text):
            missing.append(rel)
    check(not missing, "docs/layout.md names every source file in its folder's entry",
          ", ".join(missing))
    tracked = subprocess.run(["git", "ls-files", "*.c", "*.h"], cwd=root, capture_output=True,
                             text=True).stdout.split()
    tracked = [f for f in tracked if not f.endswith("pitch_counts.h")]  # generated
    try:
        fmt = subprocess.run(["clang-format", "--dry-run", "-Werror"] + tracked, cwd=root,
                             capture_output=True, text=True)
        differ = sorted({line.split(":")[0] for line in fmt.stderr.splitlines()
                         if "error:" in line})
        ok, why = fmt.returncode == 0 and len(tracked) > 40, ", ".join(differ) or fmt.stderr[-300:]
    except FileNotFoundError:
        ok, why = False, "clang-format is not installed (scripts/install-deps.sh installs it)"
    check(ok, "the %d tracked C files as .clang-format lays them out (make format)" % len(tracked),
          why)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
