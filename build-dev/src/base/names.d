build-dev/src/base/names.o: src/base/names.c src/base/util.h \
 include/frae.h
src/base/util.h:
include/frae.h:
