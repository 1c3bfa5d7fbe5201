#!/bin/sh
# Runs every test: installs what is missing (Debian packages), builds, runs
# the suite, runs it again under AddressSanitizer + UBSan, and fuzzes the
# bitstream reader for a bounded time.
# Closes with one "N passed, N failed" line over both runs.
set -u
cd "$(dirname "$0")"
sh scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pass=0
fail=0
for target in "all test" "test-asan"; do
    echo "=== make $target"
    make -j"$jobs" $target 2>&1 | tee "$log"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -n "$summary" ]; then
        pass=$((pass + ${summary%% passed*}))
        f=${summary#*passed, }
        fail=$((fail + ${f%% failed*}))
    else
        fail=$((fail + 1)) # the build itself failed
    fi
done
# the bitstream fuzzer, briefly (make fuzz FUZZ_SECONDS=600 for longer)
echo "=== make fuzz"
if make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-20}"; then
    echo "    ok   fuzz_bitstream: no crash"
    pass=$((pass + 1))
else
    echo "    FAIL fuzz_bitstream (see build-fuzz/fuzz.log and crash-* files)"
    fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
