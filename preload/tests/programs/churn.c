/* Thread churn: thousands of short-lived threads, a few alive at a time, each allocating
 * (small, large and huge sizes), freeing most of it itself and handing a few blocks to main,
 * which frees them. Memory must not grow with the number of threads: each thread's arena
 * and bindings must be returned or reused when it exits.
 * Usage: churn <threads> <at once>. Prints the resident set after a warm-up and at the end,
 * and exits 1 if it grew by more than the bound. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

enum { HANDOFF = 2, MAX_AT_ONCE = 64 };
static const long GROWTH_BOUND = 16L << 20;

struct job {
    int id;
    void *handoff[HANDOFF];
};

static void *worker(void *arg) {
    struct job *j = arg;
    void *p[40];
    for (int i = 0; i < 40; i++) {
        size_t size = i < 30 ? 16 + (size_t)((i * 37 + j->id) % 3000) : 4096 * (size_t)(1 + i % 20);
        p[i] = malloc(size);
        if (!p[i]) return NULL;
        memset(p[i], i, size);
    }
    void *huge = malloc((1 << 20) + 4096);
    if (!huge) return NULL;
    memset(huge, 1, 4096);
    free(huge);
    for (int i = 0; i < 40; i++) {
        if (i < HANDOFF)
            j->handoff[i] = p[i];
        else
            free(p[i]);
    }
    return j;
}

static long resident(void) {
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = -1;
    fclose(f);
    return rss * sysconf(_SC_PAGESIZE);
}

static void run(int from, int to, int at_once, struct job *jobs) {
    for (int base = from; base < to; base += at_once) {
        pthread_t t[MAX_AT_ONCE];
        int n = to - base < at_once ? to - base : at_once;
        for (int i = 0; i < n; i++) {
            jobs[i].id = base + i;
            REQUIRE(pthread_create(&t[i], NULL, worker, &jobs[i]) == 0);
        }
        for (int i = 0; i < n; i++) {
            void *ret;
            pthread_join(t[i], &ret);
            REQUIRE(ret == &jobs[i]);
            for (int k = 0; k < HANDOFF; k++) free(jobs[i].handoff[k]); /* cross-thread frees */
        }
    }
}

int main(int argc, char **argv) {
    int total = argc > 1 ? atoi(argv[1]) : 3000;
    int at_once = argc > 2 ? atoi(argv[2]) : 8;
    REQUIRE(at_once > 0 && at_once <= MAX_AT_ONCE && total >= 10 * at_once);
    static struct job jobs[MAX_AT_ONCE];
    int warm = total / 10;
    run(0, warm, at_once, jobs);
    long after_warmup = resident();
    run(warm, total, at_once, jobs);
    long at_end = resident();
    printf("churn: %d threads, resident after %d: %ld KiB, at end: %ld KiB\n", total, warm,
           after_warmup / 1024, at_end / 1024);
    CHECK(after_warmup > 0 && at_end > 0);
    CHECK(at_end - after_warmup <= GROWTH_BOUND);
    if (check_failures) return 1;
    printf("churn: ok\n");
    return 0;
}
