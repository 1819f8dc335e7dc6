/*
 * Helpers shared by the EP lifecycle tests (ep_lifecycle.c, ep_modify.c,
 * ep_status.c): a one-process fixture (IA, PZ, the three EP EVDs, a CR
 * EVD and the IA/provider attributes), default EP attributes, memory
 * registration, a route to the DISCONNECTED state without a peer, and a
 * few additions to the PAIR fixture of pair.h.
 *
 * Include after ctest.h and pair.h.
 */
#ifndef CTEST_EP_LIFECYCLE_H
#define CTEST_EP_LIFECYCLE_H

#include <stdbool.h>

#define LC_WAIT_US 10000000u /* every event wait: 10 s (§4.0) */
#define LC_BAD_STATE ((DAT_EP_STATE)0xFFFFu)

struct lc {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd, recv_evd, req_evd, conn_evd, cr_evd;
    DAT_PZ_HANDLE pz;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
};

/* Opens the IA and makes the fixture objects. 0 on success. */
static inline int lc_open(struct lc *f)
{
    memset(f, 0, sizeof(*f));
    if (ctest_open_ia(&f->ia, &f->async_evd) != DAT_SUCCESS)
        return -1;
    if (dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &f->ia_attr, DAT_PROVIDER_FIELD_ALL,
                     &f->pr) != DAT_SUCCESS)
        return -1;
    if (dat_pz_create(f->ia, &f->pz) ||
        dat_evd_create(f->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &f->recv_evd) ||
        dat_evd_create(f->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                       &f->req_evd) ||
        dat_evd_create(f->ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &f->conn_evd) ||
        dat_evd_create(f->ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &f->cr_evd))
        return -1;
    return 0;
}

/* Closes the IA abruptly (frees whatever the case left behind). */
static inline void lc_close(struct lc *f)
{
    if (f->ia != DAT_HANDLE_NULL)
        dat_ia_close(f->ia, DAT_CLOSE_ABRUPT_FLAG);
    f->ia = DAT_HANDLE_NULL;
}

/* Explicit, modest attributes every provider can meet. */
static inline void lc_attr(DAT_EP_ATTR *a)
{
    memset(a, 0, sizeof(*a));
    a->service_type = DAT_SERVICE_TYPE_RC;
    a->max_message_size = 65536;
    a->max_rdma_size = 65536;
    a->qos = DAT_QOS_BEST_EFFORT;
    a->recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a->request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a->max_recv_dtos = 16;
    a->max_request_dtos = 16;
    a->max_recv_iov = 2;
    a->max_request_iov = 2;
    a->max_rdma_read_in = 0;
    a->max_rdma_read_out = 0;
    a->srq_soft_hw = DAT_HW_DEFAULT;
    a->max_rdma_read_iov = 1;
    a->max_rdma_write_iov = 2;
    a->ep_transport_specific_count = 0;
    a->ep_transport_specific = NULL;
    a->ep_provider_specific_count = 0;
    a->ep_provider_specific = NULL;
}

/* An EP on the fixture's PZ and EVDs. */
static inline DAT_RETURN lc_ep(struct lc *f, const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
{
    return dat_ep_create(f->ia, f->pz, f->recv_evd, f->req_evd, f->conn_evd, attr, ep);
}

/* An EP with lc_attr() attributes. */
static inline DAT_RETURN lc_ep_default(struct lc *f, DAT_EP_HANDLE *ep)
{
    DAT_EP_ATTR a;
    lc_attr(&a);
    return lc_ep(f, &a, ep);
}

/* The EP's state via dat_ep_get_status, LC_BAD_STATE on failure. */
static inline DAT_EP_STATE lc_state(DAT_EP_HANDLE ep)
{
    DAT_EP_STATE s = LC_BAD_STATE;
    DAT_BOOLEAN ri, qi;
    if (dat_ep_get_status(ep, &s, &ri, &qi) != DAT_SUCCESS)
        return LC_BAD_STATE;
    return s;
}

/* The EP's state via dat_ep_query(EP_STATE), LC_BAD_STATE on failure. */
static inline DAT_EP_STATE lc_qstate(DAT_EP_HANDLE ep)
{
    DAT_EP_PARAM p;
    memset(&p, 0, sizeof(p));
    p.ep_state = LC_BAD_STATE;
    if (dat_ep_query(ep, DAT_EP_FIELD_EP_STATE, &p) != DAT_SUCCESS)
        return LC_BAD_STATE;
    return p.ep_state;
}

/* Polls until the EP reaches `want` (at most ms milliseconds). */
static inline int lc_wait_state(DAT_EP_HANDLE ep, DAT_EP_STATE want, long ms)
{
    for (long i = 0; i <= ms / 10; i++) {
        if (lc_state(ep) == want)
            return 0;
        ctest_sleep_ms(10);
    }
    return -1;
}

static inline DAT_DTO_COOKIE lc_cookie(DAT_UINT64 v)
{
    DAT_DTO_COOKIE c;
    memset(&c, 0, sizeof(c));
    c.as_64 = v;
    return c;
}

/* Waits up to 10 s for one event. */
static inline DAT_RETURN lc_wait(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
    DAT_COUNT nmore = 0;
    memset(ev, 0, sizeof(*ev));
    return dat_evd_wait(evd, LC_WAIT_US, 1, ev, &nmore);
}

/* "No event": after a 200 ms settle delay the EVD is empty (§4.0). */
static inline int lc_no_event(DAT_EVD_HANDLE evd)
{
    DAT_EVENT ev;
    ctest_sleep_ms(200);
    return DAT_GET_TYPE(dat_evd_dequeue(evd, &ev)) == DAT_QUEUE_EMPTY;
}

/* ---- memory ------------------------------------------------------------- */

struct lc_mem {
    void *buf;
    DAT_VLEN len;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    DAT_VADDR va;
};

#define LC_PRIV_LOCAL (DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
#define LC_PRIV_ALL                                                            \
    (DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG |             \
     DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG)

/* Registers a fresh 4096-aligned heap buffer (mk_lmr of §4.0). */
static inline DAT_RETURN lc_mem(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, size_t len,
                                DAT_MEM_PRIV_FLAGS privs, struct lc_mem *m)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_VLEN rs = 0;
    memset(m, 0, sizeof(*m));
    m->buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096);
    if (m->buf == NULL)
        return DAT_INSUFFICIENT_RESOURCES;
    memset(m->buf, 0, len);
    m->len = len;
    memset(&rd, 0, sizeof(rd));
    rd.for_va = m->buf;
    return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, len, pz, privs, &m->lmr, &m->lctx,
                          &m->rctx, &rs, &m->va);
}

/* One-segment triplet over [off, off+len) of m. */
static inline DAT_LMR_TRIPLET lc_iov(const struct lc_mem *m, size_t off, size_t len)
{
    DAT_LMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.lmr_context = m->lctx;
    t.virtual_address = (DAT_VADDR)(uintptr_t)((char *)m->buf + off);
    t.segment_length = len;
    return t;
}

/* Posts a one-segment receive of `len` bytes at offset off. */
static inline DAT_RETURN lc_post_recv(DAT_EP_HANDLE ep, const struct lc_mem *m, size_t off,
                                      size_t len, DAT_UINT64 cookie)
{
    DAT_LMR_TRIPLET t = lc_iov(m, off, len);
    return dat_ep_post_recv(ep, 1, &t, lc_cookie(cookie), DAT_COMPLETION_DEFAULT_FLAG);
}

/* Posts a one-segment send of `len` bytes at offset off. */
static inline DAT_RETURN lc_post_send(DAT_EP_HANDLE ep, const struct lc_mem *m, size_t off,
                                      size_t len, DAT_UINT64 cookie)
{
    DAT_LMR_TRIPLET t = lc_iov(m, off, len);
    return dat_ep_post_send(ep, 1, &t, lc_cookie(cookie), DAT_COMPLETION_DEFAULT_FLAG);
}

/* ---- connection qualifiers and states without a peer -------------------- */

/* A qualifier nobody listens on: one create_any picked, then released. */
static inline int lc_free_qual(DAT_IA_HANDLE ia, DAT_EVD_HANDLE cr_evd, DAT_CONN_QUAL *q)
{
    DAT_PSP_HANDLE psp;
    if (dat_psp_create_any(ia, q, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) != DAT_SUCCESS)
        return -1;
    return dat_psp_free(psp) == DAT_SUCCESS ? 0 : -1;
}

