// How steady is this machine's CPU? Runs the same fixed slice of arithmetic (~0.4 ms) back to
// back for SECONDS and prints, for each group of 100 slices (~40 ms), how much longer it took
// than the fastest slice of the run; then the distribution of those groups. No system call
// but the clock's, no memory beyond a few registers: a group slower than the fastest is the
// machine's doing (a hypervisor's neighbour, a busy sibling hyperthread, the clock's
// frequency), not a program's. Run it pinned, alone or beside a benchmark:
//
//   gcc -O2 -o /tmp/cpu_noise bench/cpu_noise.c && taskset -c 0 /tmp/cpu_noise 8
//
// An open model at a constant rate needs headroom for these slow stretches: a worker at 50% of
// a core falls behind in any stretch the machine runs it 2x slower.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 8;
    if (seconds < 1 || seconds > 60) {
        fprintf(stderr, "usage: %s [SECONDS, 1-60]\n", argv[0]);
        return 2;
    }
    static double slice[200000];
    volatile uint64_t x = 1;
    int n = 0;
    double best = 1e18, start = now_ns();
    while (now_ns() - start < seconds * 1e9 && n < 200000) {
        double t0 = now_ns();
        for (int i = 0; i < 300000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        slice[n] = now_ns() - t0;
        if (slice[n] < best) best = slice[n];
        n++;
    }
    static double group[2000];
    int groups = 0;
    for (int i = 0; i + 100 <= n; i += 100, groups++) {
        double sum = 0;
        for (int j = i; j < i + 100; j++) sum += slice[j];
        group[groups] = sum / 100 / best;
        printf("%.2f ", group[groups]);
    }
    qsort(group, groups, sizeof group[0], cmp);
    printf("\n%d groups of 100 slices (%.0f us each at best): time / best: p50 %.2f, p90 %.2f, "
           "p99 %.2f, max %.2f\n",
           groups, best / 1e3, group[groups / 2], group[groups * 9 / 10], group[groups * 99 / 100],
           group[groups - 1]);
    return 0;
}
