/* Allocation at the edges of a process's life, where preloaded allocators break:
 *  - in a constructor, before main (and before libc has finished starting up other libraries);
 *  - through the dynamic loader: dlopen, dlsym, dlerror (which mallocs its message);
 *  - in thread-exit machinery: __cxa_thread_atexit_impl (glibc callocs to record the
 *    destructor), pthread key destructors and C++-style TLS destructors that themselves
 *    allocate, all after the allocator's own thread-exit hook may have run;
 *  - in atexit handlers, after main returned.
 * Prints "early: ok" and exits 0, or names the failed check and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

extern int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso);
extern void *__dso_handle;

static char *before_main[8];
static atomic_int tls_dtors, key_dtors;
static pthread_key_t key;
static __thread char *tls_block;

__attribute__((constructor(101))) static void early_ctor(void) {
    for (int i = 0; i < 8; i++) {
        before_main[i] = i % 2 ? calloc(1, 100 * (size_t)(i + 1)) : malloc(5000 * (size_t)i + 1);
        if (before_main[i]) memset(before_main[i], 'a' + i, 5);
    }
    before_main[0] = realloc(before_main[0], 70000);
    if (before_main[0]) memset(before_main[0], 'a', 5);
}

static void tls_dtor(void *obj) {
    /* Runs at thread exit, possibly after the allocator's own exit hook. */
    char *p = malloc(64);
    if (p) {
        memcpy(p, obj, 16);
        free(p);
    }
    free(obj);
    atomic_fetch_add(&tls_dtors, 1);
}

static void key_dtor(void *v) {
    void *p = calloc(3, 1000);
    free(p);
    free(v);
    atomic_fetch_add(&key_dtors, 1);
}

static void *thread_main(void *arg) {
    char *obj = malloc(32);
    if (!obj) return NULL;
    memset(obj, 'x', 32);
    /* glibc's __cxa_thread_atexit_impl callocs its list node: a call into us from inside
     * TLS-destructor registration. */
    if (__cxa_thread_atexit_impl(tls_dtor, obj, &__dso_handle) != 0) return NULL;
    pthread_setspecific(key, malloc(48));
    tls_block = malloc(200);
    free(tls_block);
    return arg;
}

static void at_exit(void) {
    /* After main: allocate and free what the constructor made. */
    char *p = malloc(1 << 20);
    if (p) memset(p, 0, 1 << 20);
    free(p);
    for (int i = 0; i < 8; i++) free(before_main[i]);
}

int main(void) {
    for (int i = 0; i < 8; i++) {
        REQUIRE(before_main[i] != NULL);
        CHECK(memcmp(before_main[i], (char[]){'a' + i, 'a' + i, 'a' + i, 'a' + i, 'a' + i}, 5) == 0);
    }
    atexit(at_exit);

    /* The loader: dlopen, dlsym, dlerror (its message is malloc'd). */
    void *libm = dlopen("libm.so.6", RTLD_NOW);
    CHECK(libm != NULL);
    CHECK(dlsym(libm, "cos") != NULL);
    CHECK(dlsym(libm, "no_such_symbol_at_all") == NULL);
    const char *err = dlerror();
    CHECK(err && strstr(err, "no_such_symbol_at_all"));
    CHECK(dlsym(RTLD_NEXT, "malloc") != NULL);
    dlclose(libm);

    REQUIRE(pthread_key_create(&key, key_dtor) == 0);
    enum { ROUNDS = 40, PER = 8 };
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t[PER];
        for (int i = 0; i < PER; i++) REQUIRE(pthread_create(&t[i], NULL, thread_main, t) == 0);
        for (int i = 0; i < PER; i++) {
            void *ret;
            pthread_join(t[i], &ret);
            CHECK(ret == t);
        }
    }
    CHECK(atomic_load(&tls_dtors) == ROUNDS * PER);
    CHECK(atomic_load(&key_dtors) == ROUNDS * PER);
    if (check_failures) return 1;
    printf("early: ok\n");
    return 0;
}
