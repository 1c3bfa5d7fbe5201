build-dev/src/io/import.o: src/io/import.c src/core/frae_internal.h \
 src/base/checksum.h src/base/util.h include/frae.h src/core/kernels.h \
 src/core/state.h include/frae_codec.h include/frae.h \
 src/io/checkpoint_internal.h src/io/formats.h include/frae_io.h
src/core/frae_internal.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
src/core/kernels.h:
src/core/state.h:
include/frae_codec.h:
include/frae.h:
src/io/checkpoint_internal.h:
src/io/formats.h:
include/frae_io.h:
