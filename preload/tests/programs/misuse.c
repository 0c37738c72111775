/* Misuse that liballoclab.so must refuse with one line on stderr and SIGABRT (never by corrupting
 * the heap or crashing inside it). Usage: misuse <case>. Prints "reached: <case>" on stdout just
 * before the bad call, so the test knows the program got that far. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*free_sized_fn)(void *, size_t);
typedef void (*free_aligned_sized_fn)(void *, size_t, size_t);

static char not_heap[64];

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *c = argv[1];
    char *p = malloc(100);
    char *big = malloc(100000);
    if (!p || !big) return 3;
    printf("reached: %s\n", c);
    fflush(stdout);
    if (!strcmp(c, "double-free")) {
        free(p);
        free(p);
    } else if (!strcmp(c, "foreign")) {
        free(not_heap + 16);
    } else if (!strcmp(c, "interior")) {
        free(p + 16);
    } else if (!strcmp(c, "interior-large")) {
        free(big + 4096);
    } else if (!strcmp(c, "realloc-foreign")) {
        p = realloc(not_heap, 10);
    } else if (!strcmp(c, "usable-foreign")) {
        printf("%zu\n", malloc_usable_size(not_heap));
    } else if (!strcmp(c, "free-sized-too-big")) {
        ((free_sized_fn)dlsym(RTLD_DEFAULT, "free_sized"))(p, 100000);
    } else if (!strcmp(c, "free-aligned-misaligned")) {
        ((free_aligned_sized_fn)dlsym(RTLD_DEFAULT, "free_aligned_sized"))(p + 16, 1 << 20, 10);
    } else {
        return 4;
    }
    printf("survived: %s\n", c);
    return 0;
}
