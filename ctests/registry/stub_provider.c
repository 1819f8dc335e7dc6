/*
 * A small third-party DAT 1.2 provider, written in C against the public
 * header only, used by the registry conformance tests.
 *
 * Built as build/ctests/registry/libstub_provider.so and named in a test
 * dat.conf. It behaves like any external uDAPL 1.2 provider library:
 *
 *   - exports dat_provider_init / dat_provider_fini (semantics-core §2.40,
 *     §2.41; abi-functions §7.1), which register / remove the IA name with
 *     dat_registry_add_provider / dat_registry_remove_provider;
 *   - keeps one DAT_PROVIDER table (abi-functions §5) per registered key,
 *     whose device_name is the IA name and whose 70 slots all point at
 *     functions of this library with the slot's exact type;
 *   - hands out objects whose first word is that DAT_PROVIDER * (the
 *     DAT_HANDLE_TO_PROVIDER convention, abi-functions §4).
 *
 * Implemented slots: ia_open (5 arguments), ia_query (accepts NULL outputs
 * when the masks are 0, reports the registered dapl version and
 * thread-safety), ia_close, pz_create/query/free, get_handle_type,
 * set/get_consumer_context. Every other slot returns
 * DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED (0x8FFF0000) and records the call.
 *
 * Behaviour switches, taken from the instance-data string (dat.conf field 7),
 * blank- or comma-separated:
 *   noregister     init does not call dat_registry_add_provider (PIN-04)
 *   second=NAME    init also registers NAME with the same version (PIN-09)
 *   nofini-remove  fini does not remove the name (PFI-03)
 *   badminor       ia_query reports dapl_version_minor + 1 (IAC-17)
 *
 * Observation:
 *   - exported counters and "last seen" values (stub_init_calls, ...) that a
 *     test reads with dlopen(path, RTLD_NOLOAD) + dlsym while the library is
 *     loaded;
 *   - one line per event appended to the file named by $STUB_LOG, which
 *     survives the library being unloaded:
 *       init NAME MAJ MIN TS INFOPTR add=0xXXXXXXXX add2=0xXXXXXXXX inst=STRING
 *       fini NAME MAJ MIN TS INFOPTR remove=0xXXXXXXXX remove2=0xXXXXXXXX
 *       ia_open NAME QLEN RO_AWARE
 *       ia_close NAME FLAGS ret=0xXXXXXXXX
 *       call SLOT            (every other slot, implemented or not)
 *     (0xFFFFFFFF in add=/remove= means "not attempted".)
 *
 * Variants (this file is also #included by other test sources):
 *   STUB_EMBEDDED  no dat_provider_init/fini: a test program builds tables
 *                  with stub_make_table() and registers them itself.
 *   STUB_NOINIT    no dat_provider_init/fini: an ELF constructor registers
 *                  the fixed key {"noinit0", 1, 2, DAT_FALSE} (PIN-06) and an
 *                  ELF destructor removes it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dat/udat.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Unimplemented slots ignore their parameters on purpose. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define STUB_ERR(type, sub) ((DAT_RETURN)(DAT_CLASS_ERROR | (DAT_RETURN)(type) | (DAT_RETURN)(sub)))
#define STUB_NOT_TRIED ((DAT_RETURN)0xFFFFFFFFu)

#define STUB_PROVIDER_NAME "ctest_stub_provider"
#define STUB_VENDOR_NAME "ctest-stub-vendor"
#define STUB_PROVIDER_VERSION_MAJOR 7
#define STUB_PROVIDER_VERSION_MINOR 3
#define STUB_MAX_PZS 16

/* ---- exported observation points ------------------------------------- */

int stub_init_calls;
int stub_fini_calls;
int stub_ia_open_calls;
int stub_ia_close_calls;
int stub_ia_query_calls;
int stub_pz_create_calls;
int stub_pz_query_calls;
int stub_pz_free_calls;
int stub_get_handle_type_calls;
int stub_set_context_calls;
int stub_get_context_calls;
int stub_unimpl_calls;
char stub_last_unimpl[64];

DAT_PROVIDER_INFO stub_last_init_info;
const DAT_PROVIDER_INFO *stub_last_init_info_ptr;
char stub_last_instance[1024];
int stub_last_instance_was_null;
DAT_PROVIDER_INFO stub_last_fini_info;
const DAT_PROVIDER_INFO *stub_last_fini_info_ptr;
DAT_RETURN stub_last_add_ret = STUB_NOT_TRIED;
DAT_RETURN stub_last_remove_ret = STUB_NOT_TRIED;

char stub_last_open_name[DAT_NAME_MAX_LENGTH + 16];
DAT_COUNT stub_last_open_qlen;
int stub_last_open_ro_aware;

/* ---- log ---------------------------------------------------------------- */

static void stub_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void stub_log(const char *fmt, ...)
{
    const char *path = getenv("STUB_LOG");
    char line[2048];
    va_list ap;
    int n, fd;

    if (path == NULL || path[0] == '\0')
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) < 0) {
        /* nothing to do: the test will notice the missing line */
    }
    close(fd);
}

/* ---- registered keys and their tables -------------------------------- */

#define STUB_MAX_ENTRIES 8

struct stub_entry {
    int in_use;
    DAT_PROVIDER_INFO info;          /* the key this table was registered with */
    char name[DAT_NAME_MAX_LENGTH];  /* device_name points here */
    DAT_PROVIDER table;
    int opt_noregister;
    int opt_nofini_remove;
    int opt_badminor;
    char second[DAT_NAME_MAX_LENGTH];
};

static struct stub_entry stub_entries[STUB_MAX_ENTRIES];

/* ---- objects ------------------------------------------------------------ */

#define STUB_MAGIC 0x5354424fu /* "STBO" */

struct stub_ia;

struct stub_obj {
    DAT_PROVIDER *provider; /* MUST be first: DAT_HANDLE_TO_PROVIDER */
    unsigned magic;
    DAT_HANDLE_TYPE type;
    DAT_CONTEXT context;
    struct stub_ia *ia; /* owning IA; NULL for an IA */
    struct stub_obj *next_live;
};

struct stub_ia {
    struct stub_obj hdr;
    struct stub_entry *entry;
    struct stub_obj *async_evd;  /* created at open, destroyed at close */
    DAT_EVD_HANDLE async_handle; /* what ia_query reports */
    int ro_aware;
    int npz;
};

static pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stub_obj *stub_live; /* every live object, for safe lookups */

static void stub_live_add(struct stub_obj *o)
{
    pthread_mutex_lock(&stub_lock);
    o->next_live = stub_live;
    stub_live = o;
    pthread_mutex_unlock(&stub_lock);
}

/* Unlink o from the live list (lock held). */
static void stub_live_unlink_locked(struct stub_obj *o)
{
    struct stub_obj **pp;

    for (pp = &stub_live; *pp != NULL; pp = &(*pp)->next_live) {
        if (*pp == o) {
            *pp = o->next_live;
            o->next_live = NULL;
            return;
        }
    }
}

/*
 * The live object behind handle h, or NULL. The handle is only compared
 * with the addresses of live objects, never dereferenced first, so stale
 * and garbage handles are harmless.
 */
static struct stub_obj *stub_find(DAT_HANDLE h)
{
    struct stub_obj *o;

    pthread_mutex_lock(&stub_lock);
    for (o = stub_live; o != NULL; o = o->next_live)
        if ((DAT_HANDLE)o == h)
            break;
    pthread_mutex_unlock(&stub_lock);
    if (o != NULL && o->magic != STUB_MAGIC)
        o = NULL;
    return o;
}

static struct stub_obj *stub_find_type(DAT_HANDLE h, DAT_HANDLE_TYPE type)
{
    struct stub_obj *o = stub_find(h);

    return (o != NULL && o->type == type) ? o : NULL;
}

static struct stub_obj *stub_obj_new(size_t size, DAT_PROVIDER *provider,
                                     DAT_HANDLE_TYPE type, struct stub_ia *ia)
{
    struct stub_obj *o = calloc(1, size);

    if (o == NULL)
        return NULL;
    o->provider = provider;
    o->magic = STUB_MAGIC;
    o->type = type;
    o->ia = ia;
    return o;
}

/* ---- unimplemented slots --------------------------------------------- */

static DAT_RETURN stub_unimpl(const char *slot)
{
    stub_unimpl_calls++;
    snprintf(stub_last_unimpl, sizeof(stub_last_unimpl), "%s", slot);
    stub_log("call %s", slot);
    return STUB_ERR(DAT_NOT_IMPLEMENTED, 0);
}

#define STUB_UNIMPL(slot, ...)                                                 \
    static DAT_RETURN stub_##slot(__VA_ARGS__) { return stub_unimpl(#slot); }

STUB_UNIMPL(cno_create, DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno)
STUB_UNIMPL(cno_modify_agent, DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent)
STUB_UNIMPL(cno_query, DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM *param)
STUB_UNIMPL(cno_free, DAT_CNO_HANDLE cno)
STUB_UNIMPL(cno_wait, DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd)
STUB_UNIMPL(cr_query, DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param)
STUB_UNIMPL(cr_accept, DAT_CR_HANDLE cr, DAT_EP_HANDLE ep, DAT_COUNT size, const DAT_PVOID data)
STUB_UNIMPL(cr_reject, DAT_CR_HANDLE cr)
STUB_UNIMPL(cr_handoff, DAT_CR_HANDLE cr, DAT_CONN_QUAL handoff)
STUB_UNIMPL(evd_create, DAT_IA_HANDLE ia, DAT_COUNT qlen, DAT_CNO_HANDLE cno,
            DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd)
STUB_UNIMPL(evd_query, DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM *param)
STUB_UNIMPL(evd_modify_cno, DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno)
STUB_UNIMPL(evd_enable, DAT_EVD_HANDLE evd)
STUB_UNIMPL(evd_disable, DAT_EVD_HANDLE evd)
STUB_UNIMPL(evd_wait, DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold,
            DAT_EVENT *event, DAT_COUNT *nmore)
STUB_UNIMPL(evd_resize, DAT_EVD_HANDLE evd, DAT_COUNT qlen)
STUB_UNIMPL(evd_post_se, DAT_EVD_HANDLE evd, const DAT_EVENT *event)
STUB_UNIMPL(evd_dequeue, DAT_EVD_HANDLE evd, DAT_EVENT *event)
STUB_UNIMPL(evd_free, DAT_EVD_HANDLE evd)
STUB_UNIMPL(ep_create, DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
            DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd,
            const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
STUB_UNIMPL(ep_query, DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param)
STUB_UNIMPL(ep_modify, DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *param)
STUB_UNIMPL(ep_connect, DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
            DAT_TIMEOUT timeout, DAT_COUNT size, const DAT_PVOID data, DAT_QOS qos,
            DAT_CONNECT_FLAGS flags)
STUB_UNIMPL(ep_dup_connect, DAT_EP_HANDLE ep, DAT_EP_HANDLE dup, DAT_TIMEOUT timeout,
            DAT_COUNT size, const DAT_PVOID data, DAT_QOS qos)
STUB_UNIMPL(ep_disconnect, DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags)
STUB_UNIMPL(ep_post_send, DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
STUB_UNIMPL(ep_post_recv, DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags)
STUB_UNIMPL(ep_post_rdma_read, DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
            DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags)
STUB_UNIMPL(ep_post_rdma_write, DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
            DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags)
STUB_UNIMPL(ep_get_status, DAT_EP_HANDLE ep, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
            DAT_BOOLEAN *request_idle)
STUB_UNIMPL(ep_free, DAT_EP_HANDLE ep)
STUB_UNIMPL(lmr_create, DAT_IA_HANDLE ia, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
            DAT_VLEN length, DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv, DAT_LMR_HANDLE *lmr,
            DAT_LMR_CONTEXT *lmr_ctx, DAT_RMR_CONTEXT *rmr_ctx, DAT_VLEN *reg_len,
            DAT_VADDR *reg_addr)
STUB_UNIMPL(lmr_query, DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *param)
STUB_UNIMPL(lmr_free, DAT_LMR_HANDLE lmr)
STUB_UNIMPL(rmr_create, DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr)
STUB_UNIMPL(rmr_query, DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *param)
STUB_UNIMPL(rmr_bind, DAT_RMR_HANDLE rmr, const DAT_LMR_TRIPLET *triplet, DAT_MEM_PRIV_FLAGS priv,
            DAT_EP_HANDLE ep, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
            DAT_RMR_CONTEXT *rmr_ctx)
STUB_UNIMPL(rmr_free, DAT_RMR_HANDLE rmr)
STUB_UNIMPL(psp_create, DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
            DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp)
STUB_UNIMPL(psp_query, DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *param)
STUB_UNIMPL(psp_free, DAT_PSP_HANDLE psp)
STUB_UNIMPL(rsp_create, DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EP_HANDLE ep,
            DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *rsp)
STUB_UNIMPL(rsp_query, DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *param)
STUB_UNIMPL(rsp_free, DAT_RSP_HANDLE rsp)
STUB_UNIMPL(psp_create_any, DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd,
            DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp)
STUB_UNIMPL(ep_reset, DAT_EP_HANDLE ep)
STUB_UNIMPL(evd_set_unwaitable, DAT_EVD_HANDLE evd)
STUB_UNIMPL(evd_clear_unwaitable, DAT_EVD_HANDLE evd)
STUB_UNIMPL(lmr_sync_rdma_read, DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
STUB_UNIMPL(lmr_sync_rdma_write, DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
STUB_UNIMPL(ep_create_with_srq, DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
            DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd, DAT_SRQ_HANDLE srq,
            const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep)
STUB_UNIMPL(ep_recv_query, DAT_EP_HANDLE ep, DAT_COUNT *nbufs, DAT_COUNT *span)
STUB_UNIMPL(ep_set_watermark, DAT_EP_HANDLE ep, DAT_COUNT soft, DAT_COUNT hard)
STUB_UNIMPL(srq_create, DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr,
            DAT_SRQ_HANDLE *srq)
STUB_UNIMPL(srq_free, DAT_SRQ_HANDLE srq)
STUB_UNIMPL(srq_post_recv, DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
            DAT_DTO_COOKIE cookie)
STUB_UNIMPL(srq_query, DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *param)
STUB_UNIMPL(srq_resize, DAT_SRQ_HANDLE srq, DAT_COUNT max)
STUB_UNIMPL(srq_set_lw, DAT_SRQ_HANDLE srq, DAT_COUNT lw)

/* ---- IA ----------------------------------------------------------------- */

static DAT_RETURN stub_ia_open_common(int idx, const DAT_NAME_PTR name, DAT_COUNT qlen,
                                      DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia_handle,
                                      int ro_aware)
{
    struct stub_entry *e = &stub_entries[idx];
    struct stub_ia *ia;

    stub_ia_open_calls++;
    snprintf(stub_last_open_name, sizeof(stub_last_open_name), "%s",
             name != NULL ? name : "(null)");
    stub_last_open_qlen = qlen;
    stub_last_open_ro_aware = ro_aware;
    stub_log("ia_open %s %d %d", name != NULL ? name : "(null)", (int)qlen, ro_aware);

    if (ia_handle == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    *ia_handle = DAT_HANDLE_NULL;
    if (name == NULL || !e->in_use || strcmp(name, e->name) != 0)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
    if (async_evd == NULL)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (*async_evd == DAT_HANDLE_NULL && qlen <= 0)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (*async_evd != DAT_HANDLE_NULL && *async_evd != DAT_EVD_ASYNC_EXISTS) {
        struct stub_obj *evd = stub_find_type(*async_evd, DAT_HANDLE_TYPE_EVD);
        if (evd == NULL || evd->ia == NULL || evd->ia->async_evd != evd)
            return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_ASYNC);
    }

    ia = (struct stub_ia *)stub_obj_new(sizeof(*ia), &e->table, DAT_HANDLE_TYPE_IA, NULL);
    if (ia == NULL)
        return STUB_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    ia->entry = e;
    ia->ro_aware = ro_aware;
    if (*async_evd == DAT_HANDLE_NULL) {
        ia->async_evd = stub_obj_new(sizeof(struct stub_obj), &e->table, DAT_HANDLE_TYPE_EVD, ia);
        if (ia->async_evd == NULL) {
            free(ia);
            return STUB_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
        }
        ia->async_handle = ia->async_evd;
        stub_live_add(ia->async_evd);
        *async_evd = ia->async_evd;
    } else if (*async_evd == DAT_EVD_ASYNC_EXISTS) {
        ia->async_handle = DAT_EVD_OUT_OF_SCOPE;
    } else {
        ia->async_handle = *async_evd;
    }
    stub_live_add(&ia->hdr);
    *ia_handle = ia;
    return DAT_SUCCESS;
}

/* One ia_open entry point per table: the registry stores only this pointer. */
#define STUB_IA_OPEN(i)                                                        \
    static DAT_RETURN stub_ia_open_##i(const DAT_NAME_PTR name, DAT_COUNT qlen, \
                                       DAT_EVD_HANDLE *async_evd,              \
                                       DAT_IA_HANDLE *ia_handle,               \
                                       STUB_RO_AWARE_T ro_aware)               \
    {                                                                          \
        return stub_ia_open_common(i, name, qlen, async_evd, ia_handle,        \
                                   (int)ro_aware);                             \
    }

#ifndef STUB_RO_AWARE_T
#define STUB_RO_AWARE_T DAT_BOOLEAN
#endif

STUB_IA_OPEN(0)
STUB_IA_OPEN(1)
STUB_IA_OPEN(2)
STUB_IA_OPEN(3)
STUB_IA_OPEN(4)
STUB_IA_OPEN(5)
STUB_IA_OPEN(6)
STUB_IA_OPEN(7)

static DAT_IA_OPEN_FUNC const stub_ia_open_funcs[STUB_MAX_ENTRIES] = {
    stub_ia_open_0, stub_ia_open_1, stub_ia_open_2, stub_ia_open_3,
    stub_ia_open_4, stub_ia_open_5, stub_ia_open_6, stub_ia_open_7,
};

static struct stub_ia *stub_ia_of(DAT_IA_HANDLE h)
{
    return (struct stub_ia *)stub_find_type(h, DAT_HANDLE_TYPE_IA);
}

static DAT_RETURN stub_ia_query(DAT_IA_HANDLE ia_handle, DAT_EVD_HANDLE *async_evd,
                                DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
                                DAT_PROVIDER_ATTR_MASK prov_mask, DAT_PROVIDER_ATTR *prov_attr)
{
    struct stub_ia *ia = stub_ia_of(ia_handle);
    struct stub_entry *e;

    stub_ia_query_calls++;
    stub_log("call ia_query");
    if (ia == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    e = ia->entry;
    if ((ia_mask & ~(DAT_IA_ATTR_MASK)DAT_IA_FIELD_ALL) != 0)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (ia_mask != 0 && ia_attr == NULL)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    if ((prov_mask & ~(DAT_PROVIDER_ATTR_MASK)DAT_PROVIDER_FIELD_ALL) != 0)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    if (prov_mask != 0 && prov_attr == NULL)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);

    if (async_evd != NULL)
        *async_evd = ia->async_handle;
    if (ia_mask != 0) {
        memset(ia_attr, 0, sizeof(*ia_attr));
        snprintf(ia_attr->adapter_name, sizeof(ia_attr->adapter_name), "%s", e->name);
        snprintf(ia_attr->vendor_name, sizeof(ia_attr->vendor_name), "%s", STUB_VENDOR_NAME);
        ia_attr->hardware_version_major = 1;
        ia_attr->firmware_version_major = 1;
        ia_attr->max_eps = 1;
        ia_attr->max_dto_per_ep = 1;
        ia_attr->max_rdma_read_per_ep_in = 1;
        ia_attr->max_rdma_read_per_ep_out = 1;
        ia_attr->max_evds = 1;
        ia_attr->max_evd_qlen = 64;
        ia_attr->max_iov_segments_per_dto = 1;
        ia_attr->max_lmrs = 1;
        ia_attr->max_lmr_block_size = 4096;
        ia_attr->max_lmr_virtual_address = ~(DAT_VADDR)0;
        ia_attr->max_pzs = STUB_MAX_PZS;
        ia_attr->max_message_size = 4096;
        ia_attr->max_rdma_size = 4096;
        ia_attr->max_rmrs = 1;
        ia_attr->max_rmr_target_address = ~(DAT_VADDR)0;
    }
    if (prov_mask != 0) {
        DAT_BOOLEAN *merge;
        int i;

        memset(prov_attr, 0, sizeof(*prov_attr));
        snprintf(prov_attr->provider_name, sizeof(prov_attr->provider_name), "%s",
                 STUB_PROVIDER_NAME);
        prov_attr->provider_version_major = STUB_PROVIDER_VERSION_MAJOR;
        prov_attr->provider_version_minor = STUB_PROVIDER_VERSION_MINOR;
        prov_attr->dapl_version_major = e->info.dapl_version_major;
        prov_attr->dapl_version_minor = e->info.dapl_version_minor + (e->opt_badminor ? 1 : 0);
        prov_attr->is_thread_safe = e->info.is_thread_safe;
        prov_attr->max_private_data_size = 64;
        prov_attr->optimal_buffer_alignment = 256;
        merge = (DAT_BOOLEAN *)&prov_attr->evd_stream_merging_supported[0][0];
        for (i = 0; i < 6; i++)
            merge[i * 6 + i] = DAT_TRUE;
    }
    return DAT_SUCCESS;
}

static DAT_RETURN stub_ia_close(DAT_IA_HANDLE ia_handle, DAT_CLOSE_FLAGS flags)
{
    struct stub_ia *ia = stub_ia_of(ia_handle);
    struct stub_obj **pp;
    DAT_RETURN ret = DAT_SUCCESS;
    const char *name = "(invalid)";

    stub_ia_close_calls++;
    if (ia == NULL) {
        ret = STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    } else {
        name = ia->entry->name;
        if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
            ret = STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        else if (flags == DAT_CLOSE_GRACEFUL_FLAG && ia->npz > 0)
            ret = STUB_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE);
    }
    stub_log("ia_close %s %d ret=0x%08x", name, (int)flags, (unsigned)ret);
    if (ret != DAT_SUCCESS)
        return ret;

    /* Abrupt (or graceful with nothing left): destroy the IA's children. */
    pthread_mutex_lock(&stub_lock);
    pp = &stub_live;
    while (*pp != NULL) {
        struct stub_obj *o = *pp;
        if (o->ia == ia || o == &ia->hdr) {
            *pp = o->next_live;
            o->magic = 0;
            free(o);
        } else {
            pp = &o->next_live;
        }
    }
    pthread_mutex_unlock(&stub_lock);
    return DAT_SUCCESS;
}

/* ---- PZ ----------------------------------------------------------------- */

static DAT_RETURN stub_pz_create(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE *pz_handle)
{
    struct stub_ia *ia = stub_ia_of(ia_handle);
    struct stub_obj *pz;

    stub_pz_create_calls++;
    stub_log("call pz_create");
    if (ia == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (pz_handle == NULL)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    *pz_handle = DAT_HANDLE_NULL;
    if (ia->npz >= STUB_MAX_PZS)
        return STUB_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN);
    pz = stub_obj_new(sizeof(*pz), ia->hdr.provider, DAT_HANDLE_TYPE_PZ, ia);
    if (pz == NULL)
        return STUB_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    ia->npz++;
    stub_live_add(pz);
    *pz_handle = pz;
    return DAT_SUCCESS;
}

static DAT_RETURN stub_pz_query(DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK mask,
                                DAT_PZ_PARAM *param)
{
    struct stub_obj *pz = stub_find_type(pz_handle, DAT_HANDLE_TYPE_PZ);

    stub_pz_query_calls++;
    stub_log("call pz_query");
    if (pz == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    if (((unsigned)mask & ~(unsigned)DAT_PZ_FIELD_ALL) != 0)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (mask != 0 && param == NULL)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (mask != 0)
        param->ia_handle = pz->ia;
    return DAT_SUCCESS;
}

static DAT_RETURN stub_pz_free(DAT_PZ_HANDLE pz_handle)
{
    struct stub_obj *pz = stub_find_type(pz_handle, DAT_HANDLE_TYPE_PZ);

    stub_pz_free_calls++;
    stub_log("call pz_free");
    if (pz == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    pthread_mutex_lock(&stub_lock);
    stub_live_unlink_locked(pz);
    pthread_mutex_unlock(&stub_lock);
    pz->ia->npz--;
    pz->magic = 0;
    free(pz);
    return DAT_SUCCESS;
}

/* ---- generic handle helpers ------------------------------------------- */

static DAT_RETURN stub_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT context)
{
    struct stub_obj *o = stub_find(h);

    stub_set_context_calls++;
    stub_log("call set_consumer_context");
    if (o == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    o->context = context;
    return DAT_SUCCESS;
}

static DAT_RETURN stub_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *context)
{
    struct stub_obj *o = stub_find(h);

    stub_get_context_calls++;
    stub_log("call get_consumer_context");
    if (o == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (context == NULL)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    *context = o->context;
    return DAT_SUCCESS;
}

static DAT_RETURN stub_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type)
{
    struct stub_obj *o = stub_find(h);

    stub_get_handle_type_calls++;
    stub_log("call get_handle_type");
    if (o == NULL)
        return STUB_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    if (type == NULL)
        return STUB_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    *type = o->type;
    return DAT_SUCCESS;
}

/* ---- the table template ----------------------------------------------- */

static const DAT_PROVIDER stub_table_template = {
    .device_name = NULL, /* set per key */
    .extension = NULL,
    .ia_open_func = NULL, /* set per key */
    .ia_query_func = stub_ia_query,
    .ia_close_func = stub_ia_close,
    .set_consumer_context_func = stub_set_consumer_context,
    .get_consumer_context_func = stub_get_consumer_context,
    .get_handle_type_func = stub_get_handle_type,
    .cno_create_func = stub_cno_create,
    .cno_modify_agent_func = stub_cno_modify_agent,
    .cno_query_func = stub_cno_query,
    .cno_free_func = stub_cno_free,
    .cno_wait_func = stub_cno_wait,
    .cr_query_func = stub_cr_query,
    .cr_accept_func = stub_cr_accept,
    .cr_reject_func = stub_cr_reject,
    .cr_handoff_func = stub_cr_handoff,
    .evd_create_func = stub_evd_create,
    .evd_query_func = stub_evd_query,
    .evd_modify_cno_func = stub_evd_modify_cno,
    .evd_enable_func = stub_evd_enable,
    .evd_disable_func = stub_evd_disable,
    .evd_wait_func = stub_evd_wait,
    .evd_resize_func = stub_evd_resize,
    .evd_post_se_func = stub_evd_post_se,
    .evd_dequeue_func = stub_evd_dequeue,
    .evd_free_func = stub_evd_free,
    .ep_create_func = stub_ep_create,
    .ep_query_func = stub_ep_query,
    .ep_modify_func = stub_ep_modify,
    .ep_connect_func = stub_ep_connect,
    .ep_dup_connect_func = stub_ep_dup_connect,
    .ep_disconnect_func = stub_ep_disconnect,
    .ep_post_send_func = stub_ep_post_send,
    .ep_post_recv_func = stub_ep_post_recv,
    .ep_post_rdma_read_func = stub_ep_post_rdma_read,
    .ep_post_rdma_write_func = stub_ep_post_rdma_write,
    .ep_get_status_func = stub_ep_get_status,
    .ep_free_func = stub_ep_free,
    .lmr_create_func = stub_lmr_create,
    .lmr_query_func = stub_lmr_query,
    .lmr_free_func = stub_lmr_free,
    .rmr_create_func = stub_rmr_create,
    .rmr_query_func = stub_rmr_query,
    .rmr_bind_func = stub_rmr_bind,
    .rmr_free_func = stub_rmr_free,
    .psp_create_func = stub_psp_create,
    .psp_query_func = stub_psp_query,
    .psp_free_func = stub_psp_free,
    .rsp_create_func = stub_rsp_create,
    .rsp_query_func = stub_rsp_query,
    .rsp_free_func = stub_rsp_free,
    .pz_create_func = stub_pz_create,
    .pz_query_func = stub_pz_query,
    .pz_free_func = stub_pz_free,
    .psp_create_any_func = stub_psp_create_any,
    .ep_reset_func = stub_ep_reset,
    .evd_set_unwaitable_func = stub_evd_set_unwaitable,
    .evd_clear_unwaitable_func = stub_evd_clear_unwaitable,
    .lmr_sync_rdma_read_func = stub_lmr_sync_rdma_read,
    .lmr_sync_rdma_write_func = stub_lmr_sync_rdma_write,
    .ep_create_with_srq_func = stub_ep_create_with_srq,
    .ep_recv_query_func = stub_ep_recv_query,
    .ep_set_watermark_func = stub_ep_set_watermark,
    .srq_create_func = stub_srq_create,
    .srq_free_func = stub_srq_free,
    .srq_post_recv_func = stub_srq_post_recv,
    .srq_query_func = stub_srq_query,
    .srq_resize_func = stub_srq_resize,
    .srq_set_lw_func = stub_srq_set_lw,
};

/* ---- key management ----------------------------------------------------- */

static int stub_key_equal(const DAT_PROVIDER_INFO *a, const DAT_PROVIDER_INFO *b)
{
    return strncmp(a->ia_name, b->ia_name, DAT_NAME_MAX_LENGTH) == 0 &&
           a->dapl_version_major == b->dapl_version_major &&
           a->dapl_version_minor == b->dapl_version_minor &&
           a->is_thread_safe == b->is_thread_safe;
}

static struct stub_entry *stub_entry_find(const DAT_PROVIDER_INFO *info)
{
    int i;

    for (i = 0; i < STUB_MAX_ENTRIES; i++)
        if (stub_entries[i].in_use && stub_key_equal(&stub_entries[i].info, info))
            return &stub_entries[i];
    return NULL;
}

/* The entry (and table) for this key, created on first use. */
static struct stub_entry *stub_entry_get(const DAT_PROVIDER_INFO *info)
{
    struct stub_entry *e = stub_entry_find(info);
    int i;

    if (e != NULL)
        return e;
    for (i = 0; i < STUB_MAX_ENTRIES; i++) {
        e = &stub_entries[i];
        if (e->in_use)
            continue;
        memset(e, 0, sizeof(*e));
        e->in_use = 1;
        e->info = *info;
        e->info.ia_name[DAT_NAME_MAX_LENGTH - 1] = '\0';
        memcpy(e->name, e->info.ia_name, sizeof(e->name));
        e->table = stub_table_template;
        e->table.device_name = e->name;
        e->table.ia_open_func = stub_ia_open_funcs[i];
        return e;
    }
    return NULL;
}

static void stub_parse_options(struct stub_entry *e, const char *s)
{
    char buf[1024];
    char *tok, *save = NULL;

    e->opt_noregister = 0;
    e->opt_nofini_remove = 0;
    e->opt_badminor = 0;
    e->second[0] = '\0';
    if (s == NULL)
        return;
    snprintf(buf, sizeof(buf), "%s", s);
    for (tok = strtok_r(buf, " \t,", &save); tok != NULL; tok = strtok_r(NULL, " \t,", &save)) {
        if (strcmp(tok, "noregister") == 0)
            e->opt_noregister = 1;
        else if (strcmp(tok, "nofini-remove") == 0)
            e->opt_nofini_remove = 1;
        else if (strcmp(tok, "badminor") == 0)
            e->opt_badminor = 1;
        else if (strncmp(tok, "second=", 7) == 0)
            snprintf(e->second, sizeof(e->second), "%s", tok + 7);
    }
}

/*
 * For test programs and for the test side of a loaded library: the table of
 * the first registered key with this IA name (NULL if none).
 */
DAT_PROVIDER *stub_find_table(const char *name)
{
    int i;

    for (i = 0; i < STUB_MAX_ENTRIES; i++)
        if (stub_entries[i].in_use && strcmp(stub_entries[i].name, name) == 0)
            return &stub_entries[i].table;
    return NULL;
}

/* For embedding test programs: a table for this key, with behaviour options. */
DAT_PROVIDER *stub_make_table(const DAT_PROVIDER_INFO *info, const char *options)
{
    struct stub_entry *e = stub_entry_get(info);

    if (e == NULL)
        return NULL;
    stub_parse_options(e, options);
    return &e->table;
}

/* ---- provider entry points -------------------------------------------- */

#if !defined(STUB_EMBEDDED) && !defined(STUB_NOINIT)

void dat_provider_init(const DAT_PROVIDER_INFO *provider_info, const char *instance_data);
void dat_provider_fini(const DAT_PROVIDER_INFO *provider_info);

void dat_provider_init(const DAT_PROVIDER_INFO *provider_info, const char *instance_data)
{
    struct stub_entry *e;
    DAT_RETURN add = STUB_NOT_TRIED, add2 = STUB_NOT_TRIED;

    stub_init_calls++;
    stub_last_init_info_ptr = provider_info;
    stub_last_instance_was_null = instance_data == NULL;
    snprintf(stub_last_instance, sizeof(stub_last_instance), "%s",
             instance_data != NULL ? instance_data : "");
    if (provider_info == NULL) {
        stub_log("init (null)");
        return;
    }
    stub_last_init_info = *provider_info;

    e = stub_entry_get(provider_info);
    if (e != NULL) {
        stub_parse_options(e, instance_data);
        if (!e->opt_noregister)
            add = dat_registry_add_provider(&e->table, provider_info);
        if (e->second[0] != '\0') {
            DAT_PROVIDER_INFO info2 = *provider_info;
            struct stub_entry *e2;

            snprintf(info2.ia_name, sizeof(info2.ia_name), "%s", e->second);
            e2 = stub_entry_get(&info2);
            if (e2 != NULL)
                add2 = dat_registry_add_provider(&e2->table, &info2);
        }
    }
    stub_last_add_ret = add;
    stub_log("init %s %u %u %d %p add=0x%08x add2=0x%08x inst=%s%s", provider_info->ia_name,
             (unsigned)provider_info->dapl_version_major,
             (unsigned)provider_info->dapl_version_minor, (int)provider_info->is_thread_safe,
             (const void *)provider_info, (unsigned)add, (unsigned)add2,
             instance_data != NULL ? instance_data : "", instance_data == NULL ? "(null)" : "");
}

void dat_provider_fini(const DAT_PROVIDER_INFO *provider_info)
{
    struct stub_entry *e;
    DAT_RETURN rem = STUB_NOT_TRIED, rem2 = STUB_NOT_TRIED;

    stub_fini_calls++;
    stub_last_fini_info_ptr = provider_info;
    if (provider_info == NULL) {
        stub_log("fini (null)");
        return;
    }
    stub_last_fini_info = *provider_info;

    e = stub_entry_find(provider_info);
    if (e != NULL) {
        if (!e->opt_nofini_remove)
            rem = dat_registry_remove_provider(&e->table, provider_info);
        if (e->second[0] != '\0') {
            DAT_PROVIDER_INFO info2 = *provider_info;
            struct stub_entry *e2;

            snprintf(info2.ia_name, sizeof(info2.ia_name), "%s", e->second);
            e2 = stub_entry_find(&info2);
            if (e2 != NULL)
                rem2 = dat_registry_remove_provider(&e2->table, &info2);
        }
    }
    stub_last_remove_ret = rem;
    stub_log("fini %s %u %u %d %p remove=0x%08x remove2=0x%08x", provider_info->ia_name,
             (unsigned)provider_info->dapl_version_major,
             (unsigned)provider_info->dapl_version_minor, (int)provider_info->is_thread_safe,
             (const void *)provider_info, (unsigned)rem, (unsigned)rem2);
}

#endif /* !STUB_EMBEDDED && !STUB_NOINIT */

#ifdef STUB_NOINIT

/*
 * No dat_provider_init: the library registers itself while it is being
 * loaded (PIN-06) under a fixed key, and removes the key when unloaded.
 */
static const DAT_PROVIDER_INFO stub_noinit_info = {
    .ia_name = "noinit0",
    .dapl_version_major = 1,
    .dapl_version_minor = 2,
    .is_thread_safe = DAT_FALSE,
};

__attribute__((constructor)) static void stub_noinit_ctor(void)
{
    struct stub_entry *e = stub_entry_get(&stub_noinit_info);
    DAT_RETURN add = STUB_NOT_TRIED;

    stub_init_calls++;
    if (e != NULL)
        add = dat_registry_add_provider(&e->table, &stub_noinit_info);
    stub_last_add_ret = add;
    stub_log("ctor %s add=0x%08x", stub_noinit_info.ia_name, (unsigned)add);
}

__attribute__((destructor)) static void stub_noinit_dtor(void)
{
    struct stub_entry *e = stub_entry_find(&stub_noinit_info);
    DAT_RETURN rem = STUB_NOT_TRIED;

    stub_fini_calls++;
    if (e != NULL)
        rem = dat_registry_remove_provider(&e->table, &stub_noinit_info);
    stub_log("dtor %s remove=0x%08x", stub_noinit_info.ia_name, (unsigned)rem);
}

#endif /* STUB_NOINIT */
