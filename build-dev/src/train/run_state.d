build-dev/src/train/run_state.o: src/train/run_state.c \
 src/train/run_internal.h src/core/frae_internal.h src/base/checksum.h \
 src/base/util.h include/frae.h src/core/kernels.h src/core/state.h \
 include/frae_codec.h include/frae.h include/frae_train.h \
 include/frae_io.h src/io/formats.h include/frae_io.h \
 src/train/replicas.h
src/train/run_internal.h:
src/core/frae_internal.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
src/core/kernels.h:
src/core/state.h:
include/frae_codec.h:
include/frae.h:
include/frae_train.h:
include/frae_io.h:
src/io/formats.h:
include/frae_io.h:
src/train/replicas.h:
