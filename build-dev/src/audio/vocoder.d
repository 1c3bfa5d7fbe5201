build-dev/src/audio/vocoder.o: src/audio/vocoder.c \
 src/audio/audio_internal.h include/frae_audio.h include/frae.h \
 src/base/util.h include/frae.h
src/audio/audio_internal.h:
include/frae_audio.h:
include/frae.h:
src/base/util.h:
include/frae.h:
