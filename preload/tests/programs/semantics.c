/* The C semantics liballoclab.so promises (issue 3, point 3), checked from an unmodified C
 * program. Usage: semantics <zero_realloc mode: free|alloc>. Prints "semantics: ok" and exits 0,
 * or prints each failed check and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* Not in glibc 2.36's headers: looked up at run time, which also proves the preloaded
 * library provides them. */
typedef void (*free_sized_fn)(void *, size_t);
typedef void (*free_aligned_sized_fn)(void *, size_t, size_t);

static int from_alloclab(const char *sym) {
    Dl_info info;
    void *p = dlsym(RTLD_DEFAULT, sym);
    return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "liballoclab");
}

static void fill(unsigned char *p, size_t n, size_t seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 31 + seed);
}

static int intact(const unsigned char *p, size_t n, size_t seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 31 + seed)) return 0;
    return 1;
}

static int aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

static void interposition(void) {
    const char *syms[] = {"malloc", "free", "calloc", "realloc", "reallocarray",
                          "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
                          "malloc_usable_size", "free_sized", "free_aligned_sized",
                          "__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_free",
                          "__libc_memalign", "__libc_valloc", "__libc_pvalloc"};
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        if (!from_alloclab(syms[i])) fprintf(stderr, "not from liballoclab: %s\n", syms[i]);
        CHECK(from_alloclab(syms[i]));
    }
}

/* glibc's own names reach the same heap: mixing them with the standard ones is fine. */
extern void *__libc_malloc(size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static void libc_names(void) {
    char *p = __libc_malloc(100);
    REQUIRE(p);
    fill((unsigned char *)p, 100, 3);
    p = realloc(p, 5000);
    CHECK(p && intact((unsigned char *)p, 100, 3));
    p = __libc_realloc(p, 50);
    CHECK(p && intact((unsigned char *)p, 50, 3));
    free(p);
    __libc_free(malloc(10));
}

static void zero_sizes(void) {
    void *a = malloc(0), *b = malloc(0);
    CHECK(a && b && a != b);
    CHECK(malloc_usable_size(a) >= 1);
    free(a);
    free(b);
    CHECK(malloc_usable_size(NULL) == 0);
    free(NULL);
    void *c = calloc(0, 10), *d = calloc(10, 0);
    CHECK(c && d && c != d);
    free(c);
    free(d);
}

static void failures_set_enomem(void) {
    errno = 0;
    CHECK(malloc(SIZE_MAX) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc(SIZE_MAX / 2) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc((size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(aligned_alloc(64, SIZE_MAX - 10) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM);

    unsigned char *p = malloc(100);
    REQUIRE(p);
    fill(p, 100, 7);
    errno = 0;
    CHECK(reallocarray(p, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(realloc(p, SIZE_MAX - 100) == NULL && errno == ENOMEM);
    CHECK(intact(p, 100, 7)); /* the block survives a failed realloc */
    unsigned char *q = reallocarray(p, 25, 8);
    CHECK(q && intact(q, 100, 7) && malloc_usable_size(q) >= 200);
    free(q);
}

static void calloc_zeroes(void) {
    /* Dirty memory of many sizes, free it, then calloc the same sizes: all zero. */
    size_t sizes[] = {1, 16, 48, 496, 512, 3840, 4000, 5000, 70000, 1 << 20, (3 << 20) + 5};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        for (int round = 0; round < 3; round++) {
            unsigned char *p = malloc(sizes[i]);
            REQUIRE(p);
            memset(p, 0xa5, sizes[i]);
            free(p);
            unsigned char *z = calloc(1, sizes[i]);
            REQUIRE(z);
            size_t nonzero = 0;
            for (size_t k = 0; k < sizes[i]; k++) nonzero += z[k] != 0;
            CHECK(nonzero == 0);
            free(z);
        }
    }
}

static void alignment_rules(void) {
    void *p = (void *)0x1234;
    /* posix_memalign: a power of two multiple of sizeof(void *), else EINVAL, *out untouched. */
    size_t bad[] = {0, 1, 2, 3, 4, 12, 24, 48, 100, 4095};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(posix_memalign(&p, bad[i], 16) == EINVAL);
        CHECK(p == (void *)0x1234);
    }
    size_t good[] = {8, 16, 32, 64, 256, 4096, 8192, 65536, 1 << 20, 2 << 20};
    size_t sizes[] = {0, 1, 24, 100, 4000, 70000, (1 << 20) + 3};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            void *q = NULL;
            CHECK(posix_memalign(&q, good[i], sizes[k]) == 0);
            CHECK(q && aligned(q, good[i]));
            CHECK(malloc_usable_size(q) >= sizes[k]);
            if (q) memset(q, 1, sizes[k]);
            free(q);
            errno = 0;
            q = aligned_alloc(good[i], sizes[k]);
            CHECK(q && aligned(q, good[i]));
            free(q);
            q = memalign(good[i], sizes[k]);
            CHECK(q && aligned(q, good[i]));
            free(q);
        }
    }
    CHECK(posix_memalign(&p, 64, SIZE_MAX - 1000) == ENOMEM);
    CHECK(p == (void *)0x1234);
    /* aligned_alloc: a power of two, else NULL with EINVAL. */
    size_t bad_aa[] = {0, 3, 24, 48, 1000};
    for (size_t i = 0; i < sizeof bad_aa / sizeof *bad_aa; i++) {
        errno = 0;
        CHECK(aligned_alloc(bad_aa[i], 64) == NULL && errno == EINVAL);
    }
    /* C17: the size need not be a multiple of the alignment. */
    void *odd = aligned_alloc(256, 100);
    CHECK(odd && aligned(odd, 256) && malloc_usable_size(odd) >= 100);
    free(odd);
    /* memalign rounds a non-power of two up (glibc); valloc and pvalloc are page-aligned. */
    void *m = memalign(24, 10);
    CHECK(m && aligned(m, 32));
    free(m);
    errno = 0;
    CHECK(memalign(SIZE_MAX, 10) == NULL && errno == EINVAL);
    long page = sysconf(_SC_PAGESIZE);
    void *v = valloc(10);
    CHECK(v && aligned(v, (size_t)page));
    free(v);
    void *pv = pvalloc(page + 1);
    CHECK(pv && aligned(pv, (size_t)page) && malloc_usable_size(pv) >= 2 * (size_t)page);
    free(pv);
    /* malloc's own alignment is 16. */
    for (size_t s = 1; s < 5000; s += 37) {
        void *q = malloc(s);
        CHECK(q && aligned(q, 16) && malloc_usable_size(q) >= s);
        free(q);
    }
}

/* Every small class boundary, the large range and huge sizes, up and then down. */
static size_t chain[256];
static size_t chain_len;

static void build_chain(void) {
    chain[chain_len++] = 1;
    for (size_t s = 16; s <= 496; s += 16) {
        chain[chain_len++] = s;
        chain[chain_len++] = s + 1;
    }
    for (size_t s = 512; s <= 3840; s += 256) {
        chain[chain_len++] = s;
        chain[chain_len++] = s + 1;
    }
    size_t big[] = {4096, 4097, 8192, 65536, 65537, 254 * 4096, 254 * 4096 + 1, 1 << 20,
                    (1 << 20) + 1, 2 << 20, (3 << 20) + 5, 8 << 20};
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) chain[chain_len++] = big[i];
}

static void realloc_keeps_contents(void) {
    build_chain();
    unsigned char *p = realloc(NULL, chain[0]); /* realloc(NULL, n) allocates */
    REQUIRE(p);
    fill(p, chain[0], 0);
    for (size_t i = 1; i < chain_len; i++) { /* growing */
        unsigned char *q = realloc(p, chain[i]);
        REQUIRE(q);
        CHECK(intact(q, chain[i - 1], i - 1));
        CHECK(malloc_usable_size(q) >= chain[i]);
        fill(q, chain[i], i);
        p = q;
    }
    size_t last = chain_len - 1;
    for (size_t i = chain_len - 1; i-- > 0;) { /* shrinking */
        unsigned char *q = realloc(p, chain[i]);
        REQUIRE(q);
        CHECK(intact(q, chain[i], last));
        CHECK(malloc_usable_size(q) >= chain[i]);
        fill(q, chain[i], i);
        last = i;
        p = q;
    }
    free(p);
    /* Many live blocks moving between classes at once, interleaved. */
    unsigned char *live[64];
    size_t size[64];
    for (int k = 0; k < 64; k++) {
        size[k] = 1 + (size_t)k * 97;
        live[k] = malloc(size[k]);
        REQUIRE(live[k]);
        fill(live[k], size[k], (size_t)k);
    }
    for (int round = 0; round < 20; round++) {
        for (int k = 0; k < 64; k++) {
            size_t ns = 1 + (size_t)((k * 7919 + round * 104729) % 20000);
            unsigned char *q = realloc(live[k], ns);
            REQUIRE(q);
            CHECK(intact(q, size[k] < ns ? size[k] : ns, (size_t)k + (size_t)round * 64));
            fill(q, ns, (size_t)k + (size_t)(round + 1) * 64);
            live[k] = q;
            size[k] = ns;
        }
    }
    for (int k = 0; k < 64; k++) free(live[k]);
}

static void zero_realloc(const char *mode) {
    void *p = malloc(40);
    REQUIRE(p);
    void *q = realloc(p, 0);
    if (strcmp(mode, "alloc") == 0) {
        CHECK(q != NULL);
        free(q);
    } else {
        CHECK(q == NULL); /* p was freed, as glibc does */
    }
}

/* free preserves errno (POSIX.1-2024, glibc >= 2.33), and so does a successful realloc. */
static void errno_preserved(void) {
    size_t sizes[] = {1, 100, 3840, 5000, 300000, 1 << 20, 5 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        void *p = malloc(sizes[i]);
        REQUIRE(p);
        errno = 4242;
        free(p);
        CHECK(errno == 4242);
    }
    errno = 4242;
    free(NULL);
    CHECK(errno == 4242);
    unsigned char *h = malloc(3 << 20);
    REQUIRE(h);
    fill(h, 3 << 20, 9);
    for (size_t size = 4 << 20; size <= (64 << 20); size *= 2) { /* huge growth: remaps */
        errno = 4242;
        unsigned char *q = realloc(h, size);
        REQUIRE(q);
        CHECK(errno == 4242);
        CHECK(intact(q, 3 << 20, 9));
        h = q;
    }
    free(h);
}

static void sized_frees(void) {
    free_sized_fn fs = (free_sized_fn)dlsym(RTLD_DEFAULT, "free_sized");
    free_aligned_sized_fn fas = (free_aligned_sized_fn)dlsym(RTLD_DEFAULT, "free_aligned_sized");
    REQUIRE(fs && fas);
    size_t sizes[] = {0, 1, 100, 3840, 5000, 1 << 20, 3 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        fs(malloc(sizes[i]), sizes[i]);
        fas(aligned_alloc(64, sizes[i]), 64, sizes[i]);
        fas(aligned_alloc(4096, sizes[i]), 4096, sizes[i]);
    }
    fs(NULL, 10);
    fas(NULL, 64, 10);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "free";
    interposition();
    libc_names();
    zero_sizes();
    failures_set_enomem();
    calloc_zeroes();
    alignment_rules();
    realloc_keeps_contents();
    zero_realloc(mode);
    errno_preserved();
    sized_frees();
    if (check_failures) {
        fprintf(stderr, "semantics: %d checks failed\n", check_failures);
        return 1;
    }
    printf("semantics: ok\n");
    return 0;
}
