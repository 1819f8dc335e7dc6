/*
 * Helpers shared by the connection tests (ctests/ep/conn_*.c):
 * semantics-ep.md §2, §4.3-§4.5, §4.17-§4.27 and the E2E_CONN cases.
 *
 * - event expectations that check every field and report what they got;
 * - EP state, private-data patterns, memory regions, posts;
 * - a "local" context (one process, the PAIR objects without the fork);
 * - "kids": extra client processes started with fork + exec of the test
 *   program itself (argv[1] == "--conn-kid"), so that a process that has
 *   already opened an IA never runs the library in a forked copy of itself.
 *   A kid opens its own IA, connects once to the address and qualifier it is
 *   given, reports the synchronous result and the connection event, and
 *   holds the connection until the parent closes its pipe.
 *
 * Include after nothing: it includes ctest.h and pair.h itself. Every test
 * program that uses kids ends with CONN_MAIN.
 */
#ifndef CONN_UTIL_H
#define CONN_UTIL_H

#include "ctest.h"
#include "pair.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define US 1000000u             /* one second in DAT_TIMEOUT units */
#define WAIT_US PAIR_WAIT_US    /* every "an event must come" wait: 10 s */
#define BAD_STATE ((DAT_EP_STATE)0x7777)

/* ---- small utilities ----------------------------------------------------- */

static inline DAT_DTO_COOKIE ck(DAT_UINT64 v)
{
    DAT_DTO_COOKIE c;
    memset(&c, 0, sizeof(c));
    c.as_64 = v;
    return c;
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

#define FAILF(...)                                                             \
    do {                                                                       \
        fprintf(stderr, "    %s:%d: ", __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        ctest_failures++;                                                      \
    } while (0)

/* Either of two error types (with the class bit). */
#define CHECK_TYPE2(expr, t1, t2)                                              \
    do {                                                                       \
        DAT_RETURN r2_ = (expr);                                               \
        if ((DAT_GET_TYPE(r2_) != DAT_GET_TYPE((DAT_RETURN)(t1)) &&            \
             DAT_GET_TYPE(r2_) != DAT_GET_TYPE((DAT_RETURN)(t2))) ||           \
            (r2_ & DAT_CLASS_ERROR) == 0)                                      \
            FAILF("%s: got 0x%08x, want type 0x%08x or 0x%08x", #expr,         \
                  (unsigned)r2_, (unsigned)(t1), (unsigned)(t2));              \
    } while (0)

/* Any failure (not DAT_SUCCESS). */
#define CHECK_FAILS(expr)                                                      \
    do {                                                                       \
        DAT_RETURN rf_ = (expr);                                               \
        if (rf_ == DAT_SUCCESS || (rf_ & DAT_CLASS_ERROR) == 0)                \
            FAILF("%s: got 0x%08x, want an error", #expr, (unsigned)rf_);      \
    } while (0)

/* ---- attributes and addresses -------------------------------------------- */

struct attrs {
    DAT_IA_ATTR ia;
    DAT_PROVIDER_ATTR pr;
};

static inline int get_attrs(DAT_IA_HANDLE ia, struct attrs *a)
{
    memset(a, 0, sizeof(*a));
    return dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a->ia, DAT_PROVIDER_FIELD_ALL, &a->pr) ==
           DAT_SUCCESS;
}

static inline DAT_COUNT max_pd(DAT_IA_HANDLE ia)
{
    struct attrs a;
    if (!get_attrs(ia, &a))
        return -1;
    return a.pr.max_private_data_size;
}

static inline size_t sa_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Same family and IP address (the port field is not part of an IA address). */
static inline int addr_eq(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a == NULL || b == NULL || a->sa_family != b->sa_family)
        return 0;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)(const void *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return 0;
}

static inline const char *addr_str(const struct sockaddr *a, char *buf, size_t n)
{
    if (a == NULL)
        snprintf(buf, n, "(null)");
    else if (a->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)a)->sin_addr, buf,
                  (socklen_t)n);
    else if (a->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr, buf,
                  (socklen_t)n);
    else
        snprintf(buf, n, "(family %d)", a->sa_family);
    return buf;
}

#define CHECK_ADDR(got, want)                                                  \
    do {                                                                       \
        char ga_[64], wa_[64];                                                 \
        if (!addr_eq((const struct sockaddr *)(got), (const struct sockaddr *)(want))) \
            FAILF("%s: address %s, want %s", #got,                             \
                  addr_str((const struct sockaddr *)(got), ga_, sizeof(ga_)),  \
                  addr_str((const struct sockaddr *)(want), wa_, sizeof(wa_))); \
    } while (0)

/* ---- EP state ------------------------------------------------------------- */

static inline DAT_EP_STATE ep_state(DAT_EP_HANDLE ep)
{
    DAT_EP_STATE s = BAD_STATE;
    DAT_BOOLEAN ri = DAT_FALSE, qi = DAT_FALSE;
    if (dat_ep_get_status(ep, &s, &ri, &qi) != DAT_SUCCESS)
        return BAD_STATE;
    return s;
}

#define CHECK_STATE(ep, want)                                                  \
    do {                                                                       \
        DAT_EP_STATE gs_ = ep_state(ep);                                       \
        if (gs_ != (DAT_EP_STATE)(want))                                       \
            FAILF("state of %s: got %u, want %u (%s)", #ep, (unsigned)gs_,     \
                  (unsigned)(want), #want);                                    \
    } while (0)

/* Polls the state until it equals want (at most ms milliseconds). */
static inline int state_becomes(DAT_EP_HANDLE ep, DAT_EP_STATE want, int ms)
{
    double end = ctest_now() + ms / 1000.0;
    do {
        if (ep_state(ep) == want)
            return 1;
        ctest_sleep_ms(5);
    } while (ctest_now() < end);
    return ep_state(ep) == want;
}

/* ---- events ----------------------------------------------------------------- */

static inline DAT_RETURN wait_ev(DAT_EVD_HANDLE evd, DAT_EVENT *ev, DAT_TIMEOUT us)
{
    DAT_COUNT nmore = 0;
    memset(ev, 0, sizeof(*ev));
    return dat_evd_wait(evd, us, 1, ev, &nmore);
}

/*
 * Waits (us) for one event on evd and checks that it is connection event
 * `num` for `ep`, delivered on `evd`. Returns 1 when it matched. The event
 * is copied to *out when out is not NULL.
 */
static inline int conn_ev_(const char *file, int line, DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER num,
                           DAT_EP_HANDLE ep, DAT_TIMEOUT us, DAT_EVENT *out)
{
    DAT_EVENT ev;
    DAT_RETURN r = wait_ev(evd, &ev, us);
    if (out != NULL)
        *out = ev;
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %s:%d: waiting for %s: dat_evd_wait 0x%08x\n", file, line,
                ev_name(num), (unsigned)r);
        ctest_failures++;
        return 0;
    }
    if (ev.event_number != num || ev.evd_handle != evd ||
        ev.event_data.connect_event_data.ep_handle != ep) {
        fprintf(stderr,
                "    %s:%d: got event %#x (%s) evd %p ep %p, want %#x (%s) evd %p ep %p\n",
                file, line, (unsigned)ev.event_number, ev_name(ev.event_number),
                (void *)ev.evd_handle, (void *)ev.event_data.connect_event_data.ep_handle,
                (unsigned)num, ev_name(num), (void *)evd, (void *)ep);
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define EXPECT_CONN(evd, num, ep) conn_ev_(__FILE__, __LINE__, (evd), (num), (ep), WAIT_US, NULL)
#define EXPECT_CONN_EV(evd, num, ep, evp)                                      \
    conn_ev_(__FILE__, __LINE__, (evd), (num), (ep), WAIT_US, (evp))

/*
 * Waits for one connection event for `ep` on `evd` whose number is one of
 * the n listed. Returns the number it got, 0 on a mismatch (reported).
 */
static inline DAT_EVENT_NUMBER conn_any_(const char *file, int line, DAT_EVD_HANDLE evd,
                                         DAT_EP_HANDLE ep, DAT_TIMEOUT us,
                                         const DAT_EVENT_NUMBER *nums, int n, DAT_EVENT *out)
{
    DAT_EVENT ev;
    int i;
    DAT_RETURN r = wait_ev(evd, &ev, us);
    if (out != NULL)
        *out = ev;
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %s:%d: waiting for a connection event: dat_evd_wait 0x%08x\n",
                file, line, (unsigned)r);
        ctest_failures++;
        return 0;
    }
    for (i = 0; i < n; i++)
        if (ev.event_number == nums[i] && ev.evd_handle == evd &&
            ev.event_data.connect_event_data.ep_handle == ep)
            return nums[i];
    fprintf(stderr, "    %s:%d: got event %#x (%s) evd %p ep %p; want ep %p evd %p and one of",
            file, line, (unsigned)ev.event_number, ev_name(ev.event_number),
            (void *)ev.evd_handle, (void *)ev.event_data.connect_event_data.ep_handle,
            (void *)ep, (void *)evd);
    for (i = 0; i < n; i++)
        fprintf(stderr, " %s", ev_name(nums[i]));
    fprintf(stderr, "\n");
    ctest_failures++;
    return 0;
}
#define EXPECT_CONN_ANY(evd, ep, us, ...)                                      \
    conn_any_(__FILE__, __LINE__, (evd), (ep), (us), (const DAT_EVENT_NUMBER[]){__VA_ARGS__}, \
              (int)(sizeof((const DAT_EVENT_NUMBER[]){__VA_ARGS__}) / sizeof(DAT_EVENT_NUMBER)), \
              NULL)

/*
 * The passive side accepted (dat_cr_accept succeeded) a request whose
 * active side had already given up (its connect timed out): the accept ends
 * in ACCEPT_COMPLETION_ERROR. On an iWARP device over verbs (the IA's
 * "link" attribute) the kernel's connection manager keeps the active side's
 * connection until its MPA exchange ends, so the accept may reach
 * ESTABLISHED; the connection must then end, DISCONNECTED or BROKEN, within
 * `us` (docs/verbs.md, "What differs per device"). Returns 1 if it ended.
 */
static inline int late_accept_ends_(const char *file, int line, DAT_IA_HANDLE ia,
                                    DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, DAT_TIMEOUT us)
{
    DAT_EVENT_NUMBER got;
    if (!pair_ia_says(ia, "link", "iWARP"))
        return conn_ev_(file, line, evd, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, ep,
                        WAIT_US, NULL);
    got = conn_any_(file, line, evd, ep, WAIT_US,
                    (const DAT_EVENT_NUMBER[]){DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
                                               DAT_CONNECTION_EVENT_ESTABLISHED},
                    2, NULL);
    if (got != DAT_CONNECTION_EVENT_ESTABLISHED)
        return got != 0;
    fprintf(stderr, "    (iWARP: the late accept was ESTABLISHED; waiting for its end)\n");
    return conn_any_(file, line, evd, ep, us,
                     (const DAT_EVENT_NUMBER[]){DAT_CONNECTION_EVENT_DISCONNECTED,
                                                DAT_CONNECTION_EVENT_BROKEN},
                     2, NULL) != 0;
}
#define EXPECT_LATE_ACCEPT_ENDS(ia, evd, ep, us)                               \
    late_accept_ends_(__FILE__, __LINE__, (ia), (evd), (ep), (us))

/* Waits for a CR arrival event on evd; returns the CR (NULL on failure). */
static inline DAT_CR_HANDLE wait_cr_(const char *file, int line, DAT_EVD_HANDLE evd,
                                     DAT_EVENT *out, DAT_TIMEOUT us)
{
    DAT_EVENT ev;
    DAT_RETURN r = wait_ev(evd, &ev, us);
    if (out != NULL)
        *out = ev;
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %s:%d: waiting for a connection request: dat_evd_wait 0x%08x\n",
                file, line, (unsigned)r);
        ctest_failures++;
        return DAT_HANDLE_NULL;
    }
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT || ev.evd_handle != evd ||
        ev.event_data.cr_arrival_event_data.cr_handle == DAT_HANDLE_NULL) {
        fprintf(stderr, "    %s:%d: got event %#x (%s) evd %p cr %p, want a CR on evd %p\n",
                file, line, (unsigned)ev.event_number, ev_name(ev.event_number),
                (void *)ev.evd_handle, (void *)ev.event_data.cr_arrival_event_data.cr_handle,
                (void *)evd);
        ctest_failures++;
        return DAT_HANDLE_NULL;
    }
    return ev.event_data.cr_arrival_event_data.cr_handle;
}
#define WAIT_CR(evd, evp) wait_cr_(__FILE__, __LINE__, (evd), (evp), WAIT_US)

/* Nothing arrives on evd within ms milliseconds. */
static inline int quiet_(const char *file, int line, DAT_EVD_HANDLE evd, int ms)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    ctest_sleep_ms(ms);
    memset(&ev, 0, sizeof(ev));
    r = dat_evd_dequeue(evd, &ev);
    if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY)
        return 1;
    fprintf(stderr, "    %s:%d: expected no event, dequeue 0x%08x gave %#x (%s)\n", file, line,
            (unsigned)r, (unsigned)ev.event_number, ev_name(ev.event_number));
    ctest_failures++;
    return 0;
}
#define EXPECT_QUIET(evd) quiet_(__FILE__, __LINE__, (evd), 200)

/*
 * Waits for a DTO completion on evd for ep with the given cookie and status
 * (len < 0: any length). Returns 1 when it matched.
 */
static inline int dto_ev_(const char *file, int line, DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep,
                          DAT_UINT64 cookie, DAT_DTO_COMPLETION_STATUS st, long long len,
                          DAT_EVENT *out)
{
    DAT_EVENT ev;
    DAT_RETURN r = wait_ev(evd, &ev, WAIT_US);
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
    if (out != NULL)
        *out = ev;
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %s:%d: waiting for DTO cookie %llu: dat_evd_wait 0x%08x\n", file,
                line, (unsigned long long)cookie, (unsigned)r);
        ctest_failures++;
        return 0;
    }
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT || ev.evd_handle != evd ||
        d->ep_handle != ep || d->user_cookie.as_64 != cookie || d->status != st ||
        (len >= 0 && d->transfered_length != (DAT_VLEN)len)) {
        fprintf(stderr,
                "    %s:%d: got event %#x (%s) evd %p ep %p cookie %llu status %u len %llu;"
                " want DTO evd %p ep %p cookie %llu status %u len %lld\n",
                file, line, (unsigned)ev.event_number, ev_name(ev.event_number),
                (void *)ev.evd_handle, (void *)d->ep_handle,
                (unsigned long long)d->user_cookie.as_64, (unsigned)d->status,
                (unsigned long long)d->transfered_length, (void *)evd, (void *)ep,
                (unsigned long long)cookie, (unsigned)st, len);
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define EXPECT_DTO(evd, ep, cookie, st, len)                                   \
    dto_ev_(__FILE__, __LINE__, (evd), (ep), (cookie), (st), (len), NULL)

/*
 * Collects n DTO completions of ep on evd that must all have status st and
 * carry exactly the cookies base+0 .. base+n-1, each once, in any order.
 */
static inline int dto_set_(const char *file, int line, DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep,
                           DAT_UINT64 base, int n, DAT_DTO_COMPLETION_STATUS st)
{
    unsigned seen = 0;
    int i, ok = 1;
    for (i = 0; i < n; i++) {
        DAT_EVENT ev;
        DAT_RETURN r = wait_ev(evd, &ev, WAIT_US);
        const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
        DAT_UINT64 c = d->user_cookie.as_64;
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    %s:%d: completion %d of %d: dat_evd_wait 0x%08x\n", file, line,
                    i + 1, n, (unsigned)r);
            ctest_failures++;
            return 0;
        }
        if (ev.event_number != DAT_DTO_COMPLETION_EVENT || ev.evd_handle != evd ||
            d->ep_handle != ep || d->status != st || c < base || c >= base + (DAT_UINT64)n ||
            (seen & (1u << (c - base)))) {
            fprintf(stderr,
                    "    %s:%d: completion %d: event %#x (%s) evd %p ep %p cookie %llu status %u;"
                    " want DTO evd %p ep %p status %u, a cookie of %llu..%llu not seen yet\n",
                    file, line, i + 1, (unsigned)ev.event_number, ev_name(ev.event_number),
                    (void *)ev.evd_handle, (void *)d->ep_handle, (unsigned long long)c,
                    (unsigned)d->status, (void *)evd, (void *)ep, (unsigned)st,
                    (unsigned long long)base, (unsigned long long)(base + (DAT_UINT64)n - 1));
            ctest_failures++;
            ok = 0;
            continue;
        }
        seen |= 1u << (c - base);
    }
    return ok;
}
#define EXPECT_DTO_SET(evd, ep, base, n, st) dto_set_(__FILE__, __LINE__, (evd), (ep), (base), (n), (st))

/* ---- private data ------------------------------------------------------------ */

static inline void pd_fill(unsigned char *b, int n, unsigned seed)
{
    int i;
    for (i = 0; i < n; i++)
        b[i] = (unsigned char)(seed * 37u + (unsigned)i * 13u + ((unsigned)i >> 8) + 1u);
}

/* got/gsz equal want/wsz byte for byte. */
static inline int pd_same_(const char *file, int line, const void *got, DAT_COUNT gsz,
                           const void *want, DAT_COUNT wsz)
{
    if (!pair_pd_size_ok(got, gsz, wsz)) {
        fprintf(stderr, "    %s:%d: private data size %d, want %d%s\n", file, line, (int)gsz,
                (int)wsz, pair_pd_padded ? " (or more, padded with zeros)" : "");
        ctest_failures++;
        return 0;
    }
    if (wsz > 0 && (got == NULL || memcmp(got, want, (size_t)wsz) != 0)) {
        int i = 0;
        if (got != NULL)
            while (i < wsz && ((const unsigned char *)got)[i] == ((const unsigned char *)want)[i])
                i++;
        fprintf(stderr, "    %s:%d: private data (%d bytes) differs%s at byte %d\n", file, line,
                (int)wsz, got == NULL ? " (NULL pointer)" : "", i);
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define CHECK_PD(got, gsz, want, wsz) pd_same_(__FILE__, __LINE__, (got), (gsz), (want), (wsz))

/* ---- memory and posts ---------------------------------------------------------- */

struct mr {
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    unsigned char *buf;
    DAT_VLEN len;
};

static inline int mk_mr(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, size_t len, struct mr *m)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_VLEN rs = 0;
    DAT_VADDR ra = 0;
    void *b = NULL;
    memset(m, 0, sizeof(*m));
    if (posix_memalign(&b, 4096, len) != 0)
        return 0;
    memset(b, 0, len);
    m->buf = b;
    m->len = len;
    memset(&rd, 0, sizeof(rd));
    rd.for_va = b;
    return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, len, pz, DAT_MEM_PRIV_ALL_FLAG, &m->lmr,
                          &m->lctx, &m->rctx, &rs, &ra) == DAT_SUCCESS;
}

static inline DAT_LMR_TRIPLET mr_iov(const struct mr *m, size_t off, size_t len)
{
    DAT_LMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.lmr_context = m->lctx;
    t.virtual_address = (DAT_VADDR)(uintptr_t)(m->buf + off);
    t.segment_length = len;
    return t;
}

static inline DAT_RETURN post_recv(DAT_EP_HANDLE ep, const struct mr *m, size_t off, size_t len,
                                   DAT_UINT64 cookie)
{
    DAT_LMR_TRIPLET t = mr_iov(m, off, len);
    return dat_ep_post_recv(ep, 1, &t, ck(cookie), DAT_COMPLETION_DEFAULT_FLAG);
}

static inline DAT_RETURN post_send(DAT_EP_HANDLE ep, const struct mr *m, size_t off, size_t len,
                                   DAT_UINT64 cookie)
{
    DAT_LMR_TRIPLET t = mr_iov(m, off, len);
    return dat_ep_post_send(ep, 1, &t, ck(cookie), DAT_COMPLETION_DEFAULT_FLAG);
}

/* ---- local context (one process) ------------------------------------------------ */

/* The PAIR objects in this process, no fork; server_addr = our IA address. */
static inline int local_open(struct pair *p)
{
    DAT_IA_ATTR a;
    memset(p, 0, sizeof(*p));
    if (pair_objects(p, 64) != 0)
        return 0;
    memset(&a, 0, sizeof(a));
    if (dat_ia_query(p->ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL) != DAT_SUCCESS ||
        a.ia_address_ptr == NULL)
        return 0;
    memcpy(&p->server_addr, a.ia_address_ptr, sa_len(a.ia_address_ptr));
    return 1;
}

static inline void local_close(struct pair *p)
{
    if (p->ia != DAT_HANDLE_NULL)
        dat_ia_close(p->ia, DAT_CLOSE_ABRUPT_FLAG);
    p->ia = DAT_HANDLE_NULL;
}

/* A qualifier nobody listens on right now (0 when none could be found). */
static inline DAT_CONN_QUAL free_qual(DAT_IA_HANDLE ia, DAT_EVD_HANDLE cr_evd)
{
    DAT_CONN_QUAL q = 0;
    DAT_PSP_HANDLE tmp = DAT_HANDLE_NULL;
    if (dat_psp_create_any(ia, &q, cr_evd, DAT_PSP_CONSUMER_FLAG, &tmp) != DAT_SUCCESS)
        return 0;
    if (dat_psp_free(tmp) != DAT_SUCCESS)
        return 0;
    return q;
}

static inline DAT_EP_HANDLE mk_ep_attr(struct pair *p, const DAT_EP_ATTR *attr)
{
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_RETURN r = dat_ep_create(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, attr, &ep);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    dat_ep_create: 0x%08x\n", (unsigned)r);
        return DAT_HANDLE_NULL;
    }
    return ep;
}

static inline DAT_EP_HANDLE mk_ep(struct pair *p)
{
    return mk_ep_attr(p, NULL);
}

/* The provider's default EP attributes (from a throw-away EP). */
static inline int default_ep_attr(struct pair *p, DAT_EP_ATTR *attr)
{
    DAT_EP_PARAM prm;
    DAT_EP_HANDLE ep = mk_ep(p);
    if (ep == DAT_HANDLE_NULL)
        return 0;
    memset(&prm, 0, sizeof(prm));
    if (dat_ep_query(ep, DAT_EP_FIELD_ALL, &prm) != DAT_SUCCESS) {
        dat_ep_free(ep);
        return 0;
    }
    *attr = prm.ep_attr;
    return dat_ep_free(ep) == DAT_SUCCESS;
}

static inline DAT_RETURN connect_to(struct pair *p, DAT_EP_HANDLE ep, DAT_CONN_QUAL q,
                                    DAT_TIMEOUT tmo, const void *pd, DAT_COUNT n)
{
    return dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, q, tmo, n, (DAT_PVOID)pd,
                          DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}

/* Server: take the next CR on p->cr_evd, accept it on ep, wait ESTABLISHED. */
static inline int srv_accept_ep(struct pair *p, DAT_EP_HANDLE ep, const void *pd, DAT_COUNT n)
{
    DAT_RETURN r;
    DAT_CR_HANDLE cr = WAIT_CR(p->cr_evd, NULL);
    if (cr == DAT_HANDLE_NULL)
        return 0;
    r = dat_cr_accept(cr, ep, n, (DAT_PVOID)pd);
    if (r != DAT_SUCCESS) {
        FAILF("dat_cr_accept: 0x%08x", (unsigned)r);
        return 0;
    }
    return EXPECT_CONN(p->conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
}

/* Client: connect ep to the server's PSP, wait ESTABLISHED. */
static inline int cli_connect_ep(struct pair *p, DAT_EP_HANDLE ep, const void *pd, DAT_COUNT n)
{
    DAT_RETURN r = connect_to(p, ep, p->qual, WAIT_US, pd, n);
    if (r != DAT_SUCCESS) {
        FAILF("dat_ep_connect: 0x%08x", (unsigned)r);
        return 0;
    }
    return EXPECT_CONN(p->conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
}

/*
 * One connection of the PAIR, both sides: the client connects a new EP to
 * the server's PSP with (cpd, cn); the server takes the next CR on its
 * cr_evd and accepts it on a new EP with (spd, sn). Both wait for
 * ESTABLISHED. *ep gets the side's EP. Returns 1 on success.
 */
static inline int link_pd(struct pair *p, DAT_EP_HANDLE *ep, const DAT_EP_ATTR *attr,
                          const void *cpd, DAT_COUNT cn, const void *spd, DAT_COUNT sn)
{
    *ep = mk_ep_attr(p, attr);
    if (*ep == DAT_HANDLE_NULL)
        return 0;
    return p->server ? srv_accept_ep(p, *ep, spd, sn) : cli_connect_ep(p, *ep, cpd, cn);
}

static inline int link_ep(struct pair *p, DAT_EP_HANDLE *ep)
{
    return link_pd(p, ep, NULL, NULL, 0, NULL, 0);
}

/* One-character rendezvous messages over the PAIR pipes. */
static inline void say(struct pair *p, char c)
{
    if (pair_tell(p, &c, 1) != 0)
        fprintf(stderr, "    pair_tell failed\n");
}

static inline int hear_(const char *file, int line, struct pair *p, char want)
{
    char got = 0;
    if (pair_hear(p, &got, 1) != 0 || got != want) {
        fprintf(stderr, "    %s:%d: waiting for the peer's '%c': got '%c'\n", file, line, want,
                got ? got : '0');
        ctest_failures++;
        return 0;
    }
    return 1;
}
#define HEAR(p, c) hear_(__FILE__, __LINE__, (p), (c))

#define NOTE_SKIP(why)                                                         \
    do {                                                                       \
        fprintf(stderr, "    skipped (part): %s\n", why);                      \
        ctest_skipped = 1;                                                     \
    } while (0)

/* Small typed messages over the PAIR pipes. */
static inline int tell_u64(struct pair *p, DAT_UINT64 v) { return pair_tell(p, &v, sizeof(v)); }
static inline DAT_UINT64 hear_u64(struct pair *p)
{
    DAT_UINT64 v = 0xDEADBEEFDEADBEEFull;
    if (pair_hear(p, &v, sizeof(v)) != 0)
        fprintf(stderr, "    pair_hear failed\n");
    return v;
}

/*
 * Backlog (ECN-22, PSC-12): the server makes a PSP whose CR EVD has qlen 1
 * and never dequeues; the client connects Q + 2 EPs at once (Q = the
 * queried qlen) with a 2 s timeout; at least one gets NON_PEER_REJECTED.
 */
static inline void backlog_case(void)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd1;
        DAT_EVD_PARAM ep_;
        DAT_PSP_HANDLE psp;
        DAT_CONN_QUAL q = 0;
        REQUIRE(dat_evd_create(p.ia, 1, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &evd1) == DAT_SUCCESS);
        memset(&ep_, 0, sizeof(ep_));
        REQUIRE(dat_evd_query(evd1, DAT_EVD_FIELD_ALL, &ep_) == DAT_SUCCESS);
        REQUIRE(dat_psp_create_any(p.ia, &q, evd1, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
        tell_u64(&p, q);
        tell_u64(&p, (DAT_UINT64)ep_.evd_qlen);
        HEAR(&p, 'z');
    } else {
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_COUNT qlen = (DAT_COUNT)hear_u64(&p);
        DAT_EP_HANDLE ep[40];
        int n = qlen + 2, i, nonpeer = 0, got = 0;
        if (qlen < 1 || n > 40) {
            fprintf(stderr, "    CR EVD qlen %d\n", (int)qlen);
            NOTE_SKIP("CR EVD queue length too large for this case");
        } else {
            for (i = 0; i < n; i++) {
                ep[i] = mk_ep(&p);
                REQUIRE(ep[i] != DAT_HANDLE_NULL);
            }
            for (i = 0; i < n; i++)
                CHECK_OK(connect_to(&p, ep[i], q, 2 * US, NULL, 0));
            for (i = 0; i < n; i++) {
                DAT_EVENT ev;
                if (wait_ev(p.conn_evd, &ev, WAIT_US) != DAT_SUCCESS)
                    break;
                got++;
                if (ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED)
                    nonpeer++;
                else if (ev.event_number != DAT_CONNECTION_EVENT_TIMED_OUT &&
                         ev.event_number != DAT_CONNECTION_EVENT_UNREACHABLE)
                    FAILF("unexpected event %#x (%s)", (unsigned)ev.event_number,
                          ev_name(ev.event_number));
            }
            if (got != n)
                FAILF("%d of %d connects produced an event", got, n);
            if (nonpeer < 1)
                FAILF("qlen %d, %d requests: no NON_PEER_REJECTED", (int)qlen, n);
        }
        say(&p, 'z');
    }
    pair_finish(&p);
}

/*
 * EDC-10 / CRH-05: EP1's request arrives on PSP A (the fixture's), the
 * server hands it off to PSP B; after EP1 is connected, a dup of EP1 must
 * arrive at B [M:dat_ep_dup_connect].
 */
static inline void dup_follows_handoff_case(void)
{
    struct pair p;
    DAT_EP_HANDLE ep1;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EVD_HANDLE evd_b;
        DAT_PSP_HANDLE psp_b;
        DAT_CONN_QUAL qb = 0;
        DAT_CR_HANDLE cr, cr2;
        DAT_EVENT ev;
        int where = 0;
        double end;
        REQUIRE(dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &evd_b) == DAT_SUCCESS);
        REQUIRE(dat_psp_create_any(p.ia, &qb, evd_b, DAT_PSP_CONSUMER_FLAG, &psp_b) ==
                DAT_SUCCESS);
        ep1 = mk_ep(&p);
        REQUIRE(ep1 != DAT_HANDLE_NULL);
        cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_handoff(cr, qb));
        cr2 = WAIT_CR(evd_b, &ev);
        REQUIRE(cr2 != DAT_HANDLE_NULL);
        CHECK(ev.event_data.cr_arrival_event_data.conn_qual == qb);
        CHECK_OK(dat_cr_accept(cr2, ep1, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep1);
        /* the dup */
        end = ctest_now() + 10.0;
        while (where == 0 && ctest_now() < end) {
            DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
            if (dat_evd_dequeue(evd_b, &ev) == DAT_SUCCESS)
                where = 1, e = evd_b;
            else if (dat_evd_dequeue(p.cr_evd, &ev) == DAT_SUCCESS)
                where = 2, e = p.cr_evd;
            else
                ctest_sleep_ms(10);
            if (e != DAT_HANDLE_NULL) {
                DAT_EP_HANDLE ep2 = mk_ep(&p);
                CHECK(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
                if (ep2 != DAT_HANDLE_NULL)
                    CHECK_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep2,
                                           0, NULL));
            }
        }
        tell_u64(&p, (DAT_UINT64)where);
        HEAR(&p, 'z');
    } else {
        DAT_EP_HANDLE ep2;
        DAT_UINT64 where;
        REQUIRE(link_ep(&p, &ep1));
        ep2 = mk_ep(&p);
        REQUIRE(ep2 != DAT_HANDLE_NULL);
        CHECK_OK(dat_ep_dup_connect(ep2, ep1, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep2);
        where = hear_u64(&p);
        /* [M] wants the SP on B; the spec's lenient [REC] form, which this
         * provider documents (no redirection memory), is arrival at A. */
        if (where != 1 && where != 2)
            FAILF("the dup request reached no service point (%d)", (int)where);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* ---- kids: extra client processes ---------------------------------------------- */

struct kid_req {
    struct sockaddr_storage addr;
    DAT_CONN_QUAL qual;
    DAT_TIMEOUT tmo;
    DAT_COUNT pd_size;      /* connect private data: pd_fill(seed) */
    unsigned pd_seed;
    DAT_COUNT want_pd_size; /* expected accept private data (-1: do not check) */
    unsigned want_seed;
};

struct kid_rep {
    DAT_RETURN ret;         /* dat_ep_connect */
    DAT_EVENT_NUMBER ev;    /* the connection event (0: none) */
    DAT_COUNT pd_size;      /* its private data size */
    int pd_ok;              /* it matched want_pd_size/want_seed */
    int setup_ok;
};

struct kid {
    pid_t pid;
    int to, from;
};

static inline int kid_start(struct kid *k, const struct kid_req *rq)
{
    int a[2], b[2];
    char fa[16], fb[16], self[4096];
    ssize_t sl;
    memset(k, 0, sizeof(*k));
    /* the program's own path (readlink rather than exec of /proc/self/exe,
     * which would name the interpreter under valgrind) */
    sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sl <= 0)
        return 0;
    self[sl] = '\0';
    k->pid = -1;
    /* close-on-exec everywhere, so that no other kid inherits our ends (it
     * would keep this kid's pipe open after kid_end) */
    if (pipe2(a, O_CLOEXEC) != 0 || pipe2(b, O_CLOEXEC) != 0)
        return 0;
    snprintf(fa, sizeof(fa), "%d", a[0]);
    snprintf(fb, sizeof(fb), "%d", b[1]);
    fflush(stdout);
    fflush(stderr);
    k->pid = fork();
    if (k->pid < 0)
        return 0;
    if (k->pid == 0) {
        int fd;
        /* keep only stdio and our two ends (the PAIR pipes and other kids'
         * pipes are not ours to hold) */
        for (fd = 3; fd < 1024; fd++)
            if (fd != a[0] && fd != b[1])
                close(fd);
        fcntl(a[0], F_SETFD, 0);
        fcntl(b[1], F_SETFD, 0);
        execl(self, "conn-kid", "--conn-kid", fa, fb, (char *)NULL);
        _exit(127);
    }
    close(a[0]);
    close(b[1]);
    k->to = a[1];
    k->from = b[0];
    if (write(k->to, rq, sizeof(*rq)) != (ssize_t)sizeof(*rq))
        return 0;
    return 1;
}

/* Reads the kid's report (waits at most ms). 1 on success. */
static inline int kid_result(struct kid *k, struct kid_rep *rep, int ms)
{
    size_t got = 0;
    char *b = (char *)rep;
    memset(rep, 0, sizeof(*rep));
    while (got < sizeof(*rep)) {
        struct pollfd pfd = {k->from, POLLIN, 0};
        int r = poll(&pfd, 1, ms);
        ssize_t n;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        n = read(k->from, b + got, sizeof(*rep) - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

/* Releases the kid (it exits when its pipe closes) and reaps it. */
static inline void kid_end(struct kid *k)
{
    int st, i;
    if (k->pid <= 0)
        return;
    close(k->to);
    for (i = 0; i < 500; i++) {
        if (waitpid(k->pid, &st, WNOHANG) == k->pid)
            goto done;
        ctest_sleep_ms(10);
    }
    kill(k->pid, SIGKILL);
    waitpid(k->pid, &st, 0);
done:
    close(k->from);
    k->pid = -1;
}

static inline struct kid_req kid_req_for(const struct pair *p, DAT_CONN_QUAL q, DAT_TIMEOUT tmo)
{
    struct kid_req rq;
    memset(&rq, 0, sizeof(rq));
    rq.addr = p->server_addr;
    rq.qual = q;
    rq.tmo = tmo;
    rq.want_pd_size = -1;
    return rq;
}

static inline int kid_main(int argc, char **argv)
{
    struct kid_req rq;
    struct kid_rep rep;
    struct pair k;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    unsigned char pd[4096];
    int from, to;
    char c;

    if (argc < 4)
        return 2;
    alarm(CTEST_TIMEOUT_SECONDS);
    from = atoi(argv[2]);
    to = atoi(argv[3]);
    memset(&rep, 0, sizeof(rep));
    rep.ret = DAT_INTERNAL_ERROR;
    if (read(from, &rq, sizeof(rq)) != (ssize_t)sizeof(rq))
        return 3;
    memset(&k, 0, sizeof(k));
    if (pair_objects(&k, 16) == 0 &&
        dat_ep_create(k.ia, k.pz, k.recv_evd, k.req_evd, k.conn_evd, NULL, &ep) == DAT_SUCCESS &&
        rq.pd_size >= 0 && rq.pd_size <= (DAT_COUNT)sizeof(pd)) {
        DAT_EVENT ev;
        rep.setup_ok = 1;
        pd_fill(pd, rq.pd_size, rq.pd_seed);
        rep.ret = dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&rq.addr, rq.qual, rq.tmo, rq.pd_size,
                                 rq.pd_size > 0 ? pd : NULL, DAT_QOS_BEST_EFFORT,
                                 DAT_CONNECT_DEFAULT_FLAG);
        if (rep.ret == DAT_SUCCESS) {
            DAT_TIMEOUT w = rq.tmo == DAT_TIMEOUT_INFINITE || rq.tmo > 40 * US ? 40 * US
                                                                               : rq.tmo + 10 * US;
            if (wait_ev(k.conn_evd, &ev, w) == DAT_SUCCESS &&
                ev.event_data.connect_event_data.ep_handle == ep) {
                rep.ev = ev.event_number;
                rep.pd_size = ev.event_data.connect_event_data.private_data_size;
                if (rq.want_pd_size >= 0 && rep.pd_size == rq.want_pd_size) {
                    unsigned char want[4096];
                    pd_fill(want, rq.want_pd_size, rq.want_seed);
                    rep.pd_ok = rq.want_pd_size == 0 ||
                                (ev.event_data.connect_event_data.private_data != NULL &&
                                 memcmp(ev.event_data.connect_event_data.private_data, want,
                                        (size_t)rq.want_pd_size) == 0);
                }
            }
        }
    }
    if (write(to, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
        return 4;
    /* hold the connection until the parent closes its end */
    while (read(from, &c, 1) > 0) {
    }
    return 0;
}

/* A kid that connects to our own IA address on q and reports. */
static inline int kid_go(struct pair *p, struct kid *k, DAT_CONN_QUAL q, DAT_TIMEOUT tmo)
{
    struct kid_req rq = kid_req_for(p, q, tmo);
    if (!kid_start(k, &rq)) {
        FAILF("could not start a client process");
        return 0;
    }
    return 1;
}

/* The kid's connection event must be `want`. */
static inline void kid_expect(struct kid *k, DAT_EVENT_NUMBER want)
{
    struct kid_rep rep;
    if (!kid_result(k, &rep, 30000)) {
        FAILF("no report from the client process");
        return;
    }
    if (!rep.setup_ok || rep.ret != DAT_SUCCESS || rep.ev != want)
        FAILF("client process: setup %d, dat_ep_connect 0x%08x, event %#x (%s); want %#x (%s)",
              rep.setup_ok, (unsigned)rep.ret, (unsigned)rep.ev, ev_name(rep.ev),
              (unsigned)want, ev_name(want));
}

static inline DAT_EVD_HANDLE mk_cr_evd(DAT_IA_HANDLE ia, DAT_COUNT qlen)
{
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
    if (dat_evd_create(ia, qlen, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &e) != DAT_SUCCESS)
        return DAT_HANDLE_NULL;
    return e;
}

#define CONN_MAIN                                                              \
    int main(int argc, char **argv)                                            \
    {                                                                          \
        if (argc > 1 && strcmp(argv[1], "--conn-kid") == 0)                    \
            return kid_main(argc, argv);                                       \
        return ctest_main(argc, argv);                                         \
    }

#endif /* CONN_UTIL_H */
