/* Misuse that the hardened and debug profiles must catch: writes after free, overflows past
 * small and large allocations, accesses through a malloc(0) pointer, and bad frees, each with
 * its own message. Usage: hardened <case>. Prints "reached: <case>" on stdout just before the
 * misuse, and "survived: <case>" if the program was not stopped. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char not_heap[64];

/* Allocations and frees of `size` bytes, enough to push anything freed before out of the
 * quarantine (it holds at most 256 allocations per arena), so that it is reused. */
static void churn(size_t size) {
    for (int i = 0; i < 1000; i++) {
        char *q = malloc(size);
        free(q);
    }
}

/* Frees `arg` and ends: the thread's exit gives its cache back to the arenas. (A thread's
 * first free sets up its cache; that one takes the slow path.) */
static void *free_and_exit(void *arg) {
    free(malloc(100));
    free(arg);
    return NULL;
}

/* The program's own SIGSEGV handler: says so and exits 42. */
static void own_handler(int sig) {
    (void)sig;
    static const char msg[] = "handler: the program's own\n";
    if (write(1, msg, sizeof msg - 1) < 0) _exit(43);
    _exit(42);
}

static void install_own_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = own_handler;
    sigaction(SIGSEGV, &sa, NULL);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *c = argv[1];
    /* Before the heap's first use, which installs its handler over this one (and chains). */
    if (!strcmp(c, "overflow-large-handled")) install_own_handler();
    char *p = malloc(100);
    char *keep = malloc(100); /* keeps p's run alive when p is freed */
    char *big = malloc(100000);
    if (!p || !keep || !big) return 3;
    printf("reached: %s\n", c);
    fflush(stdout);
    volatile char *v;
    if (!strcmp(c, "write-after-free")) {
        free(p);
        p[10] = 1;
        churn(100);
    } else if (!strcmp(c, "write-after-free-large")) {
        free(big);
        v = big;
        v[5000] = 1;
    } else if (!strcmp(c, "read-after-free-large")) {
        free(big);
        v = big;
        printf("%d\n", v[0]);
    } else if (!strcmp(c, "overflow-1")) {
        p[100] = 1;
        free(p);
    } else if (!strcmp(c, "overflow-8")) {
        char *q = malloc(24);
        memset(q + 24, 'A', 8);
        free(q);
    } else if (!strcmp(c, "overflow-large")) {
        char *q = malloc(8192);
        v = q;
        v[8192] = 1;
    } else if (!strcmp(c, "malloc0-read")) {
        v = malloc(0);
        printf("%d\n", v[0]);
    } else if (!strcmp(c, "malloc0-write")) {
        v = malloc(0);
        v[0] = 1;
    } else if (!strcmp(c, "double-free")) {
        free(p);
        free(p);
    } else if (!strcmp(c, "double-free-large")) {
        free(big);
        free(big);
    } else if (!strcmp(c, "interior")) {
        free(p + 16);
    } else if (!strcmp(c, "interior-in-thread")) {
        /* As "interior", from a thread that then ends (its cache is flushed). */
        pthread_t t;
        if (pthread_create(&t, NULL, free_and_exit, p + 16) || pthread_join(t, NULL)) return 5;
    } else if (!strcmp(c, "foreign")) {
        free(not_heap + 16);
    } else if (!strcmp(c, "sampled-off-by-one")) {
        /* Run with sample:1: the allocation sits against the guard page on one side. */
        char *q = malloc(64);
        v = q;
        if ((uintptr_t)q % 4096 == 0)
            v[-1] = 1;
        else
            v[64] = 1;
    } else if (!strcmp(c, "sampled-use-after-free")) {
        char *q = malloc(64);
        free(q);
        v = q;
        printf("%d\n", v[8]);
    } else if (!strcmp(c, "overflow-large-handled")) {
        /* As "overflow-large", with a handler of the program's installed before the heap's
         * first use (at the top of main): the report comes first, then the program's. */
        char *q = malloc(8192);
        v = q;
        v[8192] = 1;
    } else if (!strcmp(c, "own-fault-handled")) {
        /* A fault in the program's own inaccessible page. */
        install_own_handler();
        v = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        v[0] = 1;
    } else if (!strcmp(c, "usable-size-freed")) {
        /* Just freed: in a thread cache, or held in the quarantine. */
        free(p);
        printf("%zu\n", malloc_usable_size(p));
    } else if (!strcmp(c, "usable-size-freed-large")) {
        free(big);
        printf("%zu\n", malloc_usable_size(big));
    } else if (!strcmp(c, "double-free-page")) {
        /* Two pages: a large block that a thread cache holds (up to 16 KiB). */
        char *q = malloc(8192);
        free(q);
        free(q);
    } else if (!strcmp(c, "usable-size-freed-page")) {
        char *q = malloc(8192);
        free(q);
        printf("%zu\n", malloc_usable_size(q));
    } else if (!strcmp(c, "string-overflow")) {
        /* A full buffer read as a string: the canary's first byte ends it. */
        char *q = malloc(16);
        size_t n = malloc_usable_size(q);
        memset(q, 'a', n);
        printf("overflow by %zu bytes\n", strlen(q) - n);
        free(q);
    } else if (!strcmp(c, "canary-record")) {
        /* One bit of each byte after an 8-byte allocation, as argv[2] and argv[3] say. */
        if (argc < 4) return 2;
        char *q = malloc(8);
        memset(q, 'b', 8);
        q[atoi(argv[2])] ^= (char)(1 << atoi(argv[3]));
        free(q);
    } else if (!strcmp(c, "realloc-in-place")) {
        /* Grown and shrunk within its size class, written to its end each time. */
        char *q = malloc(600);
        memset(q, 1, 600);
        for (size_t n = 601; n <= 640; n++) {
            q = realloc(q, n);
            memset(q, 2, n);
        }
        for (size_t n = 640; n >= 560; n--) {
            q = realloc(q, n);
            memset(q, 3, n);
        }
        free(q);
    } else if (!strcmp(c, "never-allocated")) {
        /* 112 bytes is the size class of a 100-byte request with its canary; region 30 of
         * the run is far above anything this program allocated of that class. */
        free(p + 112 * 30);
    } else {
        return 4;
    }
    printf("survived: %s\n", c);
    return 0;
}
