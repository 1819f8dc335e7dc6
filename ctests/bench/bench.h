/*
 * Shared helpers of the local benchmark (make bench): clocks, return-code
 * checks, repeat-and-take-the-median runners, and the result table.
 *
 * Every figure is measured through libdat's exported C API only, and is
 * printed beside a baseline measured in the same run. Targets are
 * informative: the exit code depends only on the return codes the
 * benchmark checks (any unexpected code ends the run with status 1).
 */
#ifndef BENCH_H
#define BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dat/udat.h>

#include <math.h>

/* Repetitions of each measurement; the median is reported. */
#define BENCH_REPS 7
/* Wall time aimed at for one repetition of a hot-path loop. */
#define BENCH_REP_SECONDS 0.03

/* CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID, in seconds. */
double bench_now(void);
double bench_cpu_now(void);

/* Report an unexpected return code of `call` and exit(1). */
void bench_fail(const char *call, DAT_RETURN rc) __attribute__((noreturn, cold));
/* Report a failed setup step (errno-style or free text) and exit(1). */
void bench_die(const char *what) __attribute__((noreturn, cold));

/* `expr` must return exactly DAT_SUCCESS. */
#define BENCH_OK(call, expr)                                 \
    do {                                                     \
        DAT_RETURN bench_rc_ = (expr);                       \
        if (__builtin_expect(bench_rc_ != DAT_SUCCESS, 0))   \
            bench_fail((call), bench_rc_);                   \
    } while (0)

/* A timed loop: run `n` iterations of the operation on `ctx`. */
typedef void (*bench_loop)(void *ctx, long n);

/* Iterations for one repetition of about `seconds` (at least 1). */
long bench_calibrate(bench_loop f, void *ctx, double seconds);

/* Median over BENCH_REPS repetitions of n iterations: ns per iteration. */
double bench_ns(bench_loop f, void *ctx, long n);

/*
 * nthreads threads run f(ctx[i], n) at the same time (they leave a start
 * barrier together); each times its own loop. One repetition's figure is
 * the mean over threads of per-thread ns per iteration; the median over
 * BENCH_REPS repetitions is returned.
 */
double bench_threads_ns(bench_loop f, void *const *ctx, int nthreads, long n);

/* Median of v[0..n) (v is reordered). */
double bench_median(double *v, int n);
double bench_max(const double *v, int n);

/* ---- the table --------------------------------------------------------- */

/* No baseline / no ratio: pass BENCH_NONE. */
#define BENCH_NONE NAN

enum bench_verdict { VERDICT_NONE = -1, VERDICT_MISSED = 0, VERDICT_OK = 1 };

void table_header(void);
void table_section(const char *title);
void table_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * One row: name, figure + unit, baseline (same unit), ratio figure/baseline
 * (printed when the baseline is given and > 0), target text, verdict.
 */
void table_row(const char *name, double value, const char *unit, double baseline,
               const char *target, enum bench_verdict verdict);

/* Verdict of "value <= limit". */
enum bench_verdict bench_at_most(double value, double limit);

/* ---- sections (one file each) ------------------------------------------ */

void bench_handles(DAT_IA_HANDLE ia);
void bench_evd_pair(DAT_IA_HANDLE ia);
void bench_lmr(DAT_IA_HANDLE ia);
void bench_dispatch(const char *stub_ia_name);
void bench_timeouts(DAT_IA_HANDLE ia);
void bench_pingpong(DAT_IA_HANDLE ia);

#endif
