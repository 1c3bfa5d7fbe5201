#!/bin/sh
# The core suite of the aarch64 build (make CROSS=aarch64-linux-gnu-) under
# qemu-user: the unit tests (every kernel against its scalar reference,
# NEON included; whole runs across instruction sets and thread counts),
# the command's tests (tests/cli_test.sh) and the cross-machine fixtures
# (tests/arch_test.sh: the same bits as x86-64).  make test-aarch64 runs
# it; closes with "N passed, N failed".  The unit tests run in two
# processes at once (qemu-user runs one guest thread per host thread).
# Usage: sh tests/aarch64_test.sh [BUILD_DIR]   (from the repository root)
BUILD=${1:-build-aarch64}
QEMU=${QEMU:-qemu-aarch64}
if ! command -v "$QEMU" >/dev/null 2>&1; then
    echo "frae: $QEMU not found (WITH_ARM=1 sh scripts/install-deps.sh installs it)"
    echo "0 passed, 1 failed"
    exit 1
fi
# the command under qemu, for the scripts that run "$FRAE"
mkdir -p "$BUILD/qemu"
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$QEMU" "$(pwd)/$BUILD/frae" \
    >"$BUILD/qemu/frae"
chmod +x "$BUILD/qemu/frae"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
count() { # a log's closing "N passed, N failed" into the totals
    s=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -n 1)
    if [ -z "$s" ]; then
        echo "    FAIL $2 exited without a summary"
        fail=$((fail + 1))
        return
    fi
    pass=$((pass + ${s%% passed*}))
    f=${s#*passed, }
    fail=$((fail + ${f%% failed*}))
}
echo "== unit tests under $QEMU ($BUILD)"
names=$(sed -n 's/^ *X(\([a-z0-9_]*\)).*/\1/p' tests/c/tests.h)
half1=$(printf '=%s\n' $names | awk 'NR % 2 == 1')
half2=$(printf '=%s\n' $names | awk 'NR % 2 == 0')
# FRAE_TEST_EMULATOR: memory_bound reports its bound rather than holding it
# (qemu's translated code counts as the process's memory)
FRAE_TEST_EMULATOR=$QEMU "$QEMU" "$BUILD/frae_tests" $half1 >"$tmp/u1" 2>&1 &
p1=$!
FRAE_TEST_EMULATOR=$QEMU "$QEMU" "$BUILD/frae_tests" $half2 >"$tmp/u2" 2>&1
wait $p1
cat "$tmp/u1" "$tmp/u2" | grep -vE '^[0-9]+ passed, [0-9]+ failed$'
count "$tmp/u1" "frae_tests (first half)"
count "$tmp/u2" "frae_tests (second half)"
echo "== CLI tests under $QEMU ($BUILD)"
sh tests/cli_test.sh "$BUILD/qemu/frae" >"$tmp/s" 2>&1
cat "$tmp/s"
count "$tmp/s" cli_test
echo "== the same bits as x86-64: committed fixtures under $QEMU ($BUILD)"
sh tests/arch_test.sh "$BUILD/frae" "$QEMU" >"$tmp/a" 2>&1
cat "$tmp/a"
count "$tmp/a" arch_test
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
