build-dev/src/io/npz.o: src/io/npz.c src/base/util.h include/frae.h \
 src/io/formats.h src/base/checksum.h include/frae_io.h include/frae.h
src/base/util.h:
include/frae.h:
src/io/formats.h:
src/base/checksum.h:
include/frae_io.h:
include/frae.h:
