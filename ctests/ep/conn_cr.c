/*
 * Connection requests: semantics-ep.md §2.2-§2.5, §2.9, §2.11, §4.24
 * dat_cr_accept (CRA), §4.25 dat_cr_handoff (CRH), §4.26 dat_cr_query
 * (CRQ), §4.27 dat_cr_reject (CRR), with rulings.md (E17, E18); and the
 * bad-handle sweep of every CR handle-taking call (BADH_CR_*): NULL,
 * misaligned, garbage, destroyed and wrong-type CR handles, and bad EP
 * handles passed to dat_cr_accept, return DAT_INVALID_HANDLE and never
 * crash (rulings.md rule 1, abi-errors.md §5).
 */
#include "conn_util.h"

#define PRE_CR (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_CR)

/* The CR still answers a query (it is alive). */
#define CHECK_CR_ALIVE(cr)                                                     \
    do {                                                                       \
        DAT_CR_PARAM cpa_;                                                     \
        memset(&cpa_, 0, sizeof(cpa_));                                        \
        CHECK_OK(dat_cr_query((cr), DAT_CR_FIELD_ALL, &cpa_));                 \
    } while (0)

/* Client half used by many PAIR cases: connect ep to the PSP with (pd, n)
 * and expect `want`. */
static void cli_expect(struct pair *p, DAT_EP_HANDLE ep, const void *pd, DAT_COUNT n,
                       DAT_EVENT_NUMBER want)
{
    CHECK_OK(connect_to(p, ep, p->qual, WAIT_US, pd, n));
    EXPECT_CONN(p->conn_evd, want, ep);
}

/* ======================= §4.24 dat_cr_accept =============================== */

TEST(CRA_01_accept_with_private_data)
{
    struct pair p;
    DAT_EP_HANDLE ep;
    unsigned char pd[16];
    DAT_EVENT ev;

    pd_fill(pd, 16, 61);
    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, ep, 16, pd));
        if (EXPECT_CONN_EV(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev))
            CHECK(pair_pd_size_ok(ev.event_data.connect_event_data.private_data,
                                  ev.event_data.connect_event_data.private_data_size, 0));
        HEAR(&p, 'z');
    } else {
        CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, NULL, 0));
        if (EXPECT_CONN_EV(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev))
            CHECK_PD(ev.event_data.connect_event_data.private_data,
                     ev.event_data.connect_event_data.private_data_size, pd, 16);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_02_state_after_accept)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_EP_STATE s;
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        s = ep_state(ep);
        if (s != DAT_EP_STATE_COMPLETION_PENDING && s != DAT_EP_STATE_CONNECTED)
            FAILF("state right after dat_cr_accept: %u, want 12 or 9", (unsigned)s);
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        CHECK_STATE(ep, DAT_EP_STATE_CONNECTED);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_03_cr_dead_after_accept)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_PARAM cp;
        DAT_EP_HANDLE ep2 = mk_ep(&p);
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL && ep2 != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), DAT_INVALID_HANDLE);
        CHECK_TYPE(dat_cr_accept(cr, ep2, 0, NULL), DAT_INVALID_HANDLE);
        CHECK_TYPE(dat_cr_reject(cr), DAT_INVALID_HANDLE);
        CHECK_STATE(ep2, DAT_EP_STATE_UNCONNECTED);
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        EXPECT_QUIET(p.conn_evd);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        EXPECT_QUIET(p.conn_evd);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_04_private_data_too_large)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_COUNT mx = max_pd(p.ia);
        unsigned char *pd = calloc((size_t)mx + 2, 1);
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL && mx >= 4 && pd != NULL);
        CHECK_TYPE(dat_cr_accept(cr, ep, mx + 1, pd), DAT_INVALID_PARAMETER);
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
        CHECK_CR_ALIVE(cr);
        CHECK_OK(dat_cr_accept(cr, ep, mx, pd));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        free(pd);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_05_private_data_null_or_negative)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        unsigned char pd[4] = {1, 2, 3, 4};
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_TYPE(dat_cr_accept(cr, ep, 4, NULL), DAT_INVALID_PARAMETER);
        CHECK_TYPE(dat_cr_accept(cr, ep, -1, pd), DAT_INVALID_PARAMETER);
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
        CHECK_CR_ALIVE(cr);
        CHECK_OK(dat_cr_accept(cr, ep, 4, pd));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_06_consumer_cr_needs_an_ep)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_TYPE2(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL), DAT_INVALID_HANDLE,
                    DAT_INVALID_PARAMETER);
        CHECK_CR_ALIVE(cr);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_07_rsp_cr_with_explicit_ep)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EP_HANDLE rep = mk_ep(&p), other = mk_ep(&p);
        DAT_EVD_HANDLE evd = mk_cr_evd(p.ia, 8);
        DAT_CONN_QUAL q = free_qual(p.ia, p.cr_evd);
        DAT_RSP_HANDLE rsp;
        DAT_CR_HANDLE cr;
        DAT_RETURN r;
        REQUIRE(rep && other && evd && q);
        REQUIRE(dat_rsp_create(p.ia, q, rep, evd, &rsp) == DAT_SUCCESS);
        tell_u64(&p, q);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        r = dat_cr_accept(cr, other, 0, NULL);
        CHECK_FAILS(r);
        if (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE)
            fprintf(stderr, "    note: 0x%08x, [REF] gives DAT_INVALID_HANDLE\n", (unsigned)r);
        r = dat_cr_accept(cr, rep, 0, NULL);
        CHECK_FAILS(r);
        CHECK_CR_ALIVE(cr);
        CHECK_STATE(other, DAT_EP_STATE_UNCONNECTED);
        CHECK_STATE(rep, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, rep);
        HEAR(&p, 'z');
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_08_ep_without_connect_evd)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_EP_HANDLE bare;
        DAT_CR_HANDLE cr;
        REQUIRE(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, DAT_HANDLE_NULL, NULL, &bare) ==
                DAT_SUCCESS);
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_FAILS(dat_cr_accept(cr, bare, 0, NULL));
        CHECK_CR_ALIVE(cr);
        CHECK_STATE(bare, DAT_EP_STATE_UNCONNECTED);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_09_ep_already_connected)
{
    struct pair p;
    struct mr m;
    DAT_EP_HANDLE ep1, ep2;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(mk_mr(p.ia, p.pz, 4096, &m));
    REQUIRE(link_ep(&p, &ep1));
    ep2 = mk_ep(&p);
    REQUIRE(ep2 != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_HANDLE cr;
        CHECK_OK(post_recv(ep1, &m, 0, 256, 1));
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_SUB(dat_cr_accept(cr, ep1, 0, NULL), DAT_INVALID_STATE,
                  DAT_INVALID_STATE_EP_CONNECTED);
        CHECK_STATE(ep1, DAT_EP_STATE_CONNECTED);
        CHECK_CR_ALIVE(cr);
        CHECK_OK(dat_cr_accept(cr, ep2, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep2);
        say(&p, 'r');
        /* the first connection still carries a message */
        EXPECT_DTO(p.recv_evd, ep1, 1, DAT_DTO_SUCCESS, 24);
        EXPECT_QUIET(p.conn_evd);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep2, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        HEAR(&p, 'r');
        CHECK_STATE(ep1, DAT_EP_STATE_CONNECTED);
        CHECK_OK(post_send(ep1, &m, 0, 24, 2));
        EXPECT_DTO(p.req_evd, ep1, 2, DAT_DTO_SUCCESS, 24);
        EXPECT_QUIET(p.conn_evd);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_10_accept_after_client_timeout)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        struct mr m;
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_CR_HANDLE cr;
        DAT_RETURN r;
        REQUIRE(ep != DAT_HANDLE_NULL);
        REQUIRE(mk_mr(p.ia, p.pz, 4096, &m));
        CHECK_OK(post_recv(ep, &m, 0, 256, 1));
        CHECK_OK(post_recv(ep, &m, 256, 256, 2));
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        ctest_sleep_ms(2000);
        HEAR(&p, 't'); /* the client has seen its timeout */
        r = dat_cr_accept(cr, ep, 0, NULL);
        fprintf(stderr, "    (late dat_cr_accept: 0x%08x)\n", (unsigned)r);
        if (r == DAT_SUCCESS) {
            EXPECT_LATE_ACCEPT_ENDS(p.ia, p.conn_evd, ep, 30 * US);
            CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
            EXPECT_DTO_SET(p.recv_evd, ep, 1, 2, DAT_DTO_ERR_FLUSHED);
        } else {
            CHECK_FAILS(r);
            CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
            EXPECT_QUIET(p.recv_evd); /* nothing flushed: both receives still posted */
            EXPECT_QUIET(p.conn_evd);
        }
        HEAR(&p, 'z');
    } else {
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, p.qual, 300000, NULL, 0));
        EXPECT_CONN_ANY(p.conn_evd, ep, 5 * US, DAT_CONNECTION_EVENT_TIMED_OUT,
                        DAT_CONNECTION_EVENT_UNREACHABLE);
        say(&p, 't');
        EXPECT_QUIET(p.conn_evd);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_11_accept_after_client_freed_ep)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_CR_HANDLE cr;
        DAT_RETURN r;
        REQUIRE(ep != DAT_HANDLE_NULL);
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        say(&p, 'c');
        HEAR(&p, 'f');
        ctest_sleep_ms(200);
        r = dat_cr_accept(cr, ep, 0, NULL);
        fprintf(stderr, "    (dat_cr_accept after the client freed its EP: 0x%08x)\n",
                (unsigned)r);
        if (r == DAT_SUCCESS)
            EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, ep);
        else
            CHECK_FAILS(r);
        HEAR(&p, 'z');
    } else {
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, NULL, 0));
        HEAR(&p, 'c');
        CHECK_OK(dat_ep_free(ep));
        say(&p, 'f');
        EXPECT_QUIET(p.conn_evd); /* no event for a freed EP */
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_12_provider_ep_modified_then_accepted)
{
    struct pair p;
    struct attrs a;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(get_attrs(p.ia, &a));
    if (a.pr.ep_creator == DAT_PSP_CREATES_EP_NEVER) {
        CHECK_TYPE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp),
                   DAT_MODEL_NOT_SUPPORTED);
        local_close(&p);
        SKIP("ep_creator NEVER: provider-created EPs not supported");
    } else {
        struct kid k;
        DAT_CR_PARAM cp;
        DAT_EP_PARAM prm;
        DAT_CR_HANDLE cr;
        REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp) ==
                DAT_SUCCESS);
        REQUIRE(kid_go(&p, &k, q, WAIT_US));
        cr = WAIT_CR(p.cr_evd, NULL);
        if (cr != DAT_HANDLE_NULL) {
            memset(&cp, 0, sizeof(cp));
            CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
            memset(&prm, 0, sizeof(prm));
            prm.pz_handle = p.pz;
            prm.recv_evd_handle = p.recv_evd;
            prm.request_evd_handle = p.req_evd;
            prm.connect_evd_handle = p.conn_evd;
            CHECK_OK(dat_ep_modify(cp.local_ep_handle,
                                   DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
                                       DAT_EP_FIELD_REQUEST_EVD_HANDLE |
                                       DAT_EP_FIELD_CONNECT_EVD_HANDLE,
                                   &prm));
            CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
            EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, cp.local_ep_handle);
            CHECK_STATE(cp.local_ep_handle, DAT_EP_STATE_CONNECTED);
            kid_expect(&k, DAT_CONNECTION_EVENT_ESTABLISHED);
        }
        kid_end(&k);
    }
    local_close(&p);
}

TEST(CRA_13_preposted_receive_takes_first_message)
{
    struct pair p;
    struct mr m;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(mk_mr(p.ia, p.pz, 4096, &m));
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        CHECK_OK(post_recv(ep, &m, 0, 1024, 77));
        REQUIRE(srv_accept_ep(&p, ep, NULL, 0));
        if (EXPECT_DTO(p.recv_evd, ep, 77, DAT_DTO_SUCCESS, 100)) {
            unsigned char want[100];
            pd_fill(want, 100, 13);
            CHECK(memcmp(m.buf, want, 100) == 0);
        }
        HEAR(&p, 'z');
    } else {
        REQUIRE(cli_connect_ep(&p, ep, NULL, 0));
        pd_fill(m.buf, 100, 13);
        CHECK_OK(post_send(ep, &m, 0, 100, 78));
        EXPECT_DTO(p.req_evd, ep, 78, DAT_DTO_SUCCESS, 100);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRA_14_rdma_read_credit_mismatch)
{
    struct pair p;
    DAT_EP_ATTR attr;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(default_ep_attr(&p, &attr));
    if (p.server) {
        DAT_CR_HANDLE cr;
        DAT_RETURN r;
        DAT_UINT64 what;
        attr.max_rdma_read_in = 0;
        attr.max_rdma_read_out = 0;
        ep = mk_ep_attr(&p, &attr);
        REQUIRE(ep != DAT_HANDLE_NULL);
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        r = dat_cr_accept(cr, ep, 0, NULL);
        fprintf(stderr, "    (accept with max_rdma_read_in 0: 0x%08x)\n", (unsigned)r);
        if (r == DAT_SUCCESS) {
            what = 1;
            EXPECT_CONN_ANY(p.conn_evd, ep, WAIT_US, DAT_CONNECTION_EVENT_ESTABLISHED,
                            DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
        } else {
            what = 2;
            CHECK_FAILS(r);
            CHECK_OK(dat_cr_reject(cr));
        }
        tell_u64(&p, what);
        HEAR(&p, 'z');
    } else {
        DAT_UINT64 what;
        DAT_EVENT ev;
        attr.max_rdma_read_out = 2;
        attr.max_rdma_read_in = 2;
        ep = mk_ep_attr(&p, &attr);
        REQUIRE(ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, p.qual, 5 * US, NULL, 0));
        if (wait_ev(p.conn_evd, &ev, WAIT_US) != DAT_SUCCESS) {
            FAILF("no connection event");
        } else {
            what = hear_u64(&p);
            CHECK(ev.event_data.connect_event_data.ep_handle == ep);
            if (what == 2)
                CHECK(ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED);
            else
                CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED ||
                      ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED ||
                      ev.event_number == DAT_CONNECTION_EVENT_TIMED_OUT);
        }
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* ======================= §4.25 dat_cr_handoff ============================== */

/* Server: a second PSP (B) on its own CR EVD. */
static int psp_b(struct pair *p, DAT_EVD_HANDLE *evd, DAT_PSP_HANDLE *psp, DAT_CONN_QUAL *q)
{
    *evd = mk_cr_evd(p->ia, 8);
    *q = 0;
    return *evd != DAT_HANDLE_NULL &&
           dat_psp_create_any(p->ia, q, *evd, DAT_PSP_CONSUMER_FLAG, psp) == DAT_SUCCESS;
}

TEST(CRH_01_handoff_to_second_psp)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_EVD_HANDLE evd_b;
        DAT_PSP_HANDLE pb;
        DAT_CONN_QUAL qb;
        DAT_CR_PARAM cp;
        DAT_EVENT ev;
        DAT_CR_HANDLE cr, cr2;
        REQUIRE(psp_b(&p, &evd_b, &pb, &qb));
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_handoff(cr, qb));
        CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), DAT_INVALID_HANDLE);
        cr2 = WAIT_CR(evd_b, &ev);
        REQUIRE(cr2 != DAT_HANDLE_NULL);
        CHECK(ev.event_data.cr_arrival_event_data.conn_qual == qb);
        CHECK(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle == pb);
        EXPECT_QUIET(p.cr_evd);
        CHECK_OK(dat_cr_accept(cr2, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRH_02_handoff_keeps_private_data)
{
    struct pair p;
    DAT_EP_HANDLE ep;
    unsigned char pd[40];

    pd_fill(pd, 40, 88);
    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_EVD_HANDLE evd_b;
        DAT_PSP_HANDLE pb;
        DAT_CONN_QUAL qb;
        DAT_CR_PARAM c1, c2;
        struct sockaddr_storage raddr;
        DAT_CR_HANDLE cr, cr2;
        REQUIRE(psp_b(&p, &evd_b, &pb, &qb));
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        memset(&c1, 0, sizeof(c1));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &c1));
        memset(&raddr, 0, sizeof(raddr));
        if (c1.remote_ia_address_ptr != NULL)
            memcpy(&raddr, c1.remote_ia_address_ptr, sa_len(c1.remote_ia_address_ptr));
        CHECK_OK(dat_cr_handoff(cr, qb));
        cr2 = WAIT_CR(evd_b, NULL);
        REQUIRE(cr2 != DAT_HANDLE_NULL);
        memset(&c2, 0, sizeof(c2));
        CHECK_OK(dat_cr_query(cr2, DAT_CR_FIELD_ALL, &c2));
        CHECK_PD(c2.private_data, c2.private_data_size, pd, 40);
        CHECK_ADDR(c2.remote_ia_address_ptr, &raddr);
        CHECK(c2.remote_port_qual == c1.remote_port_qual);
        CHECK(c2.local_ep_handle == DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr2, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, pd, 40, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRH_03_handoff_to_nobody)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CONN_QUAL dead = free_qual(p.ia, p.cr_evd);
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        DAT_RETURN r;
        REQUIRE(dead != 0 && cr != DAT_HANDLE_NULL);
        r = dat_cr_handoff(cr, dead);
        fprintf(stderr, "    (dat_cr_handoff to a dead qualifier: 0x%08x)\n", (unsigned)r);
        if (r == DAT_SUCCESS) {
            /* lenient path: the client then sees NON_PEER_REJECTED */
            tell_u64(&p, 1);
        } else {
            CHECK_TYPE(r, DAT_INVALID_PARAMETER);
            CHECK_CR_ALIVE(cr); /* ruling E18 */
            CHECK_OK(dat_cr_reject(cr));
            tell_u64(&p, 2);
        }
        HEAR(&p, 'z');
    } else {
        DAT_UINT64 what;
        CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, NULL, 0));
        what = hear_u64(&p);
        EXPECT_CONN(p.conn_evd,
                    what == 1 ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                              : DAT_CONNECTION_EVENT_PEER_REJECTED,
                    ep);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRH_04_stale_cr)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_EVD_HANDLE evd_b;
        DAT_PSP_HANDLE pb;
        DAT_CONN_QUAL qb;
        DAT_CR_HANDLE cr;
        REQUIRE(psp_b(&p, &evd_b, &pb, &qb));
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        CHECK_TYPE(dat_cr_handoff(cr, qb), DAT_INVALID_HANDLE);
        EXPECT_QUIET(evd_b);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_PEER_REJECTED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRH_05_dup_connect_after_handoff)
{
    dup_follows_handoff_case();
}

/* ======================= §4.26 dat_cr_query ================================ */

TEST(CRQ_01_all_fields_consumer_psp)
{
    struct pair p;
    DAT_EP_HANDLE ep;
    unsigned char pd[33];

    pd_fill(pd, 33, 91);
    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_PARAM cp;
        struct sockaddr_storage caddr;
        DAT_UINT64 cport;
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        say(&p, 'c'); /* the request is here; the client is ACTIVE_CONNECTION_PENDING */
        REQUIRE(pair_hear(&p, &caddr, sizeof(caddr)) == 0);
        cport = hear_u64(&p);
        memset(&cp, 0xA5, sizeof(cp));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
        CHECK_ADDR(cp.remote_ia_address_ptr, &caddr);
        if (cp.remote_port_qual != cport)
            FAILF("remote_port_qual %llu, the client's local_port_qual %llu",
                  (unsigned long long)cp.remote_port_qual, (unsigned long long)cport);
        CHECK_PD(cp.private_data, cp.private_data_size, pd, 33);
        CHECK(cp.local_ep_handle == DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        DAT_IA_ATTR ia_a;
        DAT_EP_PARAM prm;
        struct sockaddr_storage me;
        memset(&ia_a, 0, sizeof(ia_a));
        memset(&me, 0, sizeof(me));
        REQUIRE(dat_ia_query(p.ia, NULL, DAT_IA_FIELD_ALL, &ia_a, 0, NULL) == DAT_SUCCESS);
        memcpy(&me, ia_a.ia_address_ptr, sa_len(ia_a.ia_address_ptr));
        CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, pd, 33));
        HEAR(&p, 'c');
        memset(&prm, 0, sizeof(prm));
        /* local_port_qual is meaningful in ACTIVE_CONNECTION_PENDING (§4.9) */
        CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &prm));
        CHECK(prm.ep_state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
        pair_tell(&p, &me, sizeof(me));
        tell_u64(&p, prm.local_port_qual);
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRQ_02_provider_psp_local_ep)
{
    struct pair p;
    struct attrs a;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(get_attrs(p.ia, &a));
    if (a.pr.ep_creator == DAT_PSP_CREATES_EP_NEVER) {
        CHECK_TYPE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp),
                   DAT_MODEL_NOT_SUPPORTED);
        local_close(&p);
        SKIP("ep_creator NEVER: provider-created EPs not supported");
    } else {
        struct kid k;
        DAT_CR_PARAM cp;
        DAT_HANDLE_TYPE t = (DAT_HANDLE_TYPE)0x77;
        DAT_CR_HANDLE cr;
        REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp) ==
                DAT_SUCCESS);
        REQUIRE(kid_go(&p, &k, q, WAIT_US));
        cr = WAIT_CR(p.cr_evd, NULL);
        if (cr != DAT_HANDLE_NULL) {
            memset(&cp, 0, sizeof(cp));
            CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
            CHECK_OK(dat_get_handle_type(cp.local_ep_handle, &t));
            CHECK(t == DAT_HANDLE_TYPE_EP);
            CHECK_STATE(cp.local_ep_handle, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
            CHECK_OK(dat_cr_reject(cr));
            kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
        }
        kid_end(&k);
    }
    local_close(&p);
}

TEST(CRQ_03_rsp_local_ep)
{
    struct pair p;
    struct kid k;
    DAT_EP_HANDLE rep;
    DAT_RSP_HANDLE rsp;
    DAT_CONN_QUAL q;
    DAT_CR_HANDLE cr;

    REQUIRE(local_open(&p));
    rep = mk_ep(&p);
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(rep != DAT_HANDLE_NULL && q != 0);
    REQUIRE(dat_rsp_create(p.ia, q, rep, p.cr_evd, &rsp) == DAT_SUCCESS);
    REQUIRE(kid_go(&p, &k, q, WAIT_US));
    cr = WAIT_CR(p.cr_evd, NULL);
    if (cr != DAT_HANDLE_NULL) {
        DAT_CR_PARAM cp;
        memset(&cp, 0, sizeof(cp));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_LOCAL_EP_HANDLE, &cp));
        CHECK(cp.local_ep_handle == rep);
        CHECK_OK(dat_cr_reject(cr));
        kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
    }
    kid_end(&k);
    local_close(&p);
}

TEST(CRQ_04_unknown_mask_bit)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_PARAM cp;
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_TYPE(dat_cr_query(cr, 0x20, &cp), DAT_INVALID_PARAMETER);
        CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL | 0x20, &cp), DAT_INVALID_PARAMETER);
        CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
        CHECK_CR_ALIVE(cr);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRQ_05_dead_after_accept_reject_handoff)
{
    struct pair p;
    DAT_EP_HANDLE ep[3];
    int i;

    REQUIRE(pair_start(&p) == 0);
    for (i = 0; i < 3; i++) {
        ep[i] = mk_ep(&p);
        REQUIRE(ep[i] != DAT_HANDLE_NULL);
    }
    if (p.server) {
        DAT_EVD_HANDLE evd_b;
        DAT_PSP_HANDLE pb;
        DAT_CONN_QUAL qb;
        DAT_CR_PARAM cp;
        DAT_CR_HANDLE cr;
        REQUIRE(psp_b(&p, &evd_b, &pb, &qb));
        /* accept */
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, ep[0], 0, NULL));
        CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), DAT_INVALID_HANDLE);
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep[0]);
        say(&p, '1');
        /* reject */
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), DAT_INVALID_HANDLE);
        say(&p, '2');
        /* handoff */
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_handoff(cr, qb));
        CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), DAT_INVALID_HANDLE);
        cr = WAIT_CR(evd_b, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, ep[2], 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep[2]);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep[0], NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        HEAR(&p, '1');
        cli_expect(&p, ep[1], NULL, 0, DAT_CONNECTION_EVENT_PEER_REJECTED);
        HEAR(&p, '2');
        cli_expect(&p, ep[2], NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRQ_06_repeated_query_same_pointer)
{
    struct pair p;
    DAT_EP_HANDLE ep;
    unsigned char pd[50];

    pd_fill(pd, 50, 17);
    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_PARAM a, b;
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &a));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &b));
        CHECK(a.private_data == b.private_data);
        CHECK_PD(a.private_data, a.private_data_size, pd, 50);
        CHECK_PD(b.private_data, b.private_data_size, pd, 50);
        CHECK(a.remote_port_qual == b.remote_port_qual);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, pd, 50, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRQ_07_zero_private_data)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_PARAM cp;
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        memset(&cp, 0x5A, sizeof(cp));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
        CHECK(pair_pd_size_ok(cp.private_data, cp.private_data_size, 0));
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* ======================= §4.27 dat_cr_reject =============================== */

TEST(CRR_01_reject_consumer_psp)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        HEAR(&p, 'z');
        EXPECT_QUIET(p.conn_evd);
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_PEER_REJECTED);
        CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRR_02_reject_rsp_returns_ep)
{
    struct pair p;
    struct kid k;
    DAT_EP_HANDLE rep;
    DAT_RSP_HANDLE rsp;
    DAT_CONN_QUAL q;
    DAT_CR_HANDLE cr;

    REQUIRE(local_open(&p));
    rep = mk_ep(&p);
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(rep != DAT_HANDLE_NULL && q != 0);
    REQUIRE(dat_rsp_create(p.ia, q, rep, p.cr_evd, &rsp) == DAT_SUCCESS);
    REQUIRE(kid_go(&p, &k, q, WAIT_US));
    cr = WAIT_CR(p.cr_evd, NULL);
    if (cr != DAT_HANDLE_NULL) {
        CHECK_OK(dat_cr_reject(cr));
        CHECK_STATE(rep, DAT_EP_STATE_UNCONNECTED);
        kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
        CHECK_OK(dat_ep_free(rep));
    }
    kid_end(&k);
    local_close(&p);
}

TEST(CRR_03_reject_provider_psp)
{
    struct pair p;
    struct attrs a;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(get_attrs(p.ia, &a));
    if (a.pr.ep_creator == DAT_PSP_CREATES_EP_NEVER) {
        CHECK_TYPE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp),
                   DAT_MODEL_NOT_SUPPORTED);
        local_close(&p);
        SKIP("ep_creator NEVER: provider-created EPs not supported");
    } else {
        struct kid k;
        DAT_CR_PARAM cp;
        DAT_CR_HANDLE cr;
        REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp) ==
                DAT_SUCCESS);
        REQUIRE(kid_go(&p, &k, q, WAIT_US));
        cr = WAIT_CR(p.cr_evd, NULL);
        if (cr != DAT_HANDLE_NULL) {
            CHECK_OK(dat_cr_reject(cr));
            CHECK_TYPE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp), DAT_INVALID_HANDLE);
            kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
        }
        kid_end(&k);
    }
    local_close(&p);
}

TEST(CRR_04_double_reject)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        CHECK_TYPE(dat_cr_reject(cr), DAT_INVALID_HANDLE);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep, NULL, 0, DAT_CONNECTION_EVENT_PEER_REJECTED);
        EXPECT_QUIET(p.conn_evd);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(CRR_05_reject_null)
{
    CHECK_RET(dat_cr_reject(DAT_HANDLE_NULL), PRE_CR);
}

TEST(CRR_06_psp_still_listens_after_reject)
{
    struct pair p;
    DAT_EP_HANDLE ep1, ep2;

    REQUIRE(pair_start(&p) == 0);
    ep1 = mk_ep(&p);
    ep2 = mk_ep(&p);
    REQUIRE(ep1 != DAT_HANDLE_NULL && ep2 != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_EVENT ev;
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL), cr2;
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        cr2 = WAIT_CR(p.cr_evd, &ev);
        REQUIRE(cr2 != DAT_HANDLE_NULL);
        CHECK(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle == p.psp);
        CHECK_OK(dat_cr_accept(cr2, ep2, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep2);
        HEAR(&p, 'z');
    } else {
        cli_expect(&p, ep1, NULL, 0, DAT_CONNECTION_EVENT_PEER_REJECTED);
        cli_expect(&p, ep2, NULL, 0, DAT_CONNECTION_EVENT_ESTABLISHED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* ======================= bad handles: CR =================================== */

/* Every CR-handle call with h; exact: the libdat pre-check value. ep is an
 * UNCONNECTED EP and q a live qualifier, so only h is wrong. */
static void cr_calls(DAT_CR_HANDLE h, DAT_EP_HANDLE ep, DAT_CONN_QUAL q, int exact,
                     const char *what)
{
    DAT_CR_PARAM cp;
    DAT_RETURN r[4];
    const char *name[4] = {"dat_cr_query", "dat_cr_accept", "dat_cr_handoff", "dat_cr_reject"};
    int i;
    memset(&cp, 0, sizeof(cp));
    r[0] = dat_cr_query(h, DAT_CR_FIELD_ALL, &cp);
    r[1] = dat_cr_accept(h, ep, 0, NULL);
    r[2] = dat_cr_handoff(h, q);
    r[3] = dat_cr_reject(h);
    for (i = 0; i < 4; i++)
        if (exact ? r[i] != (DAT_RETURN)PRE_CR
                  : (DAT_GET_TYPE(r[i]) != DAT_INVALID_HANDLE || !(r[i] & DAT_CLASS_ERROR)))
            FAILF("%s(%s): 0x%08x", name[i], what, (unsigned)r[i]);
}

struct crlive {
    struct pair p;
    DAT_EP_HANDLE ep, rep;
    DAT_PSP_HANDLE psp;
    DAT_RSP_HANDLE rsp;
    DAT_CONN_QUAL pq, rq;
};

static int crlive_open(struct crlive *l)
{
    memset(l, 0, sizeof(*l));
    if (!local_open(&l->p))
        return 0;
    l->ep = mk_ep(&l->p);
    l->rep = mk_ep(&l->p);
    if (l->ep == DAT_HANDLE_NULL || l->rep == DAT_HANDLE_NULL)
        return 0;
    if (dat_psp_create_any(l->p.ia, &l->pq, l->p.cr_evd, DAT_PSP_CONSUMER_FLAG, &l->psp) !=
        DAT_SUCCESS)
        return 0;
    l->p.qual = l->pq;
    l->p.psp = l->psp;
    l->rq = free_qual(l->p.ia, l->p.cr_evd);
    return l->rq != 0 &&
           dat_rsp_create(l->p.ia, l->rq, l->rep, l->p.cr_evd, &l->rsp) == DAT_SUCCESS;
}

static void crlive_intact(struct crlive *l)
{
    DAT_PSP_PARAM pp;
    DAT_RSP_PARAM rp;
    CHECK_OK(dat_psp_query(l->psp, DAT_PSP_FIELD_ALL, &pp));
    CHECK_OK(dat_rsp_query(l->rsp, DAT_RSP_FIELD_ALL, &rp));
    CHECK_STATE(l->ep, DAT_EP_STATE_UNCONNECTED);
    CHECK_STATE(l->rep, DAT_EP_STATE_RESERVED);
    CHECK_OK(dat_evd_query(l->p.cr_evd, DAT_EVD_FIELD_ALL, &(DAT_EVD_PARAM){0}));
    CHECK_OK(dat_pz_query(l->p.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
    EXPECT_QUIET(l->p.conn_evd);
}

TEST(BADH_CR_01_null_and_misaligned)
{
    static const uintptr_t mis[] = {0x1001, 0x1002, 0x1003, 0x7fff0001, (uintptr_t)-1};
    struct crlive l;
    size_t i;

    cr_calls(DAT_HANDLE_NULL, DAT_HANDLE_NULL, 1234, 1, "NULL, no IA");
    REQUIRE(crlive_open(&l));
    cr_calls(DAT_HANDLE_NULL, l.ep, l.pq, 1, "NULL");
    for (i = 0; i < sizeof(mis) / sizeof(mis[0]); i++)
        cr_calls((DAT_CR_HANDLE)mis[i], l.ep, l.pq, 1, "misaligned");
    cr_calls((DAT_CR_HANDLE)((uintptr_t)l.psp + 1), l.ep, l.pq, 1, "live PSP + 1");
    crlive_intact(&l);
    local_close(&l.p);
}

TEST(BADH_CR_02_garbage)
{
    struct crlive l;
    struct {
        void *word0;
        DAT_UINT64 rest[31];
    } junk;
    unsigned seed = 0xC2;
    size_t i;

    REQUIRE(crlive_open(&l));
    memset(&junk, 0, sizeof(junk));
    cr_calls((DAT_CR_HANDLE)&junk, l.ep, l.pq, 0, "zeroed local struct");
    for (i = 0; i < sizeof(junk.rest) / sizeof(junk.rest[0]); i++)
        junk.rest[i] = ((DAT_UINT64)rand_r(&seed) << 32) | (DAT_UINT64)rand_r(&seed);
    /* forged: a live object's first word (the DAT_PROVIDER *) */
    memcpy(&junk.word0, l.psp, sizeof(void *));
    cr_calls((DAT_CR_HANDLE)&junk, l.ep, l.pq, 0, "forged (PSP provider word)");
    memcpy(&junk.word0, l.ep, sizeof(void *));
    cr_calls((DAT_CR_HANDLE)&junk, l.ep, l.pq, 0, "forged (EP provider word)");
    crlive_intact(&l);
    local_close(&l.p);
}

TEST(BADH_CR_03_destroyed)
{
    struct crlive l;
    struct kid k1, k2;
    DAT_CR_HANDLE cr;
    DAT_EP_HANDLE acc;

    REQUIRE(crlive_open(&l));
    acc = mk_ep(&l.p);
    REQUIRE(acc != DAT_HANDLE_NULL);
    /* a rejected CR */
    REQUIRE(kid_go(&l.p, &k1, l.pq, WAIT_US));
    cr = WAIT_CR(l.p.cr_evd, NULL);
    if (cr != DAT_HANDLE_NULL) {
        CHECK_OK(dat_cr_reject(cr));
        kid_expect(&k1, DAT_CONNECTION_EVENT_PEER_REJECTED);
        cr_calls(cr, l.ep, l.pq, 0, "rejected CR");
    }
    kid_end(&k1);
    /* an accepted CR */
    REQUIRE(kid_go(&l.p, &k2, l.pq, WAIT_US));
    cr = WAIT_CR(l.p.cr_evd, NULL);
    if (cr != DAT_HANDLE_NULL) {
        CHECK_OK(dat_cr_accept(cr, acc, 0, NULL));
        EXPECT_CONN(l.p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, acc);
        kid_expect(&k2, DAT_CONNECTION_EVENT_ESTABLISHED);
        cr_calls(cr, l.ep, l.pq, 0, "accepted CR");
        CHECK_STATE(acc, DAT_EP_STATE_CONNECTED);
    }
    crlive_intact(&l);
    kid_end(&k2);
    local_close(&l.p);
}

TEST(BADH_CR_04_wrong_type)
{
    struct crlive l;

    REQUIRE(crlive_open(&l));
    cr_calls((DAT_CR_HANDLE)l.p.cr_evd, l.ep, l.pq, 0, "CR EVD as CR");
    cr_calls((DAT_CR_HANDLE)l.p.conn_evd, l.ep, l.pq, 0, "connection EVD as CR");
    cr_calls((DAT_CR_HANDLE)l.psp, l.ep, l.pq, 0, "PSP as CR");
    cr_calls((DAT_CR_HANDLE)l.rsp, l.ep, l.pq, 0, "RSP as CR");
    cr_calls((DAT_CR_HANDLE)l.rep, l.ep, l.pq, 0, "reserved EP as CR");
    cr_calls((DAT_CR_HANDLE)l.ep, l.ep, l.pq, 0, "EP as CR");
    cr_calls((DAT_CR_HANDLE)l.p.ia, l.ep, l.pq, 0, "IA as CR");
    cr_calls((DAT_CR_HANDLE)l.p.pz, l.ep, l.pq, 0, "PZ as CR");
    crlive_intact(&l);
    local_close(&l.p);
}

TEST(BADH_CR_05_bad_ep_to_accept)
{
    struct crlive l;
    struct kid k;
    DAT_CR_HANDLE cr;
    DAT_EP_HANDLE dead;

    REQUIRE(crlive_open(&l));
    dead = mk_ep(&l.p);
    REQUIRE(dead != DAT_HANDLE_NULL);
    REQUIRE(dat_ep_free(dead) == DAT_SUCCESS);
    REQUIRE(kid_go(&l.p, &k, l.pq, WAIT_US));
    cr = WAIT_CR(l.p.cr_evd, NULL);
    if (cr != DAT_HANDLE_NULL) {
        struct {
            void *word0;
            DAT_UINT64 rest[31];
        } junk;
        DAT_EP_HANDLE bad[7];
        size_t i;
        memset(&junk, 0, sizeof(junk));
        memcpy(&junk.word0, l.ep, sizeof(void *));
        bad[0] = dead;
        bad[1] = (DAT_EP_HANDLE)&junk;
        bad[2] = (DAT_EP_HANDLE)(uintptr_t)0x1002;
        bad[3] = (DAT_EP_HANDLE)l.psp;
        bad[4] = (DAT_EP_HANDLE)l.p.conn_evd;
        bad[5] = (DAT_EP_HANDLE)l.rsp;
        bad[6] = (DAT_EP_HANDLE)l.p.ia;
        for (i = 0; i < 7; i++) {
            DAT_RETURN r = dat_cr_accept(cr, bad[i], 0, NULL);
            if (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE || !(r & DAT_CLASS_ERROR))
                FAILF("dat_cr_accept(cr, bad EP #%zu): 0x%08x", i, (unsigned)r);
            CHECK_CR_ALIVE(cr);
        }
        CHECK_OK(dat_cr_accept(cr, l.ep, 0, NULL));
        EXPECT_CONN(l.p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, l.ep);
        kid_expect(&k, DAT_CONNECTION_EVENT_ESTABLISHED);
    }
    kid_end(&k);
    local_close(&l.p);
}

CONN_MAIN
