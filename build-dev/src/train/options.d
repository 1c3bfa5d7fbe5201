build-dev/src/train/options.o: src/train/options.c src/base/util.h \
 include/frae.h include/frae_train.h include/frae.h include/frae_io.h
src/base/util.h:
include/frae.h:
include/frae_train.h:
include/frae.h:
include/frae_io.h:
