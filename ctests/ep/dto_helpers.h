/*
 * Helpers of the DTO and SRQ conformance tests (ctests/ep/dto_*.c, srq.c):
 * registered buffers, data patterns, event checks with every field, EP
 * attributes, extra connections beside the PAIR fixture, STALL (§4.0).
 *
 * Include after nothing else: it includes ctest.h, pair.h and waiter.h.
 * (Changes here do not trigger a rebuild by the Makefile: touch the .c
 * files or remove build/ctests/ep.)
 */
#ifndef DTO_HELPERS_H
#define DTO_HELPERS_H

#define BOGUS_EVD ((DAT_EVD_HANDLE)(uintptr_t)0x5A5A5A50u)

#include "ctest.h"
#include "pair.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#include "waiter.h"
#pragma GCC diagnostic pop

#include <stdarg.h>
#include <sys/mman.h>

#define SEC 1000000u
#define LRW (DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
#define RRW (DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
#define PALL DAT_MEM_PRIV_ALL_FLAG

/*
 * The status of a receive too short for the message it gets: LOCAL_LENGTH,
 * except on rxe, which completes it with IBV_WC_LOC_QP_OP_ERR (the
 * responder's length error): DAT_DTO_ERR_LOCAL_EP. A device difference
 * (docs/verbs.md), told by the IA's "device" attribute.
 */
static inline DAT_DTO_COMPLETION_STATUS too_short_status(DAT_IA_HANDLE ia)
{
    return pair_ia_attr_is(ia, "device", "rxe", 0) ? DAT_DTO_ERR_LOCAL_EP
                                                   : DAT_DTO_ERR_LOCAL_LENGTH;
}

/* "any error status" / "length not checked" for EXPECT_DTO */
#define ST_ANY_ERROR 0xFFFFFFFFu
#define ST_SUCCESS_OR_FLUSH 0xFFFFFFFEu
#define ST_ANY 0xFFFFFFFDu
#define LEN_ANY (~(DAT_VLEN)0)

_Static_assert(DAT_DTO_LENGTH_ERROR == 2, "DAT_DTO_LENGTH_ERROR alias");
_Static_assert(DAT_DTO_ERR_LOCAL_LENGTH == 2, "DAT_DTO_ERR_LOCAL_LENGTH");
_Static_assert(DAT_DTO_ERR_FLUSHED == 1, "DAT_DTO_ERR_FLUSHED");

static inline const char *side(void);

/* ---- buffers ------------------------------------------------------------ */

/* Buffers are remembered here so that none is ever a definite leak (valgrind)
 * and none is freed while a registration or a peer may still touch it. */
static void *volatile dto_keep[4096];
static int dto_nkeep;

static inline unsigned char *dbuf(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, len ? len : 1) != 0)
        return NULL;
    memset(p, 0, len ? len : 1);
    if (dto_nkeep < (int)(sizeof(dto_keep) / sizeof(dto_keep[0])))
        dto_keep[dto_nkeep++] = p;
    return p;
}

struct mr {
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    unsigned char *buf;
    DAT_VLEN len;
};

/* Registers `buf` (len bytes) with DAT_MEM_TYPE_VIRTUAL. */
static inline DAT_RETURN mr_over(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, void *buf, size_t len,
                                 DAT_MEM_PRIV_FLAGS priv, struct mr *m)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_VLEN rs = 0;
    DAT_VADDR ra = 0;
    memset(&rd, 0, sizeof(rd));
    rd.for_va = buf;
    m->h = DAT_HANDLE_NULL;
    m->lc = 0;
    m->rc = 0;
    m->buf = buf;
    m->len = len;
    return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, len, pz, priv, &m->h, &m->lc, &m->rc, &rs,
                          &ra);
}

/* mk_lmr of §4.0: a fresh zeroed, page-aligned heap buffer, registered. */
static inline DAT_RETURN mr_make(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, size_t len,
                                 DAT_MEM_PRIV_FLAGS priv, struct mr *m)
{
    unsigned char *b = dbuf(len);
    if (b == NULL)
        return DAT_INSUFFICIENT_RESOURCES | DAT_CLASS_ERROR;
    return mr_over(ia, pz, b, len, priv, m);
}

static inline DAT_LMR_TRIPLET tr(const struct mr *m, size_t off, DAT_VLEN len)
{
    DAT_LMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.lmr_context = m->lc;
    t.virtual_address = (DAT_VADDR)(uintptr_t)(m->buf + off);
    t.segment_length = len;
    return t;
}

static inline DAT_LMR_TRIPLET tr_raw(DAT_LMR_CONTEXT lc, DAT_VADDR va, DAT_VLEN len)
{
    DAT_LMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.lmr_context = lc;
    t.virtual_address = va;
    t.segment_length = len;
    return t;
}

static inline DAT_RMR_TRIPLET rtr(DAT_RMR_CONTEXT rc, DAT_VADDR addr, DAT_VLEN len)
{
    DAT_RMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.rmr_context = rc;
    t.target_address = addr;
    t.segment_length = len;
    return t;
}

/* The remote triplet of a whole registered buffer (its LMR rmr_context). */
static inline DAT_RMR_TRIPLET rtr_of(const struct mr *m, size_t off, DAT_VLEN len)
{
    return rtr(m->rc, (DAT_VADDR)(uintptr_t)(m->buf + off), len);
}

static inline DAT_DTO_COOKIE ck(uint64_t v)
{
    DAT_DTO_COOKIE c;
    memset(&c, 0, sizeof(c));
    c.as_64 = v;
    return c;
}

/* ---- data patterns ------------------------------------------------------ */

static inline unsigned char pat_byte(uint32_t seed, size_t i)
{
    uint64_t x = (uint64_t)seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (unsigned char)x;
}

static inline void fill_pat(unsigned char *b, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = pat_byte(seed, i + 0);
}

/* Compares b[0..n) with the pattern bytes [from, from+n) of `seed`. */
static inline int check_pat_at(const char *file, int line, const unsigned char *b, size_t n,
                               uint32_t seed, size_t from, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] != pat_byte(seed, from + i)) {
            fprintf(stderr, "    %s:%d: %s%s: byte %zu of %zu is 0x%02x, want 0x%02x\n", file,
                    line, side(), what, i, n, b[i], pat_byte(seed, from + i));
            ctest_failures++;
            return 0;
        }
    }
    return 1;
}
#define CHECK_PAT(b, n, seed, from) check_pat_at(__FILE__, __LINE__, (b), (n), (seed), (from), #b)

static inline int check_fill_at(const char *file, int line, const unsigned char *b, size_t n,
                                unsigned char v, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] != v) {
            fprintf(stderr, "    %s:%d: %s%s: byte %zu of %zu is 0x%02x, want untouched 0x%02x\n",
                    file, line, side(), what, i, n, b[i], v);
            ctest_failures++;
            return 0;
        }
    }
    return 1;
}
#define CHECK_FILL(b, n, v) check_fill_at(__FILE__, __LINE__, (b), (n), (v), #b)

/* ---- events ------------------------------------------------------------- */

static int dto_is_server;
static inline const char *side(void) { return dto_is_server ? "[server] " : ""; }

/* One line on stderr in one write, so that the two processes' lines do not
 * interleave. */
static inline void say_line(const char *file, int line, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline void say_line(const char *file, int line, const char *what, const char *fmt, ...)
{
    char buf[1024];
    int n;
    va_list ap;
    if (file != NULL)
        n = snprintf(buf, sizeof(buf), "    %s:%d: %s%s", file, line, side(), what);
    else
        n = snprintf(buf, sizeof(buf), "    %s%s", side(), what);
    if (n < 0 || n >= (int)sizeof(buf))
        n = 0;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = (int)strlen(buf);
    buf[n++] = '\n';
    fflush(stderr);
    if (write(2, buf, (size_t)n) < 0) {
    }
}

static inline const char *ev_name(DAT_EVENT_NUMBER n)
{
    switch (n) {
    case DAT_DTO_COMPLETION_EVENT: return "DTO_COMPLETION";
    case DAT_RMR_BIND_COMPLETION_EVENT: return "RMR_BIND_COMPLETION";
    case DAT_CONNECTION_REQUEST_EVENT: return "CONNECTION_REQUEST";
    case DAT_CONNECTION_EVENT_ESTABLISHED: return "ESTABLISHED";
    case DAT_CONNECTION_EVENT_PEER_REJECTED: return "PEER_REJECTED";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "NON_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return "ACCEPT_COMPLETION_ERROR";
    case DAT_CONNECTION_EVENT_DISCONNECTED: return "DISCONNECTED";
    case DAT_CONNECTION_EVENT_BROKEN: return "BROKEN";
    case DAT_CONNECTION_EVENT_TIMED_OUT: return "TIMED_OUT";
    case DAT_CONNECTION_EVENT_UNREACHABLE: return "UNREACHABLE";
    case DAT_SOFTWARE_EVENT: return "SOFTWARE";
    default: return "?";
    }
}

static inline void ev_print(const DAT_EVENT *ev)
{
    fprintf(stderr, "      event 0x%05x (%s) evd %p", (unsigned)ev->event_number,
            ev_name(ev->event_number), (void *)ev->evd_handle);
    if (ev->event_number == DAT_DTO_COMPLETION_EVENT) {
        const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
        fprintf(stderr, ": ep %p cookie 0x%llx status %u length %llu", (void *)d->ep_handle,
                (unsigned long long)d->user_cookie.as_64, (unsigned)d->status,
                (unsigned long long)d->transfered_length);
    } else if (ev->event_number == DAT_RMR_BIND_COMPLETION_EVENT) {
        const DAT_RMR_BIND_COMPLETION_EVENT_DATA *d = &ev->event_data.rmr_completion_event_data;
        fprintf(stderr, ": rmr %p cookie 0x%llx status %u", (void *)d->rmr_handle,
                (unsigned long long)d->user_cookie.as_64, (unsigned)d->status);
    } else if (ev->event_number >= DAT_CONNECTION_EVENT_ESTABLISHED &&
               ev->event_number <= DAT_CONNECTION_EVENT_UNREACHABLE) {
        fprintf(stderr, ": ep %p", (void *)ev->event_data.connect_event_data.ep_handle);
    }
    fprintf(stderr, "\n");
}

/* One event within `to` µs. 1 on success; prints the reason otherwise. */
static inline int get_ev_at(const char *file, int line, DAT_EVD_HANDLE evd, DAT_EVENT *ev,
                            DAT_TIMEOUT to)
{
    DAT_COUNT nmore = 0;
    DAT_RETURN r;
    memset(ev, 0, sizeof(*ev));
    r = dat_evd_wait(evd, to, 1, ev, &nmore);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %s:%d: %sdat_evd_wait(%p) returned 0x%08x, no event\n", file, line,
                side(), (void *)evd, (unsigned)r);
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define GET_EV(evd, ev) get_ev_at(__FILE__, __LINE__, (evd), (ev), 10 * SEC)

static inline int status_ok(DAT_DTO_COMPLETION_STATUS got, DAT_DTO_COMPLETION_STATUS want)
{
    if (want == ST_ANY_ERROR)
        return got != DAT_DTO_SUCCESS;
    if (want == ST_ANY)
        return 1;
    if (want == ST_SUCCESS_OR_FLUSH)
        return got == DAT_DTO_SUCCESS || got == DAT_DTO_ERR_FLUSHED;
    return got == want;
}

/* Checks one dequeued event against a DTO completion, every field. */
static inline int check_dto_ev_at(const char *file, int line, const DAT_EVENT *ev,
                                  DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, uint64_t cookie,
                                  DAT_DTO_COMPLETION_STATUS st, DAT_VLEN len)
{
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
    int ok = ev->event_number == DAT_DTO_COMPLETION_EVENT && ev->evd_handle == evd &&
             d->ep_handle == ep && d->user_cookie.as_64 == cookie && status_ok(d->status, st) &&
             (len == LEN_ANY || d->status != DAT_DTO_SUCCESS || d->transfered_length == len);
    if (!ok) {
        fprintf(stderr,
                "    %s:%d: %swrong DTO completion; want evd %p ep %p cookie 0x%llx status %d "
                "length %lld\n",
                file, line, side(), (void *)evd, (void *)ep, (unsigned long long)cookie, (int)st,
                (long long)len);
        ev_print(ev);
        ctest_failures++;
    }
    return ok;
}

/* Waits (10 s) for a DTO completion and checks every field. */
static inline int expect_dto_at(const char *file, int line, DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep,
                                uint64_t cookie, DAT_DTO_COMPLETION_STATUS st, DAT_VLEN len)
{
    DAT_EVENT ev;
    if (!get_ev_at(file, line, evd, &ev, 10 * SEC))
        return 0;
    return check_dto_ev_at(file, line, &ev, evd, ep, cookie, st, len);
}
#define EXPECT_DTO(evd, ep, cookie, st, len)                                                   \
    expect_dto_at(__FILE__, __LINE__, (evd), (ep), (cookie), (st), (len))

static inline int expect_bind_at(const char *file, int line, DAT_EVD_HANDLE evd,
                                 DAT_RMR_HANDLE rmr, uint64_t cookie,
                                 DAT_DTO_COMPLETION_STATUS st)
{
    DAT_EVENT ev;
    const DAT_RMR_BIND_COMPLETION_EVENT_DATA *d = &ev.event_data.rmr_completion_event_data;
    if (!get_ev_at(file, line, evd, &ev, 10 * SEC))
        return 0;
    if (ev.event_number != DAT_RMR_BIND_COMPLETION_EVENT || ev.evd_handle != evd ||
        d->rmr_handle != rmr || d->user_cookie.as_64 != cookie || !status_ok(d->status, st)) {
        fprintf(stderr,
                "    %s:%d: %swrong RMR bind completion; want evd %p rmr %p cookie 0x%llx "
                "status %d\n",
                file, line, side(), (void *)evd, (void *)rmr, (unsigned long long)cookie, (int)st);
        ev_print(&ev);
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define EXPECT_BIND(evd, rmr, cookie, st) expect_bind_at(__FILE__, __LINE__, (evd), (rmr), (cookie), (st))

/* "No event": settle `ms`, then dequeue → DAT_QUEUE_EMPTY. */
static inline int expect_none_at(const char *file, int line, DAT_EVD_HANDLE evd, long ms)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    ctest_sleep_ms(ms);
    memset(&ev, 0, sizeof(ev));
    r = dat_evd_dequeue(evd, &ev);
    if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY) {
        fprintf(stderr, "    %s:%d: %sexpected no event on %p, dat_evd_dequeue returned 0x%08x\n",
                file, line, side(), (void *)evd, (unsigned)r);
        if (r == DAT_SUCCESS)
            ev_print(&ev);
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define EXPECT_NONE(evd) expect_none_at(__FILE__, __LINE__, (evd), 200)

/* Waits for a connection event on `evd` whose number is n1 or n2 (n2 0: only n1). */
static inline int expect_conn_at(const char *file, int line, DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep,
                                 DAT_EVENT_NUMBER n1, DAT_EVENT_NUMBER n2)
{
    DAT_EVENT ev;
    if (!get_ev_at(file, line, evd, &ev, 10 * SEC))
        return 0;
    if ((ev.event_number != n1 && (n2 == 0 || ev.event_number != n2)) || ev.evd_handle != evd ||
        ev.event_data.connect_event_data.ep_handle != ep) {
        fprintf(stderr, "    %s:%d: %swant connection event 0x%x%s on evd %p for ep %p\n", file,
                line, side(), (unsigned)n1, n2 ? " (or the alternative)" : "", (void *)evd,
                (void *)ep);
        ev_print(&ev);
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define EXPECT_CONN(evd, ep, n1, n2) expect_conn_at(__FILE__, __LINE__, (evd), (ep), (n1), (n2))
#define EXPECT_GONE(evd, ep)                                                                   \
    expect_conn_at(__FILE__, __LINE__, (evd), (ep), DAT_CONNECTION_EVENT_DISCONNECTED,           \
                   DAT_CONNECTION_EVENT_BROKEN)

/* Drains the EVD without checking (after the point of a test). */
static inline int drain(DAT_EVD_HANDLE evd)
{
    DAT_EVENT ev;
    int n = 0;
    while (dat_evd_dequeue(evd, &ev) == DAT_SUCCESS)
        n++;
    return n;
}

/* ---- EP helpers --------------------------------------------------------- */

static inline DAT_EP_STATE ep_state(DAT_EP_HANDLE ep)
{
    DAT_EP_STATE s = 0xFFFFu;
    DAT_BOOLEAN ri, qi;
    if (dat_ep_get_status(ep, &s, &ri, &qi) != DAT_SUCCESS)
        return 0xFFFFu;
    return s;
}

static inline int ep_attr_of(DAT_EP_HANDLE ep, DAT_EP_ATTR *a)
{
    DAT_EP_PARAM prm;
    memset(&prm, 0, sizeof(prm));
    if (dat_ep_query(ep, DAT_EP_FIELD_ALL, &prm) != DAT_SUCCESS)
        return -1;
    *a = prm.ep_attr;
    a->ep_transport_specific_count = 0;
    a->ep_transport_specific = NULL;
    a->ep_provider_specific_count = 0;
    a->ep_provider_specific = NULL;
    return 0;
}

static inline int ia_attrs(DAT_IA_HANDLE ia, DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR *pr)
{
    DAT_IA_ATTR a;
    DAT_PROVIDER_ATTR p;
    if (dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &p) != DAT_SUCCESS)
        return -1;
    if (ia_attr)
        *ia_attr = a;
    if (pr)
        *pr = p;
    return 0;
}

/* The provider's default EP attributes (an EP created with NULL attributes). */
static inline int ep_defaults(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv,
                              DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn, DAT_EP_ATTR *a)
{
    DAT_EP_HANDLE ep;
    int r;
    if (dat_ep_create(ia, pz, recv, req, conn, NULL, &ep) != DAT_SUCCESS)
        return -1;
    r = ep_attr_of(ep, a);
    if (dat_ep_free(ep) != DAT_SUCCESS)
        return -1;
    return r;
}

static inline DAT_COUNT imax(DAT_COUNT a, DAT_COUNT b) { return a > b ? a : b; }
static inline DAT_COUNT imin(DAT_COUNT a, DAT_COUNT b) { return a < b ? a : b; }

/*
 * The attributes most DTO tests connect with: the provider defaults, with
 * at least 4 IOV segments per direction, 4 RDMA Reads each way and 32 DTOs
 * per queue (within the IA limits).
 */
static inline int dto_attr(struct pair *p, DAT_EP_ATTR *a)
{
    DAT_IA_ATTR ia_a;
    if (ep_defaults(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, a) != 0 ||
        ia_attrs(p->ia, &ia_a, NULL) != 0)
        return -1;
    a->max_recv_iov = imin(imax(a->max_recv_iov, 4), ia_a.max_iov_segments_per_dto);
    a->max_request_iov = imin(imax(a->max_request_iov, 4), ia_a.max_iov_segments_per_dto);
    a->max_rdma_read_iov = imin(imax(a->max_rdma_read_iov, 4), ia_a.max_iov_segments_per_rdma_read);
    a->max_rdma_write_iov =
        imin(imax(a->max_rdma_write_iov, 4), ia_a.max_iov_segments_per_rdma_write);
    a->max_rdma_read_in = imin(imax(a->max_rdma_read_in, 4), ia_a.max_rdma_read_per_ep_in);
    a->max_rdma_read_out = imin(imax(a->max_rdma_read_out, 4), ia_a.max_rdma_read_per_ep_out);
    a->max_recv_dtos = imin(imax(a->max_recv_dtos, 32), ia_a.max_dto_per_ep);
    a->max_request_dtos = imin(imax(a->max_request_dtos, 32), ia_a.max_dto_per_ep);
    return 0;
}

/* ---- the PAIR fixture, with a watchdog in the server and clean aborts ---- */

static inline int dpair_start(struct pair *p)
{
    int r = pair_start(p);
    dto_is_server = p->server;
    if (p->server)
        alarm(CTEST_TIMEOUT_SECONDS);
    return r;
}

static inline void pair_abort(struct pair *p)
{
    if (p->server) {
        fflush(stdout);
        fflush(stderr);
        _exit(1);
    }
    kill(p->server_pid, SIGKILL);
    waitpid(p->server_pid, NULL, 0);
}

/* REQUIRE for pair tests: on failure the server exits and the client kills it. */
#define PREQUIRE(p, cond)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "    %s:%d: %sREQUIRE failed: %s\n", __FILE__, __LINE__, side(),   \
                    #cond);                                                                    \
            ctest_failures++;                                                                  \
            pair_abort(p);                                                                     \
            return;                                                                            \
        }                                                                                      \
    } while (0)

/* pair_sync that fails the case when the peer does not answer. */
#define PSYNC(p, tag) PREQUIRE(p, pair_sync((p), (tag)) == 0)

/* SKIP in a pair test: both sides must call it (the client reaps the server). */
#define PSKIP(p, why)                                                                          \
    do {                                                                                       \
        pair_finish(p);                                                                        \
        SKIP(why);                                                                             \
    } while (0)

/* Whether the IA has memory windows (siw has none: max_rmrs 0, and
 * dat_rmr_create answers DAT_MODEL_NOT_SUPPORTED). */
static inline int rmr_supported(DAT_IA_HANDLE ia)
{
    DAT_IA_ATTR a;
    memset(&a, 0, sizeof(a));
    return dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL) == DAT_SUCCESS && a.max_rmrs > 0;
}

#define PNEED_RMR(p)                                                                           \
    do {                                                                                       \
        if (!rmr_supported((p)->ia))                                                           \
            PSKIP(p, "the IA has no memory windows (max_rmrs 0)");                             \
    } while (0)

typedef void (*dpair_hook)(struct pair *p);

/*
 * pair_connect with hooks: `created` runs after dat_ep_create, `pending`
 * after dat_ep_connect / dat_cr_accept returned (before ESTABLISHED).
 */
static inline int dpair_connect(struct pair *p, const DAT_EP_ATTR *attr, dpair_hook created,
                                dpair_hook pending)
{
    DAT_EVENT ev;
    if (dat_ep_create(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, attr, &p->ep))
        return -1;
    if (created)
        created(p);
    if (p->server) {
        if (pair_wait(p->cr_evd, &ev) != DAT_SUCCESS ||
            ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
            return -1;
        if (dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, p->ep, 0, NULL))
            return -1;
    } else {
        if (dat_ep_connect(p->ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, p->qual, PAIR_WAIT_US, 0,
                           NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG))
            return -1;
    }
    if (pending)
        pending(p);
    if (pair_wait(p->conn_evd, &ev) != DAT_SUCCESS ||
        ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        return -1;
    return 0;
}

/*
 * Takes the connection down: the client disconnects abruptly and waits for
 * its DISCONNECTED event; the server waits for DISCONNECTED or BROKEN.
 * Both then see their EP in DISCONNECTED.
 */
static inline int pair_disconnect(struct pair *p)
{
    if (!p->server) {
        DAT_RETURN r = dat_ep_disconnect(p->ep, DAT_CLOSE_ABRUPT_FLAG);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    dat_ep_disconnect returned 0x%08x\n", (unsigned)r);
            return -1;
        }
        if (!EXPECT_CONN(p->conn_evd, p->ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0))
            return -1;
    } else if (!EXPECT_GONE(p->conn_evd, p->ep)) {
        return -1;
    }
    if (ep_state(p->ep) != DAT_EP_STATE_DISCONNECTED) {
        fprintf(stderr, "    %sstate after the disconnect event is %u, want DISCONNECTED\n", side(),
                (unsigned)ep_state(p->ep));
        return -1;
    }
    return 0;
}

#define NOTE_SKIP(why)                                                                         \
    do {                                                                                       \
        fprintf(stderr, "    partly skipped: %s\n", why);                                      \
        ctest_skipped = 1;                                                                     \
    } while (0)

/* Client: connect an extra, already created EP to the server's PSP. */
static inline int cli_connect(struct pair *p, DAT_EP_HANDLE ep, DAT_EVD_HANDLE conn_evd)
{
    DAT_EVENT ev;
    if (dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, p->qual, PAIR_WAIT_US, 0, NULL,
                       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG))
        return -1;
    if (pair_wait(conn_evd, &ev) != DAT_SUCCESS ||
        ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
        ev.event_data.connect_event_data.ep_handle != ep)
        return -1;
    return 0;
}

/* Server: accept the next connection request on p->cr_evd with `ep`. */
static inline int srv_accept(struct pair *p, DAT_EP_HANDLE ep, DAT_EVD_HANDLE conn_evd)
{
    DAT_EVENT ev;
    if (pair_wait(p->cr_evd, &ev) != DAT_SUCCESS ||
        ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
        return -1;
    if (dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL))
        return -1;
    if (pair_wait(conn_evd, &ev) != DAT_SUCCESS ||
        ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED ||
        ev.event_data.connect_event_data.ep_handle != ep)
        return -1;
    return 0;
}

/* Replace one of the fixture's EVDs by a new one of queue length qlen. */
static inline int new_evd(struct pair *p, DAT_EVD_FLAGS flags, DAT_COUNT qlen, DAT_EVD_HANDLE *evd)
{
    return dat_evd_create(p->ia, qlen, DAT_HANDLE_NULL, flags, evd) == DAT_SUCCESS ? 0 : -1;
}

/* ---- small DTO wrappers ------------------------------------------------- */

static inline DAT_RETURN send1(DAT_EP_HANDLE ep, const struct mr *m, size_t off, DAT_VLEN len,
                               uint64_t cookie, DAT_COMPLETION_FLAGS fl)
{
    DAT_LMR_TRIPLET t = tr(m, off, len);
    return dat_ep_post_send(ep, 1, &t, ck(cookie), fl);
}

static inline DAT_RETURN recv1(DAT_EP_HANDLE ep, const struct mr *m, size_t off, DAT_VLEN len,
                               uint64_t cookie, DAT_COMPLETION_FLAGS fl)
{
    DAT_LMR_TRIPLET t = tr(m, off, len);
    return dat_ep_post_recv(ep, 1, &t, ck(cookie), fl);
}

static inline DAT_RETURN read1(DAT_EP_HANDLE ep, const struct mr *m, size_t off, DAT_VLEN len,
                               const DAT_RMR_TRIPLET *r, uint64_t cookie, DAT_COMPLETION_FLAGS fl)
{
    DAT_LMR_TRIPLET t = tr(m, off, len);
    return dat_ep_post_rdma_read(ep, 1, &t, ck(cookie), r, fl);
}

static inline DAT_RETURN write1(DAT_EP_HANDLE ep, const struct mr *m, size_t off, DAT_VLEN len,
                                const DAT_RMR_TRIPLET *r, uint64_t cookie, DAT_COMPLETION_FLAGS fl)
{
    DAT_LMR_TRIPLET t = tr(m, off, len);
    return dat_ep_post_rdma_write(ep, 1, &t, ck(cookie), r, fl);
}

/* Posts n receives of sz bytes each (slices of one new LMR), cookies base+i. */
static inline int post_recvs(struct pair *p, DAT_EP_HANDLE ep, struct mr *m, int n, size_t sz,
                             uint64_t base)
{
    if (mr_make(p->ia, p->pz, (size_t)n * sz, LRW, m) != DAT_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++)
        if (recv1(ep, m, (size_t)i * sz, sz, base + (uint64_t)i, 0) != DAT_SUCCESS)
            return -1;
    return 0;
}

/* ---- remote regions over the pipe --------------------------------------- */

/* Tell the peer a remote triplet. */
static inline int tell_rtr(struct pair *p, const DAT_RMR_TRIPLET *r) { return pair_tell(p, r, sizeof(*r)); }
static inline int hear_rtr(struct pair *p, DAT_RMR_TRIPLET *r) { return pair_hear(p, r, sizeof(*r)); }

/* ---- STALL (§4.0) -------------------------------------------------------- */

/*
 * Client: stop the server process and post an RDMA Read (cookie) of the
 * server region r into `local`. Returns 1 when the read is held in progress
 * (the server stays stopped; call stall_end), 0 when it completed anyway
 * (the server is continued; the caller skips), -1 on an error.
 */
static inline int stall_begin(struct pair *p, const struct mr *local, const DAT_RMR_TRIPLET *r,
                              uint64_t cookie)
{
    int st;
    DAT_EVENT ev;
    DAT_RETURN ret;
    if (kill(p->server_pid, SIGSTOP) != 0 || waitpid(p->server_pid, &st, WUNTRACED) != p->server_pid)
        return -1;
    ret = read1(p->ep, local, 0, r->segment_length, r, cookie, 0);
    if (ret != DAT_SUCCESS) {
        fprintf(stderr, "    STALL: dat_ep_post_rdma_read returned 0x%08x\n", (unsigned)ret);
        kill(p->server_pid, SIGCONT);
        return -1;
    }
    ctest_sleep_ms(300);
    ret = dat_evd_dequeue(p->req_evd, &ev);
    if (ret == DAT_SUCCESS) {
        fprintf(stderr, "    STALL: the read completed while the server was stopped\n");
        kill(p->server_pid, SIGCONT);
        return 0;
    }
    return 1;
}

static inline void stall_end(struct pair *p) { kill(p->server_pid, SIGCONT); }

/* Server side of STALL: export a 4096-byte remote-readable region. */
static inline int stall_export(struct pair *p, struct mr *m)
{
    DAT_RMR_TRIPLET r;
    if (mr_make(p->ia, p->pz, 4096, LRW | DAT_MEM_PRIV_REMOTE_READ_FLAG, m) != DAT_SUCCESS)
        return -1;
    fill_pat(m->buf, 4096, 77);
    r = rtr_of(m, 0, 4096);
    return tell_rtr(p, &r);
}

/* ---- one-process fixture ------------------------------------------------ */

struct loc {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, recv, req, conn;
    DAT_PZ_HANDLE pz, pz2;
    DAT_EP_HANDLE ep; /* created by loc_open_ep */
};

/* IA, two PZs, recv/request (DTO|RMR_BIND) and connect EVDs of qlen 64. */
static inline int loc_open(struct loc *l)
{
    memset(l, 0, sizeof(*l));
    if (ctest_open_ia(&l->ia, &l->aevd) != DAT_SUCCESS ||
        dat_pz_create(l->ia, &l->pz) != DAT_SUCCESS ||
        dat_pz_create(l->ia, &l->pz2) != DAT_SUCCESS ||
        dat_evd_create(l->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &l->recv) != DAT_SUCCESS ||
        dat_evd_create(l->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                       &l->req) != DAT_SUCCESS ||
        dat_evd_create(l->ia, 64, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &l->conn) !=
            DAT_SUCCESS) {
        fprintf(stderr, "    loc_open: fixture setup failed\n");
        return -1;
    }
    return 0;
}

static inline int loc_open_ep(struct loc *l, const DAT_EP_ATTR *attr)
{
    if (loc_open(l) != 0)
        return -1;
    if (dat_ep_create(l->ia, l->pz, l->recv, l->req, l->conn, attr, &l->ep) != DAT_SUCCESS) {
        fprintf(stderr, "    loc_open_ep: dat_ep_create failed\n");
        return -1;
    }
    return 0;
}

/* ---- handles ------------------------------------------------------------ */

/* A block of garbage that is aligned and readable (never a live handle). */
static DAT_UINT64 dto_junk[64] __attribute__((unused)) = {
    0xA5A5A5A5A5A5A5A5ull, 0x0123456789ABCDEFull, 0xFFFFFFFFFFFFFFFFull, 0,
};

static inline DAT_HANDLE misalign(DAT_HANDLE h) { return (DAT_HANDLE)((uintptr_t)h + 1); }

#endif /* DTO_HELPERS_H */
