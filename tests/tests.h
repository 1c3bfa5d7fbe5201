#ifndef FRAE_TESTS_H
#define FRAE_TESTS_H
#include "frae.h"

double naive_forward_d(const frae_config *c, const double *params,
                       const float *x, int nseq, int T, double *y,
                       const double *frozen_hist, double *hist_out,
                       const double *frozen_qoff, double *qoff_out);

int test_kernels_match_scalar(void);
int test_isas_train_identically(void);
int test_threads_train_identically(void);
int test_sparse_kernel_matches_dense(void);
int test_bf16_kernel_matches_f32(void);
int test_compact_matches_scalar(void);
int test_adam_matches_scalar(void);
int test_naive_bitexact(void);
int test_forward_chunked(void);
int test_weights_change_midstream(void);
int test_gradcheck_detached(void);
int test_gradcheck_full(void);
int test_gradcheck_straight_through(void);
int test_gradcheck_relu_batch1(void);
int test_fixtures(void);
int test_zero_allocations(void);
int test_flat_rss(void);
int test_two_models_independent(void);
int test_bad_configs(void);
int test_features_reference(void);
int test_griffin_lim(void);
int test_audio_files(void);
int test_codec_roundtrip(void);
int test_codec_threads_and_isas(void);
int test_bitstream(void);
int test_bf16_weights(void);
int test_codec_zero_allocations(void);
int test_npy_reader(void);
int test_bad_checkpoints(void);
int test_atomic_save_under_kill(void);
int test_train_frames_equals_batch(void);
int test_variable_lengths(void);
int test_padding_is_inert(void);
int test_gradient_clipping(void);
int test_sizes(void);
#endif
