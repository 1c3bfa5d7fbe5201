build-dev/tests/c/test_reducer.o: tests/c/test_reducer.c \
 src/core/frae_internal.h src/base/checksum.h src/base/util.h \
 include/frae.h src/core/kernels.h src/core/state.h include/frae_codec.h \
 include/frae.h tests/c/test_util.h tests/c/tests.h
src/core/frae_internal.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
src/core/kernels.h:
src/core/state.h:
include/frae_codec.h:
include/frae.h:
tests/c/test_util.h:
tests/c/tests.h:
