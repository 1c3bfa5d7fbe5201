#!/bin/sh
# Runs every test: installs what is missing (Debian packages), builds, runs
# the suite, runs it again under AddressSanitizer + UBSan, the thread tests
# (N streams over one shared const model, the Python module from several
# threads) under ThreadSanitizer, and fuzzes the parsers (one libFuzzer
# target per input format) for a bounded time.
# Closes with one "N passed, N failed" line over all runs (after "N
# skipped" if a test compared nothing on this machine).
set -u
cd "$(dirname "$0")"
sh scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pass=0
fail=0
skip=0
for target in "all test" "test-asan" "test-tsan"; do
    echo "=== make $target"
    make -j"$jobs" $target 2>&1 | tee "$log"
    k=$(sed -n 's/^\([0-9]*\) skipped$/\1/p' "$log" | tail -n 1)
    skip=$((skip + ${k:-0}))
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -n "$summary" ]; then
        pass=$((pass + ${summary%% passed*}))
        f=${summary#*passed, }
        fail=$((fail + ${f%% failed*}))
    else
        fail=$((fail + 1)) # the build itself failed
    fi
done
# every parser's fuzzer, briefly (make fuzz FUZZ_SECONDS=600 for longer):
# one "ok" or "FAIL" line per target
echo "=== make fuzz"
make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-12}" 2>&1 | tee "$log"
p=$(grep -c '^    ok   fuzz_' "$log")
f=$(grep -c '^    FAIL fuzz_' "$log")
[ $((p + f)) = 0 ] && f=1 # the fuzzers did not build
pass=$((pass + p))
fail=$((fail + f))
# a skipped test compared nothing here: counted apart, never as a pass
[ "$skip" = 0 ] || echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
