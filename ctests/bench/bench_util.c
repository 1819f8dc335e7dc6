/* Helpers shared by the benchmark sections: see bench.h. */
#include "bench.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_fail(const char *call, DAT_RETURN rc)
{
    fflush(stdout);
    fprintf(stderr, "bench: FAILED: %s returned 0x%08x\n", call, (unsigned)rc);
    exit(1);
}

void bench_die(const char *what)
{
    fflush(stdout);
    fprintf(stderr, "bench: FAILED: %s\n", what);
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_max(const double *v, int n)
{
    double m = v[0];
    int i;

    for (i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

long bench_calibrate(bench_loop f, void *ctx, double seconds)
{
    long n = 1;

    for (;;) {
        double t0 = bench_now(), dt;

        f(ctx, n);
        dt = bench_now() - t0;
        if (dt >= seconds / 10 || n >= (1L << 40)) {
            double est = (double)n * seconds / (dt > 0 ? dt : 1e-9);
            return est < 1 ? 1 : (long)est;
        }
        n *= 4;
    }
}

double bench_ns(bench_loop f, void *ctx, long n)
{
    double v[BENCH_REPS];
    int r;

    for (r = 0; r < BENCH_REPS; r++) {
        double t0 = bench_now();

        f(ctx, n);
        v[r] = (bench_now() - t0) * 1e9 / (double)n;
    }
    return bench_median(v, BENCH_REPS);
}

struct bench_thread {
    pthread_t th;
    pthread_barrier_t *start;
    bench_loop f;
    void *ctx;
    long n;
    double ns;
};

static void *bench_thread_main(void *arg)
{
    struct bench_thread *t = arg;
    double t0;

    pthread_barrier_wait(t->start);
    t0 = bench_now();
    t->f(t->ctx, t->n);
    t->ns = (bench_now() - t0) * 1e9 / (double)t->n;
    return NULL;
}

double bench_threads_ns(bench_loop f, void *const *ctx, int nthreads, long n)
{
    struct bench_thread t[8];
    pthread_barrier_t start;
    double v[BENCH_REPS];
    int r, i;

    if (nthreads < 1 || nthreads > 8)
        bench_die("bench_threads_ns: 1..8 threads");
    for (r = 0; r < BENCH_REPS; r++) {
        double sum = 0;

        if (pthread_barrier_init(&start, NULL, (unsigned)nthreads) != 0)
            bench_die("pthread_barrier_init");
        for (i = 0; i < nthreads; i++) {
            t[i].start = &start;
            t[i].f = f;
            t[i].ctx = ctx[i];
            t[i].n = n;
            t[i].ns = 0;
            if (pthread_create(&t[i].th, NULL, bench_thread_main, &t[i]) != 0)
                bench_die("pthread_create");
        }
        for (i = 0; i < nthreads; i++) {
            pthread_join(t[i].th, NULL);
            sum += t[i].ns;
        }
        pthread_barrier_destroy(&start);
        v[r] = sum / nthreads;
    }
    return bench_median(v, BENCH_REPS);
}

/* ---- the table --------------------------------------------------------- */

#define COL_NAME "%-44s"
/* As wide as a row: 2 + 44 + 1 + 10 + 1 + 6 + 1 + 10 + 1 + 8 + 2 + 10 + 1 + 6. */
#define RULE_WIDTH 103

void table_header(void)
{
    printf("  " COL_NAME " %10s %-6s %10s %8s  %-10s %s\n", "measurement", "figure", "unit",
           "baseline", "ratio", "target", "result");
    for (int i = 0; i < RULE_WIDTH; i++)
        putchar('-');
    putchar('\n');
}

void table_section(const char *title)
{
    printf("%s\n", title);
    fflush(stdout);
}

void table_note(const char *fmt, ...)
{
    va_list ap;

    printf("    (");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(")\n");
    fflush(stdout);
}

static void fmt_num(char *buf, size_t size, double v, const char *unit)
{
    if (isnan(v))
        snprintf(buf, size, "%s", "-");
    else if (strcmp(unit, "x") == 0 || fabs(v) < 10)
        snprintf(buf, size, "%.2f", v);
    else
        snprintf(buf, size, "%.1f", v);
}

void table_row(const char *name, double value, const char *unit, double baseline,
               const char *target, enum bench_verdict verdict)
{
    char fig[32], base[32], ratio[32];

    fmt_num(fig, sizeof(fig), value, unit);
    fmt_num(base, sizeof(base), baseline, unit);
    /* A figure that is itself a ratio ("x") gets no ratio column. */
    if (!isnan(baseline) && baseline > 0 && !isnan(value) && strcmp(unit, "x") != 0)
        snprintf(ratio, sizeof(ratio), "%.2fx", value / baseline);
    else
        snprintf(ratio, sizeof(ratio), "%s", "-");
    printf("  " COL_NAME " %10s %-6s %10s %8s  %-10s %s\n", name, fig, unit, base, ratio,
           target != NULL ? target : "",
           verdict == VERDICT_OK ? "ok" : verdict == VERDICT_MISSED ? "MISSED" : "");
    fflush(stdout);
}

enum bench_verdict bench_at_most(double value, double limit)
{
    return value <= limit ? VERDICT_OK : VERDICT_MISSED;
}
