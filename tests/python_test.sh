#!/bin/sh
# The Python module's tests (pytest, Debian's python3-pytest) against one
# build: PYTHONPATH at BUILD/python, FRAE_BIN the command they compare with.
# Ends with pytest's counts as "N passed, N failed", as run_all.sh reads.
# Usage: tests/python_test.sh BUILD_DIR
BUILD=${1:-build}
out=$(PYTHONPATH="$BUILD/python" FRAE_BIN="$BUILD/frae" /usr/bin/python3 -m pytest \
      -q -rfE -p no:cacheprovider tests/py/test_python.py 2>&1)
status=$?
printf '%s\n' "$out" | sed 's/^/    /'
last=$(printf '%s\n' "$out" | tail -n 1)
p=$(printf '%s' "$last" | grep -o '[0-9][0-9]* passed' | cut -d' ' -f1)
f=$(printf '%s' "$last" | grep -o '[0-9][0-9]* failed' | cut -d' ' -f1)
e=$(printf '%s' "$last" | grep -o '[0-9][0-9]* error' | cut -d' ' -f1)
p=${p:-0} f=$(( ${f:-0} + ${e:-0} ))
[ "$status" != 0 ] && [ "$f" = 0 ] && f=1 # pytest failed to run at all
echo "$p passed, $f failed"
[ "$f" = 0 ]
