build-dev/src/base/checksum.o: src/base/checksum.c src/base/checksum.h
src/base/checksum.h:
