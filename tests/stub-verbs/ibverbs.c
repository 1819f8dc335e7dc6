/*
 * A stub libibverbs.so.1 for the tests that run on any machine: the
 * functions the verbs transport resolves (src/transport/verbs/lib.rs), at
 * the versions real rdma-core exports them (ibverbs.map), over one fake
 * device "stub0" with no wire. Struct layouts come from rdma-core's own
 * <infiniband/verbs.h>.
 *
 * $STUB_VERBS, read at every call:
 *   nodev          no device: ibv_get_device_list is empty (and the stub
 *                  librdmacm binds no address);
 *   nomw (default) one device, port 1 active (Ethernet link layer), sane
 *                  limits, but no memory windows and no SRQs: the ops
 *                  table's alloc_mw/bind_mw/dealloc_mw and ibv_create_srq
 *                  fail with EOPNOTSUPP, as rdma-core's ops for a device
 *                  without them do.
 *
 * Behaviour kept close to rdma-core and the kernel where the transport can
 * get it wrong: int-returning verbs return a positive errno; destroying an
 * object still in use (a PD with MRs or QPs, a CQ with QPs, a channel with
 * CQs) fails with EBUSY; a CQ destroyed with completion events not yet
 * acknowledged fails with EBUSY and a line on stderr (real rdma-core would
 * block for ever); memory access flags are checked as the kernel does.
 *
 * No wire: every work request posted completes at once (a ring per CQ):
 * successfully if its SGEs lie in live MRs of the QP's PD (else with a
 * local protection error, and the QP goes to ERR), with a flush error if
 * the QP is in ERR. A send needs state RTS, a receive INIT or later; the
 * queue depths and SGE counts of ibv_create_qp are enforced. An armed CQ
 * with a completion channel signals it (an eventfd) on its next completion;
 * ibv_get_cq_event answers EAGAIN when no event is pending.
 *
 * The exported functions have C names stub_<name> and their symbol names
 * through asm labels, so that verbs.h's macros and compat prototypes of the
 * same names (ibv_reg_mr, ibv_query_port, ...) do not interfere.
 *
 * Live objects are counted per kind; $STUB_VERBS_REPORT names a file that
 * gets "pd N mr N cq N qp N ch N id N" at unload or exit (stub.h).
 */
#define _GNU_SOURCE 1
#include <infiniband/verbs.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "stub.h"

#define EXPORT(sym) __asm__(#sym)

/* The limits ibv_query_device reports (and the stub enforces). */
#define MAX_QP 1024
#define MAX_QP_WR 4096
#define MAX_SGE 4
#define MAX_CQ 64
#define MAX_CQE 4096
#define MAX_MR 1024
#define MAX_MR_SIZE (1ull << 32)
#define MAX_PD 16
#define MAX_RD_ATOM 4
#define MAX_INLINE 64

/* Guards every piece of stub state below. */
static pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;
static int live[STUB_KINDS];

struct stub_pd {
    struct ibv_pd pd;
    int users; /* MRs and QPs */
};

struct stub_mr {
    struct ibv_mr mr;
    struct stub_mr *next;
};

struct stub_qp;

struct stub_wc {
    struct ibv_wc wc;
    struct stub_qp *qp;
    int recv;
};

struct stub_cq {
    struct ibv_cq cq;
    struct stub_wc *ring;
    int cap, head, count;
    int armed;
    int users;                 /* QPs using it */
    unsigned events_delivered; /* by ibv_get_cq_event */
};

struct stub_channel {
    struct ibv_comp_channel ch;
    struct stub_cq **pending; /* CQs with an event not yet fetched, oldest first */
    int npending, cap;
};

struct stub_qp {
    struct ibv_qp qp;
    struct ibv_qp_cap cap;
    int sq_sig_all;
    int sq_busy, rq_busy; /* WRs whose completion is not yet polled */
};

static struct stub_mr *mrs;
static uint32_t next_key = 0x100;
static uint32_t next_handle = 1;
static uint32_t next_qp_num = 0x11;

int stub_verbs_nodev(void)
{
    const char *m = getenv("STUB_VERBS");
    return m != NULL && strcmp(m, "nodev") == 0;
}

void stub_verbs_count(enum stub_kind kind, int delta)
{
    pthread_mutex_lock(&stub_lock);
    live[kind] += delta;
    pthread_mutex_unlock(&stub_lock);
}

void stub_verbs_report_line(char *buf, size_t len)
{
    pthread_mutex_lock(&stub_lock);
    snprintf(buf, len, "pd %d mr %d cq %d qp %d ch %d id %d ctx %d", live[STUB_PD],
             live[STUB_MR], live[STUB_CQ], live[STUB_QP], live[STUB_CH], live[STUB_ID],
             live[STUB_CTX]);
    pthread_mutex_unlock(&stub_lock);
}

int stub_verbs_report(void)
{
    const char *path = getenv("STUB_VERBS_REPORT");
    char line[128];
    FILE *f;

    if (path == NULL || path[0] == '\0')
        return 0;
    stub_verbs_report_line(line, sizeof(line));
    f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%s\n", line);
    return fclose(f) == 0 ? 0 : -1;
}

__attribute__((destructor)) static void report_at_exit(void)
{
    if (stub_verbs_report() != 0)
        fprintf(stderr, "stub-verbs: cannot write %s\n", getenv("STUB_VERBS_REPORT"));
}

int stub_verbs_mr_keys(const void *addr, size_t len, uint32_t *lkey, uint32_t *rkey)
{
    struct stub_mr *m;
    int found = -1;

    pthread_mutex_lock(&stub_lock);
    for (m = mrs; m != NULL; m = m->next) {
        uintptr_t base = (uintptr_t)m->mr.addr, a = (uintptr_t)addr;
        if (a >= base && a - base <= m->mr.length && len <= m->mr.length - (a - base)) {
            *lkey = m->mr.lkey;
            *rkey = m->mr.rkey;
            found = 0;
            break;
        }
    }
    pthread_mutex_unlock(&stub_lock);
    return found;
}

/* ---- the device and its context ----------------------------------------- */

static struct ibv_device stub_device = {
    .node_type = IBV_NODE_CA,
    .transport_type = IBV_TRANSPORT_IB,
    .name = "stub0",
    .dev_name = "uverbs0",
    .dev_path = "/sys/class/infiniband_verbs/uverbs0",
    .ibdev_path = "/sys/class/infiniband/stub0",
};

static struct ibv_context stub_context;
static pthread_once_t context_once = PTHREAD_ONCE_INIT;

static int op_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only);
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                            struct ibv_recv_wr **bad)
{
    (void)srq;
    *bad = wr;
    return EOPNOTSUPP;
}

static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    (void)pd;
    (void)type;
    errno = EOPNOTSUPP;
    return NULL;
}

static int op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
    (void)qp;
    (void)mw;
    (void)bind;
    return EOPNOTSUPP;
}

static int op_dealloc_mw(struct ibv_mw *mw)
{
    (void)mw;
    return EOPNOTSUPP;
}

static void open_context(void)
{
    stub_context.device = &stub_device;
    stub_context.cmd_fd = -1;
    stub_context.async_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    stub_context.num_comp_vectors = 1;
    pthread_mutex_init(&stub_context.mutex, NULL);
    stub_context.ops.poll_cq = op_poll_cq;
    stub_context.ops.req_notify_cq = op_req_notify_cq;
    stub_context.ops.post_send = op_post_send;
    stub_context.ops.post_recv = op_post_recv;
    stub_context.ops.post_srq_recv = op_post_srq_recv;
    stub_context.ops.alloc_mw = op_alloc_mw;
    stub_context.ops.bind_mw = op_bind_mw;
    stub_context.ops.dealloc_mw = op_dealloc_mw;
}

struct ibv_context *stub_verbs_context(void)
{
    if (stub_verbs_nodev())
        return NULL;
    pthread_once(&context_once, open_context);
    return &stub_context;
}

/* ---- devices ------------------------------------------------------------ */

struct ibv_device **stub_get_device_list(int *num) EXPORT(ibv_get_device_list);
struct ibv_device **stub_get_device_list(int *num)
{
    int n = stub_verbs_nodev() ? 0 : 1;
    struct ibv_device **list = calloc(2, sizeof(*list));

    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (n == 1)
        list[0] = &stub_device;
    if (num != NULL)
        *num = n;
    return list;
}

