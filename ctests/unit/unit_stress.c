/*
 * Concurrency and signal stress tests of the local objects (EVD, CNO, IA):
 * semantics-core.md §1.8, §1.9, §2.2, §2.20, §2.27, §2.32 and rulings D12.
 *
 *   STRESS_signal_*        a signal sent at a random offset into a blocking
 *                          wait interrupts it (DAT_INTERRUPTED_CALL), never
 *                          lost; a handler that ran outside the wait (before
 *                          the call, or in its first instructions, before it
 *                          could hold the signal) is answered with a second
 *                          signal, which must interrupt it; a watchdog (50 ms,
 *                          1 s under valgrind, and only once the waiter is
 *                          asleep) posts an event to release a waiter that
 *                          missed its signal and counts it; the trials stop
 *                          after a time budget (5 s, 20 s) so a lossy build
 *                          fails in bounded time
 *   STRESS_*_vs_*_wait     freeing an EVD / abruptly closing the IA at a
 *                          random moment against a wait: DAT_ABORT (or
 *                          DAT_INVALID_HANDLE when the wait came too late)
 *   STRESS_ia_close_vs_post_dequeue
 *                          threads posting and dequeuing while the IA closes
 *   STRESS_producers_*     many producers, one EVD: each event exactly once,
 *                          in per-producer order
 *   STRESS_cno_many_waiters several waiters on one CNO all wake
 *   STRESS_timeout_*       short timeouts never return before the deadline
 *
 * Written from the spec, not from the implementation. Iteration counts are
 * scaled down under valgrind (detected from CTEST_VALGRIND=1 or from the
 * valgrind preload in LD_PRELOAD). Random choices come from a seed printed
 * with any failure; CTEST_SEED=n repeats it. CTEST_VERBOSE=1 prints each
 * case's statistics even when it passes.
 */
#include "ctest.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

/* ---- small helpers ----------------------------------------------------- */

#define SEC_US 1000000u

/* A value a correct library never writes into an OUT handle. */
#define BOGUS_EVD ((DAT_EVD_HANDLE)(uintptr_t)0x5a5a5a50u)

static void *P(uintptr_t v) { return (void *)v; }

/* Type match plus the error class bit (every DAT error carries it). */
static int is_err(DAT_RETURN r, DAT_RETURN type)
{
    return DAT_GET_TYPE(r) == DAT_GET_TYPE(type) && (r & DAT_CLASS_ERROR) != 0;
}

/* Record a failure with a formatted message. */
#define FAILF(...)                                                             \
    do {                                                                       \
        fprintf(stderr, "    %s:%d: ", __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
        ctest_failures++;                                                      \
    } while (0)

static int verbose(void)
{
    const char *v = getenv("CTEST_VERBOSE");
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* Statistics: printed when the case failed, or always with CTEST_VERBOSE. */
#define NOTE(...)                                                              \
    do {                                                                       \
        if (ctest_failures || verbose()) {                                     \
            fprintf(stderr, "    ");                                           \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

static int under_valgrind(void)
{
    const char *v = getenv("CTEST_VALGRIND");
    const char *p = getenv("LD_PRELOAD");
    if (v != NULL && strcmp(v, "1") == 0)
        return 1;
    return p != NULL && strstr(p, "vgpreload") != NULL;
}

static int scaled(int native, int vg) { return under_valgrind() ? vg : native; }
static double scaledf(double native, double vg) { return under_valgrind() ? vg : native; }

/* ---- random numbers (xorshift64*), seeded once per case ---------------- */

static uint64_t rng_seed, rng_state;

static void rng_init(void)
{
    const char *s = getenv("CTEST_SEED");
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (s != NULL && s[0] != '\0')
        rng_seed = strtoull(s, NULL, 0);
    else
        rng_seed = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
                   ((uint64_t)getpid() << 40);
    if (rng_seed == 0)
        rng_seed = 1;
    rng_state = rng_seed;
}

static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static long rng_below(long n) { return n <= 0 ? 0 : (long)(rng_next() % (uint64_t)n); }

#define NOTE_SEED() NOTE("seed %llu (CTEST_SEED=%llu repeats it)", \
                         (unsigned long long)rng_seed, (unsigned long long)rng_seed)

/* ---- waiting ----------------------------------------------------------- */

static void nap_us(long us)
{
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Busy-wait `ns` nanoseconds (0: return at once). */
static void spin_ns(long ns)
{
    double end;
    if (ns <= 0)
        return;
    end = ctest_now() + (double)ns / 1e9;
    while (ctest_now() < end) {
    }
}

/* Wait until *f == want: spin a little, then nap in 20 µs steps. */
static int await_int(atomic_int *f, int want, double secs)
{
    double end = 0;
    unsigned n;
    for (n = 0; atomic_load(f) != want; n++) {
        if (n < 500)
            continue;
        if (end == 0)
            end = ctest_now() + secs;
        else if (ctest_now() > end)
            return atomic_load(f) == want;
        nap_us(20);
    }
    return 1;
}

/*
 * The offset of a racing action after the other thread is about to enter
 * its call: a quarter of the trials at once, a quarter within 1 µs, half
 * within 100 µs.
 */
static long pick_offset_ns(int trial)
{
    switch (trial % 4) {
    case 0:
        return 0;
    case 1:
        return rng_below(1000);
    default:
        return rng_below(100000);
    }
}

/* ---- a persistent waiter thread, one call per trial -------------------- */

enum { K_EVD, K_CNO };

struct pwaiter {
    pthread_t th;
    int kind;
    DAT_EVD_HANDLE evd;
    DAT_CNO_HANDLE cno;
    DAT_TIMEOUT timeout;
    atomic_int tid;     /* the thread's kernel id */
    atomic_int go;      /* the trial to run; -1: leave */
    atomic_int in_call; /* the trial whose call is about to start */
    atomic_int done;    /* the trial whose call returned */
    DAT_RETURN ret;
    DAT_EVENT ev;
    DAT_COUNT nmore;
    DAT_EVD_HANDLE hint;
};

/* Static, so a waiter left blocked when a case fails never points at a
 * dead stack frame. Each case runs in its own process. */
static struct pwaiter PW[8];

/*
 * Signal bookkeeping: the handler runs on the waiter thread, and records
 * where it interrupted it (run n in sig_where[n % 16], then sig_count = n+1).
 */
enum {
    W_OUTSIDE, /* outside the DAT call: this program's code, or not armed */
    W_HELD,    /* SIGUSR1 blocked where it interrupted: the wait held the
                  signal and let it in (ppoll, sigsuspend, ...) */
    W_OPEN,    /* in the call, SIGUSR1 open: the call had not held it yet */
    W_SYSCALL, /* the same, on the return of a system call the call made:
                  it was already at work with the signal open */
};
static atomic_int sig_armed; /* the waiter is about to call, or inside the call */
static atomic_int sig_count; /* handler runs */
static atomic_int sig_where[16];

static void *pw_main(void *arg)
{
    struct pwaiter *w = arg;
    int t = 0;
    atomic_store(&w->tid, (int)gettid());
    for (;;) {
        DAT_RETURN r;
        int g;
        unsigned n;
        for (n = 0; (g = atomic_load(&w->go)) == t; n++)
            if (n > 200)
                nap_us(20);
        if (g < 0)
            return NULL;
        t = g;
        memset(&w->ev, 0, sizeof(w->ev));
        w->nmore = -77;
        w->hint = BOGUS_EVD;
        atomic_store(&sig_armed, 1);
        atomic_store(&w->in_call, t);
        if (w->kind == K_EVD)
            r = dat_evd_wait(w->evd, w->timeout, 1, &w->ev, &w->nmore);
        else
            r = dat_cno_wait(w->cno, w->timeout, &w->hint);
        atomic_store(&sig_armed, 0);
        w->ret = r;
        atomic_store(&w->done, t);
    }
}

static int pw_start(struct pwaiter *w, int kind, DAT_TIMEOUT timeout)
{
    w->kind = kind;
    w->timeout = timeout;
    atomic_store(&w->go, 0);
    atomic_store(&w->in_call, 0);
    atomic_store(&w->done, 0);
    return pthread_create(&w->th, NULL, pw_main, w) == 0;
}

/* Only once the last trial's call has returned. */
static void pw_stop(struct pwaiter *w)
{
    atomic_store(&w->go, -1);
    pthread_join(w->th, NULL);
}

/* ---- signals ----------------------------------------------------------- */

/* The test program's own code: [__executable_start, etext). */
extern const char __executable_start[];
extern const char etext[];

/* Where the signal interrupted the thread (0 if unknown). */
static uintptr_t uc_pc(void *ucv)
{
#if defined(__x86_64__)
    return (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.pc;
#else
    (void)ucv;
    return 0;
#endif
}

/* Did the signal interrupt the test's own code (before the DAT call)? */
static int pc_in_test_code(void *uc)
{
    uintptr_t pc = uc_pc(uc);
    return pc >= (uintptr_t)__executable_start && pc < (uintptr_t)etext;
}

/* Did it interrupt the thread just as a system call returned? */
static int pc_after_syscall(void *uc)
{
    uintptr_t pc = uc_pc(uc);
#if defined(__x86_64__)
    const unsigned char *p = (const unsigned char *)pc;
    return pc % 4096 >= 2 && p[-2] == 0x0f && p[-1] == 0x05; /* syscall */
#elif defined(__aarch64__)
    return pc % 4096 >= 4 && *(const uint32_t *)(pc - 4) == 0xd4000001u; /* svc #0 */
#else
    (void)pc;
    return 0;
#endif
}

static void on_sigusr1(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    int n = atomic_load(&sig_count), where;
    (void)sig;
    (void)si;
    if (!atomic_load(&sig_armed) || pc_in_test_code(uc))
        where = W_OUTSIDE;
    else if (sigismember(&uc->uc_sigmask, SIGUSR1))
        where = W_HELD;
    else if (pc_after_syscall(uc))
        where = W_SYSCALL;
    else
        where = W_OPEN;
    atomic_store(&sig_where[n % 16], where);
    atomic_store(&sig_count, n + 1); /* one writer: the handler is not reentered */
}

/* Is thread `tid` of this process asleep in the kernel (state S)? */
static int thread_asleep(int tid)
{
    char path[64], buf[512];
    const char *p;
    ssize_t n;
    int fd;
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1; /* cannot tell: the watchdog goes by time alone */
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 1;
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* "tid (comm) S ..." */
    return p == NULL || p[1] == '\0' || p[2] == 'S';
}

static int install_sigusr1_no_restart(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigusr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART */
    return sigaction(SIGUSR1, &sa, NULL) == 0;
}

/* ---- fixture ----------------------------------------------------------- */

#define FIXTURE(ia, aevd)                                                      \
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;                                        \
    DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;                                     \
    rng_init();                                                                \
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS)

static DAT_RETURN make_cno(DAT_IA_HANDLE ia, DAT_CNO_HANDLE *cno)
{
    return dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, cno);
}

static DAT_COUNT evd_qlen(DAT_EVD_HANDLE evd)
{
    DAT_EVD_PARAM p;
    memset(&p, 0, sizeof(p));
    if (dat_evd_query(evd, DAT_EVD_FIELD_ALL, &p) != DAT_SUCCESS)
        return -1;
    return p.evd_qlen;
}

/* Dequeue one event and check it is the software event `want` on `evd`. */
static int deq_expect(DAT_EVD_HANDLE evd, void *want)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    memset(&ev, 0, sizeof(ev));
    r = dat_evd_dequeue(evd, &ev);
    if (r != DAT_SUCCESS || ev.event_number != DAT_SOFTWARE_EVENT || ev.evd_handle != evd ||
        ev.event_data.software_event_data.pointer != want) {
        fprintf(stderr, "    dequeue: got 0x%08x event 0x%x pointer %p, want %p\n", (unsigned)r,
                (unsigned)ev.event_number, ev.event_data.software_event_data.pointer, want);
        return 0;
    }
    return 1;
}

/* ======================================================================== */
/* 1. A signal at a random offset into a blocking wait                       */
/* ======================================================================== */

/*
 * One waiter thread, one call per trial on an empty EVD (or a CNO with one
 * empty EVD). The main thread waits until the waiter is about to call, then
 * after a random offset (0 to 100 µs; often before the call has reached the
 * kernel) sends SIGUSR1. The call must return DAT_INTERRUPTED_CALL.
 *
 * The handler records where it interrupted the waiter. No implementation
 * can report a signal whose handler ran before the DAT call (its PC in this
 * program's code) or in the call's first instructions, before the call could
 * make the system call that holds the signal (SIGUSR1 open where it
 * interrupted, and not on the return of a system call). That is rare, but
 * not rare enough: a waiter descheduled in those instructions (a preempted
 * thread, a VM's stolen CPU) meets there a signal sent much later. Such a
 * call then goes on to sleep, so a second signal is sent at once; sent after
 * the first handler ran, it reaches a call that holds it, and must interrupt
 * it. A handler that ran with SIGUSR1 open on the return of a system call of
 * the DAT call (the call was at work, or about to sleep, with the signal
 * open), or a second one again outside the wait, is a lost signal; and so is
 * one let in by the wait (SIGUSR1 blocked where it interrupted: ppoll and
 * the like) that does not end it.
 *
 * A waiter still blocked after the watchdog delay, and asleep in the kernel
 * (a waiter descheduled before it could sleep is not blocked), is released
 * by posting an event: a call that then returns DAT_SUCCESS with that event
 * had lost its signal.
 */
struct sig_trial {
    int sent;   /* signals sent */
    int posted; /* the release event was posted */
    int ran;    /* handler runs (of this trial) when it was posted */
};

/* Runs trial t's call to its end after its first signal (sig_count was c0). */
static int sig_trial_end(struct pwaiter *w, int t, int c0, double watchdog,
                         DAT_EVD_HANDLE evd, void *mark, struct sig_trial *st)
{
    double now = ctest_now(), due = now + watchdog, give_up = now + scaledf(5.0, 30.0);
    /* Spin at first, so a next signal follows a handler within a microsecond
     * or so (not under valgrind, which runs one thread at a time). */
    double spin_for = scaledf(200e-6, 0), spin_until = now + spin_for;
    int opened = 0; /* handler runs in W_OPEN */
    st->sent = 1;
    st->posted = 0;
    st->ran = 0;
    while (atomic_load(&w->done) != t) {
        int c = atomic_load(&sig_count);
        if (!st->posted && c == c0 + st->sent && st->sent < 4) {
            int where = atomic_load(&sig_where[(c - 1) % 16]);
            if (where == W_OUTSIDE || (where == W_OPEN && opened++ == 0)) {
                if (pthread_kill(w->th, SIGUSR1) != 0)
                    return 0;
                st->sent++;
                due = ctest_now() + watchdog;
                spin_until = ctest_now() + spin_for;
            }
        }
        now = ctest_now();
        if (now < spin_until)
            continue;
        if (now > give_up)
            return 0;
        if (!st->posted && now > due && thread_asleep(atomic_load(&w->tid))) {
            st->ran = atomic_load(&sig_count) - c0;
            if (ctest_post(evd, mark) != DAT_SUCCESS)
                return 0;
            st->posted = 1;
            give_up = now + scaledf(5.0, 30.0);
        }
        nap_us(20);
    }
    /* a signal sent as the call returned may still be on its way */
    await_int(&sig_count, c0 + st->sent, scaledf(1.0, 10.0));
    return 1;
}

/* Why a released trial lost its signal. */
static const char *sig_loss(int c0, const struct sig_trial *st)
{
    int i;
    if (st->ran < st->sent)
        return "the wait slept with the signal held";
    for (i = 0; i < st->ran; i++) {
        switch (atomic_load(&sig_where[(c0 + i) % 16])) {
        case W_HELD:
            return "the wait let the signal in and did not report it";
        case W_SYSCALL:
            return "handled on the return of a system call of the DAT call";
        default:
            break;
        }
    }
    return "every handler ran outside the wait, the last one in the DAT call";
}

static void signal_case(int kind, DAT_TIMEOUT timeout)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, hint = BOGUS_EVD;
    DAT_EVENT ev;
    DAT_COUNT nmore = -77;
    struct pwaiter *w = &PW[0];
    int n = scaled(500, 100);
    double watchdog = scaledf(0.05, 1.0), budget = scaledf(5.0, 20.0), t0;
    int t, trials = 0, ok = 0, lost = 0, early = 0, entry = 0, late = 0, odd = 0, stopped = 0;
    int lost_at0 = 0, lost_sub1us = 0;
    FIXTURE(ia, aevd);
    if (kind == K_CNO) {
        REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
        REQUIRE(dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evd) == DAT_SUCCESS);
    } else {
        REQUIRE(ctest_sw_evd(ia, 8, &evd) == DAT_SUCCESS);
    }
    REQUIRE(install_sigusr1_no_restart());
    /* bind the DAT symbols now, so no signal lands in the dynamic linker */
    if (kind == K_EVD)
        CHECK_TYPE(dat_evd_wait(evd, 0, 1, &ev, &nmore), DAT_TIMEOUT_EXPIRED);
    else
        CHECK_TYPE(dat_cno_wait(cno, 0, &hint), DAT_QUEUE_EMPTY);
    w->evd = evd;
    w->cno = cno;
    REQUIRE(pw_start(w, kind, timeout));
    t0 = ctest_now();
    for (t = 1; t <= n; t++) {
        long off = pick_offset_ns(t);
        int c0 = atomic_load(&sig_count), first;
        void *mark = P(0xd0000000u + (unsigned)t);
        struct sig_trial st;
        if (ctest_now() - t0 > budget) {
            stopped = 1;
            break;
        }
        atomic_store(&w->go, t);
        REQUIRE(await_int(&w->in_call, t, scaledf(5.0, 30.0)));
        spin_ns(off);
        REQUIRE(pthread_kill(w->th, SIGUSR1) == 0);
        trials++;
        if (!sig_trial_end(w, t, c0, watchdog, evd, mark, &st)) {
            FAILF("trial %d: still blocked (%s)", t,
                  st.posted ? "after the watchdog event" : "and never asleep");
            return;
        }
        first = atomic_load(&sig_where[c0 % 16]);
        if (!st.posted) {
            if (!is_err(w->ret, DAT_INTERRUPTED_CALL)) {
                if (odd++ < 3)
                    FAILF("trial %d: returned 0x%08x, want DAT_INTERRUPTED_CALL", t,
                          (unsigned)w->ret);
            } else if (st.sent == 1) {
                ok++;
            } else if (first == W_OUTSIDE) {
                early++; /* before the call; the next signal interrupted it */
            } else {
                entry++; /* in the call's first instructions; likewise */
            }
        } else if (w->ret == DAT_SUCCESS) {
            if (kind == K_EVD) {
                CHECK(w->ev.event_data.software_event_data.pointer == mark);
            } else {
                CHECK(w->hint == evd);
                CHECK(deq_expect(evd, mark));
            }
            lost++;
            lost_at0 += off == 0;
            lost_sub1us += off > 0 && off < 1000;
            if (lost <= 3)
                FAILF("trial %d: lost a signal (offset %ld ns, %d sent): %s", t, off, st.sent,
                      sig_loss(c0, &st));
        } else if (is_err(w->ret, DAT_INTERRUPTED_CALL)) {
            late++; /* interrupted, just slowly: the event is still queued */
            CHECK(deq_expect(evd, mark));
        } else if (odd++ < 3) {
            FAILF("trial %d: returned 0x%08x after the watchdog event", t, (unsigned)w->ret);
        }
        if (atomic_load(&sig_count) != c0 + st.sent && odd++ < 3)
            FAILF("trial %d: handler ran %d times for %d signals", t,
                  atomic_load(&sig_count) - c0, st.sent);
    }
    pw_stop(w);
    if (lost > 0)
        FAILF("lost %d signals in %d trials (%d at offset 0, %d at 0-1 us, %d at 1-100 us)",
              lost, trials, lost_at0, lost_sub1us, lost - lost_at0 - lost_sub1us);
    CHECK(odd == 0);
    CHECK(trials > 0);
    NOTE("%d trials%s in %.2f s: %d interrupted, %d lost, %d late, "
         "%d handled before the call and %d at its entry (then interrupted by the next), %d odd",
         trials, stopped ? " (time budget reached)" : "", ctest_now() - t0, ok, lost, late,
         early, entry, odd);
    NOTE_SEED();
}

