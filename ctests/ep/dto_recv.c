/*
 * dat_ep_post_recv (semantics-ep.md §4.14, with §3 completion semantics).
 * IDs: PRV-01…18.
 */
#include "dto_helpers.h"

static struct mr g_m;

/* ---- PRV-01 ---------------------------------------------------------------- */

static void prv01_created(struct pair *p)
{
    if (p->server)
        return;
    CHECK(ep_state(p->ep) == DAT_EP_STATE_UNCONNECTED);
    if (mr_make(p->ia, p->pz, 4096, LRW, &g_m) != DAT_SUCCESS) {
        CHECK(!"mr_make");
        return;
    }
    memset(g_m.buf, 0xEE, 4096);
    CHECK_OK(recv1(p->ep, &g_m, 0, 4096, 0x101, 0));
}

TEST(PRV_01_post_in_unconnected_is_used_after_connect)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dpair_connect(&p, NULL, prv01_created, NULL) == 0);
    if (p.server) {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        fill_pat(m.buf, 64, 101);
        CHECK_OK(send1(p.ep, &m, 0, 64, 0x1010, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x1010, DAT_DTO_SUCCESS, 64);
    } else {
        if (EXPECT_DTO(p.recv_evd, p.ep, 0x101, DAT_DTO_SUCCESS, 64)) {
            CHECK_PAT(g_m.buf, 64, 101, 0);
            CHECK_FILL(g_m.buf + 64, 4096 - 64, 0xEE);
        }
    }
    PSYNC(&p, 'd');
    pair_finish(&p);
}

/* ---- PRV-02 ---------------------------------------------------------------- */

static void prv02_created(struct pair *p)
{
    char c = 0;
    if (!p->server)
        return;
    /* accept only once the client has posted in ACTIVE_CONNECTION_PENDING */
    if (pair_hear(p, &c, 1) != 0 || c != 'p')
        CHECK(!"client did not report its post");
}

static void prv02_pending(struct pair *p)
{
    DAT_EP_STATE s = ep_state(p->ep);
    if (mr_make(p->ia, p->pz, 4096, LRW, &g_m) != DAT_SUCCESS) {
        CHECK(!"mr_make");
        return;
    }
    if (p->server) {
        /* after dat_cr_accept: COMPLETION_PENDING until the transport
         * finishes; a transport that is done at once shows CONNECTED */
        CHECK(s == DAT_EP_STATE_COMPLETION_PENDING || s == DAT_EP_STATE_CONNECTED);
        if (s != DAT_EP_STATE_COMPLETION_PENDING)
            fprintf(stderr, "    note: server EP was %u right after dat_cr_accept\n", (unsigned)s);
        CHECK_OK(recv1(p->ep, &g_m, 0, 4096, 0x2A2, 0));
    } else {
        char c = 'p';
        CHECK(s == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
        CHECK_OK(recv1(p->ep, &g_m, 0, 4096, 0x2A1, 0));
        if (pair_tell(p, &c, 1) != 0)
            CHECK(!"pair_tell");
    }
}

/* Finds a free qualifier for an RSP near `base`; 0 on success. */
static int rsp_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL base, DAT_EP_HANDLE ep, DAT_EVD_HANDLE evd,
                   DAT_CONN_QUAL *q, DAT_RSP_HANDLE *rsp)
{
    for (int i = 1; i < 200; i++) {
        DAT_RETURN r = dat_rsp_create(ia, base + 7919u * (DAT_CONN_QUAL)i, ep, evd, rsp);
        if (r == DAT_SUCCESS) {
            *q = base + 7919u * (DAT_CONN_QUAL)i;
            return 0;
        }
        if (DAT_GET_TYPE(r) != DAT_CONN_QUAL_IN_USE)
            return -1;
    }
    return -1;
}

struct evds {
    DAT_EVD_HANDLE cr, conn, recv, req;
};

static int mk_evds(DAT_IA_HANDLE ia, struct evds *e)
{
    return dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &e->cr) ||
                   dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &e->conn) ||
                   dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &e->recv) ||
                   dat_evd_create(ia, 16, DAT_HANDLE_NULL,
                                  DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &e->req)
               ? -1
               : 0;
}

/* Client: connect a new EP on its own EVDs to (server address, q) and send
 * one message per seed (lengths 30, 40, ...). */
static void prv02_client_extra(struct pair *p, DAT_CONN_QUAL q, const uint32_t *seeds, int n)
{
    struct evds e;
    struct mr m;
    DAT_EP_HANDLE ep;
    DAT_EVENT ev;
    if (mk_evds(p->ia, &e) != 0 || mr_make(p->ia, p->pz, 4096, LRW, &m) != DAT_SUCCESS ||
        dat_ep_create(p->ia, p->pz, e.recv, e.req, e.conn, NULL, &ep) != DAT_SUCCESS) {
        CHECK(!"client setup of the extra connection");
        return;
    }
    CHECK_OK(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, q, PAIR_WAIT_US, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
    if (!GET_EV(e.conn, &ev) || ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        CHECK(!"extra connection established");
        return;
    }
    if (pair_sync(p, 'e') != 0) {
        CHECK(!"sync e");
        return;
    }
    for (int i = 0; i < n; i++) {
        fill_pat(m.buf + 100 * i, 30 + 10 * (size_t)i, seeds[i]);
        CHECK_OK(send1(ep, &m, 100 * (size_t)i, 30 + 10 * (DAT_VLEN)i, 0x2E0 + (uint64_t)i, 0));
        EXPECT_DTO(e.req, ep, 0x2E0 + (uint64_t)i, DAT_DTO_SUCCESS, 30 + 10 * (DAT_VLEN)i);
    }
}

TEST(PRV_02_post_in_pending_states_is_kept)
{
    struct pair p;
    DAT_PROVIDER_ATTR pa;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, ia_attrs(p.ia, NULL, &pa) == 0);
    PREQUIRE(&p, dpair_connect(&p, NULL, prv02_created, prv02_pending) == 0);
    if (p.server) {
        struct mr m, r2;
        struct evds e2, e3;
        DAT_EP_HANDLE ep2;
        DAT_RSP_HANDLE rsp;
        DAT_CONN_QUAL q2;
        DAT_EVENT ev;
        char c;
        /* A: the receive posted in COMPLETION_PENDING takes the client's message */
        PSYNC(&p, 'r');
        if (EXPECT_DTO(p.recv_evd, p.ep, 0x2A2, DAT_DTO_SUCCESS, 48))
            CHECK_PAT(g_m.buf, 48, 22, 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        fill_pat(m.buf, 40, 21);
        CHECK_OK(send1(p.ep, &m, 0, 40, 0x2A3, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x2A3, DAT_DTO_SUCCESS, 40);
        /* B: RSP, posts in RESERVED and PASSIVE_CONNECTION_PENDING */
        PREQUIRE(&p, mk_evds(p.ia, &e2) == 0);
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, e2.recv, e2.req, e2.conn, NULL, &ep2) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, rsp_any(p.ia, p.qual, ep2, e2.cr, &q2, &rsp) == 0);
        CHECK(ep_state(ep2) == DAT_EP_STATE_RESERVED);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 256, LRW, &r2) == DAT_SUCCESS);
        CHECK_OK(recv1(ep2, &r2, 0, 128, 0x2B1, 0));
        PREQUIRE(&p, pair_tell(&p, &q2, sizeof(q2)) == 0);
        PREQUIRE(&p, GET_EV(e2.cr, &ev) && ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        CHECK(ep_state(ep2) == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_OK(recv1(ep2, &r2, 128, 128, 0x2B2, 0));
        CHECK_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, DAT_HANDLE_NULL, 0,
                               NULL));
        EXPECT_CONN(e2.conn, ep2, DAT_CONNECTION_EVENT_ESTABLISHED, 0);
        PSYNC(&p, 'e');
        if (EXPECT_DTO(e2.recv, ep2, 0x2B1, DAT_DTO_SUCCESS, 30))
            CHECK_PAT(r2.buf, 30, 23, 0);
        if (EXPECT_DTO(e2.recv, ep2, 0x2B2, DAT_DTO_SUCCESS, 40))
            CHECK_PAT(r2.buf + 128, 40, 24, 0);
        /* C: provider-created EP in TENTATIVE_CONNECTION_PENDING */
        c = pa.ep_creator == DAT_PSP_CREATES_EP_NEVER ? 'N' : 'T';
        PREQUIRE(&p, pair_tell(&p, &c, 1) == 0);
        if (c == 'T') {
            DAT_PSP_HANDLE psp3;
            DAT_CONN_QUAL q3;
            DAT_CR_PARAM crp;
            DAT_EP_PARAM prm;
            DAT_EP_HANDLE ep3;
            struct mr r3;
            PREQUIRE(&p, mk_evds(p.ia, &e3) == 0);
            PREQUIRE(&p, dat_psp_create_any(p.ia, &q3, e3.cr, DAT_PSP_PROVIDER_FLAG, &psp3) ==
                             DAT_SUCCESS);
            PREQUIRE(&p, pair_tell(&p, &q3, sizeof(q3)) == 0);
            PREQUIRE(&p, GET_EV(e3.cr, &ev) && ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
            memset(&crp, 0, sizeof(crp));
            PREQUIRE(&p, dat_cr_query(ev.event_data.cr_arrival_event_data.cr_handle,
                                      DAT_CR_FIELD_ALL, &crp) == DAT_SUCCESS);
            ep3 = crp.local_ep_handle;
            PREQUIRE(&p, ep3 != DAT_HANDLE_NULL);
            CHECK(ep_state(ep3) == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
            memset(&prm, 0, sizeof(prm));
            prm.pz_handle = p.pz;
            prm.recv_evd_handle = e3.recv;
            prm.request_evd_handle = e3.req;
            prm.connect_evd_handle = e3.conn;
            CHECK_OK(dat_ep_modify(ep3,
                                   DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
                                       DAT_EP_FIELD_REQUEST_EVD_HANDLE |
                                       DAT_EP_FIELD_CONNECT_EVD_HANDLE,
                                   &prm));
            PREQUIRE(&p, mr_make(p.ia, p.pz, 128, LRW, &r3) == DAT_SUCCESS);
            CHECK_OK(recv1(ep3, &r3, 0, 128, 0x2C1, 0));
            CHECK_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
                                   DAT_HANDLE_NULL, 0, NULL));
            EXPECT_CONN(e3.conn, ep3, DAT_CONNECTION_EVENT_ESTABLISHED, 0);
            PSYNC(&p, 'e');
            if (EXPECT_DTO(e3.recv, ep3, 0x2C1, DAT_DTO_SUCCESS, 30))
                CHECK_PAT(r3.buf, 30, 25, 0);
        } else {
            DAT_PSP_HANDLE psp3;
            DAT_CONN_QUAL q3;
            CHECK_TYPE(dat_psp_create_any(p.ia, &q3, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp3),
                       DAT_MODEL_NOT_SUPPORTED);
        }
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        DAT_CONN_QUAL q;
        char c = 0;
        static const uint32_t seeds_b[2] = {23, 24};
        static const uint32_t seeds_c[1] = {25};
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        fill_pat(m.buf, 48, 22);
        PSYNC(&p, 'r');
        CHECK_OK(send1(p.ep, &m, 0, 48, 0x2A4, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x2A4, DAT_DTO_SUCCESS, 48);
        if (EXPECT_DTO(p.recv_evd, p.ep, 0x2A1, DAT_DTO_SUCCESS, 40))
            CHECK_PAT(g_m.buf, 40, 21, 0);
        PREQUIRE(&p, pair_hear(&p, &q, sizeof(q)) == 0);
        prv02_client_extra(&p, q, seeds_b, 2);
        PREQUIRE(&p, pair_hear(&p, &c, 1) == 0);
        if (c == 'T') {
            PREQUIRE(&p, pair_hear(&p, &q, sizeof(q)) == 0);
            prv02_client_extra(&p, q, seeds_c, 1);
        } else {
            NOTE_SKIP("provider never creates EPs for a PSP: TENTATIVE part not run");
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(PRV_03_post_on_disconnected_is_flushed)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    PREQUIRE(&p, pair_disconnect(&p) == 0);
    if (!p.server) {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        EXPECT_NONE(p.recv_evd);
        CHECK_OK(recv1(p.ep, &m, 0, 4096, 0x303, 0));
        EXPECT_DTO(p.recv_evd, p.ep, 0x303, DAT_DTO_ERR_FLUSHED, LEN_ANY);
        EXPECT_NONE(p.recv_evd);
        EXPECT_NONE(p.req_evd);
    }
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(PRV_04_scatter_fill_order)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0);
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m;
        DAT_LMR_TRIPLET iov[3];
        unsigned char want[12];
        PREQUIRE(&p, mr_make(p.ia, p.pz, 256, LRW, &m) == DAT_SUCCESS);
        memset(m.buf, 0xAA, 256);
        iov[0] = tr(&m, 0, 8);
        iov[1] = tr(&m, 64, 8);
        iov[2] = tr(&m, 128, 8);
        CHECK_OK(dat_ep_post_recv(p.ep, 3, iov, ck(0x404), 0));
        PSYNC(&p, 'r');
        fill_pat(want, 12, 4);
        if (EXPECT_DTO(p.recv_evd, p.ep, 0x404, DAT_DTO_SUCCESS, 12)) {
            CHECK(memcmp(m.buf, want, 8) == 0);
            CHECK_FILL(m.buf + 8, 56, 0xAA);
            CHECK(memcmp(m.buf + 64, want + 8, 4) == 0);
            CHECK_FILL(m.buf + 68, 60, 0xAA);
            CHECK_FILL(m.buf + 128, 128, 0xAA);
        }
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        fill_pat(m.buf, 12, 4);
        PSYNC(&p, 'r');
        CHECK_OK(send1(p.ep, &m, 0, 12, 0x4040, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x4040, DAT_DTO_SUCCESS, 12);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* Server posts a receive of (nseg, len) and expects status/length; the client
 * sends `msg` bytes and expects `send_st`. */
static void zero_case(int msg, DAT_DTO_COMPLETION_STATUS recv_st, DAT_VLEN recv_len,
                      DAT_DTO_COMPLETION_STATUS send_st, int zero_recv, size_t recv_size)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (p.server) {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        if (zero_recv)
            CHECK_OK(dat_ep_post_recv(p.ep, 0, NULL, ck(0x500), 0));
        else
            CHECK_OK(recv1(p.ep, &m, 0, recv_size, 0x500, 0));
        PSYNC(&p, 'r');
        EXPECT_DTO(p.recv_evd, p.ep, 0x500,
                   recv_st == DAT_DTO_ERR_LOCAL_LENGTH ? too_short_status(p.ia) : recv_st, recv_len);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        if (msg == 0)
            CHECK_OK(dat_ep_post_send(p.ep, 0, NULL, ck(0x50), 0));
        else
            CHECK_OK(send1(p.ep, &m, 0, (DAT_VLEN)msg, 0x50, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x50, send_st, send_st == DAT_DTO_SUCCESS ? (DAT_VLEN)msg : LEN_ANY);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(PRV_05_zero_segment_receive_zero_byte_send)
{
    zero_case(0, DAT_DTO_SUCCESS, 0, DAT_DTO_SUCCESS, 1, 0);
}

TEST(PRV_06_zero_segment_receive_one_byte_send)
{
    zero_case(1, DAT_DTO_ERR_LOCAL_LENGTH, LEN_ANY, ST_ANY, 1, 0);
}

TEST(PRV_07_message_longer_than_buffer)
{
    CHECK(DAT_DTO_LENGTH_ERROR == 2);
    CHECK(DAT_DTO_LENGTH_ERROR == DAT_DTO_ERR_LOCAL_LENGTH);
    zero_case(200, DAT_DTO_ERR_LOCAL_LENGTH, LEN_ANY, ST_ANY, 0, 100);
}

/* One-process EP with the given recv completion flags. */
static int loc_ep_flags(struct loc *l, DAT_COMPLETION_FLAGS recv_flags)
{
    DAT_EP_ATTR a;
    if (loc_open(l) != 0 || ep_defaults(l->ia, l->pz, l->recv, l->req, l->conn, &a) != 0)
        return -1;
    a.recv_completion_flags = recv_flags;
    return dat_ep_create(l->ia, l->pz, l->recv, l->req, l->conn, &a, &l->ep) == DAT_SUCCESS ? 0
                                                                                          : -1;
}

/* After the bad posts: a correct post works and nothing was queued. */
static void good_recv_after(struct loc *l, const struct mr *m)
{
    DAT_BOOLEAN ri = DAT_TRUE, qi = DAT_FALSE;
    DAT_EP_STATE s;
    CHECK_OK(recv1(l->ep, m, 0, 64, 0x600D, 0));
    CHECK_OK(dat_ep_get_status(l->ep, &s, &ri, &qi));
    CHECK(s == DAT_EP_STATE_UNCONNECTED);
    CHECK(ri == DAT_FALSE);
    EXPECT_NONE(l->recv);
}

TEST(PRV_08_unsignalled_without_ep_attribute)
{
    struct loc l;
    struct mr m;
    REQUIRE(loc_ep_flags(&l, DAT_COMPLETION_EVD_THRESHOLD_FLAG) == 0);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_TYPE(recv1(l.ep, &m, 0, 64, 0x808, DAT_COMPLETION_UNSIGNALLED_FLAG),
               DAT_INVALID_PARAMETER);
    good_recv_after(&l, &m);
}

TEST(PRV_09_suppress_and_fence_refused)
{
    struct loc l;
    struct mr m;
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_TYPE(recv1(l.ep, &m, 0, 64, 0x901, DAT_COMPLETION_SUPPRESS_FLAG), DAT_INVALID_PARAMETER);
    CHECK_TYPE(recv1(l.ep, &m, 0, 64, 0x902, DAT_COMPLETION_BARRIER_FENCE_FLAG),
               DAT_INVALID_PARAMETER);
    CHECK_TYPE(recv1(l.ep, &m, 0, 64, 0x903, DAT_COMPLETION_SOLICITED_WAIT_FLAG),
               DAT_INVALID_PARAMETER);
    CHECK_TYPE(recv1(l.ep, &m, 0, 64, 0x904, DAT_COMPLETION_EVD_THRESHOLD_FLAG),
               DAT_INVALID_PARAMETER);
    good_recv_after(&l, &m);
}

TEST(PRV_10_lmr_of_another_pz)
{
    struct loc l;
    struct mr m, o;
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz2, 4096, LRW, &o) == DAT_SUCCESS);
    CHECK_TYPE(recv1(l.ep, &o, 0, 64, 0xA10, 0), DAT_PROTECTION_VIOLATION);
    good_recv_after(&l, &m);
}

TEST(PRV_11_lmr_without_local_write)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (p.server) {
        struct mr m;
        char c = 0;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        fill_pat(m.buf, 16, 9);
        PREQUIRE(&p, pair_hear(&p, &c, 1) == 0);
        CHECK_OK(send1(p.ep, &m, 0, 16, 0xB11, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0xB11, c == 'g' ? DAT_DTO_SUCCESS : ST_ANY, LEN_ANY);
        PSYNC(&p, 'd');
    } else {
        struct mr ro, m;
        DAT_RETURN r;
        char c;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &ro) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        r = recv1(p.ep, &ro, 0, 64, 0xB1, 0);
        if (r == DAT_SUCCESS) {
            /* lenient path (§5 E5, REC): the receive fails when used */
            fprintf(stderr, "    note: accepted at post; expecting an error completion\n");
            c = 'l';
            PREQUIRE(&p, pair_tell(&p, &c, 1) == 0);
            EXPECT_DTO(p.recv_evd, p.ep, 0xB1, ST_ANY_ERROR, LEN_ANY);
        } else {
            CHECK_TYPE(r, DAT_PRIVILEGES_VIOLATION);
            CHECK_OK(recv1(p.ep, &m, 0, 64, 0xB2, 0));
            c = 'g';
            PREQUIRE(&p, pair_tell(&p, &c, 1) == 0);
            if (EXPECT_DTO(p.recv_evd, p.ep, 0xB2, DAT_DTO_SUCCESS, 16))
                CHECK_PAT(m.buf, 16, 9, 0);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(PRV_12_segment_past_end_of_lmr)
{
    struct loc l;
    struct mr m;
    DAT_LMR_TRIPLET t;
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    CHECK_TYPE(recv1(l.ep, &m, 0, 4097, 0xC12, 0), DAT_INVALID_PARAMETER);
    CHECK_TYPE(recv1(l.ep, &m, 4095, 2, 0xC13, 0), DAT_INVALID_PARAMETER);
    t = tr_raw(m.lc, (DAT_VADDR)(uintptr_t)m.buf - 1, 8);
    CHECK_TYPE(dat_ep_post_recv(l.ep, 1, &t, ck(0xC14), 0), DAT_INVALID_PARAMETER);
    good_recv_after(&l, &m);
}

TEST(PRV_13_more_receives_than_max_recv_dtos)
{
    struct loc l;
    struct mr m;
    DAT_EP_ATTR a, got;
    REQUIRE(loc_open(&l) == 0);
    REQUIRE(ep_defaults(l.ia, l.pz, l.recv, l.req, l.conn, &a) == 0);
    a.max_recv_dtos = 8;
    REQUIRE(dat_ep_create(l.ia, l.pz, l.recv, l.req, l.conn, &a, &l.ep) == DAT_SUCCESS);
    REQUIRE(ep_attr_of(l.ep, &got) == 0);
    REQUIRE(got.max_recv_dtos >= 8 && got.max_recv_dtos <= 65536);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    for (DAT_COUNT i = 0; i < got.max_recv_dtos; i++) {
        DAT_RETURN r = recv1(l.ep, &m, 0, 64, (uint64_t)i, 0);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    post %d of %d returned 0x%08x\n", (int)i, (int)got.max_recv_dtos,
                    (unsigned)r);
            ctest_failures++;
            return;
        }
    }
    CHECK_TYPE(recv1(l.ep, &m, 0, 64, 0xD13, 0), DAT_INSUFFICIENT_RESOURCES);
    CHECK_TYPE(dat_ep_post_recv(l.ep, 0, NULL, ck(0xD14), 0), DAT_INSUFFICIENT_RESOURCES);
    EXPECT_NONE(l.recv);
}

TEST(PRV_14_post_recv_on_srq_ep_refused)
{
    struct loc l;
    struct mr m;
    DAT_PROVIDER_ATTR pa;
    DAT_SRQ_ATTR sa = {16, 2, 0};
    DAT_SRQ_HANDLE srq;
    DAT_EP_ATTR a;
    DAT_RETURN r;
    REQUIRE(loc_open(&l) == 0);
    REQUIRE(ia_attrs(l.ia, NULL, &pa) == 0);
    if (!pa.srq_supported)
        SKIP("provider reports no SRQ support");
    REQUIRE(dat_srq_create(l.ia, l.pz, &sa, &srq) == DAT_SUCCESS);
    REQUIRE(ep_defaults(l.ia, l.pz, l.recv, l.req, l.conn, &a) == 0);
    a.max_recv_dtos = DAT_HW_DEFAULT;
    a.srq_soft_hw = DAT_HW_DEFAULT;
    REQUIRE(dat_ep_create_with_srq(l.ia, l.pz, l.recv, l.req, l.conn, srq, &a, &l.ep) ==
            DAT_SUCCESS);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    r = recv1(l.ep, &m, 0, 64, 0xE14, 0);
    CHECK(r != DAT_SUCCESS && (r & DAT_CLASS_ERROR) != 0);
    if (DAT_GET_TYPE(r) != DAT_INVALID_STATE)
        fprintf(stderr, "    note: got 0x%08x ([REF] DAT_INVALID_STATE)\n", (unsigned)r);
    EXPECT_NONE(l.recv);
    /* the SRQ itself still takes the buffer */
    CHECK_OK(dat_srq_post_recv(srq, 1, &(DAT_LMR_TRIPLET){m.lc, 0, (DAT_VADDR)(uintptr_t)m.buf, 64},
                               ck(0xE15)));
}

TEST(PRV_15_receives_consumed_in_posting_order)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (p.server) {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        for (int i = 0; i < 5; i++) {
            fill_pat(m.buf + 64 * i, 10 + (size_t)i, 150 + (uint32_t)i);
            CHECK_OK(send1(p.ep, &m, 64 * (size_t)i, 10 + (DAT_VLEN)i, 0x1500 + (uint64_t)i, 0));
        }
        for (int i = 0; i < 5; i++)
            EXPECT_DTO(p.req_evd, p.ep, 0x1500 + (uint64_t)i, DAT_DTO_SUCCESS, 10 + (DAT_VLEN)i);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        PREQUIRE(&p, post_recvs(&p, p.ep, &m, 5, 64, 0) == 0);
        PSYNC(&p, 'r');
        for (int i = 0; i < 5; i++)
            if (EXPECT_DTO(p.recv_evd, p.ep, (uint64_t)i, DAT_DTO_SUCCESS, 10 + (DAT_VLEN)i))
                CHECK_PAT(m.buf + 64 * i, 10 + (size_t)i, 150 + (uint32_t)i, 0);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(PRV_16_disconnect_flushes_every_receive_once)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (!p.server) {
        struct mr m;
        PREQUIRE(&p, post_recvs(&p, p.ep, &m, 10, 64, 0) == 0);
    }
    PSYNC(&p, 'r');
    PREQUIRE(&p, pair_disconnect(&p) == 0);
    if (!p.server) {
        int seen[10] = {0};
        for (int i = 0; i < 10; i++) {
            DAT_EVENT ev;
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            if (!GET_EV(p.recv_evd, &ev))
                break;
            if (!check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep, d->user_cookie.as_64,
                                 DAT_DTO_ERR_FLUSHED, LEN_ANY))
                continue;
            if (d->user_cookie.as_64 >= 10 || seen[d->user_cookie.as_64]++) {
                fprintf(stderr, "    unexpected or repeated cookie %llu\n",
                        (unsigned long long)d->user_cookie.as_64);
                ctest_failures++;
            }
        }
        for (int i = 0; i < 10; i++)
            CHECK(seen[i] == 1);
        EXPECT_NONE(p.recv_evd);
    }
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(PRV_17_stale_ep_handle)
{
    struct loc l;
    struct mr m;
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(l.ep) == DAT_SUCCESS);
    CHECK_TYPE(recv1(l.ep, &m, 0, 64, 1, 0), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ep_post_recv(l.ep, 0, NULL, ck(2), 0), DAT_INVALID_HANDLE);
    EXPECT_NONE(l.recv);
}

TEST(PRV_18_more_segments_than_max_recv_iov)
{
    struct loc l;
    struct mr m;
    DAT_EP_ATTR a;
    DAT_LMR_TRIPLET *iov;
    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(ep_attr_of(l.ep, &a) == 0);
    REQUIRE(a.max_recv_iov >= 1 && a.max_recv_iov < 100000);
    REQUIRE(mr_make(l.ia, l.pz, 4096, LRW, &m) == DAT_SUCCESS);
    iov = calloc((size_t)a.max_recv_iov + 1, sizeof(*iov));
    REQUIRE(iov != NULL);
    for (DAT_COUNT i = 0; i <= a.max_recv_iov; i++)
        iov[i] = tr(&m, 8 * (size_t)i, 8);
    CHECK_TYPE(dat_ep_post_recv(l.ep, a.max_recv_iov + 1, iov, ck(0x18), 0),
               DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_ep_post_recv(l.ep, -1, iov, ck(0x19), 0), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_ep_post_recv(l.ep, 1, NULL, ck(0x1A), 0), DAT_INVALID_PARAMETER);
    /* exactly max_recv_iov segments is fine */
    CHECK_OK(dat_ep_post_recv(l.ep, a.max_recv_iov, iov, ck(0x1B), 0));
    free(iov);
    good_recv_after(&l, &m);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
