/* The dispatch benchmark's C driver: the same ring workload as benches/dispatch.rs, calling
 * malloc and free through the C ABI (PLT), as an unmodified program does. Run under callgrind
 * with --toggle-collect=measured_c, on glibc or with LD_PRELOAD=liballoclab.so.
 * Usage: driver <iterations>. */
#include <stdlib.h>

enum { RING = 256 };
static const size_t SIZES[16] = {8, 24, 16, 48, 32, 100, 64, 200, 16, 40, 500, 24, 1000, 72, 2000, 128};

__attribute__((noinline)) void measured_c(long n, void **ring) {
    for (long i = 0; i < n; i++) {
        void **slot = &ring[i % RING];
        free(*slot);
        *slot = malloc(SIZES[i % 16]);
    }
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    static void *ring[RING];
    measured_c(RING * 4, ring);
    measured_c(n, ring);
    for (int i = 0; i < RING; i++) free(ring[i]);
    return 0;
}
