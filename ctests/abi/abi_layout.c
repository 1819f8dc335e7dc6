/*
 * ABI conformance: sizes, alignments and field offsets of every DAT 1.2
 * struct and union, the value of every constant, enumerator, mask and
 * error code, and the shape of the header's macros.
 *
 * Every expected number is written literally here, copied from the spec
 * (abi-types.md, abi-errors.md, abi-functions.md), never computed from the
 * header under test. The layouts are those of x86-64 Linux (LP64).
 */
#include "ctest.h"

#include <stddef.h>
#include <string.h>

/* Alignment as a struct member, the ABI's notion of alignment. */
#define ABI_ALIGNOF(T) _Alignof(T)

/* 1 when the two type names denote the same (compatible) type. */
#define ABI_SAME_TYPE(A, B)                                                    \
    _Generic((__typeof__(A) *)0, __typeof__(B) *: 1, default: 0)

/* 1 when the expression has exactly type T (after lvalue conversion). */
#define ABI_HAS_TYPE(expr, T) _Generic((expr), T: 1, default: 0)

/* Offset and size of one member. */
#define CHECK_FIELD(T, member, off, size)                                      \
    do {                                                                       \
        CHECK(offsetof(T, member) == (off));                                   \
        CHECK(sizeof(((T *)0)->member) == (size));                             \
    } while (0)

#define ABI_STR2(x) #x
#define ABI_STR(x) ABI_STR2(x)

/* Macros that must exist (checked at compile time). */
#if !defined(DAT_VERSION_MAJOR) || !defined(DAT_VERSION_MINOR) ||              \
    !defined(DAT_THREADSAFE)
#error "version / thread-safety macros missing"
#endif
#if !defined(dat_ia_open)
#error "dat_ia_open must be a macro (there is no dat_ia_open symbol)"
#endif
#if !defined(DAT_HANDLE_TO_PROVIDER) || !defined(DAT_GET_TYPE) ||              \
    !defined(DAT_GET_SUBTYPE) || !defined(DAT_IS_WARNING)
#error "helper macros missing"
#endif
#if !defined(DAT_OS_WAIT_PROXY_AGENT_NULL) || !defined(DAT_HANDLE_NULL) ||     \
    !defined(DAT_EVD_ASYNC_EXISTS) || !defined(DAT_EVD_OUT_OF_SCOPE)
#error "handle / agent constants missing"
#endif
#if !defined(IN) || !defined(OUT) || !defined(INOUT)
#error "IN / OUT / INOUT missing"
#endif
#if !defined(max_rdma_read_per_ep) || !defined(max_mtu_size)
#error "DAT 1.0 field-name aliases missing"
#endif
#if !defined(DAT_RMR_BIND_COMPLETION_STATUS)
#error "DAT_RMR_BIND_COMPLETION_STATUS missing"
#endif
#if !defined(DAT_PROVIDER_INIT_FUNC_NAME) || !defined(DAT_PROVIDER_FINI_FUNC_NAME) || \
    !defined(DAT_PROVIDER_INIT_FUNC_STR) || !defined(DAT_PROVIDER_FINI_FUNC_STR)
#error "provider entry point names missing"
#endif
#if DAT_VERSION_MAJOR != 1 || DAT_VERSION_MINOR != 2
#error "this header must describe DAT 1.2"
#endif
#if DAT_NAME_MAX_LENGTH != 256 || DAT_LMR_COOKIE_SIZE != 40 ||                 \
    DAT_OPTIMAL_ALIGNMENT != 256
#error "size constants must be usable in #if"
#endif

/* ---- scalars ----------------------------------------------------------- */

TEST(ABI_01_scalars)
{
    CHECK(sizeof(DAT_UINT32) == 4);
    CHECK(sizeof(DAT_UINT64) == 8);
    CHECK(sizeof(DAT_UVERYLONG) == 8);
    CHECK(sizeof(DAT_PVOID) == 8);
    CHECK(sizeof(DAT_COUNT) == 4);
    CHECK(sizeof(DAT_PADDR) == 8);
    CHECK(sizeof(DAT_SOCK_ADDR) == 16);
    CHECK(sizeof(DAT_SOCK_ADDR6) == 28);
    CHECK(sizeof(DAT_NAME_PTR) == 8);
    CHECK(sizeof(DAT_RETURN) == 4);
    CHECK(sizeof(DAT_TIMEOUT) == 4);
    CHECK(sizeof(DAT_HANDLE) == 8);
    CHECK(sizeof(DAT_CR_HANDLE) == 8);
    CHECK(sizeof(DAT_EP_HANDLE) == 8);
    CHECK(sizeof(DAT_EVD_HANDLE) == 8);
    CHECK(sizeof(DAT_IA_HANDLE) == 8);
    CHECK(sizeof(DAT_LMR_HANDLE) == 8);
    CHECK(sizeof(DAT_PSP_HANDLE) == 8);
    CHECK(sizeof(DAT_PZ_HANDLE) == 8);
    CHECK(sizeof(DAT_RMR_HANDLE) == 8);
    CHECK(sizeof(DAT_RSP_HANDLE) == 8);
    CHECK(sizeof(DAT_SRQ_HANDLE) == 8);
    CHECK(sizeof(DAT_CNO_HANDLE) == 8);
    CHECK(sizeof(DAT_IA_ADDRESS_PTR) == 8);
    CHECK(sizeof(DAT_CONN_QUAL) == 8);
    CHECK(sizeof(DAT_PORT_QUAL) == 8);
    CHECK(sizeof(DAT_LMR_CONTEXT) == 4);
    CHECK(sizeof(DAT_RMR_CONTEXT) == 4);
    CHECK(sizeof(DAT_VLEN) == 8);
    CHECK(sizeof(DAT_VADDR) == 8);
    CHECK(sizeof(DAT_IA_ATTR_MASK) == 8);
    CHECK(sizeof(DAT_PROVIDER_ATTR_MASK) == 8);
    CHECK(sizeof(DAT_EP_PARAM_MASK) == 8);
    CHECK(sizeof(DAT_CONTEXT) == 8);
    CHECK(sizeof(DAT_DTO_COOKIE) == 8);
    CHECK(sizeof(DAT_RMR_COOKIE) == 8);
    CHECK(sizeof(DAT_LMR_COOKIE) == 8);
    CHECK(sizeof(DAT_AGENT_FUNC) == 8);
    CHECK(sizeof(DAT_SP_HANDLE) == 8);
    CHECK(sizeof(DAT_PROVIDER) == 560);

    /* Signedness: DAT_COUNT is signed, the 32/64-bit types are unsigned. */
    CHECK((DAT_COUNT)-1 < 0);
    CHECK((DAT_UINT32)-1 > 0);
    CHECK((DAT_UINT64)-1 > 0);
    CHECK((DAT_RETURN)-1 > 0);
    CHECK((DAT_TIMEOUT)-1 > 0);
    CHECK((DAT_UVERYLONG)-1 > 0);

    /* Exact C types. */
    CHECK(ABI_SAME_TYPE(DAT_UINT32, unsigned int));
    CHECK(ABI_SAME_TYPE(DAT_UINT64, unsigned long));
    CHECK(ABI_SAME_TYPE(DAT_UVERYLONG, unsigned long long));
    CHECK(ABI_SAME_TYPE(DAT_COUNT, int));
    CHECK(ABI_SAME_TYPE(DAT_PVOID, void *));
    CHECK(ABI_SAME_TYPE(DAT_HANDLE, void *));
    CHECK(ABI_SAME_TYPE(DAT_NAME_PTR, char *));
    CHECK(ABI_SAME_TYPE(DAT_SOCK_ADDR, struct sockaddr));
    CHECK(ABI_SAME_TYPE(DAT_SOCK_ADDR6, struct sockaddr_in6));
    CHECK(ABI_SAME_TYPE(DAT_IA_ADDRESS_PTR, struct sockaddr *));
    CHECK(ABI_SAME_TYPE(DAT_DTO_COOKIE, union dat_context));
    CHECK(ABI_SAME_TYPE(DAT_RMR_COOKIE, union dat_context));
    CHECK(ABI_SAME_TYPE(DAT_LMR_COOKIE, char (*)[40]));
    CHECK(sizeof(*(DAT_LMR_COOKIE)0) == 40);
    CHECK(ABI_SAME_TYPE(DAT_AGENT_FUNC, void (*)(DAT_PVOID, DAT_EVD_HANDLE)));
    CHECK(ABI_SAME_TYPE(DAT_PROVIDER, struct dat_provider));

    /* Every C enum of the 1.2 headers is 4 bytes. */
    CHECK(sizeof(DAT_BOOLEAN) == 4);
    CHECK(sizeof(DAT_RETURN_TYPE) == 4);
    CHECK(sizeof(DAT_RETURN_SUBTYPE) == 4);
    CHECK(sizeof(DAT_HANDLE_TYPE) == 4);
    CHECK(sizeof(DAT_EVD_FLAGS) == 4);
    CHECK(sizeof(DAT_EVENT_NUMBER) == 4);
}

/* ---- #define constants (abi-types.md section 3) ------------------------ */

TEST(ABI_02_constants)
{
    CHECK(DAT_VERSION_MAJOR == 1);
    CHECK(DAT_VERSION_MINOR == 2);
    CHECK(DAT_THREADSAFE == DAT_FALSE);
    CHECK(DAT_THREADSAFE == 0);
    CHECK(DAT_NAME_MAX_LENGTH == 256);
    CHECK(DAT_OPTIMAL_ALIGNMENT == 256);
    CHECK(DAT_LMR_COOKIE_SIZE == 40);

    CHECK(DAT_TIMEOUT_INFINITE == 0xFFFFFFFFu);
    CHECK(ABI_HAS_TYPE(DAT_TIMEOUT_INFINITE, DAT_TIMEOUT));
    CHECK(DAT_HANDLE_NULL == NULL);
    CHECK(ABI_HAS_TYPE(DAT_HANDLE_NULL, DAT_HANDLE));
    CHECK((uintptr_t)DAT_EVD_ASYNC_EXISTS == 0x1);
    CHECK((uintptr_t)DAT_EVD_OUT_OF_SCOPE == 0x2);
    CHECK(ABI_HAS_TYPE(DAT_EVD_ASYNC_EXISTS, DAT_EVD_HANDLE));
    CHECK(ABI_HAS_TYPE(DAT_EVD_OUT_OF_SCOPE, DAT_EVD_HANDLE));

    CHECK(DAT_AF_INET == 2);
    CHECK(DAT_AF_INET6 == 10);

    CHECK(DAT_CLOSE_DEFAULT == 0);
    CHECK(DAT_CLOSE_DEFAULT == DAT_CLOSE_ABRUPT_FLAG);
    CHECK(DAT_MEM_PRIV_READ_FLAG == 0x03);
    CHECK(DAT_MEM_PRIV_WRITE_FLAG == 0x30);
    CHECK(DAT_EP_STATE_ERROR == 11);
    CHECK(DAT_EP_STATE_ERROR == DAT_EP_STATE_DISCONNECTED);
    CHECK(DAT_WATERMARK_INFINITE == -1);
    CHECK(ABI_HAS_TYPE(DAT_WATERMARK_INFINITE, DAT_COUNT));
    CHECK(DAT_HW_DEFAULT == -1);
    CHECK(DAT_SRQ_LW_DEFAULT == 0);
    CHECK(DAT_VALUE_UNKNOWN == -2);
    CHECK(ABI_HAS_TYPE(DAT_VALUE_UNKNOWN, DAT_COUNT));
    CHECK(DAT_DTO_LENGTH_ERROR == 2);
    CHECK(DAT_DTO_FAILURE == 1);
    CHECK(DAT_RMR_BIND_SUCCESS == 0);
    CHECK(DAT_RMR_BIND_FAILURE == 1);
    CHECK(DAT_NAME_NOT_FOUND == 0x000A0000);
    CHECK(DAT_NAME_NOT_FOUND == DAT_PROVIDER_NOT_FOUND);

    CHECK(DAT_IA_ALL == UINT64_C(0x7FFFFFFFF));
    CHECK(DAT_IA_FIELD_ALL == UINT64_C(0x7FFFFFFFF));
    CHECK(DAT_IA_FIELD_NONE == 0);
    CHECK(DAT_IA_FIELD_IA_MAX_MTU_SIZE == UINT64_C(0x40000));
    CHECK(DAT_PROVIDER_FIELD_ALL == UINT64_C(0x3FFFFFF));
    CHECK(DAT_PROVIDER_FIELD_NONE == 0);
    CHECK(DAT_EP_FIELD_EP_ATTR_ALL == UINT64_C(0x7FFFF000));
    CHECK(DAT_EP_FIELD_ALL == UINT64_C(0x7FFFF7FF));

    /* The 64-bit masks are 64-bit unsigned values (UINT64_C in 1.2). */
    CHECK(sizeof(DAT_IA_FIELD_IA_ADAPTER_NAME) == 8);
    CHECK(sizeof(DAT_PROVIDER_FIELD_PROVIDER_NAME) == 8);
    CHECK(sizeof(DAT_EP_FIELD_IA_HANDLE) == 8);
    CHECK(ABI_HAS_TYPE(DAT_IA_FIELD_ALL, DAT_UINT64));
    CHECK(ABI_HAS_TYPE(DAT_PROVIDER_FIELD_ALL, DAT_UINT64));
    CHECK(ABI_HAS_TYPE(DAT_EP_FIELD_ALL, DAT_UINT64));
    CHECK((DAT_IA_FIELD_IA_VENDOR_ATTR >> 34) == 1);

    /* Class bits: the error bit is an unsigned 32-bit value. */
    CHECK(DAT_CLASS_ERROR == 0x80000000u);
    CHECK(DAT_CLASS_WARNING == 0x40000000);
    CHECK(DAT_CLASS_SUCCESS == 0x00000000);
    CHECK(DAT_TYPE_MASK == 0x3FFF0000);
    CHECK(DAT_SUBTYPE_MASK == 0x0000FFFF);
    CHECK(ABI_HAS_TYPE(DAT_CLASS_ERROR, unsigned int));
}

/* ---- function-like and alias macros ----------------------------------- */

static DAT_NAME_PTR abi_open_name;
static DAT_COUNT abi_open_qlen;
static DAT_EVD_HANDLE *abi_open_evd;
static DAT_IA_HANDLE *abi_open_ia;
static DAT_UINT32 abi_open_major;
static DAT_UINT32 abi_open_minor;
static DAT_BOOLEAN abi_open_ts;

/* Stands in for dat_ia_openv to observe what dat_ia_open passes. */
static DAT_RETURN abi_fake_openv(DAT_NAME_PTR name, DAT_COUNT qlen,
                                 DAT_EVD_HANDLE *evd, DAT_IA_HANDLE *ia,
                                 DAT_UINT32 major, DAT_UINT32 minor,
                                 DAT_BOOLEAN ts)
{
    abi_open_name = name;
    abi_open_qlen = qlen;
    abi_open_evd = evd;
    abi_open_ia = ia;
    abi_open_major = major;
    abi_open_minor = minor;
    abi_open_ts = ts;
    return 0x1234;
}

TEST(ABI_03_macros)
{
    /* Static: the fake records their addresses. */
    static DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    static DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    static char name[] = "ia0";
    const char *const_name = "ia1";
    DAT_OS_WAIT_PROXY_AGENT agent = DAT_OS_WAIT_PROXY_AGENT_NULL;
    DAT_IA_ATTR attr;
    DAT_RMR_BIND_COMPLETION_STATUS st = DAT_RMR_BIND_FAILURE;
    int IN in_is_empty = 1;
    int OUT out_is_empty = 2;
    int INOUT inout_is_empty = 3;

    /* Return-code helpers. */
    CHECK(DAT_GET_TYPE(0x8005000B) == 0x00050000);
    CHECK(DAT_GET_SUBTYPE(0x8005000B) == 0x0000000B);
    CHECK(DAT_GET_TYPE(0x4005000Bu) == 0x00050000);
    CHECK(DAT_IS_WARNING(0x40060024u) != 0);
    CHECK(DAT_IS_WARNING(0x80060024u) == 0);
    CHECK(DAT_IS_WARNING(0) == 0);
    CHECK(DAT_GET_TYPE(DAT_SUCCESS) == 0);
    CHECK_RET(DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA), 0x8005000B);
    CHECK_RET(DAT_ERROR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1), 0x80060024);
    CHECK(ABI_HAS_TYPE(DAT_ERROR(DAT_ABORT, 0), DAT_RETURN));
    CHECK_TYPE(0x800A0000, DAT_PROVIDER_NOT_FOUND);
    CHECK_SUB(0x80050019, DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);

    /* dat_ia_open is dat_ia_openv(name, qlen, evd, ia, 1, 2, DAT_FALSE). */
#define dat_ia_openv(n, q, e, i, ma, mi, t) abi_fake_openv(n, q, e, i, ma, mi, t)
    CHECK_RET(dat_ia_open(name, 8, &evd, &ia), 0x1234);
    CHECK(abi_open_name == name);
    CHECK(abi_open_qlen == 8);
    CHECK(abi_open_evd == &evd);
    CHECK(abi_open_ia == &ia);
    CHECK(abi_open_major == 1);
    CHECK(abi_open_minor == 2);
    CHECK(abi_open_ts == DAT_FALSE);
    /* A pointer to const characters is accepted too. */
    CHECK_RET(dat_ia_open(const_name, 3, &evd, &ia), 0x1234);
    CHECK(strcmp(abi_open_name, "ia1") == 0);
    CHECK(abi_open_qlen == 3);
#undef dat_ia_openv

    /* The null proxy agent. */
    CHECK(agent.instance_data == NULL);
    CHECK(agent.proxy_agent_func == NULL);
    CHECK(DAT_OS_WAIT_PROXY_AGENT_NULL.instance_data == NULL);
    CHECK(DAT_OS_WAIT_PROXY_AGENT_NULL.proxy_agent_func == NULL);

    /* DAT 1.0 field names of DAT_IA_ATTR. */
    memset(&attr, 0, sizeof(attr));
    attr.max_rdma_read_per_ep = 7;
    attr.max_mtu_size = 9000;
    CHECK(attr.max_rdma_read_per_ep_in == 7);
    CHECK(attr.max_message_size == 9000);

    /* DAT_RMR_BIND_COMPLETION_STATUS names the DTO status type. */
    CHECK(ABI_SAME_TYPE(DAT_RMR_BIND_COMPLETION_STATUS, DAT_DTO_COMPLETION_STATUS));
    CHECK(sizeof(st) == 4 && st == 1);

    /* IN, OUT and INOUT expand to nothing. */
    CHECK(in_is_empty + out_is_empty + inout_is_empty == 6);

    /* Provider entry point names. */
    CHECK(strcmp(DAT_PROVIDER_INIT_FUNC_STR, "dat_provider_init") == 0);
    CHECK(strcmp(DAT_PROVIDER_FINI_FUNC_STR, "dat_provider_fini") == 0);
    CHECK(strcmp(ABI_STR(DAT_PROVIDER_INIT_FUNC_NAME), "dat_provider_init") == 0);
    CHECK(strcmp(ABI_STR(DAT_PROVIDER_FINI_FUNC_NAME), "dat_provider_fini") == 0);
}

/* ---- DAT_HANDLE_TO_PROVIDER and the redirection macros ----------------- */

/* A provider-owned object: its first word is the provider table. */
struct abi_object {
    DAT_PROVIDER *provider;
    int payload;
};

static DAT_HANDLE abi_seen_handle;
static DAT_UINT64 abi_seen_cookie;
static DAT_VLEN abi_seen_length;
static DAT_PVOID abi_seen_instance;

static DAT_RETURN abi_evd_enable(DAT_EVD_HANDLE evd)
{
    abi_seen_handle = evd;
    return 0x11;
}

static DAT_RETURN abi_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n,
                                   DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                                   DAT_COMPLETION_FLAGS flags)
{
    (void)n;
    (void)iov;
    (void)flags;
    abi_seen_handle = ep;
    abi_seen_cookie = cookie.as_64;
    return 0x22;
}

static DAT_RETURN abi_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE type,
                                 DAT_REGION_DESCRIPTION region, DAT_VLEN len,
                                 DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
                                 DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lctx,
                                 DAT_RMR_CONTEXT *rctx, DAT_VLEN *reg_len,
                                 DAT_VADDR *reg_addr)
{
    (void)type;
    (void)pz;
    (void)priv;
    (void)lmr;
    (void)lctx;
    (void)rctx;
    (void)reg_len;
    (void)reg_addr;
    abi_seen_handle = ia;
    abi_seen_instance = region.for_va;
    abi_seen_length = len;
    return 0x33;
}

static DAT_RETURN abi_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent,
                                 DAT_CNO_HANDLE *cno)
{
    (void)cno;
    abi_seen_handle = ia;
    abi_seen_instance = agent.instance_data;
    return 0x44;
}

TEST(ABI_04_handle_to_provider)
{
    static DAT_PROVIDER prov;
    struct abi_object obj;
    DAT_HANDLE h = &obj;
    DAT_DTO_COOKIE cookie;
    DAT_REGION_DESCRIPTION region;
    DAT_OS_WAIT_PROXY_AGENT agent;
    int marker = 0;

    memset(&prov, 0, sizeof(prov));
    obj.provider = &prov;
    obj.payload = 0;

    CHECK(DAT_HANDLE_TO_PROVIDER(h) == &prov);
    CHECK(ABI_HAS_TYPE(DAT_HANDLE_TO_PROVIDER(h), DAT_PROVIDER *));

    prov.evd_enable_func = abi_evd_enable;
    CHECK_RET(DAT_EVD_ENABLE(h), 0x11);
    CHECK(abi_seen_handle == h);

    prov.ep_post_send_func = abi_ep_post_send;
    cookie.as_64 = UINT64_C(0x0123456789ABCDEF);
    CHECK_RET(DAT_EP_POST_SEND(h, 0, NULL, cookie, DAT_COMPLETION_DEFAULT_FLAG), 0x22);
    CHECK(abi_seen_cookie == UINT64_C(0x0123456789ABCDEF));

    prov.lmr_create_func = abi_lmr_create;
    memset(&region, 0, sizeof(region));
    region.for_va = &marker;
    CHECK_RET(DAT_LMR_CREATE(h, DAT_MEM_TYPE_VIRTUAL, region, 4096, NULL,
                             DAT_MEM_PRIV_ALL_FLAG, NULL, NULL, NULL, NULL, NULL),
              0x33);
    CHECK(abi_seen_instance == &marker);
    CHECK(abi_seen_length == 4096);

    prov.cno_create_func = abi_cno_create;
    agent.instance_data = &obj;
    agent.proxy_agent_func = NULL;
    CHECK_RET(DAT_CNO_CREATE(h, agent, NULL), 0x44);
    CHECK(abi_seen_instance == &obj);
    CHECK_RET(DAT_CNO_CREATE(h, DAT_OS_WAIT_PROXY_AGENT_NULL, NULL), 0x44);
    CHECK(abi_seen_instance == NULL);
}

/* One stub per DAT_PROVIDER slot (slot 2, ia_open_func, has no handle and
 * no macro); each returns its own number, so a macro that calls the wrong
 * slot, or passes the arguments wrongly, is caught. */
static DAT_RETURN abi_stub_ia_query_func(
    DAT_IA_HANDLE ia_handle, DAT_EVD_HANDLE *async_evd_handle,
    DAT_IA_ATTR_MASK ia_attr_mask, DAT_IA_ATTR *ia_attr,
    DAT_PROVIDER_ATTR_MASK provider_attr_mask,
    DAT_PROVIDER_ATTR *provider_attr)
{
    (void)ia_handle; (void)async_evd_handle; (void)ia_attr_mask; (void)ia_attr;
    (void)provider_attr_mask; (void)provider_attr;
    return 0x101;
}

static DAT_RETURN abi_stub_ia_close_func(
    DAT_IA_HANDLE ia_handle, DAT_CLOSE_FLAGS close_flags)
{
    (void)ia_handle; (void)close_flags;
    return 0x102;
}

static DAT_RETURN abi_stub_set_consumer_context_func(
    DAT_HANDLE dat_handle, DAT_CONTEXT context)
{
    (void)dat_handle; (void)context;
    return 0x103;
}

static DAT_RETURN abi_stub_get_consumer_context_func(
    DAT_HANDLE dat_handle, DAT_CONTEXT *context)
{
    (void)dat_handle; (void)context;
    return 0x104;
}

static DAT_RETURN abi_stub_get_handle_type_func(
    DAT_HANDLE dat_handle, DAT_HANDLE_TYPE *handle_type)
{
    (void)dat_handle; (void)handle_type;
    return 0x105;
}

static DAT_RETURN abi_stub_cno_create_func(
    DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent,
    DAT_CNO_HANDLE *cno_handle)
{
    (void)ia_handle; (void)agent; (void)cno_handle;
    return 0x106;
}

static DAT_RETURN abi_stub_cno_modify_agent_func(
    DAT_CNO_HANDLE cno_handle, DAT_OS_WAIT_PROXY_AGENT agent)
{
    (void)cno_handle; (void)agent;
    return 0x107;
}

static DAT_RETURN abi_stub_cno_query_func(
    DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK cno_param_mask,
    DAT_CNO_PARAM *cno_param)
{
    (void)cno_handle; (void)cno_param_mask; (void)cno_param;
    return 0x108;
}

static DAT_RETURN abi_stub_cno_free_func(
    DAT_CNO_HANDLE cno_handle)
{
    (void)cno_handle;
    return 0x109;
}

static DAT_RETURN abi_stub_cno_wait_func(
    DAT_CNO_HANDLE cno_handle, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd_handle)
{
    (void)cno_handle; (void)timeout; (void)evd_handle;
    return 0x10A;
}

static DAT_RETURN abi_stub_cr_query_func(
    DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK cr_param_mask,
    DAT_CR_PARAM *cr_param)
{
    (void)cr_handle; (void)cr_param_mask; (void)cr_param;
    return 0x10B;
}

static DAT_RETURN abi_stub_cr_accept_func(
    DAT_CR_HANDLE cr_handle, DAT_EP_HANDLE ep_handle,
    DAT_COUNT private_data_size, DAT_PVOID private_data)
{
    (void)cr_handle; (void)ep_handle; (void)private_data_size;
    (void)private_data;
    return 0x10C;
}

static DAT_RETURN abi_stub_cr_reject_func(
    DAT_CR_HANDLE cr_handle)
{
    (void)cr_handle;
    return 0x10D;
}

static DAT_RETURN abi_stub_cr_handoff_func(
    DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff)
{
    (void)cr_handle; (void)handoff;
    return 0x10E;
}

static DAT_RETURN abi_stub_evd_create_func(
    DAT_IA_HANDLE ia_handle, DAT_COUNT evd_min_qlen,
    DAT_CNO_HANDLE cno_handle, DAT_EVD_FLAGS evd_flags,
    DAT_EVD_HANDLE *evd_handle)
{
    (void)ia_handle; (void)evd_min_qlen; (void)cno_handle; (void)evd_flags;
    (void)evd_handle;
    return 0x10F;
}

static DAT_RETURN abi_stub_evd_query_func(
    DAT_EVD_HANDLE evd_handle, DAT_EVD_PARAM_MASK evd_param_mask,
    DAT_EVD_PARAM *evd_param)
{
    (void)evd_handle; (void)evd_param_mask; (void)evd_param;
    return 0x110;
}

static DAT_RETURN abi_stub_evd_modify_cno_func(
    DAT_EVD_HANDLE evd_handle, DAT_CNO_HANDLE cno_handle)
{
    (void)evd_handle; (void)cno_handle;
    return 0x111;
}

static DAT_RETURN abi_stub_evd_enable_func(
    DAT_EVD_HANDLE evd_handle)
{
    (void)evd_handle;
    return 0x112;
}

static DAT_RETURN abi_stub_evd_disable_func(
    DAT_EVD_HANDLE evd_handle)
{
    (void)evd_handle;
    return 0x113;
}

static DAT_RETURN abi_stub_evd_wait_func(
    DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout, DAT_COUNT threshold,
    DAT_EVENT *event, DAT_COUNT *nmore)
{
    (void)evd_handle; (void)timeout; (void)threshold; (void)event; (void)nmore;
    return 0x114;
}

static DAT_RETURN abi_stub_evd_resize_func(
    DAT_EVD_HANDLE evd_handle, DAT_COUNT evd_min_qlen)
{
    (void)evd_handle; (void)evd_min_qlen;
    return 0x115;
}

static DAT_RETURN abi_stub_evd_post_se_func(
    DAT_EVD_HANDLE evd_handle, const DAT_EVENT *event)
{
    (void)evd_handle; (void)event;
    return 0x116;
}

static DAT_RETURN abi_stub_evd_dequeue_func(
    DAT_EVD_HANDLE evd_handle, DAT_EVENT *event)
{
    (void)evd_handle; (void)event;
    return 0x117;
}

static DAT_RETURN abi_stub_evd_free_func(
    DAT_EVD_HANDLE evd_handle)
{
    (void)evd_handle;
    return 0x118;
}

static DAT_RETURN abi_stub_ep_create_func(
    DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle,
    DAT_EVD_HANDLE recv_evd_handle, DAT_EVD_HANDLE request_evd_handle,
    DAT_EVD_HANDLE connect_evd_handle, const DAT_EP_ATTR *ep_attributes,
    DAT_EP_HANDLE *ep_handle)
{
    (void)ia_handle; (void)pz_handle; (void)recv_evd_handle;
    (void)request_evd_handle; (void)connect_evd_handle; (void)ep_attributes;
    (void)ep_handle;
    return 0x119;
}

static DAT_RETURN abi_stub_ep_query_func(
    DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK ep_param_mask,
    DAT_EP_PARAM *ep_param)
{
    (void)ep_handle; (void)ep_param_mask; (void)ep_param;
    return 0x11A;
}

static DAT_RETURN abi_stub_ep_modify_func(
    DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK ep_param_mask,
    const DAT_EP_PARAM *ep_param)
{
    (void)ep_handle; (void)ep_param_mask; (void)ep_param;
    return 0x11B;
}

static DAT_RETURN abi_stub_ep_connect_func(
    DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote_ia_address,
    DAT_CONN_QUAL remote_conn_qual, DAT_TIMEOUT timeout,
    DAT_COUNT private_data_size, DAT_PVOID private_data, DAT_QOS qos,
    DAT_CONNECT_FLAGS connect_flags)
{
    (void)ep_handle; (void)remote_ia_address; (void)remote_conn_qual;
    (void)timeout; (void)private_data_size; (void)private_data; (void)qos;
    (void)connect_flags;
    return 0x11C;
}

static DAT_RETURN abi_stub_ep_dup_connect_func(
    DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE ep_dup_handle, DAT_TIMEOUT timeout,
    DAT_COUNT private_data_size, DAT_PVOID private_data, DAT_QOS qos)
{
    (void)ep_handle; (void)ep_dup_handle; (void)timeout;
    (void)private_data_size; (void)private_data; (void)qos;
    return 0x11D;
}

static DAT_RETURN abi_stub_ep_disconnect_func(
    DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS close_flags)
{
    (void)ep_handle; (void)close_flags;
    return 0x11E;
}

static DAT_RETURN abi_stub_ep_post_send_func(
    DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments,
    DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE user_cookie,
    DAT_COMPLETION_FLAGS completion_flags)
{
    (void)ep_handle; (void)num_segments; (void)local_iov; (void)user_cookie;
    (void)completion_flags;
    return 0x11F;
}

static DAT_RETURN abi_stub_ep_post_recv_func(
    DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments,
    DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE user_cookie,
    DAT_COMPLETION_FLAGS completion_flags)
{
    (void)ep_handle; (void)num_segments; (void)local_iov; (void)user_cookie;
    (void)completion_flags;
    return 0x120;
}

static DAT_RETURN abi_stub_ep_post_rdma_read_func(
    DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments,
    DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE user_cookie,
    const DAT_RMR_TRIPLET *remote_iov, DAT_COMPLETION_FLAGS completion_flags)
{
    (void)ep_handle; (void)num_segments; (void)local_iov; (void)user_cookie;
    (void)remote_iov; (void)completion_flags;
    return 0x121;
}

static DAT_RETURN abi_stub_ep_post_rdma_write_func(
    DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments,
    DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE user_cookie,
    const DAT_RMR_TRIPLET *remote_iov, DAT_COMPLETION_FLAGS completion_flags)
{
    (void)ep_handle; (void)num_segments; (void)local_iov; (void)user_cookie;
    (void)remote_iov; (void)completion_flags;
    return 0x122;
}

static DAT_RETURN abi_stub_ep_get_status_func(
    DAT_EP_HANDLE ep_handle, DAT_EP_STATE *ep_state, DAT_BOOLEAN *recv_idle,
    DAT_BOOLEAN *request_idle)
{
    (void)ep_handle; (void)ep_state; (void)recv_idle; (void)request_idle;
    return 0x123;
}

static DAT_RETURN abi_stub_ep_free_func(
    DAT_EP_HANDLE ep_handle)
{
    (void)ep_handle;
    return 0x124;
}

static DAT_RETURN abi_stub_lmr_create_func(
    DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type,
    DAT_REGION_DESCRIPTION region_description, DAT_VLEN length,
    DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privileges,
    DAT_LMR_HANDLE *lmr_handle, DAT_LMR_CONTEXT *lmr_context,
    DAT_RMR_CONTEXT *rmr_context, DAT_VLEN *registered_length,
    DAT_VADDR *registered_address)
{
    (void)ia_handle; (void)mem_type; (void)region_description; (void)length;
    (void)pz_handle; (void)privileges; (void)lmr_handle; (void)lmr_context;
    (void)rmr_context; (void)registered_length; (void)registered_address;
    return 0x125;
}

static DAT_RETURN abi_stub_lmr_query_func(
    DAT_LMR_HANDLE lmr_handle, DAT_LMR_PARAM_MASK lmr_param_mask,
    DAT_LMR_PARAM *lmr_param)
{
    (void)lmr_handle; (void)lmr_param_mask; (void)lmr_param;
    return 0x126;
}

static DAT_RETURN abi_stub_lmr_free_func(
    DAT_LMR_HANDLE lmr_handle)
{
    (void)lmr_handle;
    return 0x127;
}

static DAT_RETURN abi_stub_rmr_create_func(
    DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE *rmr_handle)
{
    (void)pz_handle; (void)rmr_handle;
    return 0x128;
}

static DAT_RETURN abi_stub_rmr_query_func(
    DAT_RMR_HANDLE rmr_handle, DAT_RMR_PARAM_MASK rmr_param_mask,
    DAT_RMR_PARAM *rmr_param)
{
    (void)rmr_handle; (void)rmr_param_mask; (void)rmr_param;
    return 0x129;
}

static DAT_RETURN abi_stub_rmr_bind_func(
    DAT_RMR_HANDLE rmr_handle, const DAT_LMR_TRIPLET *lmr_triplet,
    DAT_MEM_PRIV_FLAGS mem_priv, DAT_EP_HANDLE ep_handle,
    DAT_RMR_COOKIE user_cookie, DAT_COMPLETION_FLAGS completion_flags,
    DAT_RMR_CONTEXT *rmr_context)
{
    (void)rmr_handle; (void)lmr_triplet; (void)mem_priv; (void)ep_handle;
    (void)user_cookie; (void)completion_flags; (void)rmr_context;
    return 0x12A;
}

static DAT_RETURN abi_stub_rmr_free_func(
    DAT_RMR_HANDLE rmr_handle)
{
    (void)rmr_handle;
    return 0x12B;
}

static DAT_RETURN abi_stub_psp_create_func(
    DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual,
    DAT_EVD_HANDLE evd_handle, DAT_PSP_FLAGS psp_flags,
    DAT_PSP_HANDLE *psp_handle)
{
    (void)ia_handle; (void)conn_qual; (void)evd_handle; (void)psp_flags;
    (void)psp_handle;
    return 0x12C;
}

static DAT_RETURN abi_stub_psp_query_func(
    DAT_PSP_HANDLE psp_handle, DAT_PSP_PARAM_MASK psp_param_mask,
    DAT_PSP_PARAM *psp_param)
{
    (void)psp_handle; (void)psp_param_mask; (void)psp_param;
    return 0x12D;
}

static DAT_RETURN abi_stub_psp_free_func(
    DAT_PSP_HANDLE psp_handle)
{
    (void)psp_handle;
    return 0x12E;
}

static DAT_RETURN abi_stub_rsp_create_func(
    DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual, DAT_EP_HANDLE ep_handle,
    DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE *rsp_handle)
{
    (void)ia_handle; (void)conn_qual; (void)ep_handle; (void)evd_handle;
    (void)rsp_handle;
    return 0x12F;
}

static DAT_RETURN abi_stub_rsp_query_func(
    DAT_RSP_HANDLE rsp_handle, DAT_RSP_PARAM_MASK rsp_param_mask,
    DAT_RSP_PARAM *rsp_param)
{
    (void)rsp_handle; (void)rsp_param_mask; (void)rsp_param;
    return 0x130;
}

static DAT_RETURN abi_stub_rsp_free_func(
    DAT_RSP_HANDLE rsp_handle)
{
    (void)rsp_handle;
    return 0x131;
}

static DAT_RETURN abi_stub_pz_create_func(
    DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE *pz_handle)
{
    (void)ia_handle; (void)pz_handle;
    return 0x132;
}

static DAT_RETURN abi_stub_pz_query_func(
    DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK pz_param_mask,
    DAT_PZ_PARAM *pz_param)
{
    (void)pz_handle; (void)pz_param_mask; (void)pz_param;
    return 0x133;
}

static DAT_RETURN abi_stub_pz_free_func(
    DAT_PZ_HANDLE pz_handle)
{
    (void)pz_handle;
    return 0x134;
}

static DAT_RETURN abi_stub_psp_create_any_func(
    DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL *conn_qual,
    DAT_EVD_HANDLE evd_handle, DAT_PSP_FLAGS psp_flags,
    DAT_PSP_HANDLE *psp_handle)
{
    (void)ia_handle; (void)conn_qual; (void)evd_handle; (void)psp_flags;
    (void)psp_handle;
    return 0x135;
}

static DAT_RETURN abi_stub_ep_reset_func(
    DAT_EP_HANDLE ep_handle)
{
    (void)ep_handle;
    return 0x136;
}

static DAT_RETURN abi_stub_evd_set_unwaitable_func(
    DAT_EVD_HANDLE evd_handle)
{
    (void)evd_handle;
    return 0x137;
}

static DAT_RETURN abi_stub_evd_clear_unwaitable_func(
    DAT_EVD_HANDLE evd_handle)
{
    (void)evd_handle;
    return 0x138;
}

static DAT_RETURN abi_stub_lmr_sync_rdma_read_func(
    DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET *local_segments,
    DAT_VLEN num_segments)
{
    (void)ia_handle; (void)local_segments; (void)num_segments;
    return 0x139;
}

static DAT_RETURN abi_stub_lmr_sync_rdma_write_func(
    DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET *local_segments,
    DAT_VLEN num_segments)
{
    (void)ia_handle; (void)local_segments; (void)num_segments;
    return 0x13A;
}

static DAT_RETURN abi_stub_ep_create_with_srq_func(
    DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle,
    DAT_EVD_HANDLE recv_evd_handle, DAT_EVD_HANDLE request_evd_handle,
    DAT_EVD_HANDLE connect_evd_handle, DAT_SRQ_HANDLE srq_handle,
    const DAT_EP_ATTR *ep_attributes, DAT_EP_HANDLE *ep_handle)
{
    (void)ia_handle; (void)pz_handle; (void)recv_evd_handle;
    (void)request_evd_handle; (void)connect_evd_handle; (void)srq_handle;
    (void)ep_attributes; (void)ep_handle;
    return 0x13B;
}

static DAT_RETURN abi_stub_ep_recv_query_func(
    DAT_EP_HANDLE ep_handle, DAT_COUNT *nbufs_allocated,
    DAT_COUNT *bufs_alloc_span)
{
    (void)ep_handle; (void)nbufs_allocated; (void)bufs_alloc_span;
    return 0x13C;
}

static DAT_RETURN abi_stub_ep_set_watermark_func(
    DAT_EP_HANDLE ep_handle, DAT_COUNT soft_high_watermark,
    DAT_COUNT hard_high_watermark)
{
    (void)ep_handle; (void)soft_high_watermark; (void)hard_high_watermark;
    return 0x13D;
}

static DAT_RETURN abi_stub_srq_create_func(
    DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR *srq_attr,
    DAT_SRQ_HANDLE *srq_handle)
{
    (void)ia_handle; (void)pz_handle; (void)srq_attr; (void)srq_handle;
    return 0x13E;
}

static DAT_RETURN abi_stub_srq_free_func(
    DAT_SRQ_HANDLE srq_handle)
{
    (void)srq_handle;
    return 0x13F;
}

static DAT_RETURN abi_stub_srq_post_recv_func(
    DAT_SRQ_HANDLE srq_handle, DAT_COUNT num_segments,
    DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE user_cookie)
{
    (void)srq_handle; (void)num_segments; (void)local_iov; (void)user_cookie;
    return 0x140;
}

static DAT_RETURN abi_stub_srq_query_func(
    DAT_SRQ_HANDLE srq_handle, DAT_SRQ_PARAM_MASK srq_param_mask,
    DAT_SRQ_PARAM *srq_param)
{
    (void)srq_handle; (void)srq_param_mask; (void)srq_param;
    return 0x141;
}

static DAT_RETURN abi_stub_srq_resize_func(
    DAT_SRQ_HANDLE srq_handle, DAT_COUNT srq_max_recv_dto)
{
    (void)srq_handle; (void)srq_max_recv_dto;
    return 0x142;
}

static DAT_RETURN abi_stub_srq_set_lw_func(
    DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark)
{
    (void)srq_handle; (void)low_watermark;
    return 0x143;
}

TEST(ABI_05_redirection_macros)
{
    static DAT_PROVIDER prov;
    struct abi_object obj;
    DAT_HANDLE h = &obj;
    DAT_CONTEXT ctx;
    DAT_REGION_DESCRIPTION region;
    DAT_OS_WAIT_PROXY_AGENT agent = DAT_OS_WAIT_PROXY_AGENT_NULL;

    memset(&prov, 0, sizeof(prov));
    memset(&ctx, 0, sizeof(ctx));
    memset(&region, 0, sizeof(region));
    obj.provider = &prov;
    obj.payload = 0;

    prov.ia_query_func = abi_stub_ia_query_func;
    prov.ia_close_func = abi_stub_ia_close_func;
    prov.set_consumer_context_func = abi_stub_set_consumer_context_func;
    prov.get_consumer_context_func = abi_stub_get_consumer_context_func;
    prov.get_handle_type_func = abi_stub_get_handle_type_func;
    prov.cno_create_func = abi_stub_cno_create_func;
    prov.cno_modify_agent_func = abi_stub_cno_modify_agent_func;
    prov.cno_query_func = abi_stub_cno_query_func;
    prov.cno_free_func = abi_stub_cno_free_func;
    prov.cno_wait_func = abi_stub_cno_wait_func;
    prov.cr_query_func = abi_stub_cr_query_func;
    prov.cr_accept_func = abi_stub_cr_accept_func;
    prov.cr_reject_func = abi_stub_cr_reject_func;
    prov.cr_handoff_func = abi_stub_cr_handoff_func;
    prov.evd_create_func = abi_stub_evd_create_func;
    prov.evd_query_func = abi_stub_evd_query_func;
    prov.evd_modify_cno_func = abi_stub_evd_modify_cno_func;
    prov.evd_enable_func = abi_stub_evd_enable_func;
    prov.evd_disable_func = abi_stub_evd_disable_func;
    prov.evd_wait_func = abi_stub_evd_wait_func;
    prov.evd_resize_func = abi_stub_evd_resize_func;
    prov.evd_post_se_func = abi_stub_evd_post_se_func;
    prov.evd_dequeue_func = abi_stub_evd_dequeue_func;
    prov.evd_free_func = abi_stub_evd_free_func;
    prov.ep_create_func = abi_stub_ep_create_func;
    prov.ep_query_func = abi_stub_ep_query_func;
    prov.ep_modify_func = abi_stub_ep_modify_func;
    prov.ep_connect_func = abi_stub_ep_connect_func;
    prov.ep_dup_connect_func = abi_stub_ep_dup_connect_func;
    prov.ep_disconnect_func = abi_stub_ep_disconnect_func;
    prov.ep_post_send_func = abi_stub_ep_post_send_func;
    prov.ep_post_recv_func = abi_stub_ep_post_recv_func;
    prov.ep_post_rdma_read_func = abi_stub_ep_post_rdma_read_func;
    prov.ep_post_rdma_write_func = abi_stub_ep_post_rdma_write_func;
    prov.ep_get_status_func = abi_stub_ep_get_status_func;
    prov.ep_free_func = abi_stub_ep_free_func;
    prov.lmr_create_func = abi_stub_lmr_create_func;
    prov.lmr_query_func = abi_stub_lmr_query_func;
    prov.lmr_free_func = abi_stub_lmr_free_func;
    prov.rmr_create_func = abi_stub_rmr_create_func;
    prov.rmr_query_func = abi_stub_rmr_query_func;
    prov.rmr_bind_func = abi_stub_rmr_bind_func;
    prov.rmr_free_func = abi_stub_rmr_free_func;
    prov.psp_create_func = abi_stub_psp_create_func;
    prov.psp_query_func = abi_stub_psp_query_func;
    prov.psp_free_func = abi_stub_psp_free_func;
    prov.rsp_create_func = abi_stub_rsp_create_func;
    prov.rsp_query_func = abi_stub_rsp_query_func;
    prov.rsp_free_func = abi_stub_rsp_free_func;
    prov.pz_create_func = abi_stub_pz_create_func;
    prov.pz_query_func = abi_stub_pz_query_func;
    prov.pz_free_func = abi_stub_pz_free_func;
    prov.psp_create_any_func = abi_stub_psp_create_any_func;
    prov.ep_reset_func = abi_stub_ep_reset_func;
    prov.evd_set_unwaitable_func = abi_stub_evd_set_unwaitable_func;
    prov.evd_clear_unwaitable_func = abi_stub_evd_clear_unwaitable_func;
    prov.lmr_sync_rdma_read_func = abi_stub_lmr_sync_rdma_read_func;
    prov.lmr_sync_rdma_write_func = abi_stub_lmr_sync_rdma_write_func;
    prov.ep_create_with_srq_func = abi_stub_ep_create_with_srq_func;
    prov.ep_recv_query_func = abi_stub_ep_recv_query_func;
    prov.ep_set_watermark_func = abi_stub_ep_set_watermark_func;
    prov.srq_create_func = abi_stub_srq_create_func;
    prov.srq_free_func = abi_stub_srq_free_func;
    prov.srq_post_recv_func = abi_stub_srq_post_recv_func;
    prov.srq_query_func = abi_stub_srq_query_func;
    prov.srq_resize_func = abi_stub_srq_resize_func;
    prov.srq_set_lw_func = abi_stub_srq_set_lw_func;

    CHECK_RET(DAT_IA_QUERY(h, NULL, 0, NULL, 0, NULL), 0x101);
    CHECK_RET(DAT_IA_CLOSE(h, 0), 0x102);
    CHECK_RET(DAT_SET_CONSUMER_CONTEXT(h, ctx), 0x103);
    CHECK_RET(DAT_GET_CONSUMER_CONTEXT(h, NULL), 0x104);
    CHECK_RET(DAT_GET_HANDLE_TYPE(h, NULL), 0x105);
    CHECK_RET(DAT_CNO_CREATE(h, agent, NULL), 0x106);
    CHECK_RET(DAT_CNO_MODIFY_AGENT(h, agent), 0x107);
    CHECK_RET(DAT_CNO_QUERY(h, 0, NULL), 0x108);
    CHECK_RET(DAT_CNO_FREE(h), 0x109);
    CHECK_RET(DAT_CNO_WAIT(h, 0, NULL), 0x10A);
    CHECK_RET(DAT_CR_QUERY(h, 0, NULL), 0x10B);
    CHECK_RET(DAT_CR_ACCEPT(h, h, 0, NULL), 0x10C);
    CHECK_RET(DAT_CR_REJECT(h), 0x10D);
    CHECK_RET(DAT_CR_HANDOFF(h, 0), 0x10E);
    CHECK_RET(DAT_EVD_CREATE(h, 0, h, 0, NULL), 0x10F);
    CHECK_RET(DAT_EVD_QUERY(h, 0, NULL), 0x110);
    CHECK_RET(DAT_EVD_MODIFY_CNO(h, h), 0x111);
    CHECK_RET(DAT_EVD_ENABLE(h), 0x112);
    CHECK_RET(DAT_EVD_DISABLE(h), 0x113);
    CHECK_RET(DAT_EVD_WAIT(h, 0, 0, NULL, NULL), 0x114);
    CHECK_RET(DAT_EVD_RESIZE(h, 0), 0x115);
    CHECK_RET(DAT_EVD_POST_SE(h, NULL), 0x116);
    CHECK_RET(DAT_EVD_DEQUEUE(h, NULL), 0x117);
    CHECK_RET(DAT_EVD_FREE(h), 0x118);
    CHECK_RET(DAT_EP_CREATE(h, h, h, h, h, NULL, NULL), 0x119);
    CHECK_RET(DAT_EP_QUERY(h, 0, NULL), 0x11A);
    CHECK_RET(DAT_EP_MODIFY(h, 0, NULL), 0x11B);
    CHECK_RET(DAT_EP_CONNECT(h, NULL, 0, 0, 0, NULL, 0, 0), 0x11C);
    CHECK_RET(DAT_EP_DUP_CONNECT(h, h, 0, 0, NULL, 0), 0x11D);
    CHECK_RET(DAT_EP_DISCONNECT(h, 0), 0x11E);
    CHECK_RET(DAT_EP_POST_SEND(h, 0, NULL, ctx, 0), 0x11F);
    CHECK_RET(DAT_EP_POST_RECV(h, 0, NULL, ctx, 0), 0x120);
    CHECK_RET(DAT_EP_POST_RDMA_READ(h, 0, NULL, ctx, NULL, 0), 0x121);
    CHECK_RET(DAT_EP_POST_RDMA_WRITE(h, 0, NULL, ctx, NULL, 0), 0x122);
    CHECK_RET(DAT_EP_GET_STATUS(h, NULL, NULL, NULL), 0x123);
    CHECK_RET(DAT_EP_FREE(h), 0x124);
    CHECK_RET(DAT_LMR_CREATE(h, 0, region, 0, h, 0, NULL, NULL, NULL, NULL,
              NULL), 0x125);
    CHECK_RET(DAT_LMR_QUERY(h, 0, NULL), 0x126);
    CHECK_RET(DAT_LMR_FREE(h), 0x127);
    CHECK_RET(DAT_RMR_CREATE(h, NULL), 0x128);
    CHECK_RET(DAT_RMR_QUERY(h, 0, NULL), 0x129);
    CHECK_RET(DAT_RMR_BIND(h, NULL, 0, h, ctx, 0, NULL), 0x12A);
    CHECK_RET(DAT_RMR_FREE(h), 0x12B);
    CHECK_RET(DAT_PSP_CREATE(h, 0, h, 0, NULL), 0x12C);
    CHECK_RET(DAT_PSP_QUERY(h, 0, NULL), 0x12D);
    CHECK_RET(DAT_PSP_FREE(h), 0x12E);
    CHECK_RET(DAT_RSP_CREATE(h, 0, h, h, NULL), 0x12F);
    CHECK_RET(DAT_RSP_QUERY(h, 0, NULL), 0x130);
    CHECK_RET(DAT_RSP_FREE(h), 0x131);
    CHECK_RET(DAT_PZ_CREATE(h, NULL), 0x132);
    CHECK_RET(DAT_PZ_QUERY(h, 0, NULL), 0x133);
    CHECK_RET(DAT_PZ_FREE(h), 0x134);
    CHECK_RET(DAT_PSP_CREATE_ANY(h, NULL, h, 0, NULL), 0x135);
    CHECK_RET(DAT_EP_RESET(h), 0x136);
    CHECK_RET(DAT_EVD_SET_UNWAITABLE(h), 0x137);
    CHECK_RET(DAT_EVD_CLEAR_UNWAITABLE(h), 0x138);
    CHECK_RET(DAT_LMR_SYNC_RDMA_READ(h, NULL, 0), 0x139);
    CHECK_RET(DAT_LMR_SYNC_RDMA_WRITE(h, NULL, 0), 0x13A);
    CHECK_RET(DAT_EP_CREATE_WITH_SRQ(h, h, h, h, h, h, NULL, NULL), 0x13B);
    CHECK_RET(DAT_EP_RECV_QUERY(h, NULL, NULL), 0x13C);
    CHECK_RET(DAT_EP_SET_WATERMARK(h, 0, 0), 0x13D);
    CHECK_RET(DAT_SRQ_CREATE(h, h, NULL, NULL), 0x13E);
    CHECK_RET(DAT_SRQ_FREE(h), 0x13F);
    CHECK_RET(DAT_SRQ_POST_RECV(h, 0, NULL, ctx), 0x140);
    CHECK_RET(DAT_SRQ_QUERY(h, 0, NULL), 0x141);
    CHECK_RET(DAT_SRQ_RESIZE(h, 0), 0x142);
    CHECK_RET(DAT_SRQ_SET_LW(h, 0), 0x143);
}

/* ---- 64-bit masks (abi-types.md section 4) ----------------------------- */

/* DAT_IA_ATTR_MASK bits. */
TEST(ABI_10_ia_attr_mask)
{
    CHECK(DAT_IA_FIELD_IA_ADAPTER_NAME == UINT64_C(0x000000001));
    CHECK(DAT_IA_FIELD_IA_VENDOR_NAME == UINT64_C(0x000000002));
    CHECK(DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION == UINT64_C(0x000000004));
    CHECK(DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION == UINT64_C(0x000000008));
    CHECK(DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION == UINT64_C(0x000000010));
    CHECK(DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION == UINT64_C(0x000000020));
    CHECK(DAT_IA_FIELD_IA_ADDRESS_PTR == UINT64_C(0x000000040));
    CHECK(DAT_IA_FIELD_IA_MAX_EPS == UINT64_C(0x000000080));
    CHECK(DAT_IA_FIELD_IA_MAX_DTO_PER_EP == UINT64_C(0x000000100));
    CHECK(DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN == UINT64_C(0x000000200));
    CHECK(DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT == UINT64_C(0x000000400));
    CHECK(DAT_IA_FIELD_IA_MAX_EVDS == UINT64_C(0x000000800));
    CHECK(DAT_IA_FIELD_IA_MAX_EVD_QLEN == UINT64_C(0x000001000));
    CHECK(DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO == UINT64_C(0x000002000));
    CHECK(DAT_IA_FIELD_IA_MAX_LMRS == UINT64_C(0x000004000));
    CHECK(DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE == UINT64_C(0x000008000));
    CHECK(DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS == UINT64_C(0x000010000));
    CHECK(DAT_IA_FIELD_IA_MAX_PZS == UINT64_C(0x000020000));
    CHECK(DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE == UINT64_C(0x000040000));
    CHECK(DAT_IA_FIELD_IA_MAX_RDMA_SIZE == UINT64_C(0x000080000));
    CHECK(DAT_IA_FIELD_IA_MAX_RMRS == UINT64_C(0x000100000));
    CHECK(DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS == UINT64_C(0x000200000));
    CHECK(DAT_IA_FIELD_IA_MAX_SRQS == UINT64_C(0x000400000));
    CHECK(DAT_IA_FIELD_IA_MAX_EP_PER_SRQ == UINT64_C(0x000800000));
    CHECK(DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ == UINT64_C(0x001000000));
    CHECK(DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ == UINT64_C(0x002000000));
    CHECK(DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE == UINT64_C(0x004000000));
    CHECK(DAT_IA_FIELD_IA_MAX_RDMA_READ_IN == UINT64_C(0x008000000));
    CHECK(DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT == UINT64_C(0x010000000));
    CHECK(DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED == UINT64_C(0x020000000));
    CHECK(DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED == UINT64_C(0x040000000));
    CHECK(DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR == UINT64_C(0x080000000));
    CHECK(DAT_IA_FIELD_IA_TRANSPORT_ATTR == UINT64_C(0x100000000));
    CHECK(DAT_IA_FIELD_IA_NUM_VENDOR_ATTR == UINT64_C(0x200000000));
    CHECK(DAT_IA_FIELD_IA_VENDOR_ATTR == UINT64_C(0x400000000));
}

/* DAT_PROVIDER_ATTR_MASK bits. */
TEST(ABI_11_provider_attr_mask)
{
    CHECK(DAT_PROVIDER_FIELD_PROVIDER_NAME == UINT64_C(0x0000001));
    CHECK(DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR == UINT64_C(0x0000002));
    CHECK(DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR == UINT64_C(0x0000004));
    CHECK(DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR == UINT64_C(0x0000008));
    CHECK(DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR == UINT64_C(0x0000010));
    CHECK(DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED == UINT64_C(0x0000020));
    CHECK(DAT_PROVIDER_FIELD_IOV_OWNERSHIP == UINT64_C(0x0000040));
    CHECK(DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED == UINT64_C(0x0000080));
    CHECK(DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED == UINT64_C(0x0000100));
    CHECK(DAT_PROVIDER_FIELD_IS_THREAD_SAFE == UINT64_C(0x0000200));
    CHECK(DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE == UINT64_C(0x0000400));
    CHECK(DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH == UINT64_C(0x0000800));
    CHECK(DAT_PROVIDER_FIELD_EP_CREATOR == UINT64_C(0x0001000));
    CHECK(DAT_PROVIDER_FIELD_PZ_SUPPORT == UINT64_C(0x0002000));
    CHECK(DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT == UINT64_C(0x0004000));
    CHECK(DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED == UINT64_C(0x0008000));
    CHECK(DAT_PROVIDER_FIELD_SRQ_SUPPORTED == UINT64_C(0x0010000));
    CHECK(DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED == UINT64_C(0x0020000));
    CHECK(DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED == UINT64_C(0x0040000));
    CHECK(DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED == UINT64_C(0x0080000));
    CHECK(DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED == UINT64_C(0x0100000));
    CHECK(DAT_PROVIDER_FIELD_LMR_SYNC_REQ == UINT64_C(0x0200000));
    CHECK(DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED == UINT64_C(0x0400000));
    CHECK(DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ == UINT64_C(0x0800000));
    CHECK(DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR == UINT64_C(0x1000000));
    CHECK(DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR == UINT64_C(0x2000000));
}

/* DAT_EP_PARAM_MASK bits. */
TEST(ABI_12_ep_param_mask)
{
    CHECK(DAT_EP_FIELD_IA_HANDLE == UINT64_C(0x00000001));
    CHECK(DAT_EP_FIELD_EP_STATE == UINT64_C(0x00000002));
    CHECK(DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR == UINT64_C(0x00000004));
    CHECK(DAT_EP_FIELD_LOCAL_PORT_QUAL == UINT64_C(0x00000008));
    CHECK(DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR == UINT64_C(0x00000010));
    CHECK(DAT_EP_FIELD_REMOTE_PORT_QUAL == UINT64_C(0x00000020));
    CHECK(DAT_EP_FIELD_PZ_HANDLE == UINT64_C(0x00000040));
    CHECK(DAT_EP_FIELD_RECV_EVD_HANDLE == UINT64_C(0x00000080));
    CHECK(DAT_EP_FIELD_REQUEST_EVD_HANDLE == UINT64_C(0x00000100));
    CHECK(DAT_EP_FIELD_CONNECT_EVD_HANDLE == UINT64_C(0x00000200));
    CHECK(DAT_EP_FIELD_SRQ_HANDLE == UINT64_C(0x00000400));
    CHECK(DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE == UINT64_C(0x00001000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE == UINT64_C(0x00002000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE == UINT64_C(0x00004000));
    CHECK(DAT_EP_FIELD_EP_ATTR_QOS == UINT64_C(0x00008000));
    CHECK(DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS == UINT64_C(0x00010000));
    CHECK(DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS == UINT64_C(0x00020000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS == UINT64_C(0x00040000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS == UINT64_C(0x00080000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV == UINT64_C(0x00100000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV == UINT64_C(0x00200000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN == UINT64_C(0x00400000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT == UINT64_C(0x00800000));
    CHECK(DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW == UINT64_C(0x01000000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV == UINT64_C(0x02000000));
    CHECK(DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV == UINT64_C(0x04000000));
    CHECK(DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR == UINT64_C(0x08000000));
    CHECK(DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR == UINT64_C(0x10000000));
    CHECK(DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR == UINT64_C(0x20000000));
    CHECK(DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR == UINT64_C(0x40000000));
    CHECK(DAT_EP_FIELD_EP_ATTR_ALL == UINT64_C(0x7FFFF000));
    CHECK(DAT_EP_FIELD_ALL == UINT64_C(0x7FFFF7FF));
}

/* ---- enumerations (abi-types.md section 5) ---------------------------- */

/* Enumerations of udat.h. */
TEST(ABI_13_enums_udat)
{
    /* DAT_MEM_TYPE */
    CHECK(sizeof(DAT_MEM_TYPE) == 4);
    CHECK(DAT_MEM_TYPE_VIRTUAL == 0x0);
    CHECK(DAT_MEM_TYPE_LMR == 0x1);
    CHECK(DAT_MEM_TYPE_SHARED_VIRTUAL == 0x2);
    CHECK(DAT_MEM_TYPE_SO_VIRTUAL == 0x3);
    /* DAT_HANDLE_TYPE */
    CHECK(sizeof(DAT_HANDLE_TYPE) == 4);
    CHECK(DAT_HANDLE_TYPE_CR == 0x0);
    CHECK(DAT_HANDLE_TYPE_EP == 0x1);
    CHECK(DAT_HANDLE_TYPE_EVD == 0x2);
    CHECK(DAT_HANDLE_TYPE_IA == 0x3);
    CHECK(DAT_HANDLE_TYPE_LMR == 0x4);
    CHECK(DAT_HANDLE_TYPE_PSP == 0x5);
    CHECK(DAT_HANDLE_TYPE_PZ == 0x6);
    CHECK(DAT_HANDLE_TYPE_RMR == 0x7);
    CHECK(DAT_HANDLE_TYPE_RSP == 0x8);
    CHECK(DAT_HANDLE_TYPE_CNO == 0x9);
    CHECK(DAT_HANDLE_TYPE_SRQ == 0xA);
    /* DAT_EVD_STATE */
    CHECK(sizeof(DAT_EVD_STATE) == 4);
    CHECK(DAT_EVD_STATE_ENABLED == 0x1);
    CHECK(DAT_EVD_STATE_DISABLED == 0x2);
    CHECK(DAT_EVD_STATE_WAITABLE == 0x4);
    CHECK(DAT_EVD_STATE_UNWAITABLE == 0x8);
    CHECK(DAT_EVD_STATE_CONFIG_NOTIFY == 0x10);
    CHECK(DAT_EVD_STATE_CONFIG_SOLICITED == 0x20);
    CHECK(DAT_EVD_STATE_CONFIG_THRESHOLD == 0x30);
    /* DAT_EVD_PARAM_MASK */
    CHECK(sizeof(DAT_EVD_PARAM_MASK) == 4);
    CHECK(DAT_EVD_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_EVD_FIELD_EVD_QLEN == 0x2);
    CHECK(DAT_EVD_FIELD_EVD_STATE == 0x4);
    CHECK(DAT_EVD_FIELD_CNO == 0x8);
    CHECK(DAT_EVD_FIELD_EVD_FLAGS == 0x10);
    CHECK(DAT_EVD_FIELD_ALL == 0x1F);
    /* DAT_CNO_PARAM_MASK */
    CHECK(sizeof(DAT_CNO_PARAM_MASK) == 4);
    CHECK(DAT_CNO_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_CNO_FIELD_AGENT == 0x2);
    CHECK(DAT_CNO_FIELD_ALL == 0x3);
    /* DAT_PZ_SUPPORT */
    CHECK(sizeof(DAT_PZ_SUPPORT) == 4);
    CHECK(DAT_PZ_UNIQUE == 0x0);
    CHECK(DAT_PZ_SAME == 0x1);
    CHECK(DAT_PZ_SHAREABLE == 0x2);
}

/* Enumerations of dat.h. */
TEST(ABI_14_enums_dat)
{
    /* DAT_BOOLEAN */
    CHECK(sizeof(DAT_BOOLEAN) == 4);
    CHECK(DAT_FALSE == 0x0);
    CHECK(DAT_TRUE == 0x1);
    /* DAT_COMPLETION_FLAGS */
    CHECK(sizeof(DAT_COMPLETION_FLAGS) == 4);
    CHECK(DAT_COMPLETION_DEFAULT_FLAG == 0x0);
    CHECK(DAT_COMPLETION_SUPPRESS_FLAG == 0x1);
    CHECK(DAT_COMPLETION_SOLICITED_WAIT_FLAG == 0x2);
    CHECK(DAT_COMPLETION_UNSIGNALLED_FLAG == 0x4);
    CHECK(DAT_COMPLETION_BARRIER_FENCE_FLAG == 0x8);
    CHECK(DAT_COMPLETION_EVD_THRESHOLD_FLAG == 0x10);
    /* DAT_QOS */
    CHECK(sizeof(DAT_QOS) == 4);
    CHECK(DAT_QOS_BEST_EFFORT == 0x0);
    CHECK(DAT_QOS_HIGH_THROUGHPUT == 0x1);
    CHECK(DAT_QOS_LOW_LATENCY == 0x2);
    CHECK(DAT_QOS_ECONOMY == 0x4);
    CHECK(DAT_QOS_PREMIUM == 0x8);
    /* DAT_CONNECT_FLAGS */
    CHECK(sizeof(DAT_CONNECT_FLAGS) == 4);
    CHECK(DAT_CONNECT_DEFAULT_FLAG == 0x0);
    CHECK(DAT_CONNECT_MULTIPATH_FLAG == 0x1);
    /* DAT_CLOSE_FLAGS */
    CHECK(sizeof(DAT_CLOSE_FLAGS) == 4);
    CHECK(DAT_CLOSE_ABRUPT_FLAG == 0x0);
    CHECK(DAT_CLOSE_GRACEFUL_FLAG == 0x1);
    /* DAT_EVD_FLAGS */
    CHECK(sizeof(DAT_EVD_FLAGS) == 4);
    CHECK(DAT_EVD_SOFTWARE_FLAG == 0x1);
    CHECK(DAT_EVD_CR_FLAG == 0x10);
    CHECK(DAT_EVD_DTO_FLAG == 0x20);
    CHECK(DAT_EVD_CONNECTION_FLAG == 0x40);
    CHECK(DAT_EVD_RMR_BIND_FLAG == 0x80);
    CHECK(DAT_EVD_ASYNC_FLAG == 0x100);
    CHECK(DAT_EVD_DEFAULT_FLAG == 0x1F0);
    /* DAT_PSP_FLAGS */
    CHECK(sizeof(DAT_PSP_FLAGS) == 4);
    CHECK(DAT_PSP_CONSUMER_FLAG == 0x0);
    CHECK(DAT_PSP_PROVIDER_FLAG == 0x1);
    /* DAT_MEM_PRIV_FLAGS */
    CHECK(sizeof(DAT_MEM_PRIV_FLAGS) == 4);
    CHECK(DAT_MEM_PRIV_NONE_FLAG == 0x0);
    CHECK(DAT_MEM_PRIV_LOCAL_READ_FLAG == 0x1);
    CHECK(DAT_MEM_PRIV_REMOTE_READ_FLAG == 0x2);
    CHECK(DAT_MEM_PRIV_LOCAL_WRITE_FLAG == 0x10);
    CHECK(DAT_MEM_PRIV_REMOTE_WRITE_FLAG == 0x20);
    CHECK(DAT_MEM_PRIV_ALL_FLAG == 0x33);
    CHECK(DAT_MEM_PRIV_RO_DISABLE_FLAG == 0x100);
    /* DAT_LMR_PARAM_MASK */
    CHECK(sizeof(DAT_LMR_PARAM_MASK) == 4);
    CHECK(DAT_LMR_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_LMR_FIELD_MEM_TYPE == 0x2);
    CHECK(DAT_LMR_FIELD_REGION_DESC == 0x4);
    CHECK(DAT_LMR_FIELD_LENGTH == 0x8);
    CHECK(DAT_LMR_FIELD_PZ_HANDLE == 0x10);
    CHECK(DAT_LMR_FIELD_MEM_PRIV == 0x20);
    CHECK(DAT_LMR_FIELD_LMR_CONTEXT == 0x40);
    CHECK(DAT_LMR_FIELD_RMR_CONTEXT == 0x80);
    CHECK(DAT_LMR_FIELD_REGISTERED_SIZE == 0x100);
    CHECK(DAT_LMR_FIELD_REGISTERED_ADDRESS == 0x200);
    CHECK(DAT_LMR_FIELD_ALL == 0x3FF);
    /* DAT_RMR_PARAM_MASK */
    CHECK(sizeof(DAT_RMR_PARAM_MASK) == 4);
    CHECK(DAT_RMR_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_RMR_FIELD_PZ_HANDLE == 0x2);
    CHECK(DAT_RMR_FIELD_LMR_TRIPLET == 0x4);
    CHECK(DAT_RMR_FIELD_MEM_PRIV == 0x8);
    CHECK(DAT_RMR_FIELD_RMR_CONTEXT == 0x10);
    CHECK(DAT_RMR_FIELD_ALL == 0x1F);
    /* DAT_IOV_OWNERSHIP */
    CHECK(sizeof(DAT_IOV_OWNERSHIP) == 4);
    CHECK(DAT_IOV_CONSUMER == 0x0);
    CHECK(DAT_IOV_PROVIDER_NOMOD == 0x1);
    CHECK(DAT_IOV_PROVIDER_MOD == 0x2);
    /* DAT_EP_CREATOR_FOR_PSP */
    CHECK(sizeof(DAT_EP_CREATOR_FOR_PSP) == 4);
    CHECK(DAT_PSP_CREATES_EP_NEVER == 0x0);
    CHECK(DAT_PSP_CREATES_EP_IFASKED == 0x1);
    CHECK(DAT_PSP_CREATES_EP_ALWAYS == 0x2);
    /* DAT_SERVICE_TYPE */
    CHECK(sizeof(DAT_SERVICE_TYPE) == 4);
    CHECK(DAT_SERVICE_TYPE_RC == 0x0);
    /* DAT_EP_STATE */
    CHECK(sizeof(DAT_EP_STATE) == 4);
    CHECK(DAT_EP_STATE_UNCONNECTED == 0x0);
    CHECK(DAT_EP_STATE_UNCONFIGURED_UNCONNECTED == 0x1);
    CHECK(DAT_EP_STATE_RESERVED == 0x2);
    CHECK(DAT_EP_STATE_UNCONFIGURED_RESERVED == 0x3);
    CHECK(DAT_EP_STATE_PASSIVE_CONNECTION_PENDING == 0x4);
    CHECK(DAT_EP_STATE_UNCONFIGURED_PASSIVE == 0x5);
    CHECK(DAT_EP_STATE_ACTIVE_CONNECTION_PENDING == 0x6);
    CHECK(DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING == 0x7);
    CHECK(DAT_EP_STATE_UNCONFIGURED_TENTATIVE == 0x8);
    CHECK(DAT_EP_STATE_CONNECTED == 0x9);
    CHECK(DAT_EP_STATE_DISCONNECT_PENDING == 0xA);
    CHECK(DAT_EP_STATE_DISCONNECTED == 0xB);
    CHECK(DAT_EP_STATE_COMPLETION_PENDING == 0xC);
    /* DAT_SRQ_STATE */
    CHECK(sizeof(DAT_SRQ_STATE) == 4);
    CHECK(DAT_SRQ_STATE_OPERATIONAL == 0x0);
    CHECK(DAT_SRQ_STATE_ERROR == 0x1);
    /* DAT_SRQ_PARAM_MASK */
    CHECK(sizeof(DAT_SRQ_PARAM_MASK) == 4);
    CHECK(DAT_SRQ_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_SRQ_FIELD_SRQ_STATE == 0x2);
    CHECK(DAT_SRQ_FIELD_PZ_HANDLE == 0x4);
    CHECK(DAT_SRQ_FIELD_MAX_RECV_DTO == 0x8);
    CHECK(DAT_SRQ_FIELD_MAX_RECV_IOV == 0x10);
    CHECK(DAT_SRQ_FIELD_LOW_WATERMARK == 0x20);
    CHECK(DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT == 0x40);
    CHECK(DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT == 0x80);
    CHECK(DAT_SRQ_FIELD_ALL == 0xFF);
    /* DAT_PZ_PARAM_MASK */
    CHECK(sizeof(DAT_PZ_PARAM_MASK) == 4);
    CHECK(DAT_PZ_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_PZ_FIELD_ALL == 0x1);
    /* DAT_PSP_PARAM_MASK */
    CHECK(sizeof(DAT_PSP_PARAM_MASK) == 4);
    CHECK(DAT_PSP_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_PSP_FIELD_CONN_QUAL == 0x2);
    CHECK(DAT_PSP_FIELD_EVD_HANDLE == 0x4);
    CHECK(DAT_PSP_FIELD_PSP_FLAGS == 0x8);
    CHECK(DAT_PSP_FIELD_ALL == 0xF);
    /* DAT_RSP_PARAM_MASK */
    CHECK(sizeof(DAT_RSP_PARAM_MASK) == 4);
    CHECK(DAT_RSP_FIELD_IA_HANDLE == 0x1);
    CHECK(DAT_RSP_FIELD_CONN_QUAL == 0x2);
    CHECK(DAT_RSP_FIELD_EVD_HANDLE == 0x4);
    CHECK(DAT_RSP_FIELD_EP_HANDLE == 0x8);
    CHECK(DAT_RSP_FIELD_ALL == 0xF);
    /* DAT_CR_PARAM_MASK */
    CHECK(sizeof(DAT_CR_PARAM_MASK) == 4);
    CHECK(DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR == 0x1);
    CHECK(DAT_CR_FIELD_REMOTE_PORT_QUAL == 0x2);
    CHECK(DAT_CR_FIELD_PRIVATE_DATA_SIZE == 0x4);
    CHECK(DAT_CR_FIELD_PRIVATE_DATA == 0x8);
    CHECK(DAT_CR_FIELD_LOCAL_EP_HANDLE == 0x10);
    CHECK(DAT_CR_FIELD_ALL == 0x1F);
    /* DAT_DTO_COMPLETION_STATUS */
    CHECK(sizeof(DAT_DTO_COMPLETION_STATUS) == 4);
    CHECK(DAT_DTO_SUCCESS == 0x0);
    CHECK(DAT_DTO_ERR_FLUSHED == 0x1);
    CHECK(DAT_DTO_ERR_LOCAL_LENGTH == 0x2);
    CHECK(DAT_DTO_ERR_LOCAL_EP == 0x3);
    CHECK(DAT_DTO_ERR_LOCAL_PROTECTION == 0x4);
    CHECK(DAT_DTO_ERR_BAD_RESPONSE == 0x5);
    CHECK(DAT_DTO_ERR_REMOTE_ACCESS == 0x6);
    CHECK(DAT_DTO_ERR_REMOTE_RESPONDER == 0x7);
    CHECK(DAT_DTO_ERR_TRANSPORT == 0x8);
    CHECK(DAT_DTO_ERR_RECEIVER_NOT_READY == 0x9);
    CHECK(DAT_DTO_ERR_PARTIAL_PACKET == 0xA);
    CHECK(DAT_RMR_OPERATION_FAILED == 0xB);
    /* DAT_EVENT_NUMBER */
    CHECK(sizeof(DAT_EVENT_NUMBER) == 4);
    CHECK(DAT_DTO_COMPLETION_EVENT == 0x1);
    CHECK(DAT_RMR_BIND_COMPLETION_EVENT == 0x1001);
    CHECK(DAT_CONNECTION_REQUEST_EVENT == 0x2001);
    CHECK(DAT_CONNECTION_EVENT_ESTABLISHED == 0x4001);
    CHECK(DAT_CONNECTION_EVENT_PEER_REJECTED == 0x4002);
    CHECK(DAT_CONNECTION_EVENT_NON_PEER_REJECTED == 0x4003);
    CHECK(DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR == 0x4004);
    CHECK(DAT_CONNECTION_EVENT_DISCONNECTED == 0x4005);
    CHECK(DAT_CONNECTION_EVENT_BROKEN == 0x4006);
    CHECK(DAT_CONNECTION_EVENT_TIMED_OUT == 0x4007);
    CHECK(DAT_CONNECTION_EVENT_UNREACHABLE == 0x4008);
    CHECK(DAT_ASYNC_ERROR_EVD_OVERFLOW == 0x8001);
    CHECK(DAT_ASYNC_ERROR_IA_CATASTROPHIC == 0x8002);
    CHECK(DAT_ASYNC_ERROR_EP_BROKEN == 0x8003);
    CHECK(DAT_ASYNC_ERROR_TIMED_OUT == 0x8004);
    CHECK(DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR == 0x8005);
    CHECK(DAT_SOFTWARE_EVENT == 0x10001);
    /* DAT_IA_ASYNC_ERROR_REASON */
    CHECK(sizeof(DAT_IA_ASYNC_ERROR_REASON) == 4);
    CHECK(DAT_IA_CATASTROPHIC_ERROR == 0x0);
    CHECK(DAT_IA_OTHER_ERROR == 0x1);
    /* DAT_EP_ASYNC_ERROR_REASON */
    CHECK(sizeof(DAT_EP_ASYNC_ERROR_REASON) == 4);
    CHECK(DAT_EP_TRANSFER_TO_ERROR == 0x0);
    CHECK(DAT_EP_OTHER_ERROR == 0x1);
    CHECK(DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT == 0x2);
    /* DAT_EVD_ASYNC_ERROR_REASON */
    CHECK(sizeof(DAT_EVD_ASYNC_ERROR_REASON) == 4);
    CHECK(DAT_EVD_OVERFLOW_ERROR == 0x0);
    CHECK(DAT_EVD_OTHER_ERROR == 0x1);
    /* DAT_SRQ_ASYNC_ERROR_REASON */
    CHECK(sizeof(DAT_SRQ_ASYNC_ERROR_REASON) == 4);
    CHECK(DAT_SRQ_TRANSFER_TO_ERROR == 0x0);
    CHECK(DAT_SRQ_OTHER_ERROR == 0x1);
    CHECK(DAT_SRQ_LOW_WATERMARK_EVENT == 0x2);
    /* DAT_LMR_OTHER_ERROR */
    CHECK(sizeof(DAT_LMR_OTHER_ERROR) == 4);
    /* DAT_LMR/RMR/PZ_ASYNC_ERROR_REASON */
    CHECK(sizeof(DAT_LMR_ASYNC_ERROR_REASON) == 4);
    CHECK(sizeof(DAT_RMR_ASYNC_ERROR_REASON) == 4);
    CHECK(sizeof(DAT_PZ_ASYNC_ERROR_REASON) == 4);
    CHECK(DAT_LMR_OTHER_ERROR == 0);
    CHECK(DAT_RMR_OTHER_ERROR == 0);
    CHECK(DAT_PZ_OTHER_ERROR == 0);
}

/* ---- DAT_RETURN types and subtypes (abi-errors.md sections 2, 3) ------- */

/* DAT_RETURN_TYPE: value, and value with the error class bit. */
TEST(ABI_15_error_types)
{
    CHECK(DAT_SUCCESS == 0x00000000);
    CHECK(DAT_ABORT == 0x00010000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_ABORT, 0x80010000);
    CHECK(DAT_CONN_QUAL_IN_USE == 0x00020000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_CONN_QUAL_IN_USE, 0x80020000);
    CHECK(DAT_INSUFFICIENT_RESOURCES == 0x00030000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES, 0x80030000);
    CHECK(DAT_INTERNAL_ERROR == 0x00040000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_INTERNAL_ERROR, 0x80040000);
    CHECK(DAT_INVALID_HANDLE == 0x00050000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_INVALID_HANDLE, 0x80050000);
    CHECK(DAT_INVALID_PARAMETER == 0x00060000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_INVALID_PARAMETER, 0x80060000);
    CHECK(DAT_INVALID_STATE == 0x00070000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_INVALID_STATE, 0x80070000);
    CHECK(DAT_LENGTH_ERROR == 0x00080000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_LENGTH_ERROR, 0x80080000);
    CHECK(DAT_MODEL_NOT_SUPPORTED == 0x00090000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_MODEL_NOT_SUPPORTED, 0x80090000);
    CHECK(DAT_PROVIDER_NOT_FOUND == 0x000A0000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_PROVIDER_NOT_FOUND, 0x800A0000);
    CHECK(DAT_PRIVILEGES_VIOLATION == 0x000B0000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_PRIVILEGES_VIOLATION, 0x800B0000);
    CHECK(DAT_PROTECTION_VIOLATION == 0x000C0000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_PROTECTION_VIOLATION, 0x800C0000);
    CHECK(DAT_QUEUE_EMPTY == 0x000D0000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_QUEUE_EMPTY, 0x800D0000);
    CHECK(DAT_QUEUE_FULL == 0x000E0000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_QUEUE_FULL, 0x800E0000);
    CHECK(DAT_TIMEOUT_EXPIRED == 0x000F0000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_TIMEOUT_EXPIRED, 0x800F0000);
    CHECK(DAT_PROVIDER_ALREADY_REGISTERED == 0x00100000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_PROVIDER_ALREADY_REGISTERED, 0x80100000);
    CHECK(DAT_PROVIDER_IN_USE == 0x00110000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_PROVIDER_IN_USE, 0x80110000);
    CHECK(DAT_INVALID_ADDRESS == 0x00120000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_INVALID_ADDRESS, 0x80120000);
    CHECK(DAT_INTERRUPTED_CALL == 0x00130000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_INTERRUPTED_CALL, 0x80130000);
    CHECK(DAT_CONN_QUAL_UNAVAILABLE == 0x00140000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_CONN_QUAL_UNAVAILABLE, 0x80140000);
    CHECK(DAT_NOT_IMPLEMENTED == 0x0FFF0000);
    CHECK_RET(DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED, 0x8FFF0000);
}

/* DAT_RETURN_SUBTYPE: 0 to 102. */
TEST(ABI_16_error_subtypes)
{
    CHECK(DAT_NO_SUBTYPE == 0);
    CHECK(DAT_SUB_INTERRUPTED == 1);
    CHECK(DAT_RESOURCE_MEMORY == 2);
    CHECK(DAT_RESOURCE_DEVICE == 3);
    CHECK(DAT_RESOURCE_TEP == 4);
    CHECK(DAT_RESOURCE_TEVD == 5);
    CHECK(DAT_RESOURCE_PROTECTION_DOMAIN == 6);
    CHECK(DAT_RESOURCE_MEMORY_REGION == 7);
    CHECK(DAT_RESOURCE_ERROR_HANDLER == 8);
    CHECK(DAT_RESOURCE_CREDITS == 9);
    CHECK(DAT_RESOURCE_SRQ == 10);
    CHECK(DAT_INVALID_HANDLE_IA == 11);
    CHECK(DAT_INVALID_HANDLE_EP == 12);
    CHECK(DAT_INVALID_HANDLE_LMR == 13);
    CHECK(DAT_INVALID_HANDLE_RMR == 14);
    CHECK(DAT_INVALID_HANDLE_PZ == 15);
    CHECK(DAT_INVALID_HANDLE_PSP == 16);
    CHECK(DAT_INVALID_HANDLE_RSP == 17);
    CHECK(DAT_INVALID_HANDLE_CR == 18);
    CHECK(DAT_INVALID_HANDLE_CNO == 19);
    CHECK(DAT_INVALID_HANDLE_EVD_CR == 20);
    CHECK(DAT_INVALID_HANDLE_EVD_REQUEST == 21);
    CHECK(DAT_INVALID_HANDLE_EVD_RECV == 22);
    CHECK(DAT_INVALID_HANDLE_EVD_CONN == 23);
    CHECK(DAT_INVALID_HANDLE_EVD_ASYNC == 24);
    CHECK(DAT_INVALID_HANDLE_SRQ == 25);
    CHECK(DAT_INVALID_HANDLE1 == 26);
    CHECK(DAT_INVALID_HANDLE2 == 27);
    CHECK(DAT_INVALID_HANDLE3 == 28);
    CHECK(DAT_INVALID_HANDLE4 == 29);
    CHECK(DAT_INVALID_HANDLE5 == 30);
    CHECK(DAT_INVALID_HANDLE6 == 31);
    CHECK(DAT_INVALID_HANDLE7 == 32);
    CHECK(DAT_INVALID_HANDLE8 == 33);
    CHECK(DAT_INVALID_HANDLE9 == 34);
    CHECK(DAT_INVALID_HANDLE10 == 35);
    CHECK(DAT_INVALID_ARG1 == 36);
    CHECK(DAT_INVALID_ARG2 == 37);
    CHECK(DAT_INVALID_ARG3 == 38);
    CHECK(DAT_INVALID_ARG4 == 39);
    CHECK(DAT_INVALID_ARG5 == 40);
    CHECK(DAT_INVALID_ARG6 == 41);
    CHECK(DAT_INVALID_ARG7 == 42);
    CHECK(DAT_INVALID_ARG8 == 43);
    CHECK(DAT_INVALID_ARG9 == 44);
    CHECK(DAT_INVALID_ARG10 == 45);
    CHECK(DAT_INVALID_STATE_EP_UNCONNECTED == 46);
    CHECK(DAT_INVALID_STATE_EP_ACTCONNPENDING == 47);
    CHECK(DAT_INVALID_STATE_EP_PASSCONNPENDING == 48);
    CHECK(DAT_INVALID_STATE_EP_TENTCONNPENDING == 49);
    CHECK(DAT_INVALID_STATE_EP_CONNECTED == 50);
    CHECK(DAT_INVALID_STATE_EP_DISCONNECTED == 51);
    CHECK(DAT_INVALID_STATE_EP_RESERVED == 52);
    CHECK(DAT_INVALID_STATE_EP_COMPLPENDING == 53);
    CHECK(DAT_INVALID_STATE_EP_DISCPENDING == 54);
    CHECK(DAT_INVALID_STATE_EP_PROVIDERCONTROL == 55);
    CHECK(DAT_INVALID_STATE_EP_NOTREADY == 56);
    CHECK(DAT_INVALID_STATE_EP_RECV_WATERMARK == 57);
    CHECK(DAT_INVALID_STATE_EP_PZ == 58);
    CHECK(DAT_INVALID_STATE_EP_EVD_REQUEST == 59);
    CHECK(DAT_INVALID_STATE_EP_EVD_RECV == 60);
    CHECK(DAT_INVALID_STATE_EP_EVD_CONNECT == 61);
    CHECK(DAT_INVALID_STATE_EP_UNCONFIGURED == 62);
    CHECK(DAT_INVALID_STATE_EP_UNCONFRESERVED == 63);
    CHECK(DAT_INVALID_STATE_EP_UNCONFPASSIVE == 64);
    CHECK(DAT_INVALID_STATE_EP_UNCONFTENTATIVE == 65);
    CHECK(DAT_INVALID_STATE_CNO_IN_USE == 66);
    CHECK(DAT_INVALID_STATE_CNO_DEAD == 67);
    CHECK(DAT_INVALID_STATE_EVD_OPEN == 68);
    CHECK(DAT_INVALID_STATE_EVD_ENABLED == 69);
    CHECK(DAT_INVALID_STATE_EVD_DISABLED == 70);
    CHECK(DAT_INVALID_STATE_EVD_WAITABLE == 71);
    CHECK(DAT_INVALID_STATE_EVD_UNWAITABLE == 72);
    CHECK(DAT_INVALID_STATE_EVD_IN_USE == 73);
    CHECK(DAT_INVALID_STATE_EVD_CONFIG_NOTIFY == 74);
    CHECK(DAT_INVALID_STATE_EVD_CONFIG_SOLICITED == 75);
    CHECK(DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD == 76);
    CHECK(DAT_INVALID_STATE_EVD_WAITER == 77);
    CHECK(DAT_INVALID_STATE_EVD_ASYNC == 78);
    CHECK(DAT_INVALID_STATE_IA_IN_USE == 79);
    CHECK(DAT_INVALID_STATE_LMR_IN_USE == 80);
    CHECK(DAT_INVALID_STATE_LMR_FREE == 81);
    CHECK(DAT_INVALID_STATE_PZ_IN_USE == 82);
    CHECK(DAT_INVALID_STATE_PZ_FREE == 83);
    CHECK(DAT_INVALID_STATE_SRQ_OPERATIONAL == 84);
    CHECK(DAT_INVALID_STATE_SRQ_ERROR == 85);
    CHECK(DAT_INVALID_STATE_SRQ_IN_USE == 86);
    CHECK(DAT_PRIVILEGES_READ == 87);
    CHECK(DAT_PRIVILEGES_WRITE == 88);
    CHECK(DAT_PRIVILEGES_RDMA_READ == 89);
    CHECK(DAT_PRIVILEGES_RDMA_WRITE == 90);
    CHECK(DAT_PROTECTION_READ == 91);
    CHECK(DAT_PROTECTION_WRITE == 92);
    CHECK(DAT_PROTECTION_RDMA_READ == 93);
    CHECK(DAT_PROTECTION_RDMA_WRITE == 94);
    CHECK(DAT_INVALID_ADDRESS_UNSUPPORTED == 95);
    CHECK(DAT_INVALID_ADDRESS_UNREACHABLE == 96);
    CHECK(DAT_INVALID_ADDRESS_MALFORMED == 97);
    CHECK(DAT_NAME_NOT_REGISTERED == 98);
    CHECK(DAT_MAJOR_NOT_FOUND == 99);
    CHECK(DAT_MINOR_NOT_FOUND == 100);
    CHECK(DAT_THREAD_SAFETY_NOT_FOUND == 101);
    CHECK(DAT_INVALID_RO_COOKIE == 102);
}

/* ---- structs and unions (abi-types.md section 6) ---------------------- */

/* Named attributes, context, triplets, RMR parameters. */
TEST(ABI_20_basic_types)
{
    /* DAT_NAMED_ATTR (struct dat_named_attr) */
    CHECK(ABI_SAME_TYPE(DAT_NAMED_ATTR, struct dat_named_attr));
    CHECK(sizeof(DAT_NAMED_ATTR) == 16);
    CHECK(ABI_ALIGNOF(DAT_NAMED_ATTR) == 8);
    CHECK_FIELD(DAT_NAMED_ATTR, name, 0, 8);
    CHECK_FIELD(DAT_NAMED_ATTR, value, 8, 8);
    /* DAT_CONTEXT (union dat_context) */
    CHECK(ABI_SAME_TYPE(DAT_CONTEXT, union dat_context));
    CHECK(sizeof(DAT_CONTEXT) == 8);
    CHECK(ABI_ALIGNOF(DAT_CONTEXT) == 8);
    CHECK_FIELD(DAT_CONTEXT, as_ptr, 0, 8);
    CHECK_FIELD(DAT_CONTEXT, as_64, 0, 8);
    CHECK_FIELD(DAT_CONTEXT, as_index, 0, 8);
    /* DAT_LMR_TRIPLET (struct dat_lmr_triplet) */
    CHECK(ABI_SAME_TYPE(DAT_LMR_TRIPLET, struct dat_lmr_triplet));
    CHECK(sizeof(DAT_LMR_TRIPLET) == 24);
    CHECK(ABI_ALIGNOF(DAT_LMR_TRIPLET) == 8);
    CHECK_FIELD(DAT_LMR_TRIPLET, lmr_context, 0, 4);
    CHECK_FIELD(DAT_LMR_TRIPLET, pad, 4, 4);
    CHECK_FIELD(DAT_LMR_TRIPLET, virtual_address, 8, 8);
    CHECK_FIELD(DAT_LMR_TRIPLET, segment_length, 16, 8);
    /* DAT_RMR_TRIPLET (struct dat_rmr_triplet) */
    CHECK(ABI_SAME_TYPE(DAT_RMR_TRIPLET, struct dat_rmr_triplet));
    CHECK(sizeof(DAT_RMR_TRIPLET) == 24);
    CHECK(ABI_ALIGNOF(DAT_RMR_TRIPLET) == 8);
    CHECK_FIELD(DAT_RMR_TRIPLET, rmr_context, 0, 4);
    CHECK_FIELD(DAT_RMR_TRIPLET, pad, 4, 4);
    CHECK_FIELD(DAT_RMR_TRIPLET, target_address, 8, 8);
    CHECK_FIELD(DAT_RMR_TRIPLET, segment_length, 16, 8);
    /* DAT_RMR_PARAM (struct dat_rmr_param) */
    CHECK(ABI_SAME_TYPE(DAT_RMR_PARAM, struct dat_rmr_param));
    CHECK(sizeof(DAT_RMR_PARAM) == 48);
    CHECK(ABI_ALIGNOF(DAT_RMR_PARAM) == 8);
    CHECK_FIELD(DAT_RMR_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_RMR_PARAM, pz_handle, 8, 8);
    CHECK_FIELD(DAT_RMR_PARAM, lmr_triplet, 16, 24);
    CHECK_FIELD(DAT_RMR_PARAM, mem_priv, 40, 4);
    CHECK_FIELD(DAT_RMR_PARAM, rmr_context, 44, 4);
}

/* IA attributes. */
TEST(ABI_21_ia_attr)
{
    /* DAT_IA_ATTR (struct dat_ia_attr) */
    CHECK(ABI_SAME_TYPE(DAT_IA_ATTR, struct dat_ia_attr));
    CHECK(sizeof(DAT_IA_ATTR) == 688);
    CHECK(ABI_ALIGNOF(DAT_IA_ATTR) == 8);
    CHECK_FIELD(DAT_IA_ATTR, adapter_name, 0, 256);
    CHECK_FIELD(DAT_IA_ATTR, vendor_name, 256, 256);
    CHECK_FIELD(DAT_IA_ATTR, hardware_version_major, 512, 4);
    CHECK_FIELD(DAT_IA_ATTR, hardware_version_minor, 516, 4);
    CHECK_FIELD(DAT_IA_ATTR, firmware_version_major, 520, 4);
    CHECK_FIELD(DAT_IA_ATTR, firmware_version_minor, 524, 4);
    CHECK_FIELD(DAT_IA_ATTR, ia_address_ptr, 528, 8);
    CHECK_FIELD(DAT_IA_ATTR, max_eps, 536, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_dto_per_ep, 540, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_rdma_read_per_ep_in, 544, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_rdma_read_per_ep_out, 548, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_evds, 552, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_evd_qlen, 556, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_iov_segments_per_dto, 560, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_lmrs, 564, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_lmr_block_size, 568, 8);
    CHECK_FIELD(DAT_IA_ATTR, max_lmr_virtual_address, 576, 8);
    CHECK_FIELD(DAT_IA_ATTR, max_pzs, 584, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_message_size, 592, 8);
    CHECK_FIELD(DAT_IA_ATTR, max_rdma_size, 600, 8);
    CHECK_FIELD(DAT_IA_ATTR, max_rmrs, 608, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_rmr_target_address, 616, 8);
    CHECK_FIELD(DAT_IA_ATTR, max_srqs, 624, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_ep_per_srq, 628, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_recv_per_srq, 632, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_iov_segments_per_rdma_read, 636, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_iov_segments_per_rdma_write, 640, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_rdma_read_in, 644, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_rdma_read_out, 648, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_rdma_read_per_ep_in_guaranteed, 652, 4);
    CHECK_FIELD(DAT_IA_ATTR, max_rdma_read_per_ep_out_guaranteed, 656, 4);
    CHECK_FIELD(DAT_IA_ATTR, num_transport_attr, 660, 4);
    CHECK_FIELD(DAT_IA_ATTR, transport_attr, 664, 8);
    CHECK_FIELD(DAT_IA_ATTR, num_vendor_attr, 672, 4);
    CHECK_FIELD(DAT_IA_ATTR, vendor_attr, 680, 8);
}

/* Provider attributes. */
TEST(ABI_22_provider_attr)
{
    /* DAT_PROVIDER_ATTR (struct dat_provider_attr) */
    CHECK(ABI_SAME_TYPE(DAT_PROVIDER_ATTR, struct dat_provider_attr));
    CHECK(sizeof(DAT_PROVIDER_ATTR) == 504);
    CHECK(ABI_ALIGNOF(DAT_PROVIDER_ATTR) == 8);
    CHECK_FIELD(DAT_PROVIDER_ATTR, provider_name, 0, 256);
    CHECK_FIELD(DAT_PROVIDER_ATTR, provider_version_major, 256, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, provider_version_minor, 260, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, dapl_version_major, 264, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, dapl_version_minor, 268, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, lmr_mem_types_supported, 272, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, iov_ownership_on_return, 276, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, dat_qos_supported, 280, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, completion_flags_supported, 284, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, is_thread_safe, 288, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, max_private_data_size, 292, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, supports_multipath, 296, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, ep_creator, 300, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, pz_support, 304, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, optimal_buffer_alignment, 308, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, evd_stream_merging_supported, 312, 144);
    CHECK_FIELD(DAT_PROVIDER_ATTR, srq_supported, 456, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, srq_watermarks_supported, 460, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, srq_ep_pz_difference_supported, 464, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, srq_info_supported, 468, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, ep_recv_info_supported, 472, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, lmr_sync_req, 476, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, dto_async_return_guaranteed, 480, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, rdma_write_for_rdma_read_req, 484, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, num_provider_specific_attr, 488, 4);
    CHECK_FIELD(DAT_PROVIDER_ATTR, provider_specific_attr, 496, 8);
    /* The 6x6 merging matrix, row-major. */
    CHECK(sizeof(((DAT_PROVIDER_ATTR *)0)->evd_stream_merging_supported[0]) == 24);
    CHECK(offsetof(DAT_PROVIDER_ATTR, evd_stream_merging_supported[1][0]) == 336);
    CHECK(offsetof(DAT_PROVIDER_ATTR, evd_stream_merging_supported[5][5]) == 452);
}

/* EP attributes and parameters. */
TEST(ABI_23_ep)
{
    /* DAT_EP_ATTR (struct dat_ep_attr) */
    CHECK(ABI_SAME_TYPE(DAT_EP_ATTR, struct dat_ep_attr));
    CHECK(sizeof(DAT_EP_ATTR) == 104);
    CHECK(ABI_ALIGNOF(DAT_EP_ATTR) == 8);
    CHECK_FIELD(DAT_EP_ATTR, service_type, 0, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_message_size, 8, 8);
    CHECK_FIELD(DAT_EP_ATTR, max_rdma_size, 16, 8);
    CHECK_FIELD(DAT_EP_ATTR, qos, 24, 4);
    CHECK_FIELD(DAT_EP_ATTR, recv_completion_flags, 28, 4);
    CHECK_FIELD(DAT_EP_ATTR, request_completion_flags, 32, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_recv_dtos, 36, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_request_dtos, 40, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_recv_iov, 44, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_request_iov, 48, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_rdma_read_in, 52, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_rdma_read_out, 56, 4);
    CHECK_FIELD(DAT_EP_ATTR, srq_soft_hw, 60, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_rdma_read_iov, 64, 4);
    CHECK_FIELD(DAT_EP_ATTR, max_rdma_write_iov, 68, 4);
    CHECK_FIELD(DAT_EP_ATTR, ep_transport_specific_count, 72, 4);
    CHECK_FIELD(DAT_EP_ATTR, ep_transport_specific, 80, 8);
    CHECK_FIELD(DAT_EP_ATTR, ep_provider_specific_count, 88, 4);
    CHECK_FIELD(DAT_EP_ATTR, ep_provider_specific, 96, 8);
    /* DAT_EP_PARAM (struct dat_ep_param) */
    CHECK(ABI_SAME_TYPE(DAT_EP_PARAM, struct dat_ep_param));
    CHECK(sizeof(DAT_EP_PARAM) == 192);
    CHECK(ABI_ALIGNOF(DAT_EP_PARAM) == 8);
    CHECK_FIELD(DAT_EP_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_EP_PARAM, ep_state, 8, 4);
    CHECK_FIELD(DAT_EP_PARAM, local_ia_address_ptr, 16, 8);
    CHECK_FIELD(DAT_EP_PARAM, local_port_qual, 24, 8);
    CHECK_FIELD(DAT_EP_PARAM, remote_ia_address_ptr, 32, 8);
    CHECK_FIELD(DAT_EP_PARAM, remote_port_qual, 40, 8);
    CHECK_FIELD(DAT_EP_PARAM, pz_handle, 48, 8);
    CHECK_FIELD(DAT_EP_PARAM, recv_evd_handle, 56, 8);
    CHECK_FIELD(DAT_EP_PARAM, request_evd_handle, 64, 8);
    CHECK_FIELD(DAT_EP_PARAM, connect_evd_handle, 72, 8);
    CHECK_FIELD(DAT_EP_PARAM, srq_handle, 80, 8);
    CHECK_FIELD(DAT_EP_PARAM, ep_attr, 88, 104);
}

/* uDAPL parameter structs: EVD, LMR, shared memory, CNO. */
TEST(ABI_24_udat_params)
{
    /* DAT_EVD_PARAM (struct dat_evd_param) */
    CHECK(ABI_SAME_TYPE(DAT_EVD_PARAM, struct dat_evd_param));
    CHECK(sizeof(DAT_EVD_PARAM) == 32);
    CHECK(ABI_ALIGNOF(DAT_EVD_PARAM) == 8);
    CHECK_FIELD(DAT_EVD_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_EVD_PARAM, evd_qlen, 8, 4);
    CHECK_FIELD(DAT_EVD_PARAM, evd_state, 12, 4);
    CHECK_FIELD(DAT_EVD_PARAM, cno_handle, 16, 8);
    CHECK_FIELD(DAT_EVD_PARAM, evd_flags, 24, 4);
    /* DAT_LMR_PARAM (struct dat_lmr_param) */
    CHECK(ABI_SAME_TYPE(DAT_LMR_PARAM, struct dat_lmr_param));
    CHECK(sizeof(DAT_LMR_PARAM) == 80);
    CHECK(ABI_ALIGNOF(DAT_LMR_PARAM) == 8);
    CHECK_FIELD(DAT_LMR_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_LMR_PARAM, mem_type, 8, 4);
    CHECK_FIELD(DAT_LMR_PARAM, region_desc, 16, 16);
    CHECK_FIELD(DAT_LMR_PARAM, length, 32, 8);
    CHECK_FIELD(DAT_LMR_PARAM, pz_handle, 40, 8);
    CHECK_FIELD(DAT_LMR_PARAM, mem_priv, 48, 4);
    CHECK_FIELD(DAT_LMR_PARAM, lmr_context, 52, 4);
    CHECK_FIELD(DAT_LMR_PARAM, rmr_context, 56, 4);
    CHECK_FIELD(DAT_LMR_PARAM, registered_size, 64, 8);
    CHECK_FIELD(DAT_LMR_PARAM, registered_address, 72, 8);
    /* DAT_SHARED_MEMORY (struct dat_shared_memory) */
    CHECK(ABI_SAME_TYPE(DAT_SHARED_MEMORY, struct dat_shared_memory));
    CHECK(sizeof(DAT_SHARED_MEMORY) == 16);
    CHECK(ABI_ALIGNOF(DAT_SHARED_MEMORY) == 8);
    CHECK_FIELD(DAT_SHARED_MEMORY, virtual_address, 0, 8);
    CHECK_FIELD(DAT_SHARED_MEMORY, shared_memory_id, 8, 8);
    /* DAT_REGION_DESCRIPTION (union dat_region_description) */
    CHECK(ABI_SAME_TYPE(DAT_REGION_DESCRIPTION, union dat_region_description));
    CHECK(sizeof(DAT_REGION_DESCRIPTION) == 16);
    CHECK(ABI_ALIGNOF(DAT_REGION_DESCRIPTION) == 8);
    CHECK_FIELD(DAT_REGION_DESCRIPTION, for_va, 0, 8);
    CHECK_FIELD(DAT_REGION_DESCRIPTION, for_lmr_handle, 0, 8);
    CHECK_FIELD(DAT_REGION_DESCRIPTION, for_shared_memory, 0, 16);
    /* DAT_OS_WAIT_PROXY_AGENT (struct dat_os_wait_proxy_agent) */
    CHECK(ABI_SAME_TYPE(DAT_OS_WAIT_PROXY_AGENT, struct dat_os_wait_proxy_agent));
    CHECK(sizeof(DAT_OS_WAIT_PROXY_AGENT) == 16);
    CHECK(ABI_ALIGNOF(DAT_OS_WAIT_PROXY_AGENT) == 8);
    CHECK_FIELD(DAT_OS_WAIT_PROXY_AGENT, instance_data, 0, 8);
    CHECK_FIELD(DAT_OS_WAIT_PROXY_AGENT, proxy_agent_func, 8, 8);
    /* DAT_CNO_PARAM (struct dat_cno_param) */
    CHECK(ABI_SAME_TYPE(DAT_CNO_PARAM, struct dat_cno_param));
    CHECK(sizeof(DAT_CNO_PARAM) == 24);
    CHECK(ABI_ALIGNOF(DAT_CNO_PARAM) == 8);
    CHECK_FIELD(DAT_CNO_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_CNO_PARAM, agent, 8, 16);
}

/* SRQ, PZ, PSP, RSP and CR parameters. */
TEST(ABI_25_params)
{
    /* DAT_SRQ_ATTR (struct dat_srq_attr) */
    CHECK(ABI_SAME_TYPE(DAT_SRQ_ATTR, struct dat_srq_attr));
    CHECK(sizeof(DAT_SRQ_ATTR) == 12);
    CHECK(ABI_ALIGNOF(DAT_SRQ_ATTR) == 4);
    CHECK_FIELD(DAT_SRQ_ATTR, max_recv_dtos, 0, 4);
    CHECK_FIELD(DAT_SRQ_ATTR, max_recv_iov, 4, 4);
    CHECK_FIELD(DAT_SRQ_ATTR, low_watermark, 8, 4);
    /* DAT_SRQ_PARAM (struct dat_srq_param) */
    CHECK(ABI_SAME_TYPE(DAT_SRQ_PARAM, struct dat_srq_param));
    CHECK(sizeof(DAT_SRQ_PARAM) == 48);
    CHECK(ABI_ALIGNOF(DAT_SRQ_PARAM) == 8);
    CHECK_FIELD(DAT_SRQ_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_SRQ_PARAM, srq_state, 8, 4);
    CHECK_FIELD(DAT_SRQ_PARAM, pz_handle, 16, 8);
    CHECK_FIELD(DAT_SRQ_PARAM, max_recv_dtos, 24, 4);
    CHECK_FIELD(DAT_SRQ_PARAM, max_recv_iov, 28, 4);
    CHECK_FIELD(DAT_SRQ_PARAM, low_watermark, 32, 4);
    CHECK_FIELD(DAT_SRQ_PARAM, available_dto_count, 36, 4);
    CHECK_FIELD(DAT_SRQ_PARAM, outstanding_dto_count, 40, 4);
    /* DAT_PZ_PARAM (struct dat_pz_param) */
    CHECK(ABI_SAME_TYPE(DAT_PZ_PARAM, struct dat_pz_param));
    CHECK(sizeof(DAT_PZ_PARAM) == 8);
    CHECK(ABI_ALIGNOF(DAT_PZ_PARAM) == 8);
    CHECK_FIELD(DAT_PZ_PARAM, ia_handle, 0, 8);
    /* DAT_PSP_PARAM (struct dat_psp_param) */
    CHECK(ABI_SAME_TYPE(DAT_PSP_PARAM, struct dat_psp_param));
    CHECK(sizeof(DAT_PSP_PARAM) == 32);
    CHECK(ABI_ALIGNOF(DAT_PSP_PARAM) == 8);
    CHECK_FIELD(DAT_PSP_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_PSP_PARAM, conn_qual, 8, 8);
    CHECK_FIELD(DAT_PSP_PARAM, evd_handle, 16, 8);
    CHECK_FIELD(DAT_PSP_PARAM, psp_flags, 24, 4);
    /* DAT_RSP_PARAM (struct dat_rsp_param) */
    CHECK(ABI_SAME_TYPE(DAT_RSP_PARAM, struct dat_rsp_param));
    CHECK(sizeof(DAT_RSP_PARAM) == 32);
    CHECK(ABI_ALIGNOF(DAT_RSP_PARAM) == 8);
    CHECK_FIELD(DAT_RSP_PARAM, ia_handle, 0, 8);
    CHECK_FIELD(DAT_RSP_PARAM, conn_qual, 8, 8);
    CHECK_FIELD(DAT_RSP_PARAM, evd_handle, 16, 8);
    CHECK_FIELD(DAT_RSP_PARAM, ep_handle, 24, 8);
    /* DAT_CR_PARAM (struct dat_cr_param) */
    CHECK(ABI_SAME_TYPE(DAT_CR_PARAM, struct dat_cr_param));
    CHECK(sizeof(DAT_CR_PARAM) == 40);
    CHECK(ABI_ALIGNOF(DAT_CR_PARAM) == 8);
    CHECK_FIELD(DAT_CR_PARAM, remote_ia_address_ptr, 0, 8);
    CHECK_FIELD(DAT_CR_PARAM, remote_port_qual, 8, 8);
    CHECK_FIELD(DAT_CR_PARAM, private_data_size, 16, 4);
    CHECK_FIELD(DAT_CR_PARAM, private_data, 24, 8);
    CHECK_FIELD(DAT_CR_PARAM, local_ep_handle, 32, 8);
}

/* Registry key of an IA. */
TEST(ABI_26_provider_info)
{
    /* DAT_PROVIDER_INFO (struct dat_provider_info) */
    CHECK(ABI_SAME_TYPE(DAT_PROVIDER_INFO, struct dat_provider_info));
    CHECK(sizeof(DAT_PROVIDER_INFO) == 268);
    CHECK(ABI_ALIGNOF(DAT_PROVIDER_INFO) == 4);
    CHECK_FIELD(DAT_PROVIDER_INFO, ia_name, 0, 256);
    CHECK_FIELD(DAT_PROVIDER_INFO, dapl_version_major, 256, 4);
    CHECK_FIELD(DAT_PROVIDER_INFO, dapl_version_minor, 260, 4);
    CHECK_FIELD(DAT_PROVIDER_INFO, is_thread_safe, 264, 4);
}

/* Event data and the event. */
TEST(ABI_27_events)
{
    /* DAT_DTO_COMPLETION_EVENT_DATA (struct dat_dto_completion_event_data) */
    CHECK(ABI_SAME_TYPE(DAT_DTO_COMPLETION_EVENT_DATA, struct dat_dto_completion_event_data));
    CHECK(sizeof(DAT_DTO_COMPLETION_EVENT_DATA) == 32);
    CHECK(ABI_ALIGNOF(DAT_DTO_COMPLETION_EVENT_DATA) == 8);
    CHECK_FIELD(DAT_DTO_COMPLETION_EVENT_DATA, ep_handle, 0, 8);
    CHECK_FIELD(DAT_DTO_COMPLETION_EVENT_DATA, user_cookie, 8, 8);
    CHECK_FIELD(DAT_DTO_COMPLETION_EVENT_DATA, status, 16, 4);
    CHECK_FIELD(DAT_DTO_COMPLETION_EVENT_DATA, transfered_length, 24, 8);
    /* DAT_RMR_BIND_COMPLETION_EVENT_DATA (struct dat_rmr_bind_completion_event_data) */
    CHECK(ABI_SAME_TYPE(DAT_RMR_BIND_COMPLETION_EVENT_DATA, struct dat_rmr_bind_completion_event_data));
    CHECK(sizeof(DAT_RMR_BIND_COMPLETION_EVENT_DATA) == 24);
    CHECK(ABI_ALIGNOF(DAT_RMR_BIND_COMPLETION_EVENT_DATA) == 8);
    CHECK_FIELD(DAT_RMR_BIND_COMPLETION_EVENT_DATA, rmr_handle, 0, 8);
    CHECK_FIELD(DAT_RMR_BIND_COMPLETION_EVENT_DATA, user_cookie, 8, 8);
    CHECK_FIELD(DAT_RMR_BIND_COMPLETION_EVENT_DATA, status, 16, 4);
    /* DAT_SP_HANDLE (union dat_sp_handle) */
    CHECK(ABI_SAME_TYPE(DAT_SP_HANDLE, union dat_sp_handle));
    CHECK(sizeof(DAT_SP_HANDLE) == 8);
    CHECK(ABI_ALIGNOF(DAT_SP_HANDLE) == 8);
    CHECK_FIELD(DAT_SP_HANDLE, rsp_handle, 0, 8);
    CHECK_FIELD(DAT_SP_HANDLE, psp_handle, 0, 8);
    /* DAT_CR_ARRIVAL_EVENT_DATA (struct dat_cr_arrival_event_data) */
    CHECK(ABI_SAME_TYPE(DAT_CR_ARRIVAL_EVENT_DATA, struct dat_cr_arrival_event_data));
    CHECK(sizeof(DAT_CR_ARRIVAL_EVENT_DATA) == 32);
    CHECK(ABI_ALIGNOF(DAT_CR_ARRIVAL_EVENT_DATA) == 8);
    CHECK_FIELD(DAT_CR_ARRIVAL_EVENT_DATA, sp_handle, 0, 8);
    CHECK_FIELD(DAT_CR_ARRIVAL_EVENT_DATA, local_ia_address_ptr, 8, 8);
    CHECK_FIELD(DAT_CR_ARRIVAL_EVENT_DATA, conn_qual, 16, 8);
    CHECK_FIELD(DAT_CR_ARRIVAL_EVENT_DATA, cr_handle, 24, 8);
    /* DAT_CONNECTION_EVENT_DATA (struct dat_connection_event_data) */
    CHECK(ABI_SAME_TYPE(DAT_CONNECTION_EVENT_DATA, struct dat_connection_event_data));
    CHECK(sizeof(DAT_CONNECTION_EVENT_DATA) == 24);
    CHECK(ABI_ALIGNOF(DAT_CONNECTION_EVENT_DATA) == 8);
    CHECK_FIELD(DAT_CONNECTION_EVENT_DATA, ep_handle, 0, 8);
    CHECK_FIELD(DAT_CONNECTION_EVENT_DATA, private_data_size, 8, 4);
    CHECK_FIELD(DAT_CONNECTION_EVENT_DATA, private_data, 16, 8);
    /* DAT_ASYNCH_ERROR_EVENT_DATA (struct dat_asynch_error_event_data) */
    CHECK(ABI_SAME_TYPE(DAT_ASYNCH_ERROR_EVENT_DATA, struct dat_asynch_error_event_data));
    CHECK(sizeof(DAT_ASYNCH_ERROR_EVENT_DATA) == 16);
    CHECK(ABI_ALIGNOF(DAT_ASYNCH_ERROR_EVENT_DATA) == 8);
    CHECK_FIELD(DAT_ASYNCH_ERROR_EVENT_DATA, dat_handle, 0, 8);
    CHECK_FIELD(DAT_ASYNCH_ERROR_EVENT_DATA, reason, 8, 4);
    /* DAT_SOFTWARE_EVENT_DATA (struct dat_software_event_data) */
    CHECK(ABI_SAME_TYPE(DAT_SOFTWARE_EVENT_DATA, struct dat_software_event_data));
    CHECK(sizeof(DAT_SOFTWARE_EVENT_DATA) == 8);
    CHECK(ABI_ALIGNOF(DAT_SOFTWARE_EVENT_DATA) == 8);
    CHECK_FIELD(DAT_SOFTWARE_EVENT_DATA, pointer, 0, 8);
    /* DAT_EVENT_DATA (union dat_event_data) */
    CHECK(ABI_SAME_TYPE(DAT_EVENT_DATA, union dat_event_data));
    CHECK(sizeof(DAT_EVENT_DATA) == 32);
    CHECK(ABI_ALIGNOF(DAT_EVENT_DATA) == 8);
    CHECK_FIELD(DAT_EVENT_DATA, dto_completion_event_data, 0, 32);
    CHECK_FIELD(DAT_EVENT_DATA, rmr_completion_event_data, 0, 24);
    CHECK_FIELD(DAT_EVENT_DATA, cr_arrival_event_data, 0, 32);
    CHECK_FIELD(DAT_EVENT_DATA, connect_event_data, 0, 24);
    CHECK_FIELD(DAT_EVENT_DATA, asynch_error_event_data, 0, 16);
    CHECK_FIELD(DAT_EVENT_DATA, software_event_data, 0, 8);
    /* DAT_EVENT (struct dat_event) */
    CHECK(ABI_SAME_TYPE(DAT_EVENT, struct dat_event));
    CHECK(sizeof(DAT_EVENT) == 48);
    CHECK(ABI_ALIGNOF(DAT_EVENT) == 8);
    CHECK_FIELD(DAT_EVENT, event_number, 0, 4);
    CHECK_FIELD(DAT_EVENT, evd_handle, 8, 8);
    CHECK_FIELD(DAT_EVENT, event_data, 16, 32);
}

/* Absolute offsets inside DAT_EVENT, per event class. */
TEST(ABI_28_event_byte_map)
{
    CHECK(offsetof(DAT_EVENT, event_data.dto_completion_event_data.ep_handle) == 16);
    CHECK(offsetof(DAT_EVENT, event_data.dto_completion_event_data.user_cookie) == 24);
    CHECK(offsetof(DAT_EVENT, event_data.dto_completion_event_data.status) == 32);
    CHECK(offsetof(DAT_EVENT, event_data.dto_completion_event_data.transfered_length) == 40);
    CHECK(offsetof(DAT_EVENT, event_data.rmr_completion_event_data.rmr_handle) == 16);
    CHECK(offsetof(DAT_EVENT, event_data.rmr_completion_event_data.user_cookie) == 24);
    CHECK(offsetof(DAT_EVENT, event_data.rmr_completion_event_data.status) == 32);
    CHECK(offsetof(DAT_EVENT, event_data.cr_arrival_event_data.sp_handle) == 16);
    CHECK(offsetof(DAT_EVENT, event_data.cr_arrival_event_data.local_ia_address_ptr) == 24);
    CHECK(offsetof(DAT_EVENT, event_data.cr_arrival_event_data.conn_qual) == 32);
    CHECK(offsetof(DAT_EVENT, event_data.cr_arrival_event_data.cr_handle) == 40);
    CHECK(offsetof(DAT_EVENT, event_data.connect_event_data.ep_handle) == 16);
    CHECK(offsetof(DAT_EVENT, event_data.connect_event_data.private_data_size) == 24);
    CHECK(offsetof(DAT_EVENT, event_data.connect_event_data.private_data) == 32);
    CHECK(offsetof(DAT_EVENT, event_data.asynch_error_event_data.dat_handle) == 16);
    CHECK(offsetof(DAT_EVENT, event_data.asynch_error_event_data.reason) == 24);
    CHECK(offsetof(DAT_EVENT, event_data.software_event_data.pointer) == 16);
}

/* DAT_PROVIDER (struct dat_provider): 70 pointer-sized members, in order. */
TEST(ABI_29_provider_table)
{
    CHECK(ABI_SAME_TYPE(DAT_PROVIDER, struct dat_provider));
    CHECK(sizeof(DAT_PROVIDER) == 560);
    CHECK(ABI_ALIGNOF(DAT_PROVIDER) == 8);
    CHECK_FIELD(DAT_PROVIDER, device_name, 0, 8);
    CHECK_FIELD(DAT_PROVIDER, extension, 8, 8);
    CHECK_FIELD(DAT_PROVIDER, ia_open_func, 16, 8);
    CHECK_FIELD(DAT_PROVIDER, ia_query_func, 24, 8);
    CHECK_FIELD(DAT_PROVIDER, ia_close_func, 32, 8);
    CHECK_FIELD(DAT_PROVIDER, set_consumer_context_func, 40, 8);
    CHECK_FIELD(DAT_PROVIDER, get_consumer_context_func, 48, 8);
    CHECK_FIELD(DAT_PROVIDER, get_handle_type_func, 56, 8);
    CHECK_FIELD(DAT_PROVIDER, cno_create_func, 64, 8);
    CHECK_FIELD(DAT_PROVIDER, cno_modify_agent_func, 72, 8);
    CHECK_FIELD(DAT_PROVIDER, cno_query_func, 80, 8);
    CHECK_FIELD(DAT_PROVIDER, cno_free_func, 88, 8);
    CHECK_FIELD(DAT_PROVIDER, cno_wait_func, 96, 8);
    CHECK_FIELD(DAT_PROVIDER, cr_query_func, 104, 8);
    CHECK_FIELD(DAT_PROVIDER, cr_accept_func, 112, 8);
    CHECK_FIELD(DAT_PROVIDER, cr_reject_func, 120, 8);
    CHECK_FIELD(DAT_PROVIDER, cr_handoff_func, 128, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_create_func, 136, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_query_func, 144, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_modify_cno_func, 152, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_enable_func, 160, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_disable_func, 168, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_wait_func, 176, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_resize_func, 184, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_post_se_func, 192, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_dequeue_func, 200, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_free_func, 208, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_create_func, 216, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_query_func, 224, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_modify_func, 232, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_connect_func, 240, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_dup_connect_func, 248, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_disconnect_func, 256, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_post_send_func, 264, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_post_recv_func, 272, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_post_rdma_read_func, 280, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_post_rdma_write_func, 288, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_get_status_func, 296, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_free_func, 304, 8);
    CHECK_FIELD(DAT_PROVIDER, lmr_create_func, 312, 8);
    CHECK_FIELD(DAT_PROVIDER, lmr_query_func, 320, 8);
    CHECK_FIELD(DAT_PROVIDER, lmr_free_func, 328, 8);
    CHECK_FIELD(DAT_PROVIDER, rmr_create_func, 336, 8);
    CHECK_FIELD(DAT_PROVIDER, rmr_query_func, 344, 8);
    CHECK_FIELD(DAT_PROVIDER, rmr_bind_func, 352, 8);
    CHECK_FIELD(DAT_PROVIDER, rmr_free_func, 360, 8);
    CHECK_FIELD(DAT_PROVIDER, psp_create_func, 368, 8);
    CHECK_FIELD(DAT_PROVIDER, psp_query_func, 376, 8);
    CHECK_FIELD(DAT_PROVIDER, psp_free_func, 384, 8);
    CHECK_FIELD(DAT_PROVIDER, rsp_create_func, 392, 8);
    CHECK_FIELD(DAT_PROVIDER, rsp_query_func, 400, 8);
    CHECK_FIELD(DAT_PROVIDER, rsp_free_func, 408, 8);
    CHECK_FIELD(DAT_PROVIDER, pz_create_func, 416, 8);
    CHECK_FIELD(DAT_PROVIDER, pz_query_func, 424, 8);
    CHECK_FIELD(DAT_PROVIDER, pz_free_func, 432, 8);
    CHECK_FIELD(DAT_PROVIDER, psp_create_any_func, 440, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_reset_func, 448, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_set_unwaitable_func, 456, 8);
    CHECK_FIELD(DAT_PROVIDER, evd_clear_unwaitable_func, 464, 8);
    CHECK_FIELD(DAT_PROVIDER, lmr_sync_rdma_read_func, 472, 8);
    CHECK_FIELD(DAT_PROVIDER, lmr_sync_rdma_write_func, 480, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_create_with_srq_func, 488, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_recv_query_func, 496, 8);
    CHECK_FIELD(DAT_PROVIDER, ep_set_watermark_func, 504, 8);
    CHECK_FIELD(DAT_PROVIDER, srq_create_func, 512, 8);
    CHECK_FIELD(DAT_PROVIDER, srq_free_func, 520, 8);
    CHECK_FIELD(DAT_PROVIDER, srq_post_recv_func, 528, 8);
    CHECK_FIELD(DAT_PROVIDER, srq_query_func, 536, 8);
    CHECK_FIELD(DAT_PROVIDER, srq_resize_func, 544, 8);
    CHECK_FIELD(DAT_PROVIDER, srq_set_lw_func, 552, 8);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