void stub_free_device_list(struct ibv_device **list) EXPORT(ibv_free_device_list);
void stub_free_device_list(struct ibv_device **list)
{
    free(list);
}

/* The one device's context, shared: each open is counted until its close. */
struct ibv_context *stub_open_device(struct ibv_device *dev) EXPORT(ibv_open_device);
struct ibv_context *stub_open_device(struct ibv_device *dev)
{
    if (dev != &stub_device || stub_verbs_nodev()) {
        errno = ENODEV;
        return NULL;
    }
    stub_verbs_count(STUB_CTX, 1);
    return stub_verbs_context();
}

int stub_close_device(struct ibv_context *ctx) EXPORT(ibv_close_device);
int stub_close_device(struct ibv_context *ctx)
{
    if (ctx != &stub_context)
        return EINVAL;
    stub_verbs_count(STUB_CTX, -1);
    return 0;
}

const char *stub_get_device_name(struct ibv_device *dev) EXPORT(ibv_get_device_name);
const char *stub_get_device_name(struct ibv_device *dev)
{
    return dev != NULL ? dev->name : NULL;
}

int stub_query_device(struct ibv_context *ctx, struct ibv_device_attr *a) EXPORT(ibv_query_device);
int stub_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
    if (ctx != &stub_context || a == NULL)
        return EINVAL;
    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "0.0.0 stub");
    a->node_guid = 0x0200000000000001ull;
    a->sys_image_guid = 0x0200000000000001ull;
    a->max_mr_size = MAX_MR_SIZE;
    a->page_size_cap = 0xfffff000u;
    a->max_qp = MAX_QP;
    a->max_qp_wr = MAX_QP_WR;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
    a->max_sge = MAX_SGE;
    a->max_sge_rd = MAX_SGE;
    a->max_cq = MAX_CQ;
    a->max_cqe = MAX_CQE;
    a->max_mr = MAX_MR;
    a->max_pd = MAX_PD;
    a->max_qp_rd_atom = MAX_RD_ATOM;
    a->max_res_rd_atom = MAX_RD_ATOM * MAX_QP;
    a->max_qp_init_rd_atom = MAX_RD_ATOM;
    a->atomic_cap = IBV_ATOMIC_NONE;
    a->max_mw = 0;
    a->max_srq = 0;
    a->max_srq_wr = 0;
    a->max_srq_sge = 0;
    a->max_pkeys = 1;
    a->local_ca_ack_delay = 15;
    a->phys_port_cnt = 1;
    return 0;
}

/*
 * The IBVERBS_1.1 ibv_query_port fills rdma-core's struct
 * _compat_ibv_port_attr: struct ibv_port_attr up to port_cap_flags2
 * (verbs.h's inline wrapper zeroes the rest first).
 */
int stub_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *out)
    EXPORT(ibv_query_port);
int stub_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *out)
{
    struct ibv_port_attr a;

    if (ctx != &stub_context || out == NULL || port != 1)
        return EINVAL;
    memset(&a, 0, sizeof(a));
    a.state = IBV_PORT_ACTIVE;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = IBV_MTU_1024;
    a.gid_tbl_len = 1;
    a.max_msg_sz = 1u << 31;
    a.pkey_tbl_len = 1;
    a.active_width = 1;
    a.active_speed = 1;
    a.phys_state = 5; /* LinkUp */
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
    memcpy(out, &a, offsetof(struct ibv_port_attr, port_cap_flags2));
    return 0;
}

/* ---- protection domains and memory regions ------------------------------ */

struct ibv_pd *stub_alloc_pd(struct ibv_context *ctx) EXPORT(ibv_alloc_pd);
struct ibv_pd *stub_alloc_pd(struct ibv_context *ctx)
{
    struct stub_pd *p;

    if (ctx != &stub_context) {
        errno = EINVAL;
        return NULL;
    }
    pthread_mutex_lock(&stub_lock);
    p = live[STUB_PD] < MAX_PD ? calloc(1, sizeof(*p)) : NULL;
    if (p != NULL) {
        p->pd.context = ctx;
        p->pd.handle = next_handle++;
        live[STUB_PD]++;
    }
    pthread_mutex_unlock(&stub_lock);
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    return &p->pd;
}

