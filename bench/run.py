#!/usr/bin/python3
"""Runs frae and, when python3-torch is installed, the same model in PyTorch,
each configuration in its own process (so peak RSS is its own), and prints
them side by side with ratios.  Usage: bench/run.py BUILD_DIR [--seconds S]"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(line):
    return dict(kv.split("=", 1) for kv in line.split())


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), out.stderr.strip()))
    return parse(out.stdout.strip().splitlines()[-1])


def cpu_flags():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def core_types():
    """OpenBLAS kernel sets to try: its own choice (None), and the x86 sets
    this CPU can run.  Debian's OpenBLAS 0.3.21 takes CPUs it does not
    recognise (Sapphire-Rapids-class virtual CPUs among them) for generic
    Prescott ones, several times slower; PyTorch links the same library."""
    flags = cpu_flags()
    types = [None]
    if "avx512f" in flags:
        types.append("SkylakeX")
    if "avx2" in flags:
        types.append("Haswell")
    return types


def blas_env(base, core):
    env = {k: v for k, v in base.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if core:
        env["OPENBLAS_CORETYPE"] = core
    return env


def fastest(results):
    """(value, core type) of the largest value over {core: value}."""
    core = max(results, key=lambda c: results[c][0])
    return results[core], core or "auto"


def torch_fastest(args, cores, seconds, env1):
    """PyTorch's frames/s and RSS of torch_frae.py ARGS on 1 and 2 threads,
    each on its fastest OpenBLAS core type: {threads: ((fps, rss), core)}."""
    out = {}
    for t in (1, 2):
        tried = {}
        for c in cores:
            r = run(["/usr/bin/python3", os.path.join(HERE, "torch_frae.py"), *args,
                     "--threads", str(t), "--seconds", seconds], blas_env(env1, c))
            tried[c] = (float(r["frames_per_s"]), float(r["peak_rss_mb"]))
        out[t] = fastest(tried)
    return out


def frae_columns(f, t, train, peaks, torch_fps):
    """The frae and PyTorch columns of a row: frae_bench line f on t
    threads, against torch_fastest's result (empty without torch)."""
    fps = float(f["frames_per_s"])
    gflops = fps * train / 1e9
    pk = "%6.0f%%" % (100 * gflops / peaks[t]) if t in peaks else "    n/a"
    if torch_fps:
        best = max(v[0][0] for v in torch_fps.values())
        tcols = "%10.0f %7.1f | %6.1fx %6.1fx" % (
            torch_fps[t][0][0], torch_fps[t][0][1], fps / torch_fps[t][0][0], fps / best)
    else:
        tcols = "%10s %7s | %7s %7s" % ("n/a", "n/a", "", "")
    return "%10.0f %8.1f %7s %7.1f | %s" % (fps, gflops, pk, float(f["peak_rss_mb"]), tcols)


def paired(c, what):
    """What entropy coding adds to the fixed-rate encode or decode, from
    frae_bench's paired rounds: the median difference and its share, or an
    upper bound where the quartiles do not exclude zero."""
    med, q1, q3 = (float(c["range_%s_%s" % (what, k)]) for k in ("us", "q1", "q3"))
    base = float(c["%s_us" % what])
    if q1 <= 0:
        return "<%.2f" % max(q3, 0.0)
    return "%.2f (%.0f%%)" % (med, 100 * med / base)


def competitors(n):
    """n CPU-bound processes (a busy loop each), for contention rows."""
    return [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
            for _ in range(n)]


