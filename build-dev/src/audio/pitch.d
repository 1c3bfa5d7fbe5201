build-dev/src/audio/pitch.o: src/audio/pitch.c include/frae_audio.h \
 include/frae.h
include/frae_audio.h:
include/frae.h:
