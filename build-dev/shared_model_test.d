build-dev/shared_model_test: tests/c/shared_model_test.c \
 include/frae_codec.h include/frae.h
include/frae_codec.h:
include/frae.h:
