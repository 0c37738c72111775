/* Shared by the C test programs: a check that names the failing expression and line, and a
 * fail-fast exit. Built with -O0 -fno-builtin so the compiler cannot delete or fold the
 * allocation calls under test. */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <stdlib.h>

static int check_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
            check_failures++;                                                        \
        }                                                                            \
    } while (0)

#define REQUIRE(cond)                                                                \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "FAIL %s:%d: %s (fatal)\n", __FILE__, __LINE__, #cond);  \
            exit(2);                                                                 \
        }                                                                            \
    } while (0)

#endif