/*
 * Takes an UNCONNECTED EP to DISCONNECTED without a peer: a connect to a
 * qualifier of our own IA address on which nobody listens is refused
 * (T14, or T15/T16), and the EP ends in DISCONNECTED. The failure event
 * is consumed from conn_evd. 0 on success.
 */
static inline int lc_make_disconnected(struct lc *f, DAT_EP_HANDLE ep, DAT_EVD_HANDLE conn_evd)
{
    DAT_CONN_QUAL q;
    DAT_EVENT ev;
    DAT_RETURN r;
    if (lc_free_qual(f->ia, f->cr_evd, &q) != 0)
        return -1;
    r = dat_ep_connect(ep, f->ia_attr.ia_address_ptr, q, 5000000u, 0, NULL, DAT_QOS_BEST_EFFORT,
                       DAT_CONNECT_DEFAULT_FLAG);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    lc_make_disconnected: connect returned 0x%08x\n", (unsigned)r);
        return -1;
    }
    r = lc_wait(conn_evd, &ev);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    lc_make_disconnected: no connection event (0x%08x)\n", (unsigned)r);
        return -1;
    }
    if (ev.event_number != DAT_CONNECTION_EVENT_NON_PEER_REJECTED &&
        ev.event_number != DAT_CONNECTION_EVENT_UNREACHABLE &&
        ev.event_number != DAT_CONNECTION_EVENT_TIMED_OUT) {
        fprintf(stderr, "    lc_make_disconnected: event 0x%x\n", (unsigned)ev.event_number);
        return -1;
    }
    if (lc_wait_state(ep, DAT_EP_STATE_DISCONNECTED, 2000) != 0) {
        fprintf(stderr, "    lc_make_disconnected: state %u\n", (unsigned)lc_state(ep));
        return -1;
    }
    return 0;
}

/* An RSP for ep on a free qualifier. */
static inline DAT_RETURN lc_rsp(struct lc *f, DAT_EP_HANDLE ep, DAT_RSP_HANDLE *rsp)
{
    DAT_CONN_QUAL q;
    if (lc_free_qual(f->ia, f->cr_evd, &q) != 0)
        return DAT_INTERNAL_ERROR;
    return dat_rsp_create(f->ia, q, ep, f->cr_evd, rsp);
}

/* Capability helpers. */
static inline bool lc_srq_supported(const struct lc *f)
{
    return f->pr.srq_supported != DAT_FALSE;
}

static inline DAT_RETURN lc_srq(struct lc *f, DAT_PZ_HANDLE pz, DAT_COUNT n, DAT_SRQ_HANDLE *srq)
{
    DAT_SRQ_ATTR a;
    a.max_recv_dtos = n;
    a.max_recv_iov = 2;
    a.low_watermark = DAT_SRQ_LW_DEFAULT;
    return dat_srq_create(f->ia, pz, &a, srq);
}

/* ---- PAIR additions ------------------------------------------------------ */

/* Ends the pair at once after a failed setup step in either process. */
static inline void lc_pair_abort(struct pair *p)
{
    if (p->server) {
        fflush(stdout);
        fflush(stderr);
        _exit(1);
    }
    if (p->server_pid > 0) {
        kill(p->server_pid, SIGKILL);
        waitpid(p->server_pid, NULL, 0);
    }
}

/* REQUIRE for either side of a pair: a failure ends both processes. */
#define PREQUIRE(p, cond)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "    %s:%d: %s: REQUIRE failed: %s\n", __FILE__,   \
                    __LINE__, (p)->server ? "server" : "client", #cond);       \
            ctest_failures++;                                                  \
            lc_pair_abort(p);                                                  \
            return;                                                            \
        }                                                                      \
    } while (0)

/* pair_start, and the IA/provider attributes of this side. */
static inline int lc_pair_start(struct pair *p, DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR *pr)
{
    if (pair_start(p) != 0)
        return -1;
    if (dat_ia_query(p->ia, NULL, DAT_IA_FIELD_ALL, ia_attr, DAT_PROVIDER_FIELD_ALL, pr) !=
        DAT_SUCCESS)
        return -1;
    return 0;
}

/*
 * Connects an EP the caller created (pair_connect makes its own): the
 * client connects `ep`, the server accepts the next CR onto `ep`; both
 * wait for ESTABLISHED on conn_evd.
 */
static inline int lc_pair_connect_ep(struct pair *p, DAT_EP_HANDLE ep, DAT_EVD_HANDLE conn_evd)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    if (p->server) {
        r = lc_wait(p->cr_evd, &ev);
        if (r != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
            fprintf(stderr, "    server: no CR (0x%08x, event 0x%x)\n", (unsigned)r,
                    (unsigned)ev.event_number);
            return -1;
        }
        r = dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    server: accept 0x%08x\n", (unsigned)r);
            return -1;
        }
    } else {
        r = dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, p->qual, PAIR_WAIT_US, 0,
                           NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    client: connect 0x%08x\n", (unsigned)r);
            return -1;
        }
    }
    r = lc_wait(conn_evd, &ev);
    if (r != DAT_SUCCESS || ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        fprintf(stderr, "    %s: no ESTABLISHED (0x%08x, event 0x%x)\n",
                p->server ? "server" : "client", (unsigned)r, (unsigned)ev.event_number);
        return -1;
    }
    return 0;
}

/*
 * Server: replaces the pair's PSP by an RSP for `ep` on the same
 * qualifier (the client already knows it). 0 on success.
 */
static inline int lc_pair_rsp(struct pair *p, DAT_EP_HANDLE ep, DAT_RSP_HANDLE *rsp)
{
    DAT_RETURN r;
    if (dat_psp_free(p->psp) != DAT_SUCCESS)
        return -1;
    p->psp = DAT_HANDLE_NULL;
    r = dat_rsp_create(p->ia, p->qual, ep, p->cr_evd, rsp);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    server: dat_rsp_create 0x%08x\n", (unsigned)r);
        return -1;
    }
    return 0;
}

/* Client: connects the pair's default EP to the server and expects an event. */
static inline DAT_RETURN lc_pair_connect_start(struct pair *p, DAT_EP_HANDLE ep)
{
    return dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, p->qual, PAIR_WAIT_US, 0,
                          NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}

/*
 * STALL (§4.0), client side: holds an RDMA Read of the server's region in
 * progress by stopping the server process. The server exported
 * (rmr_context, address, length) with pair_tell. Returns 1 when the read
 * is held (server stopped), 0 when it completed anyway (STALL
 * unavailable; server resumed), -1 on error (server resumed).
 */
struct lc_remote {
    DAT_RMR_CONTEXT rctx;
    DAT_VADDR addr;
    DAT_VLEN len;
};

static inline int lc_stall(struct pair *p, DAT_EP_HANDLE ep, DAT_EVD_HANDLE req_evd,
                           const struct lc_mem *local, const struct lc_remote *rem)
{
    DAT_LMR_TRIPLET l = lc_iov(local, 0, (size_t)rem->len);
    DAT_RMR_TRIPLET r;
    DAT_EVENT ev;
    DAT_RETURN ret;
    memset(&r, 0, sizeof(r));
    r.rmr_context = rem->rctx;
    r.target_address = rem->addr;
    r.segment_length = rem->len;
    if (kill(p->server_pid, SIGSTOP) != 0)
        return -1;
    ctest_sleep_ms(100);
    ret = dat_ep_post_rdma_read(ep, 1, &l, lc_cookie(0x5A11), &r, DAT_COMPLETION_DEFAULT_FLAG);
    if (ret != DAT_SUCCESS) {
        fprintf(stderr, "    STALL: post_rdma_read 0x%08x\n", (unsigned)ret);
        kill(p->server_pid, SIGCONT);
        return -1;
    }
    ctest_sleep_ms(300);
    if (dat_evd_dequeue(req_evd, &ev) == DAT_SUCCESS) {
        kill(p->server_pid, SIGCONT);
        return 0;
    }
    return 1;
}

#endif /* CTEST_EP_LIFECYCLE_H */
