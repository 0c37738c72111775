/* fork() while other threads are busy in the allocator (so one of them often holds an arena
 * lock at the moment of fork). The child must be able to allocate, free, realloc and start a
 * thread; the parent must carry on. A child that does not finish within the deadline is
 * taken as deadlocked. Usage: fork_threads <threads> <forks>. Prints "fork: ok". */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static atomic_int stop;
static atomic_long work;

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t size_of(uint64_t r) {
    switch (r % 16) {
    case 0: return 4000 + r % 200000;        /* large */
    case 1: return r % 3 ? 600 + r % 3000 : (1 << 20) + r % 100000; /* wide or huge */
    default: return 1 + r % 500;             /* small */
    }
}

static void *busy(void *arg) {
    uint64_t s = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    void *slot[64] = {0};
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t r = next(&s);
        int i = (int)(r % 64);
        if (slot[i]) {
            if (r & 64) {
                void *q = realloc(slot[i], size_of(r >> 8));
                if (q) slot[i] = q;
            } else {
                free(slot[i]);
                slot[i] = NULL;
            }
        } else {
            slot[i] = (r & 128) ? calloc(1, size_of(r >> 8)) : malloc(size_of(r >> 8));
            if (slot[i]) memset(slot[i], 1, 8);
        }
        atomic_fetch_add_explicit(&work, 1, memory_order_relaxed);
    }
    for (int i = 0; i < 64; i++) free(slot[i]);
    return NULL;
}

static void *child_thread(void *arg) {
    for (int i = 0; i < 100; i++) free(malloc(10 + (size_t)i * 50));
    return arg;
}

/* What a forked child does: allocate every kind of size, use a thread, exit. */
static int child(int n) {
    void *p[200];
    for (int i = 0; i < 200; i++) {
        p[i] = malloc(size_of((uint64_t)i * 7919 + (uint64_t)n));
        if (!p[i]) return 10;
        memset(p[i], 2, 16);
    }
    for (int i = 0; i < 200; i += 2) {
        p[i] = realloc(p[i], 50 + (size_t)i * 300);
        if (!p[i]) return 11;
    }
    for (int i = 0; i < 200; i++) free(p[i]);
    pthread_t t;
    if (pthread_create(&t, NULL, child_thread, p) != 0) return 12;
    void *ret;
    pthread_join(t, &ret);
    return ret == p ? 0 : 13;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    int nforks = argc > 2 ? atoi(argv[2]) : 100;
    pthread_t t[64];
    REQUIRE(nthreads > 0 && nthreads <= 64);
    for (int i = 0; i < nthreads; i++)
        REQUIRE(pthread_create(&t[i], NULL, busy, (void *)(uintptr_t)(i + 1)) == 0);
    while (atomic_load(&work) < 1000) sched_yield();
    int deadlocked = 0;
    for (int f = 0; f < nforks; f++) {
        long before = atomic_load(&work);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) _exit(child(f));
        int status = 0;
        double deadline = now() + 20.0;
        pid_t w;
        while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now() < deadline) usleep(200);
        if (w == 0) {
            fprintf(stderr, "fork %d: child %d did not finish in 20 s (deadlocked?)\n", f, pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            deadlocked++;
            continue;
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            fprintf(stderr, "fork %d: child status %#x\n", f, status);
        /* The parent's threads keep going between forks. */
        while (atomic_load(&work) < before + 50) sched_yield();
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    CHECK(deadlocked == 0);
    if (check_failures) return 1;
    printf("fork: ok\n");
    return 0;
}
