/*
 * verbs_calls: the DAT layer's cost over raw verbs on one device, call by
 * call, measured so that both see the same machine at the same moment.
 *
 * One process opens two connections on the device at ADDRESS: one of raw
 * verbs (librdmacm, libibverbs) and one of DAT (the IA IA_NAME, whose
 * address is ADDRESS). One thread drives both ends of each in lock step,
 * an 8-byte Send/Recv ping-pong: A posts a Send; B polls its CQ/EVD until
 * the receive completes, posts a receive and the echo; A polls until its
 * receive completes and posts a receive. Raw and DAT alternate in chunks
 * of CHUNK round trips, so that whatever the machine does (a software
 * device's system calls, TCG, a neighbour's steal time) falls on both
 * alike; every pair of chunks gives a ratio of median round trips, and the
 * median of those ratios is the DAT layer's cost. Every call is timed
 * with the time-stamp counter; the tables give, per kind of call, the
 * median and 90th percentile in nanoseconds and the time per round trip.
 *
 * Both sides do the same work: every Send signalled, a poll of one
 * completion at a time (raw: ibv_poll_cq of the queue pair's one CQ; DAT:
 * dat_evd_dequeue of the EP's one EVD for both directions), the Send
 * completions reaped outside the timed round trips.
 *
 *   verbs_calls ADDRESS IA_NAME [PAIRS [CHUNK]]   (defaults 40 and 500)
 *   verbs_calls count IA_NAME [N]
 *       no connection: a receive posted on an unconnected EP, the dequeue
 *       of its completion and an empty dequeue, N times (count_loop, for
 *       callgrind; only the tests' stub device completes a receive
 *       without a message), then N dequeues of the empty EVD (empty_loop)
 * Exit status 0 when every call succeeded and every message came back
 * intact, 1 otherwise. tests/guest/verbs-calls.sh runs it on rxe and siw.
 */
#define _GNU_SOURCE 1
#include <dat/udat.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#define LEN 8
#define WARMUP 500
#define WAIT_US 10000000u
#define COOKIE_SEND 0
#define COOKIE_RECV 1

enum { C_SEND, C_RECV, C_HIT, C_EMPTY, C_RTT, C_KINDS };
static const char *const kind_name[C_KINDS] = {"post_send", "post_recv", "poll (hit)",
                                               "poll (empty)", "round trip"};

/* Samples of one side (raw or DAT), in cycles. */
struct samples {
    uint64_t *v[C_KINDS];
    size_t n[C_KINDS], cap[C_KINDS];
};

static struct samples s_raw, s_dat, *cur;
static int recording;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("verbs_calls: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static inline uint64_t tsc(void)
{
    unsigned aux;
    return __rdtscp(&aux);
}

static inline void record(int kind, uint64_t cycles)
{
    if (!recording)
        return;
    struct samples *s = cur;
    if (s->n[kind] == s->cap[kind]) {
        s->cap[kind] = s->cap[kind] ? 2 * s->cap[kind] : 1u << 16;
        s->v[kind] = realloc(s->v[kind], s->cap[kind] * sizeof(uint64_t));
        if (s->v[kind] == NULL)
            die("out of memory");
    }
    s->v[kind][s->n[kind]++] = cycles;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Nanoseconds per TSC cycle, measured against CLOCK_MONOTONIC. */
static double ns_per_cycle(void)
{
    double t0 = now();
    uint64_t c0 = tsc();
    while (now() - t0 < 0.2)
        ;
    return (now() - t0) * 1e9 / (double)(tsc() - c0);
}

/* Median of v[from..to) (sorts a copy). */
static uint64_t median_of(const uint64_t *v, size_t from, size_t to)
{
    size_t m = to - from;
    uint64_t *c = malloc(m * sizeof(uint64_t));
    if (c == NULL)
        die("out of memory");
    memcpy(c, v + from, m * sizeof(uint64_t));
    qsort(c, m, sizeof(uint64_t), cmp_u64);
    uint64_t r = c[m / 2];
    free(c);
    return r;
}

static void table(const char *what, struct samples *s, uint64_t trips, double k)
{
    printf("  %s\n  %-13s %10s %10s %10s %12s\n", what, "call", "count", "median ns", "p90 ns",
           "per trip ns");
    for (int i = 0; i < C_KINDS; i++) {
        size_t m = s->n[i];
        if (m == 0)
            continue;
        uint64_t total = 0;
        for (size_t j = 0; j < m; j++)
            total += s->v[i][j];
        uint64_t *c = malloc(m * sizeof(uint64_t));
        if (c == NULL)
            die("out of memory");
        memcpy(c, s->v[i], m * sizeof(uint64_t));
        qsort(c, m, sizeof(uint64_t), cmp_u64);
        printf("  %-13s %10zu %10.0f %10.0f %12.0f\n", kind_name[i], m, (double)c[m / 2] * k,
               (double)c[m * 9 / 10] * k, (double)total * k / (double)trips);
        free(c);
    }
}

/* ---- DAT ------------------------------------------------------------ */

#define OK(e)                                                                                 \
    do {                                                                                      \
        DAT_RETURN rc_ = (e);                                                                 \
        if (rc_ != DAT_SUCCESS)                                                               \
            die("%s: 0x%08x", #e, (unsigned)rc_);                                             \
    } while (0)

static struct {
    DAT_IA_HANDLE ia;
    DAT_EP_HANDLE a, b;
    DAT_EVD_HANDLE evd_a, evd_b;
    DAT_LMR_TRIPLET as, ar, br;
    unsigned char *buf;
    uint64_t sa, sb;
} D;

static DAT_EVENT *dat_next(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
    OK(dat_evd_wait(evd, WAIT_US, 1, ev, &(DAT_COUNT){0}));
    return ev;
}

/* Polls `evd` until a receive completes (Send completions are counted
 * off `*sends`). */
static void dat_poll_recv(DAT_EVD_HANDLE evd, uint64_t *sends)
{
    DAT_EVENT ev;
    for (uint64_t spins = 0;; spins++) {
        uint64_t t0 = tsc();
        DAT_RETURN rc = dat_evd_dequeue(evd, &ev);
        uint64_t t1 = tsc();
        if (DAT_GET_TYPE(rc) == DAT_QUEUE_EMPTY) {
            record(C_EMPTY, t1 - t0);
            if (spins > 100000000ull)
                die("dat: no completion");
            continue;
        }
        if (rc != DAT_SUCCESS)
            die("dat_evd_dequeue: 0x%08x", (unsigned)rc);
        record(C_HIT, t1 - t0);
        const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
        if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d->status != DAT_DTO_SUCCESS)
            die("dat: event 0x%x status %d", (unsigned)ev.event_number, (int)d->status);
        if (d->user_cookie.as_64 == COOKIE_RECV) {
            if (d->transfered_length != LEN)
                die("dat: received %llu bytes", (unsigned long long)d->transfered_length);
            return;
        }
        (*sends)--;
    }
}

static DAT_LMR_TRIPLET triplet(DAT_LMR_CONTEXT ctx, unsigned char *p)
{
    DAT_LMR_TRIPLET t = {.lmr_context = ctx, .virtual_address = (DAT_VADDR)(uintptr_t)p,
                         .segment_length = LEN};
    return t;
}

static void dat_setup(const char *ia_name)
{
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL, cr, conn_a, conn_b;
    DAT_PZ_HANDLE pz;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL qual;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    DAT_VLEN rlen;
    DAT_VADDR raddr;
    DAT_IA_ATTR ia_attr;
    DAT_EVENT ev;
    static unsigned char buf[4 * 64] __attribute__((aligned(64)));
    D.buf = buf;
    OK(dat_ia_open(ia_name, 8, &async, &D.ia));
    OK(dat_evd_create(D.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr));
    OK(dat_evd_create(D.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_a));
    OK(dat_evd_create(D.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_b));
    OK(dat_evd_create(D.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &D.evd_a));
    OK(dat_evd_create(D.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &D.evd_b));
    OK(dat_pz_create(D.ia, &pz));
    DAT_REGION_DESCRIPTION region = {.for_va = buf};
    OK(dat_lmr_create(D.ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz,
                      DAT_MEM_PRIV_ALL_FLAG, &lmr, &lctx, &rctx, &rlen, &raddr));
    OK(dat_ia_query(D.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL));
    DAT_EP_ATTR at;
    memset(&at, 0, sizeof(at));
    at.service_type = DAT_SERVICE_TYPE_RC;
    at.max_message_size = 4096;
    at.max_rdma_size = 4096;
    at.qos = DAT_QOS_BEST_EFFORT;
    at.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    at.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    at.max_recv_dtos = 16;
    at.max_request_dtos = 16;
    at.max_recv_iov = 1;
    at.max_request_iov = 1;
    OK(dat_psp_create_any(D.ia, &qual, cr, DAT_PSP_CONSUMER_FLAG, &psp));
    OK(dat_ep_create(D.ia, pz, D.evd_a, D.evd_a, conn_a, &at, &D.a));
    OK(dat_ep_create(D.ia, pz, D.evd_b, D.evd_b, conn_b, &at, &D.b));
    /* A sends from buf[0] and receives into buf[64]; B receives into
     * buf[128] and echoes from it. */
    D.as = triplet(lctx, buf);
    D.ar = triplet(lctx, buf + 64);
    D.br = triplet(lctx, buf + 128);
    DAT_DTO_COOKIE ck_recv = {.as_64 = COOKIE_RECV};
    OK(dat_ep_post_recv(D.a, 1, &D.ar, ck_recv, DAT_COMPLETION_DEFAULT_FLAG));
    OK(dat_ep_post_recv(D.b, 1, &D.br, ck_recv, DAT_COMPLETION_DEFAULT_FLAG));
    OK(dat_ep_connect(D.a, ia_attr.ia_address_ptr, qual, WAIT_US, 0, NULL,
                      DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
    if (dat_next(cr, &ev)->event_number != DAT_CONNECTION_REQUEST_EVENT)
        die("dat: expected a connection request");
    OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, D.b, 0, NULL));
    if (dat_next(conn_a, &ev)->event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
        dat_next(conn_b, &ev)->event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        die("dat: the connection was not established");
}

static void dat_rounds(uint64_t first, uint64_t n)
{
    DAT_DTO_COOKIE ck_send = {.as_64 = COOKIE_SEND}, ck_recv = {.as_64 = COOKIE_RECV};
    DAT_EVENT ev;
    for (uint64_t i = first; i < first + n; i++) {
        memcpy(D.buf, &i, sizeof(i));
        uint64_t t0 = tsc();
        OK(dat_ep_post_send(D.a, 1, &D.as, ck_send, DAT_COMPLETION_DEFAULT_FLAG));
        uint64_t t1 = tsc();
        record(C_SEND, t1 - t0);
        D.sa++;
        dat_poll_recv(D.evd_b, &D.sb);
        t1 = tsc();
        OK(dat_ep_post_recv(D.b, 1, &D.br, ck_recv, DAT_COMPLETION_DEFAULT_FLAG));
        record(C_RECV, tsc() - t1);
        t1 = tsc();
        OK(dat_ep_post_send(D.b, 1, &D.br, ck_send, DAT_COMPLETION_DEFAULT_FLAG));
        record(C_SEND, tsc() - t1);
        D.sb++;
        dat_poll_recv(D.evd_a, &D.sa);
        record(C_RTT, tsc() - t0);
        uint64_t got;
        memcpy(&got, D.buf + 64, sizeof(got));
        if (got != i)
            die("dat: round trip %llu brought back %llu", (unsigned long long)i,
                (unsigned long long)got);
        t1 = tsc();
        OK(dat_ep_post_recv(D.a, 1, &D.ar, ck_recv, DAT_COMPLETION_DEFAULT_FLAG));
        record(C_RECV, tsc() - t1);
        /* Send completions are reaped outside the timed calls, as the
         * raw side does. */
        int was = recording;
        recording = 0;
        while (D.sa > 4 || D.sb > 4) {
            if (D.sa > 4) {
                if (DAT_GET_TYPE(dat_evd_dequeue(D.evd_a, &ev)) == DAT_SUCCESS)
                    D.sa--;
            } else if (DAT_GET_TYPE(dat_evd_dequeue(D.evd_b, &ev)) == DAT_SUCCESS)
                D.sb--;
        }
        recording = was;
    }
}

/* ---- counting on any device: a receive, its completion, an empty poll ---- */

/* The counted loop (callgrind: --toggle-collect=count_loop). */
static __attribute__((noinline)) void count_loop(DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd,
                                                 DAT_LMR_TRIPLET *iov, uint64_t n)
{
    DAT_EVENT ev;
    DAT_DTO_COOKIE ck = {.as_64 = COOKIE_RECV};
    for (uint64_t i = 0; i < n; i++) {
        OK(dat_ep_post_recv(ep, 1, iov, ck, DAT_COMPLETION_DEFAULT_FLAG));
        OK(dat_evd_dequeue(evd, &ev));
        if (ev.event_number != DAT_DTO_COMPLETION_EVENT)
            die("count: event 0x%x", (unsigned)ev.event_number);
        if (DAT_GET_TYPE(dat_evd_dequeue(evd, &ev)) != DAT_QUEUE_EMPTY)
            die("count: the EVD is not empty");
    }
}

/* Dequeues of the empty EVD (a busy poller's spin; callgrind:
 * --toggle-collect=empty_loop). */
static __attribute__((noinline)) void empty_loop(DAT_EVD_HANDLE evd, uint64_t n)
{
    DAT_EVENT ev;
    for (uint64_t i = 0; i < n; i++)
        if (DAT_GET_TYPE(dat_evd_dequeue(evd, &ev)) != DAT_QUEUE_EMPTY)
            die("count: the EVD is not empty");
}

static void run_count(const char *ia_name, uint64_t n)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL, evd;
    DAT_PZ_HANDLE pz;
    DAT_EP_HANDLE ep;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    DAT_VLEN rlen;
    DAT_VADDR raddr;
    static unsigned char buf[64] __attribute__((aligned(64)));
    OK(dat_ia_open(ia_name, 8, &async, &ia));
    OK(dat_evd_create(ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &evd));
    OK(dat_pz_create(ia, &pz));
    DAT_REGION_DESCRIPTION region = {.for_va = buf};
    OK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz, DAT_MEM_PRIV_ALL_FLAG,
                      &lmr, &lctx, &rctx, &rlen, &raddr));
    OK(dat_ep_create(ia, pz, evd, evd, DAT_HANDLE_NULL, NULL, &ep));
    DAT_LMR_TRIPLET iov = triplet(lctx, buf);
    count_loop(ep, evd, &iov, WARMUP);
    double t0 = now();
    count_loop(ep, evd, &iov, n);
    printf("verbs_calls count: %llu iterations of post_recv + its dequeue + an empty dequeue, "
           "%.3f us each\n",
           (unsigned long long)n, (now() - t0) * 1e6 / (double)n);
    t0 = now();
    empty_loop(evd, n);
    printf("verbs_calls count: %llu dequeues of an empty EVD, %.3f us each\n",
           (unsigned long long)n, (now() - t0) * 1e6 / (double)n);
    OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

/* ---- raw verbs -------------------------------------------------------- */

struct end {
    struct rdma_cm_id *id;
    struct ibv_cq *cq;
};

static struct {
    struct end a, b;
    struct ibv_sge as, ar, br;
    unsigned char *buf;
    uint64_t sa, sb;
} R;

static struct rdma_cm_event *cm_next(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
    struct rdma_cm_event *e;
    if (rdma_get_cm_event(ch, &e) != 0)
        die("rdma_get_cm_event: %s", strerror(errno));
    if (e->event != want)
        die("rdma_cm: %s, expected %s (status %d)", rdma_event_str(e->event),
            rdma_event_str(want), e->status);
    return e;
}

static void make_qp(struct end *x, struct ibv_pd *pd)
{
    x->cq = ibv_create_cq(x->id->verbs, 64, NULL, NULL, 0);
    if (x->cq == NULL)
        die("ibv_create_cq: %s", strerror(errno));
    struct ibv_qp_init_attr qa;
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = qa.recv_cq = x->cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 16;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    if (rdma_create_qp(x->id, pd, &qa) != 0)
        die("rdma_create_qp: %s", strerror(errno));
}

static void raw_post_recv(struct end *x, struct ibv_sge *sge)
{
    struct ibv_recv_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = COOKIE_RECV;
    wr.sg_list = sge;
    wr.num_sge = 1;
    uint64_t t0 = tsc();
    int rc = ibv_post_recv(x->id->qp, &wr, &bad);
    record(C_RECV, tsc() - t0);
    if (rc != 0)
        die("ibv_post_recv: %s", strerror(rc));
}

static void raw_post_send(struct end *x, struct ibv_sge *sge)
{
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = COOKIE_SEND;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    uint64_t t0 = tsc();
    int rc = ibv_post_send(x->id->qp, &wr, &bad);
    record(C_SEND, tsc() - t0);
    if (rc != 0)
        die("ibv_post_send: %s", strerror(rc));
}

static void raw_poll_recv(struct end *x, uint64_t *sends)
{
    struct ibv_wc wc;
    for (uint64_t spins = 0;; spins++) {
        uint64_t t0 = tsc();
        int n = ibv_poll_cq(x->cq, 1, &wc);
        uint64_t t1 = tsc();
        if (n == 0) {
            record(C_EMPTY, t1 - t0);
            if (spins > 100000000ull)
                die("raw: no completion");
            continue;
        }
        if (n < 0)
            die("ibv_poll_cq: %d", n);
        record(C_HIT, t1 - t0);
        if (wc.status != IBV_WC_SUCCESS)
            die("raw: completion status %s", ibv_wc_status_str(wc.status));
        if (wc.wr_id == COOKIE_RECV) {
            if (wc.byte_len != LEN)
                die("raw: received %u bytes", wc.byte_len);
            return;
        }
        (*sends)--;
    }
}

static void raw_setup(const char *addr)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        die("raw: %s is not an IPv4 address", addr);
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *listen;
    if (ch == NULL || rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP) != 0 ||
        rdma_bind_addr(listen, (struct sockaddr *)&sa) != 0 || rdma_listen(listen, 1) != 0)
        die("raw: listening on %s: %s", addr, strerror(errno));
    sa.sin_port = rdma_get_src_port(listen);
    if (rdma_create_id(ch, &R.a.id, NULL, RDMA_PS_TCP) != 0 ||
        rdma_resolve_addr(R.a.id, NULL, (struct sockaddr *)&sa, 2000) != 0)
        die("raw: rdma_resolve_addr: %s", strerror(errno));
    rdma_ack_cm_event(cm_next(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
    if (rdma_resolve_route(R.a.id, 2000) != 0)
        die("raw: rdma_resolve_route: %s", strerror(errno));
    rdma_ack_cm_event(cm_next(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
    struct ibv_pd *pd = ibv_alloc_pd(R.a.id->verbs);
    static unsigned char buf[4 * 64] __attribute__((aligned(64)));
    R.buf = buf;
    struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
    if (mr == NULL)
        die("raw: ibv_reg_mr: %s", strerror(errno));
    make_qp(&R.a, pd);
    R.as = (struct ibv_sge){.addr = (uintptr_t)buf, .length = LEN, .lkey = mr->lkey};
    R.ar = R.as;
    R.br = R.as;
    R.ar.addr += 64;
    R.br.addr += 128;
    raw_post_recv(&R.a, &R.ar);
    struct rdma_conn_param cp;
    memset(&cp, 0, sizeof(cp));
    cp.responder_resources = cp.initiator_depth = 1;
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    if (rdma_connect(R.a.id, &cp) != 0)
        die("raw: rdma_connect: %s", strerror(errno));
    struct rdma_cm_event *req = cm_next(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
    R.b.id = req->id;
    rdma_ack_cm_event(req);
    if (R.b.id->verbs != R.a.id->verbs)
        die("raw: the two ends are on different devices");
    make_qp(&R.b, pd);
    raw_post_recv(&R.b, &R.br);
    if (rdma_accept(R.b.id, &cp) != 0)
        die("raw: rdma_accept: %s", strerror(errno));
    /* Both sides' ESTABLISHED, in either order. */
    for (int k = 0; k < 2; k++) {
        struct rdma_cm_event *e;
        if (rdma_get_cm_event(ch, &e) != 0 || e->event != RDMA_CM_EVENT_ESTABLISHED)
            die("raw: the connection was not established");
        rdma_ack_cm_event(e);
    }
}

static void raw_rounds(uint64_t first, uint64_t n)
{
    for (uint64_t i = first; i < first + n; i++) {
        memcpy(R.buf, &i, sizeof(i));
        uint64_t t0 = tsc();
        raw_post_send(&R.a, &R.as);
        R.sa++;
        raw_poll_recv(&R.b, &R.sb);
        raw_post_recv(&R.b, &R.br);
        raw_post_send(&R.b, &R.br);
        R.sb++;
        raw_poll_recv(&R.a, &R.sa);
        record(C_RTT, tsc() - t0);
        uint64_t got;
        memcpy(&got, R.buf + 64, sizeof(got));
        if (got != i)
            die("raw: round trip %llu brought back %llu", (unsigned long long)i,
                (unsigned long long)got);
        raw_post_recv(&R.a, &R.ar);
        int was = recording;
        recording = 0;
        while (R.sa > 4 || R.sb > 4) {
            struct ibv_wc wc;
            struct end *x = R.sa > 4 ? &R.a : &R.b;
            if (ibv_poll_cq(x->cq, 1, &wc) == 1) {
                if (wc.status != IBV_WC_SUCCESS || wc.wr_id != COOKIE_SEND)
                    die("raw: unexpected completion while reaping");
                *(x == &R.a ? &R.sa : &R.sb) -= 1;
            }
        }
        recording = was;
    }
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "count") == 0) {
        run_count(argv[2], argc > 3 ? strtoull(argv[3], NULL, 0) : 20000);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: %s ADDRESS IA_NAME [PAIRS [CHUNK]] | count IA_NAME [N]\n",
                argv[0]);
        return 2;
    }
    int pairs = argc > 3 ? atoi(argv[3]) : 40;
    uint64_t chunk = argc > 4 ? strtoull(argv[4], NULL, 0) : 500;
    if (pairs < 1 || chunk < 10)
        die("PAIRS >= 1 and CHUNK >= 10");
    raw_setup(argv[1]);
    dat_setup(argv[2]);
    uint64_t i = 0;
    cur = &s_raw;
    raw_rounds(i, WARMUP);
    cur = &s_dat;
    dat_rounds(i, WARMUP);
    i += WARMUP;
    double *ratio = malloc((size_t)pairs * sizeof(double));
    if (ratio == NULL)
        die("out of memory");
    recording = 1;
    for (int p = 0; p < pairs; p++) {
        /* Which goes first alternates from pair to pair. */
        for (int k = 0; k < 2; k++) {
            if ((p + k) % 2 == 0) {
                cur = &s_raw;
                raw_rounds(i, chunk);
            } else {
                cur = &s_dat;
                dat_rounds(i, chunk);
            }
            i += chunk;
        }
        size_t end = s_raw.n[C_RTT];
        uint64_t mr = median_of(s_raw.v[C_RTT], end - chunk, end);
        end = s_dat.n[C_RTT];
        uint64_t md = median_of(s_dat.v[C_RTT], end - chunk, end);
        ratio[p] = (double)md / (double)mr;
    }
    recording = 0;
    double k = ns_per_cycle();
    uint64_t trips = (uint64_t)pairs * chunk;
    printf("verbs_calls: %s (raw verbs) and %s (DAT), %d pairs of %llu round trips of %d B, "
           "one thread driving both ends of each\n",
           argv[1], argv[2], pairs, (unsigned long long)chunk, LEN);
    table("raw verbs", &s_raw, trips, k);
    table("DAT", &s_dat, trips, k);
    qsort(ratio, (size_t)pairs, sizeof(double), cmp_double);
    printf("verbs_calls: DAT / raw round trip, median of %d paired chunks: %.3f "
           "(quartiles %.3f-%.3f, range %.3f-%.3f)\n",
           pairs, ratio[pairs / 2], ratio[pairs / 4], ratio[pairs * 3 / 4], ratio[0],
           ratio[pairs - 1]);
    OK(dat_ep_disconnect(D.a, DAT_CLOSE_ABRUPT_FLAG));
    OK(dat_ia_close(D.ia, DAT_CLOSE_ABRUPT_FLAG));
    rdma_disconnect(R.a.id);
    return 0;
}
