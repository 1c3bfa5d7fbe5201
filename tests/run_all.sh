#!/bin/sh
# Runs the unit tests and the CLI tests of one build directory and closes
# with one "N passed, N failed" line over all (after "N skipped", when some
# test compared nothing on this machine).
# Usage: tests/run_all.sh BUILD_DIR   (from the repository root)
BUILD=${1:-build}
total_pass=0
total_fail=0
total_skip=0
run() {
    out=$("$@" 2>&1)
    status=$?
    printf '%s\n' "$out" | sed '$d'
    summary=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(printf '%s' "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -z "$p" ]; then
        # crashed before its summary: count the whole binary as one failure
        printf '%s\n' "$summary"
        echo "    FAIL $* exited $status without a summary"
        p=0 f=1
    elif [ "$status" != 0 ] && [ "$f" = 0 ]; then
        f=1
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    k=$(printf '%s\n' "$out" | sed -n 's/^\([0-9]*\) skipped$/\1/p' | tail -n 1)
    total_skip=$((total_skip + ${k:-0}))
}
echo "== unit tests ($BUILD)"
run "$BUILD/frae_tests"
echo "== the call graph: no cycle among source files ($BUILD)"
run /usr/bin/python3 tests/call_graph_test.py "$BUILD"
if [ "$BUILD" = build ]; then # the sources' shape: once is enough
    echo "== the tree's layout: file and function sizes, the C style"
    run /usr/bin/python3 tests/layout_test.py
fi
echo "== one door: the command and the Python extension call the public headers alone ($BUILD)"
run sh tests/boundary_test.sh "$BUILD"
echo "== CLI tests ($BUILD)"
run sh tests/cli_test.sh "$BUILD/frae"
echo "== workflow tests: files, checkpoints, resume, imports ($BUILD)"
run /usr/bin/python3 tests/workflow_test.py "$BUILD/frae"
echo "== hostile inputs: malformed files, forged state, long audio ($BUILD)"
run /usr/bin/python3 tests/hostile_test.py "$BUILD/frae"
echo "== damaged and hostile packet streams: decoded to the end, or refused in one line ($BUILD)"
run /usr/bin/python3 tests/stream_damage_test.py "$BUILD/frae"
echo "== the examples under a memory checker ($BUILD)"
run sh tests/examples_test.sh "$BUILD"
echo "== data-parallel training: replicas, MPI ranks ($BUILD)"
if [ "$BUILD" = build ]; then
    run /usr/bin/python3 tests/distributed_test.py "$BUILD/frae"
else # sanitizer builds have no frae-mpi
    run /usr/bin/python3 tests/distributed_test.py "$BUILD/frae" --no-mpi
fi
echo "== threads: N streams over one shared const model, the Python module ($BUILD)"
run sh tests/threads_test.sh "$BUILD" # a sanitizer's runtime preloaded
if [ "$BUILD" = build ]; then # the module loads into an uninstrumented python
    echo "== the Python module: import frae ($BUILD)"
    run sh tests/python_test.sh "$BUILD"
    echo "== the Python module the Python way: pip install . into a venv, offline"
    run sh tests/pip_install_test.sh "$BUILD/frae"
    echo "== the same bits as aarch64: the cross-machine fixtures on every ISA here"
    run sh tests/arch_test.sh "$BUILD/frae"
    echo "== the shipped models: MANIFEST, frae models, no model argument, the C default"
    run sh tests/models_test.sh "$BUILD"
    echo "== the Python codec over the shipped models (frae.Codec, python3 -m frae)"
    run /usr/bin/python3 tests/py/codec_python_test.py "$BUILD"
    echo "== the demo's listening page in headless Chromium"
    run /usr/bin/python3 tests/page_test.py
    echo "== decoded speech keeps its loudness: P.56 level, the shipped models (issue 50)"
    run /usr/bin/python3 tests/speech_level_test.py "$BUILD/frae"
    echo "== the recorded human-speech corpus: a small one, its split by speaker"
    run /usr/bin/python3 tests/human_corpus_test.py "$BUILD/frae"
    echo "== recording conditions, the shipped models under them, STOI and ESTOI (issue 48)"
    run /usr/bin/python3 tests/voices_test.py "$BUILD/frae"
    echo "== the training voices under conditions and played faster (scripts/augment-corpus.py)"
    run /usr/bin/python3 tests/augment_corpus_test.py "$BUILD/frae"
fi
if [ "$BUILD" = build ]; then # installs and links uninstrumented code
    echo "== install and pkg-config ($BUILD)"
    run sh tests/install_test.sh "$BUILD"
fi
[ "$total_skip" = 0 ] || echo "$total_skip skipped"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
