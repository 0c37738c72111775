/* A burst of 64 MiB of 4 KiB..64 KiB blocks, freed; then idle 1.5 s; then one small malloc/free
   (activity). Prints the resident size (statm) after the free, and after the activity. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static long rss_kb(void) { long a, r; FILE *f = fopen("/proc/self/statm", "r"); fscanf(f, "%ld %ld", &a, &r); fclose(f); return r * 4; }
int main(void) {
    enum { N = 2000 };
    static char *p[N];
    for (int i = 0; i < N; i++) { size_t s = 4096 + (i * 7919 % 61440); p[i] = malloc(s); memset(p[i], 1, s); }
    for (int i = 0; i < N; i++) free(p[i]);
    printf("after the burst's frees: %ld KB resident\n", rss_kb());
    usleep(1500000);
    char *volatile q = malloc(100000); q[0] = 1; free(q);
    printf("after 1.5 s idle and one malloc/free: %ld KB resident\n", rss_kb());
    return 0;
}
