#!/bin/sh
# The Python module from several threads (tests/py/thread_test.py) against one
# build.  A sanitizer build's extension loads into the uninstrumented
# /usr/bin/python3 only after its runtime: the runtime it links (ldd) is
# preloaded.  A sanitizer's report (ASan aborts, TSan exits 66 after the
# summary) or a crash counts as a failure.  Ends with "N passed, N failed",
# as run_all.sh and test.sh read.
# Usage: tests/python_thread_test.sh BUILD_DIR
BUILD=${1:-build}
ext=$(ls "$BUILD"/python/frae/_frae*.so 2>/dev/null | head -n 1)
if [ -z "$ext" ]; then
    echo "    FAIL no Python module in $BUILD"
    echo "0 passed, 1 failed"
    exit 1
fi
runtime=$(ldd "$ext" | sed -n 's/^[[:space:]]*lib[at]san\.so[.0-9]* => \([^ ]*\).*/\1/p')
case $runtime in
*asan*)
    # leaks off: the interpreter keeps its own allocations until exit, and
    # LSan would report them all; memory errors in frae still abort
    export LD_PRELOAD="$runtime" ASAN_OPTIONS=detect_leaks=0 ;;
*tsan*)
    # the suppressions name glibc only, each with its reason
    export LD_PRELOAD="$runtime" \
        TSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp" ;;
esac
out=$(/usr/bin/python3 -u tests/py/thread_test.py "$BUILD" 2>&1)
status=$?
# the script's own summary; a sanitizer may write after it
summary='^[0-9][0-9]* passed, [0-9][0-9]* failed$'
last=$(printf '%s\n' "$out" | grep "$summary" | tail -n 1)
p=$(printf '%s' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(printf '%s' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
printf '%s\n' "$out" | grep -v "$summary"
if [ -z "$p" ]; then
    echo "    FAIL thread_test.py exited $status without a summary (a crash?)"
    p=0 f=1
elif [ "$status" != 0 ] && [ "$f" = 0 ]; then
    echo "    FAIL thread_test.py exited $status: a sanitizer's report above"
    f=1
fi
echo "$p passed, $f failed"
[ "$f" = 0 ]
