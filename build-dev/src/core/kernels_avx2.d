build-dev/src/core/kernels_avx2.o: src/core/kernels_avx2.c \
 src/core/kernels.h src/core/kernels_driver.h src/core/adam_loop.h
src/core/kernels.h:
src/core/kernels_driver.h:
src/core/adam_loop.h:
