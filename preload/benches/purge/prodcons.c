/* Producer/consumer bursts with idle phases: a producer thread allocates bursts of small and
   medium objects (16 B .. 16 KiB) and hands them to a consumer thread through a queue; the
   consumer frees them; between bursts both sleep. */
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#define BURST 20000
#define ROUNDS 40
static void *q[BURST];
static int ready = 0, done = 0;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static void *consumer(void *arg) {
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_lock(&m);
        while (!ready) pthread_cond_wait(&c, &m);
        ready = 0;
        pthread_mutex_unlock(&m);
        for (int i = 0; i < BURST; i++) free(q[i]);
        pthread_mutex_lock(&m);
        done = 1;
        pthread_cond_broadcast(&c);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, consumer, NULL);
    unsigned long long seed = 3;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BURST; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t size = 16 + (seed >> 33) % ((seed >> 20) % 8 == 0 ? 16384 : 512);
            q[i] = malloc(size);
            memset(q[i], r, size);
        }
        pthread_mutex_lock(&m);
        ready = 1; done = 0;
        pthread_cond_broadcast(&c);
        while (!done) pthread_cond_wait(&c, &m);
        pthread_mutex_unlock(&m);
        if (r % 4 == 3) usleep(20000);
    }
    pthread_join(t, NULL);
    puts("ok");
    return 0;
}
