build-dev/src/audio/audio_out.o: src/audio/audio_out.c \
 include/frae_audio.h include/frae.h src/io/formats.h src/base/checksum.h \
 src/base/util.h include/frae.h include/frae_io.h
include/frae_audio.h:
include/frae.h:
src/io/formats.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
include/frae_io.h:
