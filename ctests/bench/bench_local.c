/*
 * bench_local: cost of the local hot paths of libdat (no connection), each
 * figure measured through the exported C API and printed beside a baseline
 * measured in the same run:
 *
 *   1. handle validation (dat_get_handle_type), 1 and 2 threads
 *   2. dat_evd_post_se + dat_evd_dequeue on a software EVD, 1 and 2 threads
 *   3. dat_lmr_create + dat_lmr_free with few and with 20,000 extra mappings
 *   4. dispatch to a third-party provider (the C stub provider)
 *   5. timeout overshoot of dat_evd_wait and dat_cno_wait
 *   6. cross-thread post -> dat_evd_wait round trip
 *
 * Usage: bench_local /abs/path/libstub_provider.so
 *
 * Every return code of a timed call is checked; an unexpected one is
 * reported (call and code in hex) and the program exits with status 1.
 * Targets are printed as "ok"/"MISSED" and do not affect the exit code.
 */
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STUB_IA_NAME "benchstub0"

/* ---- 1. handle validation ---------------------------------------------- */

/* What the baseline "validates": a word read through the handle. */
struct fake_obj {
    void *provider;
    DAT_HANDLE_TYPE type;
    unsigned pad[13];
};

/* Two neighbouring objects, like two EVDs created one after the other. */
static struct fake_obj fake_objs[2] __attribute__((aligned(64)));

__attribute__((noinline)) static DAT_RETURN fake_get_handle_type(DAT_HANDLE h,
                                                                 DAT_HANDLE_TYPE *type)
{
    const struct fake_obj *o = h;

    if (o == NULL || type == NULL)
        return DAT_ERROR(DAT_INVALID_HANDLE, 0);
    *type = o->type;
    return DAT_SUCCESS;
}

/* volatile: the compiler cannot see through the pointer, so it cannot inline. */
static DAT_RETURN (*volatile fake_get_handle_type_ptr)(DAT_HANDLE, DAT_HANDLE_TYPE *) =
    fake_get_handle_type;

struct hv_ctx {
    DAT_HANDLE h;
};

static void hv_loop_dat(void *p, long n)
{
    const struct hv_ctx *c = p;
    DAT_HANDLE_TYPE type = 0;
    long i;

    for (i = 0; i < n; i++)
        BENCH_OK("dat_get_handle_type", dat_get_handle_type(c->h, &type));
    if (type != DAT_HANDLE_TYPE_EVD)
        bench_die("dat_get_handle_type: EVD handle not reported as an EVD");
}

static void hv_loop_base(void *p, long n)
{
    const struct hv_ctx *c = p;
    DAT_RETURN (*fn)(DAT_HANDLE, DAT_HANDLE_TYPE *) = fake_get_handle_type_ptr;
    DAT_HANDLE_TYPE type = 0;
    long i;

    for (i = 0; i < n; i++)
        BENCH_OK("baseline get_handle_type", fn(c->h, &type));
    if (type != DAT_HANDLE_TYPE_EVD)
        bench_die("baseline get_handle_type: wrong type");
}

void bench_handles(DAT_IA_HANDLE ia)
{
    DAT_EVD_HANDLE evd_a = DAT_HANDLE_NULL, evd_b = DAT_HANDLE_NULL;
    struct hv_ctx da, db, ba, bb;
    void *same_d[2] = {&da, &da}, *nb_d[2] = {&da, &db};
    void *same_b[2] = {&ba, &ba}, *nb_b[2] = {&ba, &bb};
    double d1, d2s, d2n, b1, b2s, b2n;
    long n;

    /* Two EVDs created one after the other: neighbouring handles. */
    BENCH_OK("dat_evd_create", dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd_a));
    BENCH_OK("dat_evd_create", dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd_b));
    fake_objs[0].type = DAT_HANDLE_TYPE_EVD;
    fake_objs[1].type = DAT_HANDLE_TYPE_EVD;
    da.h = evd_a;
    db.h = evd_b;
    ba.h = &fake_objs[0];
    bb.h = &fake_objs[1];

    table_section("1. handle validation: dat_get_handle_type(EVD), ns per call per thread\n"
                  "   baseline: non-inlined call through a function pointer (read a word, write OUT)");
    n = bench_calibrate(hv_loop_dat, &da, BENCH_REP_SECONDS);
    d1 = bench_ns(hv_loop_dat, &da, n);
    d2s = bench_threads_ns(hv_loop_dat, same_d, 2, n);
    d2n = bench_threads_ns(hv_loop_dat, nb_d, 2, n);
    n = bench_calibrate(hv_loop_base, &ba, BENCH_REP_SECONDS);
    b1 = bench_ns(hv_loop_base, &ba, n);
    b2s = bench_threads_ns(hv_loop_base, same_b, 2, n);
    b2n = bench_threads_ns(hv_loop_base, nb_b, 2, n);

    table_row("1 thread", d1, "ns", b1, "<= 5 ns", bench_at_most(d1, 5));
    table_row("2 threads, same handle", d2s, "ns", b2s, "<= 5 ns", bench_at_most(d2s, 5));
    table_row("2 threads, neighbouring handles", d2n, "ns", b2n, "<= 5 ns", bench_at_most(d2n, 5));
    table_row("2 threads same handle / 1 thread", d2s / d1, "x", b2s / b1, "<= 1.30x",
              bench_at_most(d2s / d1, 1.3));
    table_row("2 threads neighbouring / 1 thread", d2n / d1, "x", b2n / b1, "", VERDICT_NONE);

    BENCH_OK("dat_evd_free", dat_evd_free(evd_b));
    BENCH_OK("dat_evd_free", dat_evd_free(evd_a));
}

/* ---- 2. dat_evd_post_se + dat_evd_dequeue ------------------------------- */

#define RING_SLOTS 1024

/* The baseline: the plain mutex-protected ring of events. */
struct ring {
    pthread_mutex_t lock;
    unsigned head, tail;
    DAT_EVENT slot[RING_SLOTS];
};

static int ring_push(struct ring *r, const DAT_EVENT *ev)
{
    int ok = 0;

    pthread_mutex_lock(&r->lock);
    if (r->tail - r->head < RING_SLOTS) {
        r->slot[r->tail++ % RING_SLOTS] = *ev;
        ok = 1;
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

static int ring_pop(struct ring *r, DAT_EVENT *ev)
{
    int ok = 0;

    pthread_mutex_lock(&r->lock);
    if (r->tail != r->head) {
        *ev = r->slot[r->head++ % RING_SLOTS];
        ok = 1;
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

struct pair_ctx {
    DAT_EVD_HANDLE evd;
    struct ring *ring;
    DAT_EVENT ev;
};

static void pair_loop_dat(void *p, long n)
{
    struct pair_ctx *c = p;
    DAT_EVENT out;
    long i;

    memset(&out, 0, sizeof(out));
    for (i = 0; i < n; i++) {
        BENCH_OK("dat_evd_post_se", dat_evd_post_se(c->evd, &c->ev));
        BENCH_OK("dat_evd_dequeue", dat_evd_dequeue(c->evd, &out));
    }
    if (out.event_number != DAT_SOFTWARE_EVENT)
        bench_die("dat_evd_dequeue: not the software event posted");
}

static void pair_loop_base(void *p, long n)
{
    struct pair_ctx *c = p;
    DAT_EVENT out;
    long i;

    memset(&out, 0, sizeof(out));
    for (i = 0; i < n; i++) {
        if (!ring_push(c->ring, &c->ev))
            bench_die("baseline ring push: full");
        if (!ring_pop(c->ring, &out))
            bench_die("baseline ring pop: empty");
    }
    if (out.event_number != DAT_SOFTWARE_EVENT)
        bench_die("baseline ring pop: wrong event");
}

static struct ring *ring_new(void)
{
    struct ring *r = calloc(1, sizeof(*r));

    if (r == NULL)
        bench_die("calloc ring");
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void bench_evd_pair(DAT_IA_HANDLE ia)
{
    struct pair_ctx a, b;
    void *two[2] = {&a, &b};
    double d1, d2, b1, b2;
    long n;

    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    BENCH_OK("dat_evd_create", dat_evd_create(ia, RING_SLOTS, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &a.evd));
    BENCH_OK("dat_evd_create", dat_evd_create(ia, RING_SLOTS, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &b.evd));
    a.ring = ring_new();
    b.ring = ring_new();
    a.ev.event_number = b.ev.event_number = DAT_SOFTWARE_EVENT;
    a.ev.event_data.software_event_data.pointer = &a;
    b.ev.event_data.software_event_data.pointer = &b;

    table_section("2. dat_evd_post_se + dat_evd_dequeue, software EVD, ns per pair per thread\n"
                  "   baseline: pthread-mutex ring buffer of DAT_EVENTs, push + pop");
    n = bench_calibrate(pair_loop_dat, &a, BENCH_REP_SECONDS);
    d1 = bench_ns(pair_loop_dat, &a, n);
    d2 = bench_threads_ns(pair_loop_dat, two, 2, n);
    n = bench_calibrate(pair_loop_base, &a, BENCH_REP_SECONDS);
    b1 = bench_ns(pair_loop_base, &a, n);
    b2 = bench_threads_ns(pair_loop_base, two, 2, n);

    table_row("1 thread", d1, "ns", b1, "", VERDICT_NONE);
    table_row("2 threads, one EVD each", d2, "ns", b2, "", VERDICT_NONE);
    table_row("2 threads / 1 thread", d2 / d1, "x", b2 / b1, "", VERDICT_NONE);

    BENCH_OK("dat_evd_free", dat_evd_free(b.evd));
    BENCH_OK("dat_evd_free", dat_evd_free(a.evd));
    free(a.ring);
    free(b.ring);
}

/* ---- 6. cross-thread round trip ------------------------------------------ */

/* The baseline: a one-slot mailbox on a pthread mutex + condition variable. */
struct mbox {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    long count;
    DAT_EVENT ev;
};

static void mbox_post(struct mbox *m, const DAT_EVENT *ev)
{
    pthread_mutex_lock(&m->lock);
    m->ev = *ev;
    m->count++;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
}

static void mbox_wait(struct mbox *m, DAT_EVENT *ev)
{
    pthread_mutex_lock(&m->lock);
    while (m->count == 0)
        pthread_cond_wait(&m->cond, &m->lock);
    m->count--;
    *ev = m->ev;
    pthread_mutex_unlock(&m->lock);
}

struct pp_ctx {
    int use_dat;
    DAT_EVD_HANDLE ping, pong;
    struct mbox mping, mpong;
    long n;
};

static void *pp_echo(void *p)
{
    struct pp_ctx *c = p;
    DAT_EVENT ev;
    DAT_COUNT nmore;
    long i;

    for (i = 0; i < c->n; i++) {
        if (c->use_dat) {
            BENCH_OK("dat_evd_wait (echo)", dat_evd_wait(c->ping, DAT_TIMEOUT_INFINITE, 1, &ev, &nmore));
            BENCH_OK("dat_evd_post_se (echo)", dat_evd_post_se(c->pong, &ev));
        } else {
            mbox_wait(&c->mping, &ev);
            mbox_post(&c->mpong, &ev);
        }
    }
    return NULL;
}

/* One repetition: n round trips; returns us per round trip. */
static double pp_run(struct pp_ctx *c, long n)
{
    DAT_EVENT ev;
    DAT_COUNT nmore;
    pthread_t th;
    double t0, t;
    long i;

    memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_SOFTWARE_EVENT;
    c->n = n;
    if (pthread_create(&th, NULL, pp_echo, c) != 0)
        bench_die("pthread_create");
    t0 = bench_now();
    for (i = 0; i < n; i++) {
        if (c->use_dat) {
            BENCH_OK("dat_evd_post_se (ping)", dat_evd_post_se(c->ping, &ev));
            BENCH_OK("dat_evd_wait (pong)", dat_evd_wait(c->pong, DAT_TIMEOUT_INFINITE, 1, &ev, &nmore));
        } else {
            mbox_post(&c->mping, &ev);
            mbox_wait(&c->mpong, &ev);
        }
    }
    t = bench_now() - t0;
    pthread_join(th, NULL);
    return t * 1e6 / (double)n;
}

static double pp_median(struct pp_ctx *c)
{
    double v[BENCH_REPS], probe;
    long n;
    int r;

    probe = pp_run(c, 200); /* warm-up and scale */
    n = (long)(0.08e6 / (probe > 0.1 ? probe : 0.1));
    if (n < 200)
        n = 200;
    if (n > 200000)
        n = 200000;
    for (r = 0; r < BENCH_REPS; r++)
        v[r] = pp_run(c, n);
    return bench_median(v, BENCH_REPS);
}

void bench_pingpong(DAT_IA_HANDLE ia)
{
    struct pp_ctx *c = calloc(1, sizeof(*c));
    double d, b;

    if (c == NULL)
        bench_die("calloc");
    BENCH_OK("dat_evd_create", dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &c->ping));
    BENCH_OK("dat_evd_create", dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &c->pong));
    pthread_mutex_init(&c->mping.lock, NULL);
    pthread_cond_init(&c->mping.cond, NULL);
    pthread_mutex_init(&c->mpong.lock, NULL);
    pthread_cond_init(&c->mpong.cond, NULL);

    table_section("6. cross-thread round trip: post -> dat_evd_wait -> post -> dat_evd_wait (2 threads, 2 EVDs)\n"
                  "   baseline: the same ping-pong through pthread mutex + condvar mailboxes");
    c->use_dat = 1;
    d = pp_median(c);
    c->use_dat = 0;
    b = pp_median(c);
    table_row("round trip", d, "us", b, "", VERDICT_NONE);

    BENCH_OK("dat_evd_free", dat_evd_free(c->pong));
    BENCH_OK("dat_evd_free", dat_evd_free(c->ping));
    free(c);
}

/* ---- main --------------------------------------------------------------- */

/* dat.conf naming the stub provider, in a temporary directory. */
static char conf_dir[256], conf_path[300];

static void write_conf(const char *stub_lib)
{
    const char *tmp = getenv("TMPDIR");
    FILE *f;

    snprintf(conf_dir, sizeof(conf_dir), "%s/bench_dat_XXXXXX",
             (tmp != NULL && tmp[0] != '\0') ? tmp : "/tmp");
    if (mkdtemp(conf_dir) == NULL)
        bench_die("mkdtemp for dat.conf");
    snprintf(conf_path, sizeof(conf_path), "%s/dat.conf", conf_dir);
    f = fopen(conf_path, "w");
    if (f == NULL)
        bench_die("cannot write dat.conf");
    fprintf(f, "%s u1.2 nonthreadsafe default %s bench.1.0 \"\" \"\"\n", STUB_IA_NAME, stub_lib);
    if (fclose(f) != 0)
        bench_die("cannot write dat.conf");
    setenv("DAT_OVERRIDE", conf_path, 1);
}

static void remove_conf(void)
{
    unlink(conf_path);
    rmdir(conf_dir);
}

int main(int argc, char **argv)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    double t0 = bench_now();

    if (argc != 2 || argv[1][0] != '/') {
        fprintf(stderr, "usage: %s /abs/path/libstub_provider.so\n", argv[0]);
        return 2;
    }
    if (access(argv[1], R_OK) != 0)
        bench_die("stub provider library not readable");
    /* The registry reads dat.conf once, at the first registry call. */
    write_conf(argv[1]);
    unsetenv("STUB_LOG"); /* the stub provider must not write a log while timed */
    BENCH_OK("dat_ia_open(tcp0)", dat_ia_open("tcp0", 64, &async_evd, &ia));
    remove_conf();

    printf("libdat local hot paths: median of %d repetitions; ratio = figure / baseline;\n"
           "targets are informative (exit status reflects only return-code checks)\n\n",
           BENCH_REPS);
    table_header();
    bench_handles(ia);
    bench_evd_pair(ia);
    bench_lmr(ia);
    bench_dispatch(STUB_IA_NAME);
    bench_timeouts(ia);
    bench_pingpong(ia);

    BENCH_OK("dat_ia_close", dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    printf("\nall checked return codes as expected; %.1f s\n", bench_now() - t0);
    return 0;
}
