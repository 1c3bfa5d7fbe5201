#!/bin/sh
# The thread tests of one build: N threads coding N streams over one
# shared const model (shared_model_test), then the Python module from
# several threads (python_thread_test.sh).  In a ThreadSanitizer build a
# race is a report, and TSan exits 66 after it: a failure.  Ends with one
# "N passed, N failed" over both, as run_all.sh and test.sh read.
# Usage: tests/threads_test.sh BUILD_DIR
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
pass=0
fail=0
summary='^[0-9][0-9]* passed, [0-9][0-9]* failed$'
add() { # $1: the output, $2: the status, $3: the name
    last=$(printf '%s\n' "$1" | grep "$summary" | tail -n 1)
    p=$(printf '%s' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(printf '%s' "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    printf '%s\n' "$1" | grep -v "$summary"
    if [ -z "$p" ]; then
        echo "    FAIL $3 exited $2 without a summary (a crash?)"
        p=0 f=1
    elif [ "$2" != 0 ] && [ "$f" = 0 ]; then
        echo "    FAIL $3 exited $2: a sanitizer's report above"
        f=1
    fi
    pass=$((pass + p))
    fail=$((fail + f))
}
echo "== N threads, N streams, one shared const model ($BUILD)"
out=$(TSAN_OPTIONS="suppressions=$here/tsan.supp" "$BUILD/shared_model_test" 2>&1)
add "$out" $? shared_model_test
echo "== the Python module from several threads ($BUILD)"
out=$(sh "$here/python_thread_test.sh" "$BUILD" 2>&1)
add "$out" $? python_thread_test.sh
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
