/*
 * Shared receive queues (semantics-ep.md §4.28–§4.33, §3.3 rule 6, §3.4).
 * IDs: SQC-01…09, SQF-01…05, SQP-01…15, SQQ-01…05, 07, SQR-01…03, 05…07,
 * SQL-01, 02. Withdrawn: SQQ-06, SQR-04, SQL-03…07.
 *
 * Capability gating (§4.0): when the provider reports srq_supported FALSE,
 * SQC-07 asserts DAT_MODEL_NOT_SUPPORTED and the other cases skip.
 */
#include "dto_helpers.h"

static DAT_PROVIDER_ATTR g_pa;
static DAT_IA_ATTR g_ia;

static int srq_supported(DAT_IA_HANDLE ia)
{
    if (ia_attrs(ia, &g_ia, &g_pa) != 0)
        return 0;
    return g_pa.srq_supported ? 1 : 0;
}

#define NEED_SRQ(ia)                                                                           \
    do {                                                                                       \
        if (!srq_supported(ia))                                                                \
            SKIP("provider reports no SRQ support");                                           \
    } while (0)

/* In a pair test, both sides run this right after dpair_start. */
#define PNEED_SRQ(p)                                                                           \
    do {                                                                                       \
        if (!srq_supported((p)->ia))                                                           \
            PSKIP(p, "provider reports no SRQ support");                                       \
    } while (0)

static DAT_RETURN srq_make(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_COUNT n, DAT_COUNT iov,
                           DAT_SRQ_HANDLE *srq)
{
    DAT_SRQ_ATTR a;
    a.max_recv_dtos = n;
    a.max_recv_iov = iov;
    a.low_watermark = DAT_SRQ_LW_DEFAULT;
    return dat_srq_create(ia, pz, &a, srq);
}

static DAT_RETURN srq_post1(DAT_SRQ_HANDLE srq, const struct mr *m, size_t off, DAT_VLEN len,
                            uint64_t cookie)
{
    DAT_LMR_TRIPLET t = tr(m, off, len);
    return dat_srq_post_recv(srq, 1, &t, ck(cookie));
}

static DAT_SRQ_PARAM srq_q(DAT_SRQ_HANDLE srq)
{
    DAT_SRQ_PARAM q;
    memset(&q, 0xA5, sizeof(q));
    if (dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q) != DAT_SUCCESS) {
        fprintf(stderr, "    %sdat_srq_query failed\n", side());
        ctest_failures++;
        memset(&q, 0, sizeof(q));
        q.available_dto_count = q.outstanding_dto_count = -99;
    }
    return q;
}

/* A counter value is `want`, or DAT_VALUE_UNKNOWN where the provider says
 * it does not support SRQ counters. */
static int count_is_at(const char *file, int line, DAT_COUNT got, DAT_COUNT want, const char *what)
{
    if (got == want)
        return 1;
    if (got == DAT_VALUE_UNKNOWN && !g_pa.srq_info_supported)
        return 1;
    fprintf(stderr, "    %s:%d: %s%s is %d, want %d%s\n", file, line, side(), what, (int)got,
            (int)want, g_pa.srq_info_supported ? "" : " or DAT_VALUE_UNKNOWN");
    ctest_failures++;
    return 0;
}
#define CHECK_COUNT(got, want) count_is_at(__FILE__, __LINE__, (got), (want), #got)

/* Default attributes for an SRQ EP (max_recv_dtos, srq_soft_hw: DAT_HW_DEFAULT). */
static int srq_ep_attr(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv,
                       DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn, DAT_EP_ATTR *a)
{
    if (ep_defaults(ia, pz, recv, req, conn, a) != 0)
        return -1;
    a->max_recv_dtos = DAT_HW_DEFAULT;
    a->srq_soft_hw = DAT_HW_DEFAULT;
    return 0;
}

/* Server: an SRQ EP on the fixture's EVDs, accepted; client: pair_connect. */
static int srq_connect(struct pair *p, DAT_SRQ_HANDLE srq, DAT_COMPLETION_FLAGS recv_flags)
{
    DAT_EP_ATTR a;
    if (!p->server)
        return pair_connect(p, NULL);
    if (srq_ep_attr(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, &a) != 0)
        return -1;
    a.recv_completion_flags = recv_flags;
    if (dat_ep_create_with_srq(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, srq, &a,
                               &p->ep) != DAT_SUCCESS)
        return -1;
    return srv_accept(p, p->ep, p->conn_evd);
}

/* Client: n messages of `len` bytes, message i = pattern (seed0 + i). */
static void send_n(struct pair *p, DAT_EP_HANDLE ep, DAT_EVD_HANDLE req, int n, size_t len,
                   uint32_t seed0, uint64_t cookie0)
{
    struct mr m;
    DAT_EP_ATTR got;
    int posted = 0, seen = 0;
    if (mr_make(p->ia, p->pz, (size_t)n * (len ? len : 1), LRW, &m) != DAT_SUCCESS ||
        ep_attr_of(ep, &got) != 0) {
        CHECK(!"send_n setup");
        return;
    }
    for (int i = 0; i < n; i++)
        fill_pat(m.buf + (size_t)i * len, len, seed0 + (uint32_t)i);
    while (seen < n) {
        if (posted < n && posted - seen < got.max_request_dtos) {
            DAT_RETURN r = send1(ep, &m, (size_t)posted * len, len, cookie0 + (uint64_t)posted, 0);
            CHECK_OK(r);
            if (r != DAT_SUCCESS)
                return;
            posted++;
        } else {
            if (!EXPECT_DTO(req, ep, cookie0 + (uint64_t)seen, DAT_DTO_SUCCESS, len))
                return;
            seen++;
        }
    }
}

