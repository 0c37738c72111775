/* Calls of every kind for the allocation-log tests (`log:`), from several threads (blocks
 * allocated by one thread are freed or reallocated by another), from forked children made while
 * those threads run (half end with _exit, half with exit), and in an atexit handler.
 *
 * Every call the program counts has a size in the marked band [MARK_LO, MARK_HI] (for a free:
 * the block's size), so that the test can tell them from the C library's own allocations.
 * Each thread of each process prints what it did, as the log should name it, on one line:
 *   calls <pid> <tid> malloc=N calloc=N realloc=N posix_memalign=N aligned_alloc=N
 *         memalign=N valloc=N free=N
 * (pvalloc is logged as valloc, reallocarray as realloc, free_sized as free; an overflowing
 * reallocarray is not logged and not counted.)
 * Usage: log_calls <threads> <iterations> <forks> [mode [file]]. Prints "log_calls: ok" last.
 * Modes:
 *   exec: at the end of main, prints its lines as "before-exec ..." instead of "calls ..."
 *         and execs itself without a mode (same pid, a new image);
 *   fds <file>: closes every descriptor from 3 up at start (the log's too) and puts <file>
 *         on descriptors 1000 to 1015 (numbers the log's may have had), writing a line to it;
 *         at exit closes every descriptor from 2 up before its last calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define MARK_LO 28672 /* 7 pages */
#define MARK_HI 32768 /* 8 pages: pvalloc rounds into the band */

enum { MALLOC, CALLOC, REALLOC, POSIX_MEMALIGN, ALIGNED_ALLOC, MEMALIGN, VALLOC, FREE, NKINDS };
static const char *const NAMES[NKINDS] = {"malloc",   "calloc", "realloc", "posix_memalign",
                                          "aligned_alloc", "memalign", "valloc", "free"};

typedef void (*free_sized_fn)(void *, size_t);
static free_sized_fn free_sized_p;

/* What one thread did, as the log should name it. */
struct counts {
    int pid, tid;
    long n[NKINDS];
};

static void start_counts(struct counts *c) {
    memset(c, 0, sizeof *c);
    c->pid = (int)getpid();
    c->tid = (int)gettid();
}

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A size in the band, above MARK_LO so that pvalloc rounds it to MARK_HI. */
static size_t marked(uint64_t r) { return MARK_LO + 1 + r % (MARK_HI - MARK_LO - 1); }

/* Blocks handed between threads: allocated by one, freed or reallocated by another. */
#define SHARED 64
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static void *shared[SHARED];

static const char *label = "calls";
static int close_at_exit;

static void print_counts(const struct counts *c) {
    char line[512];
    int n = snprintf(line, sizeof line, "%s %d %d", label, c->pid, c->tid);
    for (int k = 0; k < NKINDS; k++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s=%ld", NAMES[k], c->n[k]);
    line[n++] = '\n';
    REQUIRE(write(1, line, (size_t)n) == n);
}

/* One marked allocation of some kind; NULL (and counted) for the kinds that fail on purpose. */
static void *allocate(uint64_t r, struct counts *c) {
    size_t size = marked(r >> 8);
    void *p = NULL;
    switch (r % 12) {
    case 0:
    case 1: p = malloc(size); c->n[MALLOC]++; break;
    case 2: p = calloc(1, size); c->n[CALLOC]++; break;
    case 3: CHECK(posix_memalign(&p, 64, size) == 0); c->n[POSIX_MEMALIGN]++; break;
    case 4: p = aligned_alloc(4096, size); c->n[ALIGNED_ALLOC]++; break;
    case 5: p = memalign(24, size); c->n[MEMALIGN]++; break; /* served as 32 */
    case 6: p = valloc(size); c->n[VALLOC]++; break;
    case 7: p = pvalloc(size); c->n[VALLOC]++; break;
    case 8: p = realloc(NULL, size); c->n[REALLOC]++; break;
    case 9: p = reallocarray(NULL, 2, size / 2); c->n[REALLOC]++; break;
    case 10: /* failures, logged with a null result */
        CHECK(posix_memalign(&p, 3, size) == EINVAL); c->n[POSIX_MEMALIGN]++;
        CHECK(aligned_alloc(24, size) == NULL); c->n[ALIGNED_ALLOC]++;
        CHECK(calloc(SIZE_MAX / 2, size) == NULL); c->n[CALLOC]++;
        return NULL;
    default: p = malloc(size); c->n[MALLOC]++; break;
    }
    REQUIRE(p);
    memset(p, 1, 64);
    return p;
}

/* Frees or reallocates a marked block. */
static void *release(void *p, uint64_t r, struct counts *c) {
    switch (r % 7) {
    case 0: free_sized_p(p, MARK_LO); c->n[FREE]++; return NULL;
    case 1: p = realloc(p, marked(r >> 9)); REQUIRE(p); c->n[REALLOC]++; return p;
    case 2: p = reallocarray(p, 4, marked(r >> 9) / 4); REQUIRE(p); c->n[REALLOC]++; return p;
    case 3: /* an overflowing reallocarray: refused, the block intact, nothing logged */
        errno = 0;
        CHECK(reallocarray(p, SIZE_MAX / 2, 4) == NULL && errno == ENOMEM);
        free(p); c->n[FREE]++; return NULL;
    case 4: CHECK(realloc(p, 0) == NULL); c->n[REALLOC]++; return NULL; /* frees (glibc) */
    default: free(p); c->n[FREE]++; return NULL;
    }
}

static void work(uint64_t seed, long iterations, int share, struct counts *c) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    void *slot[16] = {0};
    for (long i = 0; i < iterations; i++) {
        uint64_t r = next(&s);
        int k = (int)(r % 16);
        if (slot[k]) {
            slot[k] = release(slot[k], r >> 4, c);
        } else {
            slot[k] = allocate(r >> 4, c);
        }
        if (share && slot[k] && (r & 0x100)) {
            /* Swap with the shared table: the other block was some other thread's. */
            int j = (int)((r >> 12) % SHARED);
            pthread_mutex_lock(&shared_lock);
            void *other = shared[j];
            shared[j] = slot[k];
            pthread_mutex_unlock(&shared_lock);
            slot[k] = other;
        }
        free(NULL); /* logged as free(0x0); not counted (the C library frees NULL too) */
    }
    for (int k = 0; k < 16; k++)
        if (slot[k]) {
            free(slot[k]);
            c->n[FREE]++;
        }
}

struct thread_arg {
    int index;
    long iterations;
    int share;
    struct counts counts;
};

static void *thread_main(void *arg) {
    struct thread_arg *a = arg;
    start_counts(&a->counts);
    work((uint64_t)a->index + 1, a->iterations, a->share, &a->counts);
    return NULL;
}

static int main_pid;
static struct counts main_counts;

/* A forked child: its own calls (it leaves the blocks it inherited alone), a thread of its
 * own, then _exit or exit. */
static void child(int f) {
    struct counts c;
    start_counts(&c);
    work(500 + (uint64_t)f, 300, 0, &c);
    struct thread_arg t = {.index = 1000 + f, .iterations = 200, .share = 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, thread_main, &t) == 0);
    REQUIRE(pthread_join(th, NULL) == 0);
    print_counts(&t.counts);
    print_counts(&c);
    if (f % 2)
        _exit(0);
    exit(0);
}

static void at_exit(void) {
    if (getpid() != main_pid) return; /* a child that calls exit */
    if (close_at_exit) {
        CHECK(dup2(1, 900) == 900); /* stdout, kept for the lines below */
        for (int fd = 0; fd < 4096; fd++)
            if (fd != 900) close(fd);
        CHECK(dup2(900, 1) == 1);
    }
    /* After main: still logged, and the block freed before the log is written out. */
    void *p = malloc(MARK_LO + 1);
    main_counts.n[MALLOC]++;
    free(p);
    main_counts.n[FREE]++;
    print_counts(&main_counts);
    if (check_failures == 0) REQUIRE(write(1, "log_calls: ok\n", 14) == 14);
}

int main(int argc, char **argv) {
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    long iterations = argc > 2 ? atol(argv[2]) : 10000;
    int nforks = argc > 3 ? atoi(argv[3]) : 4;
    const char *mode = argc > 4 ? argv[4] : "";
    REQUIRE(nthreads >= 0 && nthreads <= 64);
    if (strcmp(mode, "fds") == 0) {
        REQUIRE(argc > 5);
        for (int fd = 3; fd < 4096; fd++) close(fd);
        int data = open(argv[5], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        REQUIRE(data >= 0);
        for (int fd = 1000; fd < 1016; fd++) REQUIRE(dup2(data, fd) == fd);
        REQUIRE(write(data, "program data\n", 13) == 13);
        close_at_exit = 1;
    }
    if (strcmp(mode, "exec") == 0) label = "before-exec";
    free_sized_p = (free_sized_fn)dlsym(RTLD_DEFAULT, "free_sized");
    REQUIRE(free_sized_p);
    main_pid = (int)getpid();
    start_counts(&main_counts);
    atexit(at_exit);
    pthread_t t[64];
    struct thread_arg args[64];
    for (int i = 0; i < nthreads; i++) {
        args[i] = (struct thread_arg){.index = i + 1, .iterations = iterations, .share = 1};
        REQUIRE(pthread_create(&t[i], NULL, thread_main, &args[i]) == 0);
    }
    /* Fork while the threads run. */
    for (int f = 0; f < nforks; f++) {
        work(100 + (uint64_t)f, iterations / (nforks + 1), 0, &main_counts);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) child(f);
        int status;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    work(99, iterations / (nforks + 1), 0, &main_counts);
    for (int i = 0; i < nthreads; i++) {
        REQUIRE(pthread_join(t[i], NULL) == 0);
        print_counts(&args[i].counts);
    }
    for (int k = 0; k < SHARED; k++)
        if (shared[k]) {
            free(shared[k]);
            main_counts.n[FREE]++;
        }
    if (strcmp(mode, "exec") == 0 && check_failures == 0) {
        print_counts(&main_counts);
        char *again[] = {argv[0], argv[1], argv[2], argv[3], NULL};
        execv(argv[0], again);
        REQUIRE(!"execv failed");
    }
    if (close_at_exit) {
        /* The files on 1000 to 1015 are the program's: the log must not have written there. */
        CHECK(write(1000, "program data\n", 13) == 13);
    }
    return check_failures ? 1 : 0;
}
