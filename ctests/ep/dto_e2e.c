/*
 * End-to-end data transfer tests beyond the spec IDs (semantics-ep.md §3,
 * §4.13–§4.16, §4.30; semantics-core.md §2.15):
 *
 *   E2E_DTO_SIZES_*   every DTO kind at 0 B, 1 B, 4 KiB, 64 KiB, 1 MiB and
 *                     8 MiB, with 1 and with 4 IOV segments, checked byte for
 *                     byte (the bytes around every segment untouched)
 *   E2E_DTO_KILL9     the peer is killed with SIGKILL in the middle of a
 *                     stream: BROKEN/DISCONNECTED, every outstanding DTO
 *                     completed exactly once, no hang
 *   E2E_DTO_ORDER    Sends, RDMA Writes and RDMA Reads mixed on one EP
 *                     complete in posting order (siw reports a Send or
 *                     Write posted after a Read before the Read)
 *   E2E_DTO_SRQ_SHARED one SRQ shared by three EPs
 *   E2E_DTO_RMR_IN_SEND an RMR bound, its context sent in a Send, the peer
 *                     RDMA-writes and reads through it; after an unbind the
 *                     old context fails
 */
#include "dto_helpers.h"

#define MiB (1024u * 1024u)
#define GAP 64
#define GAPFILL 0xC3

static const size_t sizes[] = {0, 1, 4096, 65536, 1 * MiB, 8 * MiB};
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]), NCASES = 2 * NSIZES };

static size_t case_size(int c) { return sizes[c / 2]; }
static int case_segs(int c) { return c % 2 ? 4 : 1; }
static uint32_t case_seed(int c) { return 7000 + (uint32_t)c; }

/* Splits `size` into n segment lengths; `variant` moves the cut points. */
static void split(size_t size, int n, int variant, size_t *len)
{
    if (n == 1) {
        len[0] = size;
        return;
    }
    len[0] = variant ? size / 2 : size / 5;
    len[1] = variant ? size / 7 : size / 3;
    len[2] = size >= 4 ? (variant ? 3 : 1) : 0;
    len[3] = size - len[0] - len[1] - len[2];
}

/* Bytes a case's segments take in a buffer, with a gap before each. */
static size_t case_span(int c) { return case_size(c) + (size_t)(case_segs(c) + 1) * GAP; }

static size_t total_span(void)
{
    size_t t = 0;
    for (int c = 0; c < NCASES; c++)
        t += case_span(c);
    return t;
}

/* The IOV of case c at offset `base` of m (gaps between segments). */
static int case_iov(const struct mr *m, size_t base, int c, int variant, DAT_LMR_TRIPLET *iov)
{
    size_t len[4], off = base + GAP;
    int n = case_segs(c);
    split(case_size(c), n, variant, len);
    for (int i = 0; i < n; i++) {
        iov[i] = tr(m, off, len[i]);
        off += len[i] + GAP;
    }
    return n;
}

/* Writes the case's pattern into its segments (gather side). */
static void case_fill(const struct mr *m, size_t base, int c, int variant)
{
    DAT_LMR_TRIPLET iov[4];
    int n = case_iov(m, base, c, variant, iov);
    size_t from = 0;
    for (int i = 0; i < n; i++) {
        unsigned char *b = (unsigned char *)(uintptr_t)iov[i].virtual_address;
        for (size_t j = 0; j < iov[i].segment_length; j++)
            b[j] = pat_byte(case_seed(c), from + j);
        from += iov[i].segment_length;
    }
}

/* Checks the case's segments hold its pattern and every gap is untouched. */
static int case_check(const struct mr *m, size_t base, int c, int variant)
{
    DAT_LMR_TRIPLET iov[4];
    int n = case_iov(m, base, c, variant, iov);
    size_t from = 0;
    int ok = 1;
    ok &= check_fill_at(__FILE__, __LINE__, m->buf + base, GAP, GAPFILL, "gap");
    for (int i = 0; i < n && ok; i++) {
        unsigned char *b = (unsigned char *)(uintptr_t)iov[i].virtual_address;
        ok &= check_pat_at(__FILE__, __LINE__, b, (size_t)iov[i].segment_length, case_seed(c), from,
                           "segment");
        ok &= check_fill_at(__FILE__, __LINE__, b + iov[i].segment_length, GAP, GAPFILL, "gap");
        from += iov[i].segment_length;
    }
    if (!ok)
        fprintf(stderr, "    %s(case: %zu bytes, %d segments)\n", side(), case_size(c), n);
    return ok;
}

static DAT_EP_ATTR big_attr(struct pair *p)
{
    DAT_EP_ATTR a;
    if (dto_attr(p, &a) != 0)
        memset(&a, 0, sizeof(a));
    if (a.max_message_size < 8 * MiB)
        a.max_message_size = 8 * MiB;
    if (a.max_rdma_size < 8 * MiB)
        a.max_rdma_size = 8 * MiB;
    return a;
}

/* One buffer holding every case at its own offset, gaps filled. */
static int cases_buffer(struct pair *p, DAT_MEM_PRIV_FLAGS priv, struct mr *m, size_t *base)
{
    size_t off = 0;
    if (mr_make(p->ia, p->pz, total_span(), priv, m) != DAT_SUCCESS)
        return -1;
    memset(m->buf, GAPFILL, total_span());
    for (int c = 0; c < NCASES; c++) {
        base[c] = off;
        off += case_span(c);
    }
    return 0;
}

TEST(E2E_DTO_SIZES_send_recv)
{
    struct pair p;
    DAT_EP_ATTR a;
    struct mr m;
    size_t base[NCASES];
    REQUIRE(dpair_start(&p) == 0);
    a = big_attr(&p);
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    PREQUIRE(&p, cases_buffer(&p, LRW, &m, base) == 0);
    if (p.server) {
        for (int c = 0; c < NCASES; c++) {
            DAT_LMR_TRIPLET iov[4];
            int n = case_iov(&m, base[c], c, 1, iov);
            CHECK_OK(dat_ep_post_recv(p.ep, n, iov, ck(0x100 + (uint64_t)c), 0));
        }
        PSYNC(&p, 'r');
        for (int c = 0; c < NCASES; c++)
            if (EXPECT_DTO(p.recv_evd, p.ep, 0x100 + (uint64_t)c, DAT_DTO_SUCCESS, case_size(c)))
                case_check(&m, base[c], c, 1);
        PSYNC(&p, 'd');
    } else {
        for (int c = 0; c < NCASES; c++)
            case_fill(&m, base[c], c, 0);
        PSYNC(&p, 'r');
        for (int c = 0; c < NCASES; c++) {
            DAT_LMR_TRIPLET iov[4];
            int n = case_iov(&m, base[c], c, 0, iov);
            CHECK_OK(dat_ep_post_send(p.ep, n, iov, ck(0x200 + (uint64_t)c), 0));
        }
        for (int c = 0; c < NCASES; c++)
            EXPECT_DTO(p.req_evd, p.ep, 0x200 + (uint64_t)c, DAT_DTO_SUCCESS, case_size(c));
        /* the send side's memory is not written */
        for (int c = 0; c < NCASES; c++)
            case_check(&m, base[c], c, 0);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(E2E_DTO_SIZES_rdma_write)
{
    struct pair p;
    DAT_EP_ATTR a;
    struct mr m;
    size_t base[NCASES];
    REQUIRE(dpair_start(&p) == 0);
    a = big_attr(&p);
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr done;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, cases_buffer(&p, LRW | DAT_MEM_PRIV_REMOTE_WRITE_FLAG, &m, base) == 0);
        PREQUIRE(&p, post_recvs(&p, p.ep, &done, 1, 16, 0xD0) == 0);
        r = rtr_of(&m, 0, total_span());
        PREQUIRE(&p, tell_rtr(&p, &r) == 0);
        EXPECT_DTO(p.recv_evd, p.ep, 0xD0, DAT_DTO_SUCCESS, 0);
        /* the remote side sees each case as one contiguous run */
        for (int c = 0; c < NCASES; c++) {
            check_fill_at(__FILE__, __LINE__, m.buf + base[c], GAP, GAPFILL, "gap before");
            CHECK_PAT(m.buf + base[c] + GAP, case_size(c), case_seed(c), 0);
            check_fill_at(__FILE__, __LINE__, m.buf + base[c] + GAP + case_size(c), GAP, GAPFILL,
                          "gap after");
        }
        PSYNC(&p, 'd');
    } else {
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, cases_buffer(&p, LRW, &m, base) == 0);
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        for (int c = 0; c < NCASES; c++)
            case_fill(&m, base[c], c, 0);
        for (int c = 0; c < NCASES; c++) {
            DAT_LMR_TRIPLET iov[4];
            DAT_RMR_TRIPLET rc = r;
            int n = case_iov(&m, base[c], c, 0, iov);
            rc.target_address += base[c] + GAP;
            rc.segment_length = case_size(c);
            CHECK_OK(dat_ep_post_rdma_write(p.ep, n, iov, ck(0x300 + (uint64_t)c), &rc, 0));
        }
        CHECK_OK(dat_ep_post_send(p.ep, 0, NULL, ck(0x3FF), 0));
        for (int c = 0; c < NCASES; c++)
            EXPECT_DTO(p.req_evd, p.ep, 0x300 + (uint64_t)c, DAT_DTO_SUCCESS, case_size(c));
        EXPECT_DTO(p.req_evd, p.ep, 0x3FF, DAT_DTO_SUCCESS, 0);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

TEST(E2E_DTO_SIZES_rdma_read)
{
    struct pair p;
    DAT_EP_ATTR a;
    struct mr m;
    size_t base[NCASES];
    REQUIRE(dpair_start(&p) == 0);
    a = big_attr(&p);
    PREQUIRE(&p, pair_connect(&p, &a) == 0);
    if (p.server) {
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, cases_buffer(&p, LRW | DAT_MEM_PRIV_REMOTE_READ_FLAG, &m, base) == 0);
        for (int c = 0; c < NCASES; c++)
            fill_pat(m.buf + base[c] + GAP, case_size(c), case_seed(c));
        r = rtr_of(&m, 0, total_span());
        PREQUIRE(&p, tell_rtr(&p, &r) == 0);
        PSYNC(&p, 'd');
        /* reads leave the source alone */
        for (int c = 0; c < NCASES; c++)
            CHECK_PAT(m.buf + base[c] + GAP, case_size(c), case_seed(c), 0);
    } else {
        DAT_RMR_TRIPLET r;
        DAT_EP_ATTR got;
        int posted = 0, seen = 0, run[NCASES], nrun = 0;
        PREQUIRE(&p, cases_buffer(&p, LRW, &m, base) == 0);
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, ep_attr_of(p.ep, &got) == 0);
        /* the cases whose segments a read may carry (siw: one) */
        for (int c = 0; c < NCASES; c++)
            if (case_segs(c) <= got.max_rdma_read_iov)
                run[nrun++] = c;
        if (nrun < NCASES)
            fprintf(stderr, "    (max_rdma_read_iov %d: the %d-segment cases left out)\n",
                    (int)got.max_rdma_read_iov, case_segs(1));
        /* at most max_rdma_read_out reads in flight */
        while (seen < nrun) {
            if (posted < nrun && posted - seen < got.max_rdma_read_out) {
                DAT_LMR_TRIPLET iov[4];
                DAT_RMR_TRIPLET rc = r;
                int c = run[posted];
                int n = case_iov(&m, base[c], c, 1, iov);
                rc.target_address += base[c] + GAP;
                rc.segment_length = case_size(c);
                CHECK_OK(dat_ep_post_rdma_read(p.ep, n, iov, ck(0x400 + (uint64_t)c), &rc, 0));
                posted++;
            } else {
                int c = run[seen];
                if (!EXPECT_DTO(p.req_evd, p.ep, 0x400 + (uint64_t)c, DAT_DTO_SUCCESS,
                                case_size(c)))
                    break;
                case_check(&m, base[c], c, 1);
                seen++;
            }
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- kill -9 of the peer ----------------------------------------------------------- */

/* A connected pair for a stream of 64 KiB DTOs: 64 of each kind in
 * flight, 16 RDMA Reads, EVDs of 256. The server has 64 receives of
 * STREAM_CH posted and has told the client a region of 16 x STREAM_CH
 * it may read and write (pattern 66); both have synchronised ('r').
 * *ok is 1 on success (otherwise the pair was aborted). */
#define STREAM_CH 65536
static void stream_start(struct pair *p, int *ok)
{
    DAT_EP_ATTR a;
    *ok = 0;
    REQUIRE(dpair_start(p) == 0);
    PREQUIRE(p, dto_attr(p, &a) == 0);
    a.max_request_dtos = 64;
    a.max_recv_dtos = 64;
    a.max_rdma_read_out = 16;
    a.max_rdma_read_in = 16;
    PREQUIRE(p, new_evd(p, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, 256, &p->req_evd) == 0);
    PREQUIRE(p, new_evd(p, DAT_EVD_DTO_FLAG, 256, &p->recv_evd) == 0);
    PREQUIRE(p, pair_connect(p, &a) == 0);
    if (p->server) {
        struct mr rx, reg;
        DAT_RMR_TRIPLET r;
        PREQUIRE(p, post_recvs(p, p->ep, &rx, 64, STREAM_CH, 0) == 0);
        PREQUIRE(p, mr_make(p->ia, p->pz, 16 * STREAM_CH, LRW | RRW, &reg) == DAT_SUCCESS);
        fill_pat(reg.buf, 16 * STREAM_CH, 66);
        r = rtr_of(&reg, 0, 16 * STREAM_CH);
        PREQUIRE(p, tell_rtr(p, &r) == 0);
    }
    *ok = 1;
}

TEST(E2E_DTO_KILL9_peer_killed_mid_stream)
{
    struct pair p;
    int ok;
    enum { CH = STREAM_CH, BATCH = 30, MAXOPS = 64 };
    stream_start(&p, &ok);
    if (!ok)
        return;
    if (p.server) {
        PSYNC(&p, 'r');
        /* keep the connection up until killed (the watchdog ends a stray one) */
        for (;;)
            pause();
    } else {
        struct mr l;
        DAT_RMR_TRIPLET r;
        int st, posted = 0, done_ok = 0;
        int seen[2 * MAXOPS + BATCH];
        double t0;
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 16 * CH, LRW, &l) == DAT_SUCCESS);
        fill_pat(l.buf, 16 * CH, 67);
        memset(seen, 0, sizeof(seen));
        PSYNC(&p, 'r');
        /* a flowing stream first: one batch, completed */
        for (int round = 0; round < 2; round++) {
            int first = posted;
            for (int i = 0; i < BATCH; i++, posted++) {
                DAT_RMR_TRIPLET rr = r;
                size_t off = (size_t)(posted % 16) * CH;
                DAT_RETURN ret;
                rr.target_address += off;
                rr.segment_length = CH;
                switch (posted % 3) {
                case 0: ret = send1(p.ep, &l, off, CH, (uint64_t)posted, 0); break;
                case 1: ret = write1(p.ep, &l, off, CH, &rr, (uint64_t)posted, 0); break;
                default: ret = read1(p.ep, &l, off, CH, &rr, (uint64_t)posted, 0); break;
                }
                if (round == 0)
                    CHECK_OK(ret);
                else if (ret != DAT_SUCCESS)
                    CHECK(!"post during the stream");
            }
            if (round == 1) {
                /* the second batch is in flight: kill the peer now */
                kill(p.server_pid, SIGKILL);
                waitpid(p.server_pid, &st, 0);
                break;
            }
            for (int i = first; i < posted; i++)
                if (EXPECT_DTO(p.req_evd, p.ep, (uint64_t)i, DAT_DTO_SUCCESS, CH))
                    seen[i]++;
        }
        /* the connection goes, within the 10 s wait */
        t0 = ctest_now();
        EXPECT_GONE(p.conn_evd, p.ep);
        CHECK(ctest_now() - t0 < 10.0);
        /* every DTO of the second batch completes exactly once */
        for (int i = BATCH; i < posted; i++) {
            DAT_EVENT ev;
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            if (!GET_EV(p.req_evd, &ev))
                break;
            if (ev.event_number != DAT_DTO_COMPLETION_EVENT || ev.evd_handle != p.req_evd ||
                d->ep_handle != p.ep || d->user_cookie.as_64 < BATCH ||
                d->user_cookie.as_64 >= (uint64_t)posted || seen[d->user_cookie.as_64]++) {
                fprintf(stderr, "    unexpected completion after the kill\n");
                ev_print(&ev);
                ctest_failures++;
                continue;
            }
            if (d->status == DAT_DTO_SUCCESS)
                done_ok++;
        }
        for (int i = 0; i < posted; i++)
            if (seen[i] != 1) {
                fprintf(stderr, "    DTO %d completed %d times\n", i, seen[i]);
                ctest_failures++;
                break;
            }
        EXPECT_NONE(p.req_evd);
        fprintf(stderr, "    note: %d of %d DTOs in flight at the kill succeeded\n", done_ok,
                posted - BATCH);
        CHECK(ep_state(p.ep) == DAT_EP_STATE_DISCONNECTED);
        /* the EP is DISCONNECTED: a post is flushed at once, no hang */
        CHECK_OK(send1(p.ep, &l, 0, 64, 0xF00, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0xF00, DAT_DTO_ERR_FLUSHED, LEN_ANY);
        CHECK_OK(recv1(p.ep, &l, 0, 64, 0xF01, 0));
        EXPECT_DTO(p.recv_evd, p.ep, 0xF01, DAT_DTO_ERR_FLUSHED, LEN_ANY);
        /* and it can be reset and freed */
        CHECK_OK(dat_ep_reset(p.ep));
        CHECK(ep_state(p.ep) == DAT_EP_STATE_UNCONNECTED);
        CHECK_OK(dat_ep_free(p.ep));
        close(p.tx);
        close(p.rx);
    }
}

TEST(E2E_DTO_ORDER_mixed_request_stream_completes_in_posting_order)
{
    struct pair p;
    int ok;
    enum { CH = STREAM_CH, BATCH = 30, ROUNDS = 3 };
    stream_start(&p, &ok);
    if (!ok)
        return;
    if (p.server) {
        PSYNC(&p, 'r');
        /* every Send arrived, in order */
        for (int i = 0; i < ROUNDS * BATCH / 3; i++)
            if (!EXPECT_DTO(p.recv_evd, p.ep, (uint64_t)i, DAT_DTO_SUCCESS, CH))
                break;
        PSYNC(&p, 'd');
    } else {
        struct mr l;
        DAT_RMR_TRIPLET r;
        int posted = 0;
        PREQUIRE(&p, hear_rtr(&p, &r) == 0);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 16 * CH, LRW, &l) == DAT_SUCCESS);
        fill_pat(l.buf, 16 * CH, 67);
        PSYNC(&p, 'r');
        for (int round = 0; round < ROUNDS; round++) {
            int first = posted;
            for (int i = 0; i < BATCH; i++, posted++) {
                DAT_RMR_TRIPLET rr = r;
                /* reads land in slots 8..15, sends and writes go from 0..7 */
                size_t off = (size_t)(posted % 8) * CH;
                rr.target_address += off;
                rr.segment_length = CH;
                switch (posted % 3) {
                case 0: CHECK_OK(read1(p.ep, &l, off + 8 * CH, CH, &rr, (uint64_t)posted, 0)); break;
                case 1: CHECK_OK(send1(p.ep, &l, off, CH, (uint64_t)posted, 0)); break;
                default: CHECK_OK(write1(p.ep, &l, off, CH, &rr, (uint64_t)posted, 0)); break;
                }
            }
            for (int i = first; i < posted; i++)
                if (!EXPECT_DTO(p.req_evd, p.ep, (uint64_t)i, DAT_DTO_SUCCESS, CH))
                    break;
        }
        EXPECT_NONE(p.req_evd);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- one SRQ, three EPs --------------------------------------------------------------- */

struct smsg {
    DAT_UINT32 ep_index, seq, len;
};

TEST(E2E_DTO_SRQ_SHARED_three_eps)
{
    struct pair p;
    DAT_PROVIDER_ATTR pa;
    enum { NEP = 3, PER = 20, BUF = 4096 };
    REQUIRE(dpair_start(&p) == 0);
    PREQUIRE(&p, ia_attrs(p.ia, NULL, &pa) == 0);
    if (!pa.srq_supported)
        PSKIP(&p, "provider reports no SRQ support");
    if (p.server) {
        DAT_SRQ_HANDLE srq;
        DAT_SRQ_ATTR sa = {NEP * PER, 1, 0};
        DAT_EP_HANDLE sep[NEP];
        DAT_EVD_HANDLE conn[NEP], recv;
        DAT_EP_ATTR a;
        struct mr m;
        int got[NEP * PER] = {0};
        DAT_UINT32 next[NEP] = {0};
        PREQUIRE(&p, dat_srq_create(p.ia, p.pz, &sa, &srq) == DAT_SUCCESS);
        PREQUIRE(&p, new_evd(&p, DAT_EVD_DTO_FLAG, 128, &recv) == 0);
        PREQUIRE(&p, ep_defaults(p.ia, p.pz, recv, p.req_evd, p.conn_evd, &a) == 0);
        a.max_recv_dtos = DAT_HW_DEFAULT;
        a.srq_soft_hw = DAT_HW_DEFAULT;
        for (int e = 0; e < NEP; e++) {
            PREQUIRE(&p, new_evd(&p, DAT_EVD_CONNECTION_FLAG, 8, &conn[e]) == 0);
            PREQUIRE(&p, dat_ep_create_with_srq(p.ia, p.pz, recv, p.req_evd, conn[e], srq, &a,
                                                &sep[e]) == DAT_SUCCESS);
            PREQUIRE(&p, srv_accept(&p, sep[e], conn[e]) == 0);
            PSYNC(&p, 'a');
        }
        PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)NEP * PER * BUF, LRW, &m) == DAT_SUCCESS);
        for (int i = 0; i < NEP * PER; i++) {
            DAT_LMR_TRIPLET t = tr(&m, (size_t)i * BUF, BUF);
            CHECK_OK(dat_srq_post_recv(srq, 1, &t, ck((uint64_t)i)));
        }
        CHECK_RET(dat_srq_free(srq), 0x80070056u);
        PSYNC(&p, 'r');
        for (int i = 0; i < NEP * PER; i++) {
            DAT_EVENT ev;
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            struct smsg h;
            uint64_t c;
            if (!GET_EV(recv, &ev))
                break;
            c = d->user_cookie.as_64;
            if (ev.event_number != DAT_DTO_COMPLETION_EVENT || ev.evd_handle != recv ||
                d->status != DAT_DTO_SUCCESS || c >= NEP * PER || got[c]++) {
                fprintf(stderr, "    [server] bad SRQ completion\n");
                ev_print(&ev);
                ctest_failures++;
                continue;
            }
            memcpy(&h, m.buf + c * BUF, sizeof(h));
            if (h.ep_index >= NEP || d->ep_handle != sep[h.ep_index] ||
                h.seq != next[h.ep_index] || d->transfered_length != h.len) {
                fprintf(stderr, "    [server] message ep %u seq %u len %u on ep %p, length %llu\n",
                        h.ep_index, h.seq, h.len, (void *)d->ep_handle,
                        (unsigned long long)d->transfered_length);
                ctest_failures++;
                continue;
            }
            CHECK_PAT(m.buf + c * BUF + sizeof(h), h.len - sizeof(h), 100 * h.ep_index + h.seq,
                      0);
            next[h.ep_index]++;
        }
        for (int e = 0; e < NEP; e++)
            CHECK(next[e] == PER);
        PSYNC(&p, 'x'); /* the client disconnects */
        for (int e = 0; e < NEP; e++) {
            EXPECT_GONE(conn[e], sep[e]);
            CHECK_OK(dat_ep_free(sep[e]));
        }
        EXPECT_NONE(recv); /* the SRQ held no buffer for any EP */
        CHECK_OK(dat_srq_free(srq));
        PSYNC(&p, 'd');
    } else {
        DAT_EP_HANDLE ep[NEP];
        DAT_EVD_HANDLE conn[NEP];
        struct mr m;
        PREQUIRE(&p, mr_make(p.ia, p.pz, (size_t)NEP * PER * BUF, LRW, &m) == DAT_SUCCESS);
        for (int e = 0; e < NEP; e++) {
            PREQUIRE(&p, new_evd(&p, DAT_EVD_CONNECTION_FLAG, 8, &conn[e]) == 0);
            PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, conn[e], NULL,
                                       &ep[e]) == DAT_SUCCESS);
            PREQUIRE(&p, cli_connect(&p, ep[e], conn[e]) == 0);
            PSYNC(&p, 'a');
        }
        PSYNC(&p, 'r');
        /* interleaved: EP e message k, lengths 12 … 4096 */
        for (int k = 0; k < PER; k++) {
            for (int e = 0; e < NEP; e++) {
                size_t off = ((size_t)k * NEP + (size_t)e) * BUF;
                struct smsg h = {(DAT_UINT32)e, (DAT_UINT32)k,
                                 (DAT_UINT32)(12 + ((k * 211 + e * 97) % (BUF - 12)))};
                memcpy(m.buf + off, &h, sizeof(h));
                fill_pat(m.buf + off + sizeof(h), h.len - sizeof(h), 100 * (uint32_t)e + (uint32_t)k);
                CHECK_OK(send1(ep[e], &m, off, h.len, off, 0));
                EXPECT_DTO(p.req_evd, ep[e], off, DAT_DTO_SUCCESS, h.len);
            }
        }
        PSYNC(&p, 'x');
        for (int e = 0; e < NEP; e++) {
            CHECK_OK(dat_ep_disconnect(ep[e], DAT_CLOSE_ABRUPT_FLAG));
            EXPECT_CONN(conn[e], ep[e], DAT_CONNECTION_EVENT_DISCONNECTED, 0);
        }
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

/* ---- an RMR context sent in a Send ------------------------------------------------------ */

TEST(E2E_DTO_RMR_IN_SEND_write_and_read_through_rmr)
{
    struct pair p;
    DAT_EP_ATTR a;
    enum { RLEN = 32768 };
    REQUIRE(dpair_start(&p) == 0);
    PNEED_RMR(&p);
    PREQUIRE(&p, dto_attr(&p, &a) == 0 && pair_connect(&p, &a) == 0);
    if (p.server) {
        struct mr m, s, d;
        DAT_RMR_HANDLE rmr;
        DAT_RMR_CONTEXT rc = 0, rc2 = 0;
        DAT_LMR_TRIPLET t;
        DAT_RMR_TRIPLET r;
        DAT_RMR_COOKIE bc;
        /* the LMR itself grants nothing remote: only the RMR does */
        PREQUIRE(&p, mr_make(p.ia, p.pz, 3 * RLEN, LRW, &m) == DAT_SUCCESS);
        CHECK(m.rc == 0);
        memset(m.buf, 0x11, 3 * RLEN);
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &s) == DAT_SUCCESS);
        PREQUIRE(&p, post_recvs(&p, p.ep, &d, 1, 64, 0xD0) == 0);
        PREQUIRE(&p, dat_rmr_create(p.pz, &rmr) == DAT_SUCCESS);
        PSYNC(&p, 'r');
        t = tr(&m, RLEN, RLEN);
        memset(&bc, 0, sizeof(bc));
        bc.as_64 = 0xB1;
        CHECK_OK(dat_rmr_bind(rmr, &t, RRW, p.ep, bc, 0, &rc));
        r = rtr(rc, (DAT_VADDR)(uintptr_t)(m.buf + RLEN), RLEN);
        memcpy(s.buf, &r, sizeof(r));
        CHECK_OK(send1(p.ep, &s, 0, sizeof(r), 0x5E, 0));
        EXPECT_BIND(p.req_evd, rmr, 0xB1, DAT_RMR_BIND_SUCCESS);
        EXPECT_DTO(p.req_evd, p.ep, 0x5E, DAT_DTO_SUCCESS, sizeof(r));
        /* the client wrote, read back, and says done */
        EXPECT_DTO(p.recv_evd, p.ep, 0xD0, DAT_DTO_SUCCESS, 0);
        CHECK_FILL(m.buf, RLEN, 0x11);
        CHECK_PAT(m.buf + RLEN, RLEN, 55, 0);
        CHECK_FILL(m.buf + 2 * RLEN, RLEN, 0x11);
        /* unbind: the old context stops working */
        t = tr(&m, 0, 0);
        bc.as_64 = 0xB2;
        CHECK_OK(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_NONE_FLAG, p.ep, bc, 0, &rc2));
        EXPECT_BIND(p.req_evd, rmr, 0xB2, DAT_RMR_BIND_SUCCESS);
        PSYNC(&p, 'u');
        EXPECT_GONE(p.conn_evd, p.ep);
        CHECK_PAT(m.buf + RLEN, RLEN, 55, 0);
        PSYNC(&p, 'd');
    } else {
        struct mr rx, l, back;
        DAT_RMR_TRIPLET r;
        PREQUIRE(&p, mr_make(p.ia, p.pz, 64, LRW, &rx) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, RLEN, LRW, &l) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, RLEN, LRW, &back) == DAT_SUCCESS);
        CHECK_OK(recv1(p.ep, &rx, 0, 64, 0xC0, 0));
        PSYNC(&p, 'r');
        PREQUIRE(&p, EXPECT_DTO(p.recv_evd, p.ep, 0xC0, DAT_DTO_SUCCESS, sizeof(r)));
        memcpy(&r, rx.buf, sizeof(r));
        PREQUIRE(&p, r.segment_length == RLEN);
        fill_pat(l.buf, RLEN, 55);
        CHECK_OK(write1(p.ep, &l, 0, RLEN, &r, 0xC1, 0));
        CHECK_OK(read1(p.ep, &back, 0, RLEN, &r, 0xC2, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0xC1, DAT_DTO_SUCCESS, RLEN);
        if (EXPECT_DTO(p.req_evd, p.ep, 0xC2, DAT_DTO_SUCCESS, RLEN))
            CHECK_PAT(back.buf, RLEN, 55, 0);
        CHECK_OK(dat_ep_post_send(p.ep, 0, NULL, ck(0xC3), 0));
        EXPECT_DTO(p.req_evd, p.ep, 0xC3, DAT_DTO_SUCCESS, 0);
        PSYNC(&p, 'u');
        /* the context of the unbound RMR: remote access error, broken connection */
        fill_pat(l.buf, RLEN, 56);
        CHECK_OK(write1(p.ep, &l, 0, RLEN, &r, 0xC4, 0));
        EXPECT_DTO(p.req_evd, p.ep, 0xC4, DAT_DTO_ERR_REMOTE_ACCESS, LEN_ANY);
        EXPECT_CONN(p.conn_evd, p.ep, DAT_CONNECTION_EVENT_BROKEN, 0);
        PSYNC(&p, 'd');
    }
    pair_finish(&p);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
