/*
 * Consumer patterns in which the application watches its memory instead of
 * calling the library: data must be placed (and RDMA Reads answered) while
 * the process polls memory or computes, with no library call.
 *
 *   EAGER_RING_*   an RDMA-Write eager ring (MPI "fast path"): the receiver
 *                  exposes N slots, the sender RDMA-Writes each message
 *                  (8 B - 64 KiB) so that it ends at the end of its slot,
 *                  with a trailer (length, sequence number) in its last
 *                  bytes; the receiver polls the trailer in memory, checks
 *                  the payload and returns credits in small Sends posted
 *                  SUPPRESS|UNSIGNALLED, every 8th one signalled so that
 *                  the send queue drains. 2,500 messages streamed (16 in
 *                  flight, credits every 4), then 500 one at a time (each
 *                  waits for the credit of the one before). Median time
 *                  from the post of the Write to the trailer seen, in each
 *                  phase: under 1 ms
 *   RNDV_READ_*    rendezvous by RDMA Read: one side exposes 1-4 MiB, sends
 *                  its RMR context and computes (a busy loop over memory, no
 *                  library call, up to 250 ms where reading 4 MiB takes a
 *                  few ms) while the other RDMA-Reads the buffer in chunks
 *                  of 256 KiB, 4 at a time; every read completes before the
 *                  computing side comes back to the library. 40 times
 *   RECV_POLLED_*  Send/Recv ping-pong (1 B - 64 KiB) where each side polls
 *                  the last byte of its posted receive buffer until the
 *                  message has landed, then takes the receive completion
 *                  (it must be there promptly). Median time from the post
 *                  of the Send to the completion taken: under 1 ms
 *
 * Times are taken with CLOCK_MONOTONIC in both processes and kept in shared
 * memory. The 1 ms bounds are deliberately loose: a library that places
 * data only when the application calls it, or when a background thread
 * gets round to it every few milliseconds, fails them; one that places
 * data as it arrives passes them by far.
 */
#include "consumer.h"

/* ---- RDMA-Write eager ring -------------------------------------------------- */

#define RING_SLOTS 16
#define RING_SLOT (64 * KiB) /* the largest message, trailer included */
#define RING_NSTREAM 2500    /* streamed: up to RING_SLOTS in flight, credits every RING_BATCH */
#define RING_NPACED 500      /* then one at a time: each waits for the credit of the one before */
#define RING_NMSG (RING_NSTREAM + RING_NPACED)
#define RING_BATCH 4     /* a credit Send every 4 messages consumed */
#define RING_CSIGNAL 8   /* every 8th credit Send is signalled */
#define RING_WSIGNAL 16  /* every 16th RDMA Write is signalled */
#define RING_NCTL 64     /* credit Send buffers at the receiver */
#define RING_NCRED 64    /* credit receive buffers at the sender */
#define CTL_SETUP 0x53u
#define CTL_CREDIT 0x43u
#define SEED4 0xEA6E4u
#define TAG_W 0x1000000000ull

struct trailer {
    uint32_t len;
    uint32_t seq; /* written last, polled */
};

struct ctl {
    uint32_t type;
    uint32_t value; /* SETUP: slots; CREDIT: messages consumed so far */
    DAT_RMR_TRIPLET ring;
};

struct ring_times {
    double post[RING_NMSG];
    double seen[RING_NMSG];
};


static void ring_sizes(size_t *size, int n, uint64_t seed)
{
    struct rng r;
    rng_init(&r, seed);
    for (int k = 0; k < n; k++)
        size[k] = rng_logsize(&r, 8, RING_SLOT);
    size[0] = 8;
    if (n > 1)
        size[1] = RING_SLOT;
}

/* Messages the sender may have in flight before message k. */
static int ring_window(int k) { return k < RING_NSTREAM ? RING_SLOTS : 1; }

/* A message of `len` bytes: payload, then the trailer in its last 8 bytes. */
static void ring_fill(unsigned char *end, size_t len, int k)
{
    struct trailer t = {(uint32_t)len, (uint32_t)k + 1};
    fill_msg(end - len, len - sizeof(t), SEED4, (uint32_t)k);
    memcpy(end - sizeof(t), &t, sizeof(t));
}

/* Receiver: reports latencies, checks the median bound. */
static void report_latency(const char *what, double *lat, int n)
{
    struct stats st = stats_of(lat, n);
    int slow = 0;
    for (int i = 0; i < n; i++)
        slow += lat[i] >= MEDIAN_BOUND_S;
    NOTE("%s over %d messages: median %.1f us, p90 %.1f us, max %.1f us; %d over 1 ms", what, st.n,
         st.median * 1e6, st.p90 * 1e6, st.max * 1e6, slow);
    if (st.n > 0 && st.median >= MEDIAN_BOUND_S)
        FAILF("median %s %.3f ms, want under %.0f ms (data is not placed while the application "
              "polls its memory)",
              what, st.median * 1e3, MEDIAN_BOUND_S * 1e3);
}

/* Receiver side of the ring: a credit Send, SUPPRESS|UNSIGNALLED or signalled. */
struct ring_rx {
    struct pair *p;
    struct mr ctl;
    int ncred;     /* credit Sends posted */
    int cred_done; /* credit Sends known complete (up to the last signalled one reaped) */
};

static int rx_reap(struct ring_rx *x, int block)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    DAT_COUNT nmore;
    for (;;) {
        r = dat_evd_dequeue(x->p->req_evd, &ev);
        if (r != DAT_SUCCESS && block) {
            r = dat_evd_wait(x->p->req_evd, WAIT_US, 1, &ev, &nmore);
            if (r != DAT_SUCCESS) {
                FAILF("credit Send %d: no signalled completion, dat_evd_wait returned 0x%08x",
                      x->cred_done, (unsigned)r);
                return 0;
            }
        }
        if (r != DAT_SUCCESS)
            return 1;
        block = 0;
        {
            int want = x->cred_done;
            /* the next signalled credit Send after those known complete */
            while ((want + 1) % RING_CSIGNAL != 0 && want + 1 < x->ncred)
                want++;
            if (!check_dto_ev_at(__FILE__, __LINE__, &ev, x->p->req_evd, x->p->ep,
                                 (uint64_t)want, DAT_DTO_SUCCESS, sizeof(struct ctl))) {
                FAILF("want the completion of signalled credit Send %d", want);
                return 0;
            }
            x->cred_done = want + 1;
        }
    }
}

static int rx_credit(struct ring_rx *x, uint32_t consumed, int last)
{
    int i = x->ncred;
    struct ctl c;
    DAT_COMPLETION_FLAGS fl = ((i + 1) % RING_CSIGNAL == 0 || last)
                                  ? DAT_COMPLETION_DEFAULT_FLAG
                                  : DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG;
    DAT_RETURN r;
    /* a buffer is rewritten only when its Send is known complete */
    while (x->ncred - x->cred_done >= RING_NCTL - RING_CSIGNAL)
        if (!rx_reap(x, 1))
            return 0;
    memset(&c, 0, sizeof(c));
    c.type = CTL_CREDIT;
    c.value = consumed;
    memcpy(x->ctl.buf + (size_t)(i % RING_NCTL) * sizeof(c), &c, sizeof(c));
    r = send1(x->p->ep, &x->ctl, (size_t)(i % RING_NCTL) * sizeof(c), sizeof(c), (uint64_t)i, fl);
    if (r != DAT_SUCCESS) {
        FAILF("credit Send %d (flags 0x%x): dat_ep_post_send returned 0x%08x", i, (unsigned)fl,
              (unsigned)r);
        return 0;
    }
    x->ncred++;
    return rx_reap(x, 0);
}

/* Sender side: credits, and its own signalled Writes. */
struct ring_tx {
    struct pair *p;
    struct mr crb;
    int nrecv;    /* credit messages taken */
    int consumed; /* messages the receiver says it consumed */
    int wdone;    /* signalled Writes reaped */
    int iter;
    const size_t *size;
};

static int tx_repost(struct ring_tx *x, int j)
{
    DAT_RETURN r = recv1(x->p->ep, &x->crb, (size_t)(j % RING_NCRED) * sizeof(struct ctl),
                         sizeof(struct ctl), (uint64_t)j, DAT_COMPLETION_DEFAULT_FLAG);
    if (r != DAT_SUCCESS)
        FAILF("message %d: dat_ep_post_recv(credit %d) returned 0x%08x", x->iter, j, (unsigned)r);
    return r == DAT_SUCCESS;
}

/* Takes credit messages: one at least if `block`, else those queued. */
static int tx_credits(struct ring_tx *x, int block)
{
    for (;;) {
        DAT_EVENT ev;
        DAT_COUNT nmore;
        DAT_RETURN r = dat_evd_dequeue(x->p->recv_evd, &ev);
        struct ctl c;
        int j = x->nrecv;
        if (r != DAT_SUCCESS && block) {
            r = dat_evd_wait(x->p->recv_evd, WAIT_US, 1, &ev, &nmore);
            if (r != DAT_SUCCESS) {
                FAILF("message %d: no credit for %u s (receiver consumed %d): dat_evd_wait "
                      "returned 0x%08x",
                      x->iter, WAIT_US / SEC, x->consumed, (unsigned)r);
                explain_peer();
                return 0;
            }
        }
        if (r != DAT_SUCCESS)
            return 1;
        block = 0;
        if (!check_dto_ev_at(__FILE__, __LINE__, &ev, x->p->recv_evd, x->p->ep, (uint64_t)j,
                             DAT_DTO_SUCCESS, sizeof(c)))
            return 0;
        memcpy(&c, x->crb.buf + (size_t)(j % RING_NCRED) * sizeof(c), sizeof(c));
        if (c.type != CTL_CREDIT || (int)c.value < x->consumed || (int)c.value > x->iter) {
            FAILF("message %d: credit message %d is type 0x%x value %u (consumed so far %d)",
                  x->iter, j, c.type, c.value, x->consumed);
            return 0;
        }
        x->consumed = (int)c.value;
        x->nrecv++;
        if (!tx_repost(x, j + RING_NCRED))
            return 0;
    }
}

/* The signalled Writes, in order: k = 15, 31, ... and the last one. */
static int tx_reap_writes(struct ring_tx *x, int block)
{
    for (;;) {
        DAT_EVENT ev;
        DAT_COUNT nmore;
        DAT_RETURN r = dat_evd_dequeue(x->p->req_evd, &ev);
        int k;
        if (r != DAT_SUCCESS && block) {
            r = dat_evd_wait(x->p->req_evd, WAIT_US, 1, &ev, &nmore);
            if (r != DAT_SUCCESS) {
                FAILF("no completion for a signalled RDMA Write: dat_evd_wait returned 0x%08x",
                      (unsigned)r);
                return 0;
            }
        }
        if (r != DAT_SUCCESS)
            return 1;
        block = 0;
        k = (x->wdone + 1) * RING_WSIGNAL - 1;
        if (k > RING_NMSG - 1)
            k = RING_NMSG - 1;
        if (!check_dto_ev_at(__FILE__, __LINE__, &ev, x->p->req_evd, x->p->ep, TAG_W | (uint64_t)k,
                             DAT_DTO_SUCCESS, x->size[k])) {
            FAILF("want the completion of signalled RDMA Write %d", k);
            return 0;
        }
        x->wdone++;
    }
}

TEST(EAGER_RING_rdma_write_trailer_polled_in_memory)
{
    static size_t size[RING_NMSG];
    struct pair p;
    struct ring_times *T = shared_alloc(sizeof(*T));
    uint64_t seed = consumer_seed(SEED4);
    DAT_EP_ATTR a = consumer_ep_attr(128, 4 * MiB);
    double t0;

    REQUIRE(T != NULL);
    ring_sizes(size, RING_NMSG, seed);
    REQUIRE(cpair_start(&p, 256) == 0);
    PREQUIRE(&p, cpair_connect(&p, &a) == 0);
    if (p.server) {
        struct ring_rx x;
        struct mr ring;
        struct ctl c;
        int k, bad = 0;

        memset(&x, 0, sizeof(x));
        x.p = &p;
        PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)RING_SLOTS * RING_SLOT,
                             LRW | DAT_MEM_PRIV_REMOTE_WRITE_FLAG, &ring) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, RING_NCTL * sizeof(struct ctl), LRW, &x.ctl) ==
                         DAT_SUCCESS);
        PSYNC(&p, 'r');
        /* the ring's address and context go to the sender in a Send */
        memset(&c, 0, sizeof(c));
        c.type = CTL_SETUP;
        c.value = RING_SLOTS;
        c.ring = rtr_of(&ring, 0, (DAT_VLEN)RING_SLOTS * RING_SLOT);
        memcpy(x.ctl.buf, &c, sizeof(c));
        PREQUIRE(&p, POSTED(send1(p.ep, &x.ctl, 0, sizeof(c), 0x5E7, DAT_COMPLETION_DEFAULT_FLAG)));
        PREQUIRE(&p, EXPECT_DTO(p.req_evd, p.ep, 0x5E7, DAT_DTO_SUCCESS, sizeof(c)));

        t0 = ctest_now();
        for (k = 0; k < RING_NMSG && bad < 3; k++) {
            unsigned char *end = ring.buf + (size_t)(k % RING_SLOTS + 1) * RING_SLOT;
            struct trailer *tr = (struct trailer *)(void *)(end - sizeof(struct trailer));
            double deadline = ctest_now() + WAIT_US / 1e6;
            unsigned spins = 0;
            size_t len;
            /* no library call until the trailer is there */
            while (load32_acquire(&tr->seq) != (uint32_t)k + 1) {
                poll_step(&spins);
                if ((spins & 63) == 0 && (ctest_now() > deadline || peer_gave_up()))
                    break;
            }
            if (load32_acquire(&tr->seq) != (uint32_t)k + 1) {
                FAILF("message %d (%zu B, slot %d) not placed after %.2f s while the receiver "
                      "polled its memory (trailer seq %u, %d messages before it arrived)",
                      k, size[k], k % RING_SLOTS, ctest_now() - deadline + WAIT_US / 1e6,
                      tr->seq, k);
                explain_peer();
                give_up(k);
                break;
            }
            T->seen[k] = ctest_now();
            len = tr->len;
            if (len != size[k]) {
                FAILF("message %d: trailer length %zu, want %zu", k, len, size[k]);
                bad++;
            } else if (!CHECK_MSG(end - len, len - sizeof(*tr), SEED4, (uint32_t)k,
                                  "payload before the trailer of message")) {
                ctest_sleep_ms(50);
                if (check_msg_at(__FILE__, __LINE__, end - len, len - sizeof(*tr), SEED4,
                                 (uint32_t)k, "(50 ms later) message"))
                    FAILF("message %d: the trailer was visible before the payload was placed "
                          "(right 50 ms later)",
                          k);
                bad++;
            }
            __atomic_store_n(&tr->seq, 0, __ATOMIC_RELAXED);
            tr->len = 0;
            if ((k + 1) % RING_BATCH == 0 || k + 1 >= RING_NSTREAM)
                if (!rx_credit(&x, (uint32_t)k + 1, k + 1 == RING_NMSG))
                    break;
            if (OVER_BUDGET(t0, k + 1, RING_NMSG, "messages"))
                break;
        }
        NOTE("%d messages polled and checked in %.3f s", k, ctest_now() - t0);
        if (k == RING_NMSG)
            while (x.cred_done < x.ncred)
                if (!rx_reap(&x, 1))
                    break;
        PSYNC(&p, 'd');
        {
            static double lat[RING_NMSG];
            int n = 0;
            for (int i = 0; i < k && i < RING_NSTREAM; i++)
                lat[n++] = T->seen[i] - T->post[i];
            report_latency("streamed (16 slots, credits every 4): time from RDMA Write posted to "
                           "trailer seen",
                           lat, n);
            n = 0;
            for (int i = RING_NSTREAM; i < k; i++)
                lat[n++] = T->seen[i] - T->post[i];
            report_latency("one at a time: time from RDMA Write posted to trailer seen", lat, n);
        }
    } else {
        struct ring_tx x;
        struct mr src;
        struct ctl c;
        int k;

        NOTE("seed 0x%llx, %d messages of 8 B - 64 KiB into %d slots, then %d one at a time",
             (unsigned long long)seed, RING_NSTREAM, RING_SLOTS, RING_NPACED);
        memset(&x, 0, sizeof(x));
        x.p = &p;
        x.size = size;
        PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)RING_SLOTS * RING_SLOT, LRW, &src) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, RING_NCRED * sizeof(struct ctl), LRW, &x.crb) ==
                         DAT_SUCCESS);
        for (int j = 0; j < RING_NCRED; j++)
            PREQUIRE(&p, tx_repost(&x, j));
        PSYNC(&p, 'r');
        /* the setup message is credit receive 0 */
        PREQUIRE(&p, EXPECT_DTO(p.recv_evd, p.ep, 0, DAT_DTO_SUCCESS, sizeof(c)));
        memcpy(&c, x.crb.buf, sizeof(c));
        PREQUIRE(&p, c.type == CTL_SETUP && c.value == RING_SLOTS &&
                         c.ring.segment_length == (DAT_VLEN)RING_SLOTS * RING_SLOT);
        x.nrecv = 1;
        PREQUIRE(&p, tx_repost(&x, RING_NCRED));

        t0 = ctest_now();
        for (k = 0; k < RING_NMSG; k++) {
            size_t off = (size_t)(k % RING_SLOTS + 1) * RING_SLOT - size[k];
            DAT_RMR_TRIPLET r = c.ring;
            DAT_COMPLETION_FLAGS fl =
                ((k + 1) % RING_WSIGNAL == 0 || k + 1 == RING_NMSG)
                    ? DAT_COMPLETION_DEFAULT_FLAG
                    : DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG;
            DAT_RETURN ret;
            x.iter = k;
            /* a slot is reused only when the receiver gave it back */
            if (!tx_credits(&x, 0))
                break;
            while (k - x.consumed >= ring_window(k))
                if (!tx_credits(&x, 1))
                    break;
            if (k - x.consumed >= ring_window(k) || !tx_reap_writes(&x, 0))
                break;
            ring_fill(src.buf + off + size[k], size[k], k);
            r.target_address += off;
            r.segment_length = size[k];
            T->post[k] = ctest_now();
            ret = write1(p.ep, &src, off, size[k], &r, TAG_W | (uint64_t)k, fl);
            if (ret != DAT_SUCCESS) {
                FAILF("message %d: dat_ep_post_rdma_write (flags 0x%x) returned 0x%08x", k,
                      (unsigned)fl, (unsigned)ret);
                break;
            }
            if (OVER_BUDGET(t0, k + 1, RING_NMSG, "messages"))
                break;
        }
        if (k == RING_NMSG) {
            x.iter = k;
            while (x.consumed < RING_NMSG)
                if (!tx_credits(&x, 1))
                    break;
            while (x.wdone < (RING_NMSG + RING_WSIGNAL - 1) / RING_WSIGNAL)
                if (!tx_reap_writes(&x, 1))
                    break;
            NOTE("%d messages written in %.3f s", k, ctest_now() - t0);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- rendezvous by RDMA Read while the peer computes --------------------------- */

#ifndef RV_ITER
#define RV_ITER 40
#endif
#define RV_MAX (4 * MiB)
#define RV_CHUNK (256 * KiB)
#define RV_COMPUTE_MAX 0.25 /* s: the computation; reading 4 MiB takes a few ms */
#define SEED5 0x4E4Du

enum { PH_IDLE, PH_COMPUTING, PH_BACK };

struct rv_shared {
    int phase;       /* the exposing side: PH_* ... */
    int phase_iter;  /* ... for this iteration */
    int reads_done;  /* iterations whose reads all completed (reader) */
    double read_s[RV_ITER];
    double compute_s[RV_ITER];
};

struct rts {
    uint32_t iter, pad;
    DAT_RMR_TRIPLET buf;
};

static void set_phase(struct rv_shared *S, int phase, int iter)
{
    __atomic_store_n(&S->phase_iter, iter, __ATOMIC_RELAXED);
    __atomic_store_n(&S->phase, phase, __ATOMIC_RELEASE);
}

static int phase_is(struct rv_shared *S, int phase, int iter)
{
    int ph = __atomic_load_n(&S->phase, __ATOMIC_ACQUIRE);
    return ph == phase && __atomic_load_n(&S->phase_iter, __ATOMIC_RELAXED) == iter;
}

/* A computation over memory that calls nothing: until the reader is done
 * with iteration k or RV_COMPUTE_MAX passed. 1 if the reader finished. */
static int compute(struct rv_shared *S, int k, uint64_t *work, size_t n, uint64_t *sink)
{
    double t0 = ctest_now();
    uint64_t acc = *sink;
    for (;;) {
        for (size_t i = 0; i < n; i++) {
            acc = acc * 6364136223846793005ull + work[i];
            work[i] ^= acc >> 17;
        }
        if (__atomic_load_n(&S->reads_done, __ATOMIC_ACQUIRE) > k)
            break;
        if (ctest_now() - t0 > RV_COMPUTE_MAX)
            break;
        if (peer_gave_up())
            break;
    }
    *sink = acc;
    S->compute_s[k] = ctest_now() - t0;
    return __atomic_load_n(&S->reads_done, __ATOMIC_ACQUIRE) > k;
}

TEST(RNDV_READ_completes_while_the_exposing_side_computes)
{
    struct pair p;
    struct rv_shared *S = shared_alloc(sizeof(*S));
    uint64_t seed = consumer_seed(SEED5);
    DAT_EP_ATTR a = consumer_ep_attr(64, 4 * MiB);
    size_t size[RV_ITER];
    struct rng rg;
    int k;

    REQUIRE(S != NULL);
    rng_init(&rg, seed);
    for (k = 0; k < RV_ITER; k++)
        size[k] = rng_range(&rg, 1 * MiB, RV_MAX);
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    REQUIRE(cpair_start(&p, 64) == 0);
    PREQUIRE(&p, cpair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr buf, ctl, rcv;
        static uint64_t work[32768]; /* 256 KiB of private memory to compute over */
        uint64_t sink = 1;
        for (size_t i = 0; i < sizeof(work) / sizeof(work[0]); i++)
            work[i] = i * 0x9E3779B97F4A7C15ull;
        PREQUIRE(&p, mr_make(p.ia, p.pz, RV_MAX, LRW | DAT_MEM_PRIV_REMOTE_READ_FLAG, &buf) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &ctl) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &rcv) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        for (k = 0; k < RV_ITER; k++) {
            struct rts m;
            int finished;
            fill_msg(buf.buf, size[k], SEED5, (uint32_t)k);
            /* the reader's "done" message */
            PREQUIRE(&p, POSTED(recv1(p.ep, &rcv, 0, 64, 0xF0 + (uint64_t)k,
                                      DAT_COMPLETION_DEFAULT_FLAG)));
            memset(&m, 0, sizeof(m));
            m.iter = (uint32_t)k;
            m.buf = rtr_of(&buf, 0, size[k]);
            memcpy(ctl.buf, &m, sizeof(m));
            PREQUIRE(&p, POSTED(send1(p.ep, &ctl, 0, sizeof(m), 0x10 + (uint64_t)k,
                                      DAT_COMPLETION_DEFAULT_FLAG)));
            /* from here until PH_BACK: no library call at all */
            set_phase(S, PH_COMPUTING, k);
            finished = compute(S, k, work, sizeof(work) / sizeof(work[0]), &sink);
            set_phase(S, PH_BACK, k);
            if (!finished) {
                if (peer_gave_up())
                    FAILF("iteration %d: the reader gave up", k);
                else
                    FAILF("iteration %d: the peer's RDMA Reads of %zu B had not completed after "
                          "%.2f s of computing with no library call",
                          k, size[k], RV_COMPUTE_MAX);
                break;
            }
            if (!EXPECT_DTO(p.req_evd, p.ep, 0x10 + (uint64_t)k, DAT_DTO_SUCCESS, sizeof(m)) ||
                !EXPECT_DTO(p.recv_evd, p.ep, 0xF0 + (uint64_t)k, DAT_DTO_SUCCESS, 4))
                break;
        }
        if (sink == 42)
            NOTE("(the computation's result: %llu)", (unsigned long long)sink);
        PSYNC(&p, 'd');
    } else {
        struct mr dst, ctl, rcv;
        double rs[RV_ITER];
        int n = 0;
        NOTE("seed 0x%llx, %d rendezvous of 1-4 MiB read in %u KiB chunks", (unsigned long long)seed,
             RV_ITER, RV_CHUNK / KiB);
        PREQUIRE(&p, mr_make(p.ia, p.pz, RV_MAX, LRW, &dst) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &ctl) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &rcv) == DAT_SUCCESS);
        /* the first rendezvous message; each next one before "done" */
        PREQUIRE(&p, POSTED(recv1(p.ep, &rcv, 0, 64, 0x20, DAT_COMPLETION_DEFAULT_FLAG)));
        PSYNC(&p, 'r');
        for (k = 0; k < RV_ITER; k++) {
            struct rts m;
            size_t posted = 0, done = 0;
            int inflight = 0, nchunk = 0, ok = 1;
            double t0, deadline;
            uint32_t fin = (uint32_t)k;
            if (!EXPECT_DTO(p.recv_evd, p.ep, 0x20 + (uint64_t)k, DAT_DTO_SUCCESS, sizeof(m)))
                goto reader_failed;
            memcpy(&m, rcv.buf, sizeof(m));
            if (m.iter != (uint32_t)k || m.buf.segment_length != size[k]) {
                FAILF("iteration %d: the rendezvous message names iteration %u, %llu B", k,
                      m.iter, (unsigned long long)m.buf.segment_length);
                goto reader_failed;
            }
            /* the exposing side is computing before the first read goes out */
            deadline = ctest_now() + 2.0;
            while (!phase_is(S, PH_COMPUTING, k) && ctest_now() < deadline)
                sched_yield();
            if (!phase_is(S, PH_COMPUTING, k)) {
                FAILF("iteration %d: the exposing side did not start computing", k);
                goto reader_failed;
            }
            memset(dst.buf, 0, size[k]);
            t0 = ctest_now();
            while (ok && done < size[k]) {
                DAT_EVENT ev;
                while (inflight < 4 && posted < size[k]) {
                    size_t len = size[k] - posted < RV_CHUNK ? size[k] - posted : RV_CHUNK;
                    DAT_RMR_TRIPLET r = m.buf;
                    r.target_address += posted;
                    r.segment_length = len;
                    if (!POSTED(read1(p.ep, &dst, posted, len, &r, (uint64_t)nchunk + inflight,
                                      DAT_COMPLETION_DEFAULT_FLAG))) {
                        ok = 0;
                        break;
                    }
                    posted += len;
                    inflight++;
                }
                if (!ok || !CWAIT(p.req_evd, &ev, "an RDMA Read completion")) {
                    ok = 0;
                    break;
                }
                {
                    size_t len = size[k] - done < RV_CHUNK ? size[k] - done : RV_CHUNK;
                    if (!check_dto_ev_at(__FILE__, __LINE__, &ev, p.req_evd, p.ep,
                                         (uint64_t)nchunk, DAT_DTO_SUCCESS, len))
                        ok = 0;
                    done += len;
                    nchunk++;
                    inflight--;
                }
            }
            if (!ok) {
                FAILF("iteration %d: RDMA Reads failed after %zu of %zu B", k, done, size[k]);
                goto reader_failed;
            }
            rs[n++] = ctest_now() - t0;
            if (!phase_is(S, PH_COMPUTING, k))
                FAILF("iteration %d: the reads of %zu B completed only after the exposing side "
                      "stopped computing and called the library (%.3f s)",
                      k, size[k], ctest_now() - t0);
            __atomic_store_n(&S->reads_done, k + 1, __ATOMIC_RELEASE);
            if (!CHECK_MSG(dst.buf, size[k], SEED5, (uint32_t)k, "buffer read in iteration"))
                goto reader_failed;
            memcpy(ctl.buf, &fin, 4);
            if (k + 1 < RV_ITER &&
                !POSTED(recv1(p.ep, &rcv, 0, 64, 0x21 + (uint64_t)k, DAT_COMPLETION_DEFAULT_FLAG)))
                goto reader_failed;
            if (!POSTED(send1(p.ep, &ctl, 0, 4, 0x30 + (uint64_t)k, DAT_COMPLETION_DEFAULT_FLAG)) ||
                !EXPECT_DTO(p.req_evd, p.ep, 0x30 + (uint64_t)k, DAT_DTO_SUCCESS, 4))
                goto reader_failed;
        }
        if (0) {
        reader_failed:
            give_up(k);
        }
        {
            struct stats st = stats_of(rs, n);
            NOTE("%d rendezvous: read time median %.2f ms, p90 %.2f ms, max %.2f ms", n,
                 st.median * 1e3, st.p90 * 1e3, st.max * 1e3);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- receive buffer polled in memory ------------------------------------------- */

#ifndef RP_ITER
#define RP_ITER 3000
#endif
#define RP_MAX (64 * KiB)
#define RP_NBUF 2
#define RP_NSEND 4
#define RP_PROMPT 1.0 /* s: a receive completion after its data has landed */
#define SEED6 0x9011u

struct rp_times {
    double post[2 * RP_ITER]; /* message m = 2i (client) or 2i+1 (server reply) */
    double seen[2 * RP_ITER];
    double done[2 * RP_ITER];
};

static unsigned char rp_marker(uint32_t m) { return (unsigned char)(1 + m % 251); }

struct rp {
    struct pair *p;
    struct mr sb, rb;
    const size_t *size;
    int sent, send_done;
    struct rp_times *T;
};

static int rp_post_recv(struct rp *x, int i)
{
    size_t off = (size_t)(i % RP_NBUF) * RP_MAX;
    memset(x->rb.buf + off, 0, x->size[i]);
    return POSTED(recv1(x->p->ep, &x->rb, off, x->size[i], 0x7000000000ull | (uint64_t)i,
                        DAT_COMPLETION_DEFAULT_FLAG));
}

static int rp_reap_sends(struct rp *x, int block)
{
    for (;;) {
        DAT_EVENT ev;
        DAT_COUNT nmore;
        DAT_RETURN r;
        if (x->send_done == x->sent)
            return 1;
        r = dat_evd_dequeue(x->p->req_evd, &ev);
        if (r != DAT_SUCCESS && block) {
            r = dat_evd_wait(x->p->req_evd, WAIT_US, 1, &ev, &nmore);
            if (r != DAT_SUCCESS) {
                FAILF("Send %d: no completion, dat_evd_wait returned 0x%08x", x->send_done,
                      (unsigned)r);
                return 0;
            }
        }
        if (r != DAT_SUCCESS)
            return 1;
        block = 0;
        if (!check_dto_ev_at(__FILE__, __LINE__, &ev, x->p->req_evd, x->p->ep,
                             0x5000000000ull | (uint64_t)x->send_done, DAT_DTO_SUCCESS,
                             x->size[x->send_done]))
            return 0;
        x->send_done++;
    }
}

static int rp_send(struct rp *x, int i)
{
    uint32_t m = (uint32_t)(2 * i + x->p->server);
    size_t off = (size_t)(i % RP_NSEND) * RP_MAX, n = x->size[i];
    if (!rp_reap_sends(x, 0))
        return 0;
    while (x->sent - x->send_done >= RP_NSEND)
        if (!rp_reap_sends(x, 1))
            return 0;
    fill_msg(x->sb.buf + off, n - 1, SEED6, m);
    x->sb.buf[off + n - 1] = rp_marker(m);
    x->T->post[m] = ctest_now();
    if (!POSTED(send1(x->p->ep, &x->sb, off, n, 0x5000000000ull | (uint64_t)i,
                      DAT_COMPLETION_DEFAULT_FLAG))) {
        FAILF("iteration %d: the Send was refused", i);
        return 0;
    }
    x->sent++;
    return 1;
}

/* Polls the last byte of receive i, then takes its completion. */
static int rp_receive(struct rp *x, int i)
{
    uint32_t m = (uint32_t)(2 * i + !x->p->server);
    size_t n = x->size[i];
    const unsigned char *b = x->rb.buf + (size_t)(i % RP_NBUF) * RP_MAX;
    double deadline = ctest_now() + WAIT_US / 1e6, t;
    unsigned spins = 0;
    DAT_EVENT ev;
    DAT_RETURN r;
    /* no library call until the last byte has landed */
    while (load8_acquire(b + n - 1) != rp_marker(m)) {
        poll_step(&spins);
        if ((spins & 63) == 0 && (ctest_now() > deadline || peer_gave_up()))
            break;
    }
    if (load8_acquire(b + n - 1) != rp_marker(m)) {
        FAILF("iteration %d: message %u (%zu B) not placed after %.2f s while this side polled "
              "its memory (last byte 0x%02x, want 0x%02x)",
              i, m, n, ctest_now() - deadline + WAIT_US / 1e6, b[n - 1], rp_marker(m));
        explain_peer();
        return 0;
    }
    x->T->seen[m] = t = ctest_now();
    /* the receive completion must follow promptly */
    spins = 0;
    while ((r = dat_evd_dequeue(x->p->recv_evd, &ev)) != DAT_SUCCESS) {
        if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY) {
            FAILF("iteration %d: dat_evd_dequeue returned 0x%08x", i, (unsigned)r);
            return 0;
        }
        if (ctest_now() - t > RP_PROMPT) {
            FAILF("iteration %d: the receive completion of message %u was not there %.1f s "
                  "after its last byte landed",
                  i, m, RP_PROMPT);
            return 0;
        }
        poll_step(&spins);
    }
    x->T->done[m] = ctest_now();
    if (!check_dto_ev_at(__FILE__, __LINE__, &ev, x->p->recv_evd, x->p->ep,
                         0x7000000000ull | (uint64_t)i, DAT_DTO_SUCCESS, n))
        return 0;
    ctest_handover(b, n);
    return CHECK_MSG(b, n - 1, SEED6, m, "message");
}

TEST(RECV_POLLED_last_byte_then_completion_pingpong)
{
    static size_t size[RP_ITER + 1];
    struct pair p;
    struct rp x;
    struct rng rg;
    uint64_t seed = consumer_seed(SEED6);
    struct rp_times *T = shared_alloc(sizeof(*T));
    DAT_EP_ATTR a = consumer_ep_attr(64, 4 * MiB);
    double t0;
    int i;

    REQUIRE(T != NULL);
    rng_init(&rg, seed);
    for (i = 0; i <= RP_ITER; i++)
        size[i] = rng_logsize(&rg, 1, RP_MAX);
    size[0] = 1;
    size[1] = RP_MAX;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    REQUIRE(cpair_start(&p, 64) == 0);
    PREQUIRE(&p, cpair_connect(&p, &a) == 0);
    memset(&x, 0, sizeof(x));
    x.p = &p;
    x.size = size;
    x.T = T;
    PREQUIRE(&p, mr_make(p.ia, p.pz, RP_NSEND * RP_MAX, LRW, &x.sb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, RP_NBUF * RP_MAX, LRW, &x.rb) == DAT_SUCCESS);
    PREQUIRE(&p, rp_post_recv(&x, 0));
    if (!p.server)
        NOTE("seed 0x%llx, %d round trips of 1 B - 64 KiB", (unsigned long long)seed, RP_ITER);
    PSYNC(&p, 'r');
    t0 = ctest_now();
    for (i = 0; i < RP_ITER; i++) {
        if (p.server ? !rp_receive(&x, i) || (i + 1 < RP_ITER && !rp_post_recv(&x, i + 1)) ||
                           !rp_send(&x, i)
                     : !rp_send(&x, i) || !rp_receive(&x, i) ||
                           (i + 1 < RP_ITER && !rp_post_recv(&x, i + 1))) {
            give_up(i);
            break;
        }
        if (OVER_BUDGET(t0, i + 1, RP_ITER, "round trips"))
            break;
    }
    if (i == RP_ITER)
        rp_reap_sends(&x, 1);
    if (!p.server)
        NOTE("%d round trips in %.3f s", i, ctest_now() - t0);
    PSYNC(&p, 'd');
    if (!p.server) {
        static double lat[2 * RP_ITER], lag[2 * RP_ITER];
        int n = 0;
        for (int m = 0; m < 2 * i; m++) {
            lat[n] = T->done[m] - T->post[m];
            lag[n] = T->done[m] - T->seen[m];
            n++;
        }
        {
            struct stats st = stats_of(lag, n);
            NOTE("last byte seen to completion taken: median %.1f us, max %.1f us",
                 st.median * 1e6, st.max * 1e6);
        }
        report_latency("time from Send posted to receive completion taken", lat, n);
    }
    pair_finish(&p);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
