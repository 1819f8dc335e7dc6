/*
 * A stub librdmacm.so.1 beside the stub libibverbs.so.1 (ibverbs.c): the
 * functions the verbs transport resolves (src/transport/verbs/lib.rs), at
 * rdma-core's versions (rdmacm.map), with rdma-core's <rdma/rdma_cma.h>
 * layouts. Enough to open a device the way the transport does; there is
 * no wire, so no connection is ever made.
 *
 *   rdma_create_event_channel   fd is a real eventfd (never readable: no
 *                               CM event ever happens);
 *   rdma_create_id              any port space; a NULL channel gets one of
 *                               its own, as in rdma-core;
 *   rdma_bind_addr              any IPv4/IPv6 address that is not the
 *                               wildcard binds to the stub device
 *                               (id->verbs, port_num 1); the wildcard binds
 *                               to no device (id->verbs NULL); port 0 gets
 *                               an ephemeral port, a port another id holds
 *                               fails with EADDRINUSE. $STUB_VERBS=nodev:
 *                               -1/ENODEV;
 *   rdma_set_option             accepted for the RDMA_OPTION_ID options;
 *   rdma_get_cm_event           -1/EAGAIN (no event ever happens);
 *   rdma_event_str              the event's name;
 *   everything else             -1/ENOSYS.
 *
 * Ids and event channels are counted as live objects (stub.h).
 */
#define _GNU_SOURCE 1
#include <rdma/rdma_cma.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "stub.h"

#define EXPORT(sym) __asm__(#sym)

#define EPHEMERAL_FIRST 40000

struct stub_id {
    struct rdma_cm_id id;
    int owns_channel;
    int bound;
    struct stub_id *next;
};

/* Guards the list of live ids. */
static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stub_id *ids;
static uint16_t next_port = EPHEMERAL_FIRST;

static int fail(int err)
{
    errno = err;
    return -1;
}

struct rdma_event_channel *stub_create_event_channel(void) EXPORT(rdma_create_event_channel);
struct rdma_event_channel *stub_create_event_channel(void)
{
    struct rdma_event_channel *ch = calloc(1, sizeof(*ch));

    if (ch == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ch->fd < 0) {
        free(ch);
        return NULL;
    }
    stub_verbs_count(STUB_CH, 1);
    return ch;
}

void stub_destroy_event_channel(struct rdma_event_channel *ch)
    EXPORT(rdma_destroy_event_channel);
void stub_destroy_event_channel(struct rdma_event_channel *ch)
{
    if (ch == NULL)
        return;
    close(ch->fd);
    free(ch);
    stub_verbs_count(STUB_CH, -1);
}

int stub_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **out, void *context,
                   enum rdma_port_space ps) EXPORT(rdma_create_id);
int stub_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **out, void *context,
                   enum rdma_port_space ps)
{
    struct stub_id *s;

    if (out == NULL)
        return fail(EINVAL);
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return fail(ENOMEM);
    if (ch == NULL) {
        ch = stub_create_event_channel();
        if (ch == NULL) {
            free(s);
            return -1;
        }
        s->owns_channel = 1;
    }
    s->id.channel = ch;
    s->id.context = context;
    s->id.ps = ps;
    s->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
    pthread_mutex_lock(&ids_lock);
    s->next = ids;
    ids = s;
    pthread_mutex_unlock(&ids_lock);
    stub_verbs_count(STUB_ID, 1);
    *out = &s->id;
    return 0;
}

int stub_destroy_id(struct rdma_cm_id *id) EXPORT(rdma_destroy_id);
int stub_destroy_id(struct rdma_cm_id *id)
{
    struct stub_id *s = (struct stub_id *)id, **at;

    if (s == NULL)
        return fail(EINVAL);
    pthread_mutex_lock(&ids_lock);
    for (at = &ids; *at != NULL && *at != s; at = &(*at)->next) {
    }
    if (*at == NULL) {
        pthread_mutex_unlock(&ids_lock);
        return fail(EINVAL);
    }
    *at = s->next;
    pthread_mutex_unlock(&ids_lock);
    if (s->owns_channel)
        stub_destroy_event_channel(s->id.channel);
    free(s);
    stub_verbs_count(STUB_ID, -1);
    return 0;
}

static uint16_t port_of(const struct sockaddr *a)
{
    return a->sa_family == AF_INET ? ntohs(((const struct sockaddr_in *)(const void *)a)->sin_port)
                                   : ntohs(((const struct sockaddr_in6 *)(const void *)a)->sin6_port);
}

static void set_port(struct sockaddr *a, uint16_t port)
{
    if (a->sa_family == AF_INET)
        ((struct sockaddr_in *)(void *)a)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)(void *)a)->sin6_port = htons(port);
}

static int is_wildcard(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr);
}

/* 1 if a bound id other than `self` holds `port`. Under ids_lock. */
static int port_taken(const struct stub_id *self, uint16_t port)
{
    const struct stub_id *s;

    for (s = ids; s != NULL; s = s->next)
        if (s != self && s->bound && port_of(&s->id.route.addr.src_addr) == port)
            return 1;
    return 0;
}

int stub_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr) EXPORT(rdma_bind_addr);
int stub_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
    struct stub_id *s = (struct stub_id *)id;
    struct ibv_context *ctx;
    uint16_t port;
    size_t len;

    if (s == NULL || addr == NULL)
        return fail(EINVAL);
    if (addr->sa_family == AF_INET)
        len = sizeof(struct sockaddr_in);
    else if (addr->sa_family == AF_INET6)
        len = sizeof(struct sockaddr_in6);
    else
        return fail(EAFNOSUPPORT);
    if (stub_verbs_nodev())
        return fail(ENODEV);
    ctx = is_wildcard(addr) ? NULL : stub_verbs_context();
    pthread_mutex_lock(&ids_lock);
    if (s->bound) {
        pthread_mutex_unlock(&ids_lock);
        return fail(EINVAL);
    }
    port = port_of(addr);
    if (port != 0 && port_taken(s, port)) {
        pthread_mutex_unlock(&ids_lock);
        return fail(EADDRINUSE);
    }
    while (port == 0) {
        uint16_t p = next_port;
        next_port = next_port == 65535 ? EPHEMERAL_FIRST : next_port + 1;
        if (!port_taken(s, p))
            port = p;
    }
    memcpy(&id->route.addr.src_storage, addr, len);
    set_port(&id->route.addr.src_addr, port);
    id->verbs = ctx;
    id->port_num = ctx != NULL ? 1 : 0;
    s->bound = 1;
    pthread_mutex_unlock(&ids_lock);
    return 0;
}

int stub_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
    EXPORT(rdma_set_option);
int stub_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
    if (id == NULL || optval == NULL || optlen == 0)
        return fail(EINVAL);
    if (level != RDMA_OPTION_ID)
        return fail(ENOSYS);
    switch (optname) {
    case RDMA_OPTION_ID_TOS:
    case RDMA_OPTION_ID_REUSEADDR:
    case RDMA_OPTION_ID_AFONLY:
    case RDMA_OPTION_ID_ACK_TIMEOUT:
        return 0;
    default:
        return fail(EINVAL);
    }
}

int stub_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
    EXPORT(rdma_get_cm_event);
int stub_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
{
    (void)ch;
    (void)event;
    return fail(EAGAIN);
}

const char *stub_event_str(enum rdma_cm_event_type event) EXPORT(rdma_event_str);
const char *stub_event_str(enum rdma_cm_event_type event)
{
    static const char *const names[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",    "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",   "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST",  "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",    "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",         "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",     "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",   "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",      "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };

    if ((unsigned)event < sizeof(names) / sizeof(names[0]))
        return names[event];
    return "UNKNOWN EVENT";
}

/* ---- what needs a wire: not in the stub ---------------------------------- */

int stub_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
                      int timeout_ms) EXPORT(rdma_resolve_addr);
int stub_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
                      int timeout_ms)
{
    (void)id;
    (void)src;
    (void)dst;
    (void)timeout_ms;
    return fail(ENOSYS);
}

int stub_resolve_route(struct rdma_cm_id *id, int timeout_ms) EXPORT(rdma_resolve_route);
int stub_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
    (void)id;
    (void)timeout_ms;
    return fail(ENOSYS);
}

int stub_connect(struct rdma_cm_id *id, struct rdma_conn_param *param) EXPORT(rdma_connect);
int stub_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
    (void)id;
    (void)param;
    return fail(ENOSYS);
}

int stub_listen(struct rdma_cm_id *id, int backlog) EXPORT(rdma_listen);
int stub_listen(struct rdma_cm_id *id, int backlog)
{
    (void)id;
    (void)backlog;
    return fail(ENOSYS);
}

int stub_accept(struct rdma_cm_id *id, struct rdma_conn_param *param) EXPORT(rdma_accept);
int stub_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
    (void)id;
    (void)param;
    return fail(ENOSYS);
}

int stub_reject(struct rdma_cm_id *id, const void *data, uint8_t len) EXPORT(rdma_reject);
int stub_reject(struct rdma_cm_id *id, const void *data, uint8_t len)
{
    (void)id;
    (void)data;
    (void)len;
    return fail(ENOSYS);
}

int stub_disconnect(struct rdma_cm_id *id) EXPORT(rdma_disconnect);
int stub_disconnect(struct rdma_cm_id *id)
{
    (void)id;
    return fail(ENOSYS);
}

int stub_ack_cm_event(struct rdma_cm_event *event) EXPORT(rdma_ack_cm_event);
int stub_ack_cm_event(struct rdma_cm_event *event)
{
    (void)event;
    return fail(ENOSYS);
}

int stub_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
    EXPORT(rdma_init_qp_attr);
int stub_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
    (void)id;
    (void)attr;
    (void)mask;
    return fail(ENOSYS);
}

int stub_establish(struct rdma_cm_id *id) EXPORT(rdma_establish);
int stub_establish(struct rdma_cm_id *id)
{
    (void)id;
    return fail(ENOSYS);
}
