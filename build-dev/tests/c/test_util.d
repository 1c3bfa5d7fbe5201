build-dev/tests/c/test_util.o: tests/c/test_util.c tests/c/test_util.h \
 src/base/util.h include/frae.h include/frae_codec.h include/frae.h
tests/c/test_util.h:
src/base/util.h:
include/frae.h:
include/frae_codec.h:
include/frae.h:
