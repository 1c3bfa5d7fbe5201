"""Builds the Python module (import frae) the Python way: 'pip install .'
(pyproject.toml names this file's setuptools as the backend).

The extension frae._frae is python/frae/_frae*.c, the caller the Makefile
builds too (the public headers in include/ alone), linked with libfrae and
libfrae-audio compiled here from their sources, static, with the Makefile's
flags: the source lists (CORE_SRCS, AUDIO_SRCS) and the per-file SIMD flags
(ISA_FLAGS) are read from the Makefile, so the two builds cannot drift.
The shipped models (models/MANIFEST and the files it lists) go in as
package data, frae/models, where libfrae's search finds them (the Python
module adds that directory: include/frae_codec.h, "the shipped models"),
so an installed module encodes and decodes with no model argument.
Needs only Debian's packages (python3-dev, python3-setuptools, libsndfile,
FFTW, libsamplerate, libzip): offline,

    python3 -m venv --system-site-packages venv   # numpy from Debian
    venv/bin/pip install --no-build-isolation --no-index .
"""
import os
import platform
import re

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def makefile():
    """The Makefile's lines, continuations joined."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        return f.read().replace("\\\n", " ").splitlines()


def make_var(lines, name):
    for line in lines:
        m = re.match(r"^%s\s*[:?]?=\s*(.*)$" % re.escape(name), line)
        if m:
            return m.group(1).split("#")[0].split()
    raise SystemExit("setup.py: %s not found in the Makefile" % name)


def isa_flags(lines):
    """{object path under src/, no .o: [flags]} from
    '$(BUILD)/src/DIR/X.o: ISA_FLAGS = ...'."""
    out = {}
    for line in lines:
        m = re.match(r"^\$\(BUILD\)/src/([\w/]+)\.o:\s*ISA_FLAGS\s*=\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).split()
    return out


def version():
    with open(os.path.join(ROOT, "include", "frae.h")) as f:
        return re.search(r'#define FRAE_VERSION_STRING "(.*)"', f.read()).group(1)


# the Makefile's CFLAGS_ALL, less the warnings and -MMD
LIB_FLAGS = ["-std=c11", "-O3", "-fno-fast-math", "-ffp-contract=off", "-fno-math-errno",
             "-fPIC", "-fvisibility=hidden", "-D_POSIX_C_SOURCE=200809L", "-pthread"]
LIBS = ["sndfile", "fftw3f", "samplerate", "zip", "m"]


class BuildFrae(build_ext):
    """Compiles libfrae's and libfrae-audio's sources (each with its SIMD
    flags; gru.c once more per ISA) and links them into the extension."""

    def build_extension(self, ext):
        lines = makefile()
        srcs = []
        for s in make_var(lines, "CORE_SRCS") + make_var(lines, "AUDIO_SRCS"):
            if s not in srcs:  # errors.c, atomic_file.c: in both lists
                srcs.append(s)
        flags = isa_flags(lines)
        # the Makefile lists x86-64's kernels; aarch64 has NEON's instead
        arm = platform.machine() in ("aarch64", "arm64")
        srcs = [s for s in srcs if not (arm and "kernels_avx" in s)]
        srcs += ["src/core/kernels_neon.c"] if arm else []
        flags = {k: v for k, v in flags.items()
                 if not (k.endswith("_neon") if not arm else "avx" in k)}
        units = [(s, flags.get(s[len("src/"):-2], []), "lib") for s in srcs]
        for stem, f in flags.items():  # core/gru_avx2: gru.c again, its own flags
            if not os.path.exists(os.path.join(ROOT, "src", stem + ".c")):
                units.append(("src/%s.c" % stem.rsplit("_", 1)[0], f,
                              "lib-" + stem.replace("/", "-")))
        objects = []
        for src, f, sub in units:
            objects += self.compiler.compile(
                [src], output_dir=os.path.join(self.build_temp, sub),
                include_dirs=["include", "src"], extra_postargs=LIB_FLAGS + f)
        ext.extra_objects = objects
        super().build_extension(ext)


def shipped_models():
    """models/MANIFEST and the files it lists (tab-separated: file first;
    '#' lines are comments), byte for byte as they are."""
    with open(os.path.join(ROOT, "models", "MANIFEST")) as f:
        files = [line.split("\t")[0] for line in f
                 if line.strip() and not line.startswith("#")]
    return ["MANIFEST"] + files


class BuildPyModels(build_py):
    """The package, and the shipped models in it as frae/models."""

    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "frae", "models")
        self.mkpath(out)
        for f in shipped_models():
            self.copy_file(os.path.join(ROOT, "models", f), os.path.join(out, f),
                           preserve_mode=False)


setup(
    version=version(),
    package_dir={"": "python"},
    packages=["frae"],
    ext_modules=[Extension(
        "frae._frae", make_var(makefile(), "PY_SRCS"),  # the Makefile's list
        include_dirs=["include"],
        extra_compile_args=["-std=c11", "-O3", "-fno-fast-math", "-ffp-contract=off",
                            "-fvisibility=hidden", "-D_POSIX_C_SOURCE=200809L",
                            "-pthread"],
        libraries=LIBS, extra_link_args=["-pthread"])],
    cmdclass={"build_ext": BuildFrae, "build_py": BuildPyModels},
)