int stub_dealloc_pd(struct ibv_pd *pd) EXPORT(ibv_dealloc_pd);
int stub_dealloc_pd(struct ibv_pd *pd)
{
    struct stub_pd *p = (struct stub_pd *)pd;

    if (p == NULL)
        return EINVAL;
    pthread_mutex_lock(&stub_lock);
    if (p->users > 0) {
        pthread_mutex_unlock(&stub_lock);
        return EBUSY;
    }
    live[STUB_PD]--;
    pthread_mutex_unlock(&stub_lock);
    free(p);
    return 0;
}

struct ibv_mr *stub_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
    EXPORT(ibv_reg_mr);
struct ibv_mr *stub_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    struct stub_mr *m;
    int needs_local_write = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

    if (pd == NULL || length > MAX_MR_SIZE ||
        ((access & needs_local_write) && !(access & IBV_ACCESS_LOCAL_WRITE))) {
        errno = EINVAL;
        return NULL;
    }
    pthread_mutex_lock(&stub_lock);
    m = live[STUB_MR] < MAX_MR ? calloc(1, sizeof(*m)) : NULL;
    if (m != NULL) {
        m->mr.context = pd->context;
        m->mr.pd = pd;
        m->mr.addr = addr;
        m->mr.length = length;
        m->mr.handle = next_handle++;
        m->mr.lkey = next_key++;
        m->mr.rkey = next_key++;
        m->next = mrs;
        mrs = m;
        ((struct stub_pd *)pd)->users++;
        live[STUB_MR]++;
    }
    pthread_mutex_unlock(&stub_lock);
    if (m == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    return &m->mr;
}

int stub_dereg_mr(struct ibv_mr *mr) EXPORT(ibv_dereg_mr);
int stub_dereg_mr(struct ibv_mr *mr)
{
    struct stub_mr **at;

    pthread_mutex_lock(&stub_lock);
    for (at = &mrs; *at != NULL && &(*at)->mr != mr; at = &(*at)->next) {
    }
    if (*at == NULL) {
        pthread_mutex_unlock(&stub_lock);
        return EINVAL;
    }
    *at = (*at)->next;
    ((struct stub_pd *)mr->pd)->users--;
    live[STUB_MR]--;
    pthread_mutex_unlock(&stub_lock);
    free(mr);
    return 0;
}

/* 1 if `s` lies in a live MR of `pd` with its lkey (or is empty). Under the
 * lock. */
static int sge_ok(struct ibv_pd *pd, const struct ibv_sge *s)
{
    struct stub_mr *m;
    uintptr_t a = (uintptr_t)s->addr;

    if (s->length == 0)
        return 1;
    for (m = mrs; m != NULL; m = m->next) {
        uintptr_t base = (uintptr_t)m->mr.addr;
        if (m->mr.lkey == s->lkey && m->mr.pd == pd && a >= base &&
            a - base <= m->mr.length && s->length <= m->mr.length - (a - base))
            return 1;
    }
    return 0;
}

/* ---- completion channels and queues ------------------------------------- */

struct ibv_comp_channel *stub_create_comp_channel(struct ibv_context *ctx)
    EXPORT(ibv_create_comp_channel);
struct ibv_comp_channel *stub_create_comp_channel(struct ibv_context *ctx)
{
    struct stub_channel *c;

    if (ctx != &stub_context) {
        errno = EINVAL;
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    c->ch.context = ctx;
    c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
    if (c->ch.fd < 0) {
        free(c);
        return NULL;
    }
    stub_verbs_count(STUB_CH, 1);
    return &c->ch;
}

int stub_destroy_comp_channel(struct ibv_comp_channel *ch) EXPORT(ibv_destroy_comp_channel);
int stub_destroy_comp_channel(struct ibv_comp_channel *ch)
{
    struct stub_channel *c = (struct stub_channel *)ch;

    if (c == NULL)
        return EINVAL;
    pthread_mutex_lock(&stub_lock);
    if (c->ch.refcnt > 0) {
        pthread_mutex_unlock(&stub_lock);
        return EBUSY;
    }
    live[STUB_CH]--;
    pthread_mutex_unlock(&stub_lock);
    close(c->ch.fd);
    free(c->pending);
    free(c);
    return 0;
}

static int ring_size(int cqe)
{
    int n = 1;

    while (n < cqe)
        n *= 2;
    return n;
}

struct ibv_cq *stub_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                              struct ibv_comp_channel *channel, int comp_vector)
    EXPORT(ibv_create_cq);
struct ibv_cq *stub_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
                              struct ibv_comp_channel *channel, int comp_vector)
{
    struct stub_cq *c;

    if (ctx != &stub_context || cqe < 1 || cqe > MAX_CQE || comp_vector != 0) {
        errno = EINVAL;
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        goto nomem;
    c->cap = ring_size(cqe);
    c->ring = calloc((size_t)c->cap, sizeof(*c->ring));
    if (c->ring == NULL)
        goto nomem;
    c->cq.context = ctx;
    c->cq.channel = channel;
    c->cq.cq_context = cq_context;
    c->cq.cqe = c->cap;
    pthread_mutex_init(&c->cq.mutex, NULL);
    pthread_cond_init(&c->cq.cond, NULL);
    pthread_mutex_lock(&stub_lock);
    if (live[STUB_CQ] >= MAX_CQ) {
        pthread_mutex_unlock(&stub_lock);
        goto nomem;
    }
    c->cq.handle = next_handle++;
    if (channel != NULL)
        channel->refcnt++;
    live[STUB_CQ]++;
    pthread_mutex_unlock(&stub_lock);
    return &c->cq;
nomem:
    if (c != NULL)
        free(c->ring);
    free(c);
    errno = ENOMEM;
    return NULL;
}

int stub_resize_cq(struct ibv_cq *cq, int cqe) EXPORT(ibv_resize_cq);
int stub_resize_cq(struct ibv_cq *cq, int cqe)
{
    struct stub_cq *c = (struct stub_cq *)cq;
    struct stub_wc *ring;
    int cap, i;

    if (c == NULL || cqe < 1 || cqe > MAX_CQE)
        return EINVAL;
    cap = ring_size(cqe);
    ring = calloc((size_t)cap, sizeof(*ring));
    if (ring == NULL)
        return ENOMEM;
    pthread_mutex_lock(&stub_lock);
    if (c->count > cap) {
        pthread_mutex_unlock(&stub_lock);
        free(ring);
        return EINVAL;
    }
    for (i = 0; i < c->count; i++)
        ring[i] = c->ring[(c->head + i) % c->cap];
    free(c->ring);
    c->ring = ring;
    c->cap = cap;
    c->head = 0;
    c->cq.cqe = cap;
    pthread_mutex_unlock(&stub_lock);
    return 0;
}

/* Drops the pending events of `c` from its channel. Under the lock. */
static void unqueue_events(struct stub_cq *c)
{
    struct stub_channel *ch = (struct stub_channel *)c->cq.channel;
    uint64_t one;
    int i, kept = 0;

    if (ch == NULL)
        return;
    for (i = 0; i < ch->npending; i++) {
        if (ch->pending[i] == c) {
            if (read(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
                fprintf(stderr, "stub-verbs: channel eventfd out of step\n");
        } else {
            ch->pending[kept++] = ch->pending[i];
        }
    }
    ch->npending = kept;
}

int stub_destroy_cq(struct ibv_cq *cq) EXPORT(ibv_destroy_cq);
int stub_destroy_cq(struct ibv_cq *cq)
{
    struct stub_cq *c = (struct stub_cq *)cq;

    if (c == NULL)
        return EINVAL;
    pthread_mutex_lock(&stub_lock);
    if (c->users > 0) {
        pthread_mutex_unlock(&stub_lock);
        return EBUSY;
    }
    if (c->events_delivered != c->cq.comp_events_completed) {
        fprintf(stderr,
                "stub-verbs: ibv_destroy_cq with %u of %u completion events unacknowledged "
                "(rdma-core would block here)\n",
                c->events_delivered - c->cq.comp_events_completed, c->events_delivered);
        pthread_mutex_unlock(&stub_lock);
        return EBUSY;
    }
    unqueue_events(c);
    if (c->cq.channel != NULL)
        c->cq.channel->refcnt--;
    live[STUB_CQ]--;
    pthread_mutex_unlock(&stub_lock);
    pthread_cond_destroy(&c->cq.cond);
    pthread_mutex_destroy(&c->cq.mutex);
    free(c->ring);
    free(c);
    return 0;
}

int stub_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
    EXPORT(ibv_get_cq_event);
int stub_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
    struct stub_channel *c = (struct stub_channel *)ch;
    struct stub_cq *got;
    uint64_t one;

    pthread_mutex_lock(&stub_lock);
    if (c->npending == 0) {
        pthread_mutex_unlock(&stub_lock);
        errno = EAGAIN;
        return -1;
    }
    got = c->pending[0];
    memmove(c->pending, c->pending + 1, (size_t)(c->npending - 1) * sizeof(*c->pending));
    c->npending--;
    if (read(c->ch.fd, &one, sizeof(one)) != sizeof(one))
        fprintf(stderr, "stub-verbs: channel eventfd out of step\n");
    got->events_delivered++;
    pthread_mutex_unlock(&stub_lock);
    *cq = &got->cq;
    *cq_context = got->cq.cq_context;
    return 0;
}

void stub_ack_cq_events(struct ibv_cq *cq, unsigned int nevents) EXPORT(ibv_ack_cq_events);
void stub_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&stub_lock);
    cq->comp_events_completed += nevents;
    pthread_mutex_unlock(&stub_lock);
}

static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    (void)solicited_only;
    pthread_mutex_lock(&stub_lock);
    ((struct stub_cq *)cq)->armed = 1;
    pthread_mutex_unlock(&stub_lock);
    return 0;
}

/* Queues a completion on `c` and signals its channel if it is armed. Under
 * the lock. 0, or ENOMEM if the CQ is full (a CQ overrun on hardware). */
static int complete(struct stub_cq *c, const struct ibv_wc *wc, struct stub_qp *qp, int recv)
{
    struct stub_wc *slot;
    struct stub_channel *ch = (struct stub_channel *)c->cq.channel;

    if (c->count == c->cap) {
        fprintf(stderr, "stub-verbs: CQ overrun (%d entries)\n", c->cap);
        return ENOMEM;
    }
    slot = &c->ring[(c->head + c->count) % c->cap];
    slot->wc = *wc;
    slot->qp = qp;
    slot->recv = recv;
    c->count++;
    if (recv)
        qp->rq_busy++;
    else
        qp->sq_busy++;
    if (c->armed && ch != NULL) {
        uint64_t one = 1;
        if (ch->npending == ch->cap) {
            int cap = ch->cap ? ch->cap * 2 : 8;
            struct stub_cq **p = realloc(ch->pending, (size_t)cap * sizeof(*p));
            if (p == NULL) {
                fprintf(stderr, "stub-verbs: completion event lost (no memory)\n");
                return 0;
            }
            ch->pending = p;
            ch->cap = cap;
        }
        c->armed = 0;
        ch->pending[ch->npending++] = c;
        if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
            fprintf(stderr, "stub-verbs: cannot signal the completion channel\n");
    }
    return 0;
}

static int op_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    struct stub_cq *c = (struct stub_cq *)cq;
    int n = 0;

    pthread_mutex_lock(&stub_lock);
    while (n < num_entries && c->count > 0) {
        struct stub_wc *e = &c->ring[c->head];
        wc[n++] = e->wc;
        if (e->recv)
            e->qp->rq_busy--;
        else
            e->qp->sq_busy--;
        c->head = (c->head + 1) % c->cap;
        c->count--;
    }
    pthread_mutex_unlock(&stub_lock);
    return n;
}

/* ---- queue pairs -------------------------------------------------------- */

struct ibv_qp *stub_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
    EXPORT(ibv_create_qp);
