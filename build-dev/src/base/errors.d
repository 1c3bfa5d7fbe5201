build-dev/src/base/errors.o: src/base/errors.c src/base/util.h \
 include/frae.h
src/base/util.h:
include/frae.h:
