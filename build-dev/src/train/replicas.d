build-dev/src/train/replicas.o: src/train/replicas.c src/train/replicas.h \
 include/frae_train.h include/frae.h include/frae_io.h
src/train/replicas.h:
include/frae_train.h:
include/frae.h:
include/frae_io.h:
