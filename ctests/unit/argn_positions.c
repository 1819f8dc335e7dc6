/*
 * DAT_INVALID_ARGn names the right parameter (semantics-core.md §1.3: the
 * 1-based position of the offending argument in the C prototype of the
 * called function, include/dat/udat.h; for dat_ia_open the 4-argument form).
 *
 * Every case ARGN_<function>_<param> provokes one detectable invalid input
 * at a time — a NULL required pointer, undefined mask or flag bits, a count,
 * length or size out of range — for an input the spec answers with
 * DAT_INVALID_PARAMETER, and checks the exact value
 * DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG<n>.
 *
 * EXPECT_ARG(call, "param", n) names the parameter and its position; the
 * position is also checked against the prototype of that name parsed from
 * include/dat/udat.h, so a wrong n is reported as a test error.
 *
 * Objects come from one fixture (struct fx) built in stages: the core
 * objects, an unconnected EP, a pending connection request, a connection
 * made inside this process over the test IA (loopback).
 */
#include "ctest.h"

#include <ctype.h>
#include <limits.h>

#define BUF_LEN (64 * 1024)
#define SMALL 4096 /* the EP message / RDMA limit of the size cases */
#define WAIT_US 10000000u
#define BAD_COMPLETION_BIT 0x40 /* no DAT_COMPLETION_* flag has it */

/* ---- the prototype table: include/dat/udat.h ------------------------------- */

#ifndef CTEST_BUILD_DIR
#define CTEST_BUILD_DIR "build/ctests"
#endif

static char *argn_header;
static int argn_header_read;
static char argn_note[64]; /* which of several inputs a failure is about */

/* The header the library was built with, next to the build directory (with
 * the default, include/dat/udat.h under the current directory). */
static const char *header_text(void)
{
    FILE *f;
    long len;

    if (argn_header_read)
        return argn_header;
    argn_header_read = 1;
    f = fopen(CTEST_BUILD_DIR "/../../include/dat/udat.h", "r");
    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (argn_header = calloc(1, (size_t)len + 1)) != NULL &&
        fread(argn_header, 1, (size_t)len, f) != (size_t)len) {
        free(argn_header);
        argn_header = NULL;
    }
    fclose(f);
    return argn_header;
}

static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Position of `param` in the prototype of `fn` in udat.h: 1-based, 0 if the
 * prototype has no such parameter, -1 if the header could not be read. */
static int proto_position(const char *fn, const char *param)
{
    const char *h = header_text(), *p, *end;
    char key[96];
    int pos = 1;

    if (h == NULL)
        return -1;
    snprintf(key, sizeof(key), "DAT_RETURN %s(", fn);
    for (p = strstr(h, key); p != NULL && p != h && p[-1] != '\n'; p = strstr(p + 1, key)) {
    }
    if (p == NULL)
        return 0;
    p += strlen(key);
    end = strchr(p, ')');
    while (end != NULL && p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma != NULL ? comma : end, *e = stop, *s;
        while (e > p && !is_ident(e[-1]))
            e--;
        for (s = e; s > p && is_ident(s[-1]); s--) {
        }
        if ((size_t)(e - s) == strlen(param) && memcmp(s, param, (size_t)(e - s)) == 0)
            return pos;
        pos++;
        p = stop + 1;
    }
    return 0;
}

/* The function a call expression calls; dat_ia_open is the macro over the
 * first four parameters of dat_ia_openv. */
static void called_function(const char *call, char *fn, size_t cap)
{
    snprintf(fn, cap, "%.*s", (int)strcspn(call, "( "), call);
    if (strcmp(fn, "dat_ia_open") == 0)
        snprintf(fn, cap, "dat_ia_openv");
}

static void describe(DAT_RETURN r, char *out, size_t cap)
{
    const char *ma = NULL, *mi = NULL;
    DAT_UINT32 sub = DAT_GET_SUBTYPE(r);
    if (r == DAT_SUCCESS)
        snprintf(out, cap, "DAT_SUCCESS");
    else if (DAT_GET_TYPE(r) == DAT_INVALID_PARAMETER && sub >= DAT_INVALID_ARG1 &&
             sub < DAT_INVALID_ARG1 + 10)
        snprintf(out, cap, "INVALID_PARAMETER|ARG%u", (unsigned)(sub - DAT_INVALID_ARG1 + 1));
    else if (dat_strerror(r, &ma, &mi) == DAT_SUCCESS && ma != NULL && mi != NULL)
        snprintf(out, cap, "%s|%s", ma, mi);
    else
        snprintf(out, cap, "?");
}

static void argn_check(int line, const char *call, const char *param, int n, DAT_RETURN got,
                      int success_allowed)
{
    char fn[64], g[96];
    int pos;
    DAT_RETURN want = (DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_PARAMETER |
                                   (DAT_INVALID_ARG1 + (DAT_RETURN)n - 1));

    called_function(call, fn, sizeof(fn));
    pos = proto_position(fn, param);
    if (pos == 0 || (pos > 0 && pos != n)) {
        fprintf(stderr, "    line %d: test error: udat.h gives %s parameter '%s' position %d, "
                        "the case says %d\n", line, fn, param, pos, n);
        ctest_failures++;
    }
    if (got == DAT_SUCCESS && success_allowed) {
        fprintf(stderr, "    line %d: %s accepted (the spec allows it): %s\n", line, fn, call);
        return;
    }
    if (got != want) {
        describe(got, g, sizeof(g));
        fprintf(stderr, "    line %d: %s, parameter %s (ARG%d): got 0x%08x (%s), want 0x%08x "
                        "(INVALID_PARAMETER|ARG%d)\n      %s %s\n",
                line, fn, param, n, (unsigned)got, g, (unsigned)want, n, call, argn_note);
        ctest_failures++;
    }
    argn_note[0] = '\0';
}

#define EXPECT_ARG(call, param, n) argn_check(__LINE__, #call, (param), (n), (call), 0)
/* The spec also allows DAT_SUCCESS here; any error must still name `param`. */
#define EXPECT_ARG_OR_OK(call, param, n) argn_check(__LINE__, #call, (param), (n), (call), 1)

/* ---- fixture ---------------------------------------------------------------- */

struct fx {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, sevd, recv_evd, req_evd, conn_evd, cr_evd;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_EP_HANDLE ep, peer; /* ep: the active side; peer: the accepting EP */
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL qual;
    DAT_CR_HANDLE cr;
    DAT_SRQ_HANDLE srq;
    DAT_EP_ATTR attr; /* of ep, as queried */
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr;
    unsigned char *buf; /* BUF_LEN bytes, registered as lmr */
};

/* Every stage returns 1 when built, 0 on a setup failure, -1 when the
 * provider lacks what the stage needs (the case is skipped). */

/* Nothing: for the calls that take no object. */
static int fx_none(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    return 1;
}

/* IA, software EVD, PZ, LMR over buf with every privilege. */
static int fx_open(struct fx *f)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_VLEN rs;
    DAT_VADDR ra;
    void *p = NULL;

    memset(f, 0, sizeof(*f));
    if (posix_memalign(&p, 4096, BUF_LEN) != 0)
        return 0;
    f->buf = memset(p, 0, BUF_LEN);
    if (ctest_open_ia(&f->ia, &f->aevd) != DAT_SUCCESS ||
        dat_ia_query(f->ia, NULL, DAT_IA_FIELD_ALL, &f->ia_attr, DAT_PROVIDER_FIELD_ALL,
                     &f->pr) != DAT_SUCCESS ||
        ctest_sw_evd(f->ia, 8, &f->sevd) != DAT_SUCCESS || dat_pz_create(f->ia, &f->pz))
        return 0;
    memset(&rd, 0, sizeof(rd));
    rd.for_va = f->buf;
    return dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, rd, BUF_LEN, f->pz, DAT_MEM_PRIV_ALL_FLAG,
                          &f->lmr, &f->lc, &f->rc, &rs, &ra) == DAT_SUCCESS;
}

static void fx_close(struct fx *f)
{
    if (f->ia != DAT_HANDLE_NULL)
        dat_ia_close(f->ia, DAT_CLOSE_ABRUPT_FLAG);
    free(f->buf);
    memset(f, 0, sizeof(*f));
}

static int fx_new_ep(struct fx *f, const DAT_EP_ATTR *a, DAT_EP_HANDLE *ep)
{
    return dat_ep_create(f->ia, f->pz, f->recv_evd, f->req_evd, f->conn_evd, a, ep) ==
           DAT_SUCCESS;
}

/* + the EVDs of an EP and an unconnected EP f->ep: the provider's default
 * attributes with DEFAULT completion flags and, where non-zero, the given
 * message and RDMA size limits. */
static int fx_ep_with(struct fx *f, DAT_VLEN msg_max, DAT_VLEN rdma_max)
{
    DAT_EP_HANDLE tmp;
    DAT_EP_PARAM p;
    if (!fx_open(f) ||
        dat_evd_create(f->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &f->recv_evd) ||
        dat_evd_create(f->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                       &f->req_evd) ||
        dat_evd_create(f->ia, 64, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &f->conn_evd) ||
        dat_evd_create(f->ia, 64, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &f->cr_evd) ||
        !fx_new_ep(f, NULL, &tmp) || dat_ep_query(tmp, DAT_EP_FIELD_ALL, &p) || dat_ep_free(tmp))
        return 0;
    f->attr = p.ep_attr;
    f->attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    f->attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    f->attr.max_message_size = msg_max ? msg_max : f->attr.max_message_size;
    f->attr.max_rdma_size = rdma_max ? rdma_max : f->attr.max_rdma_size;
    if (!fx_new_ep(f, &f->attr, &f->ep) || dat_ep_query(f->ep, DAT_EP_FIELD_ALL, &p))
        return 0;
    f->attr = p.ep_attr;
    return 1;
}

static int fx_ep(struct fx *f) { return fx_ep_with(f, 0, 0); }

/* + f->qual: a qualifier of this IA nobody listens on. */
static int fx_target(struct fx *f)
{
    DAT_PSP_HANDLE tmp;
    return fx_ep(f) &&
           !dat_psp_create_any(f->ia, &f->qual, f->cr_evd, DAT_PSP_CONSUMER_FLAG, &tmp) &&
           !dat_psp_free(tmp);
}

static int fx_wait(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want, DAT_EVENT *ev)
{
    DAT_COUNT nmore;
    return dat_evd_wait(evd, WAIT_US, 1, ev, &nmore) == DAT_SUCCESS && ev->event_number == want;
}

/* + a PSP on this IA and f->ep connecting to it; f->cr is the pending request. */
static int fx_request_with(struct fx *f, DAT_VLEN msg_max, DAT_VLEN rdma_max)
{
    DAT_EVENT ev;
    if (!fx_ep_with(f, msg_max, rdma_max) ||
        dat_psp_create_any(f->ia, &f->qual, f->cr_evd, DAT_PSP_CONSUMER_FLAG, &f->psp) ||
        dat_ep_connect(f->ep, f->ia_attr.ia_address_ptr, f->qual, WAIT_US, 0, NULL,
                       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG) ||
        !fx_wait(f->cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev))
        return 0;
    f->cr = ev.event_data.cr_arrival_event_data.cr_handle;
    return 1;
}

static int fx_request(struct fx *f) { return fx_request_with(f, 0, 0); }

/* + an unconnected EP f->peer to accept f->cr with. */
static int fx_accepting(struct fx *f) { return fx_request(f) && fx_new_ep(f, &f->attr, &f->peer); }

/* + f->peer accepting f->cr: f->ep and f->peer are connected to each other. */
static int fx_connect_with(struct fx *f, DAT_VLEN msg_max, DAT_VLEN rdma_max)
{
    DAT_EVENT ev;
    if (!fx_request_with(f, msg_max, rdma_max) || !fx_new_ep(f, &f->attr, &f->peer) ||
        dat_cr_accept(f->cr, f->peer, 0, NULL) ||
        !fx_wait(f->conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
        !fx_wait(f->conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, &ev))
        return 0;
    f->cr = DAT_HANDLE_NULL;
    return 1;
}

static int fx_connect(struct fx *f) { return fx_connect_with(f, 0, 0); }
/* connected EPs whose max_message_size / max_rdma_size is SMALL */
static int fx_connect_small_msg(struct fx *f) { return fx_connect_with(f, SMALL, 0); }
static int fx_connect_small_rdma(struct fx *f) { return fx_connect_with(f, 0, SMALL); }

/* + an SRQ f->srq {16 buffers, 2 segments}, on an EP-ready IA. */
static int fx_srq(struct fx *f)
{
    DAT_SRQ_ATTR sa = {16, 2, DAT_SRQ_LW_DEFAULT};
    if (!fx_ep(f))
        return 0;
    return f->pr.srq_supported ? dat_srq_create(f->ia, f->pz, &sa, &f->srq) == DAT_SUCCESS : -1;
}

static DAT_LMR_TRIPLET seg(const struct fx *f, size_t off, DAT_VLEN len)
{
    return (DAT_LMR_TRIPLET){.lmr_context = f->lc, .segment_length = len,
                             .virtual_address = (DAT_VADDR)(uintptr_t)(f->buf + off)};
}

/* A segment that runs 8 bytes past the end of the LMR. */
static DAT_LMR_TRIPLET seg_past(const struct fx *f) { return seg(f, BUF_LEN - 8, 16); }

/* A segment of no LMR of this IA. */
static DAT_LMR_TRIPLET seg_unknown(const struct fx *f)
{
    return (DAT_LMR_TRIPLET){.lmr_context = f->lc ^ 0x5A5A0000u, .segment_length = 64,
                             .virtual_address = (DAT_VADDR)(uintptr_t)f->buf};
}

/* n segments: the first 64 bytes inside the LMR, the others empty. */
static DAT_LMR_TRIPLET *segs(const struct fx *f, DAT_COUNT n)
{
    DAT_LMR_TRIPLET *v = calloc((size_t)n, sizeof(*v));
    if (v != NULL)
        v[0] = seg(f, 0, 64);
    return v;
}

/* The remote side of an RDMA: the same buffer, through the LMR's RMR context. */
static DAT_RMR_TRIPLET rseg(const struct fx *f, DAT_VLEN len)
{
    return (DAT_RMR_TRIPLET){.rmr_context = f->rc, .segment_length = len,
                             .target_address = (DAT_VADDR)(uintptr_t)f->buf};
}

static DAT_DTO_COOKIE ck(DAT_UINT64 v) { return (DAT_DTO_COOKIE){.as_64 = v}; }

#define FX(f, stage)                                                           \
    do {                                                                       \
        int fx_r_ = stage(&(f));                                               \
        if (fx_r_ < 0) {                                                       \
            fx_close(&(f));                                                    \
            SKIP("the provider lacks what " #stage " needs");                  \
        }                                                                      \
        REQUIRE(fx_r_ > 0);                                                    \
    } while (0)

/* Skip the rest of the case when the provider leaves no such input. */
#define NEED(cond, why)                                                        \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fx_close(&f);                                                      \
            SKIP(why);                                                         \
        }                                                                      \
    } while (0)

/* A case run on fixture `stage`; the body sees `struct fx f`. */
#define CASE(name, stage, ...)                                                 \
    TEST(name)                                                                 \
    {                                                                          \
        struct fx f;                                                           \
        FX(f, stage);                                                          \
        __VA_ARGS__;                                                           \
        fx_close(&f);                                                          \
    }

#define UNUSED __attribute__((unused))
#define LIST_DECLS                                                             \
    DAT_COUNT n UNUSED;                                                        \
    DAT_PROVIDER_INFO info, *list[1] = {&info}
#define DEF DAT_COMPLETION_DEFAULT_FLAG
#define UNSIG DAT_COMPLETION_UNSIGNALLED_FLAG /* the EPs' completion flags are DEFAULT */
#define THRESH DAT_COMPLETION_EVD_THRESHOLD_FLAG /* an EP attribute, never per post */
#define PD_MAX (f.pr.max_private_data_size)
#define NO_LMR_OUTS &lc, &rc, &rs, &ra
#define LMR_OUT_DECLS                                                          \
    DAT_LMR_HANDLE l UNUSED;                                                   \
    DAT_LMR_CONTEXT lc;                                                        \
    DAT_RMR_CONTEXT rc;                                                        \
    DAT_VLEN rs;                                                               \
    DAT_VADDR ra;                                                              \
    DAT_REGION_DESCRIPTION rd = {.for_va = f.buf}

/* ---- registry, dat_strerror, consumer context --------------------------------- */

/* The header the cases check their positions against is there. */
CASE(ARGN_header_prototypes, fx_none,
     REQUIRE(header_text() != NULL);
     CHECK(proto_position("dat_evd_wait", "threshold") == 3); /* semantics-core.md §1.3 */
     CHECK(proto_position("dat_ia_query", "ia_attr_mask") == 3);
     CHECK(proto_position("dat_ep_post_rdma_read", "remote_iov") == 5))

CASE(ARGN_registry_list_providers_max_to_return, fx_none, LIST_DECLS;
     EXPECT_ARG(dat_registry_list_providers(0, &n, list), "max_to_return", 1))

CASE(ARGN_registry_list_providers_entries_returned, fx_none, LIST_DECLS;
     EXPECT_ARG(dat_registry_list_providers(1, NULL, list), "entries_returned", 2))

CASE(ARGN_registry_list_providers_dat_provider_list, fx_none, LIST_DECLS;
     EXPECT_ARG(dat_registry_list_providers(1, &n, NULL), "dat_provider_list", 3);
     list[0] = NULL;
     EXPECT_ARG(dat_registry_list_providers(1, &n, list), "dat_provider_list", 3))

static DAT_RETURN never_open(DAT_NAME_PTR n, DAT_COUNT q, DAT_EVD_HANDLE *e, DAT_IA_HANDLE *i,
                             DAT_BOOLEAN ro)
{
    (void)n, (void)q, (void)e, (void)i, (void)ro;
    return DAT_INTERNAL_ERROR;
}

/* A provider and its info that the registry would take, but for one field. */
static void fake_provider(DAT_PROVIDER *prov, DAT_PROVIDER_INFO *info)
{
    memset(prov, 0, sizeof(*prov));
    memset(info, 0, sizeof(*info));
    prov->device_name = "argn_never_registered";
    prov->ia_open_func = never_open;
    snprintf(info->ia_name, sizeof(info->ia_name), "%s", prov->device_name);
    info->dapl_version_major = 1;
    info->dapl_version_minor = 2;
}

#define PROVIDER_DECLS                                                         \
    DAT_PROVIDER prov;                                                         \
    DAT_PROVIDER_INFO info;                                                    \
    fake_provider(&prov, &info)

CASE(ARGN_registry_add_provider_provider, fx_none, PROVIDER_DECLS;
     EXPECT_ARG(dat_registry_add_provider(NULL, &info), "provider", 1);
     prov.ia_open_func = NULL; /* a field of the provider argument */
     EXPECT_ARG(dat_registry_add_provider(&prov, &info), "provider", 1))

CASE(ARGN_registry_add_provider_provider_info, fx_none, PROVIDER_DECLS;
     EXPECT_ARG(dat_registry_add_provider(&prov, NULL), "provider_info", 2);
     memset(info.ia_name, 'x', sizeof(info.ia_name)); /* no terminating NUL */
     EXPECT_ARG(dat_registry_add_provider(&prov, &info), "provider_info", 2))

CASE(ARGN_registry_remove_provider_provider, fx_none, PROVIDER_DECLS;
     EXPECT_ARG(dat_registry_remove_provider(NULL, &info), "provider", 1))

CASE(ARGN_registry_remove_provider_provider_info, fx_none, PROVIDER_DECLS;
     EXPECT_ARG(dat_registry_remove_provider(&prov, NULL), "provider_info", 2))

CASE(ARGN_strerror_major_message, fx_none, const char *mi;
     EXPECT_ARG(dat_strerror(DAT_INVALID_HANDLE, NULL, &mi), "major_message", 2))

CASE(ARGN_strerror_minor_message, fx_none, const char *ma;
     EXPECT_ARG(dat_strerror(DAT_INVALID_HANDLE, &ma, NULL), "minor_message", 3))

CASE(ARGN_get_consumer_context_context, fx_open,
     EXPECT_ARG(dat_get_consumer_context(f.ia, NULL), "context", 2);
     EXPECT_ARG(dat_get_consumer_context(f.lmr, NULL), "context", 2))

CASE(ARGN_get_handle_type_handle_type, fx_open,
     EXPECT_ARG(dat_get_handle_type(f.ia, NULL), "handle_type", 2);
     EXPECT_ARG(dat_get_handle_type(f.sevd, NULL), "handle_type", 2))

/* ---- IA ---------------------------------------------------------------------- */

#define OPEN_DECLS                                                             \
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;                                        \
    DAT_IA_HANDLE ia

CASE(ARGN_ia_open_name, fx_none, OPEN_DECLS; char name[DAT_NAME_MAX_LENGTH + 1] = {0};
     EXPECT_ARG(dat_ia_open(NULL, 8, &e, &ia), "name", 1);
     memset(name, 'a', DAT_NAME_MAX_LENGTH); /* 256 characters */
     EXPECT_ARG(dat_ia_open(name, 8, &e, &ia), "name", 1))

CASE(ARGN_ia_open_async_evd_qlen, fx_none, OPEN_DECLS;
     EXPECT_ARG(dat_ia_open(ctest_ia_name(), 0, &e, &ia), "async_evd_qlen", 2);
     e = DAT_HANDLE_NULL;
     EXPECT_ARG(dat_ia_open(ctest_ia_name(), -1, &e, &ia), "async_evd_qlen", 2))

CASE(ARGN_ia_open_async_evd_handle, fx_none, OPEN_DECLS; (void)e;
     EXPECT_ARG(dat_ia_open(ctest_ia_name(), 8, NULL, &ia), "async_evd_handle", 3))

CASE(ARGN_ia_close_ia_flags, fx_open,
     EXPECT_ARG(dat_ia_close(f.ia, (DAT_CLOSE_FLAGS)2), "ia_flags", 2))

CASE(ARGN_ia_query_ia_attr_mask, fx_open,
     EXPECT_ARG(dat_ia_query(f.ia, NULL, 0x800000000ULL, &f.ia_attr, 0, NULL), "ia_attr_mask", 3))

CASE(ARGN_ia_query_ia_attributes, fx_open,
     EXPECT_ARG(dat_ia_query(f.ia, NULL, DAT_IA_FIELD_ALL, NULL, 0, NULL), "ia_attributes", 4))

CASE(ARGN_ia_query_provider_attr_mask, fx_open,
     EXPECT_ARG(dat_ia_query(f.ia, NULL, 0, NULL, 0x4000000ULL, &f.pr), "provider_attr_mask", 5))

CASE(ARGN_ia_query_provider_attributes, fx_open,
     EXPECT_ARG(dat_ia_query(f.ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, NULL),
                "provider_attributes", 6))

/* ---- PZ, LMR, RMR -------------------------------------------------------------- */

CASE(ARGN_pz_create_pz_handle, fx_open,
     EXPECT_ARG(dat_pz_create(f.ia, NULL), "pz_handle", 2))

CASE(ARGN_pz_query_pz_param_mask, fx_open, DAT_PZ_PARAM p;
     EXPECT_ARG(dat_pz_query(f.pz, 0x2, &p), "pz_param_mask", 2))

CASE(ARGN_pz_query_pz_param, fx_open,
     EXPECT_ARG(dat_pz_query(f.pz, DAT_PZ_FIELD_ALL, NULL), "pz_param", 3))

CASE(ARGN_lmr_create_mem_type, fx_open, LMR_OUT_DECLS;
     EXPECT_ARG(dat_lmr_create(f.ia, (DAT_MEM_TYPE)7, rd, 4096, f.pz, DAT_MEM_PRIV_ALL_FLAG, &l,
                               NO_LMR_OUTS), "mem_type", 2))

CASE(ARGN_lmr_create_region_description, fx_open, LMR_OUT_DECLS;
     rd.for_va = NULL;
     EXPECT_ARG(dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, f.pz, DAT_MEM_PRIV_ALL_FLAG,
                               &l, NO_LMR_OUTS), "region_description", 3))

CASE(ARGN_lmr_create_length, fx_open, LMR_OUT_DECLS;
     EXPECT_ARG(dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, rd, 0, f.pz, DAT_MEM_PRIV_ALL_FLAG, &l,
                               NO_LMR_OUTS), "length", 4);
     rd.for_va = (DAT_PVOID)(uintptr_t)0xFFFFFFFFFFFFF000ull; /* address + length wraps */
     EXPECT_ARG(dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, rd, 0x2000, f.pz,
                               DAT_MEM_PRIV_ALL_FLAG, &l, NO_LMR_OUTS), "length", 4))

CASE(ARGN_lmr_create_privileges, fx_open, LMR_OUT_DECLS;
     EXPECT_ARG(dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, f.pz, 0x1000, &l,
                               NO_LMR_OUTS), "privileges", 6))

CASE(ARGN_lmr_create_lmr_handle, fx_open, LMR_OUT_DECLS;
     EXPECT_ARG(dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, f.pz, DAT_MEM_PRIV_ALL_FLAG,
                               NULL, NO_LMR_OUTS), "lmr_handle", 7))

CASE(ARGN_lmr_query_lmr_param_mask, fx_open, DAT_LMR_PARAM p;
     EXPECT_ARG(dat_lmr_query(f.lmr, 0x400, &p), "lmr_param_mask", 2))

CASE(ARGN_lmr_query_lmr_param, fx_open,
     EXPECT_ARG(dat_lmr_query(f.lmr, DAT_LMR_FIELD_ALL, NULL), "lmr_param", 3))

CASE(ARGN_lmr_sync_rdma_read_local_segments, fx_open,
     DAT_LMR_TRIPLET past = seg_past(&f), unknown = seg_unknown(&f);
     EXPECT_ARG(dat_lmr_sync_rdma_read(f.ia, NULL, 1), "local_segments", 2);
     EXPECT_ARG(dat_lmr_sync_rdma_read(f.ia, &past, 1), "local_segments", 2);
     EXPECT_ARG(dat_lmr_sync_rdma_read(f.ia, &unknown, 1), "local_segments", 2))

CASE(ARGN_lmr_sync_rdma_write_local_segments, fx_open,
     DAT_LMR_TRIPLET past = seg_past(&f), unknown = seg_unknown(&f);
     EXPECT_ARG(dat_lmr_sync_rdma_write(f.ia, NULL, 1), "local_segments", 2);
     EXPECT_ARG(dat_lmr_sync_rdma_write(f.ia, &past, 1), "local_segments", 2);
     EXPECT_ARG(dat_lmr_sync_rdma_write(f.ia, &unknown, 1), "local_segments", 2))

CASE(ARGN_rmr_create_rmr_handle, fx_open,
     EXPECT_ARG(dat_rmr_create(f.pz, NULL), "rmr_handle", 2))

CASE(ARGN_rmr_query_rmr_param_mask, fx_open, DAT_RMR_HANDLE r; DAT_RMR_PARAM p;
     REQUIRE(dat_rmr_create(f.pz, &r) == DAT_SUCCESS);
     EXPECT_ARG(dat_rmr_query(r, 0x20, &p), "rmr_param_mask", 2))

CASE(ARGN_rmr_query_rmr_param, fx_open, DAT_RMR_HANDLE r;
     REQUIRE(dat_rmr_create(f.pz, &r) == DAT_SUCCESS);
     EXPECT_ARG(dat_rmr_query(r, DAT_RMR_FIELD_ALL, NULL), "rmr_param", 3))

/* dat_rmr_bind on a connected EP (in another state the state check answers). */
#define BIND_DECLS                                                             \
    DAT_RMR_HANDLE r;                                                          \
    DAT_RMR_CONTEXT rc UNUSED;                                                 \
    DAT_LMR_TRIPLET t UNUSED = seg(&f, 0, 4096);                               \
    REQUIRE(dat_rmr_create(f.pz, &r) == DAT_SUCCESS)
#define RR DAT_MEM_PRIV_REMOTE_READ_FLAG

CASE(ARGN_rmr_bind_lmr_triplet, fx_connect, BIND_DECLS;
     DAT_LMR_TRIPLET past = seg_past(&f), unknown = seg_unknown(&f);
     EXPECT_ARG(dat_rmr_bind(r, NULL, RR, f.ep, ck(1), DEF, &rc), "lmr_triplet", 2);
     EXPECT_ARG(dat_rmr_bind(r, &past, RR, f.ep, ck(1), DEF, &rc), "lmr_triplet", 2);
     EXPECT_ARG(dat_rmr_bind(r, &unknown, RR, f.ep, ck(1), DEF, &rc), "lmr_triplet", 2))

CASE(ARGN_rmr_bind_mem_priv, fx_connect, BIND_DECLS;
     EXPECT_ARG(dat_rmr_bind(r, &t, 0x1000, f.ep, ck(1), DEF, &rc), "mem_priv", 3))

CASE(ARGN_rmr_bind_completion_flags, fx_connect, BIND_DECLS;
     EXPECT_ARG(dat_rmr_bind(r, &t, RR, f.ep, ck(1), BAD_COMPLETION_BIT, &rc),
                "completion_flags", 6);
     EXPECT_ARG(dat_rmr_bind(r, &t, RR, f.ep, ck(1), UNSIG, &rc), "completion_flags", 6))

CASE(ARGN_rmr_bind_rmr_context, fx_connect, BIND_DECLS;
     EXPECT_ARG(dat_rmr_bind(r, &t, RR, f.ep, ck(1), DEF, NULL), "rmr_context", 7))

/* ---- EVD, CNO ------------------------------------------------------------------ */

CASE(ARGN_evd_create_evd_min_qlen, fx_open, DAT_EVD_HANDLE e;
     EXPECT_ARG(dat_evd_create(f.ia, 0, NULL, DAT_EVD_SOFTWARE_FLAG, &e), "evd_min_qlen", 2);
     EXPECT_ARG(dat_evd_create(f.ia, -5, NULL, DAT_EVD_SOFTWARE_FLAG, &e), "evd_min_qlen", 2))

TEST(ARGN_evd_create_evd_flags)
{
    /* streams in the order of evd_stream_merging_supported */
    static const DAT_EVD_FLAGS stream[6] = {DAT_EVD_SOFTWARE_FLAG, DAT_EVD_CR_FLAG,
                                            DAT_EVD_DTO_FLAG,      DAT_EVD_CONNECTION_FLAG,
                                            DAT_EVD_RMR_BIND_FLAG, DAT_EVD_ASYNC_FLAG};
    struct fx f;
    DAT_EVD_HANDLE e;
    int i, j, forbidden = 0;
    FX(f, fx_open);
    for (i = 0; i < 6; i++)
        for (j = 0; j < 6; j++)
            if (i != j && !f.pr.evd_stream_merging_supported[i][j]) {
                forbidden++;
                EXPECT_ARG(dat_evd_create(f.ia, 8, NULL, stream[i] | stream[j], &e), "evd_flags",
                           4);
            }
    NEED(forbidden > 0, "every pair of streams may share an EVD");
    fx_close(&f);
}

CASE(ARGN_evd_create_evd_handle, fx_open,
     EXPECT_ARG(dat_evd_create(f.ia, 8, NULL, DAT_EVD_SOFTWARE_FLAG, NULL), "evd_handle", 5))

CASE(ARGN_evd_query_evd_param_mask, fx_open, DAT_EVD_PARAM p;
     EXPECT_ARG(dat_evd_query(f.sevd, 0x20, &p), "evd_param_mask", 2))

CASE(ARGN_evd_query_evd_param, fx_open,
     EXPECT_ARG(dat_evd_query(f.sevd, DAT_EVD_FIELD_ALL, NULL), "evd_param", 3))

CASE(ARGN_evd_resize_evd_min_qlen, fx_open,
     EXPECT_ARG(dat_evd_resize(f.sevd, 0), "evd_min_qlen", 2);
     EXPECT_ARG(dat_evd_resize(f.sevd, -1), "evd_min_qlen", 2))

/* An EVD without DAT_EVD_SOFTWARE_FLAG: ARG1 (semantics-core.md §2.22). */
CASE(ARGN_evd_post_se_evd_handle, fx_open, DAT_EVD_HANDLE dto; DAT_EVENT ev = {0};
     REQUIRE(dat_evd_create(f.ia, 8, NULL, DAT_EVD_DTO_FLAG, &dto) == DAT_SUCCESS);
     ev.event_number = DAT_SOFTWARE_EVENT;
     ev.evd_handle = dto;
     EXPECT_ARG(dat_evd_post_se(dto, &ev), "evd_handle", 1))

CASE(ARGN_evd_post_se_event, fx_open, DAT_EVENT ev = {0};
     EXPECT_ARG(dat_evd_post_se(f.sevd, NULL), "event", 2);
     ev.event_number = DAT_DTO_COMPLETION_EVENT;
     ev.evd_handle = f.sevd;
     EXPECT_ARG(dat_evd_post_se(f.sevd, &ev), "event", 2))

CASE(ARGN_evd_dequeue_event, fx_open,
     REQUIRE(ctest_post(f.sevd, NULL) == DAT_SUCCESS);
     EXPECT_ARG(dat_evd_dequeue(f.sevd, NULL), "event", 2))

CASE(ARGN_evd_wait_threshold, fx_open, DAT_EVENT ev; DAT_COUNT n; DAT_EVD_PARAM p;
     REQUIRE(dat_evd_query(f.sevd, DAT_EVD_FIELD_EVD_QLEN, &p) == DAT_SUCCESS);
     EXPECT_ARG(dat_evd_wait(f.sevd, 0, 0, &ev, &n), "threshold", 3);
     EXPECT_ARG(dat_evd_wait(f.sevd, 0, -1, &ev, &n), "threshold", 3);
     EXPECT_ARG(dat_evd_wait(f.sevd, 0, p.evd_qlen + 1, &ev, &n), "threshold", 3))

CASE(ARGN_evd_wait_event, fx_open, DAT_COUNT n;
     REQUIRE(ctest_post(f.sevd, NULL) == DAT_SUCCESS);
     EXPECT_ARG(dat_evd_wait(f.sevd, 0, 1, NULL, &n), "event", 4))

CASE(ARGN_evd_wait_nmore, fx_open, DAT_EVENT ev;
     REQUIRE(ctest_post(f.sevd, NULL) == DAT_SUCCESS);
     EXPECT_ARG(dat_evd_wait(f.sevd, 0, 1, &ev, NULL), "nmore", 5))

CASE(ARGN_cno_create_cno_handle, fx_open,
     EXPECT_ARG(dat_cno_create(f.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, NULL), "cno_handle", 3))

#define CNO_DECLS                                                              \
    DAT_CNO_HANDLE c;                                                          \
    REQUIRE(dat_cno_create(f.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &c) == DAT_SUCCESS)

CASE(ARGN_cno_query_cno_param_mask, fx_open, CNO_DECLS; DAT_CNO_PARAM p;
     EXPECT_ARG(dat_cno_query(c, 0x4, &p), "cno_param_mask", 2))

CASE(ARGN_cno_query_cno_param, fx_open, CNO_DECLS;
     EXPECT_ARG(dat_cno_query(c, DAT_CNO_FIELD_ALL, NULL), "cno_param", 3))

CASE(ARGN_cno_wait_evd_handle, fx_open, CNO_DECLS;
     EXPECT_ARG(dat_cno_wait(c, 0, NULL), "evd_handle", 3))

/* ---- EP creation, query, modify ------------------------------------------------ */

TEST(ARGN_ep_create_ep_attributes)
{
    struct fx f;
    DAT_EP_ATTR a[7];
    DAT_EP_HANDLE ep;
    int n = 0;
    FX(f, fx_ep);
    for (int i = 0; i < 7; i++)
        a[i] = f.attr;
    a[n++].service_type = (DAT_SERVICE_TYPE)99;
    a[n++].qos = 0x80; /* undefined QoS bits */
    a[n++].max_request_iov = 0;
    a[n++].max_recv_iov = 0;
    a[n++].recv_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG;
    if (f.ia_attr.max_iov_segments_per_dto < INT_MAX)
        a[n++].max_request_iov = f.ia_attr.max_iov_segments_per_dto + 1;
    if (f.ia_attr.max_message_size < ~(DAT_VLEN)0)
        a[n++].max_message_size = f.ia_attr.max_message_size + 1;
    for (int i = 0; i < n; i++) {
        snprintf(argn_note, sizeof(argn_note), "(attribute set %d)", i);
        EXPECT_ARG(dat_ep_create(f.ia, f.pz, f.recv_evd, f.req_evd, f.conn_evd, &a[i], &ep),
                   "ep_attributes", 6);
    }
    fx_close(&f);
}

CASE(ARGN_ep_create_ep_handle, fx_ep,
     EXPECT_ARG(dat_ep_create(f.ia, f.pz, f.recv_evd, f.req_evd, f.conn_evd, NULL, NULL),
                "ep_handle", 7))

TEST(ARGN_ep_create_with_srq_ep_attributes)
{
    struct fx f;
    DAT_EP_ATTR a[2];
    DAT_EP_HANDLE ep;
    int n = 0;
    FX(f, fx_srq);
    a[0] = a[1] = f.attr;
    if (f.ia_attr.max_iov_segments_per_rdma_read < INT_MAX)
        a[n++].max_rdma_read_iov = f.ia_attr.max_iov_segments_per_rdma_read + 1;
    if (f.ia_attr.max_rdma_size < ~(DAT_VLEN)0)
        a[n++].max_rdma_size = f.ia_attr.max_rdma_size + 1;
    EXPECT_ARG(dat_ep_create_with_srq(f.ia, f.pz, f.recv_evd, f.req_evd, f.conn_evd, f.srq, NULL,
                                      &ep), "ep_attributes", 7);
    for (int i = 0; i < n; i++) {
        snprintf(argn_note, sizeof(argn_note), "(attribute set %d)", i);
        EXPECT_ARG(dat_ep_create_with_srq(f.ia, f.pz, f.recv_evd, f.req_evd, f.conn_evd, f.srq,
                                          &a[i], &ep), "ep_attributes", 7);
    }
    fx_close(&f);
}

