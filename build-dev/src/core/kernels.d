build-dev/src/core/kernels.o: src/core/kernels.c src/core/kernels.h \
 src/base/util.h include/frae.h
src/core/kernels.h:
src/base/util.h:
include/frae.h:
