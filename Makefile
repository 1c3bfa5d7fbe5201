# frae build.  No -march=native and no fast-math: SIMD kernels are built
# per file with their own target flags and chosen at run time.
#
# Two libraries, each static and shared: libfrae (the model, training and
# its runs, checkpoints, the codec; needs only libm, pthreads and libzip)
# and
# libfrae-audio (the speech front end: libsndfile, FFTW, libsamplerate).
# Both build with -fvisibility=hidden: a shared library exports what its
# public header declares (FRAE_API) and nothing else.  frae's own command,
# tests, benchmarks and fuzzers use internal calls too, so they link
# libfrae-internal.a: every object of both, never installed.
CC      ?= cc
# make CROSS=aarch64-linux-gnu- : the 64-bit ARM build (NEON kernels) with
# Debian's cross compiler, into build-aarch64; make test-aarch64 runs its
# suite under qemu-aarch64 (scripts/install-deps.sh WITH_ARM=1 installs
# both, and the arm64 libraries it links)
CROSS   ?=
ifneq ($(CROSS),)
CC      = $(CROSS)gcc
BUILD  ?= build-$(patsubst %-,%,$(firstword $(subst -, ,$(CROSS))))
MPI    ?= no
PYMOD  ?= no
endif
BUILD   ?= build
OPT     ?= -O3
SAN     ?=
WERROR  ?=  # .ci/run builds with -Werror
# the version lives in frae.h alone
VERSION := $(shell sed -n 's/^\#define FRAE_VERSION_STRING "\(.*\)"$$/\1/p' include/frae.h)
CFLAGS_ALL = -std=c11 $(OPT) -g -Wall -Wextra -Wshadow -Wmissing-prototypes \
             -Wstrict-prototypes -Wvla -Wformat=2 $(WERROR) \
             -fno-fast-math -ffp-contract=off -fno-math-errno -fPIC \
             -fvisibility=hidden -MMD -MP -D_POSIX_C_SOURCE=200809L \
             -Iinclude $(SRC_INC) $(SAN) $(CFLAGS)
# the library's own headers; frae's command sees include/ alone
SRC_INC = -Isrc
CORE_LDLIBS  = -lzip -lm -pthread
AUDIO_LDLIBS = -lsndfile -lfftw3f -lsamplerate -lm -pthread
LDLIBS_ALL = $(AUDIO_LDLIBS) $(CORE_LDLIBS) $(SAN) $(LDFLAGS)

CORE_SRCS = src/base/errors.c src/base/names.c src/base/rng.c src/base/checksum.c \
            src/base/portable_math.c \
            src/core/kernels.c src/core/kernels_avx2.c src/core/kernels_avx512.c \
            src/core/gemm.c src/core/pool.c src/core/layers.c src/core/config.c \
            src/core/model.c src/core/state.c src/core/forward.c src/core/infer.c \
            src/core/train.c src/core/lookahead.c src/core/erasure.c \
            src/core/level.c src/core/optimizer.c src/core/gru.c src/core/prior.c \
            src/io/npy.c src/io/npz.c src/io/atomic_file.c src/io/json.c src/io/safetensors.c \
            src/io/checkpoint.c src/io/import.c \
            src/codec/codec.c src/codec/pitch_coder.c src/codec/search.c src/codec/recalibrate.c \
            src/codec/container.c src/codec/entropy.c src/codec/stream_coder.c \
            src/codec/packets.c src/codec/reader.c src/codec/models.c src/codec/codec_options.c \
            src/train/synth.c src/train/dataset.c src/train/options.c \
            src/train/replicas.c src/train/run_support.c src/train/run.c src/train/run_state.c \
            src/train/run_setup.c
