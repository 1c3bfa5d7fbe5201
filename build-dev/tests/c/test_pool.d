build-dev/tests/c/test_pool.o: tests/c/test_pool.c src/core/pool.h \
 tests/c/test_util.h src/base/util.h include/frae.h include/frae_codec.h \
 include/frae.h tests/c/tests.h
src/core/pool.h:
tests/c/test_util.h:
src/base/util.h:
include/frae.h:
include/frae_codec.h:
include/frae.h:
tests/c/tests.h:
