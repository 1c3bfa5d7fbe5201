#!/bin/sh
# One door: frae's command (src/cli) and the Python extension (python/frae)
# are clients of the public headers alone.  Each of their C files compiles
# with include/ as its only project include directory, every frae_ name
# they call is one the shared libraries export, and the command links
# libfrae.so and libfrae-audio.so, with no library code of its own and no
# internal archive.  Prints "N passed, N failed" last.
# Usage: tests/boundary_test.sh BUILD
BUILD=${1:-build}
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "    ok   $1"; }
bad() { fail=$((fail + 1)); echo "    FAIL $1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

exported="$tmp/exported"
for lib in libfrae.so libfrae-audio.so; do
    nm -D --defined-only "$BUILD/$lib" | awk '$2 == "T" {print $3}'
done | sort -u >"$exported"
if [ "$(wc -l <"$exported")" -gt 100 ]; then
    ok "the shared libraries export $(wc -l <"$exported") functions"
else
    bad "the shared libraries export only $(wc -l <"$exported") functions"
fi

# no project header outside include/ and the client's own folder
for dir in src/cli python/frae; do
    outside=$(grep -n '#include "' $dir/*.c $dir/*.h | grep -v '#include "\(frae\|frae_audio\|frae_codec\|frae_train\|frae_io\)\.h"' |
        grep -v '#include "\(cli\|codec_cli\|_frae\)\.h"')
    if [ -z "$outside" ]; then
        ok "$dir includes the public headers and its own alone"
    else
        bad "$dir includes library-internal headers: $outside"
    fi
done

# compile each client file with include/ alone, then list the frae_ names
# it calls that no shared library exports
py_inc=$(/usr/bin/python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
check_calls() { # DIR EXTRA_CFLAGS...
    dir=$1
    shift
    n=0 missing="" broken=""
    for c in $dir/*.c; do
        case $c in *dist_mpi.c) continue ;; esac # needs MPI's compiler
        o="$tmp/$(basename "$c" .c).o"
        if ! cc -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude "$@" -c "$c" \
            -o "$o" 2>"$tmp/log"; then
            broken="$broken $c: $(head -3 "$tmp/log")"
            continue
        fi
        n=$((n + 1))
    done
    # names the client defines itself (python/frae's frae_py_*) are its own
    nm --defined-only "$tmp"/*.o | awk '{print $3}' | sort -u >"$tmp/own"
    for o in "$tmp"/*.o; do
        for s in $(nm -u "$o" | awk '{print $2}' | grep '^frae_'); do
            grep -qx "$s" "$exported" "$tmp/own" ||
                missing="$missing $(basename "$o" .o):$s"
        done
    done
    rm -f "$tmp"/*.o
    if [ -n "$broken" ]; then
        bad "$dir does not build with include/ alone:$broken"
    elif [ -z "$missing" ] && [ "$n" -gt 0 ]; then
        ok "$dir: $n files call only exported names"
    else
        bad "$dir calls names the shared libraries do not export:$missing"
    fi
}
check_calls src/cli
if [ -f "$py_inc/Python.h" ]; then
    check_calls python/frae -I"$py_inc"
else
    bad "no Python.h to build python/frae against"
fi

# the command as built: the shared libraries, no library code inside
needed=$(readelf -d "$BUILD/frae" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in
*libfrae.so.0*libfrae-audio.so.0* | *libfrae-audio.so.0*libfrae.so.0*)
    ok "frae links the shared libraries ($needed)" ;;
*) bad "frae does not link libfrae.so and libfrae-audio.so: $needed" ;;
esac
inside=$(nm "$BUILD/frae" | awk '$2 ~ /^[Tt]$/ && $3 ~ /^frae_/ {print $3}' | head -5 | tr '\n' ' ')
if [ -z "$inside" ]; then
    ok "frae holds no library function of its own copy"
else
    bad "frae carries library code: $inside"
fi
if make -n -B "$BUILD/frae" BUILD="$BUILD" 2>/dev/null | grep -q 'libfrae-internal'; then
    bad "frae's link line names libfrae-internal.a"
else
    ok "frae's link line names no internal archive"
fi
if "$BUILD/frae" --version >/dev/null 2>&1; then
    ok "frae runs from the build with its shared libraries"
else
    bad "frae does not run: $("$BUILD/frae" --version 2>&1 | head -1)"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
