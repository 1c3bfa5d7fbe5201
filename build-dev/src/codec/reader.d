build-dev/src/codec/reader.o: src/codec/reader.c src/codec/container.h \
 src/codec/entropy.h src/core/frae_internal.h src/base/checksum.h \
 src/base/util.h include/frae.h src/core/kernels.h src/core/state.h \
 include/frae_codec.h include/frae.h
src/codec/container.h:
src/codec/entropy.h:
src/core/frae_internal.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
src/core/kernels.h:
src/core/state.h:
include/frae_codec.h:
include/frae.h:
