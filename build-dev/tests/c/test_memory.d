build-dev/tests/c/test_memory.o: tests/c/test_memory.c \
 src/codec/codec_internal.h src/codec/container.h src/codec/entropy.h \
 src/core/frae_internal.h src/base/checksum.h src/base/util.h \
 include/frae.h src/core/kernels.h src/core/state.h include/frae_codec.h \
 include/frae.h src/codec/pitch_counts.h include/frae_audio.h \
 include/frae_train.h include/frae_io.h tests/c/test_util.h \
 tests/c/tests.h
src/codec/codec_internal.h:
src/codec/container.h:
src/codec/entropy.h:
src/core/frae_internal.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
src/core/kernels.h:
src/core/state.h:
include/frae_codec.h:
include/frae.h:
src/codec/pitch_counts.h:
include/frae_audio.h:
include/frae_train.h:
include/frae_io.h:
tests/c/test_util.h:
tests/c/tests.h:
