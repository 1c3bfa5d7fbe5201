build-dev/src/audio/pcm_in.o: src/audio/pcm_in.c src/base/util.h \
 include/frae.h include/frae_audio.h include/frae.h
src/base/util.h:
include/frae.h:
include/frae_audio.h:
include/frae.h:
