/*
 * Bad handles and bad input at post time (rulings.md rule 1; semantics-ep.md
 * §0.2, §3.6, §3.7, §4.13–§4.16, §4.28–§4.33; abi-errors.md §5).
 *
 *   HND_DTO_01…05  every post call: NULL, misaligned, garbage, freed and
 *                  wrong-type EP handles → DAT_INVALID_HANDLE, never a crash
 *   HND_SRQ_01…06  every call taking an SRQ handle, the same sweep
 *   E2E_DTO_BADPOST_*  per DTO kind on a connected pair: wrong state, too
 *                  many segments, NULL IOV, an LMR context of another IA,
 *                  an LMR of another PZ, a range outside its LMR, more posts
 *                  than the queue depth: the documented code each time, and
 *                  a following correct post works (data checked)
 */
#include "dto_helpers.h"

#define EP_PRE (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP)
#define SRQ_PRE (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_SRQ)

static void crash_note(int sig)
{
    static const char m[] = "    crashed inside a DAT call on a bad handle\n";
    ssize_t w = write(2, m, sizeof(m) - 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard(void)
{
    signal(SIGSEGV, crash_note);
    signal(SIGBUS, crash_note);
    signal(SIGABRT, crash_note);
}

static void expect_at(int line, const char *what, DAT_RETURN got, DAT_RETURN want, int exact)
{
    int ok = exact ? got == want
                   : (DAT_GET_TYPE(got) == DAT_GET_TYPE(want) && (got & DAT_CLASS_ERROR));
    if (!ok) {
        fprintf(stderr, "    line %d: %s: got 0x%08x, want %s 0x%08x\n", line, what,
                (unsigned)got, exact ? "exactly" : "type", (unsigned)want);
        ctest_failures++;
    }
}

/* ---- EP handles of the post calls ------------------------------------------- */

enum kind { K_SEND, K_RECV, K_READ, K_WRITE };
static const char *kind_name[] = {"dat_ep_post_send", "dat_ep_post_recv",
                                  "dat_ep_post_rdma_read", "dat_ep_post_rdma_write"};

static DAT_RETURN post_k(enum kind k, DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                         uint64_t cookie, const DAT_RMR_TRIPLET *r, DAT_COMPLETION_FLAGS fl)
{
    switch (k) {
    case K_SEND: return dat_ep_post_send(ep, n, iov, ck(cookie), fl);
    case K_RECV: return dat_ep_post_recv(ep, n, iov, ck(cookie), fl);
    case K_READ: return dat_ep_post_rdma_read(ep, n, iov, ck(cookie), r, fl);
    default: return dat_ep_post_rdma_write(ep, n, iov, ck(cookie), r, fl);
    }
}

/* The bad-handle sweep of one post call on the one-process fixture. */
static void ep_handle_sweep(enum kind k)
{
    struct loc l;
    struct mr m;
    DAT_EP_HANDLE dead;
    DAT_LMR_TRIPLET t;
    DAT_RMR_TRIPLET r = rtr(0x1234, 0x10000, 64);
    void *heap;
    const char *n = kind_name[k];
    char what[96];

    guard();
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    REQUIRE(dat_ep_create(l.ia, l.pz, l.recv, l.req, l.conn, NULL, &dead) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(dead) == DAT_SUCCESS);
    t = tr(&m, 0, 64);
    heap = malloc(256);
    REQUIRE(heap != NULL);
    memset(heap, 0x5C, 256);

#define TRY(h, want, exact)                                                                    \
    do {                                                                                       \
        snprintf(what, sizeof(what), "%s(%s)", n, #h);                                         \
        expect_at(__LINE__, what, post_k(k, (h), 1, &t, 1, &r, 0), (want), (exact));           \
        expect_at(__LINE__, what, post_k(k, (h), 0, NULL, 2, &r, 0), (want), (exact));         \
    } while (0)

    TRY(DAT_HANDLE_NULL, EP_PRE, 1);
    TRY(misalign(l.ep), EP_PRE, 1);
    TRY((DAT_HANDLE)((uintptr_t)l.ep + 2), EP_PRE, 1);
    TRY((DAT_HANDLE)((uintptr_t)l.ep + 3), EP_PRE, 1);
    TRY((DAT_HANDLE)&dto_junk[0], DAT_INVALID_HANDLE, 0);
    TRY((DAT_HANDLE)heap, DAT_INVALID_HANDLE, 0);
    TRY((DAT_HANDLE)(uintptr_t)0x1000, DAT_INVALID_HANDLE, 0);
    TRY((DAT_HANDLE)(uintptr_t)0xFFFFFFFFFFFFF000ull, DAT_INVALID_HANDLE, 0);
    TRY(dead, DAT_INVALID_HANDLE, 0);
    TRY(l.pz, DAT_INVALID_HANDLE, 0);
    TRY(l.ia, DAT_INVALID_HANDLE, 0);
    TRY(l.req, DAT_INVALID_HANDLE, 0);
    TRY(m.h, DAT_INVALID_HANDLE, 0);
#undef TRY
    free(heap);
    /* nothing was queued, and the live EP still takes a (legal) post */
    EXPECT_NONE(l.req);
    EXPECT_NONE(l.recv);
    if (k == K_RECV)
        CHECK_OK(post_k(k, l.ep, 1, &t, 3, NULL, 0));
    else
        CHECK_TYPE(post_k(k, l.ep, 1, &t, 3, &r, 0), DAT_INVALID_STATE); /* UNCONNECTED */
}

TEST(HND_DTO_01_post_send) { ep_handle_sweep(K_SEND); }
TEST(HND_DTO_02_post_recv) { ep_handle_sweep(K_RECV); }
TEST(HND_DTO_03_post_rdma_read) { ep_handle_sweep(K_READ); }
TEST(HND_DTO_04_post_rdma_write) { ep_handle_sweep(K_WRITE); }

/* A connected EP, freed: every post call on its handle → INVALID_HANDLE; the
 * peer sees the connection go; nothing new appears on the freed EP's EVDs. */
TEST(HND_DTO_05_freed_connected_ep)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        PSYNC(&p, 'f');
        EXPECT_GONE(p.conn_evd, p.ep);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        DAT_LMR_TRIPLET t;
        DAT_RMR_TRIPLET r = rtr(0x1234, 0x10000, 64);
        guard();
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        t = tr(&m, 0, 64);
        CHECK_OK(dat_ep_free(p.ep));
        PSYNC(&p, 'f');
        for (int k = K_SEND; k <= K_WRITE; k++) {
            expect_at(__LINE__, kind_name[k], post_k((enum kind)k, p.ep, 1, &t, 1, &r, 0),
                      DAT_INVALID_HANDLE, 0);
            expect_at(__LINE__, kind_name[k], post_k((enum kind)k, p.ep, 0, NULL, 2, &r, 0),
                      DAT_INVALID_HANDLE, 0);
        }
        EXPECT_NONE(p.req_evd);
        EXPECT_NONE(p.recv_evd);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- SRQ handles ---------------------------------------------------------------- */

enum sfn { S_FREE, S_POST, S_QUERY, S_RESIZE, S_SETLW };

static DAT_RETURN srq_call(enum sfn f, DAT_SRQ_HANDLE h, const struct mr *m)
{
    DAT_SRQ_PARAM q;
    DAT_LMR_TRIPLET t = tr(m, 0, 64);
    switch (f) {
    case S_FREE: return dat_srq_free(h);
    case S_POST: return dat_srq_post_recv(h, 1, &t, ck(1));
    case S_QUERY: return dat_srq_query(h, DAT_SRQ_FIELD_ALL, &q);
    case S_RESIZE: return dat_srq_resize(h, 32);
    default: return dat_srq_set_lw(h, 0);
    }
}

static const char *sfn_name[] = {"dat_srq_free", "dat_srq_post_recv", "dat_srq_query",
                                 "dat_srq_resize", "dat_srq_set_lw"};

static void srq_handle_sweep(enum sfn f)
{
    struct loc l;
    struct mr m;
    DAT_PROVIDER_ATTR pa;
    DAT_SRQ_HANDLE live = DAT_HANDLE_NULL, dead = DAT_HANDLE_NULL;
    DAT_SRQ_ATTR sa = {16, 1, 0};
    void *heap;
    char what[96];

    guard();
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(ia_attrs(l.ia, NULL, &pa) == 0);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    heap = malloc(256);
    REQUIRE(heap != NULL);
    memset(heap, 0x3C, 256);
    if (pa.srq_supported) {
        REQUIRE(dat_srq_create(l.ia, l.pz, &sa, &live) == DAT_SUCCESS);
        REQUIRE(dat_srq_create(l.ia, l.pz, &sa, &dead) == DAT_SUCCESS);
        REQUIRE(dat_srq_free(dead) == DAT_SUCCESS);
    }

#define TRY(h, want, exact)                                                                    \
    do {                                                                                       \
        snprintf(what, sizeof(what), "%s(%s)", sfn_name[f], #h);                               \
        expect_at(__LINE__, what, srq_call(f, (h), &m), (want), (exact));                     \
    } while (0)

    TRY(DAT_HANDLE_NULL, SRQ_PRE, 1);
    TRY((DAT_HANDLE)((uintptr_t)&dto_junk[0] + 1), SRQ_PRE, 1);
    TRY((DAT_HANDLE)&dto_junk[0], DAT_INVALID_HANDLE, 0);
    TRY((DAT_HANDLE)heap, DAT_INVALID_HANDLE, 0);
    TRY((DAT_HANDLE)(uintptr_t)0x1000, DAT_INVALID_HANDLE, 0);
    TRY(l.ep, DAT_INVALID_HANDLE, 0);
    TRY(l.pz, DAT_INVALID_HANDLE, 0);
    TRY(l.recv, DAT_INVALID_HANDLE, 0);
    TRY(m.h, DAT_INVALID_HANDLE, 0);
    if (pa.srq_supported) {
        TRY(misalign(live), SRQ_PRE, 1);
        TRY(dead, DAT_INVALID_HANDLE, 0);
    } else {
        NOTE_SKIP("no SRQ support: freed and misaligned-live cases not run");
    }
#undef TRY
    free(heap);
    EXPECT_NONE(l.recv);
    if (pa.srq_supported) {
        /* the live SRQ is unharmed */
        DAT_SRQ_PARAM q;
        CHECK_OK(dat_srq_query(live, DAT_SRQ_FIELD_ALL, &q));
        CHECK(q.srq_state == DAT_SRQ_STATE_OPERATIONAL && q.pz_handle == l.pz);
        CHECK_OK(dat_srq_free(live));
    }
    /* the PZ was not left referenced by the failed calls */
    CHECK_OK(dat_lmr_free(m.h));
}

TEST(HND_SRQ_01_srq_free) { srq_handle_sweep(S_FREE); }
TEST(HND_SRQ_02_srq_post_recv) { srq_handle_sweep(S_POST); }
TEST(HND_SRQ_03_srq_query) { srq_handle_sweep(S_QUERY); }
TEST(HND_SRQ_04_srq_resize) { srq_handle_sweep(S_RESIZE); }
TEST(HND_SRQ_05_srq_set_lw) { srq_handle_sweep(S_SETLW); }

/* The SRQ argument of dat_ep_create_with_srq (§4.2: subtype SRQ). */
TEST(HND_SRQ_06_ep_create_with_srq)
{
    struct loc l;
    DAT_EP_ATTR a;
    DAT_EP_HANDLE ep;
    DAT_PROVIDER_ATTR pa;
    DAT_SRQ_ATTR sa = {16, 1, 0};
    DAT_SRQ_HANDLE dead;
    char what[96];

    guard();
    REQUIRE(loc_open(&l) == 0);
    REQUIRE(ia_attrs(l.ia, NULL, &pa) == 0);
    REQUIRE(ep_defaults(l.ia, l.pz, l.recv, l.req, l.conn, &a) == 0);
    a.max_recv_dtos = DAT_HW_DEFAULT;
    a.srq_soft_hw = DAT_HW_DEFAULT;
#define TRY(h)                                                                                 \
    do {                                                                                       \
        snprintf(what, sizeof(what), "dat_ep_create_with_srq(srq=%s)", #h);                    \
        expect_at(__LINE__, what,                                                              \
                  dat_ep_create_with_srq(l.ia, l.pz, l.recv, l.req, l.conn, (h), &a, &ep),     \
                  SRQ_PRE, 1);                                                                 \
    } while (0)
    TRY(DAT_HANDLE_NULL);
    TRY((DAT_HANDLE)((uintptr_t)&dto_junk[0] + 1));
    TRY((DAT_HANDLE)&dto_junk[0]);
    TRY((DAT_HANDLE)(uintptr_t)0x1000);
    TRY(l.pz);
    TRY(l.recv);
    if (pa.srq_supported) {
        REQUIRE(dat_srq_create(l.ia, l.pz, &sa, &dead) == DAT_SUCCESS);
        REQUIRE(dat_srq_free(dead) == DAT_SUCCESS);
        TRY(dead);
    }
#undef TRY
    /* no EP was left behind holding the PZ or the EVDs */
    CHECK_OK(dat_pz_free(l.pz));
    CHECK_OK(dat_evd_free(l.recv));
}

/* ---- bad input at post on a connected pair ---------------------------------------- */

/*
 * The client's LMR context of another IA: registered on a second IA of this
 * process, distinct from every context in `ours`.
 */
static DAT_LMR_CONTEXT foreign_context(const DAT_LMR_CONTEXT *ours, int n, void *buf)
{
    DAT_IA_HANDLE ia2;
    DAT_EVD_HANDLE aevd2;
    DAT_PZ_HANDLE pz2;
    if (ctest_open_ia(&ia2, &aevd2) != DAT_SUCCESS || dat_pz_create(ia2, &pz2) != DAT_SUCCESS)
        return 0;
    for (int tries = 0; tries < 16; tries++) {
        struct mr o;
        int clash = 0;
        if (mr_over(ia2, pz2, buf, 4096, LRW, &o) != DAT_SUCCESS)
            return 0;
        for (int i = 0; i < n; i++)
            clash |= o.lc == ours[i];
        if (!clash)
            return o.lc;
    }
    return 0;
}

/* Client and server halves by kind. The server of K_SEND receives and checks
 * messages (message i: 16 bytes, pattern 500 + i) until told the count; the
 * server of K_RECV sends them on request; the server of K_READ/K_WRITE
 * exports a 64 KiB region (pattern 7) and waits. */
enum { REGION = 65536 };

struct cli {
    struct pair *p;
    enum kind k;
    DAT_RMR_TRIPLET r;
    struct mr m;       /* 64 KiB, our PZ */
    int sent;          /* K_SEND: good messages sent */
    int asked;         /* K_RECV: messages requested */
    uint64_t cookie;
};

/* K_RECV: ask the server for n messages; they arrive in the client's receives. */
static void ask(struct cli *c, int n)
{
    DAT_UINT32 v = (DAT_UINT32)n;
    char ack = 0;
    if (pair_tell(c->p, &v, sizeof(v)) != 0 || pair_hear(c->p, &ack, 1) != 0 || ack != 'k') {
        CHECK(!"K_RECV request");
        return;
    }
    c->asked += n;
}

/* One correct post of the kind, completed and checked. */
static void good_post(struct cli *c)
{
    struct pair *p = c->p;
    uint64_t ck_ = ++c->cookie + 0x6000;
    switch (c->k) {
    case K_SEND:
        fill_pat(c->m.buf, 16, 500 + (uint32_t)c->sent);
        CHECK_OK(send1(p->ep, &c->m, 0, 16, ck_, 0));
        EXPECT_DTO(p->req_evd, p->ep, ck_, DAT_DTO_SUCCESS, 16);
        c->sent++;
        break;
    case K_RECV:
        memset(c->m.buf, 0, 64);
        CHECK_OK(recv1(p->ep, &c->m, 0, 64, ck_, 0));
        ask(c, 1);
        if (EXPECT_DTO(p->recv_evd, p->ep, ck_, DAT_DTO_SUCCESS, 16))
            CHECK_PAT(c->m.buf, 16, 500 + (uint32_t)c->asked - 1, 0);
        break;
    case K_READ: {
        DAT_RMR_TRIPLET r = c->r;
        r.target_address += 4096;
        r.segment_length = 256;
        memset(c->m.buf, 0, 256);
        CHECK_OK(read1(p->ep, &c->m, 0, 256, &r, ck_, 0));
        if (EXPECT_DTO(p->req_evd, p->ep, ck_, DAT_DTO_SUCCESS, 256))
            CHECK_PAT(c->m.buf, 256, 7, 4096);
        break;
    }
    default: {
        DAT_RMR_TRIPLET r = c->r;
        r.target_address += 8192;
        r.segment_length = 256;
        fill_pat(c->m.buf, 256, 800 + (uint32_t)c->cookie);
        CHECK_OK(write1(p->ep, &c->m, 0, 256, &r, ck_, 0));
        EXPECT_DTO(p->req_evd, p->ep, ck_, DAT_DTO_SUCCESS, 256);
        /* read it back */
        memset(c->m.buf + 1024, 0, 256);
        CHECK_OK(read1(p->ep, &c->m, 1024, 256, &r, ck_ + 0x1000, 0));
        if (EXPECT_DTO(p->req_evd, p->ep, ck_ + 0x1000, DAT_DTO_SUCCESS, 256))
            CHECK_PAT(c->m.buf + 1024, 256, 800 + (uint32_t)c->cookie, 0);
        break;
    }
    }
}

/* A bad post: the documented type, then a correct post works. */
static void bad_then_good(struct cli *c, int line, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                          const DAT_RMR_TRIPLET *r, DAT_RETURN want)
{
    DAT_RMR_TRIPLET rr;
    DAT_RETURN got;
    if (c->k == K_READ && iov != NULL && n > 0) {
        /* the remote length matches the local total: no length error on top */
        rr = *r;
        rr.segment_length = 0;
        for (DAT_COUNT i = 0; i < n; i++)
            rr.segment_length += iov[i].segment_length;
        r = &rr;
    }
    got = post_k(c->k, c->p->ep, n, iov, 0xBAD, r, 0);
    expect_at(line, kind_name[c->k], got, want, 0);
    /* a completion of the refused post would show up ahead of the good one */
    good_post(c);
}

static struct mr g_um;     /* for the UNCONNECTED check in the hook */
static enum kind g_kind;   /* the kind of the running E2E_DTO_BADPOST case */

static void badpost_created(struct pair *p)
{
    DAT_RMR_TRIPLET r = rtr(0x1234, 0x10000, 64);
    DAT_LMR_TRIPLET t;
    enum kind k = g_kind;
    if (p->server || k == K_RECV)
        return;
    if (mr_make(p->ia, p->pz, 4096, LRW, &g_um) != DAT_SUCCESS) {
        CHECK(!"mr_make");
        return;
    }
    t = tr(&g_um, 0, 64);
    expect_at(__LINE__, kind_name[k], post_k(k, p->ep, 1, &t, 0xBAD, &r, 0), DAT_INVALID_STATE,
              0);
}

static void badpost(enum kind k)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0);
    a.max_request_dtos = 8;
    a.max_recv_dtos = k == K_RECV ? 8 : 64;
    a.max_rdma_read_out = 8;
    a.max_rdma_read_in = 8;
    g_kind = k;
    PREQUIRE(&p, dpair_connect(&p, &a, badpost_created, NULL) == 0);
    if (p.server) {
        struct mr m;
        if (k == K_SEND) {
            DAT_UINT32 total = 0;
            int i;
            PREQUIRE(&p, post_recvs(&p, p.ep, &m, 64, 64, 0) == 0);
            PSYNC(&p, 'r');
            PREQUIRE(&p, pair_hear(&p, &total, sizeof(total)) == 0);
            for (i = 0; i < (int)total; i++)
                if (EXPECT_DTO(p.recv_evd, p.ep, (uint64_t)i, DAT_DTO_SUCCESS, 16))
                    CHECK_PAT(m.buf + 64 * i, 16, 500 + (uint32_t)i, 0);
            EXPECT_NONE(p.recv_evd);
        } else if (k == K_RECV) {
            int sent = 0;
            PREQUIRE(&p, mr_make(p.ia, p.pz, 64 * 64, LRW, &m) == DAT_SUCCESS);
            PSYNC(&p, 'r');
            for (;;) {
                DAT_UINT32 n = 0;
                char ack = 'k';
                PREQUIRE(&p, pair_hear(&p, &n, sizeof(n)) == 0);
                if (n == 0)
                    break;
                for (DAT_UINT32 j = 0; j < n; j++, sent++) {
                    fill_pat(m.buf + 64 * (sent % 64), 16, 500 + (uint32_t)sent);
                    CHECK_OK(send1(p.ep, &m, 64 * (size_t)(sent % 64), 16, (uint64_t)sent, 0));
                    EXPECT_DTO(p.req_evd, p.ep, (uint64_t)sent, DAT_DTO_SUCCESS, 16);
                }
                PREQUIRE(&p, pair_tell(&p, &ack, 1) == 0);
            }
        } else {
            DAT_RMR_TRIPLET r;
            PREQUIRE(&p, mr_make(p.ia, p.pz, REGION, LRW | RRW, &m) == DAT_SUCCESS);
            fill_pat(m.buf, REGION, 7);
            r = rtr_of(&m, 0, REGION);
            PREQUIRE(&p, tell_rtr(&p, &r) == 0);
            PSYNC(&p, 'r');
        }
        PSYNC(&p, 'd');
    } else {
        struct cli c;
        struct mr o, narrow;
        DAT_PZ_HANDLE pz2;
        DAT_EP_ATTR got;
        DAT_LMR_TRIPLET iov[2], *many;
        DAT_LMR_CONTEXT ours[4], fc;
        DAT_COUNT maxiov, depth;
        const DAT_RMR_TRIPLET *rp;
        DAT_RMR_TRIPLET r256;
        memset(&c, 0, sizeof(c));
        c.p = &p;
        c.k = k;
        if (k == K_READ || k == K_WRITE)
            PREQUIRE(&p, hear_rtr(&p, &c.r) == 0);
        PSYNC(&p, 'r');
        PREQUIRE(&p, ep_attr_of(p.ep, &got) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, REGION, LRW, &c.m) == DAT_SUCCESS);
        PREQUIRE(&p, dat_pz_create(p.ia, &pz2) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, pz2, 4096, LRW, &o) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &narrow) == DAT_SUCCESS);
        r256 = c.r;
        r256.segment_length = 256;
        rp = (k == K_READ || k == K_WRITE) ? &r256 : NULL;
        /* 0. the EP that refused the post while UNCONNECTED works now */
        good_post(&c);
        /* 1. too many segments (and a negative count) */
        maxiov = k == K_RECV ? got.max_recv_iov
                 : k == K_SEND ? got.max_request_iov
                 : k == K_READ ? got.max_rdma_read_iov
                               : got.max_rdma_write_iov;
        PREQUIRE(&p, maxiov >= 1 && maxiov < 4096);
        many = calloc((size_t)maxiov + 1, sizeof(*many));
        PREQUIRE(&p, many != NULL);
        for (DAT_COUNT i = 0; i <= maxiov; i++)
            many[i] = tr(&c.m, 16 * (size_t)i, 1);
        bad_then_good(&c, __LINE__, maxiov + 1, many, rp, DAT_INVALID_PARAMETER);
        bad_then_good(&c, __LINE__, -1, many, rp, DAT_INVALID_PARAMETER);
        free(many);
        /* 2. NULL IOV with segments */
        bad_then_good(&c, __LINE__, 1, NULL, rp, DAT_INVALID_PARAMETER);
        /* 3. an LMR context of another IA */
        ours[0] = c.m.lc;
        ours[1] = o.lc;
        ours[2] = narrow.lc;
        ours[3] = g_um.lc;
        fc = foreign_context(ours, 4, dbuf(4096));
        PREQUIRE(&p, fc != 0);
        iov[0] = tr_raw(fc, (DAT_VADDR)(uintptr_t)c.m.buf, 16);
        bad_then_good(&c, __LINE__, 1, iov, rp, DAT_PRIVILEGES_VIOLATION);
        /* 4. an LMR of another PZ (alone, and behind a good segment) */
        iov[0] = tr(&o, 0, 16);
        bad_then_good(&c, __LINE__, 1, iov, rp, DAT_PROTECTION_VIOLATION);
        iov[0] = tr(&c.m, 0, 8);
        iov[1] = tr(&o, 0, 8);
        bad_then_good(&c, __LINE__, 2, iov, rp, DAT_PROTECTION_VIOLATION);
        /* 5. a range outside its LMR */
        iov[0] = tr(&narrow, 4090, 16);
        bad_then_good(&c, __LINE__, 1, iov, rp, DAT_INVALID_PARAMETER);
        iov[0] = tr_raw(narrow.lc, (DAT_VADDR)(uintptr_t)narrow.buf + 8192, 16);
        bad_then_good(&c, __LINE__, 1, iov, rp, DAT_INVALID_PARAMETER);
        /* 6. more posts than the queue depth */
        depth = k == K_RECV ? got.max_recv_dtos : got.max_request_dtos;
        PREQUIRE(&p, depth >= 1 && depth <= 32);
        if (k == K_RECV) {
            for (DAT_COUNT i = 0; i < depth; i++)
                CHECK_OK(recv1(p.ep, &c.m, 64 * (size_t)i, 64, 0x7000 + (uint64_t)i, 0));
            CHECK_TYPE(recv1(p.ep, &c.m, 0, 64, 0x7FFF, 0), DAT_INSUFFICIENT_RESOURCES);
            ask(&c, (int)depth);
            for (DAT_COUNT i = 0; i < depth; i++)
                if (EXPECT_DTO(p.recv_evd, p.ep, 0x7000 + (uint64_t)i, DAT_DTO_SUCCESS, 16))
                    CHECK_PAT(c.m.buf + 64 * i, 16, 500 + (uint32_t)(c.asked - depth + i), 0);
        } else {
            for (DAT_COUNT i = 0; i < depth; i++) {
                DAT_LMR_TRIPLET t = tr(&c.m, 256 * (size_t)i, k == K_SEND ? 16 : 256);
                if (k == K_SEND)
                    fill_pat(c.m.buf + 256 * i, 16, 500 + (uint32_t)c.sent++);
                if (k == K_WRITE)
                    fill_pat(c.m.buf + 256 * i, 256, 900);
                CHECK_OK(post_k(k, p.ep, 1, &t, 0x7000 + (uint64_t)i, rp, 0));
            }
            ctest_sleep_ms(100);
            {
                DAT_LMR_TRIPLET t = tr(&c.m, 0, k == K_SEND ? 16 : 256);
                CHECK_TYPE(post_k(k, p.ep, 1, &t, 0x7FFF, rp, 0), DAT_INSUFFICIENT_RESOURCES);
            }
            for (DAT_COUNT i = 0; i < depth; i++)
                EXPECT_DTO(p.req_evd, p.ep, 0x7000 + (uint64_t)i, DAT_DTO_SUCCESS,
                           k == K_SEND ? 16 : 256);
            if (k == K_READ)
                for (DAT_COUNT i = 0; i < depth; i++)
                    CHECK_PAT(c.m.buf + 256 * i, 256, 7, 0);
        }
        good_post(&c);
        CHECK(ep_state(p.ep) == DAT_EP_STATE_CONNECTED);
        EXPECT_NONE(p.req_evd);
        EXPECT_NONE(p.recv_evd);
        EXPECT_NONE(p.conn_evd);
        if (k == K_SEND) {
            DAT_UINT32 total = (DAT_UINT32)c.sent;
            PREQUIRE(&p, pair_tell(&p, &total, sizeof(total)) == 0);
        } else if (k == K_RECV) {
            DAT_UINT32 zero = 0;
            PREQUIRE(&p, pair_tell(&p, &zero, sizeof(zero)) == 0);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(E2E_DTO_BADPOST_send) { badpost(K_SEND); }
TEST(E2E_DTO_BADPOST_recv) { badpost(K_RECV); }
TEST(E2E_DTO_BADPOST_rdma_read) { badpost(K_READ); }
TEST(E2E_DTO_BADPOST_rdma_write) { badpost(K_WRITE); }

int main(int argc, char **argv) { return ctest_main(argc, argv); }
