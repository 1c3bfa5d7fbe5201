build-dev/tests/c/test_main.o: tests/c/test_main.c tests/c/test_util.h \
 src/base/util.h include/frae.h include/frae_codec.h include/frae.h \
 tests/c/tests.h
tests/c/test_util.h:
src/base/util.h:
include/frae.h:
include/frae_codec.h:
include/frae.h:
tests/c/tests.h:
