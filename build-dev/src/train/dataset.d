build-dev/src/train/dataset.o: src/train/dataset.c src/base/util.h \
 include/frae.h include/frae_train.h include/frae.h include/frae_io.h \
 src/io/formats.h src/base/checksum.h include/frae_io.h
src/base/util.h:
include/frae.h:
include/frae_train.h:
include/frae.h:
include/frae_io.h:
src/io/formats.h:
src/base/checksum.h:
include/frae_io.h:
