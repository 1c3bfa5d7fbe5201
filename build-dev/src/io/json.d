build-dev/src/io/json.o: src/io/json.c src/io/formats.h \
 src/base/checksum.h src/base/util.h include/frae.h include/frae_io.h \
 include/frae.h src/io/json.h
src/io/formats.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
include/frae_io.h:
include/frae.h:
src/io/json.h:
