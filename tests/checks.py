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


def read_varint(b, i):
    """A LEB128 varint of bytes b at i: (its value, the index after it)."""
    v, shift = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def v5_split(stream):
    """A version-5 file (real-time packets): its header's three varints
    (frames a packet, packets between resynchronisation points, frames),
    the header's length, and where each framed packet starts."""
    i, fields = 16, []
    for _ in range(3):
        v, i = read_varint(stream, i)
        fields.append(v)
    head_len, starts, j = i + 2, [], i + 2
    while j < len(stream):
        starts.append(j)
        n, k = read_varint(stream, j)
        j = k + n + 2
    return fields, head_len, starts
