/*
 * The memory tests of semantics-core.md that need a connected EP
 * ([needs-conn], plus the [needs-EP] RMB-01 and RMB-03): §2.8 LMF-03, 04,
 * 08; §2.11 LSW-09; §2.13 RMF-03, 05; §2.14 RMQ-06; §2.15 RMB-01, 03…16.
 * (RMB-02 is in ctests/unit/unit_mem.c.)
 */
#include "dto_helpers.h"

/* Connects; the server only waits for 'd' (returns 1 there, after finishing). */
static int client_only(struct pair *p)
{
    DAT_EP_ATTR a;
    if (dpair_start(p) != 0)
        return -1;
    if (!rmr_supported(p->ia)) {
        /* every case through here binds an RMR (both sides skip) */
        pair_finish(p);
        fprintf(stderr, "    skipped: the IA has no memory windows (max_rmrs 0)\n");
        ctest_skipped = 1;
        return 1;
    }
    if (dto_attr(p, &a) != 0 || pair_connect(p, &a) != 0) {
        fprintf(stderr, "    %sconnection failed\n", side());
        ctest_failures++;
        pair_abort(p);
        return -1;
    }
    if (p->server) {
        if (pair_sync(p, 'd') != 0)
            ctest_failures++;
        pair_finish(p);
        return 1;
    }
    return 0;
}

#define CLIENT_ONLY(p)                                                                         \
    do {                                                                                       \
        if (client_only(p) != 0)                                                               \
            return;                                                                            \
    } while (0)

#define END_CLIENT_ONLY(p)                                                                     \
    do {                                                                                       \
        PSYNC((p), 'd');                                                                       \
        pair_finish(p);                                                                        \
    } while (0)

static DAT_RMR_COOKIE rck(uint64_t v)
{
    DAT_RMR_COOKIE c;
    memset(&c, 0, sizeof(c));
    c.as_64 = v;
    return c;
}

/* Bind rmr to m[off, off+len) on p->ep and wait for its successful completion. */
static int bind_ok(struct pair *p, DAT_RMR_HANDLE rmr, const struct mr *m, size_t off,
                   DAT_VLEN len, DAT_MEM_PRIV_FLAGS priv, uint64_t cookie, DAT_RMR_CONTEXT *rc)
{
    DAT_LMR_TRIPLET t = tr(m, off, len);
    DAT_RETURN r = dat_rmr_bind(rmr, &t, priv, p->ep, rck(cookie), 0, rc);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %sdat_rmr_bind returned 0x%08x\n", side(), (unsigned)r);
        ctest_failures++;
        return 0;
    }
    return EXPECT_BIND(p->req_evd, rmr, cookie, DAT_RMR_BIND_SUCCESS);
}

/* ---- §2.8 dat_lmr_free ------------------------------------------------------- */

TEST(LMF_03_lmr_with_bound_rmr_is_in_use)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &m, 0, 4096, DAT_MEM_PRIV_REMOTE_READ_FLAG, 0x103, &rc));
    CHECK_TYPE(dat_lmr_free(m.h), DAT_INVALID_STATE);
    CHECK_OK(dat_rmr_free(rmr));
    CHECK_OK(dat_lmr_free(m.h));
    END_CLIENT_ONLY(&p);
}

TEST(LMF_04_unbind_then_free)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc, rc2;
    DAT_LMR_TRIPLET t;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &m, 0, 4096, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 0x104, &rc));
    t = tr(&m, 0, 0);
    CHECK_OK(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_NONE_FLAG, p.ep, rck(0x1040), 0, &rc2));
    EXPECT_BIND(p.req_evd, rmr, 0x1040, DAT_RMR_BIND_SUCCESS);
    CHECK_OK(dat_lmr_free(m.h));
    CHECK_OK(dat_rmr_free(rmr));
    END_CLIENT_ONLY(&p);
}

TEST(LMF_08_send_from_freed_lmr)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m;
        PREQUIRE(&p, post_recvs(&p, p.ep, &m, 1, 64, 0x800) == 0);
        PSYNC(&p, 'r');
        PSYNC(&p, 'd');
    } else {
        struct mr gone, m;
        DAT_LMR_TRIPLET t;
        DAT_RETURN r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &gone) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        t = tr(&gone, 0, 16);
        PREQUIRE(&p, dat_lmr_free(gone.h) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        r = dat_ep_post_send(p.ep, 1, &t, ck(0x808), 0);
        if (r == DAT_SUCCESS) {
            EXPECT_DTO(p.req_evd, p.ep, 0x808, DAT_DTO_ERR_LOCAL_PROTECTION, LEN_ANY);
        } else if (DAT_GET_TYPE(r) == DAT_PRIVILEGES_VIOLATION && (r & DAT_CLASS_ERROR)) {
            /* semantics-ep.md §3.7: an unknown context is a privileges violation */
            fprintf(stderr, "    note: rejected as DAT_PRIVILEGES_VIOLATION (ep §3.7), "
                            "core LMF-08 names DAT_PROTECTION_VIOLATION\n");
            CHECK_OK(send1(p.ep, &m, 0, 16, 0x809, 0));
            EXPECT_DTO(p.req_evd, p.ep, 0x809, DAT_DTO_SUCCESS, 16);
        } else {
            CHECK_TYPE(r, DAT_PROTECTION_VIOLATION);
            CHECK_OK(send1(p.ep, &m, 0, 16, 0x809, 0));
            EXPECT_DTO(p.req_evd, p.ep, 0x809, DAT_DTO_SUCCESS, 16);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- §2.11 dat_lmr_sync_rdma_write ------------------------------------------- */

TEST(LSW_09_sync_after_peer_rdma_write)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr reg;
        DAT_RMR_TRIPLET r;
        DAT_LMR_TRIPLET t;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW | DAT_MEM_PRIV_REMOTE_WRITE_FLAG, &reg) ==
                         DAT_SUCCESS);
        r = rtr_of(&reg, 0, 8192);
        PREQUIRE(&p, tell_rtr(&p, &r) == 0);
        PSYNC(&p, 'w'); /* the client's write completed */
        t = tr(&reg, 0, 8192);
        CHECK_OK(dat_lmr_sync_rdma_write(p.ia, &t, 1));
        CHECK_PAT(reg.buf, 8192, 90, 0);
        PSYNC(&p, 'd');
    } else {
        struct mr l;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW, &l) == DAT_SUCCESS);
        fill_pat(l.buf, 8192, 90);
        CHECK_OK(write1(p.ep, &l, 0, 8192, &r, 0x909, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x909, DAT_DTO_SUCCESS, 8192);
        PSYNC(&p, 'w');
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- §2.13 dat_rmr_free -------------------------------------------------------- */

TEST(RMF_03_free_bound_rmr)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &m, 0, 4096, RRW, 0x303, &rc));
    CHECK_OK(dat_rmr_free(rmr));
    CHECK_OK(dat_lmr_free(m.h));
    END_CLIENT_ONLY(&p);
}

TEST(RMF_05_free_bound_rmr_posts_no_event)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &m, 0, 4096, RRW, 0x505, &rc));
    CHECK_OK(dat_rmr_free(rmr));
    EXPECT_NONE(p.req_evd);
    EXPECT_NONE(p.recv_evd);
    EXPECT_NONE(p.conn_evd);
    END_CLIENT_ONLY(&p);
}

/* ---- §2.14 dat_rmr_query ------------------------------------------------------- */

TEST(RMQ_06_query_after_bind)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc = 0;
    DAT_RMR_PARAM q;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &m, 1000, 3000, RRW, 0x606, &rc));
    memset(&q, 0xA5, sizeof(q));
    CHECK_OK(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &q));
    CHECK(q.ia_handle == p.ia);
    CHECK(q.pz_handle == p.pz);
    CHECK(q.lmr_triplet.lmr_context == m.lc);
    CHECK(q.lmr_triplet.virtual_address == (DAT_VADDR)(uintptr_t)(m.buf + 1000));
    CHECK(q.lmr_triplet.segment_length == 3000);
    CHECK(q.mem_priv == RRW);
    CHECK(q.rmr_context == rc);
    END_CLIENT_ONLY(&p);
}

/* ---- §2.15 dat_rmr_bind --------------------------------------------------------- */

TEST(RMB_01_bind_on_unconnected_ep)
{
    struct loc l;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc;
    DAT_LMR_TRIPLET t;
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    if (!rmr_supported(l.ia))
        SKIP("the IA has no memory windows (max_rmrs 0)");
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    REQUIRE(dat_rmr_create(l.pz, &rmr) == DAT_SUCCESS);
    t = tr(&m, 0, 4096);
    CHECK_RET(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, l.ep, rck(1), 0, &rc),
              DAT_CLASS_ERROR | DAT_INVALID_STATE | DAT_INVALID_STATE_EP_UNCONNECTED);
    EXPECT_NONE(l.req);
    /* the RMR stays unbound and the LMR free */
    CHECK_OK(dat_lmr_free(m.h));
    CHECK_OK(dat_rmr_free(rmr));
}

TEST(RMB_03_null_lmr_triplet)
{
    struct pair p;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_rmr_bind(rmr, NULL, DAT_MEM_PRIV_REMOTE_READ_FLAG, p.ep, rck(3), 0, &rc),
               DAT_INVALID_PARAMETER);
    EXPECT_NONE(p.req_evd);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_04_bind_remote_read_completion)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc = 0;
    DAT_LMR_TRIPLET t;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    t = tr(&m, 100, 1000);
    CHECK_OK(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, p.ep,
                          rck(0xFEEDFACE12345678ull), 0, &rc));
    EXPECT_BIND(p.req_evd, rmr, 0xFEEDFACE12345678ull, DAT_RMR_BIND_SUCCESS);
    EXPECT_NONE(p.req_evd);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_05_suppressed_bind_has_no_event)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc;
    DAT_LMR_TRIPLET t;
    DAT_RMR_PARAM q;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    t = tr(&m, 0, 4096);
    CHECK_OK(dat_rmr_bind(rmr, &t, RRW, p.ep, rck(5), DAT_COMPLETION_SUPPRESS_FLAG, &rc));
    expect_none_at(__FILE__, __LINE__, p.req_evd, 100);
    /* it did happen: the RMR is bound (query) */
    CHECK_OK(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &q));
    CHECK(q.rmr_context == rc && q.lmr_triplet.segment_length == 4096);
    END_CLIENT_ONLY(&p);
}

/* Bad binds on a connected EP: the call fails with `want`, no event. */
static void bad_bind(DAT_RMR_HANDLE rmr, const DAT_LMR_TRIPLET *t, DAT_MEM_PRIV_FLAGS priv,
                     struct pair *p, DAT_COMPLETION_FLAGS fl, DAT_RETURN want, int line)
{
    DAT_RMR_CONTEXT rc;
    DAT_RETURN r = dat_rmr_bind(rmr, t, priv, p->ep, rck(0xBAD), fl, &rc);
    if (DAT_GET_TYPE(r) != DAT_GET_TYPE(want) || !(r & DAT_CLASS_ERROR)) {
        fprintf(stderr, "    line %d: dat_rmr_bind returned 0x%08x, want type 0x%08x\n", line,
                (unsigned)r, (unsigned)want);
        ctest_failures++;
    }
    EXPECT_NONE(p->req_evd);
}

/* After the bad binds: a correct one works on the same EP and RMR. */
static void good_bind_after(struct pair *p, DAT_RMR_HANDLE rmr)
{
    struct mr m;
    DAT_RMR_CONTEXT rc;
    if (mr_make(p->ia, p->pz, 4096, LRW, &m) != DAT_SUCCESS) {
        CHECK(!"mr_make");
        return;
    }
    bind_ok(p, rmr, &m, 0, 4096, RRW, 0x600D, &rc);
}

TEST(RMB_06_range_past_lmr)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_LMR_TRIPLET t;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    t = tr(&m, 0, 4097);
    bad_bind(rmr, &t, RRW, &p, 0, DAT_INVALID_PARAMETER, __LINE__);
    t = tr(&m, 4095, 2);
    bad_bind(rmr, &t, RRW, &p, 0, DAT_INVALID_PARAMETER, __LINE__);
    good_bind_after(&p, rmr);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_07_unknown_lmr_context)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_LMR_TRIPLET t;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    t = tr(&m, 0, 4096);
    t.lmr_context = m.lc ^ 0x00F0F0F1u;
    bad_bind(rmr, &t, RRW, &p, 0, DAT_INVALID_PARAMETER, __LINE__);
    good_bind_after(&p, rmr);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_08_remote_write_without_local_write)
{
    struct pair p;
    struct mr ro;
    DAT_RMR_HANDLE rmr;
    DAT_LMR_TRIPLET t;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &ro) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    t = tr(&ro, 0, 4096);
    bad_bind(rmr, &t, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, &p, 0, DAT_PRIVILEGES_VIOLATION, __LINE__);
    good_bind_after(&p, rmr);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_09_lmr_of_another_pz)
{
    struct pair p;
    struct mr o;
    DAT_PZ_HANDLE pz2;
    DAT_RMR_HANDLE rmr;
    DAT_LMR_TRIPLET t;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, dat_pz_create(p.ia, &pz2) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, pz2, 4096, LRW, &o) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    t = tr(&o, 0, 4096);
    bad_bind(rmr, &t, RRW, &p, 0, DAT_PROTECTION_VIOLATION, __LINE__);
    good_bind_after(&p, rmr);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_10_unsignalled_without_ep_attribute)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_LMR_TRIPLET t;
    DAT_EP_ATTR got;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, ep_attr_of(p.ep, &got) == 0);
    PREQUIRE(&p, (got.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    t = tr(&m, 0, 4096);
    bad_bind(rmr, &t, RRW, &p, DAT_COMPLETION_UNSIGNALLED_FLAG, DAT_INVALID_PARAMETER, __LINE__);
    good_bind_after(&p, rmr);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_11_unbind_releases_lmr)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc, rc2;
    DAT_LMR_TRIPLET t;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &m, 0, 4096, RRW, 0x1101, &rc));
    t = tr(&m, 0, 0);
    CHECK_OK(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_NONE_FLAG, p.ep, rck(0x1102), 0, &rc2));
    EXPECT_BIND(p.req_evd, rmr, 0x1102, DAT_RMR_BIND_SUCCESS);
    CHECK_OK(dat_lmr_free(m.h));
    END_CLIENT_ONLY(&p);
}

TEST(RMB_12_rebind_moves_the_hold)
{
    struct pair p;
    struct mr ma, mb;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc, rc2;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &ma) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &mb) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &ma, 0, 4096, RRW, 0x1201, &rc));
    PREQUIRE(&p, bind_ok(&p, rmr, &mb, 0, 4096, RRW, 0x1202, &rc2));
    CHECK_OK(dat_lmr_free(ma.h));
    CHECK_TYPE(dat_lmr_free(mb.h), DAT_INVALID_STATE);
    END_CLIENT_ONLY(&p);
}

TEST(RMB_13_free_lmr_of_live_binding)
{
    struct pair p;
    struct mr m;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_CONTEXT rc;
    DAT_LMR_PARAM q;
    CLIENT_ONLY(&p);
    PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
    PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
    PREQUIRE(&p, bind_ok(&p, rmr, &m, 512, 1024, DAT_MEM_PRIV_REMOTE_READ_FLAG, 0x1301, &rc));
    CHECK_TYPE(dat_lmr_free(m.h), DAT_INVALID_STATE);
    CHECK_OK(dat_lmr_query(m.h, DAT_LMR_FIELD_ALL, &q)); /* still alive */
    END_CLIENT_ONLY(&p);
}

TEST(RMB_14_bind_on_disconnected_ep_is_flushed)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_RMR(&p);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    PREQUIRE(&p, pair_disconnect(&p) == 0);
    if (!p.server) {
        struct mr m;
        DAT_RMR_HANDLE rmr;
        DAT_RMR_CONTEXT rc;
        DAT_LMR_TRIPLET t;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
        t = tr(&m, 0, 4096);
        CHECK_OK(dat_rmr_bind(rmr, &t, RRW, p.ep, rck(0x1401), 0, &rc));
        EXPECT_BIND(p.req_evd, rmr, 0x1401, ST_ANY_ERROR);
        EXPECT_NONE(p.req_evd);
    }
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(RMB_15_peer_reads_new_context_old_one_fails)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_RMR(&p);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m;
        DAT_RMR_HANDLE rmr;
        DAT_RMR_CONTEXT rc = 0, rc2 = 0;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW, &m) == DAT_SUCCESS);
        fill_pat(m.buf, 8192, 15);
        PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
        PREQUIRE(&p, bind_ok(&p, rmr, &m, 0, 4096, DAT_MEM_PRIV_REMOTE_READ_FLAG, 0x1501, &rc));
        r = rtr(rc, (DAT_VADDR)(uintptr_t)m.buf, 4096);
        PREQUIRE(&p, tell_rtr(&p, &r) == 0);
        PSYNC(&p, '1'); /* the client read it */
        PREQUIRE(&p, bind_ok(&p, rmr, &m, 4096, 4096, DAT_MEM_PRIV_REMOTE_READ_FLAG, 0x1502,
                             &rc2));
        CHECK(rc2 != rc);
        PSYNC(&p, '2'); /* rebound: the old context is dead */
        PSYNC(&p, 'd');
    } else {
        struct mr l;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW, &l) == DAT_SUCCESS);
        CHECK_OK(read1(p.ep, &l, 0, 4096, &r, 0x151, 0));
        if (EXPECT_DTO(p.req_evd, p.ep, 0x151, DAT_DTO_SUCCESS, 4096))
            CHECK_PAT(l.buf, 4096, 15, 0);
        PSYNC(&p, '1');
        PSYNC(&p, '2');
        CHECK_OK(read1(p.ep, &l, 4096, 4096, &r, 0x152, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x152, DAT_DTO_ERR_REMOTE_ACCESS, LEN_ANY);
        EXPECT_CONN(p.conn_evd, p.ep, DAT_CONNECTION_EVENT_BROKEN, 0);
        CHECK(ep_state(p.ep) == DAT_EP_STATE_DISCONNECTED);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(RMB_16_send_after_bind_is_fenced)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PNEED_RMR(&p);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m, s;
        DAT_RMR_HANDLE rmr;
        DAT_RMR_CONTEXT rc = 0;
        DAT_LMR_TRIPLET t;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW, &m) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, sizeof(r), LRW, &s) == DAT_SUCCESS);
        fill_pat(m.buf, 8192, 16);
        PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        t = tr(&m, 0, 8192);
        CHECK_OK(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, p.ep, rck(0x1601), 0, &rc));
        /* no wait: the Send carries the context right away */
        r = rtr(rc, (DAT_VADDR)(uintptr_t)m.buf, 8192);
        memcpy(s.buf, &r, sizeof(r));
        CHECK_OK(send1(p.ep, &s, 0, sizeof(r), 0x1602, 0));
        EXPECT_BIND(p.req_evd, rmr, 0x1601, DAT_RMR_BIND_SUCCESS);
        EXPECT_DTO(p.req_evd, p.ep, 0x1602, DAT_DTO_SUCCESS, sizeof(r));
        PSYNC(&p, 'd');
    } else {
        struct mr m, l;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW, &l) == DAT_SUCCESS);
        CHECK_OK(recv1(p.ep, &m, 0, 64, 0x160, 0));
        PSYNC(&p, 'r');
        PREQUIRE(&p, EXPECT_DTO(p.recv_evd, p.ep, 0x160, DAT_DTO_SUCCESS, sizeof(r)));
        memcpy(&r, m.buf, sizeof(r));
        CHECK_OK(read1(p.ep, &l, 0, 8192, &r, 0x161, 0));
        if (EXPECT_DTO(p.req_evd, p.ep, 0x161, DAT_DTO_SUCCESS, 8192))
            CHECK_PAT(l.buf, 8192, 16, 0);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