CASE(ARGN_ep_create_with_srq_ep_handle, fx_srq,
     EXPECT_ARG(dat_ep_create_with_srq(f.ia, f.pz, f.recv_evd, f.req_evd, f.conn_evd, f.srq,
                                       &f.attr, NULL), "ep_handle", 8))

CASE(ARGN_ep_query_ep_param_mask, fx_ep, DAT_EP_PARAM p;
     EXPECT_ARG(dat_ep_query(f.ep, 0x800, &p), "ep_param_mask", 2);
     EXPECT_ARG(dat_ep_query(f.ep, 1ULL << 40, &p), "ep_param_mask", 2))

CASE(ARGN_ep_query_ep_param, fx_ep,
     EXPECT_ARG(dat_ep_query(f.ep, DAT_EP_FIELD_ALL, NULL), "ep_param", 3))

TEST(ARGN_ep_modify_ep_param_mask)
{
    /* undefined bits, and fields that are never modifiable */
    static const DAT_EP_PARAM_MASK bad[] = {
        0x800, 1ULL << 40, DAT_EP_FIELD_IA_HANDLE, DAT_EP_FIELD_EP_STATE,
        DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR, DAT_EP_FIELD_REMOTE_PORT_QUAL,
        DAT_EP_FIELD_SRQ_HANDLE, DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW};
    struct fx f;
    DAT_EP_PARAM p;
    FX(f, fx_ep);
    REQUIRE(dat_ep_query(f.ep, DAT_EP_FIELD_ALL, &p) == DAT_SUCCESS);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(argn_note, sizeof(argn_note), "(mask 0x%llx)", (unsigned long long)bad[i]);
        EXPECT_ARG(dat_ep_modify(f.ep, bad[i], &p), "ep_param_mask", 2);
    }
    fx_close(&f);
}

CASE(ARGN_ep_modify_ep_param, fx_ep, DAT_EP_PARAM p;
     EXPECT_ARG(dat_ep_modify(f.ep, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, NULL), "ep_param", 3);
     REQUIRE(dat_ep_query(f.ep, DAT_EP_FIELD_ALL, &p) == DAT_SUCCESS);
     p.ep_attr.recv_completion_flags = DAT_COMPLETION_SUPPRESS_FLAG;
     EXPECT_ARG(dat_ep_modify(f.ep, DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, &p), "ep_param",
                3);
     p.ep_attr.qos = 0x80;
     EXPECT_ARG(dat_ep_modify(f.ep, DAT_EP_FIELD_EP_ATTR_QOS, &p), "ep_param", 3);
     NEED(f.ia_attr.max_message_size < ~(DAT_VLEN)0, "no message size above the IA's");
     p.ep_attr.max_message_size = f.ia_attr.max_message_size + 1;
     EXPECT_ARG(dat_ep_modify(f.ep, DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &p), "ep_param", 3))

/* semantics-ep.md §4.7 lists no INVALID_PARAMETER for dat_ep_get_status; if a
 * NULL output is refused, the code must still name it. */
CASE(ARGN_ep_get_status_ep_state, fx_ep, DAT_BOOLEAN ri, qi;
     EXPECT_ARG_OR_OK(dat_ep_get_status(f.ep, NULL, &ri, &qi), "ep_state", 2))

CASE(ARGN_ep_get_status_recv_idle, fx_ep, DAT_EP_STATE st; DAT_BOOLEAN qi;
     EXPECT_ARG_OR_OK(dat_ep_get_status(f.ep, &st, NULL, &qi), "recv_idle", 3))

CASE(ARGN_ep_get_status_request_idle, fx_ep, DAT_EP_STATE st; DAT_BOOLEAN ri;
     EXPECT_ARG_OR_OK(dat_ep_get_status(f.ep, &st, &ri, NULL), "request_idle", 4))

/* ---- connection management ----------------------------------------------------- */

#define ADDR f.ia_attr.ia_address_ptr
#define BEST DAT_QOS_BEST_EFFORT

CASE(ARGN_ep_connect_remote_ia_address, fx_target,
     EXPECT_ARG(dat_ep_connect(f.ep, NULL, f.qual, WAIT_US, 0, NULL, BEST, 0),
                "remote_ia_address", 2))

CASE(ARGN_ep_connect_timeout, fx_target,
     EXPECT_ARG(dat_ep_connect(f.ep, ADDR, f.qual, 0, 0, NULL, BEST, 0), "timeout", 4))

CASE(ARGN_ep_connect_private_data_size, fx_target,
     EXPECT_ARG(dat_ep_connect(f.ep, ADDR, f.qual, WAIT_US, -1, f.buf, BEST, 0),
                "private_data_size", 5);
     NEED(PD_MAX < BUF_LEN, "max_private_data_size is larger than the buffer");
     EXPECT_ARG(dat_ep_connect(f.ep, ADDR, f.qual, WAIT_US, PD_MAX + 1, f.buf, BEST, 0),
                "private_data_size", 5))

CASE(ARGN_ep_connect_private_data, fx_target,
     EXPECT_ARG(dat_ep_connect(f.ep, ADDR, f.qual, WAIT_US, 8, NULL, BEST, 0), "private_data", 6))

CASE(ARGN_ep_connect_qos, fx_target,
     EXPECT_ARG(dat_ep_connect(f.ep, ADDR, f.qual, WAIT_US, 0, NULL, 0x80, 0), "qos", 7))

CASE(ARGN_ep_connect_connect_flags, fx_target,
     EXPECT_ARG(dat_ep_connect(f.ep, ADDR, f.qual, WAIT_US, 0, NULL, BEST, 0x80),
                "connect_flags", 8))

/* dat_ep_dup_connect of a fresh EP after the connected f.ep */
#define DUP_DECLS                                                              \
    DAT_EP_HANDLE ep2;                                                         \
    REQUIRE(fx_new_ep(&f, &f.attr, &ep2))

CASE(ARGN_ep_dup_connect_timeout, fx_connect, DUP_DECLS;
     EXPECT_ARG(dat_ep_dup_connect(ep2, f.ep, 0, 0, NULL, BEST), "timeout", 3))

CASE(ARGN_ep_dup_connect_private_data_size, fx_connect, DUP_DECLS;
     EXPECT_ARG(dat_ep_dup_connect(ep2, f.ep, WAIT_US, -1, f.buf, BEST), "private_data_size", 4);
     NEED(PD_MAX < BUF_LEN, "max_private_data_size is larger than the buffer");
     EXPECT_ARG(dat_ep_dup_connect(ep2, f.ep, WAIT_US, PD_MAX + 1, f.buf, BEST),
                "private_data_size", 4))

CASE(ARGN_ep_dup_connect_private_data, fx_connect, DUP_DECLS;
     EXPECT_ARG(dat_ep_dup_connect(ep2, f.ep, WAIT_US, 8, NULL, BEST), "private_data", 5))

CASE(ARGN_ep_dup_connect_qos, fx_connect, DUP_DECLS;
     EXPECT_ARG(dat_ep_dup_connect(ep2, f.ep, WAIT_US, 0, NULL, 0x80), "qos", 6))

CASE(ARGN_ep_disconnect_close_flags, fx_connect,
     EXPECT_ARG(dat_ep_disconnect(f.ep, (DAT_CLOSE_FLAGS)2), "close_flags", 2))

/* [REF] 0 is the reserved qualifier; a provider may document it as valid. */
CASE(ARGN_psp_create_conn_qual, fx_ep, DAT_PSP_HANDLE psp;
     EXPECT_ARG_OR_OK(dat_psp_create(f.ia, 0, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
                      "conn_qual", 2))

CASE(ARGN_psp_create_psp_flags, fx_target, DAT_PSP_HANDLE psp;
     EXPECT_ARG(dat_psp_create(f.ia, f.qual, f.cr_evd, 2, &psp), "psp_flags", 4))

CASE(ARGN_psp_create_psp_handle, fx_target,
     EXPECT_ARG(dat_psp_create(f.ia, f.qual, f.cr_evd, DAT_PSP_CONSUMER_FLAG, NULL),
                "psp_handle", 5))

CASE(ARGN_psp_create_any_conn_qual, fx_ep, DAT_PSP_HANDLE psp;
     EXPECT_ARG(dat_psp_create_any(f.ia, NULL, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
                "conn_qual", 2))

CASE(ARGN_psp_create_any_psp_flags, fx_ep, DAT_PSP_HANDLE psp; DAT_CONN_QUAL q;
     EXPECT_ARG(dat_psp_create_any(f.ia, &q, f.cr_evd, 7, &psp), "psp_flags", 4))

CASE(ARGN_psp_create_any_psp_handle, fx_ep, DAT_CONN_QUAL q;
     EXPECT_ARG(dat_psp_create_any(f.ia, &q, f.cr_evd, DAT_PSP_CONSUMER_FLAG, NULL),
                "psp_handle", 5))

CASE(ARGN_psp_query_psp_param_mask, fx_request, DAT_PSP_PARAM p;
     EXPECT_ARG(dat_psp_query(f.psp, 0x10, &p), "psp_param_mask", 2))

CASE(ARGN_psp_query_psp_param, fx_request,
     EXPECT_ARG(dat_psp_query(f.psp, DAT_PSP_FIELD_ALL, NULL), "psp_param", 3))

CASE(ARGN_rsp_create_conn_qual, fx_ep, DAT_RSP_HANDLE rsp; /* as ARGN_psp_create_conn_qual */
     EXPECT_ARG_OR_OK(dat_rsp_create(f.ia, 0, f.ep, f.cr_evd, &rsp), "conn_qual", 2))

CASE(ARGN_rsp_create_rsp_handle, fx_target,
     EXPECT_ARG(dat_rsp_create(f.ia, f.qual, f.ep, f.cr_evd, NULL), "rsp_handle", 5))

#define RSP_DECLS                                                              \
    DAT_RSP_HANDLE rsp;                                                        \
    REQUIRE(dat_rsp_create(f.ia, f.qual, f.ep, f.cr_evd, &rsp) == DAT_SUCCESS)

CASE(ARGN_rsp_query_rsp_param_mask, fx_target, RSP_DECLS; DAT_RSP_PARAM p;
     EXPECT_ARG(dat_rsp_query(rsp, 0x10, &p), "rsp_param_mask", 2))

CASE(ARGN_rsp_query_rsp_param, fx_target, RSP_DECLS;
     EXPECT_ARG(dat_rsp_query(rsp, DAT_RSP_FIELD_ALL, NULL), "rsp_param", 3))

CASE(ARGN_cr_query_cr_param_mask, fx_request, DAT_CR_PARAM p;
     EXPECT_ARG(dat_cr_query(f.cr, 0x20, &p), "cr_param_mask", 2))

CASE(ARGN_cr_query_cr_param, fx_request,
     EXPECT_ARG(dat_cr_query(f.cr, DAT_CR_FIELD_ALL, NULL), "cr_param", 3))

CASE(ARGN_cr_accept_private_data_size, fx_accepting,
     EXPECT_ARG(dat_cr_accept(f.cr, f.peer, -1, f.buf), "private_data_size", 3);
     NEED(PD_MAX < BUF_LEN, "max_private_data_size is larger than the buffer");
     EXPECT_ARG(dat_cr_accept(f.cr, f.peer, PD_MAX + 1, f.buf), "private_data_size", 3))

CASE(ARGN_cr_accept_private_data, fx_accepting,
     EXPECT_ARG(dat_cr_accept(f.cr, f.peer, 4, NULL), "private_data", 4))

/* A qualifier nobody listens on: [REC] INVALID_PARAMETER, lenient SUCCESS. */
CASE(ARGN_cr_handoff_handoff, fx_request, DAT_PSP_HANDLE tmp; DAT_CONN_QUAL q;
     REQUIRE(!dat_psp_create_any(f.ia, &q, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &tmp));
     REQUIRE(dat_psp_free(tmp) == DAT_SUCCESS);
     EXPECT_ARG_OR_OK(dat_cr_handoff(f.cr, q), "handoff", 2))

/* ---- DTOs ---------------------------------------------------------------------- */
/* Sends and RDMA need a connected EP (the state check answers otherwise);
 * receives may be posted on an unconnected one. */

#define OVER(max) DAT_LMR_TRIPLET *v = segs(&f, (max) + 1); REQUIRE(v != NULL)
#define IOV_DECLS                                                              \
    DAT_LMR_TRIPLET t UNUSED = seg(&f, 0, 64), past UNUSED = seg_past(&f);     \
    DAT_RMR_TRIPLET r UNUSED = rseg(&f, 64)
/* a transfer of 2 * SMALL bytes on an EP that takes SMALL */
#define BIG_DECLS                                                              \
    DAT_LMR_TRIPLET big UNUSED = seg(&f, 0, 2 * SMALL);                        \
    DAT_RMR_TRIPLET rbig UNUSED = rseg(&f, 2 * SMALL)

CASE(ARGN_ep_post_send_num_segments, fx_connect, IOV_DECLS; OVER(f.attr.max_request_iov);
     EXPECT_ARG(dat_ep_post_send(f.ep, -1, &t, ck(1), DEF), "num_segments", 2);
     EXPECT_ARG(dat_ep_post_send(f.ep, f.attr.max_request_iov + 1, v, ck(1), DEF),
                "num_segments", 2);
     free(v))

CASE(ARGN_ep_post_send_local_iov, fx_connect_small_msg, IOV_DECLS; BIG_DECLS;
     EXPECT_ARG(dat_ep_post_send(f.ep, 1, NULL, ck(1), DEF), "local_iov", 3);
     EXPECT_ARG(dat_ep_post_send(f.ep, 1, &past, ck(1), DEF), "local_iov", 3);
     NEED(f.attr.max_message_size == SMALL, "the EP did not take max_message_size 4096");
     EXPECT_ARG(dat_ep_post_send(f.ep, 1, &big, ck(1), DEF), "local_iov", 3))

CASE(ARGN_ep_post_send_completion_flags, fx_connect, IOV_DECLS;
     EXPECT_ARG(dat_ep_post_send(f.ep, 1, &t, ck(1), BAD_COMPLETION_BIT), "completion_flags", 5);
     EXPECT_ARG(dat_ep_post_send(f.ep, 1, &t, ck(1), THRESH), "completion_flags", 5);
     EXPECT_ARG(dat_ep_post_send(f.ep, 1, &t, ck(1), UNSIG), "completion_flags", 5))

CASE(ARGN_ep_post_recv_num_segments, fx_ep, IOV_DECLS; OVER(f.attr.max_recv_iov);
     EXPECT_ARG(dat_ep_post_recv(f.ep, -1, &t, ck(2), DEF), "num_segments", 2);
     EXPECT_ARG(dat_ep_post_recv(f.ep, f.attr.max_recv_iov + 1, v, ck(2), DEF),
                "num_segments", 2);
     free(v))

CASE(ARGN_ep_post_recv_local_iov, fx_ep, IOV_DECLS;
     EXPECT_ARG(dat_ep_post_recv(f.ep, 1, NULL, ck(2), DEF), "local_iov", 3);
     EXPECT_ARG(dat_ep_post_recv(f.ep, 1, &past, ck(2), DEF), "local_iov", 3))

TEST(ARGN_ep_post_recv_completion_flags)
{
    static const DAT_COMPLETION_FLAGS bad[] = {
        DAT_COMPLETION_SUPPRESS_FLAG, DAT_COMPLETION_BARRIER_FENCE_FLAG,
        DAT_COMPLETION_SOLICITED_WAIT_FLAG, THRESH, BAD_COMPLETION_BIT, UNSIG};
    struct fx f;
    DAT_LMR_TRIPLET t;
    FX(f, fx_ep);
    t = seg(&f, 0, 64);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(argn_note, sizeof(argn_note), "(completion_flags 0x%x)", (unsigned)bad[i]);
        EXPECT_ARG(dat_ep_post_recv(f.ep, 1, &t, ck(2), bad[i]), "completion_flags", 5);
    }
    fx_close(&f);
}

/* The segment limit of an RDMA Read, and of an RDMA Write. */
#define READ_IOV (f.attr.max_rdma_read_iov > 0 ? f.attr.max_rdma_read_iov : f.attr.max_request_iov)
#define WRITE_IOV                                                              \
    (f.attr.max_rdma_write_iov > 0 ? f.attr.max_rdma_write_iov : f.attr.max_request_iov)

CASE(ARGN_ep_post_rdma_read_num_segments, fx_connect, IOV_DECLS; OVER(READ_IOV);
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, -1, &t, ck(3), &r, DEF), "num_segments", 2);
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, READ_IOV + 1, v, ck(3), &r, DEF), "num_segments", 2);
     free(v))

CASE(ARGN_ep_post_rdma_read_local_iov, fx_connect, IOV_DECLS; r = rseg(&f, 16);
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, 1, NULL, ck(3), &r, DEF), "local_iov", 3);
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, 1, &past, ck(3), &r, DEF), "local_iov", 3))

CASE(ARGN_ep_post_rdma_read_remote_iov, fx_connect_small_rdma, IOV_DECLS; BIG_DECLS;
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, 1, &t, ck(3), NULL, DEF), "remote_iov", 5);
     NEED(f.attr.max_rdma_size == SMALL, "the EP did not take max_rdma_size 4096");
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, 1, &big, ck(3), &rbig, DEF), "remote_iov", 5))

CASE(ARGN_ep_post_rdma_read_completion_flags, fx_connect, IOV_DECLS;
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, 1, &t, ck(3), &r, BAD_COMPLETION_BIT),
                "completion_flags", 6);
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, 1, &t, ck(3), &r, THRESH), "completion_flags", 6);
     EXPECT_ARG(dat_ep_post_rdma_read(f.ep, 1, &t, ck(3), &r, UNSIG), "completion_flags", 6))

CASE(ARGN_ep_post_rdma_write_num_segments, fx_connect, IOV_DECLS; OVER(WRITE_IOV);
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, -1, &t, ck(4), &r, DEF), "num_segments", 2);
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, WRITE_IOV + 1, v, ck(4), &r, DEF), "num_segments",
                2);
     free(v))

CASE(ARGN_ep_post_rdma_write_local_iov, fx_connect, IOV_DECLS;
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, 1, NULL, ck(4), &r, DEF), "local_iov", 3);
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, 1, &past, ck(4), &r, DEF), "local_iov", 3))

CASE(ARGN_ep_post_rdma_write_remote_iov, fx_connect, IOV_DECLS;
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, 1, &t, ck(4), NULL, DEF), "remote_iov", 5))

/* An RDMA Write moves what the local segments hold: when that exceeds the
 * EP's max_rdma_size, local_iov is the invalid input (an RDMA Read moves
 * what the remote segment names: remote_iov, above). */
CASE(ARGN_ep_post_rdma_write_local_iov_over_max_rdma_size, fx_connect_small_rdma, IOV_DECLS;
     BIG_DECLS; NEED(f.attr.max_rdma_size == SMALL, "the EP did not take max_rdma_size 4096");
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, 1, &big, ck(4), &rbig, DEF), "local_iov", 3))

CASE(ARGN_ep_post_rdma_write_completion_flags, fx_connect, IOV_DECLS;
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, 1, &t, ck(4), &r, BAD_COMPLETION_BIT),
                "completion_flags", 6);
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, 1, &t, ck(4), &r, THRESH), "completion_flags", 6);
     EXPECT_ARG(dat_ep_post_rdma_write(f.ep, 1, &t, ck(4), &r, UNSIG), "completion_flags", 6))

/* ---- SRQ ----------------------------------------------------------------------- */

TEST(ARGN_srq_create_srq_attr)
{
    struct fx f;
    DAT_SRQ_HANDLE s;
    FX(f, fx_srq);
    DAT_SRQ_ATTR bad[] = {{0, 1, 0}, {-1, 1, 0}, {16, 0, 0}, {16, 1, 5},
                          {f.ia_attr.max_recv_per_srq + 1, 1, 0}};
    size_t n = sizeof(bad) / sizeof(bad[0]) - (f.ia_attr.max_recv_per_srq == INT_MAX);
    EXPECT_ARG(dat_srq_create(f.ia, f.pz, NULL, &s), "srq_attr", 3);
    for (size_t i = 0; i < n; i++) {
        snprintf(argn_note, sizeof(argn_note), "(srq_attr {%d, %d, %d})", bad[i].max_recv_dtos,
                 bad[i].max_recv_iov, bad[i].low_watermark);
        EXPECT_ARG(dat_srq_create(f.ia, f.pz, &bad[i], &s), "srq_attr", 3);
    }
    fx_close(&f);
}

CASE(ARGN_srq_create_srq_handle, fx_srq, DAT_SRQ_ATTR sa = {16, 1, 0};
     EXPECT_ARG(dat_srq_create(f.ia, f.pz, &sa, NULL), "srq_handle", 4))

CASE(ARGN_srq_post_recv_num_segments, fx_srq, DAT_SRQ_PARAM p; IOV_DECLS;
     REQUIRE(dat_srq_query(f.srq, DAT_SRQ_FIELD_ALL, &p) == DAT_SUCCESS); OVER(p.max_recv_iov);
     EXPECT_ARG(dat_srq_post_recv(f.srq, -1, &t, ck(5)), "num_segments", 2);
     EXPECT_ARG(dat_srq_post_recv(f.srq, p.max_recv_iov + 1, v, ck(5)), "num_segments", 2);
     free(v))

CASE(ARGN_srq_post_recv_local_iov, fx_srq, DAT_LMR_TRIPLET past = seg_past(&f);
     EXPECT_ARG(dat_srq_post_recv(f.srq, 1, NULL, ck(5)), "local_iov", 3);
     EXPECT_ARG(dat_srq_post_recv(f.srq, 1, &past, ck(5)), "local_iov", 3))

CASE(ARGN_srq_query_srq_param_mask, fx_srq, DAT_SRQ_PARAM p;
     EXPECT_ARG(dat_srq_query(f.srq, 0x100, &p), "srq_param_mask", 2))

CASE(ARGN_srq_query_srq_param, fx_srq,
     EXPECT_ARG(dat_srq_query(f.srq, DAT_SRQ_FIELD_ALL, NULL), "srq_param", 3))

CASE(ARGN_srq_resize_srq_max_recv_dto, fx_srq,
     EXPECT_ARG(dat_srq_resize(f.srq, 0), "srq_max_recv_dto", 2);
     EXPECT_ARG(dat_srq_resize(f.srq, -3), "srq_max_recv_dto", 2);
     NEED(f.ia_attr.max_recv_per_srq < INT_MAX, "no SRQ size above the IA's");
     EXPECT_ARG(dat_srq_resize(f.srq, f.ia_attr.max_recv_per_srq + 1), "srq_max_recv_dto", 2))

int main(int argc, char **argv) { return ctest_main(argc, argv); }
