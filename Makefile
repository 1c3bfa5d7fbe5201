# frae build.  No -march=native and no fast-math: SIMD kernels are built
# per file with their own target flags and chosen at run time.
CC      ?= cc
OPENMP  ?= -fopenmp
BUILD   ?= build
OPT     ?= -O3
SAN     ?=
CFLAGS_ALL = -std=c11 $(OPT) -g -Wall -Wextra -Wshadow -fno-fast-math \
             -ffp-contract=off -fno-math-errno -fPIC -D_POSIX_C_SOURCE=200809L -Iinclude \
             $(OPENMP) \
             -Isrc $(SAN) $(CFLAGS)
LDLIBS_ALL = -lsndfile -lfftw3f -lsamplerate -lm -pthread $(OPENMP) $(SAN) \
             $(LDFLAGS)

LIB_SRCS = src/kernels.c src/kernels_avx2.c src/kernels_avx512.c src/gemm.c \
           src/names.c \
           src/layers.c src/model.c src/state.c src/forward.c src/train.c \
           src/optimizer.c src/rng.c \
           src/synth.c src/npy.c src/npz.c src/atomic_file.c src/safetensors.c \
           src/checkpoint.c src/codec.c src/audio.c
LIB_OBJS = $(LIB_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS = tests/test_main.c tests/test_util.c tests/test_naive.c \
            tests/test_gradcheck.c tests/test_fixtures.c tests/test_memory.c \
            tests/test_config.c tests/test_kernels.c tests/test_streaming.c \
            tests/test_formats.c tests/test_codec.c tests/test_audio.c
TEST_OBJS = $(TEST_SRCS:%.c=$(BUILD)/%.o)

LIB   = $(BUILD)/libfrae.a
SOLIB = $(BUILD)/libfrae.so
FRAE  = $(BUILD)/frae
TESTS = $(BUILD)/frae_tests
BENCH = $(BUILD)/frae_bench

.PHONY: all test test-asan check bench fixtures clean install fuzz fuzz-seeds demo
all: $(LIB) $(SOLIB) $(FRAE) $(TESTS) $(BENCH)

$(BUILD)/src/kernels_avx2.o: ISA_FLAGS = -mavx2 -mfma
$(BUILD)/src/kernels_avx512.o: ISA_FLAGS = -mavx512f -mfma

$(BUILD)/%.o: %.c include/frae.h src/frae_internal.h src/kernels.h src/kernels_driver.h src/state.h src/util.h src/adam_loop.h src/formats.h src/cli/cli.h \
              tests/test_util.h tests/naive_ref.h tests/tests.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(ISA_FLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(SOLIB): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libfrae.so.0 -o $@ $^ $(LDLIBS_ALL)

CLI_SRCS = src/cli/main.c src/cli/common.c src/cli/train.c src/cli/tools.c \
           src/cli/codec.c
CLI_OBJS = $(CLI_SRCS:%.c=$(BUILD)/%.o)

$(FRAE): $(CLI_OBJS) $(LIB)
	$(CC) -o $@ $^ $(LDLIBS_ALL)

$(TESTS): $(TEST_OBJS) $(LIB)
	$(CC) -o $@ $^ $(LDLIBS_ALL)

$(BENCH): $(BUILD)/bench/bench_frae.o $(LIB)
	$(CC) -o $@ $^ $(LDLIBS_ALL)

# All tests: unit tests, then the CLI checks.  Closes with "N passed, N failed".
test: $(FRAE) $(TESTS)
	sh tests/run_all.sh $(BUILD)

# The same suite under AddressSanitizer and UBSan, in its own build dir.
test-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  test

check: test test-asan

# The speech demo (the README's first command runs it through run.sh).
demo: $(FRAE)
	/usr/bin/python3 tools/demo.py

# OpenBLAS's sgemm, as the machine's limit (built only where the Debian
# package is installed: scripts/install-deps.sh installs it with WITH_OPTIONAL=1)
$(BUILD)/sgemm_peak: bench/sgemm_peak.c
	-$(CC) -O2 -I/usr/include/x86_64-linux-gnu $< -o $@ -lopenblas

bench: $(FRAE) $(BENCH) $(BUILD)/sgemm_peak
	sh bench/run.sh $(BUILD)

# Regenerates tests/fixtures from the PyTorch reference (needs python3-torch).
fixtures:
	/usr/bin/python3 tools/export_fixtures.py tests/fixtures

# make install PREFIX=/usr/local (DESTDIR for staging): the header, both
# libraries, the frae command and a pkg-config file.
PREFIX  ?= /usr/local
VERSION  = 0.2.0
install: $(LIB) $(SOLIB) $(FRAE)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/frae.h $(DESTDIR)$(PREFIX)/include/frae.h
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libfrae.a
	install -m 755 $(SOLIB) $(DESTDIR)$(PREFIX)/lib/libfrae.so.$(VERSION)
	ln -sf libfrae.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libfrae.so.0
	ln -sf libfrae.so.0 $(DESTDIR)$(PREFIX)/lib/libfrae.so
	install -m 755 $(FRAE) $(DESTDIR)$(PREFIX)/bin/frae
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' frae.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/frae.pc

# libFuzzer targets, one per format frae reads (clang): .npy, .npz and the
# Keras import, safetensors (checkpoints and the PyTorch import), the .fbs
# bitstream, and audio through libsndfile from memory.  Each runs for
# FUZZ_SECONDS seconds from its tracked seeds (fuzz/corpus/<target>) into
# build-fuzz/corpus/<target>.  Fuzzing builds skip checksum comparisons
# (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) so mutations get past them.
FUZZ_SECONDS ?= 60
FUZZ_DIR = build-fuzz
FUZZ_TARGETS = npy npz safetensors bitstream audio
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all \
           -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_BINS = $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

ifneq ($(BUILD),$(FUZZ_DIR)) # the library itself: the same rules, instrumented
$(FUZZ_DIR)/libfrae.a: $(LIB_SRCS) include/frae.h src/*.h
	$(MAKE) BUILD=$(FUZZ_DIR) CC=clang OPT=-O1 OPENMP=-Wno-source-uses-openmp \
	  SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" $(FUZZ_DIR)/libfrae.a
endif

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_common.h $(FUZZ_DIR)/libfrae.a
	clang -O1 -g -Iinclude -Isrc -fsanitize=fuzzer $(FUZZ_SAN) $< \
	  $(FUZZ_DIR)/libfrae.a -lsndfile -lfftw3f -lsamplerate -lm -lpthread -o $@

fuzz: $(FUZZ_BINS)
	sh fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Rewrites the tracked seed corpora (needs python3-numpy).
fuzz-seeds: $(FRAE) $(FUZZ_DIR)/fuzz_bitstream
	/usr/bin/python3 fuzz/make_seeds.py $(FRAE)
	FRAE_FUZZ_SEED_DIR=fuzz/corpus/bitstream $(FUZZ_DIR)/fuzz_bitstream -runs=0 \
	  fuzz/corpus/bitstream

clean:
	rm -rf build build-asan build-fuzz
