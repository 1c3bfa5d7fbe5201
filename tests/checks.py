"""The pass/fail bookkeeping of the Python test scripts: one line per
check, and the closing "N passed, N failed" line run_all.sh reads."""
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("    ok   " + what)
    else:
        failed += 1
        print("    FAIL " + what + (": " + detail if detail else ""))


def summary():
    """Prints the closing line; returns the exit status."""
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0
