/* Runs every unit test; closes with "N passed, N failed".
 * Usage: frae_tests [name-substring] */
#include <stdio.h>
#include <string.h>

#include "tests.h"

typedef struct {
    const char *name;
    int (*fn)(void);
} test_entry;

static const test_entry tests[] = {
    {"kernels_match_scalar", test_kernels_match_scalar},
    {"isas_train_identically", test_isas_train_identically},
    {"threads_train_identically", test_threads_train_identically},
    {"sparse_kernel_matches_dense", test_sparse_kernel_matches_dense},
    {"bf16_kernel_matches_f32", test_bf16_kernel_matches_f32},
    {"compact_matches_scalar", test_compact_matches_scalar},
    {"adam_matches_scalar", test_adam_matches_scalar},
    {"naive_bitexact", test_naive_bitexact},
    {"forward_chunked", test_forward_chunked},
    {"weights_change_midstream", test_weights_change_midstream},
    {"gradcheck_detached", test_gradcheck_detached},
    {"gradcheck_full", test_gradcheck_full},
    {"gradcheck_straight_through", test_gradcheck_straight_through},
    {"gradcheck_relu_batch1", test_gradcheck_relu_batch1},
    {"pytorch_fixtures", test_fixtures},
    {"zero_allocations", test_zero_allocations},
    {"flat_rss", test_flat_rss},
    {"two_models_independent", test_two_models_independent},
    {"train_frames_equals_batch", test_train_frames_equals_batch},
    {"variable_lengths", test_variable_lengths},
    {"padding_is_inert", test_padding_is_inert},
    {"gradient_clipping", test_gradient_clipping},
    {"npy_reader", test_npy_reader},
    {"bad_checkpoints", test_bad_checkpoints},
    {"atomic_save_under_kill", test_atomic_save_under_kill},
    {"codec_roundtrip", test_codec_roundtrip},
    {"codec_threads_and_isas", test_codec_threads_and_isas},
    {"bitstream", test_bitstream},
    {"bf16_weights", test_bf16_weights},
    {"codec_zero_allocations", test_codec_zero_allocations},
    {"features_reference", test_features_reference},
    {"griffin_lim", test_griffin_lim},
    {"audio_files", test_audio_files},
    {"bad_configs", test_bad_configs},
    {"sizes", test_sizes},
};

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1]))
            continue;
        printf("[ RUN  ] %s\n", tests[i].name);
        int f = tests[i].fn();
        printf("[ %s ] %s\n", f ? "FAIL" : " OK ", tests[i].name);
        if (f)
            failed++;
        else
            passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
