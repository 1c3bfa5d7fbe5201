build-dev/src/io/npy.o: src/io/npy.c src/io/formats.h src/base/checksum.h \
 src/base/util.h include/frae.h include/frae_io.h include/frae.h
src/io/formats.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
include/frae_io.h:
include/frae.h:
