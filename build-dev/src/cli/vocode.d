build-dev/src/cli/vocode.o: src/cli/vocode.c src/cli/cli.h include/frae.h \
 include/frae_audio.h include/frae.h include/frae_codec.h \
 include/frae_io.h include/frae_train.h include/frae_io.h \
 src/cli/codec_cli.h
src/cli/cli.h:
include/frae.h:
include/frae_audio.h:
include/frae.h:
include/frae_codec.h:
include/frae_io.h:
include/frae_train.h:
include/frae_io.h:
src/cli/codec_cli.h:
