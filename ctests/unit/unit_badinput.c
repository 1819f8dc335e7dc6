/*
 * Bad-input sweep over all 72 DAT 1.2 entry points (rulings.md rule 1,
 * semantics-core.md §1.2, §1.3, §1.5, abi-errors.md §5).
 *
 *   BAD_01…05  NULL primary handle → exact pre-check value
 *   BAD_06     misaligned primary handle (0x1001 …, and the EVD sentinels)
 *   BAD_07…09  garbage aligned pointers (stack, heap, unmapped) → INVALID_HANDLE
 *   BAD_10…11  freed handle of the right type → INVALID_HANDLE
 *   BAD_12…13  live handle of the wrong type → INVALID_HANDLE
 *   BAD_14…15  NULL OUT pointers → INVALID_PARAMETER (ARGn where listed)
 *   BAD_16…17  unknown mask bits in every *_query (rulings D6)
 *   BAD_18…19  out-of-range counts and flags
 *   BAD_20     huge lengths
 *   BAD_21     registry and dat_strerror argument checks
 *   BAD_22     garbage secondary handles
 *
 * A crash handler names the call that crashed; each case runs in its own
 * child process anyway (ctest.h).
 */
#include "ctest.h"

#include <limits.h>
#include <netinet/in.h>
#include <sys/mman.h>

/* ---- crash reporting ----------------------------------------------------- */

static const char *volatile bad_cur = "(setup)";

static void bad_signal(int sig)
{
    const char *a = "    signal while in ";
    const char *n = bad_cur;
    ssize_t w;
    w = write(2, a, strlen(a));
    w = write(2, n, strlen(n));
    w = write(2, "\n", 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

static inline void bad_guard(void)
{
    signal(SIGSEGV, bad_signal);
    signal(SIGBUS, bad_signal);
    signal(SIGABRT, bad_signal);
    signal(SIGILL, bad_signal);
    signal(SIGFPE, bad_signal);
    signal(SIGALRM, bad_signal);
}

#define NOTE_SKIP(why)                                                         \
    do {                                                                       \
        fprintf(stderr, "    partly skipped: %s\n", why);                      \
        ctest_skipped = 1;                                                     \
    } while (0)

/* Report a mismatch with the name of the call. */
static inline void bad_expect_exact(const char *what, DAT_RETURN got, DAT_RETURN want)
{
    if (got != want) {
        fprintf(stderr, "    %s: got 0x%08x, want exactly 0x%08x\n", what, (unsigned)got,
                (unsigned)want);
        ctest_failures++;
    }
}

static inline void bad_expect_type(const char *what, DAT_RETURN got, DAT_RETURN type)
{
    if (DAT_GET_TYPE(got) != DAT_GET_TYPE(type) || (got & DAT_CLASS_ERROR) == 0) {
        fprintf(stderr, "    %s: got 0x%08x, want type 0x%08x with class bit\n", what,
                (unsigned)got, (unsigned)type);
        ctest_failures++;
    }
}

/* Either of two types (for "accept X" alternatives). */
static inline void bad_expect_type2(const char *what, DAT_RETURN got, DAT_RETURN t1,
                                    DAT_RETURN t2)
{
    if ((DAT_GET_TYPE(got) != DAT_GET_TYPE(t1) && DAT_GET_TYPE(got) != DAT_GET_TYPE(t2)) ||
        (got & DAT_CLASS_ERROR) == 0) {
        fprintf(stderr, "    %s: got 0x%08x, want type 0x%08x or 0x%08x with class bit\n", what,
                (unsigned)got, (unsigned)t1, (unsigned)t2);
        ctest_failures++;
    }
}

static inline void bad_expect_sub(const char *what, DAT_RETURN got, DAT_RETURN type,
                                  DAT_RETURN sub)
{
    bad_expect_exact(what, got, (DAT_RETURN)(DAT_CLASS_ERROR | type | sub));
}

/* Evaluate `expr` with bad_cur naming it, for the crash handler. */
#define CALL(expr) (bad_cur = #expr, (expr))
#define EXACT(expr, want) bad_expect_exact(#expr, CALL(expr), (DAT_RETURN)(want))
#define ETYPE(expr, type) bad_expect_type(#expr, CALL(expr), (DAT_RETURN)(type))
#define ETYPE2(expr, t1, t2) bad_expect_type2(#expr, CALL(expr), (DAT_RETURN)(t1), (DAT_RETURN)(t2))
#define ESUB(expr, type, sub) bad_expect_sub(#expr, CALL(expr), (DAT_RETURN)(type), (DAT_RETURN)(sub))

/* ---- auxiliary live objects ---------------------------------------------- */

struct aux {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, sevd, dto1, dto2, conn, cr;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_HANDLE rmr;
    DAT_CNO_HANDLE cno;
    DAT_EP_HANDLE ep, ep2;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL psp_q;
    DAT_RSP_HANDLE rsp;
    DAT_SRQ_HANDLE srq;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR prov_attr;
    void *buf;
    int have_ep, have_ep2, have_psp, have_rsp, have_srq;
};

static struct aux zero_aux; /* every handle NULL: for pre-check tests */

static inline int aux_open_core(struct aux *a)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;

    memset(a, 0, sizeof(*a));
    if (posix_memalign(&a->buf, 4096, 2 * 4096) != 0)
        return 0;
    memset(a->buf, 0, 2 * 4096);
    bad_cur = "aux_open_core";
    if (ctest_open_ia(&a->ia, &a->aevd) != DAT_SUCCESS)
        return 0;
    if (dat_ia_query(a->ia, NULL, DAT_IA_FIELD_ALL, &a->ia_attr, DAT_PROVIDER_FIELD_ALL,
                     &a->prov_attr) != DAT_SUCCESS)
        return 0;
    if (ctest_sw_evd(a->ia, 8, &a->sevd) != DAT_SUCCESS)
        return 0;
    if (dat_pz_create(a->ia, &a->pz) != DAT_SUCCESS)
        return 0;
    memset(&rd, 0, sizeof(rd));
    rd.for_va = a->buf;
    if (dat_lmr_create(a->ia, DAT_MEM_TYPE_VIRTUAL, rd, 2 * 4096, a->pz, DAT_MEM_PRIV_ALL_FLAG,
                       &a->lmr, &a->lc, &rc, &rs, &ra) != DAT_SUCCESS)
        return 0;
    if (dat_rmr_create(a->pz, &a->rmr) != DAT_SUCCESS)
        return 0;
    if (dat_cno_create(a->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &a->cno) != DAT_SUCCESS)
        return 0;
    return 1;
}

/* EP, PSP, RSP and SRQ objects: each one optional (have_* flags). */
static inline void aux_open_ep(struct aux *a)
{
    DAT_CONN_QUAL q = 0;
    DAT_PSP_HANDLE tmp;

    bad_cur = "aux_open_ep";
    if (dat_evd_create(a->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &a->dto1) != DAT_SUCCESS ||
        dat_evd_create(a->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &a->dto2) != DAT_SUCCESS ||
        dat_evd_create(a->ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &a->conn) !=
            DAT_SUCCESS ||
        dat_evd_create(a->ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &a->cr) != DAT_SUCCESS)
        return;
    a->have_ep = dat_ep_create(a->ia, a->pz, a->dto1, a->dto2, a->conn, NULL, &a->ep) ==
                 DAT_SUCCESS;
    a->have_ep2 = dat_ep_create(a->ia, a->pz, a->dto1, a->dto2, a->conn, NULL, &a->ep2) ==
                  DAT_SUCCESS;
    a->have_psp = dat_psp_create_any(a->ia, &a->psp_q, a->cr, DAT_PSP_CONSUMER_FLAG, &a->psp) ==
                  DAT_SUCCESS;
    if (a->have_ep2 &&
        dat_psp_create_any(a->ia, &q, a->cr, DAT_PSP_CONSUMER_FLAG, &tmp) == DAT_SUCCESS &&
        dat_psp_free(tmp) == DAT_SUCCESS)
        a->have_rsp = dat_rsp_create(a->ia, q, a->ep2, a->cr, &a->rsp) == DAT_SUCCESS;
    if (a->prov_attr.srq_supported) {
        DAT_SRQ_ATTR sa;
        memset(&sa, 0, sizeof(sa));
        sa.max_recv_dtos = 16;
        sa.max_recv_iov = 1;
        sa.low_watermark = DAT_SRQ_LW_DEFAULT;
        a->have_srq = dat_srq_create(a->ia, a->pz, &sa, &a->srq) == DAT_SUCCESS;
    }
}

static inline void aux_close(struct aux *a)
{
    bad_cur = "aux_close";
    if (a->ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(a->ia, DAT_CLOSE_ABRUPT_FLAG));
    free(a->buf);
}

/* A connection qualifier nobody listens on right now. */
static inline DAT_CONN_QUAL free_qual(struct aux *a)
{
    DAT_CONN_QUAL q = 0;
    DAT_PSP_HANDLE tmp;
    if (a->cr != DAT_HANDLE_NULL &&
        dat_psp_create_any(a->ia, &q, a->cr, DAT_PSP_CONSUMER_FLAG, &tmp) == DAT_SUCCESS) {
        dat_psp_free(tmp);
        return q;
    }
    return (DAT_CONN_QUAL)(40000 + (getpid() % 20000));
}

static inline DAT_LMR_TRIPLET aux_trip(const struct aux *a, DAT_VLEN len)
{
    DAT_LMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.lmr_context = a->lc;
    t.virtual_address = (DAT_VADDR)(uintptr_t)a->buf;
    t.segment_length = len;
    return t;
}

static inline DAT_RMR_TRIPLET zero_rtrip(void)
{
    DAT_RMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    return t;
}

static inline DAT_CONTEXT ctx64(DAT_UINT64 v)
{
    DAT_CONTEXT c;
    memset(&c, 0, sizeof(c));
    c.as_64 = v;
    return c;
}

static struct sockaddr_in loopback_addr;

static inline DAT_IA_ADDRESS_PTR loopback(void)
{
    memset(&loopback_addr, 0, sizeof(loopback_addr));
    loopback_addr.sin_family = AF_INET;
    loopback_addr.sin_port = htons(4791);
    loopback_addr.sin_addr.s_addr = htonl(0x7f000001u);
    return (DAT_IA_ADDRESS_PTR)(void *)&loopback_addr;
}

/* ---- one wrapper per handle-taking entry point (67) ---------------------- */
/* h is the primary handle; every other argument is well formed. */

typedef DAT_RETURN (*wrap_fn)(DAT_HANDLE h, struct aux *a);

/* IA-primary (14) */
static DAT_RETURN w_ia_query(DAT_HANDLE h, struct aux *a)
{
    DAT_EVD_HANDLE e;
    (void)a;
    return dat_ia_query(h, &e, DAT_IA_FIELD_ALL, &a->ia_attr, DAT_PROVIDER_FIELD_ALL,
                        &a->prov_attr);
}
static DAT_RETURN w_ia_close(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_ia_close(h, DAT_CLOSE_ABRUPT_FLAG);
}
static DAT_RETURN w_pz_create(DAT_HANDLE h, struct aux *a)
{
    DAT_PZ_HANDLE pz;
    (void)a;
    return dat_pz_create(h, &pz);
}
static DAT_RETURN w_lmr_create(DAT_HANDLE h, struct aux *a)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_HANDLE l;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    static char mem[4096] __attribute__((aligned(4096)));
    memset(&rd, 0, sizeof(rd));
    rd.for_va = mem;
    return dat_lmr_create(h, DAT_MEM_TYPE_VIRTUAL, rd, sizeof(mem), a->pz,
                          DAT_MEM_PRIV_LOCAL_READ_FLAG, &l, &lc, &rc, &rs, &ra);
}
static DAT_RETURN w_lmr_sync_rdma_read(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    return dat_lmr_sync_rdma_read(h, &t, 1);
}
static DAT_RETURN w_lmr_sync_rdma_write(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    return dat_lmr_sync_rdma_write(h, &t, 1);
}
static DAT_RETURN w_evd_create(DAT_HANDLE h, struct aux *a)
{
    DAT_EVD_HANDLE e;
    (void)a;
    return dat_evd_create(h, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e);
}
static DAT_RETURN w_cno_create(DAT_HANDLE h, struct aux *a)
{
    DAT_CNO_HANDLE c;
    (void)a;
    return dat_cno_create(h, DAT_OS_WAIT_PROXY_AGENT_NULL, &c);
}
static DAT_RETURN w_ep_create(DAT_HANDLE h, struct aux *a)
{
    DAT_EP_HANDLE ep;
    return dat_ep_create(h, a->pz, a->dto1, a->dto2, a->conn, NULL, &ep);
}
static DAT_RETURN w_ep_create_with_srq(DAT_HANDLE h, struct aux *a)
{
    DAT_EP_HANDLE ep;
    DAT_EP_ATTR attr;
    memset(&attr, 0, sizeof(attr));
    attr.service_type = DAT_SERVICE_TYPE_RC;
    attr.max_message_size = 1024;
    attr.max_recv_dtos = 4;
    attr.max_request_dtos = 4;
    attr.max_recv_iov = 1;
    attr.max_request_iov = 1;
    attr.srq_soft_hw = DAT_HW_DEFAULT;
    return dat_ep_create_with_srq(h, a->pz, a->dto1, a->dto2, a->conn, a->srq, &attr, &ep);
}
static DAT_RETURN w_psp_create(DAT_HANDLE h, struct aux *a)
{
    DAT_PSP_HANDLE p;
    return dat_psp_create(h, (DAT_CONN_QUAL)(45000 + (getpid() % 10000)), a->cr,
                          DAT_PSP_CONSUMER_FLAG, &p);
}
static DAT_RETURN w_psp_create_any(DAT_HANDLE h, struct aux *a)
{
    DAT_PSP_HANDLE p;
    DAT_CONN_QUAL q;
    return dat_psp_create_any(h, &q, a->cr, DAT_PSP_CONSUMER_FLAG, &p);
}
static DAT_RETURN w_rsp_create(DAT_HANDLE h, struct aux *a)
{
    DAT_RSP_HANDLE r;
    return dat_rsp_create(h, (DAT_CONN_QUAL)(46000 + (getpid() % 10000)), a->ep, a->cr, &r);
}
static DAT_RETURN w_srq_create(DAT_HANDLE h, struct aux *a)
{
    DAT_SRQ_HANDLE s;
    DAT_SRQ_ATTR sa;
    memset(&sa, 0, sizeof(sa));
    sa.max_recv_dtos = 16;
    sa.max_recv_iov = 1;
    sa.low_watermark = DAT_SRQ_LW_DEFAULT;
    return dat_srq_create(h, a->pz, &sa, &s);
}

/* PZ-primary (3) */
static DAT_RETURN w_pz_query(DAT_HANDLE h, struct aux *a)
{
    DAT_PZ_PARAM p;
    (void)a;
    return dat_pz_query(h, DAT_PZ_FIELD_ALL, &p);
}
static DAT_RETURN w_pz_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_pz_free(h);
}
static DAT_RETURN w_rmr_create(DAT_HANDLE h, struct aux *a)
{
    DAT_RMR_HANDLE r;
    (void)a;
    return dat_rmr_create(h, &r);
}

/* LMR-primary (2) */
static DAT_RETURN w_lmr_query(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_PARAM p;
    (void)a;
    return dat_lmr_query(h, DAT_LMR_FIELD_ALL, &p);
}
static DAT_RETURN w_lmr_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_lmr_free(h);
}

/* RMR-primary (3) */
static DAT_RETURN w_rmr_query(DAT_HANDLE h, struct aux *a)
{
    DAT_RMR_PARAM p;
    (void)a;
    return dat_rmr_query(h, DAT_RMR_FIELD_ALL, &p);
}
static DAT_RETURN w_rmr_bind(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    DAT_RMR_CONTEXT c;
    return dat_rmr_bind(h, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, a->ep, ctx64(7),
                        DAT_COMPLETION_DEFAULT_FLAG, &c);
}
static DAT_RETURN w_rmr_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_rmr_free(h);
}

/* CNO-primary (4) */
static DAT_RETURN w_cno_query(DAT_HANDLE h, struct aux *a)
{
    DAT_CNO_PARAM p;
    (void)a;
    return dat_cno_query(h, DAT_CNO_FIELD_ALL, &p);
}
static DAT_RETURN w_cno_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_cno_free(h);
}
static DAT_RETURN w_cno_modify_agent(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_cno_modify_agent(h, DAT_OS_WAIT_PROXY_AGENT_NULL);
}
static DAT_RETURN w_cno_wait(DAT_HANDLE h, struct aux *a)
{
    DAT_EVD_HANDLE e;
    (void)a;
    return dat_cno_wait(h, 0, &e);
}

/* EVD-primary (11) */
static DAT_RETURN w_evd_dequeue(DAT_HANDLE h, struct aux *a)
{
    DAT_EVENT ev;
    (void)a;
    return dat_evd_dequeue(h, &ev);
}
static DAT_RETURN w_evd_disable(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_evd_disable(h);
}
static DAT_RETURN w_evd_enable(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_evd_enable(h);
}
static DAT_RETURN w_evd_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_evd_free(h);
}
static DAT_RETURN w_evd_modify_cno(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_evd_modify_cno(h, DAT_HANDLE_NULL);
}
static DAT_RETURN w_evd_post_se(DAT_HANDLE h, struct aux *a)
{
    DAT_EVENT ev;
    (void)a;
    memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_SOFTWARE_EVENT;
    ev.evd_handle = h;
    return dat_evd_post_se(h, &ev);
}
static DAT_RETURN w_evd_query(DAT_HANDLE h, struct aux *a)
{
    DAT_EVD_PARAM p;
    (void)a;
    return dat_evd_query(h, DAT_EVD_FIELD_ALL, &p);
}
static DAT_RETURN w_evd_resize(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_evd_resize(h, 16);
}
static DAT_RETURN w_evd_set_unwaitable(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_evd_set_unwaitable(h);
}
static DAT_RETURN w_evd_clear_unwaitable(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_evd_clear_unwaitable(h);
}
static DAT_RETURN w_evd_wait(DAT_HANDLE h, struct aux *a)
{
    DAT_EVENT ev;
    DAT_COUNT n;
    (void)a;
    return dat_evd_wait(h, 0, 1, &ev, &n);
}

/* generic handle helpers (3) */
static DAT_RETURN w_get_consumer_context(DAT_HANDLE h, struct aux *a)
{
    DAT_CONTEXT c;
    (void)a;
    return dat_get_consumer_context(h, &c);
}
static DAT_RETURN w_set_consumer_context(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_set_consumer_context(h, ctx64(0x55));
}
static DAT_RETURN w_get_handle_type(DAT_HANDLE h, struct aux *a)
{
    DAT_HANDLE_TYPE t;
    (void)a;
    return dat_get_handle_type(h, &t);
}

/* EP-primary (14) */
static DAT_RETURN w_ep_query(DAT_HANDLE h, struct aux *a)
{
    DAT_EP_PARAM p;
    (void)a;
    return dat_ep_query(h, DAT_EP_FIELD_ALL, &p);
}
static DAT_RETURN w_ep_modify(DAT_HANDLE h, struct aux *a)
{
    DAT_EP_PARAM p;
    (void)a;
    memset(&p, 0, sizeof(p));
    return dat_ep_modify(h, (DAT_EP_PARAM_MASK)0, &p);
}
static DAT_RETURN w_ep_connect(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_ep_connect(h, loopback(), (DAT_CONN_QUAL)47001, 1000000, 0, NULL,
                          DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}
static DAT_RETURN w_ep_dup_connect(DAT_HANDLE h, struct aux *a)
{
    return dat_ep_dup_connect(h, a->ep, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT);
}
static DAT_RETURN w_ep_disconnect(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_ep_disconnect(h, DAT_CLOSE_ABRUPT_FLAG);
}
static DAT_RETURN w_ep_post_send(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    return dat_ep_post_send(h, 1, &t, ctx64(1), DAT_COMPLETION_DEFAULT_FLAG);
}
static DAT_RETURN w_ep_post_recv(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    return dat_ep_post_recv(h, 1, &t, ctx64(2), DAT_COMPLETION_DEFAULT_FLAG);
}
static DAT_RETURN w_ep_post_rdma_read(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    DAT_RMR_TRIPLET r = zero_rtrip();
    return dat_ep_post_rdma_read(h, 1, &t, ctx64(3), &r, DAT_COMPLETION_DEFAULT_FLAG);
}
static DAT_RETURN w_ep_post_rdma_write(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    DAT_RMR_TRIPLET r = zero_rtrip();
    return dat_ep_post_rdma_write(h, 1, &t, ctx64(4), &r, DAT_COMPLETION_DEFAULT_FLAG);
}
static DAT_RETURN w_ep_get_status(DAT_HANDLE h, struct aux *a)
{
    DAT_EP_STATE s;
    DAT_BOOLEAN ri, qi;
    (void)a;
    return dat_ep_get_status(h, &s, &ri, &qi);
}
static DAT_RETURN w_ep_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_ep_free(h);
}
static DAT_RETURN w_ep_reset(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_ep_reset(h);
}
static DAT_RETURN w_ep_recv_query(DAT_HANDLE h, struct aux *a)
{
    DAT_COUNT n1, n2;
    (void)a;
    return dat_ep_recv_query(h, &n1, &n2);
}
static DAT_RETURN w_ep_set_watermark(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_ep_set_watermark(h, 1, 1);
}

/* PSP-primary (2), RSP-primary (2), CR-primary (4), SRQ-primary (5) */
static DAT_RETURN w_psp_query(DAT_HANDLE h, struct aux *a)
{
    DAT_PSP_PARAM p;
    (void)a;
    return dat_psp_query(h, DAT_PSP_FIELD_ALL, &p);
}
static DAT_RETURN w_psp_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_psp_free(h);
}
static DAT_RETURN w_rsp_query(DAT_HANDLE h, struct aux *a)
{
    DAT_RSP_PARAM p;
    (void)a;
    return dat_rsp_query(h, DAT_RSP_FIELD_ALL, &p);
}
static DAT_RETURN w_rsp_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_rsp_free(h);
}
static DAT_RETURN w_cr_query(DAT_HANDLE h, struct aux *a)
{
    DAT_CR_PARAM p;
    (void)a;
    return dat_cr_query(h, DAT_CR_FIELD_ALL, &p);
}
static DAT_RETURN w_cr_accept(DAT_HANDLE h, struct aux *a)
{
    return dat_cr_accept(h, a->ep, 0, NULL);
}
static DAT_RETURN w_cr_reject(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_cr_reject(h);
}
static DAT_RETURN w_cr_handoff(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_cr_handoff(h, (DAT_CONN_QUAL)47002);
}
static DAT_RETURN w_srq_free(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_srq_free(h);
}
static DAT_RETURN w_srq_post_recv(DAT_HANDLE h, struct aux *a)
{
    DAT_LMR_TRIPLET t = aux_trip(a, 64);
    return dat_srq_post_recv(h, 1, &t, ctx64(5));
}
static DAT_RETURN w_srq_query(DAT_HANDLE h, struct aux *a)
{
    DAT_SRQ_PARAM p;
    (void)a;
    return dat_srq_query(h, DAT_SRQ_FIELD_ALL, &p);
}
static DAT_RETURN w_srq_resize(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_srq_resize(h, 32);
}
static DAT_RETURN w_srq_set_lw(DAT_HANDLE h, struct aux *a)
{
    (void)a;
    return dat_srq_set_lw(h, 0);
}

enum kind { K_IA, K_PZ, K_LMR, K_RMR, K_CNO, K_EVD, K_ANY, K_EP, K_PSP, K_RSP, K_CR, K_SRQ };

static const struct entry {
    const char *name;
    enum kind kind;
    DAT_UINT32 precheck; /* exact value for a NULL or misaligned primary handle */
    wrap_fn fn;
} entries[] = {
    {"dat_ia_query", K_IA, 0x8005000Bu, w_ia_query},
    {"dat_ia_close", K_IA, 0x8005000Bu, w_ia_close},
    {"dat_pz_create", K_IA, 0x8005000Bu, w_pz_create},
    {"dat_lmr_create", K_IA, 0x8005000Bu, w_lmr_create},
    {"dat_lmr_sync_rdma_read", K_IA, 0x8005000Bu, w_lmr_sync_rdma_read},
    {"dat_lmr_sync_rdma_write", K_IA, 0x8005000Bu, w_lmr_sync_rdma_write},
    {"dat_evd_create", K_IA, 0x8005000Bu, w_evd_create},
    {"dat_cno_create", K_IA, 0x8005000Bu, w_cno_create},
    {"dat_ep_create", K_IA, 0x8005000Bu, w_ep_create},
    {"dat_ep_create_with_srq", K_IA, 0x8005000Bu, w_ep_create_with_srq},
    {"dat_psp_create", K_IA, 0x8005000Bu, w_psp_create},
    {"dat_psp_create_any", K_IA, 0x8005000Bu, w_psp_create_any},
    {"dat_rsp_create", K_IA, 0x8005000Bu, w_rsp_create},
    {"dat_srq_create", K_IA, 0x8005000Bu, w_srq_create},

    {"dat_pz_query", K_PZ, 0x8005000Fu, w_pz_query},
    {"dat_pz_free", K_PZ, 0x8005000Fu, w_pz_free},
    {"dat_rmr_create", K_PZ, 0x8005000Fu, w_rmr_create},

    {"dat_lmr_query", K_LMR, 0x8005000Du, w_lmr_query},
    {"dat_lmr_free", K_LMR, 0x8005000Du, w_lmr_free},

    {"dat_rmr_query", K_RMR, 0x8005000Eu, w_rmr_query},
    {"dat_rmr_bind", K_RMR, 0x8005000Eu, w_rmr_bind},
    {"dat_rmr_free", K_RMR, 0x8005000Eu, w_rmr_free},

    {"dat_cno_query", K_CNO, 0x80050013u, w_cno_query},
    {"dat_cno_free", K_CNO, 0x80050013u, w_cno_free},
    {"dat_cno_modify_agent", K_CNO, 0x80050013u, w_cno_modify_agent},
    {"dat_cno_wait", K_CNO, 0x80050013u, w_cno_wait},

    {"dat_evd_dequeue", K_EVD, 0x8005001Au, w_evd_dequeue},
    {"dat_evd_disable", K_EVD, 0x8005001Au, w_evd_disable},
    {"dat_evd_enable", K_EVD, 0x8005001Au, w_evd_enable},
    {"dat_evd_free", K_EVD, 0x8005001Au, w_evd_free},
    {"dat_evd_modify_cno", K_EVD, 0x8005001Au, w_evd_modify_cno},
    {"dat_evd_post_se", K_EVD, 0x8005001Au, w_evd_post_se},
    {"dat_evd_query", K_EVD, 0x8005001Au, w_evd_query},
    {"dat_evd_resize", K_EVD, 0x8005001Au, w_evd_resize},
    {"dat_evd_set_unwaitable", K_EVD, 0x8005001Au, w_evd_set_unwaitable},
    {"dat_evd_clear_unwaitable", K_EVD, 0x8005001Au, w_evd_clear_unwaitable},
    {"dat_evd_wait", K_EVD, 0x8005001Au, w_evd_wait},

    {"dat_get_consumer_context", K_ANY, 0x8005001Au, w_get_consumer_context},
    {"dat_set_consumer_context", K_ANY, 0x8005001Au, w_set_consumer_context},
    {"dat_get_handle_type", K_ANY, 0x8005001Au, w_get_handle_type},

    {"dat_ep_query", K_EP, 0x8005000Cu, w_ep_query},
    {"dat_ep_modify", K_EP, 0x8005000Cu, w_ep_modify},
    {"dat_ep_connect", K_EP, 0x8005000Cu, w_ep_connect},
    {"dat_ep_dup_connect", K_EP, 0x8005000Cu, w_ep_dup_connect},
    {"dat_ep_disconnect", K_EP, 0x8005000Cu, w_ep_disconnect},
    {"dat_ep_post_send", K_EP, 0x8005000Cu, w_ep_post_send},
    {"dat_ep_post_recv", K_EP, 0x8005000Cu, w_ep_post_recv},
    {"dat_ep_post_rdma_read", K_EP, 0x8005000Cu, w_ep_post_rdma_read},
    {"dat_ep_post_rdma_write", K_EP, 0x8005000Cu, w_ep_post_rdma_write},
    {"dat_ep_get_status", K_EP, 0x8005000Cu, w_ep_get_status},
    {"dat_ep_free", K_EP, 0x8005000Cu, w_ep_free},
    {"dat_ep_reset", K_EP, 0x8005000Cu, w_ep_reset},
    {"dat_ep_recv_query", K_EP, 0x8005000Cu, w_ep_recv_query},
    {"dat_ep_set_watermark", K_EP, 0x8005000Cu, w_ep_set_watermark},

    {"dat_psp_query", K_PSP, 0x80050010u, w_psp_query},
    {"dat_psp_free", K_PSP, 0x80050010u, w_psp_free},

    {"dat_rsp_query", K_RSP, 0x80050011u, w_rsp_query},
    {"dat_rsp_free", K_RSP, 0x80050011u, w_rsp_free},

    {"dat_cr_query", K_CR, 0x80050012u, w_cr_query},
    {"dat_cr_accept", K_CR, 0x80050012u, w_cr_accept},
    {"dat_cr_reject", K_CR, 0x80050012u, w_cr_reject},
    {"dat_cr_handoff", K_CR, 0x80050012u, w_cr_handoff},

    {"dat_srq_free", K_SRQ, 0x80050019u, w_srq_free},
    {"dat_srq_post_recv", K_SRQ, 0x80050019u, w_srq_post_recv},
    {"dat_srq_query", K_SRQ, 0x80050019u, w_srq_query},
    {"dat_srq_resize", K_SRQ, 0x80050019u, w_srq_resize},
    {"dat_srq_set_lw", K_SRQ, 0x80050019u, w_srq_set_lw},
};
#define N_ENTRIES ((int)(sizeof(entries) / sizeof(entries[0])))

#define KBIT(k) (1u << (k))
#define K_CORE                                                                 \
    (KBIT(K_IA) | KBIT(K_PZ) | KBIT(K_LMR) | KBIT(K_RMR) | KBIT(K_CNO) | KBIT(K_EVD) | KBIT(K_ANY))
#define K_ALL 0xFFFu

/* Call every entry of the selected kinds with primary handle h. exact: the
 * pre-check value is expected; otherwise type DAT_INVALID_HANDLE. */
static inline void sweep(unsigned kinds, DAT_HANDLE h, struct aux *a, int exact, const char *label)
{
    int i;
    char what[160];

    for (i = 0; i < N_ENTRIES; i++) {
        DAT_RETURN r;
        if (!(kinds & KBIT(entries[i].kind)))
            continue;
        snprintf(what, sizeof(what), "%s(%s)", entries[i].name, label);
        bad_cur = entries[i].name;
        r = entries[i].fn(h, a);
        if (exact)
            bad_expect_exact(what, r, (DAT_RETURN)entries[i].precheck);
        else
            bad_expect_type(what, r, DAT_INVALID_HANDLE);
    }
    bad_cur = "(between calls)";
}

static inline int count_kinds(unsigned kinds)
{
    int i, n = 0;
    for (i = 0; i < N_ENTRIES; i++)
        if (kinds & KBIT(entries[i].kind))
            n++;
    return n;
}

/* ---- BAD_01…05: NULL primary handle --------------------------------------- */

TEST(BAD_01_null_primary_ia_functions)
{
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    char name[256];

    bad_guard();
    CHECK(N_ENTRIES == 67);
    CHECK(count_kinds(KBIT(K_IA)) == 14);
    sweep(KBIT(K_IA), DAT_HANDLE_NULL, &zero_aux, 1, "NULL");

    /* dat_ia_openv: NULL name, and the NULL ia_handle OUT pointer exception */
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    EXACT(dat_ia_openv(NULL, 8, &evd, &ia, 1, 2, DAT_FALSE), 0x80060024u);
    EXACT(dat_ia_openv(name, 8, &evd, NULL, 1, 2, DAT_FALSE), 0x8005000Bu);
    EXACT(dat_ia_openv(NULL, 8, &evd, NULL, 1, 2, DAT_FALSE), 0x80060024u);
}

TEST(BAD_02_null_primary_pz_lmr_rmr)
{
    bad_guard();
    CHECK(count_kinds(KBIT(K_PZ) | KBIT(K_LMR) | KBIT(K_RMR)) == 8);
    sweep(KBIT(K_PZ) | KBIT(K_LMR) | KBIT(K_RMR), DAT_HANDLE_NULL, &zero_aux, 1, "NULL");
}

TEST(BAD_03_null_primary_evd_cno_generic)
{
    bad_guard();
    CHECK(count_kinds(KBIT(K_EVD) | KBIT(K_CNO) | KBIT(K_ANY)) == 18);
    sweep(KBIT(K_EVD) | KBIT(K_CNO) | KBIT(K_ANY), DAT_HANDLE_NULL, &zero_aux, 1, "NULL");
}

TEST(BAD_04_null_primary_ep)
{
    bad_guard();
    CHECK(count_kinds(KBIT(K_EP)) == 14);
    sweep(KBIT(K_EP), DAT_HANDLE_NULL, &zero_aux, 1, "NULL");
}

TEST(BAD_05_null_primary_psp_rsp_cr_srq)
{
    bad_guard();
    CHECK(count_kinds(KBIT(K_PSP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_SRQ)) == 13);
    sweep(KBIT(K_PSP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_SRQ), DAT_HANDLE_NULL, &zero_aux, 1,
          "NULL");
}

/* ---- BAD_06: misaligned primary handle ------------------------------------ */

TEST(BAD_06_misaligned_primary)
{
    static const uintptr_t bad[] = {0x1001, 0x1002, 0x1003, 0x7fff0001, (uintptr_t)-1};
    char label[32];
    size_t i;
    struct aux a;

    bad_guard();
    /* with no IA open */
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(label, sizeof(label), "%#lx", (unsigned long)bad[i]);
        sweep(K_ALL, (DAT_HANDLE)bad[i], &zero_aux, 1, label);
    }
    /* the EVD sentinels fail the pre-check of every EVD and generic function */
    sweep(KBIT(K_EVD) | KBIT(K_ANY), (DAT_HANDLE)DAT_EVD_ASYNC_EXISTS, &zero_aux, 1,
          "DAT_EVD_ASYNC_EXISTS");
    sweep(KBIT(K_EVD) | KBIT(K_ANY), (DAT_HANDLE)DAT_EVD_OUT_OF_SCOPE, &zero_aux, 1,
          "DAT_EVD_OUT_OF_SCOPE");
    /* and again with live objects around (valid secondary arguments) */
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    sweep(K_ALL, (DAT_HANDLE)(uintptr_t)0x1001, &a, 1, "0x1001, IA open");
    sweep(K_ALL, (DAT_HANDLE)((uintptr_t)a.pz + 1), &a, 1, "live PZ + 1");
    sweep(K_ALL, (DAT_HANDLE)((uintptr_t)a.ia + 2), &a, 1, "live IA + 2");
    aux_close(&a);
}

/* ---- BAD_07…09: garbage aligned pointers ---------------------------------- */

static inline void fill_random(void *p, size_t n, unsigned seed)
{
    unsigned char *c = p;
    size_t i;
    for (i = 0; i < n; i++)
        c[i] = (unsigned char)(rand_r(&seed) >> 7);
}

TEST(BAD_07_garbage_stack_buffer)
{
    DAT_UINT64 junk[128];
    struct aux a;
    int round;

    bad_guard();
    for (round = 0; round < 3; round++) {
        fill_random(junk, sizeof(junk), 0xC0FFEEu + (unsigned)round);
        sweep(K_ALL, (DAT_HANDLE)&junk[8], &zero_aux, 0, "stack junk, no IA");
    }
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    for (round = 0; round < 3; round++) {
        fill_random(junk, sizeof(junk), 0xBADC0DEu + (unsigned)round);
        sweep(K_ALL, (DAT_HANDLE)&junk[16], &a, 0, "stack junk, IA open");
    }
    memset(junk, 0, sizeof(junk));
    sweep(K_ALL, (DAT_HANDLE)&junk[0], &a, 0, "stack zeros");
    memset(junk, 0xFF, sizeof(junk));
    sweep(K_ALL, (DAT_HANDLE)&junk[0], &a, 0, "stack 0xFF");
    /* the live objects are unharmed */
    CHECK_OK(dat_pz_query(a.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
    CHECK_OK(ctest_post(a.sevd, NULL));
    aux_close(&a);
}

TEST(BAD_08_garbage_heap_buffer)
{
    struct aux a;
    DAT_UINT64 *junk;
    int round;
    DAT_HANDLE live[4];
    const char *live_name[4] = {"IA", "PZ", "EVD", "LMR"};
    int i;

    bad_guard();
    junk = malloc(8192);
    REQUIRE(junk != NULL);
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    for (round = 0; round < 3; round++) {
        fill_random(junk, 8192, 0x5EEDu + (unsigned)round);
        sweep(K_ALL, (DAT_HANDLE)&junk[round * 32], &a, 0, "heap junk");
    }
    /* A forgery: random bytes whose first word is copied from a live object,
     * i.e. it carries the right DAT_PROVIDER pointer (abi-functions.md §4). */
    live[0] = a.ia;
    live[1] = a.pz;
    live[2] = a.sevd;
    live[3] = a.lmr;
    for (i = 0; i < 4; i++) {
        char label[48];
        fill_random(junk, 8192, 0xF0F0u + (unsigned)i);
        memcpy(junk, live[i], sizeof(void *));
        snprintf(label, sizeof(label), "forged %s (provider word copied)", live_name[i]);
        sweep(K_ALL, (DAT_HANDLE)junk, &a, 0, label);
    }
    CHECK_OK(dat_pz_query(a.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
    aux_close(&a);
    free(junk);
}

TEST(BAD_09_garbage_unmapped_pointers)
{
    struct aux a;
    void *page;
    static const uintptr_t addrs[] = {0x1000, 0x10000, 0xFFFFFFFFFFFFF000ull, 0x00007ff000000000ull};
    size_t i;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
        char label[48];
        snprintf(label, sizeof(label), "unmapped %#lx", (unsigned long)addrs[i]);
        sweep(K_ALL, (DAT_HANDLE)addrs[i], &a, 0, label);
    }
    /* a page that was mapped and is no longer */
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(page != MAP_FAILED);
    memcpy(page, a.pz, sizeof(void *));
    munmap(page, 4096);
    sweep(K_ALL, (DAT_HANDLE)page, &a, 0, "unmapped page");
    aux_close(&a);
}

/* ---- BAD_10…11: freed handle of the right type ---------------------------- */

TEST(BAD_10_freed_core_handles)
{
    struct aux a;
    DAT_IA_HANDLE ia2;
    DAT_EVD_HANDLE aevd2, sevd2;
    DAT_PZ_HANDLE pz2;
    DAT_LMR_HANDLE lmr2;
    DAT_RMR_HANDLE rmr2;
    DAT_CNO_HANDLE cno2;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;

    bad_guard();
    REQUIRE(aux_open_core(&a));

    /* closed IA (and its IA-created async EVD) */
    REQUIRE(ctest_open_ia(&ia2, &aevd2) == DAT_SUCCESS);
    REQUIRE(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS);
    sweep(KBIT(K_IA) & ~0u, ia2, &a, 0, "closed IA");
    sweep(KBIT(K_EVD), aevd2, &a, 0, "async EVD of a closed IA");
    sweep(KBIT(K_ANY), ia2, &a, 0, "closed IA");

    REQUIRE(dat_pz_create(a.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(dat_pz_free(pz2) == DAT_SUCCESS);
    sweep(KBIT(K_PZ) | KBIT(K_ANY), pz2, &a, 0, "freed PZ");

    memset(&rd, 0, sizeof(rd));
    rd.for_va = a.buf;
    REQUIRE(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, a.pz, DAT_MEM_PRIV_ALL_FLAG,
                           &lmr2, &lc, &rc, &rs, &ra) == DAT_SUCCESS);
    REQUIRE(dat_lmr_free(lmr2) == DAT_SUCCESS);
    sweep(KBIT(K_LMR) | KBIT(K_ANY), lmr2, &a, 0, "freed LMR");

    REQUIRE(dat_rmr_create(a.pz, &rmr2) == DAT_SUCCESS);
    REQUIRE(dat_rmr_free(rmr2) == DAT_SUCCESS);
    sweep(KBIT(K_RMR) | KBIT(K_ANY), rmr2, &a, 0, "freed RMR");

    REQUIRE(dat_cno_create(a.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno2) == DAT_SUCCESS);
    REQUIRE(dat_cno_free(cno2) == DAT_SUCCESS);
    sweep(KBIT(K_CNO) | KBIT(K_ANY), cno2, &a, 0, "freed CNO");

    REQUIRE(ctest_sw_evd(a.ia, 8, &sevd2) == DAT_SUCCESS);
    REQUIRE(ctest_post(sevd2, NULL) == DAT_SUCCESS);
    REQUIRE(dat_evd_free(sevd2) == DAT_SUCCESS);
    sweep(KBIT(K_EVD) | KBIT(K_ANY), sevd2, &a, 0, "freed EVD");

    /* the IA under test is untouched: its objects still answer */
    CHECK_OK(dat_pz_query(a.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
    CHECK_OK(dat_lmr_query(a.lmr, DAT_LMR_FIELD_ALL, &(DAT_LMR_PARAM){0}));
    aux_close(&a);
}

TEST(BAD_11_freed_ep_psp_rsp_srq_handles)
{
    struct aux a;
    DAT_EP_HANDLE ep3, ep4;
    DAT_PSP_HANDLE psp3;
    DAT_RSP_HANDLE rsp3;
    DAT_SRQ_HANDLE srq3;
    DAT_CONN_QUAL q;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);

    if (a.conn != DAT_HANDLE_NULL &&
        dat_ep_create(a.ia, a.pz, a.dto1, a.dto2, a.conn, NULL, &ep3) == DAT_SUCCESS) {
        REQUIRE(dat_ep_free(ep3) == DAT_SUCCESS);
        sweep(KBIT(K_EP) | KBIT(K_ANY), ep3, &a, 0, "freed EP");
    } else {
        NOTE_SKIP("dat_ep_create failed: freed-EP sweep not run");
    }

    if (a.cr != DAT_HANDLE_NULL &&
        dat_psp_create_any(a.ia, &q, a.cr, DAT_PSP_CONSUMER_FLAG, &psp3) == DAT_SUCCESS) {
        REQUIRE(dat_psp_free(psp3) == DAT_SUCCESS);
        sweep(KBIT(K_PSP) | KBIT(K_ANY), psp3, &a, 0, "freed PSP");
    } else {
        NOTE_SKIP("dat_psp_create_any failed: freed-PSP sweep not run");
    }

    if (a.cr != DAT_HANDLE_NULL &&
        dat_ep_create(a.ia, a.pz, a.dto1, a.dto2, a.conn, NULL, &ep4) == DAT_SUCCESS &&
        dat_rsp_create(a.ia, free_qual(&a), ep4, a.cr, &rsp3) == DAT_SUCCESS) {
        REQUIRE(dat_rsp_free(rsp3) == DAT_SUCCESS);
        sweep(KBIT(K_RSP) | KBIT(K_ANY), rsp3, &a, 0, "freed RSP");
    } else {
        NOTE_SKIP("dat_rsp_create failed: freed-RSP sweep not run");
    }

    if (a.prov_attr.srq_supported) {
        DAT_SRQ_ATTR sa;
        memset(&sa, 0, sizeof(sa));
        sa.max_recv_dtos = 8;
        sa.max_recv_iov = 1;
        if (dat_srq_create(a.ia, a.pz, &sa, &srq3) == DAT_SUCCESS) {
            REQUIRE(dat_srq_free(srq3) == DAT_SUCCESS);
            sweep(KBIT(K_SRQ) | KBIT(K_ANY), srq3, &a, 0, "freed SRQ");
        } else {
            NOTE_SKIP("dat_srq_create failed: freed-SRQ sweep not run");
        }
    } else {
        NOTE_SKIP("provider reports no SRQ support: freed-SRQ sweep not run");
    }
    /* there is no way to obtain a CR without a connection: CR functions are
     * covered by the NULL, misaligned, garbage and wrong-type sweeps */
    aux_close(&a);
}

/* ---- BAD_12…13: live handle of the wrong type ----------------------------- */

TEST(BAD_12_wrong_type_core)
{
    struct aux a;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    sweep(KBIT(K_IA), a.pz, &a, 0, "PZ as IA");
    sweep(KBIT(K_IA), a.sevd, &a, 0, "EVD as IA");
    sweep(KBIT(K_IA), a.aevd, &a, 0, "async EVD as IA");
    sweep(KBIT(K_PZ), a.lmr, &a, 0, "LMR as PZ");
    sweep(KBIT(K_PZ), a.ia, &a, 0, "IA as PZ");
    sweep(KBIT(K_LMR), a.rmr, &a, 0, "RMR as LMR");
    sweep(KBIT(K_LMR), a.pz, &a, 0, "PZ as LMR");
    sweep(KBIT(K_RMR), a.pz, &a, 0, "PZ as RMR");
    sweep(KBIT(K_RMR), a.lmr, &a, 0, "LMR as RMR");
    sweep(KBIT(K_CNO), a.sevd, &a, 0, "EVD as CNO");
    sweep(KBIT(K_CNO), a.ia, &a, 0, "IA as CNO");
    sweep(KBIT(K_EVD), a.pz, &a, 0, "PZ as EVD");
    sweep(KBIT(K_EVD), a.cno, &a, 0, "CNO as EVD");
    sweep(KBIT(K_EVD), a.ia, &a, 0, "IA as EVD");
    /* every object survived */
    CHECK_OK(dat_pz_query(a.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
    CHECK_OK(dat_lmr_query(a.lmr, DAT_LMR_FIELD_ALL, &(DAT_LMR_PARAM){0}));
    CHECK_OK(dat_rmr_query(a.rmr, DAT_RMR_FIELD_ALL, &(DAT_RMR_PARAM){0}));
    CHECK_OK(dat_cno_query(a.cno, DAT_CNO_FIELD_ALL, &(DAT_CNO_PARAM){0}));
    CHECK_OK(dat_evd_query(a.sevd, DAT_EVD_FIELD_ALL, &(DAT_EVD_PARAM){0}));
    CHECK_OK(dat_ia_query(a.ia, NULL, 0, NULL, 0, NULL));
    aux_close(&a);
}

TEST(BAD_13_wrong_type_ep_psp_rsp_cr_srq)
{
    struct aux a;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    /* a well-formed, aligned pointer the EP-side tables do not know */
    sweep(KBIT(K_EP) | KBIT(K_PSP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_SRQ), a.pz, &a, 0,
          "PZ as EP/PSP/RSP/CR/SRQ");
    sweep(KBIT(K_EP) | KBIT(K_PSP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_SRQ), a.sevd, &a, 0,
          "EVD as EP/PSP/RSP/CR/SRQ");
    sweep(KBIT(K_EP) | KBIT(K_PSP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_SRQ), a.ia, &a, 0,
          "IA as EP/PSP/RSP/CR/SRQ");
    if (a.have_ep) {
        sweep(KBIT(K_PSP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_SRQ), a.ep, &a, 0,
              "EP as PSP/RSP/CR/SRQ");
        sweep(KBIT(K_IA) | KBIT(K_PZ) | KBIT(K_LMR) | KBIT(K_RMR) | KBIT(K_CNO) | KBIT(K_EVD),
              a.ep, &a, 0, "EP as core object");
    } else {
        NOTE_SKIP("no EP: EP-as-other-type sweep not run");
    }
    if (a.have_psp) {
        sweep(KBIT(K_EP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_SRQ), a.psp, &a, 0,
              "PSP as EP/RSP/CR/SRQ");
    } else {
        NOTE_SKIP("no PSP: PSP-as-other-type sweep not run");
    }
    if (a.have_rsp) {
        sweep(KBIT(K_EP) | KBIT(K_PSP) | KBIT(K_CR) | KBIT(K_SRQ), a.rsp, &a, 0,
              "RSP as EP/PSP/CR/SRQ");
    } else {
        NOTE_SKIP("no RSP: RSP-as-other-type sweep not run");
    }
    if (a.have_srq) {
        sweep(KBIT(K_EP) | KBIT(K_PSP) | KBIT(K_RSP) | KBIT(K_CR) | KBIT(K_PZ), a.srq, &a, 0,
              "SRQ as EP/PSP/RSP/CR/PZ");
    }
    CHECK_OK(dat_pz_query(a.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
    aux_close(&a);
}

/* ---- BAD_14…15: NULL OUT pointers ----------------------------------------- */

TEST(BAD_14_null_out_pointers_core)
{
    struct aux a;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    DAT_EVENT ev;
    DAT_COUNT n;
    char name[256];
    DAT_EVD_HANDLE e;
    DAT_IA_HANDLE ia2;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e = DAT_HANDLE_NULL;
    ESUB(dat_ia_openv(name, 8, NULL, &ia2, 1, 2, DAT_FALSE), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG3);
    EXACT(dat_ia_openv(name, 8, &e, NULL, 1, 2, DAT_FALSE), 0x8005000Bu);
    ESUB(dat_ia_query(a.ia, NULL, DAT_IA_FIELD_ALL, NULL, 0, NULL), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG4);
    ESUB(dat_ia_query(a.ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, NULL), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG6);
    ESUB(dat_pz_create(a.ia, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_pz_query(a.pz, DAT_PZ_FIELD_ALL, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    memset(&rd, 0, sizeof(rd));
    rd.for_va = a.buf;
    ESUB(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, a.pz, DAT_MEM_PRIV_ALL_FLAG, NULL,
                        &lc, &rc, &rs, &ra),
         DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
    ESUB(dat_lmr_query(a.lmr, DAT_LMR_FIELD_ALL, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    ESUB(dat_rmr_create(a.pz, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_rmr_query(a.rmr, DAT_RMR_FIELD_ALL, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    ESUB(dat_evd_create(a.ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, NULL),
         DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    ESUB(dat_evd_query(a.sevd, DAT_EVD_FIELD_ALL, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    REQUIRE(ctest_post(a.sevd, &a) == DAT_SUCCESS);
    ESUB(dat_evd_dequeue(a.sevd, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_evd_wait(a.sevd, 0, 1, NULL, &n), DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    ESUB(dat_evd_wait(a.sevd, 0, 1, &ev, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    /* the queued event was not lost by the failed calls */
    CHECK_OK(dat_evd_dequeue(a.sevd, &ev));
    CHECK(ev.event_number == DAT_SOFTWARE_EVENT);
    ESUB(dat_evd_post_se(a.sevd, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_cno_create(a.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, NULL), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG3);
    ESUB(dat_cno_query(a.cno, DAT_CNO_FIELD_ALL, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    ESUB(dat_cno_wait(a.cno, 0, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    ESUB(dat_get_consumer_context(a.pz, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_get_handle_type(a.pz, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    /* nothing was created by the failed creates: count with a graceful close */
    CHECK_OK(dat_rmr_free(a.rmr));
    CHECK_OK(dat_lmr_free(a.lmr));
    CHECK_OK(dat_pz_free(a.pz));
    CHECK_OK(dat_cno_free(a.cno));
    CHECK_OK(dat_evd_free(a.sevd));
    CHECK_OK(dat_ia_close(a.ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(a.buf);
}

TEST(BAD_15_null_out_pointers_ep_psp_rsp_srq)
{
    struct aux a;
    DAT_EP_HANDLE ep;
    DAT_PSP_HANDLE psp;
    DAT_SRQ_HANDLE srq;
    DAT_CONN_QUAL q;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    if (a.conn == DAT_HANDLE_NULL || a.cr == DAT_HANDLE_NULL) {
        aux_close(&a);
        SKIP("DTO/connection/CR EVDs could not be created");
    }
    ESUB(dat_ep_create(a.ia, a.pz, a.dto1, a.dto2, a.conn, NULL, NULL), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG7);
    q = free_qual(&a);
    ESUB(dat_psp_create(a.ia, q, a.cr, DAT_PSP_CONSUMER_FLAG, NULL), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG5);
    ETYPE(dat_psp_create_any(a.ia, NULL, a.cr, DAT_PSP_CONSUMER_FLAG, &psp), DAT_INVALID_PARAMETER);
    ESUB(dat_psp_create_any(a.ia, &q, a.cr, DAT_PSP_CONSUMER_FLAG, NULL), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG5);
    if (a.have_ep) {
        q = free_qual(&a);
        ESUB(dat_rsp_create(a.ia, q, a.ep, a.cr, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
        /* the EP was not reserved by the failed call */
        {
            DAT_EP_STATE st = (DAT_EP_STATE)99;
            DAT_BOOLEAN ri, qi;
            CHECK_OK(dat_ep_get_status(a.ep, &st, &ri, &qi));
            CHECK(st == DAT_EP_STATE_UNCONNECTED);
        }
        ETYPE(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_modify(a.ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, NULL),
              DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_connect(a.ep, NULL, (DAT_CONN_QUAL)47003, 1000000, 0, NULL,
                             DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_INVALID_PARAMETER);
        /* RMB-03: a NULL triplet is a parameter error (checked before the EP state) */
        {
            DAT_RMR_CONTEXT rc;
            ETYPE(dat_rmr_bind(a.rmr, NULL, DAT_MEM_PRIV_REMOTE_READ_FLAG, a.ep, ctx64(1),
                               DAT_COMPLETION_DEFAULT_FLAG, &rc),
                  DAT_INVALID_PARAMETER);
        }
    } else {
        NOTE_SKIP("no EP: EP NULL-pointer checks not run");
    }
    if (a.have_psp)
        ETYPE(dat_psp_query(a.psp, DAT_PSP_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
    else
        NOTE_SKIP("no PSP: dat_psp_query NULL check not run");
    if (a.have_rsp)
        ETYPE(dat_rsp_query(a.rsp, DAT_RSP_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
    else
        NOTE_SKIP("no RSP: dat_rsp_query NULL check not run");
    if (a.have_srq) {
        DAT_SRQ_ATTR sa;
        DAT_EP_PARAM epp;
        memset(&sa, 0, sizeof(sa));
        sa.max_recv_dtos = 8;
        sa.max_recv_iov = 1;
        ESUB(dat_srq_create(a.ia, a.pz, &sa, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
        ETYPE(dat_srq_create(a.ia, a.pz, NULL, &srq), DAT_INVALID_PARAMETER);
        ETYPE(dat_srq_query(a.srq, DAT_SRQ_FIELD_ALL, NULL), DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_create_with_srq(a.ia, a.pz, a.dto1, a.dto2, a.conn, a.srq, NULL, &ep),
              DAT_INVALID_PARAMETER);
        if (a.have_ep && dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &epp) == DAT_SUCCESS) {
            ESUB(dat_ep_create_with_srq(a.ia, a.pz, a.dto1, a.dto2, a.conn, a.srq, &epp.ep_attr,
                                        NULL),
                 DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
        }
    } else {
        NOTE_SKIP("no SRQ: SRQ NULL-pointer checks not run");
    }
    aux_close(&a);
}

/* ---- BAD_16…17: unknown mask bits in every *_query (rulings D6) ----------- */

TEST(BAD_16_unknown_mask_bits_core)
{
    struct aux a;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pattr;
    DAT_PZ_PARAM pzp;
    DAT_LMR_PARAM lp;
    DAT_RMR_PARAM rp;
    DAT_EVD_PARAM ep;
    DAT_CNO_PARAM cp;
    int b;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    for (b = 35; b < 64; b += 7) {
        ESUB(dat_ia_query(a.ia, NULL, (DAT_IA_ATTR_MASK)(1ULL << b), &ia_attr, 0, NULL),
             DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    }
    for (b = 26; b < 64; b += 6) {
        ESUB(dat_ia_query(a.ia, NULL, 0, NULL, (DAT_PROVIDER_ATTR_MASK)(1ULL << b), &pattr),
             DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    }
    ESUB(dat_pz_query(a.pz, (DAT_PZ_PARAM_MASK)0x02, &pzp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_pz_query(a.pz, (DAT_PZ_PARAM_MASK)0xFFFFFFFFu, &pzp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_lmr_query(a.lmr, (DAT_LMR_PARAM_MASK)0x400, &lp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_lmr_query(a.lmr, (DAT_LMR_PARAM_MASK)0xFFFFFFFFu, &lp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_rmr_query(a.rmr, (DAT_RMR_PARAM_MASK)0x20, &rp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_rmr_query(a.rmr, (DAT_RMR_PARAM_MASK)0x80000000u, &rp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_evd_query(a.sevd, (DAT_EVD_PARAM_MASK)0x20, &ep), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_evd_query(a.aevd, (DAT_EVD_PARAM_MASK)0x3F, &ep), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_cno_query(a.cno, (DAT_CNO_PARAM_MASK)0x4, &cp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_cno_query(a.cno, (DAT_CNO_PARAM_MASK)0x7, &cp), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    aux_close(&a);
}

TEST(BAD_17_unknown_mask_bits_ep_psp_rsp_srq)
{
    struct aux a;
    DAT_EP_PARAM epp;
    DAT_PSP_PARAM pp;
    DAT_RSP_PARAM rp;
    DAT_SRQ_PARAM sp;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    if (a.have_ep) {
        memset(&epp, 0, sizeof(epp));
        ETYPE(dat_ep_query(a.ep, (DAT_EP_PARAM_MASK)(1ULL << 40), &epp), DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_query(a.ep, (DAT_EP_PARAM_MASK)0x800, &epp), DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_query(a.ep, (DAT_EP_PARAM_MASK)0x80000000ULL, &epp), DAT_INVALID_PARAMETER);
        REQUIRE(dat_ep_query(a.ep, DAT_EP_FIELD_ALL, &epp) == DAT_SUCCESS);
        ETYPE(dat_ep_modify(a.ep, (DAT_EP_PARAM_MASK)0x800, &epp), DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_modify(a.ep, (DAT_EP_PARAM_MASK)(1ULL << 40), &epp), DAT_INVALID_PARAMETER);
    } else {
        NOTE_SKIP("no EP: dat_ep_query/modify mask checks not run");
    }
    if (a.have_psp)
        ETYPE(dat_psp_query(a.psp, (DAT_PSP_PARAM_MASK)0x10, &pp), DAT_INVALID_PARAMETER);
    else
        NOTE_SKIP("no PSP: dat_psp_query mask check not run");
    if (a.have_rsp)
        ETYPE(dat_rsp_query(a.rsp, (DAT_RSP_PARAM_MASK)0x10, &rp), DAT_INVALID_PARAMETER);
    else
        NOTE_SKIP("no RSP: dat_rsp_query mask check not run");
    if (a.have_srq)
        ETYPE(dat_srq_query(a.srq, (DAT_SRQ_PARAM_MASK)0x100, &sp), DAT_INVALID_PARAMETER);
    else
        NOTE_SKIP("no SRQ: dat_srq_query mask check not run");
    /* dat_cr_query (mask 0x20) needs a CR, which needs a connection: not run */
    aux_close(&a);
}

/* ---- BAD_18…19: out-of-range counts and flags ----------------------------- */

TEST(BAD_18_out_of_range_core)
{
    struct aux a;
    char name[256];
    DAT_EVD_HANDLE e;
    DAT_IA_HANDLE ia2;
    DAT_EVD_PARAM p;
    DAT_EVENT ev;
    DAT_COUNT n;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e = DAT_HANDLE_NULL;
    ESUB(dat_ia_openv(name, 0, &e, &ia2, 1, 2, DAT_FALSE), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    e = DAT_HANDLE_NULL;
    ESUB(dat_ia_openv(name, INT_MIN, &e, &ia2, 1, 2, DAT_FALSE), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_ia_close(a.ia, (DAT_CLOSE_FLAGS)2), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_ia_close(a.ia, (DAT_CLOSE_FLAGS)0xFFFFFFFFu), DAT_INVALID_PARAMETER,
         DAT_INVALID_ARG2);
    ESUB(dat_evd_create(a.ia, 0, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e),
         DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_evd_create(a.ia, -5, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e),
         DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_evd_create(a.ia, INT_MIN, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e),
         DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_evd_resize(a.sevd, 0), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_evd_resize(a.sevd, -1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_evd_wait(a.sevd, 0, 0, &ev, &n), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    ESUB(dat_evd_wait(a.sevd, 0, -1, &ev, &n), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    memset(&p, 0, sizeof(p));
    REQUIRE(dat_evd_query(a.sevd, DAT_EVD_FIELD_EVD_QLEN, &p) == DAT_SUCCESS);
    if (p.evd_qlen < INT_MAX)
        ETYPE(dat_evd_wait(a.sevd, 0, p.evd_qlen + 1, &ev, &n), DAT_INVALID_PARAMETER);
    ESUB(dat_lmr_sync_rdma_read(a.ia, NULL, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ESUB(dat_lmr_sync_rdma_write(a.ia, NULL, 5), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    /* the objects are unchanged and usable */
    CHECK_OK(ctest_post(a.sevd, NULL));
    CHECK_OK(dat_evd_dequeue(a.sevd, &ev));
    CHECK_OK(dat_ia_query(a.ia, NULL, 0, NULL, 0, NULL));
    aux_close(&a);
}

TEST(BAD_19_out_of_range_ep_psp_srq)
{
    struct aux a;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q;
    DAT_LMR_TRIPLET t;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);
    if (a.cr != DAT_HANDLE_NULL) {
        q = free_qual(&a);
        ETYPE(dat_psp_create(a.ia, q, a.cr, (DAT_PSP_FLAGS)2, &psp), DAT_INVALID_PARAMETER);
        ETYPE(dat_psp_create_any(a.ia, &q, a.cr, (DAT_PSP_FLAGS)7, &psp), DAT_INVALID_PARAMETER);
    } else {
        NOTE_SKIP("no CR EVD: PSP flag checks not run");
    }
    if (a.have_ep) {
        t = aux_trip(&a, 64);
        ETYPE(dat_ep_post_recv(a.ep, -1, &t, ctx64(1), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_post_recv(a.ep, INT_MIN, &t, ctx64(1), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_post_recv(a.ep, 1, &t, ctx64(1), DAT_COMPLETION_SUPPRESS_FLAG),
              DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_post_recv(a.ep, 1, NULL, ctx64(1), DAT_COMPLETION_DEFAULT_FLAG),
              DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_connect(a.ep, loopback(), (DAT_CONN_QUAL)47004, 1000000, -1, NULL,
                             DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_INVALID_PARAMETER);
        if (a.prov_attr.max_private_data_size > 0 &&
            a.prov_attr.max_private_data_size < 2 * 4096)
            ETYPE(dat_ep_connect(a.ep, loopback(), (DAT_CONN_QUAL)47004, 1000000,
                                 a.prov_attr.max_private_data_size + 1, a.buf,
                                 DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
                  DAT_INVALID_PARAMETER);
        ETYPE(dat_ep_connect(a.ep, loopback(), (DAT_CONN_QUAL)47004, 1000000, 8, NULL,
                             DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_INVALID_PARAMETER);
        /* the EP did not move */
        {
            DAT_EP_STATE st = (DAT_EP_STATE)99;
            DAT_BOOLEAN ri, qi;
            CHECK_OK(dat_ep_get_status(a.ep, &st, &ri, &qi));
            CHECK(st == DAT_EP_STATE_UNCONNECTED);
            CHECK(ri == DAT_TRUE);
        }
    } else {
        NOTE_SKIP("no EP: EP count checks not run");
    }
    if (a.have_srq) {
        t = aux_trip(&a, 64);
        ETYPE(dat_srq_resize(a.srq, 0), DAT_INVALID_PARAMETER);
        ETYPE(dat_srq_resize(a.srq, -3), DAT_INVALID_PARAMETER);
        ETYPE(dat_srq_post_recv(a.srq, -1, &t, ctx64(9)), DAT_INVALID_PARAMETER);
    } else {
        NOTE_SKIP("no SRQ: SRQ count checks not run");
    }
    aux_close(&a);
}

/* ---- BAD_20: huge lengths -------------------------------------------------- */

TEST(BAD_20_huge_lengths)
{
    struct aux a;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_HANDLE l;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    DAT_LMR_TRIPLET t;
    DAT_EVD_HANDLE e;
    DAT_RETURN r;

    bad_guard();
    REQUIRE(aux_open_core(&a));
    memset(&rd, 0, sizeof(rd));
    rd.for_va = a.buf;
    r = CALL(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, rd, ~(DAT_VLEN)0, a.pz,
                            DAT_MEM_PRIV_LOCAL_READ_FLAG, &l, &lc, &rc, &rs, &ra));
    bad_expect_type2("dat_lmr_create(length ~0)", r, DAT_INVALID_PARAMETER,
                     DAT_INSUFFICIENT_RESOURCES);
    if (r == DAT_SUCCESS)
        dat_lmr_free(l);
    r = CALL(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, rd, (DAT_VLEN)1 << 62, a.pz,
                            DAT_MEM_PRIV_LOCAL_READ_FLAG, &l, &lc, &rc, &rs, &ra));
    bad_expect_type2("dat_lmr_create(length 2^62)", r, DAT_INVALID_PARAMETER,
                     DAT_INSUFFICIENT_RESOURCES);
    if (r == DAT_SUCCESS)
        dat_lmr_free(l);
    /* address + length wraps around */
    rd.for_va = (DAT_PVOID)(uintptr_t)0xFFFFFFFFFFFFF000ull;
    r = CALL(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, rd, 0x2000, a.pz,
                            DAT_MEM_PRIV_LOCAL_READ_FLAG, &l, &lc, &rc, &rs, &ra));
    bad_expect_sub("dat_lmr_create(address + length wraps)", r, DAT_INVALID_PARAMETER,
                   DAT_INVALID_ARG4);
    if (r == DAT_SUCCESS)
        dat_lmr_free(l);

    /* a segment of huge length inside a live LMR's context */
    t = aux_trip(&a, ~(DAT_VLEN)0);
    ETYPE(dat_lmr_sync_rdma_read(a.ia, &t, 1), DAT_INVALID_PARAMETER);
    ETYPE(dat_lmr_sync_rdma_write(a.ia, &t, 1), DAT_INVALID_PARAMETER);
    t = aux_trip(&a, 64);
    t.virtual_address = ~(DAT_VADDR)0 - 8;
    ETYPE(dat_lmr_sync_rdma_read(a.ia, &t, 1), DAT_INVALID_PARAMETER);
    /* a huge segment count over a one-element array is not read past: the
     * first segment is valid, the count is what is out of range — the
     * library may only reject (it must not walk 2^64 entries) */
    /* (not run: reading past the array is the caller's fault, not testable) */

    /* queue lengths above the IA limit */
    if (a.ia_attr.max_evd_qlen > 0 && a.ia_attr.max_evd_qlen < INT_MAX) {
        ETYPE(dat_evd_create(a.ia, a.ia_attr.max_evd_qlen + 1, DAT_HANDLE_NULL,
                             DAT_EVD_SOFTWARE_FLAG, &e),
              DAT_INSUFFICIENT_RESOURCES);
        ETYPE2(dat_evd_resize(a.sevd, a.ia_attr.max_evd_qlen + 1), DAT_INSUFFICIENT_RESOURCES,
               DAT_INVALID_PARAMETER);
        ETYPE2(dat_evd_resize(a.sevd, INT_MAX), DAT_INSUFFICIENT_RESOURCES,
               DAT_INVALID_PARAMETER);
    }
    if (a.ia_attr.max_evd_qlen < INT_MAX)
        ETYPE(dat_evd_create(a.ia, INT_MAX, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &e),
              DAT_INSUFFICIENT_RESOURCES);
    /* the EVD is intact after the failed resizes */
    CHECK_OK(ctest_post(a.sevd, NULL));
    aux_close(&a);
}

/* ---- BAD_21: registry entry points and dat_strerror ----------------------- */

TEST(BAD_21_registry_and_strerror_arguments)
{
    DAT_COUNT n = -7;
    DAT_PROVIDER_INFO info[4], *list[4];
    DAT_PROVIDER fake;
    const char *ma, *mi;
    int i;

    bad_guard();
    memset(info, 0, sizeof(info));
    for (i = 0; i < 4; i++)
        list[i] = &info[i];
    snprintf(info[0].ia_name, sizeof(info[0].ia_name), "bad_input_never_registered");
    info[0].dapl_version_major = 1;
    info[0].dapl_version_minor = 2;
    info[0].is_thread_safe = DAT_FALSE;
    memset(&fake, 0, sizeof(fake));

    EXACT(dat_registry_list_providers(4, NULL, list), 0x80060025u);
    EXACT(dat_registry_list_providers(4, &n, NULL), 0x80060026u);
    list[0] = NULL;
    EXACT(dat_registry_list_providers(1, &n, list), 0x80060026u);

    EXACT(dat_registry_add_provider(NULL, &info[0]), 0x80060024u);
    EXACT(dat_registry_add_provider(NULL, NULL), 0x80060024u);
    EXACT(dat_registry_add_provider(&fake, NULL), 0x80060025u);
    EXACT(dat_registry_remove_provider(NULL, &info[0]), 0x80060024u);
    EXACT(dat_registry_remove_provider(NULL, NULL), 0x80060024u);
    /* the reference crashes on a NULL info here (D25); rule 1: a parameter error */
    ETYPE(dat_registry_remove_provider(&fake, NULL), DAT_INVALID_PARAMETER);

    ETYPE(dat_strerror(0x8005000Bu, NULL, &mi), DAT_INVALID_PARAMETER);
    ETYPE(dat_strerror(0x8005000Bu, &ma, NULL), DAT_INVALID_PARAMETER);
    ETYPE(dat_strerror(0x8005000Bu, NULL, NULL), DAT_INVALID_PARAMETER);
    EXACT(dat_strerror(0xFFFFFFFFu, &ma, &mi), 0x80060000u);
}

/* ---- BAD_22: garbage secondary handles ------------------------------------ */

TEST(BAD_22_garbage_secondary_handles)
{
    struct aux a;
    DAT_UINT64 junk[64];
    DAT_HANDLE g;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_HANDLE l;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    DAT_EVD_HANDLE e;
    DAT_LMR_TRIPLET t;
    DAT_IA_HANDLE ia2;
    char name[256];

    bad_guard();
    fill_random(junk, sizeof(junk), 0xABCDu);
    g = (DAT_HANDLE)&junk[4];
    REQUIRE(aux_open_core(&a));
    aux_open_ep(&a);

    memset(&rd, 0, sizeof(rd));
    rd.for_va = a.buf;
    ETYPE(dat_lmr_create(a.ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, g, DAT_MEM_PRIV_LOCAL_READ_FLAG,
                         &l, &lc, &rc, &rs, &ra),
          DAT_INVALID_HANDLE);
    memset(&rd, 0, sizeof(rd));
    rd.for_lmr_handle = g;
    ETYPE(dat_lmr_create(a.ia, DAT_MEM_TYPE_LMR, rd, 0, a.pz, DAT_MEM_PRIV_LOCAL_READ_FLAG, &l,
                         &lc, &rc, &rs, &ra),
          DAT_INVALID_HANDLE);
    ETYPE(dat_evd_create(a.ia, 8, g, DAT_EVD_SOFTWARE_FLAG, &e), DAT_INVALID_HANDLE);
    ETYPE(dat_evd_create(a.ia, 8, (DAT_CNO_HANDLE)a.pz, DAT_EVD_SOFTWARE_FLAG, &e),
          DAT_INVALID_HANDLE);
    ETYPE(dat_evd_modify_cno(a.sevd, g), DAT_INVALID_HANDLE);
    ETYPE(dat_evd_modify_cno(a.sevd, (DAT_CNO_HANDLE)a.pz), DAT_INVALID_HANDLE);
    t = aux_trip(&a, 64);
    ETYPE(dat_rmr_bind(a.rmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, g, ctx64(1),
                       DAT_COMPLETION_DEFAULT_FLAG, &rc),
          DAT_INVALID_HANDLE);

    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e = (DAT_EVD_HANDLE)g;
    ETYPE(dat_ia_open(name, 8, &e, &ia2), DAT_INVALID_HANDLE);
    CHECK(e == (DAT_EVD_HANDLE)g);

    if (a.conn != DAT_HANDLE_NULL) {
        DAT_EP_HANDLE ep;
        DAT_PSP_HANDLE psp;
        DAT_RSP_HANDLE rsp;
        ETYPE(dat_ep_create(a.ia, g, a.dto1, a.dto2, a.conn, NULL, &ep), DAT_INVALID_HANDLE);
        ETYPE(dat_ep_create(a.ia, a.pz, g, a.dto2, a.conn, NULL, &ep), DAT_INVALID_HANDLE);
        ETYPE(dat_ep_create(a.ia, a.pz, a.dto1, g, a.conn, NULL, &ep), DAT_INVALID_HANDLE);
        ETYPE(dat_ep_create(a.ia, a.pz, a.dto1, a.dto2, g, NULL, &ep), DAT_INVALID_HANDLE);
        ETYPE(dat_psp_create(a.ia, free_qual(&a), g, DAT_PSP_CONSUMER_FLAG, &psp),
              DAT_INVALID_HANDLE);
        ETYPE(dat_rsp_create(a.ia, free_qual(&a), g, a.cr, &rsp), DAT_INVALID_HANDLE);
        if (a.have_ep) {
            ETYPE(dat_rsp_create(a.ia, free_qual(&a), a.ep, g, &rsp), DAT_INVALID_HANDLE);
            ETYPE(dat_ep_dup_connect(a.ep, g, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT),
                  DAT_INVALID_HANDLE);
        }
        if (a.have_srq)
            ETYPE(dat_srq_create(a.ia, g, &(DAT_SRQ_ATTR){8, 1, 0}, &(DAT_SRQ_HANDLE){0}),
                  DAT_INVALID_HANDLE);
    } else {
        NOTE_SKIP("no EVDs for EPs: EP-side secondary-handle checks not run");
    }
    /* nothing was damaged */
    CHECK_OK(dat_pz_query(a.pz, DAT_PZ_FIELD_ALL, &(DAT_PZ_PARAM){0}));
    CHECK_OK(ctest_post(a.sevd, NULL));
    aux_close(&a);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
