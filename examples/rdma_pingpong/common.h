/*
 * Shared helpers of the rdma_pingpong example (server.c, client.c): error
 * reporting with dat_strerror, event waits with a timeout, memory
 * registration, the endpoint attributes both sides use, and the two small
 * messages the sides exchange. Written only against <dat/udat.h>.
 */
#ifndef RDMA_PINGPONG_COMMON_H
#define RDMA_PINGPONG_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dat/udat.h>

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define DEFAULT_IA_NAME "tcp0"
#define DEFAULT_QUAL 4791u
/* Every wait for an event after the connection is up, in microseconds. */
#define WAIT_US (10u * 1000000u)

/* The program's name in messages ("server" or "client"). */
static const char *prog = "?";

/* One line naming the failed call and the DAT error, then exit(1). */
static inline void die_dat(const char *call, DAT_RETURN rc) __attribute__((noreturn));
static inline void die_dat(const char *call, DAT_RETURN rc)
{
    const char *major = "?", *minor = "?";
    const char *paren = strchr(call, '(');
    int n = paren != NULL ? (int)(paren - call) : (int)strlen(call);
    dat_strerror(rc, &major, &minor);
    fflush(stdout);
    fprintf(stderr, "%s: %.*s failed: %s%s%s (0x%08x)\n", prog, n, call, major,
            minor[0] != '\0' ? " " : "", minor, (unsigned)rc);
    exit(1);
}

/* One line of free text, then exit(1). */
static inline void die(const char *what) __attribute__((noreturn));
static inline void die(const char *what)
{
    fflush(stdout);
    fprintf(stderr, "%s: %s\n", prog, what);
    exit(1);
}

#define DAT_CALL(expr)                          \
    do {                                        \
        DAT_RETURN rc_ = (expr);                \
        if (rc_ != DAT_SUCCESS)                 \
            die_dat(#expr, rc_);                \
    } while (0)

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline const char *event_name(DAT_EVENT_NUMBER n)
{
    switch (n) {
    case DAT_DTO_COMPLETION_EVENT: return "DTO_COMPLETION";
    case DAT_RMR_BIND_COMPLETION_EVENT: return "RMR_BIND_COMPLETION";
    case DAT_CONNECTION_REQUEST_EVENT: return "CONNECTION_REQUEST";
    case DAT_CONNECTION_EVENT_ESTABLISHED: return "CONNECTION_EVENT_ESTABLISHED";
    case DAT_CONNECTION_EVENT_PEER_REJECTED: return "CONNECTION_EVENT_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "CONNECTION_EVENT_NON_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR:
        return "CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR";
    case DAT_CONNECTION_EVENT_DISCONNECTED: return "CONNECTION_EVENT_DISCONNECTED";
    case DAT_CONNECTION_EVENT_BROKEN: return "CONNECTION_EVENT_BROKEN";
    case DAT_CONNECTION_EVENT_TIMED_OUT: return "CONNECTION_EVENT_TIMED_OUT";
    case DAT_CONNECTION_EVENT_UNREACHABLE: return "CONNECTION_EVENT_UNREACHABLE";
    default: return "another event";
    }
}

/*
 * Waits up to timeout_us for one event on evd that must be `want`;
 * anything else (timeout, error, another event) ends the program.
 */
static inline void wait_event(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout_us, DAT_EVENT_NUMBER want,
                       const char *what, DAT_EVENT *ev)
{
    DAT_COUNT nmore = 0;
    char msg[200];
    DAT_RETURN rc = dat_evd_wait(evd, timeout_us, 1, ev, &nmore);
    if (DAT_GET_TYPE(rc) == DAT_TIMEOUT_EXPIRED) {
        snprintf(msg, sizeof(msg), "timed out after %.1f s waiting for %s", timeout_us / 1e6,
                 what);
        die(msg);
    }
    if (rc != DAT_SUCCESS)
        die_dat("dat_evd_wait", rc);
    if (ev->event_number != want) {
        snprintf(msg, sizeof(msg), "waiting for %s: got %s (0x%x), expected %s", what,
                 event_name(ev->event_number), (unsigned)ev->event_number, event_name(want));
        die(msg);
    }
}

/* Waits for the completion of the DTO with cookie `cookie`; it must succeed. */
static inline DAT_VLEN wait_dto(DAT_EVD_HANDLE evd, DAT_UINT64 cookie, const char *what)
{
    DAT_EVENT ev;
    char msg[200];
    wait_event(evd, WAIT_US, DAT_DTO_COMPLETION_EVENT, what, &ev);
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
    if (d->status != DAT_DTO_SUCCESS) {
        snprintf(msg, sizeof(msg), "%s completed with DTO status %u", what, (unsigned)d->status);
        die(msg);
    }
    if (d->user_cookie.as_64 != cookie) {
        snprintf(msg, sizeof(msg), "%s: completion of cookie %llu, expected %llu", what,
                 (unsigned long long)d->user_cookie.as_64, (unsigned long long)cookie);
        die(msg);
    }
    return d->transfered_length;
}

/* A registered buffer. */
struct region {
    unsigned char *buf;
    DAT_VLEN len;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lmr_context;
    DAT_RMR_CONTEXT rmr_context;
};

/* Allocates len bytes (page aligned) and registers them with every right. */
static inline void region_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_VLEN len, struct region *r)
{
    DAT_REGION_DESCRIPTION d;
    DAT_VLEN reg_len;
    DAT_VADDR reg_addr;
    void *p = NULL;
    if (posix_memalign(&p, 4096, len ? len : 1) != 0)
        die("out of memory");
    memset(p, 0, len);
    r->buf = p;
    r->len = len;
    d.for_va = p;
    DAT_CALL(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, d, len, pz, DAT_MEM_PRIV_ALL_FLAG, &r->lmr,
                            &r->lmr_context, &r->rmr_context, &reg_len, &reg_addr));
}

static inline void region_free(struct region *r)
{
    DAT_CALL(dat_lmr_free(r->lmr));
    free(r->buf);
}

/* An LMR triplet over [off, off + len) of a region. */
static inline DAT_LMR_TRIPLET triplet(const struct region *r, DAT_VLEN off, DAT_VLEN len)
{
    DAT_LMR_TRIPLET t;
    t.lmr_context = r->lmr_context;
    t.pad = 0;
    t.virtual_address = (DAT_VADDR)(uintptr_t)(r->buf + off);
    t.segment_length = len;
    return t;
}

/* Endpoint attributes: RC, room for one RDMA transfer of max_rdma bytes,
 * and RDMA Reads allowed in both directions (the defaults allow none). */
static inline DAT_EP_ATTR ep_attr(DAT_VLEN max_rdma)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = 4096;
    a.max_rdma_size = max_rdma;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.max_recv_dtos = 4;
    a.max_request_dtos = 4;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    a.max_rdma_read_in = 1;
    a.max_rdma_read_out = 1;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = 1;
    return a;
}

/*
 * The messages (fixed layout, big-endian on the wire):
 *   server -> client  REGION: magic, rmr_context, address, length
 *   client -> server  DONE:   magic, seed of the pattern written, length
 *   server -> client  RESULT: magic, 0 = all bytes as expected, else
 *                             1 + offset of the first wrong byte
 */
#define MAGIC_REGION 0x52474e31u /* "RGN1" */
#define MAGIC_DONE 0x444f4e45u   /* "DONE" */
#define MAGIC_RESULT 0x52534c54u /* "RSLT" */
#define MSG_SIZE 32

static inline void put32(unsigned char *p, uint32_t v)
{
    v = htobe32(v);
    memcpy(p, &v, 4);
}
static inline void put64(unsigned char *p, uint64_t v)
{
    v = htobe64(v);
    memcpy(p, &v, 8);
}
static inline uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return be32toh(v);
}
static inline uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return be64toh(v);
}

/* The pattern the client writes: depends on the offset and a seed. */
static inline unsigned char pattern_byte(uint64_t i, uint32_t seed)
{
    return (unsigned char)((i * 131u) ^ (i >> 9) ^ seed);
}

/* A socket address as text ("192.0.2.1" or "2001:db8::1"). */
static inline const char *addr_str(const struct sockaddr *sa, char *buf, size_t size)
{
    const void *a = sa->sa_family == AF_INET6
                        ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                        : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
    if (inet_ntop(sa->sa_family, a, buf, (socklen_t)size) == NULL)
        snprintf(buf, size, "(family %d)", sa->sa_family);
    return buf;
}

static inline const char *size_str(DAT_VLEN n, char *buf, size_t size)
{
    if (n >= (1u << 20) && n % (1u << 20) == 0)
        snprintf(buf, size, "%llu MiB", (unsigned long long)(n >> 20));
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, size, "%llu KiB", (unsigned long long)(n >> 10));
    else
        snprintf(buf, size, "%llu B", (unsigned long long)n);
    return buf;
}

/* Parses a size with an optional K/M suffix (binary units). */
static inline int parse_size(const char *s, DAT_VLEN *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end != '\0' || v == 0)
        return -1;
    *out = v;
    return 0;
}

#endif