TEST(STRESS_signal_evd_wait_infinite) { signal_case(K_EVD, DAT_TIMEOUT_INFINITE); }

TEST(STRESS_signal_evd_wait_timeout_10s) { signal_case(K_EVD, 10 * SEC_US); }

TEST(STRESS_signal_cno_wait_infinite) { signal_case(K_CNO, DAT_TIMEOUT_INFINITE); }

TEST(STRESS_signal_cno_wait_timeout_10s) { signal_case(K_CNO, 10 * SEC_US); }

/* ======================================================================== */
/* 2. Free or abrupt close against a blocked wait                            */
/* ======================================================================== */

enum { R_EVD_FREE, R_IA_CLOSE_EVD, R_IA_CLOSE_CNO };

/*
 * Per trial: a fresh EVD (and for the IA modes a fresh IA); the waiter calls
 * dat_evd_wait / dat_cno_wait(INFINITE); the main thread frees the EVD or
 * closes the IA at a random moment, sometimes before the waiter has even
 * been scheduled. The free/close returns DAT_SUCCESS; the wait returns
 * DAT_ABORT (EVD), with a NULL EVD and not DAT_SUCCESS (CNO), or
 * DAT_INVALID_HANDLE when the handle was already dead when it started.
 */
static void teardown_race_case(int mode)
{
    struct pwaiter *w = &PW[0];
    int n = mode == R_EVD_FREE ? scaled(400, 150) : scaled(200, 80);
    double watchdog = scaledf(2.0, 10.0), t0;
    int t, trials = 0, aborted = 0, released = 0, invalid = 0, bad = 0, bad_free = 0;
    FIXTURE(ia, aevd);
    REQUIRE(pw_start(w, mode == R_IA_CLOSE_CNO ? K_CNO : K_EVD, DAT_TIMEOUT_INFINITE));
    t0 = ctest_now();
    for (t = 1; t <= n; t++) {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
        DAT_RETURN rc, r;
        if (mode != R_EVD_FREE && t > 1)
            REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
        if (mode == R_IA_CLOSE_CNO) {
            REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
            REQUIRE(dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evd) == DAT_SUCCESS);
        } else {
            REQUIRE(ctest_sw_evd(ia, 8, &evd) == DAT_SUCCESS);
        }
        w->evd = evd;
        w->cno = cno;
        atomic_store(&w->go, t);
        if (t % 5 != 0) { /* every fifth trial acts at once */
            REQUIRE(await_int(&w->in_call, t, scaledf(5.0, 30.0)));
            spin_ns(pick_offset_ns(t));
        }
        if (mode == R_EVD_FREE)
            rc = dat_evd_free(evd);
        else
            rc = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        trials++;
        if (rc != DAT_SUCCESS && bad_free++ == 0)
            FAILF("trial %d: %s returned 0x%08x", t,
                  mode == R_EVD_FREE ? "dat_evd_free" : "dat_ia_close(ABRUPT)", (unsigned)rc);
        if (!await_int(&w->done, t, watchdog)) {
            FAILF("trial %d: the wait is still blocked %.0f s after the %s", t, watchdog,
                  mode == R_EVD_FREE ? "free" : "close");
            return;
        }
        r = w->ret;
        if (is_err(r, DAT_INVALID_HANDLE)) {
            invalid++;
        } else if (mode != R_IA_CLOSE_CNO && is_err(r, DAT_ABORT)) {
            aborted++;
        } else if (mode == R_IA_CLOSE_CNO && r != DAT_SUCCESS && w->hint == DAT_HANDLE_NULL) {
            released++;
        } else if (bad++ == 0) {
            FAILF("trial %d: the wait returned 0x%08x (hint %p)", t, (unsigned)r,
                  mode == R_IA_CLOSE_CNO ? (void *)w->hint : NULL);
        }
    }
    pw_stop(w);
    CHECK(bad == 0);
    CHECK(bad_free == 0);
    if (mode == R_EVD_FREE) /* every EVD really went: nothing blocks a graceful close */
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    NOTE("%d trials in %.2f s: %d DAT_ABORT, %d released with NULL, %d DAT_INVALID_HANDLE, "
         "%d bad waits, %d bad frees/closes",
         trials, ctest_now() - t0, aborted, released, invalid, bad, bad_free);
    NOTE_SEED();
}

TEST(STRESS_evd_free_vs_evd_wait) { teardown_race_case(R_EVD_FREE); }

TEST(STRESS_ia_close_vs_evd_wait) { teardown_race_case(R_IA_CLOSE_EVD); }

TEST(STRESS_ia_close_vs_cno_wait) { teardown_race_case(R_IA_CLOSE_CNO); }

/* ======================================================================== */
/* 3. Abrupt IA close against threads posting and dequeuing                 */
/* ======================================================================== */

#define CP_THREADS 3

struct cp_thread {
    pthread_t th;
    int id;
    DAT_EVD_HANDLE evd;
    DAT_COUNT qlen;
    atomic_int running, finished;
    unsigned post_seq, deq_seq; /* events posted / dequeued */
    int dead;                   /* saw DAT_INVALID_HANDLE */
    int calls, full, empty, invalid, bad;
    char msg[200];
};

static struct cp_thread CP[CP_THREADS];
static atomic_int cp_closing; /* set just before dat_ia_close */
static atomic_int cp_closed;  /* set once dat_ia_close returned */

static void cp_bad(struct cp_thread *c, const char *fmt, ...)
{
    va_list ap;
    if (c->bad++ != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
    va_end(ap);
}

static void *cp_ptr(int id, unsigned seq) { return P(((uintptr_t)(id + 1) << 24) | (seq & 0xffffffu)); }

/*
 * One post or dequeue, checked against the thread's own model of its queue.
 * Before the close began the model is exact; while it runs, a call may also
 * fail with DAT_INVALID_HANDLE (for good from then on) and queued events may
 * vanish, but nothing is invented or reordered; after it returned, only
 * DAT_INVALID_HANDLE.
 */
static void cp_call(struct cp_thread *c, int post)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    int closed_before = atomic_load(&cp_closed), closing_after;
    unsigned queued = c->post_seq - c->deq_seq;
    memset(&ev, 0, sizeof(ev));
    if (post)
        r = ctest_post(c->evd, cp_ptr(c->id, c->post_seq));
    else
        r = dat_evd_dequeue(c->evd, &ev);
    closing_after = atomic_load(&cp_closing);
    c->calls++;
    if (is_err(r, DAT_INVALID_HANDLE)) {
        c->invalid++;
        c->dead = 1;
        if (!closing_after)
            cp_bad(c, "%s: DAT_INVALID_HANDLE before the close began", post ? "post" : "dequeue");
        return;
    }
    if (c->dead || closed_before) {
        cp_bad(c, "%s returned 0x%08x after %s", post ? "post" : "dequeue", (unsigned)r,
               c->dead ? "DAT_INVALID_HANDLE" : "the close returned");
        return;
    }
    if (post) {
        if (r == DAT_SUCCESS) {
            if (!closing_after && queued >= (unsigned)c->qlen)
                cp_bad(c, "post: DAT_SUCCESS with %u of %d queued", queued, (int)c->qlen);
            c->post_seq++;
        } else if (is_err(r, DAT_QUEUE_FULL)) {
            c->full++;
            if (!closing_after && queued != (unsigned)c->qlen)
                cp_bad(c, "post: DAT_QUEUE_FULL with %u of %d queued", queued, (int)c->qlen);
        } else {
            cp_bad(c, "post returned 0x%08x", (unsigned)r);
        }
        return;
    }
    if (r == DAT_SUCCESS) {
        uintptr_t p = (uintptr_t)ev.event_data.software_event_data.pointer;
        unsigned seq = (unsigned)(p & 0xffffffu);
        if (ev.event_number != DAT_SOFTWARE_EVENT || ev.evd_handle != c->evd ||
            (p >> 24) != (uintptr_t)(c->id + 1) || seq < c->deq_seq || seq >= c->post_seq ||
            (!closing_after && seq != c->deq_seq)) {
            cp_bad(c, "dequeue: event 0x%x evd %p pointer %p, want seq %u of %u posted",
                   (unsigned)ev.event_number, (void *)ev.evd_handle, (void *)p, c->deq_seq,
                   c->post_seq);
            return;
        }
        c->deq_seq = seq + 1;
    } else if (is_err(r, DAT_QUEUE_EMPTY)) {
        c->empty++;
        if (!closing_after && queued != 0)
            cp_bad(c, "dequeue: DAT_QUEUE_EMPTY with %u queued", queued);
        else
            c->deq_seq = c->post_seq; /* whatever was queued is gone */
    } else {
        cp_bad(c, "dequeue returned 0x%08x", (unsigned)r);
    }
}

static void *cp_main(void *arg)
{
    struct cp_thread *c = arg;
    int i, after_dead = 0, after_closed = 0;
    unsigned it;
    int yield = under_valgrind();
    atomic_store(&c->running, 1);
    for (it = 0; after_dead < 50 && after_closed < 1000 && c->post_seq < 0xf00000u; it++) {
        /* Valgrind runs one thread at a time and switches at system calls:
         * give the closing thread its turn. */
        if (yield && it % 16 == 0)
            sched_yield();
        if (it % 32 == 31) {
            /* fill past the queue length, then drain past empty */
            for (i = 0; i <= c->qlen; i++)
                cp_call(c, 1);
            for (i = 0; i <= c->qlen; i++)
                cp_call(c, 0);
        } else {
            cp_call(c, 1);
            cp_call(c, 0);
        }
        after_dead += c->dead;
        after_closed += atomic_load(&cp_closed);
    }
    atomic_store(&c->finished, 1);
    return NULL;
}

TEST(STRESS_ia_close_vs_post_dequeue)
{
    int n = scaled(60, 10), t, k, bad = 0, bad_close = 0;
    long calls = 0, full = 0, empty = 0, invalid = 0;
    double t0, tc, close_sum = 0, close_max = 0;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;
    rng_init();
    t0 = ctest_now();
    for (t = 1; t <= n; t++) {
        DAT_RETURN rc;
        REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
        atomic_store(&cp_closing, 0);
        atomic_store(&cp_closed, 0);
        for (k = 0; k < CP_THREADS; k++) {
            struct cp_thread *c = &CP[k];
            memset(c, 0, sizeof(*c));
            c->id = k;
            REQUIRE(ctest_sw_evd(ia, 8, &c->evd) == DAT_SUCCESS);
            c->qlen = evd_qlen(c->evd);
            REQUIRE(c->qlen >= 8);
        }
        for (k = 0; k < CP_THREADS; k++)
            REQUIRE(pthread_create(&CP[k].th, NULL, cp_main, &CP[k]) == 0);
        for (k = 0; k < CP_THREADS; k++)
            REQUIRE(await_int(&CP[k].running, 1, scaledf(5.0, 30.0)));
        nap_us(rng_below((uint64_t)scaled(2000, 200)));
        atomic_store(&cp_closing, 1);
        tc = ctest_now();
        rc = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        tc = ctest_now() - tc;
        close_sum += tc;
        if (tc > close_max)
            close_max = tc;
        atomic_store(&cp_closed, 1);
        if (rc != DAT_SUCCESS && bad_close++ == 0)
            FAILF("trial %d: dat_ia_close(ABRUPT) returned 0x%08x", t, (unsigned)rc);
        for (k = 0; k < CP_THREADS; k++) {
            struct cp_thread *c = &CP[k];
            if (!await_int(&c->finished, 1, scaledf(5.0, 20.0))) {
                FAILF("trial %d: thread %d still running after the close", t, k);
                return;
            }
            pthread_join(c->th, NULL);
            if (!c->dead)
                cp_bad(c, "never saw DAT_INVALID_HANDLE");
            if (c->bad && bad++ == 0)
                FAILF("trial %d thread %d: %s", t, k, c->msg);
            calls += c->calls;
            full += c->full;
            empty += c->empty;
            invalid += c->invalid;
        }
    }
    CHECK(bad == 0);
    CHECK(bad_close == 0);
    NOTE("%d trials x %d threads in %.2f s: %ld calls, %ld DAT_QUEUE_FULL, %ld DAT_QUEUE_EMPTY, "
         "%ld DAT_INVALID_HANDLE, %d threads with bad results",
         n, CP_THREADS, ctest_now() - t0, calls, full, empty, invalid, bad);
    NOTE("dat_ia_close(ABRUPT) took %.1f us on average, %.1f us at most", close_sum / n * 1e6,
         close_max * 1e6);
    NOTE_SEED();
}

