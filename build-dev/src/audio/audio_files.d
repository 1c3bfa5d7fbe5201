build-dev/src/audio/audio_files.o: src/audio/audio_files.c \
 src/audio/audio_internal.h include/frae_audio.h include/frae.h \
 src/io/formats.h src/base/checksum.h src/base/util.h include/frae.h \
 include/frae_io.h
src/audio/audio_internal.h:
include/frae_audio.h:
include/frae.h:
src/io/formats.h:
src/base/checksum.h:
src/base/util.h:
include/frae.h:
include/frae_io.h:
