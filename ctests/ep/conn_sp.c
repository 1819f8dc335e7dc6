/*
 * Service points: semantics-ep.md §2.2-§2.4, §4.17 dat_psp_create (PSC),
 * §4.18 dat_psp_create_any (PSA), §4.19 dat_psp_free (PSF), §4.20
 * dat_psp_query (PSQ), §4.21 dat_rsp_create (RSC), §4.22 dat_rsp_free
 * (RSF), §4.23 dat_rsp_query (RSQ), with rulings.md (E14, E24); and the
 * bad-handle sweep of every PSP and RSP handle-taking call (BADH_PSP_*,
 * BADH_RSP_*): NULL, misaligned, garbage, freed and wrong-type handles
 * return DAT_INVALID_HANDLE and never crash (rulings.md rule 1,
 * abi-errors.md §5).
 *
 * Single-process cases that need a remote side use "kids" (conn_util.h):
 * client processes started with fork + exec that connect once.
 */
#include "conn_util.h"

/* ======================= §4.17 dat_psp_create ============================== */

TEST(PSC_01_create_and_query)
{
    struct pair p;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_PSP_PARAM pp;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0);
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    REQUIRE(psp != DAT_HANDLE_NULL);
    memset(&pp, 0xA5, sizeof(pp));
    CHECK_OK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
    CHECK(pp.ia_handle == p.ia);
    CHECK(pp.conn_qual == q);
    CHECK(pp.evd_handle == p.cr_evd);
    CHECK(pp.psp_flags == DAT_PSP_CONSUMER_FLAG);
    CHECK_OK(dat_psp_free(psp));
    local_close(&p);
}

TEST(PSC_02_same_qualifier_twice)
{
    struct pair p;
    DAT_PSP_HANDLE a, b;
    DAT_EVD_HANDLE e2;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    e2 = mk_cr_evd(p.ia, 8);
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0 && e2 != DAT_HANDLE_NULL);
    REQUIRE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &a) == DAT_SUCCESS);
    CHECK_TYPE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &b),
               DAT_CONN_QUAL_IN_USE);
    CHECK_TYPE(dat_psp_create(p.ia, q, e2, DAT_PSP_CONSUMER_FLAG, &b), DAT_CONN_QUAL_IN_USE);
    CHECK_OK(dat_psp_free(a));
    local_close(&p);
}

TEST(PSC_03_same_qualifier_other_process)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        HEAR(&p, 'z');
        /* ours still works: it still answers a query */
        DAT_PSP_PARAM pp;
        CHECK_OK(dat_psp_query(p.psp, DAT_PSP_FIELD_ALL, &pp));
    } else {
        DAT_PSP_HANDLE psp;
        CHECK_TYPE(dat_psp_create(p.ia, p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
                   DAT_CONN_QUAL_IN_USE);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(PSC_04_bad_flags)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0);
    CHECK_TYPE(dat_psp_create(p.ia, q, p.cr_evd, 2, &psp), DAT_INVALID_PARAMETER);
    /* nothing was left listening */
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    local_close(&p);
}

TEST(PSC_05_qualifier_zero)
{
    struct pair p;
    DAT_PSP_HANDLE psp;

    REQUIRE(local_open(&p));
    CHECK_TYPE(dat_psp_create(p.ia, 0, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_PARAMETER);
    local_close(&p);
}

TEST(PSC_06_bad_evd_or_ia)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_EVD_HANDLE dead;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    dead = mk_cr_evd(p.ia, 8);
    REQUIRE(q != 0 && dead != DAT_HANDLE_NULL);
    REQUIRE(dat_evd_free(dead) == DAT_SUCCESS);
    CHECK_TYPE(dat_psp_create(p.ia, q, dead, DAT_PSP_CONSUMER_FLAG, &psp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_psp_create(p.ia, q, p.recv_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_psp_create(p.ia, q, p.conn_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_HANDLE);
    CHECK_RET(dat_psp_create(DAT_HANDLE_NULL, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
              DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_IA);
    /* the qualifier is still free */
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    local_close(&p);
}

TEST(PSC_07_flags_the_provider_cannot_meet)
{
    struct pair p;
    struct attrs a;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    REQUIRE(get_attrs(p.ia, &a));
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0);
    if (a.pr.ep_creator == DAT_PSP_CREATES_EP_NEVER) {
        CHECK_TYPE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp),
                   DAT_MODEL_NOT_SUPPORTED);
        CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    } else if (a.pr.ep_creator == DAT_PSP_CREATES_EP_ALWAYS) {
        CHECK_TYPE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
                   DAT_MODEL_NOT_SUPPORTED);
        CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp));
    } else {
        CHECK(a.pr.ep_creator == DAT_PSP_CREATES_EP_IFASKED);
        local_close(&p);
        SKIP("ep_creator IFASKED: both flags are satisfiable");
    }
    local_close(&p);
}

TEST(PSC_08_persistent_across_requests)
{
    struct pair p;
    struct kid k[3];
    DAT_CR_HANDLE cr[3];
    DAT_EP_HANDLE ep[3];
    int i, j;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp) ==
            DAT_SUCCESS);
    /* three client processes, one after another */
    for (i = 0; i < 3; i++) {
        REQUIRE(kid_go(&p, &k[i], p.qual, WAIT_US));
        cr[i] = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr[i] != DAT_HANDLE_NULL);
        for (j = 0; j < i; j++)
            CHECK(cr[j] != cr[i]);
    }
    for (i = 0; i < 3; i++) {
        ep[i] = mk_ep(&p);
        REQUIRE(ep[i] != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr[i], ep[i], 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep[i]);
        kid_expect(&k[i], DAT_CONNECTION_EVENT_ESTABLISHED);
    }
    for (i = 0; i < 3; i++)
        kid_end(&k[i]);
    local_close(&p);
}

TEST(PSC_09_cr_event_fields)
{
    struct pair p;
    struct kid k;
    struct attrs a;
    DAT_EVENT ev;
    DAT_CR_HANDLE cr;
    DAT_HANDLE_TYPE t = (DAT_HANDLE_TYPE)0x77;

    REQUIRE(local_open(&p));
    REQUIRE(get_attrs(p.ia, &a));
    p.qual = free_qual(p.ia, p.cr_evd);
    REQUIRE(p.qual != 0);
    REQUIRE(dat_psp_create(p.ia, p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp) ==
            DAT_SUCCESS);
    REQUIRE(kid_go(&p, &k, p.qual, WAIT_US));
    cr = WAIT_CR(p.cr_evd, &ev);
    if (cr != DAT_HANDLE_NULL) {
        const DAT_CR_ARRIVAL_EVENT_DATA *d = &ev.event_data.cr_arrival_event_data;
        CHECK(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        CHECK(ev.evd_handle == p.cr_evd);
        CHECK(d->sp_handle.psp_handle == p.psp);
        CHECK(d->conn_qual == p.qual);
        CHECK(d->local_ia_address_ptr != NULL);
        CHECK_ADDR(d->local_ia_address_ptr, a.ia.ia_address_ptr);
        CHECK_OK(dat_get_handle_type(d->cr_handle, &t));
        CHECK(t == DAT_HANDLE_TYPE_CR);
        CHECK_OK(dat_cr_reject(cr));
        kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
    }
    kid_end(&k);
    local_close(&p);
}

TEST(PSC_10_provider_flag_creates_tentative_ep)
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
        DAT_EP_PARAM epp;
        DAT_CR_HANDLE cr;
        REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp) ==
                DAT_SUCCESS);
        REQUIRE(kid_go(&p, &k, q, WAIT_US));
        cr = WAIT_CR(p.cr_evd, NULL);
        if (cr != DAT_HANDLE_NULL) {
            memset(&cp, 0, sizeof(cp));
            CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
            CHECK(cp.local_ep_handle != DAT_HANDLE_NULL);
            memset(&epp, 0xA5, sizeof(epp));
            CHECK_OK(dat_ep_query(cp.local_ep_handle, DAT_EP_FIELD_ALL, &epp));
            CHECK(epp.ep_state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
            CHECK(epp.pz_handle == DAT_HANDLE_NULL);
            CHECK(epp.recv_evd_handle == DAT_HANDLE_NULL);
            CHECK(epp.request_evd_handle == DAT_HANDLE_NULL);
            CHECK(epp.connect_evd_handle == DAT_HANDLE_NULL);
            CHECK_OK(dat_cr_reject(cr));
            kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
        }
        kid_end(&k);
    }
    local_close(&p);
}

TEST(PSC_11_consumer_flag_no_local_ep)
{
    struct pair p;
    struct kid k;
    DAT_CR_PARAM cp;
    DAT_CR_HANDLE cr;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp) ==
            DAT_SUCCESS);
    REQUIRE(kid_go(&p, &k, p.qual, WAIT_US));
    cr = WAIT_CR(p.cr_evd, NULL);
    if (cr != DAT_HANDLE_NULL) {
        memset(&cp, 0xA5, sizeof(cp));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_LOCAL_EP_HANDLE, &cp));
        CHECK(cp.local_ep_handle == DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
    }
    kid_end(&k);
    local_close(&p);
}

TEST(PSC_12_backlog_full_non_peer_rejected)
{
    backlog_case();
}

TEST(PSC_13_null_psp_out_pointer)
{
    struct pair p;
    DAT_CONN_QUAL q;
    DAT_PSP_HANDLE psp;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0);
    CHECK_TYPE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, NULL),
               DAT_INVALID_PARAMETER);
    /* no PSP was left behind on q */
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    local_close(&p);
}

TEST(PSC_14_recreate_after_free)
{
    struct pair p;
    DAT_PSP_HANDLE a, b;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0);
    REQUIRE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &a) == DAT_SUCCESS);
    CHECK_OK(dat_psp_free(a));
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &b));
    local_close(&p);
}

/* ======================= §4.18 dat_psp_create_any ========================== */

TEST(PSA_01_returns_qualifier)
{
    struct pair p;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_CONN_QUAL q = 0;
    DAT_PSP_PARAM pp;

    REQUIRE(local_open(&p));
    CHECK_OK(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    CHECK(q != 0);
    REQUIRE(psp != DAT_HANDLE_NULL);
    memset(&pp, 0, sizeof(pp));
    CHECK_OK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
    CHECK(pp.conn_qual == q);
    CHECK(pp.ia_handle == p.ia);
    CHECK(pp.evd_handle == p.cr_evd);
    CHECK(pp.psp_flags == DAT_PSP_CONSUMER_FLAG);
    local_close(&p);
}

TEST(PSA_02_two_calls_two_qualifiers)
{
    struct pair p;
    DAT_PSP_HANDLE a, b;
    DAT_CONN_QUAL qa = 0, qb = 0;

    REQUIRE(local_open(&p));
    CHECK_OK(dat_psp_create_any(p.ia, &qa, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &a));
    CHECK_OK(dat_psp_create_any(p.ia, &qb, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &b));
    CHECK(qa != qb);
    CHECK(a != b);
    local_close(&p);
}

TEST(PSA_03_returned_qualifier_is_taken)
{
    struct pair p;
    DAT_PSP_HANDLE a, b;
    DAT_RSP_HANDLE r;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &a) == DAT_SUCCESS);
    CHECK_TYPE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &b),
               DAT_CONN_QUAL_IN_USE);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    CHECK_TYPE(dat_rsp_create(p.ia, q, ep, p.cr_evd, &r), DAT_CONN_QUAL_IN_USE);
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    local_close(&p);
}

TEST(PSA_04_connect_to_returned_qualifier)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    /* pair_start's server makes its PSP with dat_psp_create_any */
    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_EVENT ev;
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, &ev);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK(ev.event_data.cr_arrival_event_data.conn_qual == p.qual);
        CHECK(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle == p.psp);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_connect_ep(&p, ep, NULL, 0);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(PSA_05_null_qualifier_pointer)
{
    struct pair p;
    DAT_PSP_HANDLE psp;

    REQUIRE(local_open(&p));
    CHECK_TYPE(dat_psp_create_any(p.ia, NULL, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_PARAMETER);
    local_close(&p);
}

TEST(PSA_06_bad_flags_and_stale_evd)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_EVD_HANDLE dead;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    CHECK_TYPE(dat_psp_create_any(p.ia, &q, p.cr_evd, 7, &psp), DAT_INVALID_PARAMETER);
    dead = mk_cr_evd(p.ia, 8);
    REQUIRE(dead != DAT_HANDLE_NULL);
    REQUIRE(dat_evd_free(dead) == DAT_SUCCESS);
    CHECK_TYPE(dat_psp_create_any(p.ia, &q, dead, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_psp_create_any(p.ia, &q, p.req_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_HANDLE);
    local_close(&p);
}

TEST(PSA_07_qualifier_in_unprivileged_port_range)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q = 0;
    int i;

    REQUIRE(local_open(&p));
    if (p.server_addr.ss_family != AF_INET && p.server_addr.ss_family != AF_INET6) {
        local_close(&p);
        SKIP("not an IP-based IA");
    }
    for (i = 0; i < 8; i++) {
        REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) ==
                DAT_SUCCESS);
        if (q < 1024 || q >= 65536)
            FAILF("dat_psp_create_any chose qualifier %llu", (unsigned long long)q);
    }
    local_close(&p);
}

TEST(PSA_08_until_exhausted_never_duplicate)
{
    struct pair p;
    struct rlimit rl;
    static DAT_CONN_QUAL seen[4096];
    int n = 0, i, dup = 0;
    DAT_RETURN r = DAT_SUCCESS;

    REQUIRE(local_open(&p));
    /* a low descriptor limit makes exhaustion quick on a socket transport */
    REQUIRE(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_cur > 256) {
        rl.rlim_cur = 256;
        REQUIRE(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    }
    while (n < (int)(sizeof(seen) / sizeof(seen[0]))) {
        DAT_PSP_HANDLE psp;
        DAT_CONN_QUAL q = 0;
        r = dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp);
        if (r != DAT_SUCCESS)
            break;
        for (i = 0; i < n; i++)
            if (seen[i] == q)
                dup++;
        seen[n++] = q;
    }
    if (dup)
        FAILF("%d duplicate qualifiers among %d PSPs", dup, n);
    if (r == DAT_SUCCESS) {
        local_close(&p);
        SKIP("4096 PSPs created without exhaustion");
    }
    CHECK_TYPE2(r, DAT_CONN_QUAL_UNAVAILABLE, DAT_INSUFFICIENT_RESOURCES);
    fprintf(stderr, "    (%d PSPs before 0x%08x)\n", n, (unsigned)r);
    local_close(&p);
}

/* ======================= §4.19 dat_psp_free ================================ */

TEST(PSF_01_free_then_query_fails)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_PSP_PARAM pp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    CHECK_OK(dat_psp_free(psp));
    CHECK_TYPE(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp), DAT_INVALID_HANDLE);
    local_close(&p);
}

TEST(PSF_02_connect_after_free_non_peer_rejected)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        CHECK_OK(dat_psp_free(p.psp));
        say(&p, 'f');
        HEAR(&p, 'z');
        EXPECT_QUIET(p.cr_evd);
    } else {
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        HEAR(&p, 'f');
        CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, ep);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(PSF_03_pending_cr_survives_free)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    if (p.server) {
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_psp_free(p.psp));
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        cli_connect_ep(&p, ep, NULL, 0);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(PSF_04_provider_ep_survives_free)
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
            memset(&cp, 0, sizeof(cp));
            CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
            CHECK_OK(dat_psp_free(psp));
            {
                DAT_EP_PARAM epp;
                memset(&epp, 0, sizeof(epp));
                CHECK_OK(dat_ep_query(cp.local_ep_handle, DAT_EP_FIELD_ALL, &epp));
                CHECK(epp.ep_state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
            }
            CHECK_OK(dat_cr_reject(cr));
            kid_expect(&k, DAT_CONNECTION_EVENT_PEER_REJECTED);
        }
        kid_end(&k);
    }
    local_close(&p);
}

TEST(PSF_05_double_free)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    CHECK_OK(dat_psp_free(psp));
    CHECK_TYPE(dat_psp_free(psp), DAT_INVALID_HANDLE);
    local_close(&p);
}

TEST(PSF_06_free_then_create_same_qualifier)
{
    struct pair p;
    DAT_PSP_HANDLE psp, psp2;
    DAT_PSP_PARAM pp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    CHECK_OK(dat_psp_free(psp));
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp2));
    memset(&pp, 0, sizeof(pp));
    CHECK_OK(dat_psp_query(psp2, DAT_PSP_FIELD_CONN_QUAL, &pp));
    CHECK(pp.conn_qual == q);
    local_close(&p);
}

TEST(PSF_07_evd_free_after_psp_free)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_EVD_HANDLE e;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    e = mk_cr_evd(p.ia, 8);
    REQUIRE(e != DAT_HANDLE_NULL);
    REQUIRE(dat_psp_create_any(p.ia, &q, e, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    CHECK_OK(dat_psp_free(psp));
    CHECK_OK(dat_evd_free(e));
    local_close(&p);
}

/* ======================= §4.20 dat_psp_query =============================== */

TEST(PSQ_01_all_fields)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_PSP_PARAM pp;
    DAT_EVD_HANDLE e2;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    e2 = mk_cr_evd(p.ia, 4);
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0 && e2 != DAT_HANDLE_NULL);
    REQUIRE(dat_psp_create(p.ia, q, e2, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    memset(&pp, 0xA5, sizeof(pp));
    CHECK_OK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
    CHECK(pp.ia_handle == p.ia);
    CHECK(pp.conn_qual == q);
    CHECK(pp.evd_handle == e2);
    CHECK(pp.psp_flags == DAT_PSP_CONSUMER_FLAG);
    local_close(&p);
}

TEST(PSQ_02_unknown_mask_bit)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_PSP_PARAM pp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    CHECK_TYPE(dat_psp_query(psp, 0x10, &pp), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_psp_query(psp, DAT_PSP_FIELD_ALL | 0x10, &pp), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_psp_query(psp, DAT_PSP_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
    local_close(&p);
}

TEST(PSQ_03_stale_handle)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_PSP_PARAM pp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    REQUIRE(dat_psp_free(psp) == DAT_SUCCESS);
    CHECK_TYPE(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp), DAT_INVALID_HANDLE);
    local_close(&p);
}

TEST(PSQ_04_create_any_qualifier)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_PSP_PARAM pp;
    DAT_CONN_QUAL q = 0;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    memset(&pp, 0, sizeof(pp));
    CHECK_OK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
    CHECK(pp.conn_qual == q);
    local_close(&p);
}

TEST(PSQ_05_conn_qual_only)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_PSP_PARAM pp;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0);
    REQUIRE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    memset(&pp, 0, sizeof(pp));
    CHECK_OK(dat_psp_query(psp, DAT_PSP_FIELD_CONN_QUAL, &pp));
    CHECK(pp.conn_qual == q);
    local_close(&p);
}

/* ======================= §4.21 dat_rsp_create ============================== */

TEST(RSC_01_reserves_ep)
{
    struct pair p;
    DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    CHECK_OK(dat_rsp_create(p.ia, q, ep, p.cr_evd, &rsp));
    CHECK(rsp != DAT_HANDLE_NULL);
    CHECK_STATE(ep, DAT_EP_STATE_RESERVED);
    local_close(&p);
}

TEST(RSC_02_ep_not_unconnected)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(link_ep(&p, &ep));
    if (p.server) {
        HEAR(&p, 'z');
    } else {
        DAT_RSP_HANDLE rsp, rsp2;
        DAT_EP_HANDLE ep2 = mk_ep(&p);
        DAT_CONN_QUAL q1 = free_qual(p.ia, p.cr_evd), q2;
        REQUIRE(ep2 != DAT_HANDLE_NULL && q1 != 0);
        /* CONNECTED */
        CHECK_TYPE(dat_rsp_create(p.ia, q1, ep, p.cr_evd, &rsp), DAT_INVALID_STATE);
        CHECK_STATE(ep, DAT_EP_STATE_CONNECTED);
        /* RESERVED */
        REQUIRE(dat_rsp_create(p.ia, q1, ep2, p.cr_evd, &rsp) == DAT_SUCCESS);
        q2 = free_qual(p.ia, p.cr_evd);
        REQUIRE(q2 != 0);
        CHECK_TYPE(dat_rsp_create(p.ia, q2, ep2, p.cr_evd, &rsp2), DAT_INVALID_STATE);
        CHECK_STATE(ep2, DAT_EP_STATE_RESERVED);
        /* neither failure left a listener on q2 */
        {
            DAT_PSP_HANDLE t;
            CHECK_OK(dat_psp_create(p.ia, q2, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &t));
        }
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(RSC_03_qualifier_in_use)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_RSP_HANDLE r1, r2;
    DAT_EP_HANDLE ep1, ep2;
    DAT_CONN_QUAL qp = 0, qr;

    REQUIRE(local_open(&p));
    ep1 = mk_ep(&p);
    ep2 = mk_ep(&p);
    REQUIRE(ep1 != DAT_HANDLE_NULL && ep2 != DAT_HANDLE_NULL);
    REQUIRE(dat_psp_create_any(p.ia, &qp, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    CHECK_TYPE(dat_rsp_create(p.ia, qp, ep1, p.cr_evd, &r1), DAT_CONN_QUAL_IN_USE);
    CHECK_STATE(ep1, DAT_EP_STATE_UNCONNECTED);
    qr = free_qual(p.ia, p.cr_evd);
    REQUIRE(qr != 0);
    REQUIRE(dat_rsp_create(p.ia, qr, ep1, p.cr_evd, &r1) == DAT_SUCCESS);
    CHECK_TYPE(dat_rsp_create(p.ia, qr, ep2, p.cr_evd, &r2), DAT_CONN_QUAL_IN_USE);
    CHECK_STATE(ep2, DAT_EP_STATE_UNCONNECTED);
    /* and a PSP on an RSP's qualifier */
    CHECK_TYPE(dat_psp_create(p.ia, qr, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_CONN_QUAL_IN_USE);
    local_close(&p);
}

TEST(RSC_04_bad_evd_or_ep)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_EP_HANDLE ep, dead_ep;
    DAT_EVD_HANDLE dead_evd;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    dead_ep = mk_ep(&p);
    dead_evd = mk_cr_evd(p.ia, 4);
    REQUIRE(q != 0 && ep && dead_ep && dead_evd);
    REQUIRE(dat_ep_free(dead_ep) == DAT_SUCCESS);
    REQUIRE(dat_evd_free(dead_evd) == DAT_SUCCESS);
    CHECK_TYPE(dat_rsp_create(p.ia, q, ep, dead_evd, &rsp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_rsp_create(p.ia, q, ep, p.recv_evd, &rsp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_rsp_create(p.ia, q, dead_ep, p.cr_evd, &rsp), DAT_INVALID_HANDLE);
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    local_close(&p);
}

/* Server side of the RSP PAIR cases: an RSP for ep on a free qualifier on
 * its own CR EVD; the qualifier is told to the client. */
static DAT_RSP_HANDLE srv_rsp(struct pair *p, DAT_EP_HANDLE ep, DAT_EVD_HANDLE *evd,
                              DAT_CONN_QUAL *q)
{
    DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
    *evd = mk_cr_evd(p->ia, 8);
    *q = free_qual(p->ia, p->cr_evd);
    if (*evd == DAT_HANDLE_NULL || *q == 0 ||
        dat_rsp_create(p->ia, *q, ep, *evd, &rsp) != DAT_SUCCESS) {
        FAILF("RSP setup failed");
        tell_u64(p, 0);
        return DAT_HANDLE_NULL;
    }
    tell_u64(p, *q);
    return rsp;
}

TEST(RSC_05_cr_on_rsp)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_PARAM cp;
        DAT_CR_HANDLE cr;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        REQUIRE(srv_rsp(&p, ep, &evd, &q) != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        memset(&cp, 0, sizeof(cp));
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
        CHECK(cp.local_ep_handle == ep);
        CHECK_STATE(ep, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_OK(dat_cr_reject(cr));
        EXPECT_QUIET(p.cr_evd);
        HEAR(&p, 'z');
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_PEER_REJECTED, ep);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(RSC_06_accept_with_null_ep)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_HANDLE cr;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        REQUIRE(srv_rsp(&p, ep, &evd, &q) != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        CHECK_STATE(ep, DAT_EP_STATE_CONNECTED);
        HEAR(&p, 'z');
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        CHECK_STATE(ep, DAT_EP_STATE_CONNECTED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(RSC_07_accept_with_other_ep_refused)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_HANDLE cr;
        DAT_CR_PARAM cp;
        DAT_EP_HANDLE ep = mk_ep(&p), other = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL && other != DAT_HANDLE_NULL);
        REQUIRE(srv_rsp(&p, ep, &evd, &q) != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_TYPE(dat_cr_accept(cr, other, 0, NULL), DAT_INVALID_HANDLE);
        CHECK_STATE(other, DAT_EP_STATE_UNCONNECTED);
        CHECK_STATE(ep, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
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

TEST(RSC_08_second_request_refused)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_HANDLE cr;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        REQUIRE(srv_rsp(&p, ep, &evd, &q) != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        say(&p, 'c');
        HEAR(&p, 'd');
        EXPECT_QUIET(evd); /* no second CR */
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep1 = mk_ep(&p), ep2 = mk_ep(&p);
        REQUIRE(q != 0 && ep1 != DAT_HANDLE_NULL && ep2 != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep1, q, WAIT_US, NULL, 0));
        HEAR(&p, 'c');
        CHECK_OK(connect_to(&p, ep2, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, ep2);
        say(&p, 'd');
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep1);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(RSC_09_reject_returns_ep_and_recreate)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_HANDLE cr;
        DAT_RSP_HANDLE rsp, rsp2 = DAT_HANDLE_NULL;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        rsp = srv_rsp(&p, ep, &evd, &q);
        REQUIRE(rsp != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
        CHECK_OK(dat_rsp_free(rsp));
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
        CHECK_OK(dat_rsp_create(p.ia, q, ep, evd, &rsp2));
        CHECK_STATE(ep, DAT_EP_STATE_RESERVED);
        say(&p, 'r');
        /* the new RSP listens */
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        HEAR(&p, 'z');
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep = mk_ep(&p), ep2 = mk_ep(&p);
        REQUIRE(q != 0 && ep != DAT_HANDLE_NULL && ep2 != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_PEER_REJECTED, ep);
        HEAR(&p, 'r');
        CHECK_OK(connect_to(&p, ep2, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep2);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(RSC_10_null_ep_refused)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    REQUIRE(q != 0);
    CHECK_TYPE(dat_rsp_create(p.ia, q, DAT_HANDLE_NULL, p.cr_evd, &rsp), DAT_INVALID_HANDLE);
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    local_close(&p);
}

TEST(RSC_11_null_rsp_out_pointer)
{
    struct pair p;
    DAT_EP_HANDLE ep;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    CHECK_TYPE(dat_rsp_create(p.ia, q, ep, p.cr_evd, NULL), DAT_INVALID_PARAMETER);
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    local_close(&p);
}

TEST(RSC_12_cr_event_sp_handle_null)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_HANDLE cr;
        DAT_EVENT ev;
        struct attrs a;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        REQUIRE(get_attrs(p.ia, &a));
        REQUIRE(srv_rsp(&p, ep, &evd, &q) != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, &ev);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK(ev.event_data.cr_arrival_event_data.sp_handle.rsp_handle == DAT_HANDLE_NULL);
        CHECK(ev.event_data.cr_arrival_event_data.conn_qual == q);
        CHECK(ev.evd_handle == evd);
        CHECK_ADDR(ev.event_data.cr_arrival_event_data.local_ia_address_ptr, a.ia.ia_address_ptr);
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
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

/* ======================= §4.22 dat_rsp_free ================================ */

TEST(RSF_01_free_before_request)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    REQUIRE(dat_rsp_create(p.ia, q, ep, p.cr_evd, &rsp) == DAT_SUCCESS);
    CHECK_OK(dat_rsp_free(rsp));
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    local_close(&p);
}

TEST(RSF_02_connect_after_free_non_peer_rejected)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_RSP_HANDLE rsp;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        evd = mk_cr_evd(p.ia, 8);
        q = free_qual(p.ia, p.cr_evd);
        REQUIRE(evd != DAT_HANDLE_NULL && q != 0);
        REQUIRE(dat_rsp_create(p.ia, q, ep, evd, &rsp) == DAT_SUCCESS);
        CHECK_OK(dat_rsp_free(rsp));
        tell_u64(&p, q);
        HEAR(&p, 'z');
        EXPECT_QUIET(evd);
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, ep);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(RSF_03_free_after_request)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_HANDLE cr;
        DAT_RSP_HANDLE rsp;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        rsp = srv_rsp(&p, ep, &evd, &q);
        REQUIRE(rsp != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_rsp_free(rsp));
        CHECK_STATE(ep, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
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

TEST(RSF_04_double_free)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    REQUIRE(dat_rsp_create(p.ia, q, ep, p.cr_evd, &rsp) == DAT_SUCCESS);
    CHECK_OK(dat_rsp_free(rsp));
    CHECK_TYPE(dat_rsp_free(rsp), DAT_INVALID_HANDLE);
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    local_close(&p);
}

TEST(RSF_05_query_after_free)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_RSP_PARAM rp;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    REQUIRE(dat_rsp_create(p.ia, q, ep, p.cr_evd, &rsp) == DAT_SUCCESS);
    CHECK_OK(dat_rsp_free(rsp));
    CHECK_TYPE(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp), DAT_INVALID_HANDLE);
    local_close(&p);
}

/* ======================= §4.23 dat_rsp_query =============================== */

TEST(RSQ_01_all_fields)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_RSP_PARAM rp;
    DAT_EP_HANDLE ep;
    DAT_EVD_HANDLE e2;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    e2 = mk_cr_evd(p.ia, 4);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL && e2 != DAT_HANDLE_NULL);
    REQUIRE(dat_rsp_create(p.ia, q, ep, e2, &rsp) == DAT_SUCCESS);
    memset(&rp, 0xA5, sizeof(rp));
    CHECK_OK(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp));
    CHECK(rp.ia_handle == p.ia);
    CHECK(rp.conn_qual == q);
    CHECK(rp.evd_handle == e2);
    CHECK(rp.ep_handle == ep);
    local_close(&p);
}

TEST(RSQ_02_unknown_mask_bit)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_RSP_PARAM rp;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    REQUIRE(dat_rsp_create(p.ia, q, ep, p.cr_evd, &rsp) == DAT_SUCCESS);
    CHECK_TYPE(dat_rsp_query(rsp, 0x20, &rp), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL | 0x20, &rp), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
    local_close(&p);
}

TEST(RSQ_03_stale_handle)
{
    struct pair p;
    DAT_RSP_HANDLE rsp;
    DAT_RSP_PARAM rp;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    REQUIRE(dat_rsp_create(p.ia, q, ep, p.cr_evd, &rsp) == DAT_SUCCESS);
    REQUIRE(dat_rsp_free(rsp) == DAT_SUCCESS);
    CHECK_TYPE(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp), DAT_INVALID_HANDLE);
    local_close(&p);
}

TEST(RSQ_04_query_after_cr)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd;
        DAT_CONN_QUAL q;
        DAT_CR_HANDLE cr;
        DAT_RSP_HANDLE rsp;
        DAT_RSP_PARAM rp;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        rsp = srv_rsp(&p, ep, &evd, &q);
        REQUIRE(rsp != DAT_HANDLE_NULL);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        memset(&rp, 0, sizeof(rp));
        CHECK_OK(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, &rp));
        CHECK(rp.ep_handle == ep);
        CHECK(rp.conn_qual == q);
        CHECK(rp.evd_handle == evd);
        CHECK(rp.ia_handle == p.ia);
        CHECK_OK(dat_cr_reject(cr));
        HEAR(&p, 'z');
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_PEER_REJECTED, ep);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* ======================= bad handles: PSP and RSP ========================== */

#define PRE_PSP (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_PSP)
#define PRE_RSP (DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_RSP)

/* Every PSP-handle call with h; exact: the libdat pre-check value. */
static void psp_calls(DAT_PSP_HANDLE h, int exact, const char *what)
{
    DAT_PSP_PARAM pp;
    DAT_RETURN r;
    memset(&pp, 0, sizeof(pp));
    r = dat_psp_query(h, DAT_PSP_FIELD_ALL, &pp);
    if (exact ? r != (DAT_RETURN)PRE_PSP
              : (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE || !(r & DAT_CLASS_ERROR)))
        FAILF("dat_psp_query(%s): 0x%08x", what, (unsigned)r);
    r = dat_psp_free(h);
    if (exact ? r != (DAT_RETURN)PRE_PSP
              : (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE || !(r & DAT_CLASS_ERROR)))
        FAILF("dat_psp_free(%s): 0x%08x", what, (unsigned)r);
}

static void rsp_calls(DAT_RSP_HANDLE h, int exact, const char *what)
{
    DAT_RSP_PARAM rp;
    DAT_RETURN r;
    memset(&rp, 0, sizeof(rp));
    r = dat_rsp_query(h, DAT_RSP_FIELD_ALL, &rp);
    if (exact ? r != (DAT_RETURN)PRE_RSP
              : (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE || !(r & DAT_CLASS_ERROR)))
        FAILF("dat_rsp_query(%s): 0x%08x", what, (unsigned)r);
    r = dat_rsp_free(h);
    if (exact ? r != (DAT_RETURN)PRE_RSP
              : (DAT_GET_TYPE(r) != DAT_INVALID_HANDLE || !(r & DAT_CLASS_ERROR)))
        FAILF("dat_rsp_free(%s): 0x%08x", what, (unsigned)r);
}

/* Live objects for the sweeps. */
struct live {
    struct pair p;
    DAT_EP_HANDLE ep, rep;
    DAT_PSP_HANDLE psp;
    DAT_RSP_HANDLE rsp;
    DAT_CONN_QUAL pq, rq;
};

static int live_open(struct live *l)
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
    l->rq = free_qual(l->p.ia, l->p.cr_evd);
    return l->rq != 0 &&
           dat_rsp_create(l->p.ia, l->rq, l->rep, l->p.cr_evd, &l->rsp) == DAT_SUCCESS;
}

/* The live PSP and RSP are intact after a sweep. */
static void live_intact(struct live *l)
{
    DAT_PSP_PARAM pp;
    DAT_RSP_PARAM rp;
    memset(&pp, 0, sizeof(pp));
    memset(&rp, 0, sizeof(rp));
    CHECK_OK(dat_psp_query(l->psp, DAT_PSP_FIELD_ALL, &pp));
    CHECK(pp.conn_qual == l->pq && pp.evd_handle == l->p.cr_evd);
    CHECK_OK(dat_rsp_query(l->rsp, DAT_RSP_FIELD_ALL, &rp));
    CHECK(rp.conn_qual == l->rq && rp.ep_handle == l->rep);
    CHECK_STATE(l->rep, DAT_EP_STATE_RESERVED);
    CHECK_STATE(l->ep, DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_evd_query(l->p.cr_evd, DAT_EVD_FIELD_ALL, &(DAT_EVD_PARAM){0}));
    CHECK_OK(dat_evd_query(l->p.conn_evd, DAT_EVD_FIELD_ALL, &(DAT_EVD_PARAM){0}));
    CHECK_OK(dat_pz_query(l->p.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
}

static const uintptr_t misaligned[] = {0x1001, 0x1002, 0x1003, 0x7fff0001, (uintptr_t)-1};

TEST(BADH_PSP_01_null_and_misaligned)
{
    struct live l;
    size_t i;

    psp_calls(DAT_HANDLE_NULL, 1, "NULL");
    for (i = 0; i < sizeof(misaligned) / sizeof(misaligned[0]); i++)
        psp_calls((DAT_PSP_HANDLE)misaligned[i], 1, "misaligned");
    REQUIRE(live_open(&l));
    psp_calls((DAT_PSP_HANDLE)((uintptr_t)l.psp + 1), 1, "live PSP + 1");
    psp_calls((DAT_PSP_HANDLE)((uintptr_t)l.psp + 2), 1, "live PSP + 2");
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_PSP_02_garbage)
{
    struct live l;
    struct {
        void *word0;
        DAT_UINT64 rest[31];
    } junk;
    unsigned seed = 0x1234;
    size_t i;

    REQUIRE(live_open(&l));
    memset(&junk, 0, sizeof(junk));
    psp_calls((DAT_PSP_HANDLE)&junk, 0, "zeroed local struct");
    memset(&junk, 0xFF, sizeof(junk));
    junk.word0 = NULL;
    psp_calls((DAT_PSP_HANDLE)&junk, 0, "0xFF local struct");
    for (i = 0; i < sizeof(junk.rest) / sizeof(junk.rest[0]); i++)
        junk.rest[i] = ((DAT_UINT64)rand_r(&seed) << 32) | (DAT_UINT64)rand_r(&seed);
    /* forged: the first word copied from the live PSP (its DAT_PROVIDER *) */
    memcpy(&junk.word0, l.psp, sizeof(void *));
    psp_calls((DAT_PSP_HANDLE)&junk, 0, "forged PSP (provider word copied)");
    memcpy(&junk.word0, l.p.cr_evd, sizeof(void *));
    psp_calls((DAT_PSP_HANDLE)&junk, 0, "forged (EVD provider word)");
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_PSP_03_freed)
{
    struct live l;
    DAT_PSP_HANDLE dead;
    DAT_CONN_QUAL q = 0;

    REQUIRE(live_open(&l));
    REQUIRE(dat_psp_create_any(l.p.ia, &q, l.p.cr_evd, DAT_PSP_CONSUMER_FLAG, &dead) ==
            DAT_SUCCESS);
    REQUIRE(dat_psp_free(dead) == DAT_SUCCESS);
    psp_calls(dead, 0, "freed PSP");
    psp_calls(dead, 0, "freed PSP, again");
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_PSP_04_wrong_type)
{
    struct live l;

    REQUIRE(live_open(&l));
    psp_calls((DAT_PSP_HANDLE)l.p.cr_evd, 0, "CR EVD as PSP");
    psp_calls((DAT_PSP_HANDLE)l.p.conn_evd, 0, "connection EVD as PSP");
    psp_calls((DAT_PSP_HANDLE)l.ep, 0, "EP as PSP");
    psp_calls((DAT_PSP_HANDLE)l.rsp, 0, "RSP as PSP");
    psp_calls((DAT_PSP_HANDLE)l.p.ia, 0, "IA as PSP");
    psp_calls((DAT_PSP_HANDLE)l.p.pz, 0, "PZ as PSP");
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_PSP_05_bad_handles_to_create)
{
    struct live l;
    struct {
        void *word0;
        DAT_UINT64 rest[15];
    } junk;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q, qa;
    DAT_EVD_HANDLE bad[6];
    size_t i;

    REQUIRE(live_open(&l));
    q = free_qual(l.p.ia, l.p.cr_evd);
    REQUIRE(q != 0);
    memset(&junk, 0, sizeof(junk));
    memcpy(&junk.word0, l.p.cr_evd, sizeof(void *));
    bad[0] = DAT_HANDLE_NULL;
    bad[1] = (DAT_EVD_HANDLE)(uintptr_t)0x1003;
    bad[2] = (DAT_EVD_HANDLE)&junk;
    bad[3] = (DAT_EVD_HANDLE)l.ep;
    bad[4] = (DAT_EVD_HANDLE)l.psp;
    bad[5] = (DAT_EVD_HANDLE)l.p.pz;
    for (i = 0; i < 6; i++) {
        CHECK_TYPE(dat_psp_create(l.p.ia, q, bad[i], DAT_PSP_CONSUMER_FLAG, &psp),
                   DAT_INVALID_HANDLE);
        CHECK_TYPE(dat_psp_create_any(l.p.ia, &qa, bad[i], DAT_PSP_CONSUMER_FLAG, &psp),
                   DAT_INVALID_HANDLE);
    }
    /* a wrong-type primary handle (the IA argument) */
    CHECK_TYPE(dat_psp_create((DAT_IA_HANDLE)l.p.pz, q, l.p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_psp_create((DAT_IA_HANDLE)l.psp, q, l.p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
               DAT_INVALID_HANDLE);
    CHECK_RET(dat_psp_create_any((DAT_IA_HANDLE)(uintptr_t)0x1001, &qa, l.p.cr_evd,
                                 DAT_PSP_CONSUMER_FLAG, &psp),
              DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_IA);
    /* nothing listens on q */
    CHECK_OK(dat_psp_create(l.p.ia, q, l.p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_RSP_01_null_and_misaligned)
{
    struct live l;
    size_t i;

    rsp_calls(DAT_HANDLE_NULL, 1, "NULL");
    for (i = 0; i < sizeof(misaligned) / sizeof(misaligned[0]); i++)
        rsp_calls((DAT_RSP_HANDLE)misaligned[i], 1, "misaligned");
    REQUIRE(live_open(&l));
    rsp_calls((DAT_RSP_HANDLE)((uintptr_t)l.rsp + 1), 1, "live RSP + 1");
    rsp_calls((DAT_RSP_HANDLE)((uintptr_t)l.rsp + 3), 1, "live RSP + 3");
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_RSP_02_garbage)
{
    struct live l;
    struct {
        void *word0;
        DAT_UINT64 rest[31];
    } junk;
    unsigned seed = 0x4321;
    size_t i;

    REQUIRE(live_open(&l));
    memset(&junk, 0, sizeof(junk));
    rsp_calls((DAT_RSP_HANDLE)&junk, 0, "zeroed local struct");
    for (i = 0; i < sizeof(junk.rest) / sizeof(junk.rest[0]); i++)
        junk.rest[i] = ((DAT_UINT64)rand_r(&seed) << 32) | (DAT_UINT64)rand_r(&seed);
    memcpy(&junk.word0, l.rsp, sizeof(void *));
    rsp_calls((DAT_RSP_HANDLE)&junk, 0, "forged RSP (provider word copied)");
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_RSP_03_freed)
{
    struct live l;
    DAT_RSP_HANDLE dead;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;

    REQUIRE(live_open(&l));
    ep = mk_ep(&l.p);
    q = free_qual(l.p.ia, l.p.cr_evd);
    REQUIRE(ep != DAT_HANDLE_NULL && q != 0);
    REQUIRE(dat_rsp_create(l.p.ia, q, ep, l.p.cr_evd, &dead) == DAT_SUCCESS);
    REQUIRE(dat_rsp_free(dead) == DAT_SUCCESS);
    rsp_calls(dead, 0, "freed RSP");
    rsp_calls(dead, 0, "freed RSP, again");
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_RSP_04_wrong_type)
{
    struct live l;

    REQUIRE(live_open(&l));
    rsp_calls((DAT_RSP_HANDLE)l.p.cr_evd, 0, "CR EVD as RSP");
    rsp_calls((DAT_RSP_HANDLE)l.rep, 0, "the reserved EP as RSP");
    rsp_calls((DAT_RSP_HANDLE)l.ep, 0, "EP as RSP");
    rsp_calls((DAT_RSP_HANDLE)l.psp, 0, "PSP as RSP");
    rsp_calls((DAT_RSP_HANDLE)l.p.ia, 0, "IA as RSP");
    rsp_calls((DAT_RSP_HANDLE)l.p.pz, 0, "PZ as RSP");
    live_intact(&l);
    local_close(&l.p);
}

TEST(BADH_RSP_05_bad_handles_to_create)
{
    struct live l;
    struct {
        void *word0;
        DAT_UINT64 rest[15];
    } junk;
    DAT_RSP_HANDLE rsp;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;
    DAT_HANDLE bad[6];
    size_t i;

    REQUIRE(live_open(&l));
    ep = mk_ep(&l.p);
    q = free_qual(l.p.ia, l.p.cr_evd);
    REQUIRE(ep != DAT_HANDLE_NULL && q != 0);
    memset(&junk, 0, sizeof(junk));
    memcpy(&junk.word0, l.ep, sizeof(void *));
    bad[0] = (DAT_HANDLE)(uintptr_t)0x1002;
    bad[1] = (DAT_HANDLE)&junk;
    bad[2] = (DAT_HANDLE)l.psp;
    bad[3] = (DAT_HANDLE)l.p.pz;
    bad[4] = (DAT_HANDLE)l.rsp;
    bad[5] = (DAT_HANDLE)l.p.ia;
    for (i = 0; i < 6; i++) {
        /* bad EP */
        CHECK_TYPE(dat_rsp_create(l.p.ia, q, (DAT_EP_HANDLE)bad[i], l.p.cr_evd, &rsp),
                   DAT_INVALID_HANDLE);
        /* bad EVD */
        CHECK_TYPE(dat_rsp_create(l.p.ia, q, ep, (DAT_EVD_HANDLE)bad[i], &rsp),
                   DAT_INVALID_HANDLE);
    }
    CHECK_TYPE(dat_rsp_create(l.p.ia, q, ep, DAT_HANDLE_NULL, &rsp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_rsp_create(l.p.ia, q, (DAT_EP_HANDLE)l.p.conn_evd, l.p.cr_evd, &rsp),
               DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_rsp_create((DAT_IA_HANDLE)l.ep, q, ep, l.p.cr_evd, &rsp), DAT_INVALID_HANDLE);
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    /* nothing listens on q */
    {
        DAT_PSP_HANDLE t;
        CHECK_OK(dat_psp_create(l.p.ia, q, l.p.cr_evd, DAT_PSP_CONSUMER_FLAG, &t));
    }
    live_intact(&l);
    local_close(&l.p);
}

CONN_MAIN
