"""The library's layers read top to bottom: no loop of source files
calling each other.  From the objects of a build (nm: what each defines
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
    objs = [o for o in objs if not os.path.basename(o).startswith("gru_avx")]
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
    return summary()


if __name__ == "__main__":
    sys.exit(main())