# the SIMD kernels of the target: AVX2 and AVX-512 on x86-64 (above), NEON
# on aarch64, each chosen at run time (kernels.c); setup.py reads the list
# above and picks the same by machine
TARGET_ARCH_ := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null)))
ifeq ($(TARGET_ARCH_),aarch64)
CORE_SRCS := $(filter-out src/core/kernels_avx%,$(CORE_SRCS)) src/core/kernels_neon.c
GRU_ISAS  = neon
else
GRU_ISAS  = avx2 avx512
endif
AUDIO_SRCS = src/audio/mel.c src/audio/audio_files.c src/audio/wav.c src/audio/features.c src/audio/model_features.c src/audio/pitch.c \
             src/audio/vocoder.c src/audio/polish.c src/audio/fft.c src/audio/dtx_gate.c src/audio/audio_out.c src/audio/pcm_in.c src/base/errors.c \
             src/io/atomic_file.c
# gru.c is built once more per SIMD ISA (see its header)
CORE_OBJS  = $(CORE_SRCS:%.c=$(BUILD)/%.o) $(GRU_ISAS:%=$(BUILD)/src/core/gru_%.o)
AUDIO_OBJS = $(AUDIO_SRCS:%.c=$(BUILD)/%.o)
# errors and atomic files once
ALL_OBJS   = $(CORE_OBJS) $(filter-out $(CORE_OBJS),$(AUDIO_OBJS))

LIB       = $(BUILD)/libfrae.a
SOLIB     = $(BUILD)/libfrae.so
AUDIO_LIB = $(BUILD)/libfrae-audio.a
AUDIO_SO  = $(BUILD)/libfrae-audio.so
INTERNAL  = $(BUILD)/libfrae-internal.a
FRAE  = $(BUILD)/frae
TESTS = $(BUILD)/frae_tests
# N threads coding N streams over one shared const model (make test-tsan
# runs it under ThreadSanitizer): a program of its own, on the public
# library alone, since frae_tests interposes malloc
SHARED_TEST = $(BUILD)/shared_model_test
BENCH = $(BUILD)/frae_bench

CLI_SRCS = src/cli/main.c src/cli/common.c src/cli/train.c src/cli/tools.c \
           src/cli/codec.c src/cli/encode.c src/cli/decode.c \
           src/cli/vocode.c src/cli/models.c src/cli/dist.c
TEST_SRCS = $(sort $(wildcard tests/c/test_*.c))
CLI_OBJS  = $(CLI_SRCS:%.c=$(BUILD)/%.o)
$(CLI_OBJS): SRC_INC =
TEST_OBJS = $(TEST_SRCS:%.c=$(BUILD)/%.o)

# frae-mpi: the command built with MPI for data-parallel training
# (mpirun -np N frae train runs it; README "Training on a cluster").  Built
# by default where mpicc is installed, never needed: MPI=no skips it, and
# 'make mpi' asks for it.
MPICC ?= mpicc
MPI   ?= $(if $(shell command -v $(MPICC) 2>/dev/null),yes,no)
FRAE_MPI = $(BUILD)/frae-mpi
MPI_CLI_OBJS = $(CLI_SRCS:%.c=$(BUILD)/mpi/%.o) $(BUILD)/mpi/src/cli/dist_mpi.o
$(MPI_CLI_OBJS): SRC_INC =

# The Python module (import frae): frae/__init__.py and the extension
# _frae, built against Debian's python3-dev (no NumPy headers: arrays cross
# as buffers) into $(BUILD)/python; PYTHONPATH=$(BUILD)/python imports it,
# 'make install-python' installs it.  Built by default where Python.h is.
PYTHON  ?= /usr/bin/python3
PY_INC  := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
PY_EXT  := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
# python3.11: the version's own dist-packages, which Debian's python3
# searches under /usr/local (and /usr); .../python3/dist-packages it searches
# only under /usr
PY_SITE := $(shell $(PYTHON) -c "import sys; print('python%d.%d' % sys.version_info[:2])" 2>/dev/null)
PYMOD   ?= $(if $(wildcard $(PY_INC)/Python.h),yes,no)
PY_DIR   = $(BUILD)/python/frae
PY_FILES = $(PY_DIR)/_frae$(PY_EXT) $(PY_DIR)/__init__.py $(PY_DIR)/__main__.py

