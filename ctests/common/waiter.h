/*
 * Waiter threads and signal helpers shared by the EVD and CNO tests: a
 * thread blocks in dat_evd_wait or dat_cno_wait and records what it got and
 * when; the test thread polls with deadlines and never joins blindly.
 * Include after ctest.h; the including file defines BOGUS_EVD.
 */
#ifndef CTEST_WAITER_H
#define CTEST_WAITER_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

/* ---- waiter threads ---------------------------------------------------- */

enum { W_EVD, W_CNO };

struct waiter {
    pthread_t th;
    int kind;
    DAT_EVD_HANDLE evd;
    DAT_CNO_HANDLE cno;
    DAT_TIMEOUT timeout;
    DAT_COUNT threshold;
    atomic_int started;
    atomic_int done;
    int joined;
    DAT_RETURN ret;
    DAT_EVENT ev;
    DAT_COUNT nmore;
    DAT_EVD_HANDLE cno_evd;
    double t_call, t_ret;
};

/* Static, so a waiter left blocked when a case fails never points at a
 * dead stack frame. Each case runs in its own process. */
static struct waiter W[3];

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    memset(&w->ev, 0, sizeof(w->ev));
    w->nmore = -77;
    w->cno_evd = BOGUS_EVD;
    w->t_call = ctest_now();
    atomic_store(&w->started, 1);
    if (w->kind == W_EVD)
        w->ret = dat_evd_wait(w->evd, w->timeout, w->threshold, &w->ev, &w->nmore);
    else
        w->ret = dat_cno_wait(w->cno, w->timeout, &w->cno_evd);
    w->t_ret = ctest_now();
    atomic_store(&w->done, 1);
    return NULL;
}

static int waiter_start(struct waiter *w)
{
    atomic_store(&w->started, 0);
    atomic_store(&w->done, 0);
    w->joined = 0;
    w->ret = 0xdeadbeefu;
    if (pthread_create(&w->th, NULL, waiter_main, w) != 0)
        return 0;
    while (!atomic_load(&w->started))
        ctest_sleep_ms(1);
    return 1;
}

/* Start a thread blocked in dat_evd_wait(evd, timeout, threshold). */
static int start_evd_waiter(struct waiter *w, DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout,
                            DAT_COUNT threshold)
{
    w->kind = W_EVD;
    w->evd = evd;
    w->timeout = timeout;
    w->threshold = threshold;
    return waiter_start(w);
}

/* Start a thread blocked in dat_cno_wait(cno, timeout). */
static int start_cno_waiter(struct waiter *w, DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout)
{
    w->kind = W_CNO;
    w->cno = cno;
    w->timeout = timeout;
    return waiter_start(w);
}

static int waiter_done(struct waiter *w) { return atomic_load(&w->done); }

/* Wait at most `secs` for the waiter to return; join it if it did. */
static int waiter_finish(struct waiter *w, double secs)
{
    double end = ctest_now() + secs;
    while (!atomic_load(&w->done)) {
        if (ctest_now() > end) {
            fprintf(stderr, "    waiter did not return within %.1f s\n", secs);
            return 0;
        }
        ctest_sleep_ms(2);
    }
    if (!w->joined) {
        pthread_join(w->th, NULL);
        w->joined = 1;
    }
    return 1;
}

/*
 * Give a freshly started dat_evd_wait waiter time to block. The EVD must be
 * empty: a dequeue then returns DAT_INVALID_STATE as soon as the waiter owns
 * the EVD (§1.8, §2.17), which tells us it is blocked. If that never shows
 * (the waiter returned, or the library does not report it), fall back to a
 * fixed delay.
 */
static void settle_evd_waiter(struct waiter *w)
{
    double end = ctest_now() + 1.5;
    while (ctest_now() < end && !waiter_done(w)) {
        DAT_EVENT ev;
        DAT_RETURN r = dat_evd_dequeue(w->evd, &ev);
        if (DAT_GET_TYPE(r) == DAT_INVALID_STATE) {
            ctest_sleep_ms(20);
            return;
        }
        if (r == DAT_SUCCESS) {
            fprintf(stderr, "    settle: probe dequeue took an event (test bug)\n");
            ctest_failures++;
            return;
        }
        ctest_sleep_ms(5);
    }
}

/* For waiters that cannot be probed: a fixed delay after the thread started. */
static void settle_delay(void) { ctest_sleep_ms(400); }

/* ---- signals ----------------------------------------------------------- */

static volatile sig_atomic_t sigusr1_count;

static void on_sigusr1(int sig)
{
    (void)sig;
    sigusr1_count++;
}

static int install_sigusr1_no_restart(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigusr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART */
    return sigaction(SIGUSR1, &sa, NULL) == 0;
}

#endif /* CTEST_WAITER_H */
