build-dev/src/core/kernels_avx512.o: src/core/kernels_avx512.c \
 src/core/kernels.h src/core/kernels_driver.h
src/core/kernels.h:
src/core/kernels_driver.h:
