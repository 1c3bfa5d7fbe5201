build-dev/src/base/rng.o: src/base/rng.c src/base/util.h include/frae.h
src/base/util.h:
include/frae.h:
