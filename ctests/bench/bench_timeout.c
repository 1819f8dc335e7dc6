/*
 * 5. Timeout overshoot: dat_evd_wait on an empty software EVD (threshold 1)
 * and dat_cno_wait on a CNO whose one EVD stays empty, for timeouts of
 * 1, 10, 100 and 1000 us. Overshoot = elapsed time of the call - timeout.
 * For 1000 us also the CPU time the calling thread uses during one wait
 * (CLOCK_THREAD_CPUTIME_ID), which shows any spinning before the sleep.
 * Baseline: pthread_cond_timedwait (CLOCK_MONOTONIC) to now + timeout on a
 * condition variable nobody signals.
 *
 * Return codes: dat_evd_wait must return type DAT_TIMEOUT_EXPIRED.
 * dat_cno_wait reports its timeout as DAT_QUEUE_EMPTY (DAT 1.2, as
 * documented in udat.h and checked by the conformance tests, CNW_03);
 * DAT_TIMEOUT_EXPIRED is accepted too. Anything else fails the run.
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum waiter { W_EVD, W_CNO, W_COND };

struct tmo_ctx {
    DAT_EVD_HANDLE evd;
    DAT_CNO_HANDLE cno;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

static void one_wait(struct tmo_ctx *c, enum waiter w, unsigned tmo_us)
{
    DAT_RETURN rc;

    if (w == W_EVD) {
        DAT_EVENT ev;
        DAT_COUNT nmore;

        rc = dat_evd_wait(c->evd, tmo_us, 1, &ev, &nmore);
        if (DAT_GET_TYPE(rc) != DAT_TIMEOUT_EXPIRED)
            bench_fail("dat_evd_wait (empty EVD, expected DAT_TIMEOUT_EXPIRED)", rc);
    } else if (w == W_CNO) {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

        rc = dat_cno_wait(c->cno, tmo_us, &evd);
        if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY && DAT_GET_TYPE(rc) != DAT_TIMEOUT_EXPIRED)
            bench_fail("dat_cno_wait (no events, expected a timeout)", rc);
    } else {
        struct timespec dl;
        int e;

        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_nsec += (long)tmo_us * 1000;
        while (dl.tv_nsec >= 1000000000L) {
            dl.tv_nsec -= 1000000000L;
            dl.tv_sec++;
        }
        pthread_mutex_lock(&c->lock);
        do
            e = pthread_cond_timedwait(&c->cond, &c->lock, &dl);
        while (e == 0); /* spurious wake-up: wait on to the deadline */
        pthread_mutex_unlock(&c->lock);
        if (e != ETIMEDOUT)
            bench_fail("pthread_cond_timedwait (baseline)", (DAT_RETURN)e);
    }
}

struct tmo_result {
    double over_med, over_max, cpu_med;
};

static struct tmo_result trials(struct tmo_ctx *c, enum waiter w, unsigned tmo_us, int n)
{
    double *over = calloc((size_t)n, sizeof(double)), *cpu = calloc((size_t)n, sizeof(double));
    struct tmo_result r;
    int i;

    if (over == NULL || cpu == NULL)
        bench_die("calloc");
    one_wait(c, w, tmo_us); /* warm-up */
    for (i = 0; i < n; i++) {
        double c0 = bench_cpu_now(), t0 = bench_now(), t1, c1;

        one_wait(c, w, tmo_us);
        t1 = bench_now();
        c1 = bench_cpu_now();
        over[i] = (t1 - t0) * 1e6 - tmo_us;
        cpu[i] = (c1 - c0) * 1e6;
    }
    r.over_max = bench_max(over, n);
    r.over_med = bench_median(over, n);
    r.cpu_med = bench_median(cpu, n);
    free(over);
    free(cpu);
    return r;
}

static const unsigned timeouts[] = {1, 10, 100, 1000};
#define NTIMEOUTS (int)(sizeof(timeouts) / sizeof(timeouts[0]))

static int trials_for(unsigned tmo_us)
{
    return tmo_us >= 1000 ? 50 : 200;
}

static void report(const char *call, const struct tmo_result *d, const struct tmo_result *b)
{
    char name[64], target[16];
    int k;

    for (k = 0; k < NTIMEOUTS; k++) {
        int small = timeouts[k] <= 5;

        snprintf(target, sizeof(target), "%s", small ? "<= 10 us" : "");
        snprintf(name, sizeof(name), "%s %u us: overshoot median", call, timeouts[k]);
        table_row(name, d[k].over_med, "us", b[k].over_med, target,
                  small ? bench_at_most(d[k].over_med, 10) : VERDICT_NONE);
        snprintf(name, sizeof(name), "%s %u us: overshoot max (%d)", call, timeouts[k],
                 trials_for(timeouts[k]));
        table_row(name, d[k].over_max, "us", b[k].over_max, target,
                  small ? bench_at_most(d[k].over_max, 10) : VERDICT_NONE);
        if (timeouts[k] == 1000) {
            snprintf(name, sizeof(name), "%s %u us: thread CPU per wait", call, timeouts[k]);
            table_row(name, d[k].cpu_med, "us", b[k].cpu_med, "", VERDICT_NONE);
        }
    }
}

void bench_timeouts(DAT_IA_HANDLE ia)
{
    struct tmo_ctx c;
    pthread_condattr_t ca;
    struct tmo_result evd[NTIMEOUTS], cno[NTIMEOUTS], cond[NTIMEOUTS];
    DAT_EVD_HANDLE cno_evd = DAT_HANDLE_NULL;
    int k;

    memset(&c, 0, sizeof(c));
    BENCH_OK("dat_evd_create", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &c.evd));
    BENCH_OK("dat_cno_create", dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &c.cno));
    BENCH_OK("dat_evd_create (on CNO)", dat_evd_create(ia, 8, c.cno, DAT_EVD_SOFTWARE_FLAG, &cno_evd));
    pthread_mutex_init(&c.lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c.cond, &ca);
    pthread_condattr_destroy(&ca);

    table_section("5. timeout overshoot (elapsed - timeout) of a wait nothing ends, us\n"
                  "   baseline: pthread_cond_timedwait(CLOCK_MONOTONIC) to now + timeout");
    for (k = 0; k < NTIMEOUTS; k++) {
        int n = trials_for(timeouts[k]);

        evd[k] = trials(&c, W_EVD, timeouts[k], n);
        cno[k] = trials(&c, W_CNO, timeouts[k], n);
        cond[k] = trials(&c, W_COND, timeouts[k], n);
    }
    report("dat_evd_wait", evd, cond);
    report("dat_cno_wait", cno, cond);

    BENCH_OK("dat_evd_free (on CNO)", dat_evd_free(cno_evd));
    BENCH_OK("dat_cno_free", dat_cno_free(c.cno));
    BENCH_OK("dat_evd_free", dat_evd_free(c.evd));
    pthread_cond_destroy(&c.cond);
    pthread_mutex_destroy(&c.lock);
}