.PHONY: all test test-asan test-tsan test-threads check bench fixtures clean \
        install models check-models fuzz fuzz-seeds demo demo-full mpi bench-mpi python install-python
all: $(LIB) $(SOLIB) $(AUDIO_LIB) $(AUDIO_SO) $(FRAE) $(TESTS) $(BENCH) \
     $(SHARED_TEST) \
     $(if $(filter yes,$(MPI)),$(FRAE_MPI)) \
     $(if $(filter yes,$(PYMOD)),$(PY_FILES))
python: $(PY_FILES)

# the extension is a caller like any other: the public headers alone
# (include/, not src/) and the two public libraries
PY_SRCS = python/frae/_frae.c python/frae/_frae_model.c \
          python/frae/_frae_audio.c python/frae/_frae_run.c \
          python/frae/_frae_decode.c
$(PY_DIR)/_frae$(PY_EXT): $(PY_SRCS) python/frae/_frae.h $(LIB) $(AUDIO_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Isrc -MMD -MP,$(CFLAGS_ALL)) -I$(PY_INC) -shared \
	  $(PY_SRCS) $(LIB) $(AUDIO_LIB) $(LDLIBS_ALL) -o $@
$(PY_DIR)/__init__.py: python/frae/__init__.py
	@mkdir -p $(dir $@)
	cp $< $@
$(PY_DIR)/__main__.py: python/frae/__main__.py
	@mkdir -p $(dir $@)
	cp $< $@

# make install-python [PREFIX=/usr/local]: into PREFIX's dist-packages
# (/usr/local/lib/python3.11/dist-packages: on Debian's python3 path, no
# PYTHONPATH needed); 'pip install .' (pyproject.toml) builds it too
install-python: $(PY_FILES)
	install -d $(DESTDIR)$(PREFIX)/lib/$(PY_SITE)/dist-packages/frae
	install -m 644 $(PY_FILES) $(DESTDIR)$(PREFIX)/lib/$(PY_SITE)/dist-packages/frae/
mpi: $(FRAE_MPI)

$(BUILD)/src/core/kernels_avx2.o: ISA_FLAGS = -mavx2 -mfma
$(BUILD)/src/core/kernels_avx512.o: ISA_FLAGS = -mavx512f -mfma
# the GRU cell vectorises its selects only when FP compares may be
# speculated; frae never reads FP exception flags, and the bits are the same
$(BUILD)/src/core/gru.o: ISA_FLAGS = -fno-trapping-math
$(BUILD)/src/core/gru_avx2.o: ISA_FLAGS = -fno-trapping-math -mavx2 -DGRU_ISA=avx2
$(BUILD)/src/core/gru_avx512.o: ISA_FLAGS = -fno-trapping-math -mavx512f \
                                      -DGRU_ISA=avx512
# NEON is part of the aarch64 baseline: no target flag
$(BUILD)/src/core/gru_neon.o: ISA_FLAGS = -fno-trapping-math -DGRU_ISA=neon
# GCC 12 for aarch64 stops with an internal error vectorising a reduction
# in this test's reference mel (vect_transform_reduction); a test's loop
ifeq ($(TARGET_ARCH_),aarch64)
$(BUILD)/tests/c/test_audio.o: ISA_FLAGS = -fno-tree-vectorize
endif

# the shipped models' directory at this PREFIX, the last place searched
# (src/codec/models.c looks first where the library and the program are)
$(BUILD)/src/codec/models.o: CFLAGS_ALL += -DFRAE_MODELDIR='"$(PREFIX)/share/frae/models"'

# headers are tracked by the compiler's own dependency files (-MMD); the
# flags live here, so an object also depends on this Makefile
$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(ISA_FLAGS) -c $< -o $@

# static: a plain pattern would also "make" gru_avx2.d (the included
# dependency file) from gru_avx2.d.o
$(GRU_ISAS:%=$(BUILD)/src/core/gru_%.o): $(BUILD)/src/core/gru_%.o: src/core/gru.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(ISA_FLAGS) -c $< -o $@

