/*
 * End-to-end smoke test of the endpoint layer: two processes connect
 * through a PSP, exchange a Send, do an RDMA Write and an RDMA Read into
 * an exported LMR, and disconnect. Data is checked byte for byte.
 */
#include "ctest.h"
#include "pair.h"

#define N 65536

struct region {
    DAT_RMR_CONTEXT ctx;
    DAT_VADDR addr;
    DAT_VLEN len;
};

static DAT_LMR_HANDLE mk_lmr(struct pair *p, void *buf, DAT_VLEN len, DAT_LMR_CONTEXT *lctx,
                             DAT_RMR_CONTEXT *rctx)
{
    DAT_REGION_DESCRIPTION r;
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_VLEN rlen;
    DAT_VADDR raddr;
    r.for_va = buf;
    if (dat_lmr_create(p->ia, DAT_MEM_TYPE_VIRTUAL, r, len, p->pz,
                       DAT_MEM_PRIV_ALL_FLAG, &lmr, lctx, rctx, &rlen, &raddr))
        return DAT_HANDLE_NULL;
    return lmr;
}

/* Lowers the attributes to what the IA allows (siw reads into one
 * segment: max_iov_segments_per_rdma_read 1). */
static void fit_ia(DAT_EP_ATTR *a, DAT_IA_HANDLE ia)
{
    DAT_IA_ATTR ia_attr;
    memset(&ia_attr, 0, sizeof(ia_attr));
    if (dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL) != DAT_SUCCESS)
        return;
    if (ia_attr.max_iov_segments_per_rdma_read > 0 &&
        a->max_rdma_read_iov > ia_attr.max_iov_segments_per_rdma_read)
        a->max_rdma_read_iov = ia_attr.max_iov_segments_per_rdma_read;
    if (ia_attr.max_iov_segments_per_rdma_write > 0 &&
        a->max_rdma_write_iov > ia_attr.max_iov_segments_per_rdma_write)
        a->max_rdma_write_iov = ia_attr.max_iov_segments_per_rdma_write;
}

static DAT_EP_ATTR rdma_attr(void)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = 1 << 20;
    a.max_rdma_size = 1 << 22; /* within rxe's 8 MiB messages */
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.max_recv_dtos = 16;
    a.max_request_dtos = 16;
    a.max_recv_iov = 4;
    a.max_request_iov = 4;
    a.max_rdma_read_in = 4;
    a.max_rdma_read_out = 4;
    a.max_rdma_read_iov = 4;
    a.max_rdma_write_iov = 4;
    return a;
}

TEST(E2E_SMOKE_send_write_read)
{
    DAT_EP_ATTR attr = rdma_attr();
    struct pair p;
    REQUIRE(pair_start(&p) == 0);
    fit_ia(&attr, p.ia);
    static unsigned char buf[N], msg[256];
    DAT_LMR_CONTEXT lctx, mctx;
    DAT_RMR_CONTEXT rctx, mrctx;
    DAT_LMR_HANDLE lmr = mk_lmr(&p, buf, N, &lctx, &rctx);
    DAT_LMR_HANDLE mlmr = mk_lmr(&p, msg, sizeof(msg), &mctx, &mrctx);
    REQUIRE(lmr != DAT_HANDLE_NULL && mlmr != DAT_HANDLE_NULL);
    DAT_EVENT ev;
    DAT_LMR_TRIPLET mt = {mctx, 0, (DAT_VADDR)(uintptr_t)msg, sizeof(msg)};
    DAT_DTO_COOKIE ck;
    if (p.server) {
        for (int i = 0; i < N; i++)
            buf[i] = (unsigned char)(i * 7);
        REQUIRE(pair_connect(&p, &attr) == 0);
        struct region r = {rctx, (DAT_VADDR)(uintptr_t)buf, N};
        memcpy(msg, &r, sizeof(r));
        ck.as_64 = 11;
        mt.segment_length = sizeof(r);
        CHECK_OK(dat_ep_post_send(p.ep, 1, &mt, ck, DAT_COMPLETION_DEFAULT_FLAG));
        REQUIRE(pair_wait(p.req_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 11);
        CHECK(ev.event_data.dto_completion_event_data.transfered_length == sizeof(r));
        /* the client writes the region's second half with the inverse, then says so */
        char tag;
        REQUIRE(pair_hear(&p, &tag, 1) == 0);
        for (int i = N / 2; i < N; i++)
            CHECK(buf[i] == (unsigned char)~(i * 7));
        REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
    } else {
        ck.as_64 = 22;
        CHECK_OK(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &attr, &p.ep));
        CHECK_OK(dat_ep_post_recv(p.ep, 1, &mt, ck, DAT_COMPLETION_DEFAULT_FLAG));
        CHECK_OK(dat_ep_connect(p.ep, (DAT_IA_ADDRESS_PTR)&p.server_addr, p.qual, PAIR_WAIT_US,
                                0, NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
        REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        REQUIRE(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        REQUIRE(pair_wait(p.recv_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 22);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        struct region r;
        memcpy(&r, msg, sizeof(r));
        CHECK(r.len == N);
        /* RDMA Read the whole region */
        DAT_LMR_TRIPLET lt = {lctx, 0, (DAT_VADDR)(uintptr_t)buf, N};
        DAT_RMR_TRIPLET rt = {r.ctx, 0, r.addr, N};
        ck.as_64 = 33;
        CHECK_OK(dat_ep_post_rdma_read(p.ep, 1, &lt, ck, &rt, DAT_COMPLETION_DEFAULT_FLAG));
        REQUIRE(pair_wait(p.req_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.transfered_length == N);
        for (int i = 0; i < N; i++)
            CHECK(buf[i] == (unsigned char)(i * 7));
        /* RDMA Write the second half back, inverted */
        for (int i = N / 2; i < N; i++)
            buf[i] = (unsigned char)~(i * 7);
        DAT_LMR_TRIPLET wt = {lctx, 0, (DAT_VADDR)(uintptr_t)(buf + N / 2), N / 2};
        DAT_RMR_TRIPLET rw = {r.ctx, 0, r.addr + N / 2, N / 2};
        ck.as_64 = 44;
        CHECK_OK(dat_ep_post_rdma_write(p.ep, 1, &wt, ck, &rw, DAT_COMPLETION_DEFAULT_FLAG));
        REQUIRE(pair_wait(p.req_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 44);
        REQUIRE(pair_tell(&p, "w", 1) == 0);
        ctest_sleep_ms(100);
        CHECK_OK(dat_ep_disconnect(p.ep, DAT_CLOSE_GRACEFUL_FLAG));
        REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
    }
    pair_finish(&p);
}

/*
 * CNW-01 with a DTO EVD: a receive completes while the client is busy
 * elsewhere (the progress thread places it; the CQ's notification triggers
 * the CNO with nobody waiting). The completion is still in the CQ, not yet
 * an event: dat_cno_wait must count it as pending and return DAT_SUCCESS
 * with the EVD, not sleep until its timeout (DAT_QUEUE_EMPTY).
 */
TEST(CNW_01_dto_completion_not_yet_dequeued_is_pending)
{
    DAT_EP_ATTR attr = rdma_attr();
    struct pair p;
    REQUIRE(pair_start(&p) == 0);
    fit_ia(&attr, p.ia);
    static unsigned char msg[64];
    DAT_LMR_CONTEXT mctx;
    DAT_RMR_CONTEXT mrctx;
    DAT_LMR_HANDLE mlmr = mk_lmr(&p, msg, sizeof(msg), &mctx, &mrctx);
    REQUIRE(mlmr != DAT_HANDLE_NULL);
    DAT_EVENT ev;
    DAT_LMR_TRIPLET mt = {mctx, 0, (DAT_VADDR)(uintptr_t)msg, sizeof(msg)};
    DAT_DTO_COOKIE ck;
    char tag;
    if (p.server) {
        REQUIRE(pair_connect(&p, &attr) == 0);
        REQUIRE(pair_hear(&p, &tag, 1) == 0);
        memset(msg, 0x5a, sizeof(msg));
        ck.as_64 = 7;
        CHECK_OK(dat_ep_post_send(p.ep, 1, &mt, ck, DAT_COMPLETION_DEFAULT_FLAG));
        /* Completed: the client's side has placed it (acknowledged). */
        REQUIRE(pair_wait(p.req_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        REQUIRE(pair_tell(&p, "d", 1) == 0);
        REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
    } else {
        DAT_CNO_HANDLE cno;
        ck.as_64 = 8;
        CHECK_OK(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &attr, &p.ep));
        CHECK_OK(dat_ep_post_recv(p.ep, 1, &mt, ck, DAT_COMPLETION_DEFAULT_FLAG));
        CHECK_OK(dat_ep_connect(p.ep, (DAT_IA_ADDRESS_PTR)&p.server_addr, p.qual, PAIR_WAIT_US,
                                0, NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
        REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        REQUIRE(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        REQUIRE(dat_cno_create(p.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
        CHECK_OK(dat_evd_modify_cno(p.recv_evd, cno));
        REQUIRE(pair_tell(&p, "s", 1) == 0);
        REQUIRE(pair_hear(&p, &tag, 1) == 0);
        ctest_sleep_ms(20);
        DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
        CHECK_RET(dat_cno_wait(cno, 2000000, &e), DAT_SUCCESS);
        CHECK(e == p.recv_evd);
        CHECK_OK(dat_evd_dequeue(p.recv_evd, &ev));
        CHECK(ev.event_data.dto_completion_event_data.user_cookie.as_64 == 8);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHECK(msg[0] == 0x5a && msg[sizeof(msg) - 1] == 0x5a);
        CHECK_OK(dat_evd_modify_cno(p.recv_evd, DAT_HANDLE_NULL));
        CHECK_OK(dat_cno_free(cno));
        CHECK_OK(dat_ep_disconnect(p.ep, DAT_CLOSE_GRACEFUL_FLAG));
        REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
    }
    pair_finish(&p);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