/* ======================================================================== */
/* 4. Many producers, one EVD, one consumer                                  */
/* ======================================================================== */

#define PR_THREADS 4

struct producer {
    pthread_t th;
    int id, count;
    DAT_EVD_HANDLE evd;
    atomic_int finished;
    long full;
    DAT_RETURN bad;
};

static struct producer PR[PR_THREADS];

static void *pr_ptr(int id, int seq) { return P(((uintptr_t)(id + 1) << 20) | (unsigned)seq); }

static void *pr_main(void *arg)
{
    struct producer *p = arg;
    int s;
    for (s = 0; s < p->count; s++) {
        DAT_RETURN r;
        while ((r = ctest_post(p->evd, pr_ptr(p->id, s))) != DAT_SUCCESS) {
            if (!is_err(r, DAT_QUEUE_FULL)) {
                p->bad = r;
                goto out;
            }
            p->full++;
            sched_yield();
        }
    }
out:
    atomic_store(&p->finished, 1);
    return NULL;
}

/* Check one received event against the per-producer sequence. */
static int pr_accept(DAT_EVD_HANDLE evd, const DAT_EVENT *ev, int *next, long total)
{
    uintptr_t p = (uintptr_t)ev->event_data.software_event_data.pointer;
    int id = (int)(p >> 20) - 1, seq = (int)(p & 0xfffffu);
    if (ev->event_number != DAT_SOFTWARE_EVENT || ev->evd_handle != evd || id < 0 ||
        id >= PR_THREADS || seq != next[id]) {
        FAILF("event %ld: number 0x%x evd %p pointer %p (producer %d seq %d, want seq %d)",
              total, (unsigned)ev->event_number, (void *)ev->evd_handle, (void *)p, id, seq,
              id >= 0 && id < PR_THREADS ? next[id] : -1);
        return 0;
    }
    next[id]++;
    return 1;
}

static void producers_case(int use_wait)
{
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_EVENT ev;
    DAT_COUNT qlen, nmore;
    int m = scaled(5000, 1000), k, next[PR_THREADS] = {0};
    long total = 0, want = (long)m * PR_THREADS, polls = 0, full = 0, bad_nmore = 0;
    double t0, stall = scaledf(2.0, 10.0), deadline;
    FIXTURE(ia, aevd);
    REQUIRE(ctest_sw_evd(ia, 16, &evd) == DAT_SUCCESS);
    qlen = evd_qlen(evd);
    REQUIRE(qlen >= 16);
    t0 = ctest_now();
    for (k = 0; k < PR_THREADS; k++) {
        PR[k].id = k;
        PR[k].count = m;
        PR[k].evd = evd;
        REQUIRE(pthread_create(&PR[k].th, NULL, pr_main, &PR[k]) == 0);
    }
    deadline = ctest_now() + stall;
    while (total < want) {
        DAT_RETURN r;
        memset(&ev, 0, sizeof(ev));
        nmore = -77;
        if (use_wait)
            r = dat_evd_wait(evd, (DAT_TIMEOUT)(stall * SEC_US), 1, &ev, &nmore);
        else
            r = dat_evd_dequeue(evd, &ev);
        if (r == DAT_SUCCESS) {
            if (!pr_accept(evd, &ev, next, total))
                break;
            if (use_wait && (nmore < 0 || nmore >= qlen) && bad_nmore++ == 0)
                FAILF("event %ld: nmore %d, qlen %d", total, (int)nmore, (int)qlen);
            total++;
            deadline = ctest_now() + stall;
        } else if (!use_wait && is_err(r, DAT_QUEUE_EMPTY) && ctest_now() < deadline) {
            polls++;
            sched_yield();
        } else {
            FAILF("after %ld of %ld events: %s returned 0x%08x", total, want,
                  use_wait ? "dat_evd_wait" : "dat_evd_dequeue", (unsigned)r);
            break;
        }
    }
    for (k = 0; k < PR_THREADS; k++) {
        if (!await_int(&PR[k].finished, 1, scaledf(5.0, 30.0))) {
            FAILF("producer %d still posting (%d of %d received)", k, next[k], m);
            return;
        }
        pthread_join(PR[k].th, NULL);
        full += PR[k].full;
        if (PR[k].bad != DAT_SUCCESS)
            FAILF("producer %d: post returned 0x%08x", k, (unsigned)PR[k].bad);
        CHECK(next[k] == m);
    }
    CHECK(total == want);
    CHECK(bad_nmore == 0);
    CHECK_TYPE(dat_evd_dequeue(evd, &ev), DAT_QUEUE_EMPTY);
    CHECK_OK(dat_evd_free(evd));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    NOTE("%ld of %ld events in %.2f s, %ld DAT_QUEUE_FULL retries, %ld empty polls", total, want,
         ctest_now() - t0, full, polls);
}

TEST(STRESS_producers_one_evd_wait) { producers_case(1); }

TEST(STRESS_producers_one_evd_dequeue) { producers_case(0); }

/* ======================================================================== */
/* 5. Several waiters on one CNO with several EVDs                           */
/* ======================================================================== */

#define CN_WAITERS 4
#define CN_EVDS 3

struct poster {
    pthread_t th;
    DAT_EVD_HANDLE evd;
    atomic_int go, done;
    int count;     /* events to post this round */
    uintptr_t base; /* pointer of the first one */
    DAT_RETURN bad;
};

static struct poster PO[CN_EVDS];

static void *po_main(void *arg)
{
    struct poster *p = arg;
    int t = 0;
    for (;;) {
        int g, k;
        unsigned n;
        for (n = 0; (g = atomic_load(&p->go)) == t; n++)
            if (n > 200)
                nap_us(20);
        if (g < 0)
            return NULL;
        t = g;
        for (k = 0; k < p->count; k++) {
            DAT_RETURN r = ctest_post(p->evd, P(p->base + (uintptr_t)k));
            if (r != DAT_SUCCESS && p->bad == DAT_SUCCESS)
                p->bad = r;
        }
        atomic_store(&p->done, t);
    }
}

/*
 * Rounds: CN_WAITERS threads call dat_cno_wait(INFINITE); once they are
 * about to call, CN_EVDS producer threads post CN_WAITERS events in all
 * across the EVDs. Every waiter must return DAT_SUCCESS naming one of the
 * EVDs; the EVDs then hold exactly the posted events (the CNO dequeues
 * nothing).
 */
TEST(STRESS_cno_many_waiters)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evds[CN_EVDS];
    int rounds = scaled(200, 60), r, i, j, bad = 0, blocked_total = 0;
    double watchdog = scaledf(2.0, 10.0), t0, deadline;
    long hints[CN_EVDS] = {0};
    DAT_EVENT ev;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    for (j = 0; j < CN_EVDS; j++) {
        REQUIRE(dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evds[j]) == DAT_SUCCESS);
        PO[j].evd = evds[j];
        REQUIRE(pthread_create(&PO[j].th, NULL, po_main, &PO[j]) == 0);
    }
    for (i = 0; i < CN_WAITERS; i++) {
        PW[i].cno = cno;
        REQUIRE(pw_start(&PW[i], K_CNO, DAT_TIMEOUT_INFINITE));
    }
    t0 = ctest_now();
    for (r = 1; r <= rounds; r++) {
        int blocked = 0, got = 0;
        for (i = 0; i < CN_WAITERS; i++)
            atomic_store(&PW[i].go, r);
        for (i = 0; i < CN_WAITERS; i++)
            REQUIRE(await_int(&PW[i].in_call, r, scaledf(5.0, 30.0)));
        spin_ns(rng_below(50000));
        for (j = 0; j < CN_EVDS; j++) {
            /* CN_WAITERS events, spread over the EVDs, rotating by round */
            PO[j].count = CN_WAITERS / CN_EVDS +
                          ((j - r % CN_EVDS + CN_EVDS) % CN_EVDS < CN_WAITERS % CN_EVDS);
            PO[j].base = ((uintptr_t)r << 12) | ((uintptr_t)j << 8) | 1u;
            atomic_store(&PO[j].go, r);
        }
        for (j = 0; j < CN_EVDS; j++)
            REQUIRE(await_int(&PO[j].done, r, scaledf(5.0, 30.0)));
        deadline = ctest_now() + watchdog;
        for (i = 0; i < CN_WAITERS; i++) {
            double left = deadline - ctest_now();
            if (!await_int(&PW[i].done, r, left > 0.001 ? left : 0.001))
                blocked++;
        }
        if (blocked > 0) {
            FAILF("round %d: %d of %d waiters still blocked %.0f s after %d posts", r, blocked,
                  CN_WAITERS, watchdog, CN_WAITERS);
            blocked_total += blocked;
            /* release them so the process can end cleanly */
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
            return;
        }
        for (i = 0; i < CN_WAITERS; i++) {
            int found = 0;
            for (j = 0; j < CN_EVDS; j++)
                if (PW[i].hint == evds[j]) {
                    found = 1;
                    hints[j]++;
                }
            if ((PW[i].ret != DAT_SUCCESS || !found) && bad++ == 0)
                FAILF("round %d waiter %d: returned 0x%08x with EVD %p", r, i,
                      (unsigned)PW[i].ret, (void *)PW[i].hint);
        }
        for (j = 0; j < CN_EVDS; j++) {
            int k;
            if (PO[j].bad != DAT_SUCCESS && bad++ == 0)
                FAILF("round %d: post on EVD %d returned 0x%08x", r, j, (unsigned)PO[j].bad);
            for (k = 0; k < PO[j].count; k++) {
                if (!deq_expect(evds[j], P(PO[j].base + (uintptr_t)k))) {
                    if (bad++ == 0)
                        FAILF("round %d: EVD %d lacks event %d", r, j, k);
                    break;
                }
                got++;
            }
            if (k == PO[j].count && !is_err(dat_evd_dequeue(evds[j], &ev), DAT_QUEUE_EMPTY) &&
                bad++ == 0)
                FAILF("round %d: EVD %d holds more than the %d posted events", r, j, PO[j].count);
        }
        if (got != CN_WAITERS && bad++ == 0)
            FAILF("round %d: %d events found, %d posted", r, got, CN_WAITERS);
    }
    for (i = 0; i < CN_WAITERS; i++)
        pw_stop(&PW[i]);
    for (j = 0; j < CN_EVDS; j++) {
        atomic_store(&PO[j].go, -1);
        pthread_join(PO[j].th, NULL);
    }
    CHECK(bad == 0);
    for (j = 0; j < CN_EVDS; j++)
        CHECK_OK(dat_evd_free(evds[j]));
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    NOTE("%d rounds x %d waiters in %.2f s; hints per EVD %ld/%ld/%ld; %d blocked, %d bad",
         rounds, CN_WAITERS, ctest_now() - t0, hints[0], hints[1], hints[2], blocked_total, bad);
    NOTE_SEED();
}

/* ======================================================================== */
/* 6. Short timeouts: never early, never absurdly late                       */
/* ======================================================================== */

static void timeout_case(int kind)
{
    static const DAT_TIMEOUT tmo[3] = {1, 100, 10000};
    int reps[3];
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    int i, k, early = 0, late = 0, bad = 0;
    double worst_late[3] = {0, 0, 0};
    FIXTURE(ia, aevd);
    reps[0] = scaled(200, 50);
    reps[1] = scaled(200, 50);
    reps[2] = scaled(20, 10);
    if (kind == K_CNO) {
        /* with an EVD attached, so the CNO wait really waits */
        REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
        REQUIRE(dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evd) == DAT_SUCCESS);
    } else {
        REQUIRE(ctest_sw_evd(ia, 8, &evd) == DAT_SUCCESS);
    }
    for (i = 0; i < 3; i++) {
        double want = (double)tmo[i] / 1e6;
        for (k = 0; k < reps[i]; k++) {
            DAT_EVENT ev;
            DAT_COUNT nmore = -77;
            DAT_EVD_HANDLE hint = BOGUS_EVD;
            DAT_RETURN r;
            double a, b, dt;
            a = ctest_now();
            if (kind == K_EVD)
                r = dat_evd_wait(evd, tmo[i], 1, &ev, &nmore);
            else
                r = dat_cno_wait(cno, tmo[i], &hint);
            b = ctest_now();
            dt = b - a;
            if (kind == K_EVD ? (!is_err(r, DAT_TIMEOUT_EXPIRED) || nmore != 0)
                              : (!is_err(r, DAT_QUEUE_EMPTY) || hint != DAT_HANDLE_NULL)) {
                if (bad++ == 0)
                    FAILF("timeout %u us: returned 0x%08x (nmore %d, EVD %p)", (unsigned)tmo[i],
                          (unsigned)r, (int)nmore, (void *)hint);
                continue;
            }
            /* the call began after `a` and ended before `b`: dt >= its real duration */
            if (dt < want && early++ == 0)
                FAILF("timeout %u us: returned after only %.1f us", (unsigned)tmo[i], dt * 1e6);
            if (dt > want + 1.0 && late++ == 0)
                FAILF("timeout %u us: returned %.3f s late", (unsigned)tmo[i], dt - want);
            if (dt - want > worst_late[i])
                worst_late[i] = dt - want;
        }
    }
    CHECK(bad == 0);
    CHECK(early == 0);
    CHECK(late == 0);
    NOTE("worst lateness: 1 us -> %.0f us, 100 us -> %.0f us, 10 ms -> %.0f us; %d early, "
         "%d late, %d bad",
         worst_late[0] * 1e6, worst_late[1] * 1e6, worst_late[2] * 1e6, early, late, bad);
}

TEST(STRESS_timeout_evd_wait) { timeout_case(K_EVD); }

TEST(STRESS_timeout_cno_wait) { timeout_case(K_CNO); }

int main(int argc, char **argv) { return ctest_main(argc, argv); }
