#!/bin/sh
# Runs each libFuzzer target for SECONDS seconds from its tracked seeds
# (fuzz/corpus/<target>, read only) into a working corpus under BUILD_DIR,
# and prints one line per target: executions, coverage, and whether it
# found a crash, a leak, a timeout (an input over 10 s) or an allocation
# over 512 MB.  Exit status: the number of targets that failed.
# Usage: fuzz/run.sh BUILD_DIR SECONDS TARGET...
dir=$1 seconds=$2
shift 2
failed=0
for t in "$@"; do
    work="$dir/corpus/$t"
    log="$dir/fuzz_$t.log"
    mkdir -p "$work"
    "$dir/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -malloc_limit_mb=512 -print_final_stats=1 -artifact_prefix="$dir/$t-" \
        "$work" "fuzz/corpus/$t" >"$log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
    if [ "$status" = 0 ]; then
        echo "    ok   fuzz_$t: ${runs:-?} inputs in ${seconds} s, coverage ${cov:-?} edges, no crash"
    else
        failed=$((failed + 1))
        echo "    FAIL fuzz_$t (exit $status; see $log and $dir/$t-*):"
        grep -m 3 -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | sed 's/^/         /'
    fi
done
exit "$failed"
