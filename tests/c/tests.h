#ifndef FRAE_TESTS_H
#define FRAE_TESTS_H
#include "frae.h"
#include "frae_codec.h"

void naive_set_lost(const unsigned char *lost); /* [T][nseq] */
void naive_level_counts(long *active, long *frames);
double naive_forward_d(const frae_config *c, const double *params,
                       const float *x, int nseq, int T, double *y,
                       const double *frozen_hist, double *hist_out,
                       const double *frozen_qoff, double *qoff_out);

/* Every unit test, in the order they run: registering a test is one line
 * here (and the function itself, int test_<name>(void), returning its
 * failures or TEST_SKIPPED).  test_main.c declares and runs them. */
#define FRAE_UNIT_TESTS(X)                                                     \
    X(kernels_match_scalar)                                                    \
    X(portable_math)                                                           \
    X(isas_train_identically)                                                  \
    X(threads_train_identically)                                               \
    X(pool_items_once)                                                         \
    X(pool_items_in_callers_fp_mode)                                           \
    X(pool_under_load_same_bits)                                               \
    X(pool_after_fork)                                                         \
    X(cpus_available)                                                          \
    X(sparse_kernel_matches_dense)                                             \
    X(bf16_kernel_matches_f32)                                                 \
    X(compact_matches_scalar)                                                  \
    X(adam_matches_scalar)                                                     \
    X(gru_math_accuracy)                                                       \
    X(naive_bitexact)                                                          \
    X(forward_chunked)                                                         \
    X(weights_change_midstream)                                                \
    X(gradcheck_detached)                                                      \
    X(gradcheck_full)                                                          \
    X(gradcheck_straight_through)                                              \
    X(gradcheck_relu_batch1)                                                   \
    X(gradcheck_gru)                                                           \
    X(gradcheck_erasure)                                                       \
    X(gradcheck_lookahead)                                                     \
    X(lookahead_windows)                                                       \
    X(gradcheck_level)                                                         \
    X(gradcheck_emphasis)                                                      \
    X(gradcheck_prior)                                                         \
    X(pytorch_fixtures)                                                        \
    X(prior_fixtures)                                                          \
    X(level_fixtures)                                                          \
    X(targets_fixtures)                                                        \
    X(zero_allocations)                                                        \
    X(flat_rss)                                                                \
    X(memory_bound)                                                            \
    X(two_models_independent)                                                  \
    X(reducer_replicas)                                                        \
    X(erasure_replicas_draw_apart)                                             \
    X(train_frames_equals_batch)                                               \
    X(variable_lengths)                                                        \
    X(padding_is_inert)                                                        \
    X(gradient_clipping)                                                       \
    X(lr_schedule)                                                             \
    X(normalization)                                                           \
    X(npy_reader)                                                              \
    X(level_loss_checkpoint)                                                   \
    X(bad_checkpoints)                                                         \
    X(atomic_save_under_kill)                                                  \
    X(codec_roundtrip)                                                         \
    X(codec_threads_and_isas)                                                  \
    X(codec_pitch)                                                             \
    X(pitch_backfill)                                                          \
    X(codec_lookahead)                                                         \
    X(codec_ranged)                                                            \
    X(codec_dtx)                                                               \
    X(packets_loss)                                                            \
    X(packets_conceal)                                                         \
    X(packets_read_resync)                                                     \
    X(codec_options_table)                                                     \
    X(codec_search)                                                            \
    X(prior_ar_column_dot)                                                     \
    X(bitstream)                                                               \
    X(pmf_quantizer)                                                           \
    X(range_coder)                                                             \
    X(range_decoder_garbage)                                                   \
    X(bf16_weights)                                                            \
    X(codec_zero_allocations)                                                  \
    X(codec_state_plan)                                                        \
    X(features_reference)                                                      \
    X(griffin_lim)                                                             \
    X(griffin_lim_streamed)                                                    \
    X(wav_writer)                                                              \
    X(loud_audio)                                                              \
    X(pitch_tracker)                                                           \
    X(pitch_refine)                                                            \
    X(vocoder)                                                                 \
    X(vocoder_bad_input)                                                       \
    X(audio_files)                                                             \
    X(audio_out_timeline)                                                      \
    X(audio_out_polish)                                                        \
    X(fft_real)                                                                \
    X(speech_latency)                                                          \
    X(checkpoint_features)                                                     \
    X(bad_configs)                                                             \
    X(sizes)                                                                   \
    X(run_arrays_equal_files)                                                  \
    X(run_saves_only_what_reads_back)                                          \
    X(run_thread_cannot_start)                                                 \
    X(option_table)                                                            \
    X(recipes)                                                                 \
    X(checkpoint_records_options)                                              \
    X(run_batches_allocate_nothing)

#define X(name) int test_##name(void);
FRAE_UNIT_TESTS(X)
#undef X
#endif