-include $(wildcard $(BUILD)/src/*/*.d \
                    $(BUILD)/tests/c/*.d $(BUILD)/bench/*.d \
                    $(BUILD)/mpi/src/cli/*.d)

# the command's files once more, with MPI (mpicc: its headers and library)
$(BUILD)/mpi/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS_ALL) -DFRAE_MPI -c $< -o $@

$(FRAE_MPI): $(MPI_CLI_OBJS) $(SOLIB) $(AUDIO_SO)
	$(MPICC) -o $@ $(MPI_CLI_OBJS) -L$(BUILD) -lfrae-audio -lfrae \
	  -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib' $(LDLIBS_ALL)

$(LIB): $(CORE_OBJS)
	rm -f $@
	ar rcs $@ $^
$(AUDIO_LIB): $(AUDIO_OBJS)
	rm -f $@
	ar rcs $@ $^
$(INTERNAL): $(ALL_OBJS)
	rm -f $@
	ar rcs $@ $^

$(SOLIB): $(CORE_OBJS)
	$(CC) -shared -Wl,-soname,libfrae.so.0 -o $@ $^ $(CORE_LDLIBS) $(SAN) \
	  $(LDFLAGS)
	ln -sf libfrae.so $(BUILD)/libfrae.so.0
# libfrae-audio.so takes the atomic files from libfrae.so, which exports
# them (frae_io.h), rather than exporting a second copy
$(AUDIO_SO): $(filter-out %/atomic_file.o,$(AUDIO_OBJS)) $(SOLIB)
	$(CC) -shared -Wl,-soname,libfrae-audio.so.0 -o $@ \
	  $(filter-out %/atomic_file.o $(SOLIB),$^) -L$(BUILD) -lfrae \
	  -Wl,-rpath,'$$ORIGIN' $(AUDIO_LDLIBS) $(SAN) $(LDFLAGS)
	ln -sf libfrae-audio.so $(BUILD)/libfrae-audio.so.0

# frae's command is a client of the public headers alone: it links the
# shared libraries (found beside it in the build, in ../lib installed),
# never libfrae-internal.a (tests/boundary_test.sh checks it)
$(FRAE): $(CLI_OBJS) $(SOLIB) $(AUDIO_SO)
	$(CC) -o $@ $(CLI_OBJS) -L$(BUILD) -lfrae-audio -lfrae \
	  -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib' $(LDLIBS_ALL)

$(TESTS): $(TEST_OBJS) $(INTERNAL)
	$(CC) -o $@ $^ $(LDLIBS_ALL)

$(BENCH): $(BUILD)/bench/bench_frae.o $(INTERNAL)
	$(CC) -o $@ $^ $(LDLIBS_ALL)

$(SHARED_TEST): SRC_INC =
$(SHARED_TEST): tests/c/shared_model_test.c include/frae.h include/frae_codec.h $(LIB)
	$(CC) $(CFLAGS_ALL) $< $(LIB) $(CORE_LDLIBS) $(SAN) \
	  $(LDFLAGS) -o $@

# All tests: unit tests, then the CLI checks.  Closes with "N passed, N failed".
test: $(FRAE) $(TESTS) $(SHARED_TEST) $(LIB) $(SOLIB) $(AUDIO_LIB) $(AUDIO_SO) \
      $(if $(filter yes,$(MPI)),$(FRAE_MPI)) \
      $(if $(filter yes,$(PYMOD)),$(PY_FILES))
	sh tests/run_all.sh $(BUILD)

# The aarch64 build (CROSS=aarch64-linux-gnu-, into build-aarch64) and its
# core suite under qemu-user (tests/aarch64_test.sh): the unit tests, the
# CLI tests and the cross-machine fixtures.  Needs WITH_ARM=1 sh
# scripts/install-deps.sh.
.PHONY: test-aarch64
test-aarch64:
	$(MAKE) CROSS=aarch64-linux-gnu- all
	sh tests/aarch64_test.sh build-aarch64

# The same suite under AddressSanitizer and UBSan, in its own build dir
# (the Python module too: its thread test runs with the runtime preloaded).
test-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 MPI=no \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  test

# The thread tests (run_all.sh runs them in every build): N threads coding
# N streams over one shared const model, and the Python module from several
# threads; under ThreadSanitizer in its own build dir: libfrae, the test
# program and the module instrumented, the interpreter not
# (tests/threads_test.sh, tests/python_thread_test.sh).
test-threads: $(PY_FILES) $(SHARED_TEST)
	sh tests/threads_test.sh $(BUILD)
test-tsan:
	$(MAKE) BUILD=build-tsan OPT=-O1 MPI=no SAN=-fsanitize=thread test-threads

check: test test-asan test-tsan

# The C style (.clang-format, clang-format 14): format applies it to every
# tracked C file, format-check (in the test command) names those that differ.
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null | grep -v pitch_counts.h)
.PHONY: format format-check
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run -Werror $(FORMAT_FILES)

# The speech demo (the README's first command runs it through run.sh).
demo: $(FRAE)
	/usr/bin/python3 tools/demo.py
demo-full: $(FRAE)
	/usr/bin/python3 tools/demo.py --full

# The loss study (issue 37): frae, Opus and Codec2 on the same lost
# packets and bit errors (docs/2026-12-02-loss-study.md)
.PHONY: loss-study
loss-study: $(FRAE)
	nice -n 10 /usr/bin/python3 tools/loss_study.py

# OpenBLAS's sgemm, as the machine's limit (built only where the Debian
# package is installed: scripts/install-deps.sh installs it with WITH_OPTIONAL=1)
$(BUILD)/sgemm_peak: bench/sgemm_peak.c
	-$(CC) -O2 -I/usr/include/x86_64-linux-gnu $< -o $@ -lopenblas

# First installs what the bench compares against (python3-torch, OpenBLAS)
# as the README's commands install theirs, or says in one line what it
# goes without.
bench: $(FRAE) $(BENCH)
	@WITH_OPTIONAL=1 sh scripts/install-deps.sh || \
	  echo "frae bench: could not install python3-torch and libopenblas-dev: their columns are skipped"
	@$(MAKE) --no-print-directory $(BUILD)/sgemm_peak
	sh bench/run.sh $(BUILD)

# Old build against new in one run (bench/compare.py): REV (a git rev,
# default HEAD~1) built in a worktree under /tmp, then frae_bench's rows
# on both, interleaved.  make bench-compare REV=v0.5 [ROUNDS=5]
REV    ?= HEAD~1
ROUNDS ?= 5
.PHONY: bench-compare
bench-compare: $(BENCH)
	@d=/tmp/frae-bench-$$(git rev-parse --short $(REV)) && \
	  { [ -d $$d ] || git worktree add -q --detach $$d $(REV); } && \
	  $(MAKE) --no-print-directory -C $$d MPI=no PYMOD=no build/frae_bench >/dev/null && \
	  /usr/bin/python3 bench/compare.py $$d/build $(BUILD) --rounds $(ROUNDS)

# Data-parallel training: 2 MPI ranks against 2 threads, the sums' cost and
# the cluster model (README "Training on a cluster"; needs Open MPI)
bench-mpi: $(FRAE) $(FRAE_MPI)
	/usr/bin/python3 bench/mpi_scale.py $(BUILD)

# Regenerates tests/fixtures from the PyTorch reference (needs python3-torch).
fixtures:
	/usr/bin/python3 tools/export_fixtures.py tests/fixtures

# make models: the shipped models (models/*.safetensors, models/MANIFEST)
# rebuilt from the synthetic, the human and the many-voices corpora, the
# last also under drawn recording conditions (models/build.sh: three
# trainings of 80 to 96 epochs, an hour and three quarters of two idle
# cores; the voices' packages come with WITH_VOICES=1
# scripts/install-deps.sh);
# make check-models rebuilds them elsewhere and compares them bit for bit
# with the shipped files (a long test, outside ./test.sh: the suite checks
# the shipped files against MANIFEST, tests/models_test.sh)
models: $(FRAE)
	FRAE=$(FRAE) sh models/build.sh models
check-models: $(FRAE)
	@d=$$(mktemp -d) && FRAE=$(FRAE) sh models/build.sh $$d && \
	  for f in MANIFEST $$(cd $$d && ls *.safetensors); do \
	    if cmp -s $$d/$$f models/$$f; then echo "    ok   models/$$f rebuilt bit for bit"; \
	    else echo "    FAIL models/$$f: the rebuilt file differs"; rm -rf $$d; exit 1; fi; \
	  done; rm -rf $$d

# make install PREFIX=/usr/local (DESTDIR for staging): the headers, both
# libraries (static and shared), the frae command and two pkg-config files.
PREFIX  ?= /usr/local
install: $(LIB) $(SOLIB) $(AUDIO_LIB) $(AUDIO_SO) $(FRAE)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/frae.h include/frae_codec.h include/frae_train.h \
	  include/frae_audio.h include/frae_io.h \
	  $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(LIB) $(AUDIO_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SOLIB) $(DESTDIR)$(PREFIX)/lib/libfrae.so.$(VERSION)
	install -m 755 $(AUDIO_SO) \
	  $(DESTDIR)$(PREFIX)/lib/libfrae-audio.so.$(VERSION)
	for l in libfrae libfrae-audio; do \
	  ln -sf $$l.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$$l.so.0 && \
	  ln -sf $$l.so.0 $(DESTDIR)$(PREFIX)/lib/$$l.so || exit 1; done
	install -m 755 $(FRAE) $(DESTDIR)$(PREFIX)/bin/frae
	install -d $(DESTDIR)$(PREFIX)/share/frae/models
	install -m 644 models/*.safetensors models/MANIFEST models/README.md \
	  $(DESTDIR)$(PREFIX)/share/frae/models/
	if [ -x $(FRAE_MPI) ]; then \
	  install -m 755 $(FRAE_MPI) $(DESTDIR)$(PREFIX)/bin/frae-mpi; fi
	for pc in frae frae-audio; do \
	  sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    $$pc.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$$pc.pc || exit 1; done

# libFuzzer targets, one per format frae reads (clang): .npy, .npz and the
# Keras import, safetensors (checkpoints and the PyTorch import), the .fbs
# bitstream, and audio through libsndfile from memory.  Each runs for
# FUZZ_SECONDS seconds from its tracked seeds (fuzz/corpus/<target>) into
# build-fuzz/corpus/<target>.  Fuzzing builds skip checksum comparisons
# (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) so mutations get past them.
FUZZ_SECONDS ?= 60
FUZZ_DIR = build-fuzz
FUZZ_TARGETS = npy npz safetensors bitstream packets audio range pcm
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all \
           -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_BINS = $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

ifneq ($(BUILD),$(FUZZ_DIR)) # the library itself: the same rules, instrumented
$(FUZZ_DIR)/libfrae-internal.a: $(CORE_SRCS) $(AUDIO_SRCS) include/*.h src/*/*.h
	$(MAKE) BUILD=$(FUZZ_DIR) CC=clang OPT=-O1 \
	  SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" $(FUZZ_DIR)/libfrae-internal.a
endif

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_common.h $(FUZZ_DIR)/libfrae-internal.a
	clang -O1 -g -Iinclude -Isrc -fsanitize=fuzzer $(FUZZ_SAN) $< \
	  $(FUZZ_DIR)/libfrae-internal.a -lzip -lsndfile -lfftw3f -lsamplerate -lm \
	  -lpthread -o $@

fuzz: $(FUZZ_BINS)
	sh fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Rewrites the tracked seed corpora (needs python3-numpy).
fuzz-seeds: $(FRAE) $(FUZZ_DIR)/fuzz_bitstream
	/usr/bin/python3 fuzz/make_seeds.py $(FRAE)
	FRAE_FUZZ_SEED_DIR=fuzz/corpus/bitstream $(FUZZ_DIR)/fuzz_bitstream -runs=0 \
	  fuzz/corpus/bitstream

clean:
	rm -rf build build-asan build-tsan build-fuzz
