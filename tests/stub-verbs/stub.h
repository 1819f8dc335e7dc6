/*
 * What the two stub rdma-core libraries share: the one device context, the
 * live-object counts and the lock that guards all stub state. Exported by
 * the stub libibverbs under the version STUB_VERBS_PRIVATE (never a name
 * real rdma-core has), used by the stub librdmacm and by the tests.
 */
#ifndef STUB_VERBS_H
#define STUB_VERBS_H

#include <stddef.h>
#include <stdint.h>

struct ibv_context;

/* Kinds of live objects counted (the report names them in this order). */
enum stub_kind {
    STUB_PD,
    STUB_MR,
    STUB_CQ,
    STUB_QP,
    STUB_CH, /* completion channels and rdma_cm event channels */
    STUB_ID, /* rdma_cm ids */
    STUB_CTX, /* contexts from ibv_open_device (rdma_cm's own is not counted) */
    STUB_KINDS
};

/* 1 when $STUB_VERBS is "nodev" (read at every call). */
int stub_verbs_nodev(void);

/* The stub device's context, opened on first use; NULL in nodev. */
struct ibv_context *stub_verbs_context(void);

/* Adds `delta` to the live count of `kind`. */
void stub_verbs_count(enum stub_kind kind, int delta);

/* "pd N mr N cq N qp N ch N id N" (live objects now) into buf. */
void stub_verbs_report_line(char *buf, size_t len);

/* Writes that line to the file $STUB_VERBS_REPORT names (if set): also
 * done by a destructor when the library is unloaded or the process
 * exits. 0, or -1 if the file cannot be written. */
int stub_verbs_report(void);

/* The keys of a live memory region that covers [addr, addr + len). 0 if
 * there is one, else -1. */
int stub_verbs_mr_keys(const void *addr, size_t len, uint32_t *lkey, uint32_t *rkey);

#endif /* STUB_VERBS_H */
