build-dev/src/core/train.o: src/core/train.c src/core/frae_internal.h \
 src/base/checksum.h src/base/util.h include/frae.h src/core/kernels.h \
 src/core/state.h include/frae_codec.h include/frae.h
src/core/frae_internal.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
src/core/kernels.h:
src/core/state.h:
include/frae_codec.h:
include/frae.h:
