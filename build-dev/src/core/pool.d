build-dev/src/core/pool.o: src/core/pool.c src/core/pool.h include/frae.h
src/core/pool.h:
include/frae.h:
