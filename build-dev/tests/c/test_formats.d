build-dev/tests/c/test_formats.o: tests/c/test_formats.c src/io/formats.h \
 src/base/checksum.h src/base/util.h include/frae.h include/frae_io.h \
 include/frae.h tests/c/test_util.h include/frae_codec.h tests/c/tests.h
src/io/formats.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
include/frae_io.h:
include/frae.h:
tests/c/test_util.h:
include/frae_codec.h:
tests/c/tests.h:
