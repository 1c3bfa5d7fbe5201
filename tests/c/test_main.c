/* Runs every unit test (tests.h); closes with "N passed, N failed", after
 * "N skipped" when some compared nothing on this machine (the AVX-512
 * kernels on a CPU without AVX-512, say): a skip is not a pass.
 * Usage: frae_tests [name-substring ...]: the tests whose name holds one
 * (=name: that test alone) */
#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "tests.h"

typedef struct {
    const char *name;
    int (*fn)(void);
} test_entry;

static const test_entry tests[] = {
#define X(name) {#name, test_##name},
    FRAE_UNIT_TESTS(X)
#undef X
};

int main(int argc, char **argv)
{
    int passed = 0, failed = 0, skipped = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
        int picked = argc == 1;
        for (int a = 1; a < argc && !picked; a++)
            picked = argv[a][0] == '=' ? !strcmp(tests[i].name, argv[a] + 1)
                                       : strstr(tests[i].name, argv[a]) != NULL;
        if (!picked)
            continue;
        printf("[ RUN  ] %s\n", tests[i].name);
        int f = tests[i].fn();
        printf("[ %s ] %s\n",
               f == TEST_SKIPPED ? "SKIP"
               : f               ? "FAIL"
                                 : " OK ",
               tests[i].name);
        if (f == TEST_SKIPPED)
            skipped++;
        else if (f)
            failed++;
        else
            passed++;
    }
    if (skipped)
        printf("%d skipped\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
