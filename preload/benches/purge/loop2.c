/* malloc/free of one block, 2 MiB .. 64 MiB, in a loop; every page written. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    unsigned long long seed = 7, sum = 0;
    for (int i = 0; i < iters; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t size = (2u << 20) + (size_t)((seed >> 20) % (62u << 20));
        char *p = malloc(size);
        if (!p) return 1;
        for (size_t o = 0; o < size; o += 4096) p[o] = (char)i;
        sum += (unsigned char)p[size / 2];
        free(p);
    }
    printf("%llu\n", sum);
    return 0;
}
