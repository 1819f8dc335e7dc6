/*
 * EP status and reuse conformance tests:
 *
 *   semantics-ep.md §4.7  dat_ep_get_status     EGS-01…06
 *   semantics-ep.md §4.9  dat_ep_query          EPQ-01…08
 *   semantics-ep.md §4.10 dat_ep_recv_query     ERQ-01…06 (gated on ep_recv_info_supported)
 *   semantics-ep.md §4.11 dat_ep_reset          ERS-01…07
 *   semantics-ep.md §4.12 dat_ep_set_watermark  ESW-01, ESW-02 (ESW-03…07 are withdrawn)
 */
#include "ctest.h"
#include "pair.h"
#include "lifecycle.h"

#include <arpa/inet.h>

/* A struct lc view of one side of a pair (for the lc_* helpers). */
static void lc_from_pair(struct lc *f, const struct pair *p, const DAT_IA_ATTR *ia_attr,
                         const DAT_PROVIDER_ATTR *pr)
{
    memset(f, 0, sizeof(*f));
    f->ia = p->ia;
    f->async_evd = p->async_evd;
    f->recv_evd = p->recv_evd;
    f->req_evd = p->req_evd;
    f->conn_evd = p->conn_evd;
    f->cr_evd = p->cr_evd;
    f->pz = p->pz;
    f->ia_attr = *ia_attr;
    f->pr = *pr;
}

/* Server side of STALL: registers a region with remote read access and
 * exports (rmr_context, address, length) to the client. */
static int stall_export(struct pair *p, struct lc_mem *m)
{
    struct lc_remote r;
    if (lc_mem(p->ia, p->pz, 4096, LC_PRIV_ALL, m) != DAT_SUCCESS)
        return -1;
    memset(m->buf, 'r', 4096);
    memset(&r, 0, sizeof(r));
    r.rctx = m->rctx;
    r.addr = (DAT_VADDR)(uintptr_t)m->buf;
    r.len = 4096;
    return pair_tell(p, &r, sizeof(r));
}

/* =========================================================================
 * §4.7 dat_ep_get_status
 * ========================================================================= */

TEST(EGS_01_new_ep)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_STATE s = LC_BAD_STATE;
    DAT_BOOLEAN ri = 77, qi = 77;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_OK(dat_ep_get_status(ep, &s, &ri, &qi));
    CHECK(s == 0);
    CHECK(ri == DAT_TRUE);
    CHECK(qi == DAT_TRUE);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EGS_02_posted_recv_not_idle)
{
    struct lc f;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_EP_STATE s = LC_BAD_STATE;
    DAT_BOOLEAN ri = 77, qi = 77;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_mem(f.ia, f.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    REQUIRE(lc_post_recv(ep, &m, 0, 1024, 1) == DAT_SUCCESS);
    CHECK_OK(dat_ep_get_status(ep, &s, &ri, &qi));
    CHECK(s == DAT_EP_STATE_UNCONNECTED);
    CHECK(ri == DAT_FALSE);
    CHECK(qi == DAT_TRUE);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EGS_03_request_not_idle_during_stall)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EP_ATTR a;
    struct lc_mem m;
    struct lc_remote rem;
    DAT_EP_STATE s;
    DAT_BOOLEAN ri = 77, qi = 77;
    DAT_EVENT ev;
    int st;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    lc_attr(&a);
    if (p.server)
        a.max_rdma_read_in = 1;
    else
        a.max_rdma_read_out = 1;
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        PREQUIRE(&p, stall_export(&p, &m) == 0);
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, pair_hear(&p, &rem, sizeof(rem)) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    CHECK_OK(dat_ep_get_status(p.ep, &s, &ri, &qi));
    CHECK(qi == DAT_TRUE && ri == DAT_TRUE);
    st = lc_stall(&p, p.ep, p.req_evd, &m, &rem);
    PREQUIRE(&p, st >= 0);
    if (st == 0) {
        fprintf(stderr, "    skipped: the RDMA Read completed while the server was stopped\n");
        ctest_skipped = 1;
    } else {
        ri = qi = 77;
        CHECK_OK(dat_ep_get_status(p.ep, &s, &ri, &qi));
        CHECK(s == DAT_EP_STATE_CONNECTED);
        CHECK(qi == DAT_FALSE);
        CHECK(ri == DAT_TRUE);
        kill(p.server_pid, SIGCONT);
        CHECK_OK(lc_wait(p.req_evd, &ev));
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 0x5A11);
        CHECK(((char *)m.buf)[0] == 'r' && ((char *)m.buf)[4095] == 'r');
        ri = qi = 77;
        CHECK_OK(dat_ep_get_status(p.ep, &s, &ri, &qi));
        CHECK(qi == DAT_TRUE);
        CHECK(ri == DAT_TRUE);
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

/*
 * The lifecycle of EGS-04 (and EPQ-08, with_query): on the server,
 * UNCONNECTED → RESERVED → PASSIVE_CONNECTION_PENDING → CONNECTED →
 * DISCONNECTED → UNCONNECTED.
 */
static void lifecycle_states(int with_query)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EP_HANDLE ep;
    DAT_RSP_HANDLE rsp;
    DAT_EVENT ev;
    char c;

#define LC_STATE_IS(ep_, want_)                                                \
    do {                                                                       \
        DAT_EP_STATE s_ = lc_state(ep_);                                       \
        if (s_ != (want_)) {                                                   \
            fprintf(stderr, "    get_status state %u, want %u\n", (unsigned)s_, \
                    (unsigned)(want_));                                        \
            CHECK(0);                                                          \
        }                                                                      \
        if (with_query) {                                                      \
            DAT_EP_STATE q_ = lc_qstate(ep_);                                  \
            if (q_ != s_) {                                                    \
                fprintf(stderr, "    ep_query state %u, get_status %u\n",      \
                        (unsigned)q_, (unsigned)s_);                           \
                CHECK(0);                                                      \
            }                                                                  \
        }                                                                      \
    } while (0)

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                     DAT_SUCCESS);
    if (p.server) {
        LC_STATE_IS(ep, DAT_EP_STATE_UNCONNECTED);
        PREQUIRE(&p, lc_pair_rsp(&p, ep, &rsp) == 0);
        LC_STATE_IS(ep, DAT_EP_STATE_RESERVED);
        CHECK(lc_state(ep) == 2);
        PREQUIRE(&p, pair_tell(&p, "R", 1) == 0);
        PREQUIRE(&p, lc_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        LC_STATE_IS(ep, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK(lc_state(ep) == 4);
        PREQUIRE(&p, dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle,
                                   DAT_HANDLE_NULL, 0, NULL) == DAT_SUCCESS);
        {
            DAT_EP_STATE s = lc_state(ep);
            CHECK(s == DAT_EP_STATE_COMPLETION_PENDING || s == DAT_EP_STATE_CONNECTED);
            if (with_query)
                CHECK(lc_qstate(ep) == DAT_EP_STATE_COMPLETION_PENDING ||
                      lc_qstate(ep) == DAT_EP_STATE_CONNECTED);
        }
        PREQUIRE(&p, lc_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        LC_STATE_IS(ep, DAT_EP_STATE_CONNECTED);
        CHECK(lc_state(ep) == 9);
        PREQUIRE(&p, pair_sync(&p, 'e') == 0);
        /* the client disconnects: DISCONNECTED, or BROKEN (§2.12, T25) */
        PREQUIRE(&p, lc_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
              ev.event_number == DAT_CONNECTION_EVENT_BROKEN);
        LC_STATE_IS(ep, DAT_EP_STATE_DISCONNECTED);
        CHECK(lc_state(ep) == 11);
        CHECK_OK(dat_ep_reset(ep));
        LC_STATE_IS(ep, DAT_EP_STATE_UNCONNECTED);
        CHECK(lc_state(ep) == 0);
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'R');
    PREQUIRE(&p, lc_pair_connect_start(&p, ep) == DAT_SUCCESS);
    {
        DAT_EP_STATE s = lc_state(ep);
        CHECK(s == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING || s == DAT_EP_STATE_CONNECTED);
        if (with_query)
            CHECK(lc_qstate(ep) == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
                  lc_qstate(ep) == DAT_EP_STATE_CONNECTED);
    }
    PREQUIRE(&p, lc_wait(p.conn_evd, &ev) == DAT_SUCCESS);
    PREQUIRE(&p, ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
    LC_STATE_IS(ep, DAT_EP_STATE_CONNECTED);
    PREQUIRE(&p, pair_sync(&p, 'e') == 0);
    CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(lc_wait(p.conn_evd, &ev));
    CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
    LC_STATE_IS(ep, DAT_EP_STATE_DISCONNECTED);
    CHECK_OK(dat_ep_reset(ep));
    LC_STATE_IS(ep, DAT_EP_STATE_UNCONNECTED);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
#undef LC_STATE_IS
}

TEST(EGS_04_state_follows_lifecycle)
{
    lifecycle_states(0);
}

TEST(EGS_05_stale_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_STATE s;
    DAT_BOOLEAN ri, qi;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_get_status(ep, &s, &ri, &qi), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EGS_06_null_outputs)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_STATE s = LC_BAD_STATE;
    DAT_BOOLEAN qi = 77;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_OK(dat_ep_get_status(ep, NULL, NULL, NULL));
    /* a mix: the non-NULL outputs are still written */
    CHECK_OK(dat_ep_get_status(ep, &s, NULL, &qi));
    CHECK(s == DAT_EP_STATE_UNCONNECTED);
    CHECK(qi == DAT_TRUE);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

/* =========================================================================
 * §4.9 dat_ep_query
 * ========================================================================= */

TEST(EPQ_01_query_all_new_ep)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    a.max_recv_dtos = 6;
    a.max_request_dtos = 3;
    a.max_rdma_read_out = 1;
    a.recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    REQUIRE(lc_ep(&f, &a, &ep) == DAT_SUCCESS);
    memset(&p, 0xA5, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
    CHECK(p.ep_state == 0);
    CHECK(p.ia_handle == f.ia);
    CHECK(p.pz_handle == f.pz);
    CHECK(p.recv_evd_handle == f.recv_evd);
    CHECK(p.request_evd_handle == f.req_evd);
    CHECK(p.connect_evd_handle == f.conn_evd);
    CHECK(p.srq_handle == DAT_HANDLE_NULL);
    CHECK(p.ep_attr.service_type == a.service_type);
    CHECK(p.ep_attr.max_message_size == a.max_message_size);
    CHECK(p.ep_attr.max_rdma_size == a.max_rdma_size);
    CHECK(p.ep_attr.qos == a.qos);
    CHECK(p.ep_attr.recv_completion_flags == a.recv_completion_flags);
    CHECK(p.ep_attr.request_completion_flags == a.request_completion_flags);
    CHECK(p.ep_attr.max_recv_dtos >= a.max_recv_dtos);
    CHECK(p.ep_attr.max_request_dtos >= a.max_request_dtos);
    CHECK(p.ep_attr.max_recv_iov >= a.max_recv_iov);
    CHECK(p.ep_attr.max_request_iov >= a.max_request_iov);
    CHECK(p.ep_attr.max_rdma_read_in == a.max_rdma_read_in);
    CHECK(p.ep_attr.max_rdma_read_out == a.max_rdma_read_out);
    CHECK(p.ep_attr.max_rdma_read_iov == a.max_rdma_read_iov);
    CHECK(p.ep_attr.max_rdma_write_iov == a.max_rdma_write_iov);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPQ_02_undefined_mask_bit)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_query(ep, (DAT_EP_PARAM_MASK)1 << 40, &p), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_ep_query(ep, DAT_EP_FIELD_ALL | ((DAT_EP_PARAM_MASK)1 << 40), &p),
               DAT_INVALID_PARAMETER);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

/* Same family and address (and port when the expected address has one). */
static int same_addr(const struct sockaddr *got, const struct sockaddr *want)
{
    if (got == NULL || want == NULL || got->sa_family != want->sa_family)
        return 0;
    if (want->sa_family == AF_INET) {
        const struct sockaddr_in *g = (const struct sockaddr_in *)got;
        const struct sockaddr_in *w = (const struct sockaddr_in *)want;
        if (g->sin_addr.s_addr != w->sin_addr.s_addr)
            return 0;
        return w->sin_port == 0 || g->sin_port == w->sin_port;
    }
    if (want->sa_family == AF_INET6) {
        const struct sockaddr_in6 *g = (const struct sockaddr_in6 *)got;
        const struct sockaddr_in6 *w = (const struct sockaddr_in6 *)want;
        if (memcmp(&g->sin6_addr, &w->sin6_addr, sizeof(w->sin6_addr)) != 0)
            return 0;
        return w->sin6_port == 0 || g->sin6_port == w->sin6_port;
    }
    return 0;
}

TEST(EPQ_03_remote_address_client)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EP_PARAM q;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (!p.server) {
        memset(&q, 0, sizeof(q));
        CHECK_OK(dat_ep_query(p.ep, DAT_EP_FIELD_ALL, &q));
        CHECK(q.ep_state == DAT_EP_STATE_CONNECTED);
        CHECK(q.remote_ia_address_ptr != NULL);
        CHECK(same_addr((const struct sockaddr *)q.remote_ia_address_ptr,
                        (const struct sockaddr *)&p.server_addr));
        CHECK(q.remote_port_qual == p.qual);
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPQ_04_remote_port_server)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EP_PARAM q;
    DAT_PORT_QUAL client_port = 0;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(p.ep, DAT_EP_FIELD_ALL, &q));
    CHECK(q.ep_state == DAT_EP_STATE_CONNECTED);
    if (p.server) {
        PREQUIRE(&p, pair_hear(&p, &client_port, sizeof(client_port)) == 0);
        if (q.remote_port_qual != client_port)
            fprintf(stderr, "    server: remote_port_qual %llu, client's local_port_qual %llu\n",
                    (unsigned long long)q.remote_port_qual, (unsigned long long)client_port);
        CHECK(q.remote_port_qual == client_port);
        CHECK(q.remote_ia_address_ptr != NULL);
    } else {
        PREQUIRE(&p, pair_tell(&p, &q.local_port_qual, sizeof(q.local_port_qual)) == 0);
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPQ_05_state_mask_only)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_RSP_HANDLE rsp;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    memset(&p, 0xA5, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, &p));
    CHECK(p.ep_state == DAT_EP_STATE_UNCONNECTED);
    REQUIRE(lc_rsp(&f, ep, &rsp) == DAT_SUCCESS);
    memset(&p, 0xA5, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, &p));
    CHECK(p.ep_state == DAT_EP_STATE_RESERVED);
    CHECK_OK(dat_rsp_free(rsp));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPQ_06_stale_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, &p), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPQ_07_null_param)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_query(ep, DAT_EP_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, NULL), DAT_INVALID_PARAMETER);
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPQ_08_query_state_agrees_with_get_status)
{
    lifecycle_states(1);
}

/* =========================================================================
 * §4.10 dat_ep_recv_query
 * ========================================================================= */

static int erq_supported(const DAT_PROVIDER_ATTR *pr)
{
    return pr->ep_recv_info_supported != 0;
}

/*
 * Calls dat_ep_recv_query. Returns 1 when counts were obtained, 0 when the
 * provider legitimately reports the feature absent (MODEL_NOT_SUPPORTED
 * while ep_recv_info_supported says unsupported), -1 otherwise (recorded).
 */
static int erq_call(const DAT_PROVIDER_ATTR *pr, DAT_EP_HANDLE ep, DAT_COUNT *nb,
                    DAT_COUNT *span)
{
    DAT_RETURN r = dat_ep_recv_query(ep, nb, span);
    if (r == DAT_SUCCESS)
        return 1;
    if (!erq_supported(pr) && DAT_GET_TYPE(r) == DAT_MODEL_NOT_SUPPORTED &&
        (r & DAT_CLASS_ERROR) != 0)
        return 0;
    fprintf(stderr, "    dat_ep_recv_query: 0x%08x (ep_recv_info_supported %d)\n", (unsigned)r,
            (int)pr->ep_recv_info_supported);
    ctest_failures++;
    return -1;
}

TEST(ERQ_01_unsupported)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_COUNT nb = 1234, span = 1234;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    if (erq_supported(&f.pr)) {
        lc_close(&f);
        SKIP("ep_recv_info_supported says supported");
    }
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    r = dat_ep_recv_query(ep, &nb, &span);
    if (r == DAT_SUCCESS) {
        CHECK(nb == DAT_VALUE_UNKNOWN);
        CHECK(span == DAT_VALUE_UNKNOWN);
    } else {
        CHECK_TYPE(r, DAT_MODEL_NOT_SUPPORTED);
    }
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(ERQ_02_five_posted)
{
    struct lc f;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_COUNT nb = 1234, span = 1234;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_mem(f.ia, f.pz, 8192, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    for (int i = 0; i < 5; i++)
        REQUIRE(lc_post_recv(ep, &m, (size_t)i * 1024, 1024, (DAT_UINT64)i) == DAT_SUCCESS);
    if (erq_call(&f.pr, ep, &nb, &span) == 1) {
        CHECK(nb == 5 || nb == DAT_VALUE_UNKNOWN);
        if (nb != DAT_VALUE_UNKNOWN && span != DAT_VALUE_UNKNOWN)
            CHECK(span >= nb);
    }
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(ERQ_03_srq_ep_connected_no_messages)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc f;
    struct lc_mem m;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_COUNT nb = 1234, span = 1234;

    REQUIRE(lc_open(&f) == 0);
    if (!lc_srq_supported(&f)) {
        lc_close(&f);
        SKIP("srq_supported is FALSE");
    }
    lc_close(&f);
    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    if (p.server) {
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    lc_from_pair(&f, &p, &ia_attr, &pr);
    PREQUIRE(&p, lc_srq(&f, p.pz, 8, &srq) == DAT_SUCCESS);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    for (int i = 0; i < 4; i++) {
        DAT_LMR_TRIPLET t = lc_iov(&m, (size_t)i * 1024, 1024);
        PREQUIRE(&p, dat_srq_post_recv(srq, 1, &t, lc_cookie((DAT_UINT64)i)) == DAT_SUCCESS);
    }
    lc_attr(&a);
    a.max_rdma_read_out = 1;
    a.max_rdma_read_in = 1;
    PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, srq, &a,
                                        &ep) == DAT_SUCCESS);
    PREQUIRE(&p, lc_pair_connect_ep(&p, ep, p.conn_evd) == 0);
    if (erq_call(&pr, ep, &nb, &span) == 1)
        CHECK(nb == 0 || nb == DAT_VALUE_UNKNOWN);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(ERQ_04_null_outputs)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_COUNT span = 1234;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    if (erq_call(&f.pr, ep, NULL, &span) == 1)
        CHECK(span == 0 || span == DAT_VALUE_UNKNOWN); /* nothing posted */
    r = dat_ep_recv_query(ep, NULL, NULL);
    if (!(r == DAT_SUCCESS ||
          (!erq_supported(&f.pr) && DAT_GET_TYPE(r) == DAT_MODEL_NOT_SUPPORTED &&
           (r & DAT_CLASS_ERROR))))
        CHECK_OK(r);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(ERQ_05_stale_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_COUNT nb, span;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_recv_query(ep, &nb, &span), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(ERQ_06_all_completed)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc_mem m;
    DAT_EVENT ev;
    DAT_COUNT nb = 1234, span = 1234;
    int i;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        PREQUIRE(&p, pair_sync(&p, 'p') == 0); /* the client has posted */
        for (i = 0; i < 3; i++) {
            CHECK_OK(lc_post_send(p.ep, &m, (size_t)i * 64, 64, (DAT_UINT64)i));
            CHECK_OK(lc_wait(p.req_evd, &ev));
        }
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    for (i = 0; i < 3; i++)
        PREQUIRE(&p, lc_post_recv(p.ep, &m, (size_t)i * 1024, 1024, (DAT_UINT64)i) ==
                         DAT_SUCCESS);
    PREQUIRE(&p, pair_sync(&p, 'p') == 0);
    for (i = 0; i < 3; i++) {
        CHECK_OK(lc_wait(p.recv_evd, &ev));
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
    }
    if (erq_call(&pr, p.ep, &nb, &span) == 1) {
        CHECK(nb == 0 || nb == DAT_VALUE_UNKNOWN);
        if (nb != DAT_VALUE_UNKNOWN && span != DAT_VALUE_UNKNOWN)
            CHECK(span >= nb);
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

/* =========================================================================
 * §4.11 dat_ep_reset
 * ========================================================================= */

TEST(ERS_01_reset_disconnected)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_make_disconnected(&f, ep, f.conn_evd) == 0);
    CHECK(lc_state(ep) == DAT_EP_STATE_DISCONNECTED);
    CHECK_OK(dat_ep_reset(ep));
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK(lc_qstate(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(ERS_02_reset_unconnected_keeps_recvs)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    DAT_EP_STATE s;
    DAT_BOOLEAN ri = 77, qi = 77;
    int i;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        for (i = 0; i < 2; i++) {
            memset((char *)m.buf + i * 64, 'A' + i, 64);
            CHECK_OK(lc_post_send(p.ep, &m, (size_t)i * 64, 64, (DAT_UINT64)i));
            CHECK_OK(lc_wait(p.req_evd, &ev));
        }
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    lc_attr(&a);
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, lc_post_recv(ep, &m, 0, 1024, 1) == DAT_SUCCESS);
    PREQUIRE(&p, lc_post_recv(ep, &m, 1024, 1024, 2) == DAT_SUCCESS);
    CHECK_OK(dat_ep_reset(ep));
    CHECK_OK(dat_ep_get_status(ep, &s, &ri, &qi));
    CHECK(s == DAT_EP_STATE_UNCONNECTED);
    CHECK(ri == DAT_FALSE);
    CHECK(lc_no_event(p.recv_evd));
    PREQUIRE(&p, lc_pair_connect_ep(&p, ep, p.conn_evd) == 0);
    for (i = 0; i < 2; i++) {
        DAT_RETURN r = lc_wait(p.recv_evd, &ev);
        CHECK_OK(r);
        if (r != DAT_SUCCESS)
            break;
        DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(d->ep_handle == ep);
        CHECK(d->status == DAT_DTO_SUCCESS);
        CHECK(d->user_cookie.as_64 == (DAT_UINT64)(i + 1));
        CHECK(d->transfered_length == 64);
        CHECK(((char *)m.buf)[(size_t)i * 1024] == 'A' + i);
        CHECK(((char *)m.buf)[(size_t)i * 1024 + 63] == 'A' + i);
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(ERS_03_reset_refused_states)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc f;
    struct lc_mem m;
    struct lc_remote rem;
    DAT_EP_HANDLE ep, ep_r;
    DAT_RSP_HANDLE rsp;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    char c;
    int st;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    lc_attr(&a);
    if (p.server) {
        a.max_rdma_read_in = 1;
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep) ==
                         DAT_SUCCESS);
        /* hold the CR while the client looks at ACTIVE_CONNECTION_PENDING */
        PREQUIRE(&p, lc_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        PREQUIRE(&p, pair_tell(&p, "C", 1) == 0);
        PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'A');
        PREQUIRE(&p, dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, lc_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        PREQUIRE(&p, stall_export(&p, &m) == 0);
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    lc_from_pair(&f, &p, &ia_attr, &pr);
    /* RESERVED */
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep_r) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, lc_rsp(&f, ep_r, &rsp) == DAT_SUCCESS);
    CHECK(lc_state(ep_r) == DAT_EP_STATE_RESERVED);
    CHECK_TYPE(dat_ep_reset(ep_r), DAT_INVALID_STATE);
    CHECK(lc_state(ep_r) == DAT_EP_STATE_RESERVED);
    CHECK_OK(dat_rsp_free(rsp));
    CHECK_OK(dat_ep_free(ep_r));

    /* ACTIVE_CONNECTION_PENDING */
    a.max_rdma_read_out = 1;
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, lc_pair_connect_start(&p, ep) == DAT_SUCCESS);
    PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'C');
    CHECK(lc_state(ep) == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
    CHECK_TYPE(dat_ep_reset(ep), DAT_INVALID_STATE);
    CHECK(lc_state(ep) == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
    PREQUIRE(&p, pair_tell(&p, "A", 1) == 0);

    /* CONNECTED */
    PREQUIRE(&p, lc_wait(p.conn_evd, &ev) == DAT_SUCCESS);
    PREQUIRE(&p, ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
    CHECK(lc_state(ep) == DAT_EP_STATE_CONNECTED);
    CHECK_TYPE(dat_ep_reset(ep), DAT_INVALID_STATE);
    CHECK(lc_state(ep) == DAT_EP_STATE_CONNECTED);

    /* DISCONNECT_PENDING under STALL */
    PREQUIRE(&p, pair_hear(&p, &rem, sizeof(rem)) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    st = lc_stall(&p, ep, p.req_evd, &m, &rem);
    PREQUIRE(&p, st >= 0);
    if (st == 0) {
        fprintf(stderr, "    partly skipped: no STALL (the read completed at once)\n");
        ctest_skipped = 1;
    } else {
        CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
        CHECK(lc_state(ep) == DAT_EP_STATE_DISCONNECT_PENDING);
        CHECK_TYPE(dat_ep_reset(ep), DAT_INVALID_STATE);
        kill(p.server_pid, SIGCONT);
        CHECK_OK(lc_wait(p.req_evd, &ev));
        CHECK_OK(lc_wait(p.conn_evd, &ev));
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(ERS_04_reconnect_three_times)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    double t0;
    int cycle;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    lc_attr(&a);
    if (p.server) {
        for (cycle = 0; cycle < 3; cycle++) {
            PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep) ==
                             DAT_SUCCESS);
            PREQUIRE(&p, lc_post_recv(ep, &m, 0, 1024, (DAT_UINT64)cycle) == DAT_SUCCESS);
            PREQUIRE(&p, lc_pair_connect_ep(&p, ep, p.conn_evd) == 0);
            CHECK_OK(lc_wait(p.recv_evd, &ev));
            CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
            CHECK(((char *)m.buf)[0] == '0' + cycle);
            PREQUIRE(&p, pair_tell(&p, "r", 1) == 0);
            CHECK_OK(lc_wait(p.conn_evd, &ev));
            CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
                  ev.event_number == DAT_CONNECTION_EVENT_BROKEN);
            CHECK_OK(dat_ep_free(ep));
            PREQUIRE(&p, pair_sync(&p, 'n') == 0);
        }
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep) ==
                     DAT_SUCCESS);
    for (cycle = 0; cycle < 3; cycle++) {
        char c;
        if (lc_pair_connect_ep(&p, ep, p.conn_evd) != 0) {
            fprintf(stderr, "    cycle %d: no ESTABLISHED\n", cycle);
            CHECK(0);
            lc_pair_abort(&p);
            return;
        }
        memset(m.buf, '0' + cycle, 64);
        CHECK_OK(lc_post_send(ep, &m, 0, 64, (DAT_UINT64)cycle));
        CHECK_OK(lc_wait(p.req_evd, &ev));
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'r');
        CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
        CHECK_OK(lc_wait(p.conn_evd, &ev));
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
        PREQUIRE(&p, lc_wait_state(ep, DAT_EP_STATE_DISCONNECTED, 5000) == 0);
        t0 = ctest_now();
        CHECK_OK(dat_ep_reset(ep));
        CHECK(ctest_now() - t0 < 10.0);
        CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
        PREQUIRE(&p, pair_sync(&p, 'n') == 0);
    }
    pair_finish(&p);
}

TEST(ERS_05_marker)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    int seen[4] = {0, 0, 0, 0}, marker = 0, n = 0, i;
    char c;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 8192, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        memset(m.buf, 'z', 64);
        CHECK_OK(lc_post_send(p.ep, &m, 0, 64, 1));
        CHECK_OK(lc_wait(p.req_evd, &ev));
        PREQUIRE(&p, pair_tell(&p, "s", 1) == 0);
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    lc_attr(&a);
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep) ==
                     DAT_SUCCESS);
    for (i = 1; i <= 3; i++)
        PREQUIRE(&p, lc_post_recv(ep, &m, (size_t)i * 1024, 1024, (DAT_UINT64)i) == DAT_SUCCESS);
    PREQUIRE(&p, lc_pair_connect_ep(&p, ep, p.conn_evd) == 0);
    PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 's');
    ctest_sleep_ms(200);
    CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(lc_wait(p.conn_evd, &ev));
    CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
    PREQUIRE(&p, lc_wait_state(ep, DAT_EP_STATE_DISCONNECTED, 5000) == 0);
    /* the marker: accepted in DISCONNECTED and flushed at once */
    CHECK_OK(lc_post_recv(ep, &m, 0, 1024, 99));
    while (!marker) {
        DAT_RETURN r = lc_wait(p.recv_evd, &ev);
        CHECK_OK(r);
        if (r != DAT_SUCCESS)
            break;
        DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(d->ep_handle == ep);
        if (d->user_cookie.as_64 == 99) {
            CHECK(d->status == DAT_DTO_ERR_FLUSHED);
            marker = 1;
        } else if (d->user_cookie.as_64 >= 1 && d->user_cookie.as_64 <= 3) {
            seen[d->user_cookie.as_64]++;
            CHECK(d->status == DAT_DTO_SUCCESS || d->status == DAT_DTO_ERR_FLUSHED);
        } else {
            fprintf(stderr, "    unexpected cookie %llu\n",
                    (unsigned long long)d->user_cookie.as_64);
            CHECK(0);
        }
        if (++n > 10)
            break;
    }
    CHECK(marker);
    for (i = 1; i <= 3; i++) {
        if (seen[i] != 1)
            fprintf(stderr, "    receive %d completed %d times before the marker\n", i, seen[i]);
        CHECK(seen[i] == 1);
    }
    CHECK_OK(dat_ep_reset(ep));
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(ERS_06_srq_kept)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM q;

    REQUIRE(lc_open(&f) == 0);
    if (!lc_srq_supported(&f)) {
        lc_close(&f);
        SKIP("srq_supported is FALSE");
    }
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    lc_attr(&a);
    a.max_rdma_read_in = 1;
    a.max_rdma_read_out = 1;
    REQUIRE(dat_ep_create_with_srq(f.ia, f.pz, f.recv_evd, f.req_evd, f.conn_evd, srq, &a, &ep) ==
            DAT_SUCCESS);
    CHECK_OK(dat_ep_reset(ep)); /* from UNCONNECTED */
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_SRQ_HANDLE, &q));
    CHECK(q.srq_handle == srq);
    REQUIRE(lc_make_disconnected(&f, ep, f.conn_evd) == 0);
    CHECK_OK(dat_ep_reset(ep)); /* from DISCONNECTED */
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_SRQ_HANDLE | DAT_EP_FIELD_EP_STATE, &q));
    CHECK(q.srq_handle == srq);
    CHECK(q.ep_state == DAT_EP_STATE_UNCONNECTED);
    CHECK_TYPE(dat_srq_free(srq), DAT_INVALID_STATE);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(ERS_07_stale_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_reset(ep), DAT_INVALID_HANDLE);
    lc_close(&f);
}

/* =========================================================================
 * §4.12 dat_ep_set_watermark (rulings.md, watermarks)
 * ========================================================================= */

static void esw_all_values(DAT_EP_HANDLE ep, const char *state)
{
    static const DAT_COUNT v[][2] = {
        {DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE},
        {0, 0},
        {1, 2},
        {100, DAT_WATERMARK_INFINITE},
        {DAT_WATERMARK_INFINITE, 100},
        {-5, 7},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        DAT_RETURN r = dat_ep_set_watermark(ep, v[i][0], v[i][1]);
        if (DAT_GET_TYPE(r) != DAT_MODEL_NOT_SUPPORTED || (r & DAT_CLASS_ERROR) == 0) {
            fprintf(stderr, "    %s: set_watermark(%d, %d) = 0x%08x, want MODEL_NOT_SUPPORTED\n",
                    state, (int)v[i][0], (int)v[i][1], (unsigned)r);
            ctest_failures++;
        }
    }
}

TEST(ESW_01_model_not_supported_in_every_state)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc f;
    DAT_EP_HANDLE ep_u, ep_r, ep_d, ep_p;
    DAT_RSP_HANDLE rsp;
    DAT_EVENT ev;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    CHECK(pr.srq_watermarks_supported == 0);
    if (p.server) {
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        esw_all_values(p.ep, "CONNECTED (server)");
        /* PASSIVE_CONNECTION_PENDING: an RSP on the pair's qualifier */
        PREQUIRE(&p, pair_sync(&p, 'c') == 0);
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep_p) ==
                         DAT_SUCCESS);
        {
            DAT_CONN_QUAL rq;
            PREQUIRE(&p, lc_free_qual(p.ia, p.cr_evd, &rq) == 0);
            PREQUIRE(&p, dat_rsp_create(p.ia, rq, ep_p, p.cr_evd, &rsp) == DAT_SUCCESS);
            esw_all_values(ep_p, "RESERVED (server)");
            PREQUIRE(&p, pair_tell(&p, &rq, sizeof(rq)) == 0);
        }
        PREQUIRE(&p, lc_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        CHECK(lc_state(ep_p) == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        esw_all_values(ep_p, "PASSIVE_CONNECTION_PENDING");
        CHECK_OK(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle));
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    esw_all_values(p.ep, "CONNECTED");
    lc_from_pair(&f, &p, &ia_attr, &pr);
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep_u) ==
                     DAT_SUCCESS);
    esw_all_values(ep_u, "UNCONNECTED");
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep_r) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, lc_rsp(&f, ep_r, &rsp) == DAT_SUCCESS);
    esw_all_values(ep_r, "RESERVED");
    CHECK_OK(dat_rsp_free(rsp));
    /* DISCONNECTED: a separate connect EVD so the pair's stays clean */
    {
        DAT_EVD_HANDLE cevd;
        PREQUIRE(&p, dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &cevd) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, cevd, NULL, &ep_d) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, lc_make_disconnected(&f, ep_d, cevd) == 0);
        esw_all_values(ep_d, "DISCONNECTED");
    }
    PREQUIRE(&p, pair_sync(&p, 'c') == 0);
    /* ACTIVE_CONNECTION_PENDING towards the server's RSP (then rejected) */
    PREQUIRE(&p, pair_hear(&p, &p.qual, sizeof(p.qual)) == 0);
    PREQUIRE(&p, dat_ep_reset(ep_d) == DAT_SUCCESS);
    PREQUIRE(&p, lc_pair_connect_start(&p, ep_d) == DAT_SUCCESS);
    {
        DAT_EP_STATE s = lc_state(ep_d);
        if (s == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
            esw_all_values(ep_d, "ACTIVE_CONNECTION_PENDING");
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(ESW_02_stale_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_set_watermark(ep, DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE),
               DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ep_set_watermark(ep, 10, 20), DAT_INVALID_HANDLE);
    CHECK_RET(dat_ep_set_watermark(DAT_HANDLE_NULL, 10, 20), 0x8005000C);
    lc_close(&f);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
