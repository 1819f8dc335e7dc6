/*
 * Consumer patterns: endpoints and data transfers set up the way
 * third-party DAT programs do it.
 *
 *   NULL_ATTR_*    an EP created with NULL attributes (rulings "EPC-03
 *                  defaults"): dat_ep_query reports the reference
 *                  provider's defaults, and every DTO kind works on it
 *                  without further setup: an RMR bound and its context
 *                  sent in a Send, RDMA Read and RDMA Write through it,
 *                  a two-segment Send/Recv, every byte and event checked
 *   QUEUE_50K_*    EP queues of 50,000 (rulings "transport limits") with
 *                  EVDs of 100,000: 50,000 receives posted, 50,000 small
 *                  Sends streamed without waiting, most SUPPRESS|UNSIGNALLED,
 *                  some UNSIGNALLED, some signalled; every message arrives
 *                  intact and in order, exactly the unsuppressed sends
 *                  complete, in order
 *   SHARED_EVD_*   one DTO EVD as both recv_evd and request_evd: a
 *                  ping-pong of thousands of messages, both completion
 *                  kinds on the one EVD, each stream in order, every field
 */
#include "consumer.h"

/* ---- NULL attributes ------------------------------------------------------ */

TEST(NULL_ATTR_ep_query_reports_reference_defaults)
{
    struct loc l;
    DAT_IA_ATTR ia;
    DAT_EP_PARAM prm;
    const DAT_EP_ATTR *a = &prm.ep_attr;

    REQUIRE(loc_open_ep(&l, NULL) == 0);
    REQUIRE(ia_attrs(l.ia, &ia, NULL) == 0);
    memset(&prm, 0, sizeof(prm));
    CHECK_OK(dat_ep_query(l.ep, DAT_EP_FIELD_ALL, &prm));
    NOTE("NULL-attribute EP: rdma_read in/out %d/%d, dtos recv/request %d/%d, iov recv/request "
         "%d/%d, rdma iov read/write %d/%d, message %llu, rdma %llu; IA per-EP rdma_read in/out "
         "%d/%d, iov %d, message %llu, rdma %llu",
         (int)a->max_rdma_read_in, (int)a->max_rdma_read_out, (int)a->max_recv_dtos,
         (int)a->max_request_dtos, (int)a->max_recv_iov, (int)a->max_request_iov,
         (int)a->max_rdma_read_iov, (int)a->max_rdma_write_iov,
         (unsigned long long)a->max_message_size, (unsigned long long)a->max_rdma_size,
         (int)ia.max_rdma_read_per_ep_in, (int)ia.max_rdma_read_per_ep_out,
         (int)ia.max_iov_segments_per_dto, (unsigned long long)ia.max_message_size,
         (unsigned long long)ia.max_rdma_size);
    CHECK(a->service_type == DAT_SERVICE_TYPE_RC);
    /* an application that posts an RDMA Read needs credits both ways */
    CHECK(a->max_rdma_read_in >= 1);
    CHECK(a->max_rdma_read_out >= 1);
    CHECK(a->max_rdma_read_in == imin(4, ia.max_rdma_read_per_ep_in));
    CHECK(a->max_rdma_read_out == imin(4, ia.max_rdma_read_per_ep_out));
    CHECK(a->max_recv_dtos >= 16);
    CHECK(a->max_request_dtos == a->max_recv_dtos);
    CHECK(a->max_recv_iov == a->max_request_iov);
    CHECK(a->max_recv_iov >= imin(4, ia.max_iov_segments_per_dto));
    CHECK(a->max_recv_iov <= ia.max_iov_segments_per_dto);
    CHECK(a->max_rdma_read_iov >= 1);
    CHECK(a->max_rdma_write_iov >= 1);
    CHECK(a->max_message_size == ia.max_message_size);
    CHECK(a->max_rdma_size == ia.max_rdma_size);
    CHECK_OK(dat_ep_free(l.ep));
}

#define WIN (64 * KiB)
#define HDR 16
#define BODY (8 * KiB)
#define WIN_MAGIC 0x57494E444F57ull /* "WINDOW" */
#define DONE_MAGIC 0x5752495454454Eull /* "WRITTEN" */
#define SEED1 0xD70001u

/* The window message: what the server's RMR exposes. */
struct win_msg {
    uint64_t magic;
    DAT_RMR_TRIPLET rtr;
};

TEST(NULL_ATTR_every_dto_kind_through_a_bound_rmr)
{
    struct pair p;
    DAT_EP_PARAM prm;

    REQUIRE(cpair_start(&p, 64) == 0);
    PREQUIRE(&p, cpair_connect(&p, NULL) == 0);
    memset(&prm, 0, sizeof(prm));
    CHECK_OK(dat_ep_query(p.ep, DAT_EP_FIELD_ALL, &prm));
    if (prm.ep_attr.max_rdma_read_in < 1 || prm.ep_attr.max_rdma_read_out < 1)
        FAILF("connected NULL-attribute EP reports max_rdma_read_in %d, max_rdma_read_out %d",
              (int)prm.ep_attr.max_rdma_read_in, (int)prm.ep_attr.max_rdma_read_out);
    if (p.server) {
        struct mr win, ctl, rcv;
        DAT_RMR_HANDLE rmr;
        DAT_RMR_CONTEXT rc = 0;
        DAT_RMR_COOKIE bc;
        DAT_LMR_TRIPLET t, iov[2];
        struct win_msg wm;
        uint64_t magic;

        /* the LMR grants nothing remote: the RMR bound on the EP does */
        PREQUIRE(&p, mr_make(p.ia, p.pz, WIN, LRW, &win) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &ctl) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096 + BODY, LRW, &rcv) == DAT_SUCCESS);
        fill_msg(win.buf, WIN, SEED1, 1);
        /* the "written" message lands in two segments: header, body */
        iov[0] = tr(&rcv, 0, HDR);
        iov[1] = tr(&rcv, 4096, BODY);
        PREQUIRE(&p, POSTED(dat_ep_post_recv(p.ep, 2, iov, ck(0x71), DAT_COMPLETION_DEFAULT_FLAG)));
        PSYNC(&p, 'r');

        PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
        t = tr(&win, 0, WIN);
        memset(&bc, 0, sizeof(bc));
        bc.as_64 = 0xB1;
        PREQUIRE(&p, POSTED(dat_rmr_bind(rmr, &t, RRW, p.ep, bc, DAT_COMPLETION_DEFAULT_FLAG, &rc)));
        EXPECT_BIND(p.req_evd, rmr, 0xB1, DAT_RMR_BIND_SUCCESS);
        memset(&wm, 0, sizeof(wm));
        wm.magic = WIN_MAGIC;
        wm.rtr = rtr(rc, (DAT_VADDR)(uintptr_t)win.buf, WIN);
        memcpy(ctl.buf, &wm, sizeof(wm));
        PREQUIRE(&p, POSTED(send1(p.ep, &ctl, 0, sizeof(wm), 0x51, DAT_COMPLETION_DEFAULT_FLAG)));
        EXPECT_DTO(p.req_evd, p.ep, 0x51, DAT_DTO_SUCCESS, sizeof(wm));

        /* the client read the window, wrote it over and says so */
        if (EXPECT_DTO(p.recv_evd, p.ep, 0x71, DAT_DTO_SUCCESS, HDR + BODY)) {
            memcpy(&magic, rcv.buf, sizeof(magic));
            CHECK(magic == DONE_MAGIC);
            CHECK_MSG(rcv.buf + 4096, BODY, SEED1, 3, "Send body");
            CHECK_MSG(win.buf, WIN, SEED1, 2, "window after the RDMA Write");
        }
        magic = DONE_MAGIC + 1;
        memcpy(ctl.buf + 64, &magic, sizeof(magic));
        if (POSTED(send1(p.ep, &ctl, 64, 8, 0x52, DAT_COMPLETION_DEFAULT_FLAG)))
            EXPECT_DTO(p.req_evd, p.ep, 0x52, DAT_DTO_SUCCESS, 8);
        PSYNC(&p, 'd');
        CHECK_OK(dat_rmr_free(rmr));
    } else {
        struct mr loc, ctl, rcv;
        struct win_msg wm;
        DAT_LMR_TRIPLET iov[2];
        uint64_t magic;

        PREQUIRE(&p, mr_make(p.ia, p.pz, WIN, LRW, &loc) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096 + BODY, LRW, &ctl) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 4096, LRW, &rcv) == DAT_SUCCESS);
        PREQUIRE(&p, POSTED(recv1(p.ep, &rcv, 0, 256, 0x61, DAT_COMPLETION_DEFAULT_FLAG)));
        PREQUIRE(&p, POSTED(recv1(p.ep, &rcv, 256, 256, 0x62, DAT_COMPLETION_DEFAULT_FLAG)));
        PSYNC(&p, 'r');

        PREQUIRE(&p, EXPECT_DTO(p.recv_evd, p.ep, 0x61, DAT_DTO_SUCCESS, sizeof(wm)));
        memcpy(&wm, rcv.buf, sizeof(wm));
        PREQUIRE(&p, wm.magic == WIN_MAGIC && wm.rtr.segment_length == WIN);

        /* RDMA Read of the whole window, with the default credits */
        if (POSTED(read1(p.ep, &loc, 0, WIN, &wm.rtr, 0xA1, DAT_COMPLETION_DEFAULT_FLAG)) &&
            EXPECT_DTO(p.req_evd, p.ep, 0xA1, DAT_DTO_SUCCESS, WIN))
            CHECK_MSG(loc.buf, WIN, SEED1, 1, "window read");

        /* RDMA Write over it */
        fill_msg(loc.buf, WIN, SEED1, 2);
        if (POSTED(write1(p.ep, &loc, 0, WIN, &wm.rtr, 0xA2, DAT_COMPLETION_DEFAULT_FLAG)))
            EXPECT_DTO(p.req_evd, p.ep, 0xA2, DAT_DTO_SUCCESS, WIN);

        /* a two-segment Send: header and body */
        magic = DONE_MAGIC;
        memset(ctl.buf, 0, HDR);
        memcpy(ctl.buf, &magic, sizeof(magic));
        fill_msg(ctl.buf + 4096, BODY, SEED1, 3);
        iov[0] = tr(&ctl, 0, HDR);
        iov[1] = tr(&ctl, 4096, BODY);
        if (POSTED(dat_ep_post_send(p.ep, 2, iov, ck(0xA3), DAT_COMPLETION_DEFAULT_FLAG)))
            EXPECT_DTO(p.req_evd, p.ep, 0xA3, DAT_DTO_SUCCESS, HDR + BODY);

        if (EXPECT_DTO(p.recv_evd, p.ep, 0x62, DAT_DTO_SUCCESS, 8)) {
            memcpy(&magic, rcv.buf + 256, sizeof(magic));
            CHECK(magic == DONE_MAGIC + 1);
        }
        /* read back what was written: the RMR still serves both ways */
        memset(loc.buf, 0, WIN);
        if (POSTED(read1(p.ep, &loc, 0, WIN, &wm.rtr, 0xA4, DAT_COMPLETION_DEFAULT_FLAG)) &&
            EXPECT_DTO(p.req_evd, p.ep, 0xA4, DAT_DTO_SUCCESS, WIN))
            CHECK_MSG(loc.buf, WIN, SEED1, 2, "window read back");
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- queues of 50,000 ------------------------------------------------------ */

#ifndef NQ
#define NQ 50000 /* -DNQ=... only to try the test itself against a smaller limit */
#endif
#define QLEN_50K (2 * NQ)
#define QSLOT 64
#define SEED2 0x50000u

static size_t q_size(int i) { return 8 + (size_t)((i * 7) % (QSLOT - 7)); }

/* Most sends are SUPPRESS|UNSIGNALLED; every 10th UNSIGNALLED alone (its
 * completion is queued); every 100th and the last signalled. */
static DAT_COMPLETION_FLAGS q_flags(int i)
{
    if (i % 100 == 99 || i == NQ - 1)
        return DAT_COMPLETION_DEFAULT_FLAG;
    if (i % 10 == 9)
        return DAT_COMPLETION_UNSIGNALLED_FLAG;
    return DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG;
}

static int q_reported(int i) { return i % 10 == 9 || i == NQ - 1; }

static void q_fill(unsigned char *b, int i)
{
    uint32_t seq = (uint32_t)i;
    memcpy(b, &seq, 4);
    fill_msg(b + 4, q_size(i) - 4, SEED2, (uint32_t)i);
}

/* The next event: dequeue, or wait (WAIT_US) when the queue is empty. */
static int next_event(DAT_EVD_HANDLE evd, DAT_EVENT *ev, const char *what, int i)
{
    DAT_RETURN r = dat_evd_dequeue(evd, ev);
    DAT_COUNT nmore = 0;
    if (r == DAT_SUCCESS)
        return 1;
    if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY) {
        FAILF("%s %d: dat_evd_dequeue returned 0x%08x", what, i, (unsigned)r);
        return 0;
    }
    r = dat_evd_wait(evd, WAIT_US, 1, ev, &nmore);
    if (r != DAT_SUCCESS) {
        FAILF("%s %d: dat_evd_wait returned 0x%08x after %u s", what, i, (unsigned)r,
              WAIT_US / SEC);
        explain_peer();
        return 0;
    }
    return 1;
}

TEST(QUEUE_50K_post_50000_receives_and_stream_50000_sends)
{
    struct pair p;
    DAT_EP_ATTR a = consumer_ep_attr(NQ, 64 * KiB); /* what a 50K-queue consumer asks for */
    DAT_EP_PARAM prm;
    double t0;

    DAT_IA_ATTR ia;

    REQUIRE(cpair_start(&p, QLEN_50K) == 0);
    PREQUIRE(&p, ia_attrs(p.ia, &ia, NULL) == 0);
    if (!p.server)
        NOTE("IA limits: max_dto_per_ep %d, max_evd_qlen %d; EVDs of %d made", (int)ia.max_dto_per_ep,
             (int)ia.max_evd_qlen, QLEN_50K);
    PREQUIRE(&p, cpair_connect(&p, &a) == 0);
    memset(&prm, 0, sizeof(prm));
    CHECK_OK(dat_ep_query(p.ep, DAT_EP_FIELD_ALL, &prm));
    CHECK(prm.ep_attr.max_recv_dtos >= NQ);
    CHECK(prm.ep_attr.max_request_dtos >= NQ);
    if (p.server) {
        struct mr rb;
        int i, bad = 0;
        PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)NQ * QSLOT, LRW, &rb) == DAT_SUCCESS);
        t0 = ctest_now();
        for (i = 0; i < NQ; i++) {
            DAT_RETURN r = recv1(p.ep, &rb, (size_t)i * QSLOT, QSLOT, (uint64_t)i, 0);
            if (r != DAT_SUCCESS) {
                FAILF("dat_ep_post_recv %d of %d returned 0x%08x", i + 1, NQ, (unsigned)r);
                break;
            }
        }
        PREQUIRE(&p, i == NQ);
        NOTE("%d receives posted in %.3f s", NQ, ctest_now() - t0);
        PSYNC(&p, 'r');
        t0 = ctest_now();
        for (i = 0; i < NQ && bad < 3; i++) {
            DAT_EVENT ev;
            if (!next_event(p.recv_evd, &ev, "receive", i))
                break;
            if (!check_dto_ev_at(__FILE__, __LINE__, &ev, p.recv_evd, p.ep, (uint64_t)i,
                                 DAT_DTO_SUCCESS, q_size(i))) {
                FAILF("receive completion %d of %d is wrong", i, NQ);
                bad++;
                continue;
            }
            {
                uint32_t seq;
                const unsigned char *b = rb.buf + (size_t)i * QSLOT;
                memcpy(&seq, b, 4);
                if (seq != (uint32_t)i) {
                    FAILF("receive %d holds message %u", i, seq);
                    bad++;
                } else if (!CHECK_MSG(b + 4, q_size(i) - 4, SEED2, (uint32_t)i, "message")) {
                    bad++;
                }
            }
            if (OVER_BUDGET(t0, i + 1, NQ, "messages"))
                break;
        }
        NOTE("%d messages received and checked in %.3f s", i, ctest_now() - t0);
        PSYNC(&p, 'd');
    } else {
        struct mr sb;
        int i, n = 0, bad = 0;
        DAT_EVENT ev;
        PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)NQ * QSLOT, LRW, &sb) == DAT_SUCCESS);
        for (i = 0; i < NQ; i++)
            q_fill(sb.buf + (size_t)i * QSLOT, i);
        PSYNC(&p, 'r');
        t0 = ctest_now();
        for (i = 0; i < NQ; i++) {
            DAT_RETURN r =
                send1(p.ep, &sb, (size_t)i * QSLOT, q_size(i), (uint64_t)i, q_flags(i));
            if (r != DAT_SUCCESS) {
                FAILF("dat_ep_post_send %d of %d (flags 0x%x) returned 0x%08x", i + 1, NQ,
                      (unsigned)q_flags(i), (unsigned)r);
                break;
            }
        }
        PREQUIRE(&p, i == NQ);
        NOTE("%d sends posted without waiting in %.3f s", NQ, ctest_now() - t0);
        /* exactly the unsuppressed sends complete, in posting order */
        for (i = 0; i < NQ && bad < 3; i++) {
            if (!q_reported(i))
                continue;
            if (!next_event(p.req_evd, &ev, "send completion", i))
                break;
            if (!check_dto_ev_at(__FILE__, __LINE__, &ev, p.req_evd, p.ep, (uint64_t)i,
                                 DAT_DTO_SUCCESS, q_size(i))) {
                FAILF("send completion for send %d is wrong", i);
                bad++;
            }
            n++;
            if (OVER_BUDGET(t0, n, NQ / 10, "send completions"))
                break;
        }
        NOTE("%d send completions in %.3f s", n, ctest_now() - t0);
        if (i == NQ)
            expect_none_at(__FILE__, __LINE__, p.req_evd, 100);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- one EVD for receive and request completions ---------------------------- */

#define SH_ITER 10000
#define SH_MAX 4096
#define SH_NRECV 4
#define SH_NSEND 4
#define TAG_SEND 0x5E00000000ull
#define TAG_RECV 0x7E00000000ull
#define TAG_MASK 0xFF00000000ull
#define SEED3 0x5EEDu

struct sh {
    struct pair *p;
    DAT_EVD_HANDLE evd;
    struct mr sb, rb;
    size_t size[SH_ITER];
    int sent, send_done, recv_done;
    int iter; /* for messages */
};

/* Client messages are 2i, server replies 2i+1; both of size size[i]. */
static uint32_t sh_msg(int server, int i) { return (uint32_t)(2 * i + server); }

static int sh_post_recv(struct sh *s, int k)
{
    DAT_RETURN r = recv1(s->p->ep, &s->rb, (size_t)(k % SH_NRECV) * SH_MAX, SH_MAX,
                         TAG_RECV | (uint64_t)k, DAT_COMPLETION_DEFAULT_FLAG);
    if (r != DAT_SUCCESS)
        FAILF("iteration %d: dat_ep_post_recv(%d) returned 0x%08x", s->iter, k, (unsigned)r);
    return r == DAT_SUCCESS;
}

/* Takes one event off the shared EVD and checks it against its stream. */
static int sh_one(struct sh *s)
{
    DAT_EVENT ev;
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
    uint64_t tag;
    if (!next_event(s->evd, &ev, "iteration", s->iter))
        return 0;
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT) {
        FAILF("iteration %d: not a DTO completion", s->iter);
        ev_print(&ev);
        return 0;
    }
    tag = d->user_cookie.as_64 & TAG_MASK;
    if (tag == TAG_SEND) {
        int k = s->send_done;
        if (!check_dto_ev_at(__FILE__, __LINE__, &ev, s->evd, s->p->ep, TAG_SEND | (uint64_t)k,
                             DAT_DTO_SUCCESS, s->size[k])) {
            FAILF("iteration %d: want the completion of send %d (sends in order)", s->iter, k);
            return 0;
        }
        s->send_done++;
        return 1;
    }
    if (tag == TAG_RECV) {
        int k = s->recv_done;
        const unsigned char *b = s->rb.buf + (size_t)(k % SH_NRECV) * SH_MAX;
        if (!check_dto_ev_at(__FILE__, __LINE__, &ev, s->evd, s->p->ep, TAG_RECV | (uint64_t)k,
                             DAT_DTO_SUCCESS, s->size[k])) {
            FAILF("iteration %d: want the completion of receive %d (receives in order)", s->iter,
                  k);
            return 0;
        }
        ctest_handover(b, s->size[k]);
        if (!CHECK_MSG(b, s->size[k], SEED3, sh_msg(!s->p->server, k), "message"))
            return 0;
        s->recv_done++;
        if (k + SH_NRECV < SH_ITER && !sh_post_recv(s, k + SH_NRECV))
            return 0;
        return 1;
    }
    FAILF("iteration %d: a completion with an unknown cookie", s->iter);
    ev_print(&ev);
    return 0;
}

static int sh_send(struct sh *s, int i)
{
    unsigned char *b = s->sb.buf + (size_t)(i % SH_NSEND) * SH_MAX;
    DAT_RETURN r;
    while (s->sent - s->send_done >= SH_NSEND)
        if (!sh_one(s))
            return 0;
    fill_msg(b, s->size[i], SEED3, sh_msg(s->p->server, i));
    r = send1(s->p->ep, &s->sb, (size_t)(i % SH_NSEND) * SH_MAX, s->size[i],
              TAG_SEND | (uint64_t)i, DAT_COMPLETION_DEFAULT_FLAG);
    if (r != DAT_SUCCESS) {
        FAILF("iteration %d: dat_ep_post_send returned 0x%08x", i, (unsigned)r);
        return 0;
    }
    s->sent++;
    return 1;
}

TEST(SHARED_EVD_recv_and_request_completions_on_one_evd)
{
    static struct sh s;
    struct pair p;
    struct rng rg;
    uint64_t seed = consumer_seed(SEED3);
    DAT_RETURN r;
    double t0;
    int i;

    REQUIRE(cpair_start(&p, 64) == 0);
    memset(&s, 0, sizeof(s));
    s.p = &p;
    s.evd = p.recv_evd;
    r = dat_ep_create(p.ia, p.pz, s.evd, s.evd, p.conn_evd, NULL, &p.ep);
    if (r != DAT_SUCCESS)
        FAILF("dat_ep_create with one EVD for both DTO streams returned 0x%08x", (unsigned)r);
    PREQUIRE(&p, r == DAT_SUCCESS);
    PREQUIRE(&p, CCONNECT(&p, p.ep, p.cr_evd, p.conn_evd, p.psp, p.qual) == 0);
    rng_init(&rg, seed);
    for (i = 0; i < SH_ITER; i++)
        s.size[i] = rng_range(&rg, 1, SH_MAX);
    if (!p.server)
        NOTE("seed 0x%llx, %d round trips of 1 B - %u B", (unsigned long long)seed, SH_ITER,
             SH_MAX);
    PREQUIRE(&p, mr_make(p.ia, p.pz, SH_NSEND * SH_MAX, LRW, &s.sb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, SH_NRECV * SH_MAX, LRW, &s.rb) == DAT_SUCCESS);
    for (i = 0; i < SH_NRECV; i++)
        PREQUIRE(&p, sh_post_recv(&s, i));
    PSYNC(&p, 'r');
    t0 = ctest_now();
    for (i = 0; i < SH_ITER; i++) {
        s.iter = i;
        if (p.server) {
            while (s.recv_done <= i)
                PREQUIRE(&p, sh_one(&s));
            PREQUIRE(&p, sh_send(&s, i));
        } else {
            PREQUIRE(&p, sh_send(&s, i));
            while (s.recv_done <= i)
                PREQUIRE(&p, sh_one(&s));
        }
        if (OVER_BUDGET(t0, i + 1, SH_ITER, "round trips"))
            break;
    }
    while (s.send_done < s.sent)
        PREQUIRE(&p, sh_one(&s));
    CHECK(s.recv_done == SH_ITER && s.send_done == SH_ITER);
    EXPECT_NONE(s.evd);
    if (!p.server)
        NOTE("%d round trips in %.3f s", s.recv_done, ctest_now() - t0);
    PSYNC(&p, 'd');
    pair_finish(&p);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
