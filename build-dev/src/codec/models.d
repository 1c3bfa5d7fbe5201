build-dev/src/codec/models.o: src/codec/models.c src/base/util.h \
 include/frae.h include/frae_codec.h include/frae.h src/io/formats.h \
 src/base/checksum.h include/frae_io.h
src/base/util.h:
include/frae.h:
include/frae_codec.h:
include/frae.h:
src/io/formats.h:
src/base/checksum.h:
include/frae_io.h:
