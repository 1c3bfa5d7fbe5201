"""The library's layers read top to bottom: no loop of source files
calling each other, and no call from a folder of src/ into one of the
same or a higher layer (LAYERS: base, then core, then io, then codec,
audio and train side by side, then cli).  From the objects of a build (nm: what each defines
and what it uses), the file-level call graph and its strongly connected
components; a component of more than one file is a cycle, printed with the
calls that close it.  Usage: call_graph_test.py BUILD_DIR"""
import collections
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, summary  # noqa: E402


def graph(build):
    objs = sorted(glob.glob(os.path.join(build, "src", "**", "*.o"), recursive=True))
    # per ISA copies of one source (gru_avx2.o is gru.c again) are one file
    objs = [o for o in objs if not os.path.basename(o).startswith(("gru_avx", "gru_neon"))]
    # objects of sources that are gone (a build from before a move) are not the tree's
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    objs = [o for o in objs
            if os.path.exists(os.path.join(root, "src", os.path.relpath(o, os.path.join(build, "src"))[:-2] + ".c"))]
    defined, uses = {}, collections.defaultdict(set)
    for o in objs:
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBR":
                defined[f[2]] = o
            elif len(f) == 2 and f[0] == "U":
                uses[o].add(f[1])
    edges = collections.defaultdict(dict)
    for o, names in uses.items():
        for n in names:
            if n in defined and defined[n] != o:
                edges[o].setdefault(defined[n], []).append(n)
    return objs, edges


# src/'s folders, lowest first; a folder calls only into lower ones
LAYERS = {"base": 0, "core": 1, "io": 2, "codec": 3, "audio": 3, "train": 3, "cli": 4}


def upward(build, edges):
    """Calls from a folder into one of the same or a higher layer."""
    folder = lambda o: os.path.relpath(o, os.path.join(build, "src")).split(os.sep)[0]  # noqa: E731
    bad = []
    for a, targets in edges.items():
        for b, names in targets.items():
            fa, fb = folder(a), folder(b)
            if fa != fb and LAYERS.get(fb, 99) >= LAYERS.get(fa, -1):
                bad.append("%s -> %s (%s)" % (os.path.relpath(a, build), os.path.relpath(b, build),
                                              ", ".join(sorted(names)[:3])))
    return bad


def includes_upward(root):
    """#include "FOLDER/x.h" from a folder of src/ into a higher layer."""
    bad = []
    for path in sorted(glob.glob(os.path.join(root, "src", "*", "*.[ch]"))):
        fa = os.path.basename(os.path.dirname(path))
        with open(path) as f:
            for line in f:
                if line.startswith('#include "') and "/" in line:
                    fb = line.split('"')[1].split("/")[0]
                    if fb != fa and LAYERS.get(fb, 99) >= LAYERS.get(fa, -1):
                        bad.append("%s includes %s" % (os.path.relpath(path, root), line.split('"')[1]))
    return bad


def cycles(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return found


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    objs, edges = graph(build)
    found = cycles(objs, edges)
    rel = lambda o: os.path.relpath(o, os.path.join(build, "src"))  # noqa: E731
    why = "; ".join("%s -> %s (%s)" % (rel(a), rel(b), ", ".join(sorted(edges[a][b])[:3]))
                    for comp in found for a in comp for b in edges[a] if b in comp)
    check(len(objs) > 20 and not found,
          "no call cycle among the %d source files of %s" % (len(objs), build), why)
    folders = sorted({os.path.relpath(o, os.path.join(build, "src")).split(os.sep)[0] for o in objs})
    bad = upward(build, edges)
    check(set(folders) <= set(LAYERS) and not bad,
          "src/'s folders call only downhill (%s)" % " < ".join(
              "/".join(sorted(f for f in LAYERS if LAYERS[f] == r)) for r in sorted(set(LAYERS.values()))),
          "; ".join(bad[:8]) + (" folders: %s" % folders if not set(folders) <= set(LAYERS) else ""))
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = includes_upward(root)
    check(not bad, "src/'s folders include only their own or lower layers' headers",
          "; ".join(bad[:8]))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
