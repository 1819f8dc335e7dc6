/*
 * DTO completion semantics of semantics-ep.md §3 that the per-function IDs
 * do not cover on their own (named E2E_DTO_S3x_… after the subsection):
 *
 *   §3.2/§3.3  an error status breaks the connection; later DTOs in that
 *              direction fail too; every DTO completes exactly once
 *   §3.3.7     a flush is a notification even when posted UNSIGNALLED
 *   §3.4       on an EVD shared by the connect and request streams, DTO
 *              completions come before DISCONNECTED
 *   §3.5       SOLICITED_WAIT accepted on RDMA; UNSIGNALLED receives;
 *              dat_evd_wait threshold > 1 on an UNSIGNALLED stream's EVD
 *   §3.6       the IOV array is the consumer's again when the post returns;
 *              RDMA larger than max_rdma_size
 */
#include "dto_helpers.h"

TEST(E2E_DTO_S32_error_status_breaks_and_flushes_later_dtos)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 3 * 4096, LRW, &m) == DAT_SUCCESS);
        CHECK_OK(recv1(p.ep, &m, 0, 100, 0xA, 0));
        CHECK_OK(recv1(p.ep, &m, 4096, 4096, 0xB, 0));
        CHECK_OK(recv1(p.ep, &m, 8192, 4096, 0xC, 0));
        PSYNC(&p, 'r');
        EXPECT_DTO(p.recv_evd, p.ep, 0xA, too_short_status(p.ia), LEN_ANY);
        /* the connection broke: the later receives are flushed, once each */
        EXPECT_DTO(p.recv_evd, p.ep, 0xB, DAT_DTO_ERR_FLUSHED, LEN_ANY);
        EXPECT_DTO(p.recv_evd, p.ep, 0xC, DAT_DTO_ERR_FLUSHED, LEN_ANY);
        EXPECT_CONN(p.conn_evd, p.ep, DAT_CONNECTION_EVENT_BROKEN, 0);
        CHECK(ep_state(p.ep) == DAT_EP_STATE_DISCONNECTED);
        EXPECT_NONE(p.recv_evd);
        /* and a receive posted now is flushed at once */
        CHECK_OK(recv1(p.ep, &m, 0, 64, 0xD, 0));
        EXPECT_DTO(p.recv_evd, p.ep, 0xD, DAT_DTO_ERR_FLUSHED, LEN_ANY);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        CHECK_OK(send1(p.ep, &m, 0, 200, 1, 0));
        CHECK_OK(send1(p.ep, &m, 0, 10, 2, 0));
        CHECK_OK(send1(p.ep, &m, 0, 10, 3, 0));
        /* the first fails; the ones behind it in the same direction fail
         * too. On iWARP a Send completes once the transport took it, so
         * any of them may complete successfully before the receiver's
         * length error breaks the connection (docs/verbs.md) */
        {
            int iwarp = pair_ia_says(p.ia, "link", "iWARP");
            EXPECT_DTO(p.req_evd, p.ep, 1, iwarp ? ST_ANY : ST_ANY_ERROR, LEN_ANY);
            EXPECT_DTO(p.req_evd, p.ep, 2, iwarp ? ST_ANY : ST_ANY_ERROR, LEN_ANY);
            EXPECT_DTO(p.req_evd, p.ep, 3, iwarp ? ST_ANY : ST_ANY_ERROR, LEN_ANY);
        }
        EXPECT_GONE(p.conn_evd, p.ep);
        EXPECT_NONE(p.req_evd);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(E2E_DTO_S33_flush_is_a_notification_even_unsignalled)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0);
    a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    PREQUIRE(&p, pair_disconnect(&p) == 0);
    if (!p.server) {
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        PREQUIRE(&p, start_evd_waiter(&W[0], p.req_evd, 5 * SEC, 1));
        settle_evd_waiter(&W[0]);
        CHECK_OK(send1(p.ep, &m, 0, 16, 0x33, DAT_COMPLETION_UNSIGNALLED_FLAG));
        PREQUIRE(&p, waiter_finish(&W[0], 8.0));
        CHECK_OK(W[0].ret);
        CHECK(W[0].t_ret - W[0].t_call < 4.0);
        if (W[0].ret == DAT_SUCCESS)
            check_dto_ev_at(__FILE__, __LINE__, &W[0].ev, p.req_evd, p.ep, 0x33,
                            DAT_DTO_ERR_FLUSHED, LEN_ANY);
    }
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(E2E_DTO_S33_reset_after_disconnect_adds_no_late_flushes)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (!p.server) {
        struct mr m;
        PREQUIRE(&p, post_recvs(&p, p.ep, &m, 5, 64, 0x500) == 0);
    }
    PSYNC(&p, 'r');
    PREQUIRE(&p, pair_disconnect(&p) == 0);
    if (!p.server) {
        int seen[5] = {0}, n = 0;
        DAT_EVENT ev;
        DAT_BOOLEAN ri = DAT_FALSE, qi = DAT_FALSE;
        DAT_EP_STATE st;
        CHECK_OK(dat_ep_reset(p.ep));
        CHECK(ep_state(p.ep) == DAT_EP_STATE_UNCONNECTED);
        /* events already queued may stay (§3.3 rule 4); nothing new comes later */
        ctest_sleep_ms(300);
        while (dat_evd_dequeue(p.recv_evd, &ev) == DAT_SUCCESS) {
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            if (check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep, d->user_cookie.as_64,
                                DAT_DTO_ERR_FLUSHED, LEN_ANY) &&
                d->user_cookie.as_64 >= 0x500 && d->user_cookie.as_64 < 0x505)
                seen[d->user_cookie.as_64 - 0x500]++;
            n++;
        }
        for (int i = 0; i < 5; i++)
            CHECK(seen[i] <= 1);
        CHECK(n <= 5);
        EXPECT_NONE(p.recv_evd);
        CHECK_OK(dat_ep_get_status(p.ep, &st, &ri, &qi));
        CHECK(ri == DAT_TRUE && qi == DAT_TRUE);
    }
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(E2E_DTO_S33_free_of_connected_ep_generates_no_events)
{
    struct pair p;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, pair_connect(&p, NULL) == 0);
    if (!p.server) {
        struct mr m;
        PREQUIRE(&p, post_recvs(&p, p.ep, &m, 5, 64, 0x600) == 0);
        PSYNC(&p, 'r');
        CHECK_OK(dat_ep_free(p.ep));
        /* §3.3 rule 5 [REC]: no new event for a freed EP */
        expect_none_at(__FILE__, __LINE__, p.recv_evd, 300);
        EXPECT_NONE(p.req_evd);
        EXPECT_NONE(p.conn_evd);
        PSYNC(&p, 'f');
    } else {
        PSYNC(&p, 'r');
        EXPECT_GONE(p.conn_evd, p.ep);
        PSYNC(&p, 'f');
    }
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(E2E_DTO_S34_completions_before_disconnected_on_shared_evd)
{
    struct pair p;
    DAT_EP_ATTR a;
    DAT_PROVIDER_ATTR pa;
    DAT_EVD_HANDLE shared = DAT_HANDLE_NULL;
    enum { N = 10 };
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, ia_attrs(p.ia, NULL, &pa) == 0 && dto_attr(&p, &a) == 0);
    if (!pa.evd_stream_merging_supported[2][3])
        PSKIP(&p, "provider does not merge DTO and connection streams");
    if (!p.server) {
        PREQUIRE(&p, new_evd(&p, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG |
                                     DAT_EVD_CONNECTION_FLAG,
                             64, &shared) == 0);
        p.req_evd = p.conn_evd = shared;
        a.request_completion_flags = DAT_COMPLETION_EVD_THRESHOLD_FLAG; /* C2 */
    }
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m;
        PREQUIRE(&p, post_recvs(&p, p.ep, &m, N, 64, 0) == 0);
        PSYNC(&p, 'r');
        for (int i = 0; i < N; i++)
            EXPECT_DTO(p.recv_evd, p.ep, (uint64_t)i, DAT_DTO_SUCCESS, 32);
        EXPECT_GONE(p.conn_evd, p.ep);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        int dtos = 0, disc = 0;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        for (int i = 0; i < N; i++)
            CHECK_OK(send1(p.ep, &m, 0, 32, (uint64_t)i, 0));
        CHECK_OK(dat_ep_disconnect(p.ep, DAT_CLOSE_GRACEFUL_FLAG));
        while (dtos + disc < N + 1) {
            DAT_EVENT ev;
            if (!GET_EV(shared, &ev))
                break;
            if (ev.event_number == DAT_DTO_COMPLETION_EVENT) {
                if (disc)
                    CHECK(!"a DTO completion after DISCONNECTED");
                check_dto_ev_at(__FILE__, __LINE__, &ev, shared, p.ep, (uint64_t)dtos,
                                DAT_DTO_SUCCESS, 32);
                dtos++;
            } else if (ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED &&
                       ev.event_data.connect_event_data.ep_handle == p.ep) {
                disc++;
            } else {
                ev_print(&ev);
                CHECK(!"unexpected event");
                break;
            }
        }
        CHECK(dtos == N && disc == 1);
        EXPECT_NONE(shared);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(E2E_DTO_S35_solicited_wait_accepted_on_rdma)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr reg;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW | RRW, &reg) == DAT_SUCCESS);
        fill_pat(reg.buf, 4096, 35);
        r = rtr_of(&reg, 0, 8192);
        PREQUIRE(&p, tell_rtr(&p, &r) == 0);
        PSYNC(&p, 'd');
        CHECK_PAT(reg.buf + 4096, 4096, 36, 0);
    } else {
        struct mr l;
        DAT_RMR_TRIPLET r, r1, r2;
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 8192, LRW, &l) == DAT_SUCCESS);
        fill_pat(l.buf + 4096, 4096, 36);
        r1 = r;
        r1.segment_length = 4096;
        r2 = r1;
        r2.target_address += 4096;
        CHECK_OK(read1(p.ep, &l, 0, 4096, &r1, 0x351, DAT_COMPLETION_SOLICITED_WAIT_FLAG));
        CHECK_OK(write1(p.ep, &l, 4096, 4096, &r2, 0x352, DAT_COMPLETION_SOLICITED_WAIT_FLAG));
        if (EXPECT_DTO(p.req_evd, p.ep, 0x351, DAT_DTO_SUCCESS, 4096))
            CHECK_PAT(l.buf, 4096, 35, 0);
        EXPECT_DTO(p.req_evd, p.ep, 0x352, DAT_DTO_SUCCESS, 4096);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(E2E_DTO_S35_unsignalled_receive)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0);
    if (p.server)
        a.recv_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG; /* ruling E20 */
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m;
        DAT_EVENT ev;
        char go;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 256, LRW, &m) == DAT_SUCCESS);
        CHECK_OK(recv1(p.ep, &m, 0, 64, 0x3A, DAT_COMPLETION_UNSIGNALLED_FLAG));
        CHECK_OK(recv1(p.ep, &m, 64, 64, 0x3B, 0));
        PSYNC(&p, 'r');
        PREQUIRE(&p, start_evd_waiter(&W[0], p.recv_evd, 1 * SEC, 1));
        settle_evd_waiter(&W[0]);
        go = '1';
        PREQUIRE(&p, pair_tell(&p, &go, 1) == 0);
        PREQUIRE(&p, waiter_finish(&W[0], 6.0));
        CHECK_TYPE(W[0].ret, DAT_TIMEOUT_EXPIRED);
        CHECK(W[0].nmore == 1);
        memset(&ev, 0, sizeof(ev));
        CHECK_OK(dat_evd_dequeue(p.recv_evd, &ev));
        check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep, 0x3A, DAT_DTO_SUCCESS, 16);
        PREQUIRE(&p, start_evd_waiter(&W[1], p.recv_evd, 5 * SEC, 1));
        settle_evd_waiter(&W[1]);
        go = '2';
        PREQUIRE(&p, pair_tell(&p, &go, 1) == 0);
        PREQUIRE(&p, waiter_finish(&W[1], 8.0));
        CHECK_OK(W[1].ret);
        CHECK(W[1].t_ret - W[1].t_call < 4.0);
        if (W[1].ret == DAT_SUCCESS)
            check_dto_ev_at(__FILE__, __LINE__, &W[1].ev, p.recv_evd, p.ep, 0x3B, DAT_DTO_SUCCESS,
                            16);
        /* an UNSIGNALLED receive stream's EVD refuses threshold > 1 */
        CHECK_TYPE(dat_evd_wait(p.recv_evd, 0, 2, &ev, &(DAT_COUNT){0}), DAT_INVALID_STATE);
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        char go = 0;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &m) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        for (int i = 0; i < 2; i++) {
            PREQUIRE(&p, pair_hear(&p, &go, 1) == 0);
            CHECK_OK(send1(p.ep, &m, 0, 16, 0x30 + (uint64_t)i, 0));
            EXPECT_DTO(p.req_evd, p.ep, 0x30 + (uint64_t)i, DAT_DTO_SUCCESS, 16);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* EWT-24 (semantics-core.md §2.27) seen from §3.5: threshold must be 1. */
TEST(E2E_DTO_S35_threshold_with_unsignalled_request_stream)
{
    struct loc l;
    DAT_EP_ATTR a;
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    REQUIRE(loc_open(&l) == 0);
    REQUIRE(ep_defaults(l.ia, l.pz, l.recv, l.req, l.conn, &a) == 0);
    a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    REQUIRE(dat_ep_create(l.ia, l.pz, l.recv, l.req, l.conn, &a, &l.ep) == DAT_SUCCESS);
    CHECK_TYPE(dat_evd_wait(l.req, 0, 2, &ev, &nmore), DAT_INVALID_STATE);
    CHECK_TYPE(dat_evd_wait(l.req, 0, 1, &ev, &nmore), DAT_TIMEOUT_EXPIRED);
    /* the recv EVD is fed by a DEFAULT stream: threshold 2 is fine there */
    CHECK_TYPE(dat_evd_wait(l.recv, 0, 2, &ev, &nmore), DAT_TIMEOUT_EXPIRED);
}

TEST(E2E_DTO_S36_iov_array_reusable_after_post)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m;
        DAT_LMR_TRIPLET iov[3];
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        memset(m.buf, 0xAA, 4096);
        iov[0] = tr(&m, 0, 100);
        iov[1] = tr(&m, 1000, 100);
        iov[2] = tr(&m, 2000, 100);
        CHECK_OK(dat_ep_post_recv(p.ep, 3, iov, ck(0x36), 0));
        /* the array is ours again: scribble over it */
        memset(iov, 0xEE, sizeof(iov));
        PSYNC(&p, 'r');
        if (EXPECT_DTO(p.recv_evd, p.ep, 0x36, DAT_DTO_SUCCESS, 300)) {
            CHECK_PAT(m.buf, 100, 360, 0);
            CHECK_PAT(m.buf + 1000, 100, 360, 100);
            CHECK_PAT(m.buf + 2000, 100, 360, 200);
            CHECK_FILL(m.buf + 100, 900, 0xAA);
        }
        PSYNC(&p, 'd');
    } else {
        struct mr m;
        DAT_LMR_TRIPLET iov[3];
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &m) == DAT_SUCCESS);
        fill_pat(m.buf + 500, 300, 360);
        PSYNC(&p, 'r');
        iov[0] = tr(&m, 500, 120);
        iov[1] = tr(&m, 620, 80);
        iov[2] = tr(&m, 700, 100);
        CHECK_OK(dat_ep_post_send(p.ep, 3, iov, ck(0x63), 0));
        memset(iov, 0xEE, sizeof(iov));
        EXPECT_DTO(p.req_evd, p.ep, 0x63, DAT_DTO_SUCCESS, 300);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(E2E_DTO_S36_rdma_larger_than_max_rdma_size)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0);
    if (!p.server)
        a.max_rdma_size = 4096;
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr reg;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 1 << 20, LRW | RRW, &reg) == DAT_SUCCESS);
        fill_pat(reg.buf, 1 << 20, 37);
        r = rtr_of(&reg, 0, 1 << 20);
        PREQUIRE(&p, tell_rtr(&p, &r) == 0);
        PSYNC(&p, 'd');
    } else {
        struct mr l;
        DAT_RMR_TRIPLET r;
        DAT_EP_ATTR got;
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, ep_attr_of(p.ep, &got) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 1 << 20, LRW, &l) == DAT_SUCCESS);
        if (got.max_rdma_size < (1 << 20)) {
            DAT_VLEN over = got.max_rdma_size + 1;
            DAT_RMR_TRIPLET ro = r;
            ro.segment_length = over;
            CHECK_TYPE(read1(p.ep, &l, 0, over, &ro, 0x371, 0), DAT_INVALID_PARAMETER);
            CHECK_TYPE(write1(p.ep, &l, 0, over, &ro, 0x372, 0), DAT_INVALID_PARAMETER);
            EXPECT_NONE(p.req_evd);
            ro.segment_length = got.max_rdma_size;
            CHECK_OK(read1(p.ep, &l, 0, got.max_rdma_size, &ro, 0x373, 0));
            if (EXPECT_DTO(p.req_evd, p.ep, 0x373, DAT_DTO_SUCCESS, got.max_rdma_size))
                CHECK_PAT(l.buf, (size_t)got.max_rdma_size, 37, 0);
        } else {
            NOTE_SKIP("max_rdma_size not below 1 MiB even when 4096 was asked");
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* §3.6 / §4.15: an EP set up with max_rdma_read_out 0 has no read credit:
 * a read is refused for resource limits (DAT_INSUFFICIENT_RESOURCES, the
 * documented code; queueing it would never end), and the EP stays usable. */
TEST(E2E_DTO_S36_read_without_read_credits)
{
    struct pair p;
    DAT_EP_ATTR a;
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, dto_attr(&p, &a) == 0);
    if (!p.server)
        a.max_rdma_read_out = 0;
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr reg, rx;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW | RRW, &reg) == DAT_SUCCESS);
        PREQUIRE(&p, post_recvs(&p, p.ep, &rx, 1, 64, 0x90) == 0);
        r = rtr_of(&reg, 0, 64);
        PREQUIRE(&p, tell_rtr(&p, &r) == 0);
        EXPECT_DTO(p.recv_evd, p.ep, 0x90, DAT_DTO_SUCCESS, 16);
        PSYNC(&p, 'd');
    } else {
        struct mr l;
        DAT_RMR_TRIPLET r;
        DAT_EP_ATTR got;
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, ep_attr_of(p.ep, &got) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &l) == DAT_SUCCESS);
        if (got.max_rdma_read_out != 0) {
            NOTE_SKIP("max_rdma_read_out 0 was not kept");
        } else {
            CHECK_TYPE(read1(p.ep, &l, 0, 64, &r, 0x91, 0), DAT_INSUFFICIENT_RESOURCES);
            EXPECT_NONE(p.req_evd);
        }
        CHECK_OK(send1(p.ep, &l, 0, 16, 0x92, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0x92, DAT_DTO_SUCCESS, 16);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
