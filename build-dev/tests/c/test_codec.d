build-dev/tests/c/test_codec.o: tests/c/test_codec.c src/core/kernels.h \
 src/io/formats.h src/base/checksum.h src/base/util.h include/frae.h \
 include/frae_io.h include/frae.h src/codec/codec_internal.h \
 src/codec/container.h src/codec/entropy.h src/core/frae_internal.h \
 src/core/state.h include/frae_codec.h src/codec/pitch_counts.h \
 tests/c/test_util.h tests/c/tests.h
src/core/kernels.h:
src/io/formats.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
include/frae_io.h:
include/frae.h:
src/codec/codec_internal.h:
src/codec/container.h:
src/codec/entropy.h:
src/core/frae_internal.h:
src/core/state.h:
include/frae_codec.h:
src/codec/pitch_counts.h:
tests/c/test_util.h:
tests/c/tests.h:
