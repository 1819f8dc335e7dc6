/*
 * EP lifecycle conformance tests: creation and destruction.
 *
 *   semantics-ep.md §4.1 dat_ep_create           EPC-01…20
 *   semantics-ep.md §4.2 dat_ep_create_with_srq  EPS-01…15 (gated on srq_supported)
 *   semantics-ep.md §4.6 dat_ep_free             EPF-01…11
 *   semantics-core.md needs-EP tests             PZF-04, EFR-04, EFR-05, EWT-24, GHT-02
 *   bad EP handles (rulings.md rule 1) for every EP-taking lifecycle call:
 *     EPH_01 NULL, EPH_02 misaligned, EPH_03 garbage, EPH_04 freed, EPH_05 wrong type
 *
 * dat_ep_modify is in ep_modify.c; get_status, query, recv_query, reset and
 * set_watermark are in ep_status.c.
 */
#include "ctest.h"
#include "pair.h"
#include "lifecycle.h"

#include <pthread.h>

/* Either of two error types (the spec's "lenient: X also accepted"). */
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

/* =========================================================================
 * §4.1 dat_ep_create
 * ========================================================================= */

TEST(EPC_01_create_unconnected_idle)
{
    struct lc f;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_EP_STATE s = LC_BAD_STATE;
    DAT_BOOLEAN ri = 77, qi = 77;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    CHECK_OK(lc_ep(&f, &a, &ep));
    REQUIRE(ep != DAT_HANDLE_NULL);
    CHECK(((uintptr_t)ep & 3) == 0);
    CHECK_OK(dat_ep_get_status(ep, &s, &ri, &qi));
    CHECK(s == DAT_EP_STATE_UNCONNECTED);
    CHECK(s == 0);
    CHECK(ri == DAT_TRUE);
    CHECK(qi == DAT_TRUE);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

/* Compares the attributes of EPC-02 / EPQ-01 (dtos and iovs may grow). */
static void epc_check_attr(const DAT_EP_ATTR *got, const DAT_EP_ATTR *want)
{
    CHECK(got->service_type == want->service_type);
    CHECK(got->max_message_size == want->max_message_size);
    CHECK(got->max_rdma_size == want->max_rdma_size);
    CHECK(got->qos == want->qos);
    CHECK(got->recv_completion_flags == want->recv_completion_flags);
    CHECK(got->request_completion_flags == want->request_completion_flags);
    CHECK(got->max_recv_dtos >= want->max_recv_dtos);
    CHECK(got->max_request_dtos >= want->max_request_dtos);
    CHECK(got->max_recv_iov >= want->max_recv_iov);
    CHECK(got->max_request_iov >= want->max_request_iov);
    CHECK(got->max_rdma_read_in == want->max_rdma_read_in);
    CHECK(got->max_rdma_read_out == want->max_rdma_read_out);
    CHECK(got->srq_soft_hw == want->srq_soft_hw);
    CHECK(got->max_rdma_read_iov == want->max_rdma_read_iov);
    CHECK(got->max_rdma_write_iov == want->max_rdma_write_iov);
    CHECK(got->ep_transport_specific_count == want->ep_transport_specific_count);
    CHECK(got->ep_provider_specific_count == want->ep_provider_specific_count);
}

TEST(EPC_02_query_matches_create)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    /* non-default but legal values, so that "unchanged" means something */
    a.max_message_size = 12345;
    a.max_rdma_size = 54321;
    a.max_recv_dtos = 5;
    a.max_request_dtos = 7;
    a.max_recv_iov = 1;
    a.max_request_iov = 3;
    a.max_rdma_read_in = 1;
    a.max_rdma_read_out = 2;
    a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    REQUIRE(lc_ep(&f, &a, &ep) == DAT_SUCCESS);
    memset(&p, 0xA5, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
    CHECK(p.ia_handle == f.ia);
    CHECK(p.ep_state == DAT_EP_STATE_UNCONNECTED);
    CHECK(p.pz_handle == f.pz);
    CHECK(p.recv_evd_handle == f.recv_evd);
    CHECK(p.request_evd_handle == f.req_evd);
    CHECK(p.connect_evd_handle == f.conn_evd);
    CHECK(p.srq_handle == DAT_HANDLE_NULL);
    epc_check_attr(&p.ep_attr, &a);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPC_03_null_attr_defaults)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    CHECK_OK(lc_ep(&f, NULL, &ep));
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
    CHECK(p.ep_state == DAT_EP_STATE_UNCONNECTED);
    CHECK(p.ep_attr.service_type == DAT_SERVICE_TYPE_RC);
    CHECK(p.ep_attr.max_message_size > 0);
    CHECK(p.ep_attr.max_message_size <= f.ia_attr.max_message_size);
    CHECK(p.ep_attr.max_request_iov >= 1);
    CHECK(p.ep_attr.max_recv_iov >= 1);
    CHECK(p.ep_attr.max_request_iov <= f.ia_attr.max_iov_segments_per_dto);
    CHECK(p.ep_attr.max_recv_iov <= f.ia_attr.max_iov_segments_per_dto);
    /* rulings "EPC-03 defaults": the reference provider's defaults, so an
     * EP made without attributes can do every DTO, RDMA Read included. */
    CHECK(p.ep_attr.max_message_size == f.ia_attr.max_message_size);
    CHECK(p.ep_attr.max_rdma_size == f.ia_attr.max_rdma_size);
    CHECK(p.ep_attr.max_rdma_read_in == 4 ||
          (p.ep_attr.max_rdma_read_in == f.ia_attr.max_rdma_read_per_ep_in &&
           f.ia_attr.max_rdma_read_per_ep_in < 4));
    CHECK(p.ep_attr.max_rdma_read_out == 4 ||
          (p.ep_attr.max_rdma_read_out == f.ia_attr.max_rdma_read_per_ep_out &&
           f.ia_attr.max_rdma_read_per_ep_out < 4));
    CHECK(p.ep_attr.max_recv_dtos >= 16);
    CHECK(p.ep_attr.max_request_dtos >= 16);
    CHECK(p.ep_attr.max_recv_iov >= 4 ||
          p.ep_attr.max_recv_iov == f.ia_attr.max_iov_segments_per_dto);
    CHECK(p.ep_attr.max_request_iov >= 4 ||
          p.ep_attr.max_request_iov == f.ia_attr.max_iov_segments_per_dto);
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPC_04_bad_ia)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_IA_HANDLE ia2;
    DAT_EVD_HANDLE aevd2;

    lc_attr(&a);
    REQUIRE(lc_open(&f) == 0);
    /* libdat's pre-check (abi-errors.md §5): NULL or misaligned → IA subtype */
    CHECK_RET(dat_ep_create(DAT_HANDLE_NULL, f.pz, f.recv_evd, f.req_evd, f.conn_evd, &a, &ep),
              0x8005000B);
    CHECK_RET(dat_ep_create((DAT_IA_HANDLE)(uintptr_t)0x1001, f.pz, f.recv_evd, f.req_evd,
                            f.conn_evd, &a, &ep),
              0x8005000B);
    /* a closed IA */
    REQUIRE(ctest_open_ia(&ia2, &aevd2) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_ep_create(ia2, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                             DAT_HANDLE_NULL, NULL, &ep),
               DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ep_create(ia2, f.pz, f.recv_evd, f.req_evd, f.conn_evd, &a, &ep),
               DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPC_05_stale_pz)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_PZ_HANDLE pz2;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(dat_pz_free(pz2) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_create(f.ia, pz2, f.recv_evd, f.req_evd, f.conn_evd, &a, &ep),
               DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPC_06_lmr_as_recv_evd)
{
    struct lc f;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    REQUIRE(lc_mem(f.ia, f.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    CHECK_TYPE(dat_ep_create(f.ia, f.pz, (DAT_EVD_HANDLE)m.lmr, f.req_evd, f.conn_evd, &a, &ep),
               DAT_INVALID_HANDLE);
    /* the LMR was not disturbed */
    CHECK_OK(dat_lmr_free(m.lmr));
    lc_close(&f);
}

TEST(EPC_07_conn_evd_without_connection_flag)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EVD_HANDLE dto_evd;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd) == DAT_SUCCESS);
    /* [REF] INVALID_HANDLE (EVD_CONN); lenient: INVALID_PARAMETER */
    CHECK_TYPE2(dat_ep_create(f.ia, f.pz, f.recv_evd, f.req_evd, dto_evd, &a, &ep),
                DAT_INVALID_HANDLE, DAT_INVALID_PARAMETER);
    /* nothing references dto_evd now */
    CHECK_OK(dat_evd_free(dto_evd));
    lc_close(&f);
}

TEST(EPC_08_all_null_then_connect_fails)
{
    struct lc f;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_CONN_QUAL q;
    DAT_RETURN r;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    CHECK_OK(dat_ep_create(f.ia, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                           DAT_HANDLE_NULL, NULL, &ep));
    REQUIRE(ep != DAT_HANDLE_NULL);
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    memset(&p, 0xA5, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
    CHECK(p.pz_handle == DAT_HANDLE_NULL);
    CHECK(p.recv_evd_handle == DAT_HANDLE_NULL);
    CHECK(p.request_evd_handle == DAT_HANDLE_NULL);
    CHECK(p.connect_evd_handle == DAT_HANDLE_NULL);
    REQUIRE(lc_free_qual(f.ia, f.cr_evd, &q) == 0);
    /* [REF] INVALID_STATE/EP_NOTREADY; lenient: any error */
    r = dat_ep_connect(ep, f.ia_attr.ia_address_ptr, q, 1000000u, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG);
    NOT_OK(r);
    if (r != DAT_SUCCESS && r != 0x80070038u) /* [REF] INVALID_STATE | EP_NOTREADY */
        fprintf(stderr, "    (connect returned 0x%08x)\n", (unsigned)r);
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPC_09_null_ep_out)
{
    struct lc f;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    CHECK_TYPE(dat_ep_create(f.ia, f.pz, f.recv_evd, f.req_evd, f.conn_evd, &a, NULL),
               DAT_INVALID_PARAMETER);
    /* no EP was left behind: the PZ and the EVDs are free to go */
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_evd_free(f.recv_evd));
    CHECK_OK(dat_evd_free(f.req_evd));
    CHECK_OK(dat_evd_free(f.conn_evd));
    lc_close(&f);
}

TEST(EPC_10_bad_service_type)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    a.service_type = 99;
    CHECK_TYPE(lc_ep(&f, &a, &ep), DAT_INVALID_PARAMETER);
    lc_close(&f);
}

TEST(EPC_11_above_ia_limits)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    a.max_message_size = f.ia_attr.max_message_size + 1;
    CHECK_TYPE(lc_ep(&f, &a, &ep), DAT_INVALID_PARAMETER);
    lc_attr(&a);
    a.max_request_iov = f.ia_attr.max_iov_segments_per_dto + 1;
    CHECK_TYPE(lc_ep(&f, &a, &ep), DAT_INVALID_PARAMETER);
    /* and no EP exists afterwards */
    CHECK_OK(dat_pz_free(f.pz));
    lc_close(&f);
}

TEST(EPC_12_completion_flags)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    lc_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG;
    CHECK_TYPE(lc_ep(&f, &a, &ep), DAT_INVALID_PARAMETER);
    lc_attr(&a);
    a.request_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
    CHECK_OK(lc_ep(&f, &a, &ep));
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, &p));
    CHECK(p.ep_attr.request_completion_flags == DAT_COMPLETION_SOLICITED_WAIT_FLAG);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPC_13_unsupported_qos)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    static const DAT_QOS defined[] = {DAT_QOS_HIGH_THROUGHPUT, DAT_QOS_LOW_LATENCY,
                                      DAT_QOS_ECONOMY, DAT_QOS_PREMIUM};
    DAT_QOS q = 0;
    size_t i;

    REQUIRE(lc_open(&f) == 0);
    for (i = 0; i < sizeof(defined) / sizeof(defined[0]); i++)
        if ((f.pr.dat_qos_supported & defined[i]) == 0) {
            q = defined[i];
            break;
        }
    if (q == 0) {
        lc_close(&f);
        SKIP("every defined QoS value is supported");
    }
    lc_attr(&a);
    a.qos = q;
    CHECK_TYPE(lc_ep(&f, &a, &ep), DAT_MODEL_NOT_SUPPORTED);
    lc_close(&f);
}

TEST(EPC_14_sharing_c1)
{
    struct lc f;
    DAT_EP_HANDLE ep1, ep2, ep3, ep4;
    DAT_EVD_HANDLE x, y;
    DAT_EP_ATTR a;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(dat_evd_create(f.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                           &x) == DAT_SUCCESS);
    REQUIRE(dat_evd_create(f.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                           &y) == DAT_SUCCESS);
    /* EP1: recv UNSIGNALLED on X (allowed, ruling E20) */
    lc_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    REQUIRE(dat_ep_create(f.ia, f.pz, x, f.req_evd, f.conn_evd, &a, &ep1) == DAT_SUCCESS);
    /* EP2: recv EVD_THRESHOLD on X → refused (an UNSIGNALLED recv stream is involved) */
    lc_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    r = dat_ep_create(f.ia, f.pz, x, f.req_evd, f.conn_evd, &a, &ep2);
    CHECK_TYPE2(r, DAT_INVALID_PARAMETER, DAT_INVALID_STATE);
    if (r == DAT_SUCCESS)
        dat_ep_free(ep2);
    CHECK_OK(dat_ep_free(ep1));

    /* contrast: EP3 request UNSIGNALLED on Y, EP4 recv EVD_THRESHOLD on Y → SUCCESS */
    lc_attr(&a);
    a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    CHECK_OK(dat_ep_create(f.ia, f.pz, f.recv_evd, y, f.conn_evd, &a, &ep3));
    lc_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    r = dat_ep_create(f.ia, f.pz, y, f.req_evd, f.conn_evd, &a, &ep4);
    CHECK_OK(r);
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ep_free(ep4));
    CHECK_OK(dat_ep_free(ep3));
    lc_close(&f);
}

TEST(EPC_15_sharing_c2_dto_and_connection)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EVD_HANDLE z;
    DAT_EP_ATTR a;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    /* rows/columns: software, CR, DTO, connection, RMR bind, async */
    if (!f.pr.evd_stream_merging_supported[2][3] || !f.pr.evd_stream_merging_supported[3][2]) {
        lc_close(&f);
        SKIP("evd_stream_merging_supported forbids DTO + connection");
    }
    REQUIRE(dat_evd_create(f.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG,
                           &z) == DAT_SUCCESS);
    lc_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    r = dat_ep_create(f.ia, f.pz, z, f.req_evd, z, &a, &ep);
    CHECK_TYPE2(r, DAT_INVALID_PARAMETER, DAT_INVALID_STATE);
    if (r == DAT_SUCCESS)
        dat_ep_free(ep);
    lc_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    r = dat_ep_create(f.ia, f.pz, z, f.req_evd, z, &a, &ep);
    CHECK_OK(r);
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_evd_free(z));
    lc_close(&f);
}

TEST(EPC_16_sharing_c4_solicited_wait)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EVD_HANDLE w;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    DAT_COUNT n = 0;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                           &w) == DAT_SUCCESS);
    lc_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
    r = dat_ep_create(f.ia, f.pz, w, w, f.conn_evd, &a, &ep);
    CHECK_OK(r);
    REQUIRE(r == DAT_SUCCESS);
    CHECK_TYPE(dat_evd_wait(w, 0, 2, &ev, &n), DAT_INVALID_STATE);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPC_17_max_eps)
{
    struct lc f;
    DAT_EP_HANDLE *eps, extra;
    DAT_EP_ATTR a;
    DAT_EP_PARAM p;
    DAT_COUNT i, made = 0, bad_query = 0;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(f.ia_attr.max_eps > 0);
    if (f.ia_attr.max_eps > 65536) {
        lc_close(&f);
        SKIP("max_eps > 65536");
    }
    eps = calloc((size_t)f.ia_attr.max_eps, sizeof(*eps));
    REQUIRE(eps != NULL);
    lc_attr(&a);
    a.max_recv_dtos = 1;
    a.max_request_dtos = 1;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    for (i = 0; i < f.ia_attr.max_eps; i++) {
        r = lc_ep(&f, &a, &eps[i]);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    create #%d of %d failed: 0x%08x\n", (int)i,
                    (int)f.ia_attr.max_eps, (unsigned)r);
            CHECK(0);
            break;
        }
        made++;
    }
    if (made == f.ia_attr.max_eps) {
        r = lc_ep(&f, &a, &extra);
        CHECK_TYPE(r, DAT_INSUFFICIENT_RESOURCES);
        if (r == DAT_SUCCESS)
            dat_ep_free(extra);
    }
    for (i = 0; i < made; i++) {
        if (dat_ep_query(eps[i], DAT_EP_FIELD_EP_STATE | DAT_EP_FIELD_IA_HANDLE, &p) !=
                DAT_SUCCESS ||
            p.ia_handle != f.ia || p.ep_state != DAT_EP_STATE_UNCONNECTED)
            bad_query++;
    }
    if (bad_query != 0)
        fprintf(stderr, "    %d EPs did not answer dat_ep_query\n", (int)bad_query);
    CHECK(bad_query == 0);
    for (i = 0; i < made; i++)
        if (dat_ep_free(eps[i]) != DAT_SUCCESS && bad_query++ == 0)
            CHECK(0);
    free(eps);
    lc_close(&f);
}

TEST(EPC_18_query_after_free)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_OK(dat_ep_free(ep));
    CHECK_TYPE(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPC_19_references_held)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_evd_free(f.recv_evd), DAT_INVALID_STATE);
    CHECK_TYPE(dat_pz_free(f.pz), DAT_INVALID_STATE);
    /* still usable */
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_evd_free(f.recv_evd));
    CHECK_OK(dat_pz_free(f.pz));
    lc_close(&f);
}

#define EPC20_THREADS 4
#define EPC20_PER 10

struct epc20_arg {
    struct lc *f;
    pthread_barrier_t *bar;
    DAT_EP_HANDLE eps[EPC20_PER];
    DAT_RETURN rets[EPC20_PER];
};

static void *epc20_thread(void *p)
{
    struct epc20_arg *arg = p;
    DAT_EP_ATTR a;
    lc_attr(&a);
    pthread_barrier_wait(arg->bar);
    for (int i = 0; i < EPC20_PER; i++)
        arg->rets[i] = lc_ep(arg->f, &a, &arg->eps[i]);
    return NULL;
}

TEST(EPC_20_concurrent_create)
{
    struct lc f;
    pthread_t th[EPC20_THREADS];
    struct epc20_arg args[EPC20_THREADS];
    pthread_barrier_t bar;
    int i, j, k, l, started = 0;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(pthread_barrier_init(&bar, NULL, EPC20_THREADS) == 0);
    memset(args, 0, sizeof(args));
    for (i = 0; i < EPC20_THREADS; i++) {
        args[i].f = &f;
        args[i].bar = &bar;
        if (pthread_create(&th[i], NULL, epc20_thread, &args[i]) != 0)
            break;
        started++;
    }
    REQUIRE(started == EPC20_THREADS);
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < EPC20_THREADS; i++)
        for (j = 0; j < EPC20_PER; j++) {
            CHECK_OK(args[i].rets[j]);
            if (args[i].rets[j] != DAT_SUCCESS)
                continue;
            CHECK(lc_state(args[i].eps[j]) == DAT_EP_STATE_UNCONNECTED);
            for (k = 0; k < EPC20_THREADS; k++)
                for (l = 0; l < EPC20_PER; l++)
                    if ((k != i || l != j) && args[k].rets[l] == DAT_SUCCESS)
                        CHECK(args[i].eps[j] != args[k].eps[l]);
        }
    for (i = 0; i < EPC20_THREADS; i++)
        for (j = 0; j < EPC20_PER; j++)
            if (args[i].rets[j] == DAT_SUCCESS)
                CHECK_OK(dat_ep_free(args[i].eps[j]));
    pthread_barrier_destroy(&bar);
    lc_close(&f);
}

/* =========================================================================
 * §4.2 dat_ep_create_with_srq (gated on srq_supported, §4.0)
 * ========================================================================= */

#define SRQ_GATE(f)                                                            \
    do {                                                                       \
        if (!lc_srq_supported(f)) {                                            \
            lc_close(f);                                                       \
            SKIP("srq_supported is FALSE (EPS-05 asserts MODEL_NOT_SUPPORTED)"); \
        }                                                                      \
    } while (0)

/* Attributes for an SRQ EP: everything exact (§4.2 "attribute exactness"). */
static void eps_attr(DAT_EP_ATTR *a)
{
    lc_attr(a);
    a->max_rdma_read_in = 1;
    a->max_rdma_read_out = 1;
    a->max_rdma_read_iov = 1;
}

static DAT_RETURN eps_ep(struct lc *f, DAT_SRQ_HANDLE srq, const DAT_EP_ATTR *a,
                         DAT_EP_HANDLE *ep)
{
    return dat_ep_create_with_srq(f->ia, f->pz, f->recv_evd, f->req_evd, f->conn_evd, srq, a, ep);
}

TEST(EPS_01_create_with_srq)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    CHECK_OK(eps_ep(&f, srq, &a, &ep));
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
    CHECK(p.srq_handle == srq);
    CHECK(p.ep_state == DAT_EP_STATE_UNCONNECTED);
    CHECK(p.pz_handle == f.pz);
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_02_null_attr)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    CHECK_TYPE(eps_ep(&f, srq, NULL, &ep), DAT_INVALID_PARAMETER);
    /* no user was added to the SRQ */
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_03_stale_srq)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    REQUIRE(dat_srq_free(srq) == DAT_SUCCESS);
    eps_attr(&a);
    CHECK_TYPE(eps_ep(&f, srq, &a, &ep), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPS_04_pz_difference)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_PZ_HANDLE pz2;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    r = dat_ep_create_with_srq(f.ia, pz2, f.recv_evd, f.req_evd, f.conn_evd, srq, &a, &ep);
    if (f.pr.srq_ep_pz_difference_supported) {
        CHECK_OK(r);
    } else {
        CHECK_TYPE(r, DAT_INVALID_PARAMETER);
    }
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    CHECK_OK(dat_pz_free(pz2));
    lc_close(&f);
}

TEST(EPS_05_srq_unsupported)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    if (lc_srq_supported(&f)) {
        lc_close(&f);
        SKIP("srq_supported is TRUE");
    }
    r = lc_srq(&f, f.pz, 8, &srq);
    if (r == DAT_SUCCESS) {
        /* then the EP call must refuse */
        eps_attr(&a);
        CHECK_TYPE(eps_ep(&f, srq, &a, &ep), DAT_MODEL_NOT_SUPPORTED);
    } else {
        CHECK_TYPE(r, DAT_MODEL_NOT_SUPPORTED);
    }
    lc_close(&f);
}

TEST(EPS_06_rdma_read_iov_above_ia)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    a.max_rdma_read_iov = f.ia_attr.max_iov_segments_per_rdma_read + 1;
    CHECK_TYPE(eps_ep(&f, srq, &a, &ep), DAT_INVALID_PARAMETER);
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_07_attribute_exactness)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    a.max_request_dtos = 3;
    a.max_request_iov = 1;
    a.max_message_size = 10000;
    a.max_rdma_size = 20000;
    a.max_rdma_read_in = 2;
    a.max_rdma_read_out = 1;
    REQUIRE(eps_ep(&f, srq, &a, &ep) == DAT_SUCCESS);
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p));
    CHECK(p.ep_attr.max_request_dtos >= 3);
    CHECK(p.ep_attr.max_request_iov >= 1);
    CHECK(p.ep_attr.max_message_size == 10000);
    CHECK(p.ep_attr.max_rdma_size == 20000);
    CHECK(p.ep_attr.max_rdma_read_in == 2);
    CHECK(p.ep_attr.max_rdma_read_out == 1);
    CHECK(p.ep_attr.max_recv_dtos == a.max_recv_dtos); /* ruling E19: reported back */
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_08_recv_iov_ignored)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    a.max_recv_iov = 0;
    r = eps_ep(&f, srq, &a, &ep);
    CHECK_OK(r);
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ep_free(ep));
    a.max_recv_iov = 100000;
    r = eps_ep(&f, srq, &a, &ep);
    CHECK_OK(r);
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_09_post_recv_refused)
{
    struct lc f;
    struct lc_mem m;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    REQUIRE(eps_ep(&f, srq, &a, &ep) == DAT_SUCCESS);
    REQUIRE(lc_mem(f.ia, f.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    /* [REF] INVALID_STATE; lenient: any error */
    NOT_OK(lc_post_recv(ep, &m, 0, 256, 9));
    CHECK(lc_no_event(f.recv_evd));
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_10_srq_in_use)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    REQUIRE(eps_ep(&f, srq, &a, &ep) == DAT_SUCCESS);
    /* ruling E7 */
    CHECK_SUB(dat_srq_free(srq), DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_11_modify_srq_refused)
{
    struct lc f;
    DAT_SRQ_HANDLE srq, srq2;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq2) == DAT_SUCCESS);
    eps_attr(&a);
    REQUIRE(eps_ep(&f, srq, &a, &ep) == DAT_SUCCESS);
    memset(&p, 0, sizeof(p));
    p.srq_handle = srq2;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, &p), DAT_INVALID_PARAMETER);
    p.srq_handle = DAT_HANDLE_NULL;
    CHECK_TYPE(dat_ep_modify(ep, DAT_EP_FIELD_SRQ_HANDLE, &p), DAT_INVALID_PARAMETER);
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_SRQ_HANDLE, &p));
    CHECK(p.srq_handle == srq);
    CHECK_OK(dat_srq_free(srq2));
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

/* The server sends `n` messages "<tag><seq>" of 64 bytes on its EP. */
static int eps_send_msgs(struct pair *p, DAT_EP_HANDLE ep, const struct lc_mem *m, int tag,
                         int first, int n)
{
    DAT_EVENT ev;
    for (int i = 0; i < n; i++) {
        unsigned char *b = (unsigned char *)m->buf + (size_t)i * 64;
        b[0] = (unsigned char)tag;
        b[1] = (unsigned char)(first + i);
        DAT_RETURN r = lc_post_send(ep, m, (size_t)i * 64, 64, (DAT_UINT64)(first + i));
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    send %d: post 0x%08x\n", i, (unsigned)r);
            return -1;
        }
        r = lc_wait(p->req_evd, &ev);
        if (r != DAT_SUCCESS || ev.event_number != DAT_DTO_COMPLETION_EVENT ||
            ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
            fprintf(stderr, "    send %d: wait 0x%08x event 0x%x status %d\n", i, (unsigned)r,
                    (unsigned)ev.event_number,
                    (int)ev.event_data.dto_completion_event_data.status);
            return -1;
        }
    }
    return 0;
}

TEST(EPS_12_srq_ep_reconnect_after_reset)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc f;
    struct lc_mem m;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_EP_ATTR a;
    DAT_EP_PARAM q;
    DAT_EVENT ev;
    int round, got;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    lc_close(&f);

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    if (p.server) {
        for (round = 0; round < 2; round++) {
            PREQUIRE(&p, pair_connect(&p, NULL) == 0);
            PREQUIRE(&p, pair_sync(&p, 'c') == 0);
            CHECK(eps_send_msgs(&p, p.ep, &m, 'S', round, 1) == 0);
            /* the client disconnects */
            CHECK_OK(lc_wait(p.conn_evd, &ev));
            CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
                  ev.event_number == DAT_CONNECTION_EVENT_BROKEN);
            CHECK_OK(dat_ep_free(p.ep));
            PREQUIRE(&p, pair_sync(&p, 'd') == 0);
        }
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, lc_srq(&(struct lc){.ia = p.ia}, p.pz, 8, &srq) == DAT_SUCCESS);
    for (int i = 0; i < 4; i++)
        PREQUIRE(&p, dat_srq_post_recv(srq, 1, &(DAT_LMR_TRIPLET){m.lctx, 0,
                                                                   (DAT_VADDR)(uintptr_t)((char *)m.buf + i * 256), 256},
                                       lc_cookie((DAT_UINT64)(100 + i))) == DAT_SUCCESS);
    eps_attr(&a);
    PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, srq, &a,
                                        &ep) == DAT_SUCCESS);
    for (round = 0; round < 2; round++) {
        PREQUIRE(&p, lc_pair_connect_ep(&p, ep, p.conn_evd) == 0);
        PREQUIRE(&p, pair_sync(&p, 'c') == 0);
        /* one message arrives in an SRQ buffer */
        got = 0;
        while (!got) {
            DAT_RETURN r = lc_wait(p.recv_evd, &ev);
            CHECK_OK(r);
            if (r != DAT_SUCCESS)
                break;
            CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
            if (ev.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED)
                continue; /* left over from the previous round's disconnect */
            CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
            CHECK(ev.event_data.dto_completion_event_data.ep_handle == ep);
            CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 >= 100);
            CHECK(ev.event_data.dto_completion_event_data.transfered_length == 64);
            {
                size_t off = (size_t)(ev.event_data.dto_completion_event_data.user_cookie.as_64 -
                                      100) * 256;
                unsigned char *b = (unsigned char *)m.buf + (off < 4096 ? off : 0);
                CHECK(b[0] == 'S' && b[1] == round);
            }
            got = 1;
        }
        CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG));
        CHECK_OK(lc_wait(p.conn_evd, &ev));
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
        PREQUIRE(&p, lc_wait_state(ep, DAT_EP_STATE_DISCONNECTED, 5000) == 0);
        CHECK_OK(dat_ep_reset(ep));
        CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
        memset(&q, 0, sizeof(q));
        CHECK_OK(dat_ep_query(ep, DAT_EP_FIELD_SRQ_HANDLE, &q));
        CHECK(q.srq_handle == srq);
        PREQUIRE(&p, pair_sync(&p, 'd') == 0);
    }
    pair_finish(&p);
}

/*
 * EPS-13: the server has two SRQ EPs on one SRQ and one recv EVD; two
 * clients (the pair's client, and a second process it forked before any
 * DAT call) each send 5 numbered messages.
 */
static void eps13_client2(int rfd)
{
    struct sockaddr_storage addr;
    DAT_CONN_QUAL qual;
    struct pair p2;
    struct lc_mem m;
    int fails = 0;

    memset(&p2, 0, sizeof(p2));
    p2.rx = rfd;
    if (pair_hear(&p2, &addr, sizeof(addr)) != 0 || pair_hear(&p2, &qual, sizeof(qual)) != 0) {
        fprintf(stderr, "    client 2: no server address\n");
        _exit(1);
    }
    if (pair_objects(&p2, 64) != 0) {
        fprintf(stderr, "    client 2: setup failed\n");
        _exit(1);
    }
    memcpy(&p2.server_addr, &addr, sizeof(addr));
    p2.qual = qual;
    if (pair_connect(&p2, NULL) != 0) {
        fprintf(stderr, "    client 2: connect failed\n");
        _exit(1);
    }
    if (lc_mem(p2.ia, p2.pz, 4096, LC_PRIV_LOCAL, &m) != DAT_SUCCESS) {
        fprintf(stderr, "    client 2: lmr failed\n");
        _exit(1);
    }
    if (eps_send_msgs(&p2, p2.ep, &m, 2, 0, 5) != 0) {
        fprintf(stderr, "    client 2: sends failed\n");
        fails++;
    }
    ctest_sleep_ms(200);
    _exit(fails ? 1 : 0);
}

TEST(EPS_13_two_clients_one_srq)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc f;
    struct lc_mem m;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep[2];
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    int c2pipe[2];
    pid_t c2;
    int i, owner[2] = {-1, -1}, next[3] = {0, 0, 0}, status = 0;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    lc_close(&f);

    REQUIRE(pipe(c2pipe) == 0);
    fflush(stdout);
    fflush(stderr);
    c2 = fork();
    REQUIRE(c2 >= 0);
    if (c2 == 0) {
        close(c2pipe[1]);
        eps13_client2(c2pipe[0]);
    }
    close(c2pipe[0]);

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, lc_mem(p.ia, p.pz, 8192, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    if (p.server) {
        close(c2pipe[1]);
        struct lc fx = {.ia = p.ia};
        PREQUIRE(&p, lc_srq(&fx, p.pz, 16, &srq) == DAT_SUCCESS);
        for (i = 0; i < 12; i++)
            PREQUIRE(&p, dat_srq_post_recv(srq, 1, &(DAT_LMR_TRIPLET){m.lctx, 0,
                                                                       (DAT_VADDR)(uintptr_t)((char *)m.buf + i * 256), 256},
                                           lc_cookie((DAT_UINT64)i)) == DAT_SUCCESS);
        eps_attr(&a);
        for (i = 0; i < 2; i++) {
            PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd,
                                                srq, &a, &ep[i]) == DAT_SUCCESS);
            PREQUIRE(&p, lc_pair_connect_ep(&p, ep[i], p.conn_evd) == 0);
        }
        for (i = 0; i < 10; i++) {
            DAT_RETURN r = lc_wait(p.recv_evd, &ev);
            CHECK_OK(r);
            if (r != DAT_SUCCESS)
                break;
            DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            CHECK(d->status == DAT_DTO_SUCCESS);
            int e = d->ep_handle == ep[0] ? 0 : d->ep_handle == ep[1] ? 1 : -1;
            CHECK(e >= 0);
            if (e < 0 || d->user_cookie.as_64 >= 12)
                continue;
            unsigned char *b = (unsigned char *)m.buf + d->user_cookie.as_64 * 256;
            int client = b[0], seq = b[1];
            CHECK(client == 1 || client == 2);
            if (client != 1 && client != 2)
                continue;
            if (owner[e] < 0)
                owner[e] = client;
            CHECK(owner[e] == client); /* ep_handle names the EP of that client */
            CHECK(seq == next[client]); /* in order per EP */
            next[client] = seq + 1;
        }
        CHECK(next[1] == 5 && next[2] == 5);
        PREQUIRE(&p, pair_sync(&p, 'e') == 0);
        pair_finish(&p);
        return;
    }
    /* client 1 */
    PREQUIRE(&p, pair_tell(&(struct pair){.tx = c2pipe[1]}, &p.server_addr,
                           sizeof(p.server_addr)) == 0);
    PREQUIRE(&p, pair_tell(&(struct pair){.tx = c2pipe[1]}, &p.qual, sizeof(p.qual)) == 0);
    close(c2pipe[1]);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    CHECK(eps_send_msgs(&p, p.ep, &m, 1, 0, 5) == 0);
    /* the server stays up until client 2 has seen its completions */
    for (i = 0; i < 3000; i++) {
        if (waitpid(c2, &status, WNOHANG) == c2)
            break;
        ctest_sleep_ms(10);
    }
    if (i == 3000) {
        kill(c2, SIGKILL);
        waitpid(c2, &status, 0);
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(pair_sync(&p, 'e') == 0);
    pair_finish(&p);
}

TEST(EPS_14_sharing_c5)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE epa, eps;
    DAT_EVD_HANDLE v;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    DAT_COUNT n = 0;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                           &v) == DAT_SUCCESS);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    lc_attr(&a);
    a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    REQUIRE(dat_ep_create(f.ia, f.pz, f.recv_evd, v, f.conn_evd, &a, &epa) == DAT_SUCCESS);
    eps_attr(&a);
    a.recv_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    r = dat_ep_create_with_srq(f.ia, f.pz, v, f.req_evd, f.conn_evd, srq, &a, &eps);
    CHECK_OK(r);
    CHECK_TYPE(dat_evd_wait(v, 0, 2, &ev, &n), DAT_INVALID_STATE);
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ep_free(eps));
    CHECK_OK(dat_ep_free(epa));
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

TEST(EPS_15_rdma_size_above_ia)
{
    struct lc f;
    DAT_SRQ_HANDLE srq;
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    SRQ_GATE(&f);
    REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
    eps_attr(&a);
    a.max_rdma_size = f.ia_attr.max_rdma_size + 1;
    CHECK_TYPE(eps_ep(&f, srq, &a, &ep), DAT_INVALID_PARAMETER);
    CHECK_OK(dat_srq_free(srq));
    lc_close(&f);
}

/* =========================================================================
 * §4.6 dat_ep_free
 * ========================================================================= */

TEST(EPF_01_free_unconnected)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EP_PARAM p;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_OK(dat_ep_free(ep));
    CHECK_TYPE(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPF_02_free_with_posted_recvs)
{
    struct lc f;
    struct lc_mem m;
    DAT_EP_HANDLE ep;
    DAT_EVENT ev;
    int seen[4] = {0, 0, 0, 0}, n = 0;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_mem(f.ia, f.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    for (int i = 1; i <= 3; i++)
        REQUIRE(lc_post_recv(ep, &m, (size_t)i * 512, 512, (DAT_UINT64)i) == DAT_SUCCESS);
    CHECK_OK(dat_ep_free(ep));
    ctest_sleep_ms(200);
    while (dat_evd_dequeue(f.recv_evd, &ev) == DAT_SUCCESS) {
        DAT_UINT64 c = ev.event_data.dto_completion_event_data.user_cookie.as_64;
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_ERR_FLUSHED);
        CHECK(c >= 1 && c <= 3);
        if (c >= 1 && c <= 3) {
            CHECK(seen[c] == 0);
            seen[c]++;
        }
        if (++n > 10)
            break;
    }
    CHECK(n <= 3);
    CHECK_OK(dat_lmr_free(m.lmr));
    lc_close(&f);
}

TEST(EPF_03_free_reserved)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_RSP_HANDLE rsp;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_rsp(&f, ep, &rsp) == DAT_SUCCESS);
    CHECK(lc_state(ep) == DAT_EP_STATE_RESERVED);
    CHECK_TYPE(dat_ep_free(ep), DAT_INVALID_STATE);
    CHECK(lc_state(ep) == DAT_EP_STATE_RESERVED);
    CHECK_OK(dat_rsp_free(rsp));
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPF_04_free_passive_connection_pending)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EP_HANDLE ep;
    DAT_RSP_HANDLE rsp;
    DAT_EVENT ev;
    char c;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                     DAT_SUCCESS);
    if (p.server) {
        PREQUIRE(&p, lc_pair_rsp(&p, ep, &rsp) == 0);
        PREQUIRE(&p, pair_tell(&p, "R", 1) == 0);
        PREQUIRE(&p, lc_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        CHECK(lc_state(ep) == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_TYPE(dat_ep_free(ep), DAT_INVALID_STATE);
        CHECK(lc_state(ep) == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
        CHECK_OK(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle));
        CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
        CHECK_OK(dat_ep_free(ep));
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

TEST(EPF_05_free_tentative)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EVENT ev;
    DAT_CR_PARAM crp;
    DAT_CR_HANDLE cr;
    char c;

    REQUIRE(lc_open(&f) == 0);
    if (f.pr.ep_creator == DAT_PSP_CREATES_EP_NEVER) {
        DAT_CONN_QUAL q;
        DAT_PSP_HANDLE psp;
        REQUIRE(lc_free_qual(f.ia, f.cr_evd, &q) == 0);
        /* §2.3 / §4.0 gating: no provider-created EPs */
        CHECK_TYPE(dat_psp_create(f.ia, q, f.cr_evd, DAT_PSP_PROVIDER_FLAG, &psp),
                   DAT_MODEL_NOT_SUPPORTED);
        lc_close(&f);
        return;
    }
    lc_close(&f);

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    if (p.server) {
        DAT_PSP_HANDLE psp;
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
        CHECK_TYPE(dat_ep_free(ep), DAT_INVALID_STATE);
        CHECK_OK(dat_cr_reject(cr));
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'R');
    PREQUIRE(&p, lc_pair_connect_start(&p, ep) == DAT_SUCCESS);
    CHECK_OK(lc_wait(p.conn_evd, &ev));
    CHECK(ev.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPF_06_free_connected)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EVENT ev;
    double t0;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (p.server) {
        PREQUIRE(&p, pair_sync(&p, 'c') == 0);
        CHECK_OK(lc_wait(p.conn_evd, &ev));
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
              ev.event_number == DAT_CONNECTION_EVENT_BROKEN);
        CHECK(ev.event_data.connect_event_data.ep_handle == p.ep);
        CHECK(lc_state(p.ep) == DAT_EP_STATE_DISCONNECTED);
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, pair_sync(&p, 'c') == 0);
    CHECK(lc_state(p.ep) == DAT_EP_STATE_CONNECTED);
    t0 = ctest_now();
    CHECK_OK(dat_ep_free(p.ep));
    CHECK(ctest_now() - t0 < 5.0);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPF_07_free_active_connection_pending)
{
    struct pair p;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    DAT_EP_HANDLE ep;
    DAT_EVENT ev;
    DAT_RETURN r;
    char c;

    PREQUIRE(&p, lc_pair_start(&p, &ia_attr, &pr) == 0);
    if (p.server) {
        /* hold the CR until the client has freed its EP */
        PREQUIRE(&p, lc_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        PREQUIRE(&p, ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        PREQUIRE(&p, pair_tell(&p, "C", 1) == 0);
        PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'F');
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                         DAT_SUCCESS);
        r = dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL);
        if (r == DAT_SUCCESS) {
            CHECK_OK(lc_wait(p.conn_evd, &ev));
            CHECK(ev.event_number == DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
        } else {
            CHECK((r & DAT_CLASS_ERROR) != 0);
        }
        PREQUIRE(&p, pair_sync(&p, 'x') == 0);
        pair_finish(&p);
        return;
    }
    PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                     DAT_SUCCESS);
    PREQUIRE(&p, lc_pair_connect_start(&p, ep) == DAT_SUCCESS);
    PREQUIRE(&p, pair_hear(&p, &c, 1) == 0 && c == 'C');
    CHECK(lc_state(ep) == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
    CHECK_OK(dat_ep_free(ep));
    CHECK(pair_tell(&p, "F", 1) == 0);
    CHECK(pair_sync(&p, 'x') == 0);
    pair_finish(&p);
}

TEST(EPF_08_free_disconnected)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_make_disconnected(&f, ep, f.conn_evd) == 0);
    CHECK_OK(dat_ep_free(ep));
    CHECK_TYPE(dat_ep_reset(ep), DAT_INVALID_HANDLE);
    lc_close(&f);
}

TEST(EPF_09_double_free)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_OK(dat_ep_free(ep));
    CHECK_TYPE(dat_ep_free(ep), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ep_free(ep), DAT_INVALID_HANDLE);
    /* the IA is intact */
    CHECK_OK(lc_ep_default(&f, &ep));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPF_10_free_null)
{
    /* libdat's pre-check (abi-errors.md §5) */
    CHECK_RET(dat_ep_free(DAT_HANDLE_NULL), 0x8005000C);
}

TEST(EPF_11_references_released)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    if (lc_srq_supported(&f)) {
        REQUIRE(lc_srq(&f, f.pz, 8, &srq) == DAT_SUCCESS);
        eps_attr(&a);
        REQUIRE(eps_ep(&f, srq, &a, &ep) == DAT_SUCCESS);
    } else {
        REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    }
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_evd_free(f.recv_evd));
    CHECK_OK(dat_evd_free(f.req_evd));
    CHECK_OK(dat_evd_free(f.conn_evd));
    if (srq != DAT_HANDLE_NULL)
        CHECK_OK(dat_srq_free(srq));
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_evd_free(f.cr_evd));
    /* nothing is left: a graceful close succeeds */
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
}

/* =========================================================================
 * semantics-core.md tests that need an EP
 * ========================================================================= */

TEST(PZF_04_pz_in_use_by_ep)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free(f.pz), DAT_INVALID_STATE);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_pz_free(f.pz));
    lc_close(&f);
}

TEST(EFR_04_evd_in_use_as_recv_evd)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EVD_HANDLE x;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &x) == DAT_SUCCESS);
    lc_attr(&a);
    REQUIRE(dat_ep_create(f.ia, f.pz, x, f.req_evd, f.conn_evd, &a, &ep) == DAT_SUCCESS);
    CHECK_SUB(dat_evd_free(x), DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_evd_free(x));
    lc_close(&f);
}

TEST(EFR_05_evd_in_use_as_request_and_connect_evd)
{
    struct lc f;
    DAT_EP_HANDLE ep1, ep2;
    DAT_EVD_HANDLE rq, cn;
    DAT_EP_ATTR a;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                           &rq) == DAT_SUCCESS);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &cn) ==
            DAT_SUCCESS);
    lc_attr(&a);
    REQUIRE(dat_ep_create(f.ia, f.pz, f.recv_evd, rq, f.conn_evd, &a, &ep1) == DAT_SUCCESS);
    REQUIRE(dat_ep_create(f.ia, f.pz, f.recv_evd, f.req_evd, cn, &a, &ep2) == DAT_SUCCESS);
    CHECK_SUB(dat_evd_free(rq), DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    CHECK_SUB(dat_evd_free(cn), DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    CHECK_OK(dat_ep_free(ep1));
    CHECK_OK(dat_evd_free(rq));
    CHECK_SUB(dat_evd_free(cn), DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_IN_USE);
    CHECK_OK(dat_ep_free(ep2));
    CHECK_OK(dat_evd_free(cn));
    lc_close(&f);
}

TEST(EWT_24_threshold_with_unsignalled_request_stream)
{
    struct lc f;
    DAT_EP_HANDLE ep;
    DAT_EVD_HANDLE rq;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    DAT_COUNT n = 0;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(dat_evd_create(f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                           &rq) == DAT_SUCCESS);
    lc_attr(&a);
    a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    REQUIRE(dat_ep_create(f.ia, f.pz, f.recv_evd, rq, f.conn_evd, &a, &ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_evd_wait(rq, 0, 2, &ev, &n), DAT_INVALID_STATE);
    /* threshold 1 stays legal (an empty EVD just times out) */
    CHECK_TYPE(dat_evd_wait(rq, 0, 1, &ev, &n), DAT_TIMEOUT_EXPIRED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(GHT_02_handle_types_ep_psp_rsp)
{
    struct lc f;
    DAT_EP_HANDLE ep, ep2;
    DAT_PSP_HANDLE psp;
    DAT_RSP_HANDLE rsp;
    DAT_CONN_QUAL q;
    DAT_HANDLE_TYPE t;
    DAT_RETURN r;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    t = (DAT_HANDLE_TYPE)-1;
    CHECK_OK(dat_get_handle_type(ep, &t));
    CHECK(t == DAT_HANDLE_TYPE_EP);
    CHECK(t == 1);
    r = dat_psp_create_any(f.ia, &q, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp);
    if (r == DAT_SUCCESS) {
        t = (DAT_HANDLE_TYPE)-1;
        CHECK_OK(dat_get_handle_type(psp, &t));
        CHECK(t == DAT_HANDLE_TYPE_PSP);
        CHECK(t == 5);
        CHECK_OK(dat_psp_free(psp));
    } else {
        fprintf(stderr, "    (no PSP: 0x%08x)\n", (unsigned)r);
    }
    REQUIRE(lc_ep_default(&f, &ep2) == DAT_SUCCESS);
    r = lc_rsp(&f, ep2, &rsp);
    if (r == DAT_SUCCESS) {
        t = (DAT_HANDLE_TYPE)-1;
        CHECK_OK(dat_get_handle_type(rsp, &t));
        CHECK(t == DAT_HANDLE_TYPE_RSP);
        CHECK(t == 8);
        CHECK_OK(dat_rsp_free(rsp));
    } else {
        fprintf(stderr, "    (no RSP: 0x%08x)\n", (unsigned)r);
    }
    CHECK_OK(dat_ep_free(ep2));
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

/* =========================================================================
 * Bad EP handles for every EP-taking lifecycle call (rulings.md rule 1)
 * ========================================================================= */

enum eph_kind { EPH_EXACT, EPH_TYPE };

/* Calls every EP-taking lifecycle function with h (dat_ep_free last). */
static void eph_sweep(DAT_EP_HANDLE h, enum eph_kind kind, const char *what)
{
    DAT_EP_PARAM p;
    DAT_EP_STATE s;
    DAT_BOOLEAN ri, qi;
    DAT_COUNT nb, span;
    struct {
        const char *name;
        DAT_RETURN r;
    } res[8];
    int n = 0, i;

    memset(&p, 0, sizeof(p));
    p.ep_attr.max_recv_dtos = 4;
    res[n].name = "dat_ep_get_status";
    res[n++].r = dat_ep_get_status(h, &s, &ri, &qi);
    res[n].name = "dat_ep_query";
    res[n++].r = dat_ep_query(h, DAT_EP_FIELD_ALL, &p);
    memset(&p, 0, sizeof(p));
    p.ep_attr.max_recv_dtos = 4;
    res[n].name = "dat_ep_modify";
    res[n++].r = dat_ep_modify(h, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p);
    res[n].name = "dat_ep_recv_query";
    res[n++].r = dat_ep_recv_query(h, &nb, &span);
    res[n].name = "dat_ep_reset";
    res[n++].r = dat_ep_reset(h);
    res[n].name = "dat_ep_set_watermark";
    res[n++].r = dat_ep_set_watermark(h, DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE);
    res[n].name = "dat_ep_free";
    res[n++].r = dat_ep_free(h);
    for (i = 0; i < n; i++) {
        int bad = kind == EPH_EXACT ? res[i].r != 0x8005000Cu
                                    : (DAT_GET_TYPE(res[i].r) != DAT_INVALID_HANDLE ||
                                       (res[i].r & DAT_CLASS_ERROR) == 0);
        if (bad) {
            fprintf(stderr, "    %s(%s): got 0x%08x, want %s\n", res[i].name, what,
                    (unsigned)res[i].r,
                    kind == EPH_EXACT ? "exactly 0x8005000c" : "DAT_INVALID_HANDLE");
            ctest_failures++;
        }
    }
}

TEST(EPH_01_null_handle)
{
    /* libdat's pre-check: exactly DAT_INVALID_HANDLE | DAT_INVALID_HANDLE_EP */
    eph_sweep(DAT_HANDLE_NULL, EPH_EXACT, "NULL");
}

TEST(EPH_02_misaligned_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep;

    eph_sweep((DAT_EP_HANDLE)(uintptr_t)0x13, EPH_EXACT, "0x13");
    eph_sweep((DAT_EP_HANDLE)(uintptr_t)0x1001, EPH_EXACT, "0x1001");
    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    eph_sweep((DAT_EP_HANDLE)((char *)ep + 1), EPH_EXACT, "live EP + 1");
    eph_sweep((DAT_EP_HANDLE)((char *)ep + 2), EPH_EXACT, "live EP + 2");
    eph_sweep((DAT_EP_HANDLE)((char *)ep + 3), EPH_EXACT, "live EP + 3");
    /* the live EP was not touched */
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPH_03_garbage_handle)
{
    struct lc f;
    struct {
        uint64_t w[32];
    } junk;
    uint64_t *heap;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    memset(&junk, 0x5A, sizeof(junk));
    eph_sweep((DAT_EP_HANDLE)&junk, EPH_TYPE, "local struct (0x5A)");
    memset(&junk, 0, sizeof(junk));
    eph_sweep((DAT_EP_HANDLE)&junk, EPH_TYPE, "local struct (zeros)");
    /* a copy of the handle's bytes is not a handle either */
    memset(&junk, 0, sizeof(junk));
    memcpy(&junk, &ep, sizeof(ep));
    eph_sweep((DAT_EP_HANDLE)&junk, EPH_TYPE, "local struct holding the handle");
    heap = malloc(4096);
    REQUIRE(heap != NULL);
    memset(heap, 0xC3, 4096);
    eph_sweep((DAT_EP_HANDLE)heap, EPH_TYPE, "heap block");
    free(heap);
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    lc_close(&f);
}

TEST(EPH_04_freed_handle)
{
    struct lc f;
    DAT_EP_HANDLE ep, ep2;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    REQUIRE(lc_ep_default(&f, &ep2) == DAT_SUCCESS);
    CHECK_OK(dat_ep_free(ep));
    eph_sweep(ep, EPH_TYPE, "freed EP");
    /* another EP is unaffected */
    CHECK(lc_state(ep2) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep2));
    eph_sweep(ep2, EPH_TYPE, "second freed EP");
    lc_close(&f);
}

TEST(EPH_05_wrong_type_handle)
{
    struct lc f;
    struct lc_mem m;
    DAT_PZ_PARAM pzp;
    DAT_EVD_PARAM evp;
    DAT_LMR_PARAM lp;
    DAT_IA_ATTR ia_attr;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q;
    DAT_PSP_PARAM pp;
    DAT_EP_HANDLE ep;

    REQUIRE(lc_open(&f) == 0);
    REQUIRE(lc_mem(f.ia, f.pz, 4096, LC_PRIV_LOCAL, &m) == DAT_SUCCESS);
    REQUIRE(dat_psp_create_any(f.ia, &q, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    REQUIRE(lc_ep_default(&f, &ep) == DAT_SUCCESS);
    eph_sweep((DAT_EP_HANDLE)f.pz, EPH_TYPE, "PZ");
    eph_sweep((DAT_EP_HANDLE)f.recv_evd, EPH_TYPE, "EVD");
    eph_sweep((DAT_EP_HANDLE)f.async_evd, EPH_TYPE, "async EVD");
    eph_sweep((DAT_EP_HANDLE)f.ia, EPH_TYPE, "IA");
    eph_sweep((DAT_EP_HANDLE)m.lmr, EPH_TYPE, "LMR");
    eph_sweep((DAT_EP_HANDLE)psp, EPH_TYPE, "PSP");
    /* every object survived being passed as an EP (dat_ep_free included) */
    CHECK_OK(dat_pz_query(f.pz, DAT_PZ_FIELD_ALL, &pzp));
    CHECK_OK(dat_evd_query(f.recv_evd, DAT_EVD_FIELD_ALL, &evp));
    CHECK_OK(dat_evd_query(f.async_evd, DAT_EVD_FIELD_ALL, &evp));
    CHECK_OK(dat_ia_query(f.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL));
    CHECK_OK(dat_lmr_query(m.lmr, DAT_LMR_FIELD_ALL, &lp));
    CHECK_OK(dat_psp_query(psp, DAT_PSP_FIELD_ALL, &pp));
    CHECK(lc_state(ep) == DAT_EP_STATE_UNCONNECTED);
    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_psp_free(psp));
    CHECK_OK(dat_lmr_free(m.lmr));
    lc_close(&f);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