def contention_section(build, seconds, env1):
    """Training beside a CPU-bound competitor per CPU, which the bench
    starts and stops itself: one thread, two, and the library's default
    (no --threads: the CPUs this process may use), in paired runs whose
    order alternates; the ratio is each pair's, the median of the pairs."""
    cpus = len(os.sched_getaffinity(0))
    default = int(run([os.path.join(build, "frae_bench"), "--batch", "1", "--seconds",
                       "0.05"], env1)["threads"])
    counts = sorted({1, 2, default})
    pairs = 3
    print()
    print("Under load: %d CPU-bound competitor%s (one per CPU) beside frae training; "
          "%d paired runs of %s s per thread count, order alternating; x: over one "
          "thread in the same pair, the median of the pairs [lowest, highest]; "
          "default: %d thread%s." % (cpus, "" if cpus == 1 else "s", pairs, seconds,
                                     default, "" if default == 1 else "s"))
    print("%-22s | %s | %s" % ("configuration", " ".join(
        "%11s" % ("%d thr fr/s" % t) for t in counts), " ".join(
        "%22s" % ("x %d thr" % t) for t in counts if t != 1)))
    procs = competitors(cpus)
    try:
        for fam, batch, fb in (("dense", 1, "full"), ("dense", 32, "full"),
                               ("gru", 1, "detached"), ("gru", 32, "detached")):
            fps = {t: [] for t in counts}
            for p in range(pairs):
                order = counts if p % 2 == 0 else counts[::-1]
                for t in order:
                    args = [os.path.join(build, "frae_bench"), "--family", fam, "--batch",
                            str(batch), "--feedback", fb, "--seconds", seconds]
                    if t != default:
                        args += ["--threads", str(t)]
                    fps[t].append(float(run(args, env1)["frames_per_s"]))
            cols = " ".join("%11.0f" % sorted(fps[t])[pairs // 2] for t in counts)
            ratios = []
            for t in counts:
                if t == 1:
                    continue
                r = sorted(fps[t][i] / fps[1][i] for i in range(pairs))
                ratios.append("%22s" % ("%.2f [%.2f, %.2f]" % (r[pairs // 2], r[0], r[-1])))
            print("%-22s | %s | %s" % ("%s batch %d %s" % (fam, batch, fb), cols,
                                       " ".join(ratios)))
            sys.stdout.flush()
    finally:
        for p in procs:
            p.kill()
            p.wait()


def flops_per_frame():
    """Default model: 599,648 parameters of which 1,968 biases; a frame's
    forward is one multiply-add per weight; training is about three times
    that (forward, input gradients, weight gradients)."""
    weights = 599648 - (512 + 256 + 16 + 256 + 512 + 80)
    return 2.0 * weights, 6.0 * weights


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    seconds = sys.argv[sys.argv.index("--seconds") + 1] if "--seconds" in sys.argv else "4"
    have_torch = subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                                capture_output=True).returncode == 0
    fwd, train = flops_per_frame()
    print("Default FRAE (D=80, K=4, 512-256-16-256-512, 599,648 params), sequences "
          "of 100 frames: %.2f MFLOP/frame forward, %.2f MFLOP/frame training." %
          (fwd / 1e6, train / 1e6))
    peaks = {}
    cores = core_types()
    sgemm = os.path.join(build, "sgemm_peak")
    if os.path.exists(sgemm):
        for t in (1, 2):
            tried = {c: (float(run([sgemm, str(t)], blas_env(os.environ, c))["sgemm_gflops"]),)
                     for c in cores}
            (peaks[t],), used = fastest(tried)
            print("OpenBLAS sgemm (2048^3) on %d thread%s: %.0f GFLOP/s with core type %s "
                  "(tried: %s)." % (t, "" if t == 1 else "s", peaks[t], used,
                                    ", ".join("%s %.0f" % (c or "auto", v[0])
                                              for c, v in tried.items())))
    else:
        print("OpenBLAS not installed (libopenblas-dev): no sgemm peak.")
    print()
    print("%-5s %-3s %-9s | %10s %8s %7s %7s | %10s %7s | %7s %7s" % (
        "batch", "thr", "feedback", "frae fr/s", "GFLOP/s", "%peak", "RSS MB",
        "torch fr/s", "RSS MB", "x same", "x best"))
    # PyTorch's own threads: one unless its rows ask (torch_frae.py sets them)
    env1 = dict(os.environ, OMP_NUM_THREADS="1")
    torch_core = {}
    for batch in (1, 32):
        for fb in ("detached", "full"):
            torch_fps = torch_fastest(["--batch", str(batch), "--feedback", fb], cores,
                                      seconds, env1) if have_torch else {}
            for t, (_, core) in torch_fps.items():
                torch_core[(batch, fb, t)] = core
            for t in (1, 2):
                f = run([os.path.join(build, "frae_bench"), "--batch", str(batch),
                         "--feedback", fb, "--threads", str(t), "--seconds", seconds], env1)
                print("%-5d %-3d %-9s | %s" % (batch, t, fb,
                                               frae_columns(f, t, train, peaks, torch_fps)))
                sys.stdout.flush()
    print("x same: over PyTorch on the same thread count; x best: over PyTorch's "
          "faster thread count. %%peak: of OpenBLAS sgemm on as many threads. "
          "frae kernels: %s." % f["isa"])
    if torch_core:
        print("PyTorch's fastest OpenBLAS core type per configuration (of %s): %s." % (
            ", ".join(c or "auto" for c in cores),
            "; ".join("batch %d %s %d thr: %s" % (b, fb, t, c)
                      for (b, fb, t), c in sorted(torch_core.items()))))
    print()
    print("Streaming codec, default dense and GRU models, batch 1, 1 core (encode "
          "runs the decoder too, closed loop):")
    print("%-16s %-7s %10s %12s %12s %14s %14s %10s %16s %14s" % (
        "model", "weights", "bits/frame", "encode us", "decode us", "decode x RT",
        "enc+dec x RT", "model MiB", "range enc/dec us", "search2 enc us"))
    for fam, q, w in (("dense", "binary", "f32"), ("dense", "binary", "bf16"),
                      ("dense", "uniform:4", "f32"), ("dense", "uniform:4", "bf16"),
                      ("gru", "binary", "f32"), ("gru", "binary", "bf16"),
                      ("gru", "uniform:4", "f32")):
        if True:
            c = run([os.path.join(build, "frae_bench"), "--seconds", seconds, "--codec", q,
                     "--weights", w, "--family", fam], env1)
            if (fam, q, w) == ("gru", "binary", "f32"):
                gru_decode_us = float(c["decode_us"])
            rc = "%s/%s" % (paired(c, "encode"), paired(c, "decode"))
            print("%-16s %-7s %10s %12s %12s %14s %14s %10s %16s %14s" % (
                fam + " " + q, w, c["bits_per_frame"], c["encode_us"], c["decode_us"], c["rt_decode"],
                c["rt_encode_decode"], c["model_mb"], rc, c["search2_encode_us"]))
    print("x RT: real-time factor at 100 frames/s (10 ms frames); times are the median "
          "of rounds of 2,000 frames.  bf16: weights stored as bfloat16 ('frae convert "
          "--weights bf16'), arithmetic in float32.  range enc/dec: what entropy coding "
          "adds per frame (the same model with a learned prior of 16 units, its codes "
          "range-coded in packets of 100 frames, pitch off), and its share of the "
          "fixed-rate encode / decode.  search2 enc: encoding with the encoder's "
          "search, two passes ('frae encode --search 2').  range enc/dec are the median "
          "of the differences of paired rounds (fixed-rate and entropy-coded "
          "interleaved, the same weights), as a share of the fixed-rate time; "
          "'<X' where the pairs' quartiles straddle zero (X: the upper quartile).")
    v = run([os.path.join(build, "frae_bench"), "--vocoder", "--seconds", seconds], env1)
    us, pus = float(v["vocoder_us"]), float(v["polished_us"])
    print()
    print("Vocoder (harmonic-plus-noise, 16 kHz), batch 1, 1 core: %.1f us a 10 ms frame, "
          "%sx real time; with its polish (%s rounds, as decoding gives the audio) %.1f us, "
          "%sx; with the GRU binary model's decode too, features to audio: %.0fx real "
          "time (issue 48's bar: 50x).  A synthetic voice, 300 ms voiced at 80-240 Hz "
          "then 100 ms of noise, 20 s; the median of rounds." % (
              us, v["rt_vocoder"], v["polish_rounds"], pus, v["rt_polished"],
              10000.0 / (pus + gru_decode_us)))
    print("Pitch tracker (YIN, the second reading high-passed, the f0 refined on its "
          "harmonics), 1 core, on the same voice: %.1f us a 10 ms frame, %sx real time; "
          "without the refinement (frae features --f0 yin-hp) %.1f us, %sx." % (
              float(v["pitch_us"]), v["rt_pitch"], float(v["pitch_unrefined_us"]),
              v["rt_pitch_unrefined"]))
    gru_section(build, seconds, have_torch, peaks, cores, env1)
    contention_section(build, seconds, env1)
    if not have_torch:
        print("python3-torch is not installed: PyTorch columns skipped.")


def gru_section(build, seconds, have_torch, peaks, cores, env1):
    """The default GRU model (frae_config_default_gru: D=80, K=0, GRU 240
    each side, 613,536 params) against the same model in PyTorch
    (nn.GRUCell), detached feedback."""
    weights = 613536 - (3 * 240 * 2 * 2 + 16 + 80)
    train = 6.0 * weights
    print()
    print("GRU FRAE (D=80, K=0, GRU 240 each side, h_dec fed back, 613,536 params), "
          "sequences of 100 frames, detached: %.2f MFLOP/frame training." % (train / 1e6))
    print("%-5s %-3s | %10s %8s %7s %7s | %10s %7s | %7s %7s" % (
        "batch", "thr", "frae fr/s", "GFLOP/s", "%peak", "RSS MB", "torch fr/s", "RSS MB",
        "x same", "x best"))
    for batch in (1, 32):
        torch_fps = torch_fastest(["--family", "gru", "--batch", str(batch)], cores,
                                  seconds, env1) if have_torch else {}
        for t in (1, 2):
            f = run([os.path.join(build, "frae_bench"), "--family", "gru", "--batch",
                     str(batch), "--threads", str(t), "--seconds", seconds], env1)
            print("%-5d %-3d | %s" % (batch, t, frae_columns(f, t, train, peaks, torch_fps)))
            sys.stdout.flush()
    print("GRU streaming codec, batch 1, 1 core:")
    for w in ("f32", "bf16"):
        c = run([os.path.join(build, "frae_bench"), "--family", "gru", "--seconds", seconds,
                 "--codec", "uniform:4", "--weights", w], env1)
        print("  uniform:4 %-4s %s bits/frame: encode %s us, decode %s us, decode %sx real "
              "time" % (w, c["bits_per_frame"], c["encode_us"], c["decode_us"],
                        c["rt_decode"]))


if __name__ == "__main__":
    main()
