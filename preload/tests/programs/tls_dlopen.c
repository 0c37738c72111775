/* The dynamic-TLS pitfall: a thread whose DTV is out of date (modules with TLS were dlopen'ed
 * since it last looked) calls malloc. If the allocator's own thread-local access went through
 * a DTV update that itself mallocs, this recursed without end on glibc before 2.40.
 * Usage: tls_dlopen <dir> <n>: dlopens <dir>/libtls<i>.so for i in 1..=n (each defines
 * `long get<i>(void)`, which bumps an element of its own __thread array and returns it) while
 * a second thread waits, then lets that thread allocate. Prints "tls: ok". */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_barrier_t loaded_before, loaded_after;

static void *worker(void *arg) {
    void *p = malloc(100); /* bind this thread: its allocator TLS is in use */
    free(p);
    pthread_barrier_wait(&loaded_before); /* main dlopens now */
    pthread_barrier_wait(&loaded_after);
    for (int i = 0; i < 1000; i++) { /* this thread's DTV is out of date here */
        p = malloc(50 + (size_t)i);
        if (!p) return NULL;
        free(p);
    }
    return arg;
}

int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[2]) : 0;
    if (n < 1) return 2;
    pthread_t t;
    pthread_barrier_init(&loaded_before, NULL, 2);
    pthread_barrier_init(&loaded_after, NULL, 2);
    if (pthread_create(&t, NULL, worker, argv) != 0) return 3;
    pthread_barrier_wait(&loaded_before);
    char path[4096], name[32];
    for (int i = 1; i <= n; i++) {
        snprintf(path, sizeof path, "%s/libtls%d.so", argv[1], i);
        void *h = dlopen(path, RTLD_NOW);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        snprintf(name, sizeof name, "get%d", i);
        long (*get)(void) = (long (*)(void))dlsym(h, name);
        if (!get || get() != 1) {
            fprintf(stderr, "bad %s\n", name);
            return 1;
        }
    }
    pthread_barrier_wait(&loaded_after);
    void *ret;
    pthread_join(t, &ret);
    if (ret != argv) return 1;
    printf("tls: ok\n");
    return 0;
}
