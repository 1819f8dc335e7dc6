/*
 * Threads, second half (issue 9, "Threads"): waits and frees racing, on
 * both sides of a PAIR over loopback. Each case repeats its race many
 * times on fresh endpoints and asserts exact outcomes:
 *
 * - a thread blocked in dat_evd_wait on a receive EVD while the EP is
 *   freed, disconnected abruptly, or disconnected by the peer: freed, no
 *   event is owed (semantics-ep.md §3.3 rule 5) and freeing the EVD then
 *   ends the wait with DAT_ABORT; disconnected, every posted receive
 *   comes back FLUSHED exactly once (§3.3 rule 1, EDI-03);
 * - threads blocked on the DTO and connection EVDs of an IA closed
 *   abruptly return DAT_ABORT within 1 s (EWT-17, IAC-10);
 * - a dat_cno_wait on a CNO whose only EVD (a DTO EVD) is freed after its
 *   EP returns with a NULL EVD (EFR-08);
 * - two threads posting Sends while the EP is disconnected abruptly:
 *   every post is DAT_SUCCESS or DAT_INVALID_STATE (DISCONNECT_PENDING),
 *   every successful post completes exactly once, in order (§3.3, §3.4);
 *   everything is freed and the IA closes gracefully; the same while the
 *   peer disconnects (every post succeeds) and while the EP is freed;
 * - two threads posting on one EP, one with SUPPRESS: only the other's
 *   completions come (per-post flags stay with their own post);
 * - two threads racing dat_evd_dequeue on one DTO EVD while completions
 *   arrive: each completion is taken exactly once (EDQ-08), data checked.
 *
 * Shared state between the test's own threads is guarded by pthread
 * mutexes (no bare atomics), so helgrind and drd can check this program
 * (make helgrind).
 */
#include <pthread.h>
#include <sched.h>

#include "dto_helpers.h"

#ifndef ITER
#define ITER 30 /* races per case */
#endif
#define NRECV 8     /* receives posted on each raced EP */
#define MSG 64      /* message and receive size */
#define NPOSTER 2   /* poster threads */
#define NPOST 200   /* sends per poster per race */
#define NMSG 500    /* messages per EDQ-08 round */
#define ROUNDS 20   /* EDQ-08 rounds */
#define BIGQ 1024   /* queue length of the EVDs that take a whole race */
#define MAGIC 0x52414345u

#define DISCPENDING_STATE                                                                      \
    ((DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_STATE | DAT_INVALID_STATE_EP_DISCPENDING))
#define FREED_EP ((DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP))

static DAT_EP_ATTR race_attr(DAT_COUNT nrecv, DAT_COUNT nreq)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = 1 << 16;
    a.max_rdma_size = 1 << 16;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.max_recv_dtos = nrecv;
    a.max_request_dtos = nreq;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = 1;
    return a;
}

/* The message of a Send: who posted it, in which race. */
struct msg {
    uint32_t magic, thread, seq, iter;
};

static void put_msg(unsigned char *b, uint32_t thread, uint32_t seq, uint32_t iter)
{
    struct msg m = {MAGIC, thread, seq, iter};
    memset(b, 0, MSG);
    memcpy(b, &m, sizeof(m));
}

static struct msg get_msg(const unsigned char *b)
{
    struct msg m;
    memcpy(&m, b, sizeof(m));
    return m;
}

/* ---- a thread in dat_evd_wait ------------------------------------------------ */

#define MAXEV 64

/*
 * Waits on `evd` (timeout `to` per call) until `want` events came (want < 0:
 * until a wait fails). Results are read after the join.
 */
struct coll {
    pthread_t th;
    DAT_EVD_HANDLE evd;
    DAT_TIMEOUT to;
    int want;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, done;
    int n;
    DAT_EVENT ev[MAXEV];
    DAT_RETURN last;
    double t_ret;
};

/* Static: a waiter left blocked by a failed case never sees a dead frame. */
static struct coll C[3];

static void *coll_main(void *arg)
{
    struct coll *c = arg;
    DAT_RETURN r = DAT_SUCCESS;
    int n = 0;
    pthread_mutex_lock(&c->mu);
    c->started = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    while (c->want < 0 || n < c->want) {
        DAT_EVENT ev;
        DAT_COUNT nmore = 0;
        memset(&ev, 0, sizeof(ev));
        r = dat_evd_wait(c->evd, c->to, 1, &ev, &nmore);
        if (r != DAT_SUCCESS)
            break;
        if (n < MAXEV)
            c->ev[n] = ev;
        n++;
    }
    double t = ctest_now();
    pthread_mutex_lock(&c->mu);
    c->n = n;
    c->last = r;
    c->t_ret = t;
    c->done = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static int coll_start(struct coll *c, DAT_EVD_HANDLE evd, DAT_TIMEOUT to, int want)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->evd = evd;
    c->to = to;
    c->want = want;
    if (pthread_create(&c->th, NULL, coll_main, c) != 0)
        return 0;
    pthread_mutex_lock(&c->mu);
    while (!c->started)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    return 1;
}

static int coll_is_done(struct coll *c)
{
    pthread_mutex_lock(&c->mu);
    int d = c->done;
    pthread_mutex_unlock(&c->mu);
    return d;
}

/* Waits at most `secs` for the thread to end; joins it if it did. */
static int coll_finish(struct coll *c, double secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(secs * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&c->mu);
    while (!c->done)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
            break;
    int d = c->done;
    pthread_mutex_unlock(&c->mu);
    if (!d) {
        fprintf(stderr, "    %sthe waiter on %p did not return within %.1f s\n", side(),
                (void *)c->evd, secs);
        ctest_failures++;
        return 0;
    }
    pthread_join(c->th, NULL);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    return 1;
}

/*
 * Returns once the waiter owns its EVD: a probe dequeue then gives
 * DAT_INVALID_STATE (semantics-core.md §1.8). The EVD must be empty.
 */
static int owned(struct coll *c)
{
    double end = ctest_now() + 5.0;
    while (ctest_now() < end && !coll_is_done(c)) {
        DAT_EVENT ev;
        DAT_RETURN r = dat_evd_dequeue(c->evd, &ev);
        if (DAT_GET_TYPE(r) == DAT_INVALID_STATE)
            return 1;
        if (r == DAT_SUCCESS) {
            fprintf(stderr, "    %sprobe dequeue on %p took an event\n", side(), (void *)c->evd);
            ev_print(&ev);
            ctest_failures++;
            return 0;
        }
        ctest_sleep_ms(1);
    }
    fprintf(stderr, "    %sthe waiter on %p never blocked\n", side(), (void *)c->evd);
    ctest_failures++;
    return 0;
}

/* How a wait ended by teardown must end: `want`, or DAT_INVALID_HANDLE when
 * the thread got an event and called again after the EVD was gone. */
static void check_end(const char *file, int line, const struct coll *c, DAT_RETURN want)
{
    DAT_RETURN r = c->last;
    int ok = DAT_GET_TYPE(r) == DAT_GET_TYPE(want) && (r & DAT_CLASS_ERROR);
    if (!ok && c->n > 0 && DAT_GET_TYPE(r) == DAT_INVALID_HANDLE && (r & DAT_CLASS_ERROR))
        ok = 1;
    if (!ok) {
        fprintf(stderr, "    %s:%d: %sthe wait on %p ended with 0x%08x after %d events, want 0x%08x\n",
                file, line, side(), (void *)c->evd, (unsigned)r, c->n, (unsigned)want);
        ctest_failures++;
    }
}
#define CHECK_END(c, want) check_end(__FILE__, __LINE__, (c), (want))

/*
 * Every event the waiter got is a FLUSHED receive completion of `ep` on its
 * EVD with a cookie below `ncookies`, none twice; `exact`: all of them came.
 */
static void check_flushed(const char *file, int line, const struct coll *c, DAT_EP_HANDLE ep,
                          int ncookies, int exact)
{
    unsigned char seen[MAXEV] = {0};
    int n = c->n < MAXEV ? c->n : MAXEV;
    if (c->n > ncookies || (exact && c->n != ncookies)) {
        fprintf(stderr, "    %s:%d: %s%d completions on %p, want %s%d\n", file, line, side(), c->n,
                (void *)c->evd, exact ? "" : "at most ", ncookies);
        ctest_failures++;
    }
    for (int i = 0; i < n; i++) {
        const DAT_EVENT *ev = &c->ev[i];
        const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
        uint64_t k = d->user_cookie.as_64;
        if (ev->event_number != DAT_DTO_COMPLETION_EVENT || ev->evd_handle != c->evd ||
            d->ep_handle != ep || d->status != DAT_DTO_ERR_FLUSHED || k >= (uint64_t)ncookies ||
            seen[k]) {
            fprintf(stderr, "    %s:%d: %scompletion %d: want a FLUSHED receive of ep %p, a new "
                            "cookie below %d\n",
                    file, line, side(), i, (void *)ep, ncookies);
            ev_print(ev);
            ctest_failures++;
            continue;
        }
        seen[k] = 1;
    }
}
#define CHECK_FLUSHED(c, ep, n, exact) check_flushed(__FILE__, __LINE__, (c), (ep), (n), (exact))

/* Events a teardown may leave: FLUSHED DTOs, DISCONNECTED of `ep`. */
static void check_teardown_events(const struct coll *c, DAT_EP_HANDLE ep)
{
    int n = c->n < MAXEV ? c->n : MAXEV;
    for (int i = 0; i < n; i++) {
        const DAT_EVENT *ev = &c->ev[i];
        int ok = ev->event_number == DAT_DTO_COMPLETION_EVENT
                     ? ev->event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED &&
                           ev->event_data.dto_completion_event_data.ep_handle == ep
                     : ev->event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
                           ev->event_data.connect_event_data.ep_handle == ep;
        if (!ok || ev->evd_handle != c->evd) {
            fprintf(stderr, "    %sunexpected event during the close\n", side());
            ev_print(ev);
            ctest_failures++;
        }
    }
}

/*
 * After an EP was freed: nothing new for it on `conn` (§3.3 rule 5); at
 * most `maxdisc` DISCONNECTED events of it queued before the free.
 */
static void check_conn_after_free(DAT_EVD_HANDLE conn, DAT_EP_HANDLE ep, int maxdisc)
{
    DAT_EVENT ev;
    int n = 0;
    ctest_sleep_ms(5);
    while (dat_evd_dequeue(conn, &ev) == DAT_SUCCESS) {
        if (ev.event_number != DAT_CONNECTION_EVENT_DISCONNECTED ||
            ev.event_data.connect_event_data.ep_handle != ep || ++n > maxdisc) {
            fprintf(stderr, "    %sconnection EVD after the free: unexpected event\n", side());
            ev_print(&ev);
            ctest_failures++;
        }
    }
}

/* ---- the peer of the per-race connections ----------------------------------- */

/* srv_accept (dto_helpers.h) that says what went wrong. */
static int srv_take(struct pair *p, DAT_EP_HANDLE ep)
{
    DAT_EVENT ev;
    DAT_RETURN r = pair_wait(p->cr_evd, &ev);
    if (r != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
        fprintf(stderr, "    [server] waiting for a connection request: 0x%08x\n", (unsigned)r);
        if (r == DAT_SUCCESS)
            ev_print(&ev);
        return -1;
    }
    r = dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    [server] dat_cr_accept: 0x%08x\n", (unsigned)r);
        return -1;
    }
    r = pair_wait(p->conn_evd, &ev);
    if (r != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
        ev.event_data.connect_event_data.ep_handle != ep) {
        fprintf(stderr, "    [server] waiting for ESTABLISHED of %p: 0x%08x\n", (void *)ep,
                (unsigned)r);
        if (r == DAT_SUCCESS)
            ev_print(&ev);
        return -1;
    }
    return 0;
}

/*
 * Server half of the cases that race on a fresh client EP per iteration:
 * accepts each connection on a fresh EP; `peer_disc`: disconnects it
 * abruptly once the client says its waiter is blocked, otherwise waits for
 * the client to take it down. -1 when the pair is out of step.
 */
static int srv_iterations(struct pair *p, int iters, int peer_disc)
{
    DAT_EP_ATTR a = race_attr(NRECV, 8);
    for (int it = 0; it < iters; it++) {
        DAT_EP_HANDLE ep;
        if (dat_ep_create(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, &a, &ep) !=
                DAT_SUCCESS ||
            srv_take(p, ep) != 0 || pair_sync(p, 'e') != 0)
            return -1;
        if (peer_disc) {
            if (pair_sync(p, 'w') != 0)
                return -1;
            CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
            EXPECT_CONN(p->conn_evd, ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0);
        } else {
            EXPECT_GONE(p->conn_evd, ep);
        }
        CHECK_OK(dat_ep_free(ep));
        drain(p->recv_evd);
        drain(p->req_evd);
        if (pair_sync(p, 'n') != 0)
            return -1;
    }
    return 0;
}

/* Client: a receive EVD (with `cno`), an EP with NRECV receives (cookies
 * 0..NRECV-1) posted, connected. */
static int cli_setup(struct pair *p, const struct mr *m, DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *recv,
                     DAT_EP_HANDLE *ep)
{
    DAT_EP_ATTR a = race_attr(NRECV, 8);
    if (dat_evd_create(p->ia, 16, cno, DAT_EVD_DTO_FLAG, recv) != DAT_SUCCESS ||
        dat_ep_create(p->ia, p->pz, *recv, p->req_evd, p->conn_evd, &a, ep) != DAT_SUCCESS)
        return -1;
    for (int k = 0; k < NRECV; k++)
        if (recv1(*ep, m, (size_t)k * MSG, MSG, (uint64_t)k, 0) != DAT_SUCCESS)
            return -1;
    if (cli_connect(p, *ep, p->conn_evd) != 0)
        return -1;
    /* The server is established too (see pair_sync 'e' in srv_iterations):
     * a teardown now is not an aborted accept (ACCEPT_COMPLETION_ERROR). */
    return pair_sync(p, 'e');
}

/* Frees the fixture (and the given LMRs and EVDs) and closes the IA
 * gracefully: no reference may be left behind by the races. */
static void pair_close(struct pair *p, struct mr *m, int nm, DAT_EVD_HANDLE *evds, int ne)
{
    if (p->ep != DAT_HANDLE_NULL)
        CHECK_OK(dat_ep_free(p->ep));
    for (int i = 0; i < nm; i++)
        CHECK_OK(dat_lmr_free(m[i].h));
    for (int i = 0; i < ne; i++)
        CHECK_OK(dat_evd_free(evds[i]));
    if (p->server)
        CHECK_OK(dat_psp_free(p->psp));
    CHECK_OK(dat_evd_free(p->cr_evd));
    CHECK_OK(dat_evd_free(p->conn_evd));
    CHECK_OK(dat_evd_free(p->req_evd));
    CHECK_OK(dat_evd_free(p->recv_evd));
    CHECK_OK(dat_pz_free(p->pz));
    CHECK_OK(dat_ia_close(p->ia, DAT_CLOSE_GRACEFUL_FLAG));
}

/* ---- waits and frees ---------------------------------------------------------- */

/*
 * A thread waits (INFINITE) on the receive EVD of a connected EP with
 * receives posted; the EP is freed (odd races: right after an abrupt
 * disconnect, so flushes race the free). No event is owed for a freed EP
 * (§3.3 rule 5): whatever came is a FLUSHED receive, each cookie once.
 * Then the EVD is freed and the waiter returns DAT_ABORT within 1 s.
 */
TEST(RACE_ep_free_during_recv_wait)
{
    struct pair p;
    struct mr m;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, NRECV * MSG, LRW, &m) == DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, srv_iterations(&p, ITER, 0) == 0);
    } else {
        for (int it = 0; it < ITER; it++) {
            DAT_EVD_HANDLE recv;
            DAT_EP_HANDLE ep;
            struct coll *c = &C[0];
            PREQUIRE(&p, cli_setup(&p, &m, DAT_HANDLE_NULL, &recv, &ep) == 0);
            PREQUIRE(&p, coll_start(c, recv, DAT_TIMEOUT_INFINITE, -1));
            PREQUIRE(&p, owned(c));
            if (it & 1)
                CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
            CHECK_OK(dat_ep_free(ep));
            ctest_sleep_ms(it % 3);
            double t0 = ctest_now();
            CHECK_OK(dat_evd_free(recv));
            PREQUIRE(&p, coll_finish(c, 5.0));
            CHECK(c->t_ret - t0 <= 1.0);
            CHECK_END(c, DAT_ABORT);
            CHECK_FLUSHED(c, ep, NRECV, 0);
            check_conn_after_free(p.conn_evd, ep, it & 1);
            CHECK_TYPE(dat_ep_free(ep), DAT_INVALID_HANDLE);
            PSYNC(&p, 'n');
        }
    }
    pair_close(&p, &m, 1, NULL, 0);
    pair_finish(&p);
}

/* PREQUIRE for helpers that return int: -1 after the pair was aborted. */
#define HREQUIRE(p, cond)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "    %s:%d: %sREQUIRE failed: %s\n", __FILE__, __LINE__, side(),   \
                    #cond);                                                                    \
            ctest_failures++;                                                                  \
            pair_abort(p);                                                                     \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

/* Client half of the disconnect races: the waiter (10 s per wait) must
 * get exactly the NRECV receives back FLUSHED (§3.3 rule 1, EDI-03). -1
 * when the pair was aborted. */
static int disconnect_race(struct pair *p, const struct mr *m, int peer)
{
    for (int it = 0; it < ITER; it++) {
        DAT_EVD_HANDLE recv;
        DAT_EP_HANDLE ep;
        struct coll *c = &C[0];
        HREQUIRE(p, cli_setup(p, m, DAT_HANDLE_NULL, &recv, &ep) == 0);
        HREQUIRE(p, coll_start(c, recv, PAIR_WAIT_US, NRECV));
        HREQUIRE(p, owned(c));
        if (peer)
            HREQUIRE(p, pair_sync(p, 'w') == 0);
        else
            CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
        HREQUIRE(p, coll_finish(c, 15.0));
        CHECK_RET(c->last, DAT_SUCCESS);
        CHECK_FLUSHED(c, ep, NRECV, 1);
        if (peer)
            EXPECT_GONE(p->conn_evd, ep);
        else
            EXPECT_CONN(p->conn_evd, ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0);
        CHECK(ep_state(ep) == DAT_EP_STATE_DISCONNECTED);
        expect_none_at(__FILE__, __LINE__, recv, 5);
        CHECK_OK(dat_ep_free(ep));
        CHECK_OK(dat_evd_free(recv));
        HREQUIRE(p, pair_sync(p, 'n') == 0);
    }
    return 0;
}

/* Both sides of a disconnect race: `peer` 0, the client's EP disconnects
 * abruptly; 1, the server's does. */
static void disconnect_race_case(int peer)
{
    struct pair p;
    struct mr m;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, NRECV * MSG, LRW, &m) == DAT_SUCCESS);
    if (p.server)
        PREQUIRE(&p, srv_iterations(&p, ITER, peer) == 0);
    else if (disconnect_race(&p, &m, peer) != 0)
        return;
    pair_close(&p, &m, 1, NULL, 0);
    pair_finish(&p);
}

/* A thread waits on the receive EVD; the EP is disconnected abruptly. */
TEST(RACE_ep_disconnect_abrupt_during_recv_wait)
{
    disconnect_race_case(0);
}

/* A thread waits on the receive EVD; the peer disconnects abruptly. */
TEST(RACE_peer_disconnect_during_recv_wait)
{
    disconnect_race_case(1);
}

/*
 * EWT-17 / IAC-10 on a live connection: threads blocked (INFINITE) on the
 * receive, request and connection EVDs of a second IA whose EP is
 * connected with receives posted; dat_ia_close(ABRUPT) → DAT_SUCCESS and
 * every waiter returns DAT_ABORT within 1 s. (No event is guaranteed
 * during the teardown; any that comes is a flush or the DISCONNECTED.)
 */
TEST(EWT_17_ia_close_abrupt_aborts_dto_and_conn_waiters)
{
    struct pair p;
    struct mr m;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, NRECV * MSG, LRW, &m) == DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, srv_iterations(&p, ITER, 0) == 0);
    } else {
        DAT_EP_ATTR a = race_attr(NRECV, 8);
        for (int it = 0; it < ITER; it++) {
            DAT_IA_HANDLE ia;
            DAT_EVD_HANDLE aevd, recv, req, conn;
            DAT_PZ_HANDLE pz;
            DAT_EP_HANDLE ep;
            struct mr m2;
            PREQUIRE(&p, ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
            PREQUIRE(&p, dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv) ==
                             DAT_SUCCESS);
            PREQUIRE(&p, dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req) ==
                             DAT_SUCCESS);
            PREQUIRE(&p, dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
                                        &conn) == DAT_SUCCESS);
            PREQUIRE(&p, dat_pz_create(ia, &pz) == DAT_SUCCESS);
            PREQUIRE(&p, mr_over(ia, pz, m.buf, NRECV * MSG, LRW, &m2) == DAT_SUCCESS);
            PREQUIRE(&p, dat_ep_create(ia, pz, recv, req, conn, &a, &ep) == DAT_SUCCESS);
            for (int k = 0; k < NRECV; k++)
                PREQUIRE(&p, recv1(ep, &m2, (size_t)k * MSG, MSG, (uint64_t)k, 0) == DAT_SUCCESS);
            PREQUIRE(&p, cli_connect(&p, ep, conn) == 0);
            PSYNC(&p, 'e');
            DAT_EVD_HANDLE evds[3] = {recv, req, conn};
            for (int i = 0; i < 3; i++) {
                PREQUIRE(&p, coll_start(&C[i], evds[i], DAT_TIMEOUT_INFINITE, -1));
                PREQUIRE(&p, owned(&C[i]));
            }
            double t0 = ctest_now();
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
            for (int i = 0; i < 3; i++) {
                PREQUIRE(&p, coll_finish(&C[i], 5.0));
                CHECK(C[i].t_ret - t0 <= 1.0);
                CHECK_END(&C[i], DAT_ABORT);
                check_teardown_events(&C[i], ep);
            }
            CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
            PSYNC(&p, 'n');
        }
    }
    pair_close(&p, &m, 1, NULL, 0);
    pair_finish(&p);
}

/* ---- a thread in dat_cno_wait ---------------------------------------------------- */

/*
 * Waits on the CNO (2 s per call). A notification (the hint must be its
 * one EVD) is answered by draining the EVD: only FLUSHED receives of the
 * EP, each cookie once. Ends when a wait returns with a NULL EVD.
 */
struct cnow {
    pthread_t th;
    DAT_CNO_HANDLE cno;
    DAT_EVD_HANDLE evd;
    DAT_EP_HANDLE ep;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int in_wait, done;
    double t_call, t_ret;
    DAT_RETURN last;
    DAT_EVD_HANDLE last_evd;
    int calls, nev, bad;
};

static struct cnow CW;

static void *cnow_main(void *arg)
{
    struct cnow *w = arg;
    unsigned char seen[NRECV] = {0};
    for (;;) {
        DAT_EVD_HANDLE e = BOGUS_EVD;
        pthread_mutex_lock(&w->mu);
        w->in_wait = 1;
        w->calls++;
        w->t_call = ctest_now();
        pthread_cond_broadcast(&w->cv);
        int calls = w->calls;
        pthread_mutex_unlock(&w->mu);
        DAT_RETURN r = dat_cno_wait(w->cno, 2000000, &e);
        double t = ctest_now();
        if (e == DAT_HANDLE_NULL || r != DAT_SUCCESS || e != w->evd || calls > 1000) {
            if (e != DAT_HANDLE_NULL && (r != DAT_SUCCESS || e != w->evd)) {
                fprintf(stderr, "    dat_cno_wait returned 0x%08x with EVD %p (want %p)\n",
                        (unsigned)r, (void *)e, (void *)w->evd);
                w->bad++;
            }
            if (calls > 1000) {
                fprintf(stderr, "    dat_cno_wait keeps returning\n");
                w->bad++;
            }
            pthread_mutex_lock(&w->mu);
            w->last = r;
            w->last_evd = e;
            w->t_ret = t;
            w->done = 1;
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
            return NULL;
        }
        DAT_EVENT ev;
        DAT_RETURN r2;
        while ((r2 = dat_evd_dequeue(w->evd, &ev)) == DAT_SUCCESS) {
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            uint64_t k = d->user_cookie.as_64;
            w->nev++;
            if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d->ep_handle != w->ep ||
                d->status != DAT_DTO_ERR_FLUSHED || k >= NRECV || seen[k]) {
                fprintf(stderr, "    CNO waiter: unexpected event\n");
                ev_print(&ev);
                w->bad++;
                continue;
            }
            seen[k] = 1;
        }
        /* The EVD may be freed under the drain. */
        if (DAT_GET_TYPE(r2) != DAT_QUEUE_EMPTY && DAT_GET_TYPE(r2) != DAT_INVALID_HANDLE) {
            fprintf(stderr, "    CNO waiter: dat_evd_dequeue returned 0x%08x\n", (unsigned)r2);
            w->bad++;
        }
    }
}

/*
 * EFR-08 with a DTO EVD: a CNO whose only EVD is the receive EVD of a
 * connected EP with receives posted; a thread in dat_cno_wait. The EP is
 * freed (odd races: after an abrupt disconnect), then the EVD: the CNO
 * waiter returns with a NULL EVD (within 1 s when it was already waiting),
 * and the CNO can then be freed.
 */
TEST(EFR_08_cno_waiter_released_when_dto_evd_freed)
{
    struct pair p;
    struct mr m;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, NRECV * MSG, LRW, &m) == DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, srv_iterations(&p, ITER, 0) == 0);
    } else {
        int late = 0;
        for (int it = 0; it < ITER; it++) {
            DAT_CNO_HANDLE cno;
            DAT_EVD_HANDLE recv;
            DAT_EP_HANDLE ep;
            struct cnow *w = &CW;
            PREQUIRE(&p, dat_cno_create(p.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
            PREQUIRE(&p, cli_setup(&p, &m, cno, &recv, &ep) == 0);
            memset(w, 0, sizeof(*w));
            pthread_mutex_init(&w->mu, NULL);
            pthread_cond_init(&w->cv, NULL);
            w->cno = cno;
            w->evd = recv;
            w->ep = ep;
            PREQUIRE(&p, pthread_create(&w->th, NULL, cnow_main, w) == 0);
            pthread_mutex_lock(&w->mu);
            while (!w->in_wait)
                pthread_cond_wait(&w->cv, &w->mu);
            pthread_mutex_unlock(&w->mu);
            ctest_sleep_ms(2);
            if (it & 1)
                CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
            CHECK_OK(dat_ep_free(ep));
            ctest_sleep_ms(it % 3);
            double t0 = ctest_now();
            CHECK_OK(dat_evd_free(recv));
            /* Wait for the thread (at most 5 s: one more 2 s wait if it
             * re-entered just as the EVD went). */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 5;
            pthread_mutex_lock(&w->mu);
            while (!w->done)
                if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
                    break;
            int done = w->done;
            pthread_mutex_unlock(&w->mu);
            if (!done) {
                fprintf(stderr, "    the CNO waiter did not return\n");
                ctest_failures++;
                pair_abort(&p);
                return;
            }
            pthread_join(w->th, NULL);
            pthread_cond_destroy(&w->cv);
            pthread_mutex_destroy(&w->mu);
            CHECK(w->last_evd == DAT_HANDLE_NULL);
            CHECK_TYPE(w->last, DAT_QUEUE_EMPTY);
            CHECK(w->bad == 0);
            if (getenv("CTEST_VERBOSE"))
                fprintf(stderr, "    race %d: %d CNO waits, %d events, last wait began %.3f s before the free, returned %.3f s after\n", it, w->calls, w->nev, t0 - w->t_call, w->t_ret - t0);
            /* A wait blocked before the free is released at once; one that
             * began just as the EVD went runs to its 2 s timeout (a CNO
             * with no EVD left): tolerated, and counted. */
            if (w->t_ret - t0 > 1.0) {
                if (w->t_call < t0 - 0.001) {
                    fprintf(stderr, "    race %d: a blocked CNO wait was not released\n", it);
                    ctest_failures++;
                } else {
                    late++;
                }
            }
            CHECK_OK(dat_cno_free(cno));
            check_conn_after_free(p.conn_evd, ep, it & 1);
            PSYNC(&p, 'n');
        }
        if (late > ITER / 2) {
            fprintf(stderr, "    the CNO waiter re-entered late in %d of %d races\n", late, ITER);
            ctest_failures++;
        }
    }
    pair_close(&p, &m, 1, NULL, 0);
    pair_finish(&p);
}

/* ---- posts racing an abrupt disconnect ------------------------------------------ */

enum { RACE_LOCAL, RACE_FREE, RACE_PEER }; /* who ends the connection */

struct postrace {
    DAT_EP_HANDLE ep;
    DAT_EVD_HANDLE req;
    const struct mr *m;
    uint32_t iter;
    int mode; /* RACE_LOCAL, RACE_FREE, RACE_PEER (below) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int posted;  /* post calls made, all posters */
    int trigger; /* the disconnect goes when `posted` reaches it */
    int expect;  /* -1 while posting; then the number of successful posts */
    double expect_at;
    /* per poster, read after the join */
    unsigned char ok[NPOSTER][NPOST];
    int nok[NPOSTER], nstate[NPOSTER], nhandle[NPOSTER];
    DAT_RETURN bad[NPOSTER];
    /* the reaper, read after the join */
    DAT_EVENT ev[NPOSTER * NPOST];
    int nev, extra;
    DAT_RETURN reap_err;
};

static struct postrace PR;

struct poster {
    pthread_t th;
    int t;
};

static void *poster_main(void *arg)
{
    struct poster *po = arg;
    struct postrace *s = &PR;
    int t = po->t;
    for (int k = 0; k < NPOST; k++) {
        size_t off = ((size_t)t * NPOST + (size_t)k) * MSG;
        put_msg(s->m->buf + off, (uint32_t)t, (uint32_t)k, s->iter);
        DAT_RETURN r = send1(s->ep, s->m, off, MSG, ((uint64_t)t << 32) | (uint64_t)k, 0);
        if (r == DAT_SUCCESS) {
            s->ok[t][k] = 1;
            s->nok[t]++;
        } else if (s->mode == RACE_LOCAL && r == DISCPENDING_STATE) {
            s->nstate[t]++;
        } else if (s->mode == RACE_FREE && r == FREED_EP) {
            s->nhandle[t]++;
        } else if (s->bad[t] == DAT_SUCCESS) {
            s->bad[t] = r;
        }
        pthread_mutex_lock(&s->mu);
        if (++s->posted == s->trigger)
            pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static void *reaper_main(void *arg)
{
    struct postrace *s = arg;
    for (;;) {
        DAT_EVENT ev;
        DAT_COUNT nmore = 0;
        DAT_RETURN r = dat_evd_wait(s->req, 100000, 1, &ev, &nmore);
        if (r == DAT_SUCCESS) {
            if (s->nev < NPOSTER * NPOST)
                s->ev[s->nev++] = ev;
            else
                s->extra++;
        } else if (DAT_GET_TYPE(r) != DAT_TIMEOUT_EXPIRED) {
            s->reap_err = r;
            return NULL;
        }
        pthread_mutex_lock(&s->mu);
        int expect = s->expect;
        double at = s->expect_at;
        pthread_mutex_unlock(&s->mu);
        if (expect >= 0 && s->mode == RACE_FREE && r != DAT_SUCCESS)
            return NULL; /* nothing more comes for a freed EP */
        if (expect >= 0 && (s->nev + s->extra >= expect || ctest_now() > at + 10.0))
            return NULL;
    }
}

/*
 * Two threads post Sends in a loop on one connected EP while the main
 * thread disconnects it abruptly after a varying number of posts (a third
 * thread reaps the request EVD meanwhile). Every post returns DAT_SUCCESS
 * or DAT_INVALID_STATE/DISCPENDING (§1.2: DISCONNECT_PENDING refuses, a
 * DISCONNECTED EP accepts and flushes); every successful post completes
 * exactly once, SUCCESS or FLUSHED, each poster's in its posting order and
 * no SUCCESS after the first FLUSHED (§3.3 rule 1, §3.4). The server
 * checks that every receive completes once, in order, with intact data.
 * Everything is freed at the end and both IAs close gracefully.
 */
static int post_race(int mode)
{
    int freeing = mode == RACE_FREE;
    struct pair p;
    struct mr m;
    DAT_EVD_HANDLE big;
    if (dpair_start(&p) != 0) {
        fprintf(stderr, "    pair setup failed\n");
        ctest_failures++;
        return -1;
    }
    HREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)NPOSTER * NPOST * MSG, LRW, &m) == DAT_SUCCESS);
    HREQUIRE(&p, dat_evd_create(p.ia, BIGQ, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &big) ==
                     DAT_SUCCESS);
    if (p.server) {
        DAT_EP_ATTR a = race_attr(NPOSTER * NPOST, 8);
        for (int it = 0; it < ITER; it++) {
            DAT_EP_HANDLE ep;
            int next[NPOSTER] = {0}, flushed = 0;
            HREQUIRE(&p, dat_ep_create(p.ia, p.pz, big, p.req_evd, p.conn_evd, &a, &ep) ==
                             DAT_SUCCESS);
            for (int j = 0; j < NPOSTER * NPOST; j++)
                HREQUIRE(&p, recv1(ep, &m, (size_t)j * MSG, MSG, (uint64_t)j, 0) == DAT_SUCCESS);
            HREQUIRE(&p, srv_take(&p, ep) == 0);
            HREQUIRE(&p, pair_sync(&p, 'e') == 0);
            if (mode == RACE_PEER) {
                char x = 0;
                HREQUIRE(&p, pair_hear(&p, &x, 1) == 0 && x == 'x');
                CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
                EXPECT_CONN(p.conn_evd, ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0);
            } else {
                EXPECT_GONE(p.conn_evd, ep);
            }
            for (int j = 0; j < NPOSTER * NPOST; j++) {
                DAT_EVENT ev;
                if (!GET_EV(big, &ev))
                    break;
                const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
                if (!check_dto_ev_at(__FILE__, __LINE__, &ev, big, ep, (uint64_t)j,
                                     ST_SUCCESS_OR_FLUSH, MSG))
                    break;
                if (d->status == DAT_DTO_ERR_FLUSHED) {
                    flushed = 1;
                    continue;
                }
                ctest_handover(m.buf + (size_t)j * MSG, MSG);
                struct msg g = get_msg(m.buf + (size_t)j * MSG);
                if (flushed || g.magic != MAGIC || g.thread >= NPOSTER || g.iter != (uint32_t)it ||
                    g.seq != (uint32_t)next[g.thread]) {
                    fprintf(stderr, "    [server] receive %d: %s, message (%x, %u, %u, %u), "
                                    "want seq %d\n",
                            j, flushed ? "a SUCCESS after a FLUSHED" : "wrong message",
                            (unsigned)g.magic, (unsigned)g.thread, (unsigned)g.seq,
                            (unsigned)g.iter, g.thread < NPOSTER ? next[g.thread] : -1);
                    ctest_failures++;
                    break;
                }
                next[g.thread]++;
            }
            expect_none_at(__FILE__, __LINE__, big, 5);
            CHECK_OK(dat_ep_free(ep));
            drain(p.req_evd);
            HREQUIRE(&p, pair_sync(&p, 'n') == 0);
        }
    } else {
        DAT_EP_ATTR a = race_attr(1, NPOSTER * NPOST + 8);
        struct postrace *s = &PR;
        int dist_ok = 0, dist_state = 0, dist_handle = 0, dist_flushed = 0;
        for (int it = 0; it < ITER; it++) {
            DAT_EP_HANDLE ep;
            HREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, big, p.conn_evd, &a, &ep) ==
                             DAT_SUCCESS);
            HREQUIRE(&p, cli_connect(&p, ep, p.conn_evd) == 0);
            /* Both sides established: a teardown is not an aborted accept. */
            HREQUIRE(&p, pair_sync(&p, 'e') == 0);
            /* The last iteration's Sends completed (reaped and joined):
             * their buffers are ours again (§3.6), whichever library
             * thread read them for the wire. */
            ctest_handover(m.buf, (size_t)NPOSTER * NPOST * MSG);
            memset(s, 0, sizeof(*s));
            pthread_mutex_init(&s->mu, NULL);
            pthread_cond_init(&s->cv, NULL);
            s->ep = ep;
            s->req = big;
            s->m = &m;
            s->iter = (uint32_t)it;
            s->mode = mode;
            s->expect = -1;
            s->trigger = 1 + (it * 97) % (NPOSTER * NPOST - 1);
            pthread_t reaper;
            struct poster po[NPOSTER];
            HREQUIRE(&p, pthread_create(&reaper, NULL, reaper_main, s) == 0);
            for (int t = 0; t < NPOSTER; t++) {
                po[t].t = t;
                HREQUIRE(&p, pthread_create(&po[t].th, NULL, poster_main, &po[t]) == 0);
            }
            pthread_mutex_lock(&s->mu);
            while (s->posted < s->trigger)
                pthread_cond_wait(&s->cv, &s->mu);
            pthread_mutex_unlock(&s->mu);
            if (freeing) {
                CHECK_OK(dat_ep_free(ep));
            } else if (mode == RACE_PEER) {
                HREQUIRE(&p, pair_tell(&p, "x", 1) == 0);
                EXPECT_GONE(p.conn_evd, ep);
            } else {
                CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
                EXPECT_CONN(p.conn_evd, ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0);
            }
            int total = 0;
            for (int t = 0; t < NPOSTER; t++) {
                pthread_join(po[t].th, NULL);
                total += s->nok[t];
                dist_ok += s->nok[t];
                dist_state += s->nstate[t];
                dist_handle += s->nhandle[t];
                if (s->bad[t] != DAT_SUCCESS) {
                    fprintf(stderr, "    poster %d: dat_ep_post_send returned 0x%08x\n", t,
                            (unsigned)s->bad[t]);
                    ctest_failures++;
                }
            }
            pthread_mutex_lock(&s->mu);
            s->expect = total;
            s->expect_at = ctest_now();
            pthread_mutex_unlock(&s->mu);
            pthread_join(reaper, NULL);
            pthread_cond_destroy(&s->cv);
            pthread_mutex_destroy(&s->mu);
            CHECK_RET(s->reap_err, DAT_SUCCESS);
            if (freeing ? s->nev + s->extra > total : s->nev + s->extra != total) {
                fprintf(stderr, "    race %d: %d successful posts, %d completions\n", it, total,
                        s->nev + s->extra);
                ctest_failures++;
            }
            expect_none_at(__FILE__, __LINE__, big, 5);
            /* Each successful post once, per poster in order, no SUCCESS
             * after the first FLUSHED. */
            int next[NPOSTER] = {0}, flushed = 0;
            unsigned char seen[NPOSTER][NPOST];
            memset(seen, 0, sizeof(seen));
            for (int i = 0; i < s->nev; i++) {
                const DAT_EVENT *ev = &s->ev[i];
                const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
                uint64_t c = d->user_cookie.as_64;
                int t = (int)(c >> 32), k = (int)(c & 0xffffffffu);
                if (!check_dto_ev_at(__FILE__, __LINE__, ev, big, ep, c, ST_SUCCESS_OR_FLUSH,
                                     MSG))
                    break;
                if (t >= NPOSTER || k >= NPOST || !s->ok[t][k] || seen[t][k] || k < next[t] ||
                    (flushed && d->status == DAT_DTO_SUCCESS)) {
                    fprintf(stderr, "    race %d: completion %d (poster %d, send %d, status %u) "
                                    "out of place\n",
                            it, i, t, k, (unsigned)d->status);
                    ctest_failures++;
                    break;
                }
                seen[t][k] = 1;
                next[t] = k + 1;
                flushed |= d->status == DAT_DTO_ERR_FLUSHED;
                dist_flushed += d->status == DAT_DTO_ERR_FLUSHED;
            }
            if (freeing) {
                check_conn_after_free(p.conn_evd, ep, 0);
            } else {
                CHECK(ep_state(ep) == DAT_EP_STATE_DISCONNECTED);
                CHECK_OK(dat_ep_free(ep));
            }
            HREQUIRE(&p, pair_sync(&p, 'n') == 0);
        }
        if (getenv("CTEST_VERBOSE"))
            fprintf(stderr,
                    "    posts: %d accepted (%d completed FLUSHED), %d DAT_INVALID_STATE, %d "
                    "DAT_INVALID_HANDLE\n",
                    dist_ok, dist_flushed, dist_state, dist_handle);
    }
    pair_close(&p, &m, 1, &big, 1);
    pair_finish(&p);
    return 0;
}

TEST(RACE_posts_during_abrupt_disconnect)
{
    post_race(RACE_LOCAL);
}

/*
 * The same with dat_ep_free instead of the disconnect (posting and freeing
 * one EP from two threads is the consumer's race, §0.7, but must not
 * corrupt anything): every post returns DAT_SUCCESS or DAT_INVALID_HANDLE
 * (freed before or during the call, also when its queue pair went down
 * under it); no
 * completion comes for a failed post, none twice, none after the free
 * (§3.3 rule 5); the server sees a per-poster prefix, in order, intact;
 * both IAs close gracefully.
 */
TEST(RACE_posts_during_ep_free)
{
    post_race(RACE_FREE);
}

/*
 * The same while the peer disconnects abruptly: the EP goes from CONNECTED
 * straight to DISCONNECTED (T25), so every post returns DAT_SUCCESS and
 * completes once (flushed when it came too late).
 */
TEST(RACE_posts_during_peer_disconnect)
{
    post_race(RACE_PEER);
}


/* ---- two posters, one EP, different flags ---------------------------------------- */

#define NMIX 500 /* sends per poster per round */
#define MIX_MARK 0x4d41524b4d41524bULL /* cookie of the client's signalled marker */

struct mixer {
    pthread_t th;
    DAT_EP_HANDLE ep;
    const struct mr *m;
    int t;
    uint32_t round;
    DAT_RETURN bad;
};

static struct mixer MX[2];

/* Poster 0 posts with DAT_COMPLETION_SUPPRESS_FLAG, poster 1 without. */
static void *mixer_main(void *arg)
{
    struct mixer *x = arg;
    for (int k = 0; k < NMIX; k++) {
        size_t off = ((size_t)x->t * NMIX + (size_t)k) * MSG;
        put_msg(x->m->buf + off, (uint32_t)x->t, (uint32_t)k, x->round);
        DAT_RETURN r = send1(x->ep, x->m, off, MSG, ((uint64_t)x->t << 32) | (uint64_t)k,
                             x->t == 0 ? DAT_COMPLETION_SUPPRESS_FLAG : DAT_COMPLETION_DEFAULT_FLAG);
        if (r != DAT_SUCCESS && x->bad == DAT_SUCCESS)
            x->bad = r;
    }
    return NULL;
}

/*
 * Two threads post Sends on the same EP at once, one with SUPPRESS and
 * one without (§3.5; everything internally thread-safe, §0.7 [REC]):
 * exactly the second poster's completions come, each once and in its
 * order; none of the SUPPRESS poster's. The server gets both posters'
 * messages, each poster's in order. (Before the EP serialised concurrent
 * posts, the remembered per-post flags could be paired with the other
 * thread's work request: a SUPPRESS post was reported and a normal one
 * lost.)
 * The request queue is exactly one round deep (plus the marker), so a
 * round also checks that the SUPPRESS poster's slots came back. The
 * client learns that they did the way a consumer must: a signalled
 * marker Send after both posters; its completion comes after every
 * earlier one (§3.3), so every earlier SUPPRESS post has completed and
 * given its slot back. (Without it the next round could start while
 * the peer has not yet acknowledged the last ones.)
 */
TEST(RACE_two_posters_one_ep_mixed_flags)
{
    struct pair p;
    struct mr m;
    DAT_EVD_HANDLE big;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)(2 * NMIX + 1) * MSG, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_evd_create(p.ia, BIGQ, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &big) ==
                     DAT_SUCCESS);
    DAT_EP_ATTR a = race_attr(2 * NMIX + 1, 2 * NMIX + 1);
    if (p.server) {
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, big, p.req_evd, p.conn_evd, &a, &p.ep) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, srv_take(&p, p.ep) == 0);
        for (int r = 0; r < ROUNDS / 2; r++) {
            int next[2] = {0, 0};
            for (int j = 0; j <= 2 * NMIX; j++)
                PREQUIRE(&p, recv1(p.ep, &m, (size_t)j * MSG, MSG, (uint64_t)j, 0) ==
                                 DAT_SUCCESS);
            PSYNC(&p, 'r');
            for (int j = 0; j < 2 * NMIX; j++) {
                DAT_EVENT ev;
                if (!GET_EV(big, &ev) ||
                    !check_dto_ev_at(__FILE__, __LINE__, &ev, big, p.ep, (uint64_t)j,
                                     DAT_DTO_SUCCESS, MSG))
                    break;
                ctest_handover(m.buf + (size_t)j * MSG, MSG);
                struct msg g = get_msg(m.buf + (size_t)j * MSG);
                if (g.magic != MAGIC || g.thread > 1 || g.iter != (uint32_t)r ||
                    g.seq != (uint32_t)next[g.thread]) {
                    fprintf(stderr, "    [server] round %d receive %d: message (%x, %u, %u, %u)\n",
                            r, j, (unsigned)g.magic, (unsigned)g.thread, (unsigned)g.seq,
                            (unsigned)g.iter);
                    ctest_failures++;
                    break;
                }
                next[g.thread]++;
            }
            DAT_EVENT ev;
            if (GET_EV(big, &ev) &&
                check_dto_ev_at(__FILE__, __LINE__, &ev, big, p.ep, (uint64_t)(2 * NMIX),
                                DAT_DTO_SUCCESS, MSG)) {
                ctest_handover(m.buf + (size_t)2 * NMIX * MSG, MSG);
                struct msg g = get_msg(m.buf + (size_t)2 * NMIX * MSG);
                CHECK(g.magic == MAGIC && g.thread == 2 && g.iter == (uint32_t)r);
            }
            PSYNC(&p, 'd');
        }
    } else {
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, big, p.conn_evd, &a, &p.ep) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, cli_connect(&p, p.ep, p.conn_evd) == 0);
        for (int r = 0; r < ROUNDS / 2; r++) {
            PSYNC(&p, 'r');
            /* The last round's Sends completed (the marker's completion
             * came after them): the buffer is ours again (§3.6). */
            ctest_handover(m.buf, (size_t)(2 * NMIX + 1) * MSG);
            for (int t = 0; t < 2; t++) {
                memset(&MX[t], 0, sizeof(MX[t]));
                MX[t].ep = p.ep;
                MX[t].m = &m;
                MX[t].t = t;
                MX[t].round = (uint32_t)r;
                PREQUIRE(&p, pthread_create(&MX[t].th, NULL, mixer_main, &MX[t]) == 0);
            }
            for (int t = 0; t < 2; t++) {
                pthread_join(MX[t].th, NULL);
                CHECK_RET(MX[t].bad, DAT_SUCCESS);
            }
            size_t mark = (size_t)2 * NMIX * MSG;
            put_msg(m.buf + mark, 2, 0, (uint32_t)r);
            CHECK_RET(send1(p.ep, &m, mark, MSG, MIX_MARK, DAT_COMPLETION_DEFAULT_FLAG),
                      DAT_SUCCESS);
            int n = 0;
            for (int k = 0; k < NMIX; k++) {
                DAT_EVENT ev;
                if (!GET_EV(big, &ev))
                    break;
                uint64_t c = ev.event_data.dto_completion_event_data.user_cookie.as_64;
                if (!check_dto_ev_at(__FILE__, __LINE__, &ev, big, p.ep, ((uint64_t)1 << 32) | (uint64_t)k,
                                     DAT_DTO_SUCCESS, MSG)) {
                    fprintf(stderr, "    round %d: completion %d is of poster %u, send %u\n", r,
                            k, (unsigned)(c >> 32), (unsigned)(c & 0xffffffffu));
                    break;
                }
                n++;
            }
            CHECK(n == NMIX);
            DAT_EVENT ev;
            if (GET_EV(big, &ev))
                check_dto_ev_at(__FILE__, __LINE__, &ev, big, p.ep, MIX_MARK, DAT_DTO_SUCCESS,
                                MSG);
            expect_none_at(__FILE__, __LINE__, big, 5);
            PSYNC(&p, 'd');
        }
    }
    PREQUIRE(&p, pair_disconnect(&p) == 0);
    PSYNC(&p, 'e');
    pair_close(&p, &m, 1, &big, 1);
    pair_finish(&p);
}

/* ---- two dequeuers -------------------------------------------------------------- */

struct dq_shared {
    DAT_EVD_HANDLE evd;
    pthread_mutex_t mu;
    int total, want;
};

struct dq {
    pthread_t th;
    struct dq_shared *s;
    int n;
    DAT_RETURN err;
    DAT_EVENT ev[NMSG];
};

static struct dq_shared DQS;
static struct dq DQ[2];

static void *dq_main(void *arg)
{
    struct dq *d = arg;
    struct dq_shared *s = d->s;
    double end = ctest_now() + 20.0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int total = s->total;
        pthread_mutex_unlock(&s->mu);
        if (total >= s->want)
            return NULL;
        if (ctest_now() > end) {
            d->err = DAT_TIMEOUT_EXPIRED;
            return NULL;
        }
        DAT_EVENT ev;
        DAT_RETURN r = dat_evd_dequeue(s->evd, &ev);
        if (r == DAT_SUCCESS) {
            if (d->n < NMSG)
                d->ev[d->n] = ev;
            d->n++;
            pthread_mutex_lock(&s->mu);
            s->total++;
            pthread_mutex_unlock(&s->mu);
        } else if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) {
            sched_yield();
        } else {
            d->err = r;
            return NULL;
        }
    }
}

static int dq_start(DAT_EVD_HANDLE evd, int want)
{
    memset(&DQS, 0, sizeof(DQS));
    pthread_mutex_init(&DQS.mu, NULL);
    DQS.evd = evd;
    DQS.want = want;
    for (int i = 0; i < 2; i++) {
        memset(&DQ[i], 0, sizeof(DQ[i]));
        DQ[i].s = &DQS;
        if (pthread_create(&DQ[i].th, NULL, dq_main, &DQ[i]) != 0)
            return 0;
    }
    return 1;
}

/* Joins both dequeuers (each gives up after 20 s) and checks that the
 * union of what they took is cookies 0..NMSG-1 exactly once, all SUCCESS
 * of `ep` on the EVD; `buf`: receive j holds message (0, j, round). */
static void dq_check(DAT_EP_HANDLE ep, const unsigned char *buf, uint32_t round)
{
    unsigned char seen[NMSG] = {0};
    int n = 0;
    for (int i = 0; i < 2; i++)
        pthread_join(DQ[i].th, NULL);
    pthread_mutex_destroy(&DQS.mu);
    for (int i = 0; i < 2; i++) {
        CHECK_RET(DQ[i].err, DAT_SUCCESS);
        n += DQ[i].n;
        for (int e = 0; e < DQ[i].n && e < NMSG; e++) {
            const DAT_EVENT *ev = &DQ[i].ev[e];
            uint64_t c = ev->event_data.dto_completion_event_data.user_cookie.as_64;
            if (!check_dto_ev_at(__FILE__, __LINE__, ev, DQS.evd, ep, c, DAT_DTO_SUCCESS, MSG))
                return;
            if (c >= NMSG || seen[c]) {
                fprintf(stderr, "    %sround %u: cookie %llu %s\n", side(), (unsigned)round,
                        (unsigned long long)c, c >= NMSG ? "never posted" : "taken twice");
                ctest_failures++;
                return;
            }
            seen[c] = 1;
            if (buf != NULL) {
                ctest_handover(buf + (size_t)c * MSG, MSG);
                struct msg g = get_msg(buf + (size_t)c * MSG);
                if (g.magic != MAGIC || g.thread != 0 || g.seq != (uint32_t)c || g.iter != round) {
                    fprintf(stderr, "    %sround %u: receive %llu holds (%x, %u, %u, %u)\n", side(),
                            (unsigned)round, (unsigned long long)c, (unsigned)g.magic,
                            (unsigned)g.thread, (unsigned)g.seq, (unsigned)g.iter);
                    ctest_failures++;
                    return;
                }
            }
        }
    }
    if (n != NMSG) {
        fprintf(stderr, "    %sround %u: %d completions taken, want %d\n", side(), (unsigned)round,
                n, NMSG);
        ctest_failures++;
    }
}

/*
 * EDQ-08 on DTO completions: the client posts NMSG Sends while two of its
 * threads race dat_evd_dequeue on the request EVD; two server threads do
 * the same on the receive EVD. Each completion is taken by exactly one
 * thread, none lost; every receive holds its message.
 */
TEST(EDQ_08_dto_two_dequeuers_each_completion_once)
{
    struct pair p;
    struct mr m;
    DAT_EVD_HANDLE big;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)NMSG * MSG, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_evd_create(p.ia, BIGQ, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &big) ==
                     DAT_SUCCESS);
    DAT_EP_ATTR a = race_attr(NMSG, NMSG);
    if (p.server) {
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, big, p.req_evd, p.conn_evd, &a, &p.ep) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, srv_take(&p, p.ep) == 0);
        for (int r = 0; r < ROUNDS; r++) {
            memset(m.buf, 0, (size_t)NMSG * MSG);
            for (int j = 0; j < NMSG; j++)
                PREQUIRE(&p, recv1(p.ep, &m, (size_t)j * MSG, MSG, (uint64_t)j, 0) ==
                                 DAT_SUCCESS);
            PREQUIRE(&p, dq_start(big, NMSG));
            PSYNC(&p, 'r');
            dq_check(p.ep, m.buf, (uint32_t)r);
            expect_none_at(__FILE__, __LINE__, big, 5);
            PSYNC(&p, 'd');
        }
    } else {
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, big, p.conn_evd, &a, &p.ep) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, cli_connect(&p, p.ep, p.conn_evd) == 0);
        for (int r = 0; r < ROUNDS; r++) {
            for (int k = 0; k < NMSG; k++)
                put_msg(m.buf + (size_t)k * MSG, 0, (uint32_t)k, (uint32_t)r);
            PREQUIRE(&p, dq_start(big, NMSG));
            PSYNC(&p, 'r');
            for (int k = 0; k < NMSG; k++)
                CHECK_OK(send1(p.ep, &m, (size_t)k * MSG, MSG, (uint64_t)k, 0));
            dq_check(p.ep, NULL, (uint32_t)r);
            expect_none_at(__FILE__, __LINE__, big, 5);
            PSYNC(&p, 'd');
        }
    }
    PREQUIRE(&p, pair_disconnect(&p) == 0);
    PSYNC(&p, 'e');
    pair_close(&p, &m, 1, &big, 1);
    pair_finish(&p);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