struct ibv_qp *stub_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
    struct stub_qp *q;
    struct ibv_qp_cap *cap;

    if (pd == NULL || init == NULL || init->send_cq == NULL || init->recv_cq == NULL ||
        init->srq != NULL)
        goto inval;
    cap = &init->cap;
    if (cap->max_send_wr > MAX_QP_WR || cap->max_recv_wr > MAX_QP_WR ||
        cap->max_send_sge > MAX_SGE || cap->max_recv_sge > MAX_SGE ||
        cap->max_inline_data > MAX_INLINE)
        goto inval;
    if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC &&
        init->qp_type != IBV_QPT_UD)
        goto inval;
    q = calloc(1, sizeof(*q));
    if (q == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    q->qp.context = pd->context;
    q->qp.qp_context = init->qp_context;
    q->qp.pd = pd;
    q->qp.send_cq = init->send_cq;
    q->qp.recv_cq = init->recv_cq;
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_type = init->qp_type;
    pthread_mutex_init(&q->qp.mutex, NULL);
    pthread_cond_init(&q->qp.cond, NULL);
    q->cap = *cap;
    q->sq_sig_all = init->sq_sig_all;
    pthread_mutex_lock(&stub_lock);
    if (live[STUB_QP] >= MAX_QP) {
        pthread_mutex_unlock(&stub_lock);
        free(q);
        errno = ENOMEM;
        return NULL;
    }
    q->qp.handle = next_handle++;
    q->qp.qp_num = next_qp_num++;
    ((struct stub_pd *)pd)->users++;
    ((struct stub_cq *)init->send_cq)->users++;
    ((struct stub_cq *)init->recv_cq)->users++;
    live[STUB_QP]++;
    pthread_mutex_unlock(&stub_lock);
    return &q->qp;
inval:
    errno = EINVAL;
    return NULL;
}

/* The state transitions of the IB specification's QP state diagram that a
 * consumer asks for (to RESET and to ERR from anywhere). */
static int transition_ok(enum ibv_qp_state from, enum ibv_qp_state to)
{
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
        return 1;
    switch (from) {
    case IBV_QPS_RESET:
        return to == IBV_QPS_INIT;
    case IBV_QPS_INIT:
        return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
    case IBV_QPS_RTR:
        return to == IBV_QPS_RTS;
    case IBV_QPS_RTS:
        return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
    case IBV_QPS_SQD:
        return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
    case IBV_QPS_SQE:
        return to == IBV_QPS_RTS;
    default:
        return 0;
    }
}

int stub_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask) EXPORT(ibv_modify_qp);
int stub_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
    int rc = 0;

    if (qp == NULL || attr == NULL)
        return EINVAL;
    pthread_mutex_lock(&stub_lock);
    if (mask & IBV_QP_STATE) {
        if (transition_ok(qp->state, attr->qp_state))
            qp->state = attr->qp_state;
        else
            rc = EINVAL;
    }
    pthread_mutex_unlock(&stub_lock);
    return rc;
}

/* Removes the completions of `q` from `c` (as providers clean a destroyed
 * QP's entries from its CQs). Under the lock. */
static void purge(struct stub_cq *c, struct stub_qp *q)
{
    int i, kept = 0;

    for (i = 0; i < c->count; i++) {
        struct stub_wc e = c->ring[(c->head + i) % c->cap];
        if (e.qp != q)
            c->ring[(c->head + kept++) % c->cap] = e;
    }
    c->count = kept;
}

int stub_destroy_qp(struct ibv_qp *qp) EXPORT(ibv_destroy_qp);
int stub_destroy_qp(struct ibv_qp *qp)
{
    struct stub_qp *q = (struct stub_qp *)qp;

    if (q == NULL)
        return EINVAL;
    pthread_mutex_lock(&stub_lock);
    purge((struct stub_cq *)qp->send_cq, q);
    purge((struct stub_cq *)qp->recv_cq, q);
    ((struct stub_pd *)qp->pd)->users--;
    ((struct stub_cq *)qp->send_cq)->users--;
    ((struct stub_cq *)qp->recv_cq)->users--;
    live[STUB_QP]--;
    pthread_mutex_unlock(&stub_lock);
    pthread_cond_destroy(&q->qp.cond);
    pthread_mutex_destroy(&q->qp.mutex);
    free(q);
    return 0;
}

static enum ibv_wc_opcode send_opcode(enum ibv_wr_opcode op, int *ok)
{
    *ok = 1;
    switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return IBV_WC_SEND;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    default:
        *ok = 0; /* atomics (the device has none), memory windows, ... */
        return IBV_WC_SEND;
    }
}

static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    struct stub_qp *q = (struct stub_qp *)qp;
    int rc = 0;

    pthread_mutex_lock(&stub_lock);
    for (; wr != NULL; wr = wr->next) {
        struct ibv_wc wc;
        int i, ok, inline_data = (wr->send_flags & IBV_SEND_INLINE) != 0;
        uint32_t len = 0;

        memset(&wc, 0, sizeof(wc));
        wc.wr_id = wr->wr_id;
        wc.qp_num = qp->qp_num;
        wc.opcode = send_opcode(wr->opcode, &ok);
        if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR)
            rc = EINVAL;
        else if (!ok || wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge)
            rc = EINVAL;
        else if ((uint32_t)q->sq_busy >= q->cap.max_send_wr)
            rc = ENOMEM;
        if (rc != 0)
            break;
        for (i = 0; i < wr->num_sge; i++)
            len += wr->sg_list[i].length;
        if (inline_data && len > q->cap.max_inline_data) {
            rc = EINVAL;
            break;
        }
        wc.byte_len = len;
        wc.status = IBV_WC_SUCCESS;
        for (i = 0; i < wr->num_sge && !inline_data; i++)
            if (!sge_ok(qp->pd, &wr->sg_list[i]))
                wc.status = IBV_WC_LOC_PROT_ERR;
        if (qp->state == IBV_QPS_ERR)
            wc.status = IBV_WC_WR_FLUSH_ERR;
        if (wc.status == IBV_WC_LOC_PROT_ERR)
            qp->state = IBV_QPS_ERR;
        if (wc.status != IBV_WC_SUCCESS || q->sq_sig_all ||
            (wr->send_flags & IBV_SEND_SIGNALED)) {
            rc = complete((struct stub_cq *)qp->send_cq, &wc, q, 0);
            if (rc != 0)
                break;
        }
    }
    pthread_mutex_unlock(&stub_lock);
    if (rc != 0)
        *bad = wr;
    return rc;
}

static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    struct stub_qp *q = (struct stub_qp *)qp;
    int rc = 0;

    pthread_mutex_lock(&stub_lock);
    for (; wr != NULL; wr = wr->next) {
        struct ibv_wc wc;
        int i;

        if (qp->state == IBV_QPS_RESET || qp->srq != NULL)
            rc = EINVAL;
        else if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_recv_sge)
            rc = EINVAL;
        else if ((uint32_t)q->rq_busy >= q->cap.max_recv_wr)
            rc = ENOMEM;
        if (rc != 0)
            break;
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = wr->wr_id;
        wc.qp_num = qp->qp_num;
        wc.opcode = IBV_WC_RECV;
        wc.status = IBV_WC_SUCCESS;
        for (i = 0; i < wr->num_sge; i++)
            if (!sge_ok(qp->pd, &wr->sg_list[i]))
                wc.status = IBV_WC_LOC_PROT_ERR;
        if (qp->state == IBV_QPS_ERR)
            wc.status = IBV_WC_WR_FLUSH_ERR;
        if (wc.status == IBV_WC_LOC_PROT_ERR)
            qp->state = IBV_QPS_ERR;
        rc = complete((struct stub_cq *)qp->recv_cq, &wc, q, 1);
        if (rc != 0)
            break;
    }
    pthread_mutex_unlock(&stub_lock);
    if (rc != 0)
        *bad = wr;
    return rc;
}

/* ---- shared receive queues (none on this device) ------------------------- */

struct ibv_srq *stub_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
    EXPORT(ibv_create_srq);
struct ibv_srq *stub_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
    (void)pd;
    (void)init;
    errno = EOPNOTSUPP;
    return NULL;
}

int stub_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
    EXPORT(ibv_modify_srq);
int stub_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
    (void)srq;
    (void)attr;
    (void)mask;
    return ENOSYS;
}

int stub_destroy_srq(struct ibv_srq *srq) EXPORT(ibv_destroy_srq);
int stub_destroy_srq(struct ibv_srq *srq)
{
    (void)srq;
    return ENOSYS;
}

/* ---- asynchronous events (none ever happen) ----------------------------- */

int stub_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
    EXPORT(ibv_get_async_event);
int stub_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
    (void)ctx;
    (void)event;
    errno = EAGAIN;
    return -1;
}

void stub_ack_async_event(struct ibv_async_event *event) EXPORT(ibv_ack_async_event);
void stub_ack_async_event(struct ibv_async_event *event)
{
    (void)event;
}
