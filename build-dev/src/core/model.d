build-dev/src/core/model.o: src/core/model.c src/base/arena.h \
 src/core/frae_internal.h src/base/checksum.h src/base/util.h \
 include/frae.h src/core/kernels.h src/core/state.h include/frae_codec.h \
 include/frae.h src/core/pool.h
src/base/arena.h:
src/core/frae_internal.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
src/core/kernels.h:
src/core/state.h:
include/frae_codec.h:
include/frae.h:
src/core/pool.h:
