/*
 * dat_ep_modify conformance tests (semantics-ep.md §4.8): EPM-01…18.
 */
#include "ctest.h"
#include "pair.h"
#include "lifecycle.h"

#define CHECK_TYPE2(expr, t1, t2)                                              \
    do {                                                                       \
        DAT_RETURN ctest_got2_ = (expr);                                       \
        if ((DAT_GET_TYPE(ctest_got2_) != DAT_GET_TYPE(t1) &&                  \
             DAT_GET_TYPE(ctest_got2_) != DAT_GET_TYPE(t2)) ||                 \
            (ctest_got2_ & DAT_CLASS_ERROR) == 0)                              \
            ctest_report_ret(__FILE__, __LINE__, #expr, ctest_got2_, (t1),     \
                             "type (or the alternative)");                     \
    } while (0)

#define NOT_OK(expr)                                                           \
    do {                                                                       \
        DAT_RETURN ctest_got3_ = (expr);                                       \
        if (ctest_got3_ == DAT_SUCCESS || (ctest_got3_ & DAT_CLASS_ERROR) == 0) \
            ctest_report_ret(__FILE__, __LINE__, #expr, ctest_got3_,           \
                             DAT_CLASS_ERROR, "any error");                    \
    } while (0)

/* Queries everything; 0 on success. */
static int epm_query(DAT_EP_HANDLE ep, DAT_EP_PARAM *p)
{
    memset(p, 0, sizeof(*p));
    return dat_ep_query(ep, DAT_EP_FIELD_ALL, p) == DAT_SUCCESS ? 0 : -1;
}

/* Fields that a refused or no-op modify must leave alone (pointers to
 * provider-owned addresses are not compared). `skip` names one attribute
 * field (by mask bit) allowed to differ. */
static int epm_same(const DAT_EP_PARAM *a, const DAT_EP_PARAM *b, DAT_EP_PARAM_MASK skip)
{
    int bad = 0;
#define EPM_FIELD(bit, f)                                                      \
    if (!(skip & (bit)) && a->f != b->f) {                                     \
        fprintf(stderr, "    field %s changed\n", #f);                         \
        bad++;                                                                 \
    }
    EPM_FIELD(DAT_EP_FIELD_IA_HANDLE, ia_handle);
    EPM_FIELD(DAT_EP_FIELD_EP_STATE, ep_state);
    EPM_FIELD(DAT_EP_FIELD_PZ_HANDLE, pz_handle);
    EPM_FIELD(DAT_EP_FIELD_RECV_EVD_HANDLE, recv_evd_handle);
    EPM_FIELD(DAT_EP_FIELD_REQUEST_EVD_HANDLE, request_evd_handle);
    EPM_FIELD(DAT_EP_FIELD_CONNECT_EVD_HANDLE, connect_evd_handle);
    EPM_FIELD(DAT_EP_FIELD_SRQ_HANDLE, srq_handle);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, ep_attr.service_type);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, ep_attr.max_message_size);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE, ep_attr.max_rdma_size);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_QOS, ep_attr.qos);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, ep_attr.recv_completion_flags);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, ep_attr.request_completion_flags);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, ep_attr.max_recv_dtos);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, ep_attr.max_request_dtos);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, ep_attr.max_recv_iov);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, ep_attr.max_request_iov);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, ep_attr.max_rdma_read_in);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, ep_attr.max_rdma_read_out);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW, ep_attr.srq_soft_hw);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV, ep_attr.max_rdma_read_iov);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV, ep_attr.max_rdma_write_iov);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR, ep_attr.ep_transport_specific_count);
    EPM_FIELD(DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR, ep_attr.ep_provider_specific_count);
#undef EPM_FIELD
    return bad == 0;
}

TEST(EPM_01_pz_unconnected)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_PZ_HANDLE pz2;
    DAT_EP_PARAM p, before;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(epm_query(ep, &before) == 0);
    memset(&p, 0, sizeof(p));
    p.pz_handle = pz2;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, &p));
    REQUIRE(epm_query(ep, &p) == 0);
    CHECK(p.pz_handle == pz2);
    CHECK(epm_same(&before, &p, DAT_EP_FIELD_PZ_HANDLE));
    /* the reference moved: the old PZ can go, the new one cannot */
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_TYPE(dat_pz_free(pz2), DAT_INVALID_STATE);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_pz_free(pz2));
    lc_close(&f);
}

TEST(EPM_02_connected_refuses)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_PZ_HANDLE pz2;
    DAT_EVD_HANDLE evd2;
    DAT_EP_PARAM q, before, after;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (p.server) {
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, dat_pz_create(p.ia, &pz2) == DAT_SUCCESS);
    PREQUIRE(&p, dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &evd2) ==
                     DAT_SUCCESS);
    CHECK(lc_state(p.ep) == DAT_EP_STATE_CONNECTED);
    PREQUIRE(&p, epm_query(p.ep, &before) == 0);
    memset(&q, 0, sizeof(q));
    q.pz_handle = pz2;
    CHECK_TYPE(dat_ep_modify(p.ep, DAT_EP_FIELD_PZ_HANDLE, &q), DAT_INVALID_STATE);
    memset(&q, 0, sizeof(q));
    q.recv_evd_handle = evd2;
    CHECK_TYPE(dat_ep_modify(p.ep, DAT_EP_FIELD_RECV_EVD_HANDLE, &q), DAT_INVALID_STATE);
    memset(&q, 0, sizeof(q));
    q.ep_attr.max_recv_dtos = before.ep_attr.max_recv_dtos + 1;
    CHECK_TYPE(dat_ep_modify(p.ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &q), DAT_INVALID_STATE);
    PREQUIRE(&p, epm_query(p.ep, &after) == 0);
    CHECK(epm_same(&before, &after, 0));
    CHECK(after.pz_handle == p.pz);
    CHECK(after.recv_evd_handle == p.recv_evd);
    /* the new objects are not referenced */
    CHECK_OK(dat_pz_free(pz2));
    CHECK_OK(dat_evd_free(evd2));
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPM_03_reserved)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_RSP_HANDLE rsp;
    DAT_EVD_HANDLE evd2;
    DAT_PZ_HANDLE pz2;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &evd2) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(lc_rsp(&f, ep, &rsp) == DAT_SUCCESS);
    REQUIRE(lc_state(ep) == DAT_EP_STATE_RESERVED);
    memset(&p, 0, sizeof(p));
    p.recv_evd_handle = evd2;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_RECV_EVD_HANDLE, &p));
    memset(&p, 0, sizeof(p));
    p.pz_handle = pz2;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, &p), DAT_INVALID_STATE);
    REQUIRE(epm_query(ep, &p) == 0);
    CHECK(p.recv_evd_handle == evd2);
    CHECK(p.pz_handle == f.pz);
    CHECK(p.ep_state == DAT_EP_STATE_RESERVED);
    CHECK_OK(dat_rsp_free(rsp));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_04_tentative)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EVENT ev;
    DAT_CR_PARAM crp;
    DAT_CR_HANDLE cr;
    DAT_EVD_HANDLE conn2;
    DAT_EP_PARAM q;
    char c;

    REQUIRE(lc_open(&f) == 0);
    if (f.pr.ep_creator == DAT_PSP_CREATES_EP_NEVER) {
        DAT_CONN_QUAL qual;
        DAT_PSP_HANDLE psp;
        REQUIRE(lc_free_qual(f.ia, f.cr_evd, &qual) == 0);
        /* §2.3 / §4.0 gating: no provider-created EPs */
        CHECK_TYPE(dat_psp_create(f.ia, qual, f.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp),
                   DAT_MODEL_NOT_SUPPORTED);
        lc_close(&f);
        return;
    }
    lc_close(&f);

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    if (p.server) {
        DAT_PSP_HANDLE psp;
        PREQUIRE(&p, dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn2) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, dat_psp_free(p.psp) == DAT_SUCCESS);
        PREQUIRE(&p, dat_psp_create(p.ia, p.qual, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, pair_tell(&p, "R", 1) == 0);
        PREQUIRE(&p, lc_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        cr = ev.event_data.cr_arrival_event_data.cr_handle;
        memset(&crp, 0, sizeof(crp));
        PREQUIRE(&p, dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp) == DAT_SUCCESS);
        ep = crp.local_ep_handle;
        PREQUIRE(&p, ep != DAT_HANDLE_NULL);
        CHECK(lc_state(ep) == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
        memset(&q, 0, sizeof(q));
        q.pz_handle = p.pz;
        q.recv_evd_handle = p.recv_evd;
        q.request_evd_handle = p.req_evd;
        q.connect_evd_handle = conn2;
        CHECK_OK(dat_ep_modify(ep,
                               DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
                                   DAT_EP_FIELD_REQUEST_EVD_HANDLE |
                                   DAT_EP_FIELD_CONNECT_EVD_HANDLE,
                               &q));
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        CHECK_OK(lc_wait(conn2, &ev));
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        CHECK(ev.event_data.connect_event_data.ep_handle == ep);
        CHECK(lc_no_event(p.conn_evd));
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'R');
    PREQUIRE(&p, lc_pair_connect_start(&p, ep) == DAT_SUCCESS);
    CHECK_OK(lc_wait(p.conn_evd, &ev));
    CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPM_05_passive_connection_pending)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EP_HANDLE ep;
    DAT_RSP_HANDLE rsp;
    DAT_EVD_HANDLE conn2;
    DAT_PZ_HANDLE pz2;
    DAT_EVENT ev;
    DAT_EP_PARAM q;
    char c;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                     DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn2) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, dat_pz_create(p.ia, &pz2) == DAT_SUCCESS);
        PREQUIRE(&p, lc_pair_rsp(&p, ep, &rsp) == 0);
        PREQUIRE(&p, pair_tell(&p, "R", 1) == 0);
        PREQUIRE(&p, lc_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        CHECK(lc_state(ep) == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        memset(&q, 0, sizeof(q));
        q.connect_evd_handle = conn2;
        CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_CONNECT_EVD_HANDLE, &q)); /* ruling E16 */
        memset(&q, 0, sizeof(q));
        q.pz_handle = pz2;
        CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, &q), DAT_INVALID_STATE);
        memset(&q, 0, sizeof(q));
        CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
        CHECK(q.connect_evd_handle == conn2);
        CHECK(q.pz_handle == p.pz);
        CHECK(q.ep_state == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_OK(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle));
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'R');
    PREQUIRE(&p, lc_pair_connect_start(&p, ep) == DAT_SUCCESS);
    CHECK_OK(lc_wait(p.conn_evd, &ev));
    CHECK(ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPM_06_unmodifiable_fields)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM before, after, q;
    DAT_IA_HANDLE ia2;
    DAT_EVD_HANDLE aevd2;
    struct sockaddr_storage ss;
    static const DAT_EP_PARAM_MASK masks[] = {
        DAT_EP_FIELD_IA_HANDLE,          DAT_EP_FIELD_EP_STATE,
        DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR, DAT_EP_FIELD_LOCAL_PORT_QUAL,
        DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR, DAT_EP_FIELD_REMOTE_PORT_QUAL,
    };
    size_t i;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(ctest_open_ia(&ia2, &aevd2) == DAT_SUCCESS);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(epm_query(ep, &before) == 0);
    memset(&ss, 0, sizeof(ss));
    memcpy(&ss, f.ia_attr.ia_address_ptr, sizeof(struct sockaddr_in));
    for (i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
        memcpy(&q, &before, sizeof(q));
        q.ia_handle = ia2;
        q.ep_state = DAT_EP_STATE_CONNECTED;
        q.local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ss;
        q.local_port_qual = 4242;
        q.remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ss;
        q.remote_port_qual = 4243;
        CHECK_TYPE(dat_ep_modify(ep, masks[i], &q), DAT_INVALID_PARAMETER);
        REQUIRE(epm_query(ep, &after) == 0);
        if (!epm_same(&before, &after, 0)) {
            fprintf(stderr, "    after mask 0x%llx\n", (unsigned long long)masks[i]);
            CHECK(0);
        }
    }
    CHECK(after.ia_handle == f.ia);
    CHECK(after.ep_state == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG);
    lc_close(&f);
}

TEST(EPM_07_srq_handle_mask)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.srq_handle = DAT_HANDLE_NULL;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, &q), DAT_INVALID_PARAMETER);
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_SRQ_HANDLE, &q));
    CHECK(q.srq_handle == DAT_HANDLE_NULL);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_08_undefined_mask_bits)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM before, after, q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(epm_query(ep, &before) == 0);
    memcpy(&q, &before, sizeof(q));
    CHECK_TYPE(dat_ep_modify(ep, (DAT_EP_PARAM_MASK)0x800, &q), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_ep_modify(ep, (DAT_EP_PARAM_MASK)1 << 40, &q), DAT_INVALID_PARAMETER);
    /* an undefined bit next to a legal one: nothing applied */
    q.ep_attr.max_recv_dtos = before.ep_attr.max_recv_dtos + 3;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS | ((DAT_EP_PARAM_MASK)1 << 40),
                             &q),
               DAT_INVALID_PARAMETER);
    REQUIRE(epm_query(ep, &after) == 0);
    CHECK(epm_same(&before, &after, 0));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_09_only_masked_fields)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM before, after, q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(epm_query(ep, &before) == 0);
    REQUIRE(before.ep_attr.max_recv_dtos >= 16);
    memset(&q, 0xA5, sizeof(q)); /* garbage everywhere else */
    q.ep_attr.max_recv_dtos = before.ep_attr.max_recv_dtos + 50;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &q));
    REQUIRE(epm_query(ep, &after) == 0);
    CHECK(epm_same(&before, &after, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS));
    CHECK(after.ep_attr.max_recv_dtos >= before.ep_attr.max_recv_dtos + 50);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_10_stale_pz)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_PZ_HANDLE pz2;
    DAT_EP_PARAM q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(dat_pz_free(pz2) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.pz_handle = pz2;
    CHECK_TYPE2(dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, &q), DAT_INVALID_PARAMETER,
                DAT_INVALID_HANDLE);
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_PZ_HANDLE, &q));
    CHECK(q.pz_handle == f.pz);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_11_recv_flags_after_posting)
{
    struct lc f;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_mem(f.ia, f.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    REQUIRE(lc_post_recv(ep, &m, 0, 1024, 1) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.ep_attr.recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, &q));
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, &q));
    CHECK(q.ep_attr.recv_completion_flags == DAT_COMPLETION_EVD_THRESHOLD_FLAG);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_12_recv_flags_values)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.ep_attr.recv_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, &q),
               DAT_INVALID_PARAMETER);
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, &q));
    CHECK(q.ep_attr.recv_completion_flags == DAT_COMPLETION_DEFAULT_FLAG);
    memset(&q, 0, sizeof(q));
    q.ep_attr.recv_completion_flags = DAT_COMPLETION_BARRIER_FENCE_FLAG;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, &q));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_13_message_size_above_ia)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.ep_attr.max_message_size = f.ia_attr.max_message_size + 1;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &q),
               DAT_INVALID_PARAMETER);
    memset(&q, 0, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &q));
    CHECK(q.ep_attr.max_message_size == 65536);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_14_atomicity)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_PZ_HANDLE pz2;
    DAT_EP_PARAM q, before, after;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(epm_query(ep, &before) == 0);
    memset(&q, 0, sizeof(q));
    q.pz_handle = pz2;
    q.ep_attr.max_message_size = f.ia_attr.max_message_size + 1;
    NOT_OK(dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &q));
    REQUIRE(epm_query(ep, &after) == 0);
    CHECK(after.pz_handle == f.pz);
    CHECK(epm_same(&before, &after, 0));
    /* pz2 did not gain a reference */
    CHECK_OK(dat_pz_free(pz2));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_15_null_evds)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM q;
    DAT_CONN_QUAL qual;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.recv_evd_handle = DAT_HANDLE_NULL;
    q.ep_attr.max_recv_dtos = 0;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS,
                           &q));
    memset(&q, 0xA5, sizeof(q));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &q));
    CHECK(q.recv_evd_handle == DAT_HANDLE_NULL);
    CHECK(q.ep_attr.max_recv_dtos == 0);
    /* the recv EVD lost its stream */
    CHECK_OK(dat_evd_free(f.recv_evd));

    memset(&q, 0, sizeof(q));
    q.connect_evd_handle = DAT_HANDLE_NULL;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_CONNECT_EVD_HANDLE, &q));
    REQUIRE(lc_free_qual(f.ia, f.cr_evd, &qual) == 0);
    /* [REF] INVALID_STATE/EP_NOTREADY; lenient: any error */
    r = dat_ep_connect(ep, f.ia_attr.ia_address_ptr, qual, 1000000u, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG);
    NOT_OK(r);
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_16_mask_zero)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM q, before, after;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(epm_query(ep, &before) == 0);
    memset(&q, 0xA5, sizeof(q));
    CHECK_OK(dat_ep_modify(ep, 0, &q));
    REQUIRE(epm_query(ep, &after) == 0);
    CHECK(epm_same(&before, &after, 0));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPM_17_stale_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM q;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(dat_ep_free(ep) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.ep_attr.max_recv_dtos = 4;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &q), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ep_modify(ep, 0, &q), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPM_18_pz_change_with_posted_recv)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc_mem m;
    DAT_PZ_HANDLE pz_old;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM q;
    DAT_EVENT ev;
    DAT_RETURN r;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    if (p.server) {
        PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
        PREQUIRE(&p, pair_connect(&p, NULL) == 0);
        memset(m.buf, 'm', 64);
        CHECK_OK(lc_post_send(p.ep, &m, 0, 64, 1));
        /* the send may fail or succeed: the receiver's buffer is the point */
        r = lc_wait(p.req_evd, &ev);
        fprintf(stderr, "    server: send completion 0x%08x status %d\n", (unsigned)r,
                (int)ev.event_data.dto_completion_event_data.status);
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, dat_pz_create(p.ia, &pz_old) == DAT_SUCCESS);
    PREQUIRE(&p, lc_mem(p.ia, pz_old, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    lc_attr(&a);
    PREQUIRE(&p, dat_ep_create(p.ia, pz_old, p.recv_evd, p.req_evd, p.conn_evd, &a, &ep) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, lc_post_recv(ep, &m, 0, 1024, 77) == DAT_SUCCESS);
    memset(&q, 0, sizeof(q));
    q.pz_handle = p.pz;
    CHECK_OK(dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, &q));
    PREQUIRE(&p, lc_pair_connect_ep(&p, ep, p.conn_evd) == 0);
    r = lc_wait(p.recv_evd, &ev);
    if (r != DAT_SUCCESS) {
        /* no completion yet: end the connection, which must flush it */
        fprintf(stderr, "    client: no receive completion within 10 s (0x%08x, state %u)\n",
                (unsigned)r, (unsigned)lc_state(ep));
        CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
        r = lc_wait(p.recv_evd, &ev);
    }
    CHECK_OK(r);
    if (r == DAT_SUCCESS) {
        DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(d->user_cookie.as_64 == 77);
        CHECK(d->status != DAT_DTO_SUCCESS);
        /* [REC] */
        CHECK(d->status == DAT_DTO_ERR_LOCAL_PROTECTION || d->status == DAT_DTO_ERR_FLUSHED);
        if (d->status == DAT_DTO_SUCCESS)
            fprintf(stderr, "    the receive took the message (%c)\n", ((char *)m.buf)[0]);
    }
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