/* ---- §4.28 dat_srq_create ----------------------------------------------------- */

TEST(SQC_01_create_and_query)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_PARAM q;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 16, 2, &srq) == DAT_SUCCESS);
    CHECK(srq != DAT_HANDLE_NULL && ((uintptr_t)srq & 3) == 0);
    q = srq_q(srq);
    CHECK(q.max_recv_dtos >= 16);
    CHECK(q.max_recv_iov >= 2);
    CHECK(q.low_watermark == 0);
    CHECK(q.srq_state == DAT_SRQ_STATE_OPERATIONAL);
    CHECK(q.available_dto_count == 0 || q.available_dto_count == DAT_VALUE_UNKNOWN);
    CHECK(q.outstanding_dto_count == 0 || q.outstanding_dto_count == DAT_VALUE_UNKNOWN);
    CHECK(q.pz_handle == l.pz);
    CHECK(q.ia_handle == l.ia);
    CHECK_OK(dat_srq_free(srq));
}

TEST(SQC_02_nonzero_low_watermark_refused)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_ATTR a = {16, 2, 5};
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    CHECK_TYPE(dat_srq_create(l.ia, l.pz, &a, &srq), DAT_INVALID_PARAMETER);
    CHECK_OK(dat_pz_free(l.pz)); /* nothing was left holding the PZ */
}

TEST(SQC_03_more_than_max_recv_per_srq)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    if (g_ia.max_recv_per_srq >= 0x7FFFFFFF)
        SKIP("max_recv_per_srq has no representable successor");
    CHECK_TYPE(srq_make(l.ia, l.pz, g_ia.max_recv_per_srq + 1, 1, &srq), DAT_INVALID_PARAMETER);
    if (g_ia.max_iov_segments_per_dto < 0x7FFFFFFF)
        CHECK_TYPE(srq_make(l.ia, l.pz, 4, g_ia.max_iov_segments_per_dto + 1, &srq),
                   DAT_INVALID_PARAMETER);
}

TEST(SQC_04_zero_or_negative_sizes)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    CHECK_TYPE(srq_make(l.ia, l.pz, 0, 1, &srq), DAT_INVALID_PARAMETER);
    CHECK_TYPE(srq_make(l.ia, l.pz, -1, 1, &srq), DAT_INVALID_PARAMETER);
    CHECK_TYPE(srq_make(l.ia, l.pz, 4, 0, &srq), DAT_INVALID_PARAMETER);
    CHECK_TYPE(srq_make(l.ia, l.pz, 4, -1, &srq), DAT_INVALID_PARAMETER);
}

TEST(SQC_05_null_attr_or_out_pointer)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_ATTR a = {16, 2, 0};
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    CHECK_TYPE(dat_srq_create(l.ia, l.pz, NULL, &srq), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_srq_create(l.ia, l.pz, &a, NULL), DAT_INVALID_PARAMETER);
    CHECK_OK(dat_pz_free(l.pz));
}

TEST(SQC_06_stale_pz_null_ia)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_ATTR a = {16, 2, 0};
    DAT_PZ_HANDLE pz3;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(dat_pz_create(l.ia, &pz3) == DAT_SUCCESS);
    REQUIRE(dat_pz_free(pz3) == DAT_SUCCESS);
    CHECK_TYPE(dat_srq_create(l.ia, pz3, &a, &srq), DAT_INVALID_HANDLE);
    CHECK_RET(dat_srq_create(DAT_HANDLE_NULL, l.pz, &a, &srq),
              DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_IA);
    CHECK_TYPE(dat_srq_create(l.ia, DAT_HANDLE_NULL, &a, &srq), DAT_INVALID_HANDLE);
}

TEST(SQC_07_no_srq_support_model_not_supported)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_ATTR a = {16, 2, 0};
    REQUIRE(loc_open(&l) == 0);
    if (srq_supported(l.ia))
        SKIP("provider supports SRQs");
    CHECK_TYPE(dat_srq_create(l.ia, l.pz, &a, &srq), DAT_MODEL_NOT_SUPPORTED);
}

TEST(SQC_08_max_srqs_then_one_more)
{
    struct loc l;
    DAT_SRQ_HANDLE *s;
    struct mr m;
    DAT_COUNT i, made = 0;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    if (g_ia.max_srqs > 65536)
        SKIP("max_srqs exceeds 65 536");
    REQUIRE(g_ia.max_srqs >= 1);
    s = calloc((size_t)g_ia.max_srqs + 1, sizeof(*s));
    REQUIRE(s != NULL);
    for (i = 0; i < g_ia.max_srqs; i++) {
        DAT_RETURN r = srq_make(l.ia, l.pz, 1, 1, &s[i]);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    SRQ %d of %d: 0x%08x\n", (int)i, (int)g_ia.max_srqs, (unsigned)r);
            ctest_failures++;
            break;
        }
        made++;
    }
    if (made == g_ia.max_srqs)
        CHECK_TYPE(srq_make(l.ia, l.pz, 1, 1, &s[made]), DAT_INSUFFICIENT_RESOURCES);
    REQUIRE(made > 0 && mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_OK(srq_post1(s[0], &m, 0, 64, 1));
    CHECK_OK(srq_post1(s[made - 1], &m, 64, 64, 2));
    /* freeing one makes room again */
    CHECK_OK(dat_srq_free(s[made / 2]));
    CHECK_OK(srq_make(l.ia, l.pz, 1, 1, &s[made / 2]));
    free(s);
}

TEST(SQC_09_pz_in_use_by_srq)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz2, 4, 1, &srq) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free(l.pz2), DAT_INVALID_STATE);
    CHECK_OK(dat_srq_free(srq));
    CHECK_OK(dat_pz_free(l.pz2));
}

/* ---- §4.29 dat_srq_free --------------------------------------------------------- */

TEST(SQF_01_free_unused)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_PARAM q;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 4, 1, &srq) == DAT_SUCCESS);
    CHECK_OK(dat_srq_free(srq));
    CHECK_TYPE(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q), DAT_INVALID_HANDLE);
}

/* An SRQ EP on the one-process fixture. */
static int loc_srq_ep(struct loc *l, DAT_SRQ_HANDLE srq, DAT_EP_HANDLE *ep)
{
    DAT_EP_ATTR a;
    if (srq_ep_attr(l->ia, l->pz, l->recv, l->req, l->conn, &a) != 0)
        return -1;
    return dat_ep_create_with_srq(l->ia, l->pz, l->recv, l->req, l->conn, srq, &a, ep) ==
                   DAT_SUCCESS
               ? 0
               : -1;
}

TEST(SQF_02_free_in_use)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    struct mr m;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 4, 1, &srq) == DAT_SUCCESS);
    REQUIRE(loc_srq_ep(&l, srq, &ep) == 0);
    CHECK_RET(dat_srq_free(srq), 0x80070056u);
    CHECK_RET(dat_srq_free(srq), DAT_CLASS_ERROR | DAT_INVALID_STATE | DAT_INVALID_STATE_SRQ_IN_USE);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_OK(srq_post1(srq, &m, 0, 64, 1));
    CHECK(srq_q(srq).srq_state == DAT_SRQ_STATE_OPERATIONAL);
}

TEST(SQF_03_free_ep_then_srq)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 4, 1, &srq) == DAT_SUCCESS);
    REQUIRE(loc_srq_ep(&l, srq, &ep) == 0);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    CHECK_OK(dat_pz_free(l.pz));
}

TEST(SQF_04_double_free)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 4, 1, &srq) == DAT_SUCCESS);
    CHECK_OK(dat_srq_free(srq));
    CHECK_TYPE(dat_srq_free(srq), DAT_INVALID_HANDLE);
}

TEST(SQF_05_free_with_posted_buffers)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    for (int i = 0; i < 4; i++)
        CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, (uint64_t)i));
    CHECK_OK(dat_srq_free(srq));
    EXPECT_NONE(l.recv);
    EXPECT_NONE(l.req);
    EXPECT_NONE(l.conn);
    EXPECT_NONE(l.aevd);
    CHECK_OK(dat_lmr_free(m.h));
}

/* ---- §4.30 dat_srq_post_recv ---------------------------------------------------- */

TEST(SQP_01_post_raises_available)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    DAT_SRQ_PARAM q;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_OK(srq_post1(srq, &m, 0, 64, 1));
    q = srq_q(srq);
    CHECK_COUNT(q.available_dto_count, 1);
    CHECK_COUNT(q.outstanding_dto_count, 1);
    CHECK_OK(srq_post1(srq, &m, 64, 64, 2));
    q = srq_q(srq);
    CHECK_COUNT(q.available_dto_count, 2);
}

TEST(SQP_02_zero_size_buffer)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server)
        PREQUIRE(&p, srq_make(p.ia, p.pz, 8, 1, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, srq_connect(&p, srq, 0) == 0);
    if (p.server) {
        CHECK_OK(dat_srq_post_recv(srq, 0, NULL, ck(0x202)));
        PSYNC(&p, 'r');
        EXPECT_DTO(p.recv_evd, p.ep, 0x202, DAT_DTO_SUCCESS, 0);
        PSYNC(&p, 'd');
    } else {
        PSYNC(&p, 'r');
        CHECK_OK(dat_ep_post_send(p.ep, 0, NULL, ck(0x22), 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x22, DAT_DTO_SUCCESS, 0);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* After the bad posts: a correct post works and raised the count by one. */
static void good_srq_post_after(DAT_SRQ_HANDLE srq, const struct mr *m)
{
    DAT_SRQ_PARAM q = srq_q(srq);
    DAT_COUNT before = q.available_dto_count;
    CHECK_OK(srq_post1(srq, m, 0, 64, 0x600D));
    q = srq_q(srq);
    if (before != DAT_VALUE_UNKNOWN)
        CHECK_COUNT(q.available_dto_count, before + 1);
}

TEST(SQP_03_lmr_of_another_pz)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m, o;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz2, 4096, LRW, &o) == DAT_SUCCESS);
    CHECK_TYPE(srq_post1(srq, &o, 0, 64, 3), DAT_PROTECTION_VIOLATION);
    CHECK_COUNT(srq_q(srq).available_dto_count, 0);
    good_srq_post_after(srq, &m);
}

TEST(SQP_04_lmr_without_local_write)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m, ro;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &ro) == DAT_SUCCESS);
    CHECK_TYPE(srq_post1(srq, &ro, 0, 64, 4), DAT_PRIVILEGES_VIOLATION);
    {
        DAT_LMR_TRIPLET t = tr(&m, 0, 64);
        t.lmr_context ^= 0x0BADF00Du;
        CHECK_TYPE(dat_srq_post_recv(srq, 1, &t, ck(5)), DAT_PRIVILEGES_VIOLATION);
    }
    good_srq_post_after(srq, &m);
}

TEST(SQP_05_segment_past_lmr)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_TYPE(srq_post1(srq, &m, 0, 4097, 6), DAT_INVALID_PARAMETER);
    CHECK_TYPE(srq_post1(srq, &m, 4000, 97, 7), DAT_INVALID_PARAMETER);
    good_srq_post_after(srq, &m);
}

TEST(SQP_06_more_buffers_than_srq_size)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    DAT_COUNT n;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    n = srq_q(srq).max_recv_dtos;
    REQUIRE(n >= 8 && n <= 65536);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    for (DAT_COUNT i = 0; i < n; i++) {
        DAT_RETURN r = srq_post1(srq, &m, 0, 64, (uint64_t)i);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    post %d of %d: 0x%08x\n", (int)i, (int)n, (unsigned)r);
            ctest_failures++;
            return;
        }
    }
    CHECK_TYPE(srq_post1(srq, &m, 0, 64, 0xFFF), DAT_INSUFFICIENT_RESOURCES);
    CHECK_TYPE(dat_srq_post_recv(srq, 0, NULL, ck(0xFFE)), DAT_INSUFFICIENT_RESOURCES);
    CHECK_COUNT(srq_q(srq).available_dto_count, n);
}

TEST(SQP_07_more_segments_than_max_recv_iov)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    DAT_COUNT iov_n;
    DAT_LMR_TRIPLET *iov;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 2, &srq) == DAT_SUCCESS);
    iov_n = srq_q(srq).max_recv_iov;
    REQUIRE(iov_n >= 2 && iov_n < 100000);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    iov = calloc((size_t)iov_n + 1, sizeof(*iov));
    REQUIRE(iov != NULL);
    for (DAT_COUNT i = 0; i <= iov_n; i++)
        iov[i] = tr(&m, 8 * (size_t)i, 8);
    CHECK_TYPE(dat_srq_post_recv(srq, iov_n + 1, iov, ck(1)), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_srq_post_recv(srq, -1, iov, ck(2)), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_srq_post_recv(srq, 1, NULL, ck(3)), DAT_INVALID_PARAMETER);
    CHECK_COUNT(srq_q(srq).available_dto_count, 0);
    CHECK_OK(dat_srq_post_recv(srq, iov_n, iov, ck(4)));
    free(iov);
    good_srq_post_after(srq, &m);
}

struct msg {
    DAT_UINT32 ep_index, seq;
};

TEST(SQP_08_two_connections_share_the_srq)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    enum { PER = 5, NB = 2 * PER };
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server) {
        DAT_EP_HANDLE sep[2];
        DAT_EVD_HANDLE conn2;
        DAT_EP_ATTR a;
        struct mr m;
        int seen[NB] = {0};
        DAT_UINT32 next[2] = {0, 0};
        PREQUIRE(&p, srq_make(p.ia, p.pz, 16, 1, &srq) == DAT_SUCCESS);
        PREQUIRE(&p, new_evd(&p, DAT_EVD_CONNECTION_FLAG, 8, &conn2) == 0);
        PREQUIRE(&p, srq_ep_attr(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a) == 0);
        PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, srq,
                                            &a, &sep[0]) == DAT_SUCCESS);
        PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, p.recv_evd, p.req_evd, conn2, srq, &a,
                                            &sep[1]) == DAT_SUCCESS);
        PREQUIRE(&p, srv_accept(&p, sep[0], p.conn_evd) == 0);
        PSYNC(&p, '1');
        PREQUIRE(&p, srv_accept(&p, sep[1], conn2) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, NB * 64, LRW, &m) == DAT_SUCCESS);
        for (int i = 0; i < NB; i++)
            CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, 0x800 + (uint64_t)i));
        PSYNC(&p, 'r');
        for (int i = 0; i < NB; i++) {
            DAT_EVENT ev;
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            struct msg mg;
            uint64_t c;
            if (!GET_EV(p.recv_evd, &ev))
                break;
            c = d->user_cookie.as_64;
            if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d->status != DAT_DTO_SUCCESS ||
                d->transfered_length != sizeof(mg) || c < 0x800 || c >= 0x800 + NB ||
                seen[c - 0x800]++) {
                fprintf(stderr, "    [server] bad SRQ completion\n");
                ev_print(&ev);
                ctest_failures++;
                continue;
            }
            memcpy(&mg, m.buf + 64 * (c - 0x800), sizeof(mg));
            if (mg.ep_index > 1 || d->ep_handle != sep[mg.ep_index] ||
                mg.seq != next[mg.ep_index]) {
                fprintf(stderr, "    [server] message ep %u seq %u on ep %p (want %p, seq %u)\n",
                        mg.ep_index, mg.seq, (void *)d->ep_handle,
                        mg.ep_index <= 1 ? (void *)sep[mg.ep_index] : NULL,
                        mg.ep_index <= 1 ? next[mg.ep_index] : 0);
                ctest_failures++;
            } else {
                next[mg.ep_index]++;
            }
        }
        CHECK(next[0] == PER && next[1] == PER);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        DAT_EP_HANDLE ep1;
        DAT_EVD_HANDLE conn2, req2;
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        PSYNC(&p, '1');
        PREQUIRE(&p, new_evd(&p, DAT_EVD_CONNECTION_FLAG, 8, &conn2) == 0);
        PREQUIRE(&p, new_evd(&p, DAT_EVD_DTO_FLAG, 16, &req2) == 0);
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, req2, conn2, NULL, &ep1) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, cli_connect(&p, ep1, conn2) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, NB * sizeof(struct msg), LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        for (int k = 0; k < PER; k++) {
            for (int e = 0; e < 2; e++) {
                struct msg mg = {(DAT_UINT32)e, (DAT_UINT32)k};
                size_t off = sizeof(mg) * (size_t)(2 * k + e);
                memcpy(m.buf + off, &mg, sizeof(mg));
                CHECK_OK(send1(e ? ep1 : p.ep, &m, off, sizeof(mg), (uint64_t)(2 * k + e), 0));
            }
        }
        for (int k = 0; k < PER; k++) {
            EXPECT_DTO(p.req_evd, p.ep, (uint64_t)(2 * k), DAT_DTO_SUCCESS, sizeof(struct msg));
            EXPECT_DTO(req2, ep1, (uint64_t)(2 * k + 1), DAT_DTO_SUCCESS, sizeof(struct msg));
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQP_09_disconnect_of_idle_ep_keeps_buffers)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server) {
        DAT_EP_HANDLE sep[2];
        DAT_EVD_HANDLE conn2;
        DAT_EP_ATTR a;
        struct mr m;
        DAT_SRQ_PARAM q;
        PREQUIRE(&p, srq_make(p.ia, p.pz, 16, 1, &srq) == DAT_SUCCESS);
        PREQUIRE(&p, new_evd(&p, DAT_EVD_CONNECTION_FLAG, 8, &conn2) == 0);
        PREQUIRE(&p, srq_ep_attr(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a) == 0);
        PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, srq,
                                            &a, &sep[0]) == DAT_SUCCESS);
        PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, p.recv_evd, p.req_evd, conn2, srq, &a,
                                            &sep[1]) == DAT_SUCCESS);
        PREQUIRE(&p, srv_accept(&p, sep[0], p.conn_evd) == 0);
        PSYNC(&p, '1');
        PREQUIRE(&p, srv_accept(&p, sep[1], conn2) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4 * 64, LRW, &m) == DAT_SUCCESS);
        for (int i = 0; i < 4; i++)
            CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, 0x900 + (uint64_t)i));
        CHECK_COUNT(srq_q(srq).available_dto_count, 4);
        PSYNC(&p, 'r');
        /* the client takes connection 0 down */
        EXPECT_GONE(p.conn_evd, sep[0]);
        EXPECT_NONE(p.recv_evd);
        q = srq_q(srq);
        CHECK_COUNT(q.available_dto_count, 4);
        CHECK_COUNT(q.outstanding_dto_count, 4);
        PSYNC(&p, 'g');
        for (int i = 0; i < 2; i++) {
            DAT_EVENT ev;
            if (GET_EV(p.recv_evd, &ev)) {
                const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
                CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
                CHECK(d->ep_handle == sep[1]);
                CHECK(d->status == DAT_DTO_SUCCESS && d->transfered_length == 20);
                CHECK(d->user_cookie.as_64 >= 0x900 && d->user_cookie.as_64 < 0x904);
            }
        }
        CHECK_COUNT(srq_q(srq).available_dto_count, 2);
        PSYNC(&p, 'd');
    } else {
        DAT_EP_HANDLE ep1;
        DAT_EVD_HANDLE conn2, req2;
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        PSYNC(&p, '1');
        PREQUIRE(&p, new_evd(&p, DAT_EVD_CONNECTION_FLAG, 8, &conn2) == 0);
        PREQUIRE(&p, new_evd(&p, DAT_EVD_DTO_FLAG, 16, &req2) == 0);
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, req2, conn2, NULL, &ep1) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, cli_connect(&p, ep1, conn2) == 0);
        PSYNC(&p, 'r');
        PREQUIRE(&p, pair_disconnect(&p) == 0);
        PSYNC(&p, 'g');
        send_n(&p, ep1, req2, 2, 20, 90, 0x90);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* SQP-10 / SQP-11: a server thread blocks in dat_evd_wait on the SRQ EP's
 * recv EVD before the client sends. */
static void srq_notify_case(DAT_COMPLETION_FLAGS recv_flags)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server)
        PREQUIRE(&p, srq_make(p.ia, p.pz, 8, 1, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, srq_connect(&p, srq, recv_flags) == 0);
    if (p.server) {
        struct mr m;
        DAT_EVENT ev;
        char go;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 256, LRW, &m) == DAT_SUCCESS);
        CHECK_OK(srq_post1(srq, &m, 0, 64, 0xA0));
        CHECK_OK(srq_post1(srq, &m, 64, 64, 0xA1));
        PSYNC(&p, 'r');
        PREQUIRE(&p, start_evd_waiter(&W[0], p.recv_evd, 1 * SEC, 1));
        settle_evd_waiter(&W[0]);
        go = 'u';
        PREQUIRE(&p, pair_tell(&p, &go, 1) == 0);
        PREQUIRE(&p, waiter_finish(&W[0], 6.0));
        if (recv_flags == DAT_COMPLETION_SOLICITED_WAIT_FLAG) {
            CHECK_TYPE(W[0].ret, DAT_TIMEOUT_EXPIRED);
            CHECK(W[0].nmore == 1);
            memset(&ev, 0, sizeof(ev));
            CHECK_OK(dat_evd_dequeue(p.recv_evd, &ev));
        } else {
            CHECK_OK(W[0].ret);
            CHECK(W[0].t_ret - W[0].t_call < 0.9);
            ev = W[0].ev;
        }
        /* SRQ buffers complete in no promised order */
        check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep,
                        ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0xA1 ? 0xA1
                                                                                          : 0xA0,
                        DAT_DTO_SUCCESS, 16);
        if (recv_flags == DAT_COMPLETION_SOLICITED_WAIT_FLAG) {
            PREQUIRE(&p, start_evd_waiter(&W[1], p.recv_evd, 5 * SEC, 1));
            settle_evd_waiter(&W[1]);
            go = 's';
            PREQUIRE(&p, pair_tell(&p, &go, 1) == 0);
            PREQUIRE(&p, waiter_finish(&W[1], 8.0));
            CHECK_OK(W[1].ret);
            CHECK(W[1].t_ret - W[1].t_call < 4.0);
            if (W[1].ret == DAT_SUCCESS)
                CHECK(W[1].ev.event_data.dto_completion_event_data.transfered_length == 24);
        } else {
            go = 'n';
            PREQUIRE(&p, pair_tell(&p, &go, 1) == 0);
        }
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        char go = 0;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        PREQUIRE(&p, pair_hear(&p, &go, 1) == 0 && go == 'u');
        CHECK_OK(send1(p.ep, &m, 0, 16, 0xA, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0xA, DAT_DTO_SUCCESS, 16);
        PREQUIRE(&p, pair_hear(&p, &go, 1) == 0);
        if (go == 's') {
            CHECK_OK(send1(p.ep, &m, 0, 24, 0xB, DAT_COMPLETION_SOLICITED_WAIT_FLAG));
            EXPECT_DTO(p.req_evd, p.ep, 0xB, DAT_DTO_SUCCESS, 24);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQP_10_srq_completion_is_a_notification) { srq_notify_case(DAT_COMPLETION_DEFAULT_FLAG); }

TEST(SQP_11_solicited_wait_srq_ep) { srq_notify_case(DAT_COMPLETION_SOLICITED_WAIT_FLAG); }

TEST(SQP_12_scatter_fill_order)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server)
        PREQUIRE(&p, srq_make(p.ia, p.pz, 8, 3, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, srq_connect(&p, srq, 0) == 0);
    if (p.server) {
        struct mr m;
        DAT_LMR_TRIPLET iov[3];
        unsigned char want[12];
        PREQUIRE(&p, mr_make(p.ia, p.pz, 256, LRW, &m) == DAT_SUCCESS);
        memset(m.buf, 0xAA, 256);
        iov[0] = tr(&m, 0, 8);
        iov[1] = tr(&m, 64, 8);
        iov[2] = tr(&m, 128, 8);
        CHECK_OK(dat_srq_post_recv(srq, 3, iov, ck(0xC12)));
        PSYNC(&p, 'r');
        fill_pat(want, 12, 12);
        if (EXPECT_DTO(p.recv_evd, p.ep, 0xC12, DAT_DTO_SUCCESS, 12)) {
            CHECK(memcmp(m.buf, want, 8) == 0);
            CHECK_FILL(m.buf + 8, 56, 0xAA);
            CHECK(memcmp(m.buf + 64, want + 8, 4) == 0);
            CHECK_FILL(m.buf + 68, 60, 0xAA);
            CHECK_FILL(m.buf + 128, 128, 0xAA);
        }
        PSYNC(&p, 'd');
    } else {
        PSYNC(&p, 'r');
        send_n(&p, p.ep, p.req_evd, 1, 12, 12, 0xC);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQP_13_message_longer_than_srq_buffer)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server)
        PREQUIRE(&p, srq_make(p.ia, p.pz, 8, 1, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, srq_connect(&p, srq, 0) == 0);
    if (p.server) {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 100, LRW, &m) == DAT_SUCCESS);
        CHECK_OK(srq_post1(srq, &m, 0, 100, 0xD13));
        PSYNC(&p, 'r');
        EXPECT_DTO(p.recv_evd, p.ep, 0xD13, too_short_status(p.ia), LEN_ANY);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 256, LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        CHECK_OK(send1(p.ep, &m, 0, 200, 0xD1, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0xD1, ST_ANY, LEN_ANY);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQP_14_stale_srq_handle)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    REQUIRE(dat_srq_free(srq) == DAT_SUCCESS);
    CHECK_TYPE(srq_post1(srq, &m, 0, 64, 1), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_srq_post_recv(srq, 0, NULL, ck(2)), DAT_INVALID_HANDLE);
}

TEST(SQP_15_post_without_any_ep)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 2, &srq) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_OK(srq_post1(srq, &m, 0, 64, 1));
    CHECK_OK(dat_srq_post_recv(srq, 0, NULL, ck(2)));
    {
        DAT_LMR_TRIPLET iov[2] = {tr(&m, 100, 10), tr(&m, 200, 10)};
        CHECK_OK(dat_srq_post_recv(srq, 2, iov, ck(3)));
    }
    CHECK_COUNT(srq_q(srq).available_dto_count, 3);
    EXPECT_NONE(l.recv);
}

/* ---- §4.31 dat_srq_query -------------------------------------------------------- */

TEST(SQQ_01_counters_worked_example)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server)
        PREQUIRE(&p, srq_make(p.ia, p.pz, 10, 1, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, srq_connect(&p, srq, 0) == 0);
    if (p.server) {
        struct mr m;
        DAT_SRQ_PARAM q;
        DAT_COUNT size;
        double end;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 3 * 64, LRW, &m) == DAT_SUCCESS);
        for (int i = 0; i < 3; i++)
            CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, 0xE0 + (uint64_t)i));
        q = srq_q(srq);
        size = q.max_recv_dtos;
        CHECK(size >= 10);
        CHECK_COUNT(q.available_dto_count, 3);
        CHECK_COUNT(q.outstanding_dto_count, 3);
        PSYNC(&p, 'r');
        PSYNC(&p, 's'); /* the client's send completed */
        /* the message took a buffer: available drops, outstanding does not */
        end = ctest_now() + 5.0;
        do {
            q = srq_q(srq);
            if (q.available_dto_count != 3)
                break;
            ctest_sleep_ms(5);
        } while (ctest_now() < end);
        ctest_sleep_ms(100);
        q = srq_q(srq);
        CHECK(q.max_recv_dtos == size);
        CHECK_COUNT(q.available_dto_count, 2);
        CHECK_COUNT(q.outstanding_dto_count, 3);
        /* dequeued: outstanding drops */
        {
            DAT_EVENT ev;
            if (GET_EV(p.recv_evd, &ev)) {
                uint64_t c = ev.event_data.dto_completion_event_data.user_cookie.as_64;
                CHECK(c >= 0xE0 && c <= 0xE2);
                check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep, c, DAT_DTO_SUCCESS,
                                32);
            }
        }
        q = srq_q(srq);
        CHECK(q.max_recv_dtos == size);
        CHECK_COUNT(q.available_dto_count, 2);
        CHECK_COUNT(q.outstanding_dto_count, 2);
        PSYNC(&p, 'd');
    } else {
        PSYNC(&p, 'r');
        send_n(&p, p.ep, p.req_evd, 1, 32, 1, 0xE);
        PSYNC(&p, 's');
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQQ_02_unknown_mask_bits)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_PARAM q;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    CHECK_TYPE(dat_srq_query(srq, 0x100, &q), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_srq_query(srq, DAT_SRQ_FIELD_ALL | 0x100, &q), DAT_INVALID_PARAMETER);
}

TEST(SQQ_03_null_param)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    CHECK_TYPE(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
}

TEST(SQQ_04_stale_handle)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_PARAM q;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(dat_srq_free(srq) == DAT_SUCCESS);
    CHECK_TYPE(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &q), DAT_INVALID_HANDLE);
}

TEST(SQQ_05_grow_visible_at_once)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 16, 1, &srq) == DAT_SUCCESS);
    REQUIRE(dat_srq_resize(srq, 64) == DAT_SUCCESS);
    CHECK(srq_q(srq).max_recv_dtos >= 64);
}

TEST(SQQ_07_handles_and_state)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_PARAM q;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz2, 8, 1, &srq) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_srq_query(srq, DAT_SRQ_FIELD_IA_HANDLE, &q));
    CHECK(q.ia_handle == l.ia);
    CHECK_OK(dat_srq_query(srq, DAT_SRQ_FIELD_PZ_HANDLE, &q));
    CHECK(q.pz_handle == l.pz2);
    q.srq_state = 0xEEu;
    CHECK_OK(dat_srq_query(srq, DAT_SRQ_FIELD_SRQ_STATE, &q));
    CHECK(q.srq_state == DAT_SRQ_STATE_OPERATIONAL);
}

/* ---- §4.32 dat_srq_resize ------------------------------------------------------- */

TEST(SQR_01_grow)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    struct mr m;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 16, 1, &srq) == DAT_SUCCESS);
    CHECK_OK(dat_srq_resize(srq, 64));
    CHECK(srq_q(srq).max_recv_dtos >= 64);
    REQUIRE(mr_make(l.ia, l.pz, 64 * 64, LRW, &m) == DAT_SUCCESS);
    for (int i = 0; i < 64; i++)
        CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, (uint64_t)i));
    CHECK_COUNT(srq_q(srq).available_dto_count, 64);
}

TEST(SQR_02_shrink_below_outstanding_refused)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server)
        PREQUIRE(&p, srq_make(p.ia, p.pz, 16, 1, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, srq_connect(&p, srq, 0) == 0);
    if (p.server) {
        struct mr m;
        DAT_SRQ_PARAM before, after;
        int seen[10] = {0};
        PREQUIRE(&p, mr_make(p.ia, p.pz, 10 * 64, LRW, &m) == DAT_SUCCESS);
        for (int i = 0; i < 10; i++)
            CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, (uint64_t)i));
        before = srq_q(srq);
        CHECK_TYPE(dat_srq_resize(srq, 5), DAT_INVALID_STATE);
        after = srq_q(srq);
        CHECK(after.max_recv_dtos == before.max_recv_dtos);
        CHECK(after.available_dto_count == before.available_dto_count);
        CHECK(after.outstanding_dto_count == before.outstanding_dto_count);
        PSYNC(&p, 'r');
        for (int i = 0; i < 10; i++) {
            DAT_EVENT ev;
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            if (!GET_EV(p.recv_evd, &ev))
                break;
            if (check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep,
                                d->user_cookie.as_64, DAT_DTO_SUCCESS, 32) &&
                d->user_cookie.as_64 < 10)
                seen[d->user_cookie.as_64]++;
        }
        for (int i = 0; i < 10; i++)
            CHECK(seen[i] == 1);
        PSYNC(&p, 'd');
    } else {
        PSYNC(&p, 'r');
        send_n(&p, p.ep, p.req_evd, 10, 32, 200, 0x20);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQR_03_unreaped_completions_count)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server)
        PREQUIRE(&p, srq_make(p.ia, p.pz, 16, 1, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, srq_connect(&p, srq, 0) == 0);
    if (p.server) {
        struct mr m;
        double end;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4 * 64, LRW, &m) == DAT_SUCCESS);
        for (int i = 0; i < 4; i++)
            CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, (uint64_t)i));
        PSYNC(&p, 'r');
        PSYNC(&p, 's'); /* all four sends completed at the client */
        end = ctest_now() + 5.0;
        while (srq_q(srq).available_dto_count == 4 && ctest_now() < end)
            ctest_sleep_ms(5);
        ctest_sleep_ms(200);
        CHECK_TYPE(dat_srq_resize(srq, 2), DAT_INVALID_STATE);
        for (int i = 0; i < 4; i++) {
            DAT_EVENT ev;
            if (GET_EV(p.recv_evd, &ev))
                check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep,
                                ev.event_data.dto_completion_event_data.user_cookie.as_64,
                                DAT_DTO_SUCCESS, 16);
        }
        CHECK_OK(dat_srq_resize(srq, 2));
        CHECK(srq_q(srq).max_recv_dtos >= 2);
        PSYNC(&p, 'd');
    } else {
        PSYNC(&p, 'r');
        send_n(&p, p.ep, p.req_evd, 4, 16, 300, 0x30);
        PSYNC(&p, 's');
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQR_05_invalid_sizes)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_SRQ_PARAM before;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 16, 1, &srq) == DAT_SUCCESS);
    before = srq_q(srq);
    CHECK_TYPE(dat_srq_resize(srq, 0), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_srq_resize(srq, -3), DAT_INVALID_PARAMETER);
    if (g_ia.max_recv_per_srq < 0x7FFFFFFF)
        CHECK_TYPE(dat_srq_resize(srq, g_ia.max_recv_per_srq + 1), DAT_INVALID_PARAMETER);
    CHECK(srq_q(srq).max_recv_dtos == before.max_recv_dtos);
}

TEST(SQR_06_resize_while_receiving)
{
    struct pair p;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    enum { N = 100 };
    REQUIRE(dpair_start(&p) == 0);
    PNEED_SRQ(&p);
    if (p.server) {
        PREQUIRE(&p, srq_make(p.ia, p.pz, 110, 1, &srq) == DAT_SUCCESS);
        PREQUIRE(&p, new_evd(&p, DAT_EVD_DTO_FLAG, 256, &p.recv_evd) == 0);
    }
    PREQUIRE(&p, srq_connect(&p, srq, 0) == 0);
    if (p.server) {
        struct mr m;
        int seen[N] = {0}, grows = 0;
        PREQUIRE(&p, mr_make(p.ia, p.pz, N * 64, LRW, &m) == DAT_SUCCESS);
        for (int i = 0; i < N; i++)
            CHECK_OK(srq_post1(srq, &m, 64 * (size_t)i, 64, (uint64_t)i));
        PSYNC(&p, 'r');
        for (int i = 0; i < N; i++) {
            DAT_EVENT ev;
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            if (i % 20 == 0) {
                CHECK_OK(dat_srq_resize(srq, 120 + 10 * grows));
                grows++;
            }
            if (!GET_EV(p.recv_evd, &ev))
                break;
            if (check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep, d->user_cookie.as_64,
                                DAT_DTO_SUCCESS, 48) &&
                d->user_cookie.as_64 < N)
                seen[d->user_cookie.as_64]++;
        }
        CHECK(grows == 5);
        for (int i = 0; i < N; i++)
            CHECK(seen[i] == 1);
        CHECK(srq_q(srq).max_recv_dtos >= 160);
        PSYNC(&p, 'd');
    } else {
        PSYNC(&p, 'r');
        send_n(&p, p.ep, p.req_evd, N, 48, 600, 0x6000);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(SQR_07_stale_handle)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 16, 1, &srq) == DAT_SUCCESS);
    REQUIRE(dat_srq_free(srq) == DAT_SUCCESS);
    CHECK_TYPE(dat_srq_resize(srq, 32), DAT_INVALID_HANDLE);
}

/* ---- §4.33 dat_srq_set_lw ------------------------------------------------------- */

TEST(SQL_01_set_lw_not_supported)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    DAT_COUNT n;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    CHECK(g_pa.srq_watermarks_supported == 0);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    n = srq_q(srq).max_recv_dtos;
    CHECK_TYPE(dat_srq_set_lw(srq, 0), DAT_MODEL_NOT_SUPPORTED);
    CHECK_TYPE(dat_srq_set_lw(srq, 3), DAT_MODEL_NOT_SUPPORTED);
    CHECK_TYPE(dat_srq_set_lw(srq, n), DAT_MODEL_NOT_SUPPORTED);
    CHECK_TYPE(dat_srq_set_lw(srq, n + 1), DAT_MODEL_NOT_SUPPORTED);
    CHECK_TYPE(dat_srq_set_lw(srq, -1), DAT_MODEL_NOT_SUPPORTED);
    CHECK(srq_q(srq).low_watermark == 0);
    EXPECT_NONE(l.aevd);
}

TEST(SQL_02_stale_handle)
{
    struct loc l;
    DAT_SRQ_HANDLE srq;
    REQUIRE(loc_open(&l) == 0);
    NEED_SRQ(l.ia);
    REQUIRE(srq_make(l.ia, l.pz, 8, 1, &srq) == DAT_SUCCESS);
    REQUIRE(dat_srq_free(srq) == DAT_SUCCESS);
    CHECK_TYPE(dat_srq_set_lw(srq, 0), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_srq_set_lw(srq, 3), DAT_INVALID_HANDLE);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
