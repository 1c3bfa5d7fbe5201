#!/bin/sh
# Runs each libFuzzer target for SECONDS seconds from its tracked seeds
# (fuzz/corpus/<target>, read only) into a working corpus under BUILD_DIR,
# and prints one line per target: executions, coverage, and whether it
# found a crash, a leak, a timeout (an input over 10 s) or an allocation
# over 512 MB; on a failure, the top of its stack and the input, in
# base64 when it is small.  Exit status: the number of targets that failed.
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
        # where it happened, and the input itself: a CI run's clone (and
        # its artifact) is gone by the time anyone reads its output
        grep -m 6 -E '^ +#[0-9]+ 0x' "$log" | sed 's/^ */         /'
        input=$(ls -t "$dir/$t"-* 2>/dev/null | head -n 1)
        if [ -n "$input" ] && [ "$(wc -c <"$input")" -le 4096 ]; then
            echo "         the input ($(wc -c <"$input") bytes), base64:"
            base64 -w 76 "$input" | sed 's/^/         /'
        fi
    fi
done
exit "$failed"
