build-dev/src/audio/dtx_gate.o: src/audio/dtx_gate.c include/frae_audio.h \
 include/frae.h src/io/formats.h src/base/checksum.h src/base/util.h \
 include/frae.h include/frae_io.h
include/frae_audio.h:
include/frae.h:
src/io/formats.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
include/frae_io.h:
