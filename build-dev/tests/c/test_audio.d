build-dev/tests/c/test_audio.o: tests/c/test_audio.c include/frae_audio.h \
 include/frae.h tests/c/test_util.h src/base/util.h include/frae.h \
 include/frae_codec.h tests/c/tests.h
include/frae_audio.h:
include/frae.h:
tests/c/test_util.h:
src/base/util.h:
include/frae.h:
include/frae_codec.h:
tests/c/tests.h:
