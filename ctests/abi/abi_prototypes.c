/*
 * ABI conformance: the prototypes of the 72 exported functions.
 *
 * Each function is assigned to a function pointer whose type is written out
 * here exactly as in the DAT 1.2 prototypes (abi-functions.md section 2),
 * spelled with the DAT typedefs. A prototype in <dat/udat.h> that differs
 * in any parameter or in the return type makes the assignment an
 * incompatible-pointer-type diagnostic, which -Werror turns into a build
 * failure: that is the main check. The test cases then only confirm that
 * the pointers are set and that the library exports every name.
 *
 * It also checks that each DAT_PROVIDER slot has the type of its consumer
 * function.
 */
#include "ctest.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* IA (3) and the generic handle helpers: the exact 1.2 prototypes. */
TEST(ABI_30_prototypes_ia)
{
    DAT_RETURN (*p_ia_openv)(const DAT_NAME_PTR name,
        DAT_COUNT async_evd_qlen, DAT_EVD_HANDLE *async_evd_handle,
        DAT_IA_HANDLE *ia_handle, DAT_UINT32 dapl_major,
        DAT_UINT32 dapl_minor, DAT_BOOLEAN thread_safety) = dat_ia_openv;
    DAT_RETURN (*p_ia_query)(DAT_IA_HANDLE ia_handle,
        DAT_EVD_HANDLE *async_evd_handle, DAT_IA_ATTR_MASK ia_attr_mask,
        DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK provider_attr_mask,
        DAT_PROVIDER_ATTR *provider_attr) = dat_ia_query;
    DAT_RETURN (*p_ia_close)(DAT_IA_HANDLE ia_handle,
        DAT_CLOSE_FLAGS close_flags) = dat_ia_close;
    DAT_RETURN (*p_set_consumer_context)(DAT_HANDLE dat_handle,
        DAT_CONTEXT context) = dat_set_consumer_context;
    DAT_RETURN (*p_get_consumer_context)(DAT_HANDLE dat_handle,
        DAT_CONTEXT *context) = dat_get_consumer_context;
    DAT_RETURN (*p_get_handle_type)(DAT_HANDLE dat_handle,
        DAT_HANDLE_TYPE *handle_type) = dat_get_handle_type;

    CHECK(p_ia_openv != NULL);
    CHECK(p_ia_query != NULL);
    CHECK(p_ia_close != NULL);
    CHECK(p_set_consumer_context != NULL);
    CHECK(p_get_consumer_context != NULL);
    CHECK(p_get_handle_type != NULL);
}

/* PZ (3): the exact 1.2 prototypes. */
TEST(ABI_31_prototypes_pz)
{
    DAT_RETURN (*p_pz_create)(DAT_IA_HANDLE ia_handle,
        DAT_PZ_HANDLE *pz_handle) = dat_pz_create;
    DAT_RETURN (*p_pz_query)(DAT_PZ_HANDLE pz_handle,
        DAT_PZ_PARAM_MASK pz_param_mask, DAT_PZ_PARAM *pz_param)
        = dat_pz_query;
    DAT_RETURN (*p_pz_free)(DAT_PZ_HANDLE pz_handle) = dat_pz_free;

    CHECK(p_pz_create != NULL);
    CHECK(p_pz_query != NULL);
    CHECK(p_pz_free != NULL);
}

/* EVD (12): the exact 1.2 prototypes. */
TEST(ABI_32_prototypes_evd)
{
    DAT_RETURN (*p_evd_create)(DAT_IA_HANDLE ia_handle,
        DAT_COUNT evd_min_qlen, DAT_CNO_HANDLE cno_handle,
        DAT_EVD_FLAGS evd_flags, DAT_EVD_HANDLE *evd_handle) = dat_evd_create;
    DAT_RETURN (*p_evd_query)(DAT_EVD_HANDLE evd_handle,
        DAT_EVD_PARAM_MASK evd_param_mask, DAT_EVD_PARAM *evd_param)
        = dat_evd_query;
    DAT_RETURN (*p_evd_modify_cno)(DAT_EVD_HANDLE evd_handle,
        DAT_CNO_HANDLE cno_handle) = dat_evd_modify_cno;
    DAT_RETURN (*p_evd_enable)(DAT_EVD_HANDLE evd_handle) = dat_evd_enable;
    DAT_RETURN (*p_evd_disable)(DAT_EVD_HANDLE evd_handle) = dat_evd_disable;
    DAT_RETURN (*p_evd_wait)(DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout,
        DAT_COUNT threshold, DAT_EVENT *event, DAT_COUNT *nmore)
        = dat_evd_wait;
    DAT_RETURN (*p_evd_resize)(DAT_EVD_HANDLE evd_handle,
        DAT_COUNT evd_min_qlen) = dat_evd_resize;
    DAT_RETURN (*p_evd_post_se)(DAT_EVD_HANDLE evd_handle,
        const DAT_EVENT *event) = dat_evd_post_se;
    DAT_RETURN (*p_evd_dequeue)(DAT_EVD_HANDLE evd_handle, DAT_EVENT *event)
        = dat_evd_dequeue;
    DAT_RETURN (*p_evd_free)(DAT_EVD_HANDLE evd_handle) = dat_evd_free;
    DAT_RETURN (*p_evd_set_unwaitable)(DAT_EVD_HANDLE evd_handle)
        = dat_evd_set_unwaitable;
    DAT_RETURN (*p_evd_clear_unwaitable)(DAT_EVD_HANDLE evd_handle)
        = dat_evd_clear_unwaitable;

    CHECK(p_evd_create != NULL);
    CHECK(p_evd_query != NULL);
    CHECK(p_evd_modify_cno != NULL);
    CHECK(p_evd_enable != NULL);
    CHECK(p_evd_disable != NULL);
    CHECK(p_evd_wait != NULL);
    CHECK(p_evd_resize != NULL);
    CHECK(p_evd_post_se != NULL);
    CHECK(p_evd_dequeue != NULL);
    CHECK(p_evd_free != NULL);
    CHECK(p_evd_set_unwaitable != NULL);
    CHECK(p_evd_clear_unwaitable != NULL);
}

/* CNO (5): the exact 1.2 prototypes. */
TEST(ABI_33_prototypes_cno)
{
    DAT_RETURN (*p_cno_create)(DAT_IA_HANDLE ia_handle,
        DAT_OS_WAIT_PROXY_AGENT agent, DAT_CNO_HANDLE *cno_handle)
        = dat_cno_create;
    DAT_RETURN (*p_cno_modify_agent)(DAT_CNO_HANDLE cno_handle,
        DAT_OS_WAIT_PROXY_AGENT agent) = dat_cno_modify_agent;
    DAT_RETURN (*p_cno_query)(DAT_CNO_HANDLE cno_handle,
        DAT_CNO_PARAM_MASK cno_param_mask, DAT_CNO_PARAM *cno_param)
        = dat_cno_query;
    DAT_RETURN (*p_cno_free)(DAT_CNO_HANDLE cno_handle) = dat_cno_free;
    DAT_RETURN (*p_cno_wait)(DAT_CNO_HANDLE cno_handle, DAT_TIMEOUT timeout,
        DAT_EVD_HANDLE *evd_handle) = dat_cno_wait;

    CHECK(p_cno_create != NULL);
    CHECK(p_cno_modify_agent != NULL);
    CHECK(p_cno_query != NULL);
    CHECK(p_cno_free != NULL);
    CHECK(p_cno_wait != NULL);
}

/* EP (16): the exact 1.2 prototypes. */
TEST(ABI_34_prototypes_ep)
{
    DAT_RETURN (*p_ep_create)(DAT_IA_HANDLE ia_handle,
        DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd_handle,
        DAT_EVD_HANDLE request_evd_handle, DAT_EVD_HANDLE connect_evd_handle,
        const DAT_EP_ATTR *ep_attributes, DAT_EP_HANDLE *ep_handle)
        = dat_ep_create;
    DAT_RETURN (*p_ep_create_with_srq)(DAT_IA_HANDLE ia_handle,
        DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd_handle,
        DAT_EVD_HANDLE request_evd_handle, DAT_EVD_HANDLE connect_evd_handle,
        DAT_SRQ_HANDLE srq_handle, const DAT_EP_ATTR *ep_attributes,
        DAT_EP_HANDLE *ep_handle) = dat_ep_create_with_srq;
    DAT_RETURN (*p_ep_query)(DAT_EP_HANDLE ep_handle,
        DAT_EP_PARAM_MASK ep_param_mask, DAT_EP_PARAM *ep_param)
        = dat_ep_query;
    DAT_RETURN (*p_ep_modify)(DAT_EP_HANDLE ep_handle,
        DAT_EP_PARAM_MASK ep_param_mask, const DAT_EP_PARAM *ep_param)
        = dat_ep_modify;
    DAT_RETURN (*p_ep_connect)(DAT_EP_HANDLE ep_handle,
        DAT_IA_ADDRESS_PTR remote_ia_address, DAT_CONN_QUAL remote_conn_qual,
        DAT_TIMEOUT timeout, DAT_COUNT private_data_size,
        const DAT_PVOID private_data, DAT_QOS qos,
        DAT_CONNECT_FLAGS connect_flags) = dat_ep_connect;
    DAT_RETURN (*p_ep_dup_connect)(DAT_EP_HANDLE ep_handle,
        DAT_EP_HANDLE ep_dup_handle, DAT_TIMEOUT timeout,
        DAT_COUNT private_data_size, const DAT_PVOID private_data,
        DAT_QOS qos) = dat_ep_dup_connect;
    DAT_RETURN (*p_ep_disconnect)(DAT_EP_HANDLE ep_handle,
        DAT_CLOSE_FLAGS close_flags) = dat_ep_disconnect;
    DAT_RETURN (*p_ep_post_send)(DAT_EP_HANDLE ep_handle,
        DAT_COUNT num_segments, DAT_LMR_TRIPLET *local_iov,
        DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS completion_flags)
        = dat_ep_post_send;
    DAT_RETURN (*p_ep_post_recv)(DAT_EP_HANDLE ep_handle,
        DAT_COUNT num_segments, DAT_LMR_TRIPLET *local_iov,
        DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS completion_flags)
        = dat_ep_post_recv;
    DAT_RETURN (*p_ep_post_rdma_read)(DAT_EP_HANDLE ep_handle,
        DAT_COUNT num_segments, DAT_LMR_TRIPLET *local_iov,
        DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET *remote_iov,
        DAT_COMPLETION_FLAGS completion_flags) = dat_ep_post_rdma_read;
    DAT_RETURN (*p_ep_post_rdma_write)(DAT_EP_HANDLE ep_handle,
        DAT_COUNT num_segments, DAT_LMR_TRIPLET *local_iov,
        DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET *remote_iov,
        DAT_COMPLETION_FLAGS completion_flags) = dat_ep_post_rdma_write;
    DAT_RETURN (*p_ep_get_status)(DAT_EP_HANDLE ep_handle,
        DAT_EP_STATE *ep_state, DAT_BOOLEAN *recv_idle,
        DAT_BOOLEAN *request_idle) = dat_ep_get_status;
    DAT_RETURN (*p_ep_free)(DAT_EP_HANDLE ep_handle) = dat_ep_free;
    DAT_RETURN (*p_ep_reset)(DAT_EP_HANDLE ep_handle) = dat_ep_reset;
    DAT_RETURN (*p_ep_recv_query)(DAT_EP_HANDLE ep_handle,
        DAT_COUNT *nbufs_allocated, DAT_COUNT *bufs_alloc_span)
        = dat_ep_recv_query;
    DAT_RETURN (*p_ep_set_watermark)(DAT_EP_HANDLE ep_handle,
        DAT_COUNT soft_high_watermark, DAT_COUNT hard_high_watermark)
        = dat_ep_set_watermark;

    CHECK(p_ep_create != NULL);
    CHECK(p_ep_create_with_srq != NULL);
    CHECK(p_ep_query != NULL);
    CHECK(p_ep_modify != NULL);
    CHECK(p_ep_connect != NULL);
    CHECK(p_ep_dup_connect != NULL);
    CHECK(p_ep_disconnect != NULL);
    CHECK(p_ep_post_send != NULL);
    CHECK(p_ep_post_recv != NULL);
    CHECK(p_ep_post_rdma_read != NULL);
    CHECK(p_ep_post_rdma_write != NULL);
    CHECK(p_ep_get_status != NULL);
    CHECK(p_ep_free != NULL);
    CHECK(p_ep_reset != NULL);
    CHECK(p_ep_recv_query != NULL);
    CHECK(p_ep_set_watermark != NULL);
}

/* LMR (5): the exact 1.2 prototypes. */
TEST(ABI_35_prototypes_lmr)
{
    DAT_RETURN (*p_lmr_create)(DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type,
        DAT_REGION_DESCRIPTION region_description, DAT_VLEN length,
        DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privileges,
        DAT_LMR_HANDLE *lmr_handle, DAT_LMR_CONTEXT *lmr_context,
        DAT_RMR_CONTEXT *rmr_context, DAT_VLEN *registered_length,
        DAT_VADDR *registered_address) = dat_lmr_create;
    DAT_RETURN (*p_lmr_query)(DAT_LMR_HANDLE lmr_handle,
        DAT_LMR_PARAM_MASK lmr_param_mask, DAT_LMR_PARAM *lmr_param)
        = dat_lmr_query;
    DAT_RETURN (*p_lmr_free)(DAT_LMR_HANDLE lmr_handle) = dat_lmr_free;
    DAT_RETURN (*p_lmr_sync_rdma_read)(DAT_IA_HANDLE ia_handle,
        const DAT_LMR_TRIPLET *local_segments, DAT_VLEN num_segments)
        = dat_lmr_sync_rdma_read;
    DAT_RETURN (*p_lmr_sync_rdma_write)(DAT_IA_HANDLE ia_handle,
        const DAT_LMR_TRIPLET *local_segments, DAT_VLEN num_segments)
        = dat_lmr_sync_rdma_write;

    CHECK(p_lmr_create != NULL);
    CHECK(p_lmr_query != NULL);
    CHECK(p_lmr_free != NULL);
    CHECK(p_lmr_sync_rdma_read != NULL);
    CHECK(p_lmr_sync_rdma_write != NULL);
}

/* RMR (4): the exact 1.2 prototypes. */
TEST(ABI_36_prototypes_rmr)
{
    DAT_RETURN (*p_rmr_create)(DAT_PZ_HANDLE pz_handle,
        DAT_RMR_HANDLE *rmr_handle) = dat_rmr_create;
    DAT_RETURN (*p_rmr_query)(DAT_RMR_HANDLE rmr_handle,
        DAT_RMR_PARAM_MASK rmr_param_mask, DAT_RMR_PARAM *rmr_param)
        = dat_rmr_query;
    DAT_RETURN (*p_rmr_bind)(DAT_RMR_HANDLE rmr_handle,
        const DAT_LMR_TRIPLET *lmr_triplet, DAT_MEM_PRIV_FLAGS mem_priv,
        DAT_EP_HANDLE ep_handle, DAT_RMR_COOKIE user_cookie,
        DAT_COMPLETION_FLAGS completion_flags, DAT_RMR_CONTEXT *rmr_context)
        = dat_rmr_bind;
    DAT_RETURN (*p_rmr_free)(DAT_RMR_HANDLE rmr_handle) = dat_rmr_free;

    CHECK(p_rmr_create != NULL);
    CHECK(p_rmr_query != NULL);
    CHECK(p_rmr_bind != NULL);
    CHECK(p_rmr_free != NULL);
}

/* PSP (4): the exact 1.2 prototypes. */
TEST(ABI_37_prototypes_psp)
{
    DAT_RETURN (*p_psp_create)(DAT_IA_HANDLE ia_handle,
        DAT_CONN_QUAL conn_qual, DAT_EVD_HANDLE evd_handle,
        DAT_PSP_FLAGS psp_flags, DAT_PSP_HANDLE *psp_handle) = dat_psp_create;
    DAT_RETURN (*p_psp_create_any)(DAT_IA_HANDLE ia_handle,
        DAT_CONN_QUAL *conn_qual, DAT_EVD_HANDLE evd_handle,
        DAT_PSP_FLAGS psp_flags, DAT_PSP_HANDLE *psp_handle)
        = dat_psp_create_any;
    DAT_RETURN (*p_psp_query)(DAT_PSP_HANDLE psp_handle,
        DAT_PSP_PARAM_MASK psp_param_mask, DAT_PSP_PARAM *psp_param)
        = dat_psp_query;
    DAT_RETURN (*p_psp_free)(DAT_PSP_HANDLE psp_handle) = dat_psp_free;

    CHECK(p_psp_create != NULL);
    CHECK(p_psp_create_any != NULL);
    CHECK(p_psp_query != NULL);
    CHECK(p_psp_free != NULL);
}

/* RSP (3): the exact 1.2 prototypes. */
TEST(ABI_38_prototypes_rsp)
{
    DAT_RETURN (*p_rsp_create)(DAT_IA_HANDLE ia_handle,
        DAT_CONN_QUAL conn_qual, DAT_EP_HANDLE ep_handle,
        DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE *rsp_handle)
        = dat_rsp_create;
    DAT_RETURN (*p_rsp_query)(DAT_RSP_HANDLE rsp_handle,
        DAT_RSP_PARAM_MASK rsp_param_mask, DAT_RSP_PARAM *rsp_param)
        = dat_rsp_query;
    DAT_RETURN (*p_rsp_free)(DAT_RSP_HANDLE rsp_handle) = dat_rsp_free;

    CHECK(p_rsp_create != NULL);
    CHECK(p_rsp_query != NULL);
    CHECK(p_rsp_free != NULL);
}

/* CR (4): the exact 1.2 prototypes. */
TEST(ABI_39_prototypes_cr)
{
    DAT_RETURN (*p_cr_query)(DAT_CR_HANDLE cr_handle,
        DAT_CR_PARAM_MASK cr_param_mask, DAT_CR_PARAM *cr_param)
        = dat_cr_query;
    DAT_RETURN (*p_cr_accept)(DAT_CR_HANDLE cr_handle,
        DAT_EP_HANDLE ep_handle, DAT_COUNT private_data_size,
        const DAT_PVOID private_data) = dat_cr_accept;
    DAT_RETURN (*p_cr_reject)(DAT_CR_HANDLE cr_handle) = dat_cr_reject;
    DAT_RETURN (*p_cr_handoff)(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff)
        = dat_cr_handoff;

    CHECK(p_cr_query != NULL);
    CHECK(p_cr_accept != NULL);
    CHECK(p_cr_reject != NULL);
    CHECK(p_cr_handoff != NULL);
}

/* SRQ (6): the exact 1.2 prototypes. */
TEST(ABI_40_prototypes_srq)
{
    DAT_RETURN (*p_srq_create)(DAT_IA_HANDLE ia_handle,
        DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR *srq_attr,
        DAT_SRQ_HANDLE *srq_handle) = dat_srq_create;
    DAT_RETURN (*p_srq_free)(DAT_SRQ_HANDLE srq_handle) = dat_srq_free;
    DAT_RETURN (*p_srq_post_recv)(DAT_SRQ_HANDLE srq_handle,
        DAT_COUNT num_segments, DAT_LMR_TRIPLET *local_iov,
        DAT_DTO_COOKIE user_cookie) = dat_srq_post_recv;
    DAT_RETURN (*p_srq_query)(DAT_SRQ_HANDLE srq_handle,
        DAT_SRQ_PARAM_MASK srq_param_mask, DAT_SRQ_PARAM *srq_param)
        = dat_srq_query;
    DAT_RETURN (*p_srq_resize)(DAT_SRQ_HANDLE srq_handle,
        DAT_COUNT srq_max_recv_dto) = dat_srq_resize;
    DAT_RETURN (*p_srq_set_lw)(DAT_SRQ_HANDLE srq_handle,
        DAT_COUNT low_watermark) = dat_srq_set_lw;

    CHECK(p_srq_create != NULL);
    CHECK(p_srq_free != NULL);
    CHECK(p_srq_post_recv != NULL);
    CHECK(p_srq_query != NULL);
    CHECK(p_srq_resize != NULL);
    CHECK(p_srq_set_lw != NULL);
}

/* Registry (3) and dat_strerror: the exact 1.2 prototypes. */
TEST(ABI_41_prototypes_registry)
{
    const char *major;
    const char *minor;
    DAT_RETURN (*p_registry_list_providers)(DAT_COUNT max_to_return,
        DAT_COUNT *entries_returned, DAT_PROVIDER_INFO *(dat_provider_list[]))
        = dat_registry_list_providers;
    DAT_RETURN (*p_registry_add_provider)(DAT_PROVIDER *provider,
        const DAT_PROVIDER_INFO *provider_info) = dat_registry_add_provider;
    DAT_RETURN (*p_registry_remove_provider)(DAT_PROVIDER *provider,
        const DAT_PROVIDER_INFO *provider_info) = dat_registry_remove_provider;
    DAT_RETURN (*p_strerror)(DAT_RETURN value, const char **major_message,
        const char **minor_message) = dat_strerror;

    CHECK(p_registry_list_providers != NULL);
    CHECK(p_registry_add_provider != NULL);
    CHECK(p_registry_remove_provider != NULL);
    CHECK(p_strerror != NULL);

    /* One call through a typed pointer (dat_strerror needs no IA). */
    major = NULL;
    minor = NULL;
    CHECK_OK(p_strerror(DAT_SUCCESS, &major, &minor));
    CHECK(major != NULL && strcmp(major, "DAT_SUCCESS") == 0);
    CHECK(minor != NULL && strcmp(minor, "") == 0);
}

/* ---- DAT_PROVIDER slot types ----------------------------------------- */

/* A provider's slot 2: five arguments, the fifth a 4-byte boolean. */
static DAT_RETURN abi_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen,
                              DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia,
                              DAT_BOOLEAN ro_aware_client)
{
    (void)name;
    (void)qlen;
    (void)async_evd;
    (void)ia;
    (void)ro_aware_client;
    return DAT_SUCCESS;
}

static void abi_provider_init(const DAT_PROVIDER_INFO *info, const char *data)
{
    (void)info;
    (void)data;
}

static void abi_provider_fini(const DAT_PROVIDER_INFO *info)
{
    (void)info;
}

static void abi_agent(DAT_PVOID instance_data, DAT_EVD_HANDLE evd)
{
    (void)instance_data;
    (void)evd;
}

/* Every slot (but slot 2) has exactly the type of its consumer function:
 * each dat_* function is assigned to a variable of the slot's typedef and
 * to the DAT_PROVIDER member itself. */
TEST(ABI_42_provider_slot_types)
{
    static DAT_PROVIDER prov;
    DAT_IA_OPEN_FUNC f_ia_open = abi_ia_open;
    DAT_IA_OPENV_FUNC f_ia_openv = dat_ia_openv;
    DAT_PROVIDER_INIT_FUNC f_init = abi_provider_init;
    DAT_PROVIDER_FINI_FUNC f_fini = abi_provider_fini;
    DAT_AGENT_FUNC f_agent = abi_agent;
    DAT_RETURN (*p_ia_open)(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *,
                            DAT_IA_HANDLE *, DAT_BOOLEAN) = f_ia_open;
    void (*p_init)(const DAT_PROVIDER_INFO *, const char *) = f_init;
    void (*p_fini)(const DAT_PROVIDER_INFO *) = f_fini;
    void (*p_agent)(DAT_PVOID, DAT_EVD_HANDLE) = f_agent;
    DAT_IA_QUERY_FUNC f_ia_query = dat_ia_query;
    DAT_IA_CLOSE_FUNC f_ia_close = dat_ia_close;
    DAT_SET_CONSUMER_CONTEXT_FUNC f_set_consumer_context =
        dat_set_consumer_context;
    DAT_GET_CONSUMER_CONTEXT_FUNC f_get_consumer_context =
        dat_get_consumer_context;
    DAT_GET_HANDLE_TYPE_FUNC f_get_handle_type = dat_get_handle_type;
    DAT_CNO_CREATE_FUNC f_cno_create = dat_cno_create;
    DAT_CNO_MODIFY_AGENT_FUNC f_cno_modify_agent = dat_cno_modify_agent;
    DAT_CNO_QUERY_FUNC f_cno_query = dat_cno_query;
    DAT_CNO_FREE_FUNC f_cno_free = dat_cno_free;
    DAT_CNO_WAIT_FUNC f_cno_wait = dat_cno_wait;
    DAT_CR_QUERY_FUNC f_cr_query = dat_cr_query;
    DAT_CR_ACCEPT_FUNC f_cr_accept = dat_cr_accept;
    DAT_CR_REJECT_FUNC f_cr_reject = dat_cr_reject;
    DAT_CR_HANDOFF_FUNC f_cr_handoff = dat_cr_handoff;
    DAT_EVD_CREATE_FUNC f_evd_create = dat_evd_create;
    DAT_EVD_QUERY_FUNC f_evd_query = dat_evd_query;
    DAT_EVD_MODIFY_CNO_FUNC f_evd_modify_cno = dat_evd_modify_cno;
    DAT_EVD_ENABLE_FUNC f_evd_enable = dat_evd_enable;
    DAT_EVD_DISABLE_FUNC f_evd_disable = dat_evd_disable;
    DAT_EVD_WAIT_FUNC f_evd_wait = dat_evd_wait;
    DAT_EVD_RESIZE_FUNC f_evd_resize = dat_evd_resize;
    DAT_EVD_POST_SE_FUNC f_evd_post_se = dat_evd_post_se;
    DAT_EVD_DEQUEUE_FUNC f_evd_dequeue = dat_evd_dequeue;
    DAT_EVD_FREE_FUNC f_evd_free = dat_evd_free;
    DAT_EP_CREATE_FUNC f_ep_create = dat_ep_create;
    DAT_EP_QUERY_FUNC f_ep_query = dat_ep_query;
    DAT_EP_MODIFY_FUNC f_ep_modify = dat_ep_modify;
    DAT_EP_CONNECT_FUNC f_ep_connect = dat_ep_connect;
    DAT_EP_DUP_CONNECT_FUNC f_ep_dup_connect = dat_ep_dup_connect;
    DAT_EP_DISCONNECT_FUNC f_ep_disconnect = dat_ep_disconnect;
    DAT_EP_POST_SEND_FUNC f_ep_post_send = dat_ep_post_send;
    DAT_EP_POST_RECV_FUNC f_ep_post_recv = dat_ep_post_recv;
    DAT_EP_POST_RDMA_READ_FUNC f_ep_post_rdma_read = dat_ep_post_rdma_read;
    DAT_EP_POST_RDMA_WRITE_FUNC f_ep_post_rdma_write = dat_ep_post_rdma_write;
    DAT_EP_GET_STATUS_FUNC f_ep_get_status = dat_ep_get_status;
    DAT_EP_FREE_FUNC f_ep_free = dat_ep_free;
    DAT_LMR_CREATE_FUNC f_lmr_create = dat_lmr_create;
    DAT_LMR_QUERY_FUNC f_lmr_query = dat_lmr_query;
    DAT_LMR_FREE_FUNC f_lmr_free = dat_lmr_free;
    DAT_RMR_CREATE_FUNC f_rmr_create = dat_rmr_create;
    DAT_RMR_QUERY_FUNC f_rmr_query = dat_rmr_query;
    DAT_RMR_BIND_FUNC f_rmr_bind = dat_rmr_bind;
    DAT_RMR_FREE_FUNC f_rmr_free = dat_rmr_free;
    DAT_PSP_CREATE_FUNC f_psp_create = dat_psp_create;
    DAT_PSP_QUERY_FUNC f_psp_query = dat_psp_query;
    DAT_PSP_FREE_FUNC f_psp_free = dat_psp_free;
    DAT_RSP_CREATE_FUNC f_rsp_create = dat_rsp_create;
    DAT_RSP_QUERY_FUNC f_rsp_query = dat_rsp_query;
    DAT_RSP_FREE_FUNC f_rsp_free = dat_rsp_free;
    DAT_PZ_CREATE_FUNC f_pz_create = dat_pz_create;
    DAT_PZ_QUERY_FUNC f_pz_query = dat_pz_query;
    DAT_PZ_FREE_FUNC f_pz_free = dat_pz_free;
    DAT_PSP_CREATE_ANY_FUNC f_psp_create_any = dat_psp_create_any;
    DAT_EP_RESET_FUNC f_ep_reset = dat_ep_reset;
    DAT_EVD_SET_UNWAITABLE_FUNC f_evd_set_unwaitable = dat_evd_set_unwaitable;
    DAT_EVD_CLEAR_UNWAITABLE_FUNC f_evd_clear_unwaitable =
        dat_evd_clear_unwaitable;
    DAT_LMR_SYNC_RDMA_READ_FUNC f_lmr_sync_rdma_read = dat_lmr_sync_rdma_read;
    DAT_LMR_SYNC_RDMA_WRITE_FUNC f_lmr_sync_rdma_write =
        dat_lmr_sync_rdma_write;
    DAT_EP_CREATE_WITH_SRQ_FUNC f_ep_create_with_srq = dat_ep_create_with_srq;
    DAT_EP_RECV_QUERY_FUNC f_ep_recv_query = dat_ep_recv_query;
    DAT_EP_SET_WATERMARK_FUNC f_ep_set_watermark = dat_ep_set_watermark;
    DAT_SRQ_CREATE_FUNC f_srq_create = dat_srq_create;
    DAT_SRQ_FREE_FUNC f_srq_free = dat_srq_free;
    DAT_SRQ_POST_RECV_FUNC f_srq_post_recv = dat_srq_post_recv;
    DAT_SRQ_QUERY_FUNC f_srq_query = dat_srq_query;
    DAT_SRQ_RESIZE_FUNC f_srq_resize = dat_srq_resize;
    DAT_SRQ_SET_LW_FUNC f_srq_set_lw = dat_srq_set_lw;

    memset(&prov, 0, sizeof(prov));
    prov.device_name = "abi0";
    prov.extension = NULL;
    prov.ia_open_func = abi_ia_open;
    prov.ia_query_func = dat_ia_query;
    prov.ia_close_func = dat_ia_close;
    prov.set_consumer_context_func = dat_set_consumer_context;
    prov.get_consumer_context_func = dat_get_consumer_context;
    prov.get_handle_type_func = dat_get_handle_type;
    prov.cno_create_func = dat_cno_create;
    prov.cno_modify_agent_func = dat_cno_modify_agent;
    prov.cno_query_func = dat_cno_query;
    prov.cno_free_func = dat_cno_free;
    prov.cno_wait_func = dat_cno_wait;
    prov.cr_query_func = dat_cr_query;
    prov.cr_accept_func = dat_cr_accept;
    prov.cr_reject_func = dat_cr_reject;
    prov.cr_handoff_func = dat_cr_handoff;
    prov.evd_create_func = dat_evd_create;
    prov.evd_query_func = dat_evd_query;
    prov.evd_modify_cno_func = dat_evd_modify_cno;
    prov.evd_enable_func = dat_evd_enable;
    prov.evd_disable_func = dat_evd_disable;
    prov.evd_wait_func = dat_evd_wait;
    prov.evd_resize_func = dat_evd_resize;
    prov.evd_post_se_func = dat_evd_post_se;
    prov.evd_dequeue_func = dat_evd_dequeue;
    prov.evd_free_func = dat_evd_free;
    prov.ep_create_func = dat_ep_create;
    prov.ep_query_func = dat_ep_query;
    prov.ep_modify_func = dat_ep_modify;
    prov.ep_connect_func = dat_ep_connect;
    prov.ep_dup_connect_func = dat_ep_dup_connect;
    prov.ep_disconnect_func = dat_ep_disconnect;
    prov.ep_post_send_func = dat_ep_post_send;
    prov.ep_post_recv_func = dat_ep_post_recv;
    prov.ep_post_rdma_read_func = dat_ep_post_rdma_read;
    prov.ep_post_rdma_write_func = dat_ep_post_rdma_write;
    prov.ep_get_status_func = dat_ep_get_status;
    prov.ep_free_func = dat_ep_free;
    prov.lmr_create_func = dat_lmr_create;
    prov.lmr_query_func = dat_lmr_query;
    prov.lmr_free_func = dat_lmr_free;
    prov.rmr_create_func = dat_rmr_create;
    prov.rmr_query_func = dat_rmr_query;
    prov.rmr_bind_func = dat_rmr_bind;
    prov.rmr_free_func = dat_rmr_free;
    prov.psp_create_func = dat_psp_create;
    prov.psp_query_func = dat_psp_query;
    prov.psp_free_func = dat_psp_free;
    prov.rsp_create_func = dat_rsp_create;
    prov.rsp_query_func = dat_rsp_query;
    prov.rsp_free_func = dat_rsp_free;
    prov.pz_create_func = dat_pz_create;
    prov.pz_query_func = dat_pz_query;
    prov.pz_free_func = dat_pz_free;
    prov.psp_create_any_func = dat_psp_create_any;
    prov.ep_reset_func = dat_ep_reset;
    prov.evd_set_unwaitable_func = dat_evd_set_unwaitable;
    prov.evd_clear_unwaitable_func = dat_evd_clear_unwaitable;
    prov.lmr_sync_rdma_read_func = dat_lmr_sync_rdma_read;
    prov.lmr_sync_rdma_write_func = dat_lmr_sync_rdma_write;
    prov.ep_create_with_srq_func = dat_ep_create_with_srq;
    prov.ep_recv_query_func = dat_ep_recv_query;
    prov.ep_set_watermark_func = dat_ep_set_watermark;
    prov.srq_create_func = dat_srq_create;
    prov.srq_free_func = dat_srq_free;
    prov.srq_post_recv_func = dat_srq_post_recv;
    prov.srq_query_func = dat_srq_query;
    prov.srq_resize_func = dat_srq_resize;
    prov.srq_set_lw_func = dat_srq_set_lw;

    CHECK(p_ia_open != NULL && prov.ia_open_func == f_ia_open);
    CHECK(f_ia_openv != NULL);
    CHECK(p_init != NULL && p_fini != NULL && p_agent != NULL);
    CHECK(prov.ia_query_func == f_ia_query);
    CHECK(prov.ia_close_func == f_ia_close);
    CHECK(prov.set_consumer_context_func == f_set_consumer_context);
    CHECK(prov.get_consumer_context_func == f_get_consumer_context);
    CHECK(prov.get_handle_type_func == f_get_handle_type);
    CHECK(prov.cno_create_func == f_cno_create);
    CHECK(prov.cno_modify_agent_func == f_cno_modify_agent);
    CHECK(prov.cno_query_func == f_cno_query);
    CHECK(prov.cno_free_func == f_cno_free);
    CHECK(prov.cno_wait_func == f_cno_wait);
    CHECK(prov.cr_query_func == f_cr_query);
    CHECK(prov.cr_accept_func == f_cr_accept);
    CHECK(prov.cr_reject_func == f_cr_reject);
    CHECK(prov.cr_handoff_func == f_cr_handoff);
    CHECK(prov.evd_create_func == f_evd_create);
    CHECK(prov.evd_query_func == f_evd_query);
    CHECK(prov.evd_modify_cno_func == f_evd_modify_cno);
    CHECK(prov.evd_enable_func == f_evd_enable);
    CHECK(prov.evd_disable_func == f_evd_disable);
    CHECK(prov.evd_wait_func == f_evd_wait);
    CHECK(prov.evd_resize_func == f_evd_resize);
    CHECK(prov.evd_post_se_func == f_evd_post_se);
    CHECK(prov.evd_dequeue_func == f_evd_dequeue);
    CHECK(prov.evd_free_func == f_evd_free);
    CHECK(prov.ep_create_func == f_ep_create);
    CHECK(prov.ep_query_func == f_ep_query);
    CHECK(prov.ep_modify_func == f_ep_modify);
    CHECK(prov.ep_connect_func == f_ep_connect);
    CHECK(prov.ep_dup_connect_func == f_ep_dup_connect);
    CHECK(prov.ep_disconnect_func == f_ep_disconnect);
    CHECK(prov.ep_post_send_func == f_ep_post_send);
    CHECK(prov.ep_post_recv_func == f_ep_post_recv);
    CHECK(prov.ep_post_rdma_read_func == f_ep_post_rdma_read);
    CHECK(prov.ep_post_rdma_write_func == f_ep_post_rdma_write);
    CHECK(prov.ep_get_status_func == f_ep_get_status);
    CHECK(prov.ep_free_func == f_ep_free);
    CHECK(prov.lmr_create_func == f_lmr_create);
    CHECK(prov.lmr_query_func == f_lmr_query);
    CHECK(prov.lmr_free_func == f_lmr_free);
    CHECK(prov.rmr_create_func == f_rmr_create);
    CHECK(prov.rmr_query_func == f_rmr_query);
    CHECK(prov.rmr_bind_func == f_rmr_bind);
    CHECK(prov.rmr_free_func == f_rmr_free);
    CHECK(prov.psp_create_func == f_psp_create);
    CHECK(prov.psp_query_func == f_psp_query);
    CHECK(prov.psp_free_func == f_psp_free);
    CHECK(prov.rsp_create_func == f_rsp_create);
    CHECK(prov.rsp_query_func == f_rsp_query);
    CHECK(prov.rsp_free_func == f_rsp_free);
    CHECK(prov.pz_create_func == f_pz_create);
    CHECK(prov.pz_query_func == f_pz_query);
    CHECK(prov.pz_free_func == f_pz_free);
    CHECK(prov.psp_create_any_func == f_psp_create_any);
    CHECK(prov.ep_reset_func == f_ep_reset);
    CHECK(prov.evd_set_unwaitable_func == f_evd_set_unwaitable);
    CHECK(prov.evd_clear_unwaitable_func == f_evd_clear_unwaitable);
    CHECK(prov.lmr_sync_rdma_read_func == f_lmr_sync_rdma_read);
    CHECK(prov.lmr_sync_rdma_write_func == f_lmr_sync_rdma_write);
    CHECK(prov.ep_create_with_srq_func == f_ep_create_with_srq);
    CHECK(prov.ep_recv_query_func == f_ep_recv_query);
    CHECK(prov.ep_set_watermark_func == f_ep_set_watermark);
    CHECK(prov.srq_create_func == f_srq_create);
    CHECK(prov.srq_free_func == f_srq_free);
    CHECK(prov.srq_post_recv_func == f_srq_post_recv);
    CHECK(prov.srq_query_func == f_srq_query);
    CHECK(prov.srq_resize_func == f_srq_resize);
    CHECK(prov.srq_set_lw_func == f_srq_set_lw);
}

/* ---- exported symbols -------------------------------------------------- */

/* The 72 names of the 1.2 export list. */
static const char *const abi_exports[] = {
    "dat_ia_openv",
    "dat_ia_query",
    "dat_ia_close",
    "dat_set_consumer_context",
    "dat_get_consumer_context",
    "dat_get_handle_type",
    "dat_pz_create",
    "dat_pz_query",
    "dat_pz_free",
    "dat_evd_create",
    "dat_evd_query",
    "dat_evd_modify_cno",
    "dat_evd_enable",
    "dat_evd_disable",
    "dat_evd_wait",
    "dat_evd_resize",
    "dat_evd_post_se",
    "dat_evd_dequeue",
    "dat_evd_free",
    "dat_evd_set_unwaitable",
    "dat_evd_clear_unwaitable",
    "dat_cno_create",
    "dat_cno_modify_agent",
    "dat_cno_query",
    "dat_cno_free",
    "dat_cno_wait",
    "dat_ep_create",
    "dat_ep_create_with_srq",
    "dat_ep_query",
    "dat_ep_modify",
    "dat_ep_connect",
    "dat_ep_dup_connect",
    "dat_ep_disconnect",
    "dat_ep_post_send",
    "dat_ep_post_recv",
    "dat_ep_post_rdma_read",
    "dat_ep_post_rdma_write",
    "dat_ep_get_status",
    "dat_ep_free",
    "dat_ep_reset",
    "dat_ep_recv_query",
    "dat_ep_set_watermark",
    "dat_lmr_create",
    "dat_lmr_query",
    "dat_lmr_free",
    "dat_lmr_sync_rdma_read",
    "dat_lmr_sync_rdma_write",
    "dat_rmr_create",
    "dat_rmr_query",
    "dat_rmr_bind",
    "dat_rmr_free",
    "dat_psp_create",
    "dat_psp_create_any",
    "dat_psp_query",
    "dat_psp_free",
    "dat_rsp_create",
    "dat_rsp_query",
    "dat_rsp_free",
    "dat_cr_query",
    "dat_cr_accept",
    "dat_cr_reject",
    "dat_cr_handoff",
    "dat_srq_create",
    "dat_srq_free",
    "dat_srq_post_recv",
    "dat_srq_query",
    "dat_srq_resize",
    "dat_srq_set_lw",
    "dat_registry_list_providers",
    "dat_registry_add_provider",
    "dat_registry_remove_provider",
    "dat_strerror",
};

TEST(ABI_43_exported_symbols)
{
    size_t i;

    CHECK(sizeof(abi_exports) / sizeof(abi_exports[0]) == 72);
    for (i = 0; i < sizeof(abi_exports) / sizeof(abi_exports[0]); i++) {
        if (dlsym(RTLD_DEFAULT, abi_exports[i]) == NULL) {
            fprintf(stderr, "    missing symbol %s\n", abi_exports[i]);
            CHECK(!"exported symbol missing");
        }
    }
    /* dat_ia_open is a macro only. */
    CHECK(dlsym(RTLD_DEFAULT, "dat_ia_open") == NULL);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
