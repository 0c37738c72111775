/* A loop of large allocations, as mimalloc-bench's malloc-large: 20 live buffers of
   5..25 MiB, each iteration frees one at random and allocates another; 2000 iterations. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    enum { N = 20 };
    static char *buf[N];
    unsigned long long seed = 42, sum = 0;
    for (int i = 0; i < iters; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int k = (seed >> 33) % N;
        size_t size = (5u << 20) + (size_t)((seed >> 13) % (20u << 20));
        free(buf[k]);
        buf[k] = malloc(size);
        if (!buf[k]) return 1;
        /* touch a page in 16, as a program writing part of its buffer */
        for (size_t o = 0; o < size; o += 65536) buf[k][o] = (char)i;
        sum += (unsigned char)buf[k][0];
    }
    for (int k = 0; k < N; k++) free(buf[k]);
    printf("%llu\n", sum);
    return 0;
}
