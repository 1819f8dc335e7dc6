/*
 * bench_ep: the endpoint layer through the DAT C API, two processes over
 * loopback (fork: the parent is the active side and times, the child the
 * passive side), beside raw TCP between the same two processes in the
 * same run, and beside the queue-pair level (src/bin/qp_bench.rs) when
 * its output is given:
 *
 *   send/recv ping-pong (RTT/2), waiting with dat_evd_wait ("wait") and
 *     polling with dat_evd_dequeue ("poll"); raw TCP: blocking sockets /
 *     busy-polled non-blocking sockets;
 *   RDMA Write ping-pong (RTT/2): each side polls the last byte of its
 *     buffer (dequeuing its EVD in the same loop, which reaps write
 *     completions and drives the provider); raw TCP: busy ping-pong;
 *   RDMA Write / RDMA Read bandwidth, window 8, the initiator waiting or
 *     polling; the target polls its EVD ("poll") or sleeps ("wait": the
 *     transport's progress thread serves it); raw TCP: a one-way stream
 *     to a receiver reading into a buffer as large as the message;
 *   connection setup: dat_ep_create + connect/accept + an 8-byte round
 *     trip + graceful disconnect + dat_ep_free on both sides; raw TCP:
 *     connect + the same round trip + close.
 *
 * Sizes 8 B, 64 B, 1 KiB, 64 KiB, 1 MiB, 8 MiB; median of 3 runs each.
 * Every first transfer of a pattern is checked byte for byte; every call
 * is checked and every wait has a deadline: any failure prints one line
 * and exits 1. Targets are informative (the exit status does not depend
 * on them).
 *
 * Usage: bench_ep [--qp FILE] [--only GROUP]... [IA_NAME]
 *   FILE: what target/release/qp_bench printed in this run (rows are
 *   matched by pattern, waiting style and size; the send/recv ping-pong
 *   takes its "ping-pong 2 procs" rows, two processes as here).
 *   GROUP: send, writepp, write, read, conn (default: all).
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXLEN (8u << 20)
#define WINDOW 8
#define WAIT_US 10000000u /* every DAT wait: 10 s */
#define WAIT_S 10.0
#define RUNS 3
#define MAX_RUNS 15

static const char *who = "bench_ep";

/* --only: the groups to run (none given: all). */
static const char *only[8];
static int n_only;
/* --size, --style, --iters, --runs, --skip-tcp, --skip-ours (see usage). */
static uint64_t opt_size;
static int opt_style = -1;
static uint64_t opt_iters;
static int opt_runs;
static int skip_tcp, skip_ours;
/* --idle: the lockstep mode also dequeues an empty EVD n times. */
static int opt_idle;

static int wanted(const char *group)
{
    if (n_only == 0)
        return 1;
    for (int i = 0; i < n_only; i++)
        if (strcmp(only[i], group) == 0)
            return 1;
    return 0;
}

/* ---- failure reporting ------------------------------------------------- */

static void fail_dat(const char *call, DAT_RETURN rc) __attribute__((noreturn));
static void fail_dat(const char *call, DAT_RETURN rc)
{
    const char *major = "?", *minor = "?";
    dat_strerror(rc, &major, &minor);
    fflush(stdout);
    fprintf(stderr, "%s: FAILED: %s: %s%s%s (0x%08x)\n", who, call, major, minor[0] ? " " : "",
            minor, (unsigned)rc);
    exit(1);
}

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%s: FAILED: ", who);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

#define OK(expr)                                  \
    do {                                          \
        DAT_RETURN rc_ = (expr);                  \
        if (__builtin_expect(rc_ != DAT_SUCCESS, 0)) \
            fail_dat(#expr, rc_);                 \
    } while (0)

/* ---- the control channel (socketpair between the two processes) ------- */

enum op {
    OP_ACCEPT_MAIN = 1, /* accept the main connection */
    OP_SEND_PP,         /* send/recv ping-pong: len, count, style */
    OP_WRITE_PP,        /* RDMA Write ping-pong: len, count */
    OP_TARGET,          /* be an RDMA target until OP_STOP: style */
    OP_STOP,
    OP_CHECK,           /* check dst[0, len) against the pattern */
    OP_CONN,            /* accept, round trip, disconnect: count times */
    OP_TCP_PP,          /* raw TCP ping-pong: len, count, style */
    OP_TCP_SINK,        /* read count * len, then ack one byte: style */
    OP_TCP_SOURCE,      /* write count * len: style */
    OP_TCP_CONN,        /* accept, round trip, close: count times */
    OP_QUIT,
};

enum style { STYLE_WAIT = 0, STYLE_POLL = 1 };

struct cmd {
    uint32_t op, style;
    uint64_t len, count;
};

/* What the server tells the client once at start. */
struct hello {
    struct sockaddr_storage ia_addr;
    DAT_CONN_QUAL qual;
    uint16_t tcp_port;
    DAT_RMR_CONTEXT src_rmr, dst_rmr;
    DAT_VADDR src_addr, dst_addr;
};

static int ctl = -1;

static void ctl_write(const void *buf, size_t len)
{
    const char *b = buf;
    while (len > 0) {
        ssize_t n = write(ctl, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail("control channel: write: %s", n < 0 ? strerror(errno) : "closed");
        b += n;
        len -= (size_t)n;
    }
}

static void ctl_read(void *buf, size_t len, double secs)
{
    char *b = buf;
    double end = bench_now() + secs;
    while (len > 0) {
        struct pollfd p = {ctl, POLLIN, 0};
        int ms = (int)((end - bench_now()) * 1000);
        if (ms < 0)
            fail("control channel: timed out");
        int r = poll(&p, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            fail("control channel: timed out (the other process is stuck?)");
        ssize_t n = read(ctl, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail("control channel: the other process is gone");
        b += n;
        len -= (size_t)n;
    }
}

static int ctl_pending(void)
{
    struct pollfd p = {ctl, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

static void send_cmd(uint32_t op, uint32_t style, uint64_t len, uint64_t count)
{
    struct cmd c = {op, style, len, count};
    ctl_write(&c, sizeof(c));
}

/* One byte: 'R' ready, 'D' done. */
static void tell(char c)
{
    ctl_write(&c, 1);
}

static void expect(char want, double secs)
{
    char c = 0;
    ctl_read(&c, 1, secs);
    if (c != want)
        fail("control channel: got '%c', expected '%c'", c, want);
}

/* ---- DAT state of one side --------------------------------------------- */

struct side {
    int server;
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd, cr_evd, conn_evd, dto_evd, conn2_evd, dto2_evd;
    DAT_PZ_HANDLE pz;
    DAT_PSP_HANDLE psp;
    DAT_EP_HANDLE ep;
    unsigned char *src, *dst; /* MAXLEN each, registered */
    DAT_LMR_HANDLE src_lmr, dst_lmr;
    DAT_LMR_CONTEXT src_ctx, dst_ctx;
    DAT_RMR_CONTEXT src_rmr, dst_rmr;
    struct hello peer; /* the server's (in the client) */
    int tcp;           /* the raw TCP data connection */
    int tcp_listen;    /* server */
};

static struct side S;

static unsigned char pat(uint64_t i)
{
    return (unsigned char)(i * 31u + (i >> 12));
}

static void fill_pattern(unsigned char *b, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        b[i] = pat(i);
}

static int check_pattern(const unsigned char *b, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (b[i] != pat(i))
            return 0;
    return 1;
}

static void reg(unsigned char **buf, DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lctx,
                DAT_RMR_CONTEXT *rctx)
{
    DAT_REGION_DESCRIPTION r;
    DAT_VLEN rlen;
    DAT_VADDR raddr;
    void *p = NULL;
    if (posix_memalign(&p, 4096, MAXLEN) != 0)
        fail("out of memory");
    *buf = p;
    memset(p, 0, MAXLEN);
    r.for_va = p;
    OK(dat_lmr_create(S.ia, DAT_MEM_TYPE_VIRTUAL, r, MAXLEN, S.pz, DAT_MEM_PRIV_ALL_FLAG, lmr,
                      lctx, rctx, &rlen, &raddr));
}

static DAT_EP_ATTR ep_attr(void)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = MAXLEN;
    a.max_rdma_size = MAXLEN;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.max_recv_dtos = 64;
    a.max_request_dtos = 64;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    a.max_rdma_read_in = WINDOW;
    a.max_rdma_read_out = WINDOW;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = 1;
    return a;
}

static void open_side(const char *ia_name)
{
    S.async_evd = DAT_HANDLE_NULL;
    OK(dat_ia_open(ia_name, 8, &S.async_evd, &S.ia));
    OK(dat_evd_create(S.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &S.cr_evd));
    OK(dat_evd_create(S.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &S.conn_evd));
    OK(dat_evd_create(S.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &S.conn2_evd));
    /* One EVD for both directions, as qp_bench uses one CQ per side. */
    OK(dat_evd_create(S.ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &S.dto_evd));
    OK(dat_evd_create(S.ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &S.dto2_evd));
    OK(dat_pz_create(S.ia, &S.pz));
    reg(&S.src, &S.src_lmr, &S.src_ctx, &S.src_rmr);
    reg(&S.dst, &S.dst_lmr, &S.dst_ctx, &S.dst_rmr);
    fill_pattern(S.src, MAXLEN);
}

static DAT_LMR_TRIPLET lt(unsigned char *buf, DAT_LMR_CONTEXT ctx, uint64_t len)
{
    DAT_LMR_TRIPLET t;
    t.lmr_context = ctx;
    t.pad = 0;
    t.virtual_address = (DAT_VADDR)(uintptr_t)buf;
    t.segment_length = len;
    return t;
}

static DAT_RMR_TRIPLET rt(DAT_RMR_CONTEXT ctx, DAT_VADDR addr, uint64_t len)
{
    DAT_RMR_TRIPLET t;
    t.rmr_context = ctx;
    t.pad = 0;
    t.target_address = addr;
    t.segment_length = len;
    return t;
}

static DAT_DTO_COOKIE cookie(uint64_t v)
{
    DAT_DTO_COOKIE c;
    c.as_64 = v;
    return c;
}

/* One event: dat_evd_wait, or dat_evd_dequeue in a loop (deadline checked). */
static void next_event(DAT_EVD_HANDLE evd, int style, DAT_EVENT *ev)
{
    if (style == STYLE_WAIT) {
        DAT_COUNT nmore;
        DAT_RETURN rc = dat_evd_wait(evd, WAIT_US, 1, ev, &nmore);
        if (DAT_GET_TYPE(rc) == DAT_TIMEOUT_EXPIRED)
            fail("dat_evd_wait: timed out after %.0f s", WAIT_S);
        if (rc != DAT_SUCCESS)
            fail_dat("dat_evd_wait", rc);
        return;
    }
    double end = 0;
    for (unsigned spins = 1;; spins++) {
        DAT_RETURN rc = dat_evd_dequeue(evd, ev);
        if (rc == DAT_SUCCESS)
            return;
        if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY)
            fail_dat("dat_evd_dequeue", rc);
        if (spins % 1024 == 0) {
            if (end == 0)
                end = bench_now() + WAIT_S;
            else if (bench_now() > end)
                fail("dat_evd_dequeue: nothing for %.0f s", WAIT_S);
        }
    }
}

/* The next DTO completion; it must have succeeded. */
static const DAT_DTO_COMPLETION_EVENT_DATA *next_dto(DAT_EVD_HANDLE evd, int style,
                                                     DAT_EVENT *ev)
{
    next_event(evd, style, ev);
    if (ev->event_number != DAT_DTO_COMPLETION_EVENT)
        fail("expected a DTO completion, got event 0x%x", (unsigned)ev->event_number);
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
    if (d->status != DAT_DTO_SUCCESS)
        fail("DTO (cookie %llu) completed with status %u",
             (unsigned long long)d->user_cookie.as_64, (unsigned)d->status);
    return d;
}

/* Cookies: the kind of DTO in the top byte. */
#define CK_SEND (1ull << 56)
#define CK_RECV (2ull << 56)
#define CK_WRITE (3ull << 56)
#define CK_READ (4ull << 56)
#define CK_KIND(c) ((c) & (0xffull << 56))

static void conn_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want, const char *what)
{
    DAT_EVENT ev;
    next_event(evd, STYLE_WAIT, &ev);
    if (ev.event_number != want)
        fail("%s: got event 0x%x, expected 0x%x", what, (unsigned)ev.event_number,
             (unsigned)want);
}

/* ---- the passive side (child process) ---------------------------------- */

static void srv_send_pp(const struct cmd *c)
{
    DAT_EVENT ev;
    DAT_LMR_TRIPLET r = lt(S.dst, S.dst_ctx, c->len);
    uint64_t sends = 0;
    OK(dat_ep_post_recv(S.ep, 1, &r, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
    tell('R');
    for (uint64_t i = 0; i < c->count; i++) {
        for (;;) {
            const DAT_DTO_COMPLETION_EVENT_DATA *d = next_dto(S.dto_evd, (int)c->style, &ev);
            if (CK_KIND(d->user_cookie.as_64) == CK_RECV) {
                if (d->transfered_length != c->len)
                    fail("send ping-pong: received %llu bytes, want %llu",
                         (unsigned long long)d->transfered_length, (unsigned long long)c->len);
                break;
            }
            sends--;
        }
        if (i == 0 && !check_pattern(S.dst, c->len))
            fail("send ping-pong: data mismatch at the passive side");
        if (i + 1 < c->count)
            OK(dat_ep_post_recv(S.ep, 1, &r, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
        OK(dat_ep_post_send(S.ep, 1, &r, cookie(CK_SEND), DAT_COMPLETION_DEFAULT_FLAG));
        sends++;
    }
    while (sends > 0) {
        next_dto(S.dto_evd, STYLE_WAIT, &ev);
        sends--;
    }
    tell('D');
}

/*
 * Spins until b[len - 1] == tag, dequeuing the EVD in the loop (write
 * completions: counted in *done). Returns when the byte is there.
 */
static void spin_last_byte(const unsigned char *b, uint64_t len, unsigned char tag,
                           uint64_t *done)
{
    volatile const unsigned char *last = b + len - 1;
    double end = 0;
    DAT_EVENT ev;
    for (unsigned spins = 1; *last != tag; spins++) {
        DAT_RETURN rc = dat_evd_dequeue(S.dto_evd, &ev);
        if (rc == DAT_SUCCESS) {
            if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
                ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS)
                fail("RDMA Write ping-pong: a write failed");
            (*done)++;
        } else if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY) {
            fail_dat("dat_evd_dequeue", rc);
        }
        if (spins % 1024 == 0) {
            if (end == 0)
                end = bench_now() + WAIT_S;
            else if (bench_now() > end)
                fail("RDMA Write ping-pong: the peer's write did not arrive in %.0f s", WAIT_S);
        }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

static void drain_writes(uint64_t posted, uint64_t *done)
{
    DAT_EVENT ev;
    while (*done < posted) {
        next_dto(S.dto_evd, STYLE_WAIT, &ev);
        (*done)++;
    }
}

static unsigned char pp_tag(uint64_t i)
{
    return (unsigned char)(i % 255 + 1);
}

/* Both sides of the RDMA Write ping-pong: `first` writes first. */
static void write_pp(uint64_t len, uint64_t count, int first, DAT_RMR_CONTEXT peer_rmr,
                     DAT_VADDR peer_dst)
{
    DAT_LMR_TRIPLET l = lt(S.src, S.src_ctx, len);
    DAT_RMR_TRIPLET r = rt(peer_rmr, peer_dst, len);
    uint64_t posted = 0, done = 0;
    for (uint64_t i = 0; i < count; i++) {
        unsigned char tag = pp_tag(i);
        if (!first) {
            spin_last_byte(S.dst, len, tag, &done);
            if (i == 0 && !check_pattern(S.dst, len - 1))
                fail("RDMA Write ping-pong: data mismatch");
        }
        S.src[len - 1] = tag;
        OK(dat_ep_post_rdma_write(S.ep, 1, &l, cookie(CK_WRITE), &r,
                                  DAT_COMPLETION_DEFAULT_FLAG));
        posted++;
        if (first) {
            spin_last_byte(S.dst, len, tag, &done);
            if (i == 0 && !check_pattern(S.dst, len - 1))
                fail("RDMA Write ping-pong: data mismatch");
        }
    }
    drain_writes(posted, &done);
    S.src[len - 1] = pat(len - 1);
}

static void srv_target(const struct cmd *c)
{
    struct cmd stop;
    tell('R');
    if (c->style == STYLE_POLL) {
        /* Poll the EVD (drives the provider) until told to stop. */
        DAT_EVENT ev;
        for (unsigned spins = 1;; spins++) {
            DAT_RETURN rc = dat_evd_dequeue(S.dto_evd, &ev);
            if (rc == DAT_SUCCESS)
                fail("RDMA target: unexpected event 0x%x", (unsigned)ev.event_number);
            if (DAT_GET_TYPE(rc) != DAT_QUEUE_EMPTY)
                fail_dat("dat_evd_dequeue", rc);
            if (spins % 64 == 0 && ctl_pending())
                break;
        }
    }
    ctl_read(&stop, sizeof(stop), 60);
    if (stop.op != OP_STOP)
        fail("RDMA target: expected STOP");
    tell('D');
}

static void srv_conn(const struct cmd *c)
{
    DAT_EP_ATTR a = ep_attr();
    DAT_EVENT ev;
    tell('R');
    for (uint64_t i = 0; i < c->count; i++) {
        DAT_EP_HANDLE ep;
        DAT_LMR_TRIPLET r = lt(S.dst, S.dst_ctx, 8);
        next_event(S.cr_evd, STYLE_WAIT, &ev);
        if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
            fail("connections: expected a connection request, got 0x%x",
                 (unsigned)ev.event_number);
        OK(dat_ep_create(S.ia, S.pz, S.dto2_evd, S.dto2_evd, S.conn2_evd, &a, &ep));
        OK(dat_ep_post_recv(ep, 1, &r, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
        OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL));
        conn_event(S.conn2_evd, DAT_CONNECTION_EVENT_ESTABLISHED, "connections (passive)");
        const DAT_DTO_COMPLETION_EVENT_DATA *d = next_dto(S.dto2_evd, STYLE_WAIT, &ev);
        if (CK_KIND(d->user_cookie.as_64) != CK_RECV || d->transfered_length != 8)
            fail("connections: expected the 8-byte request");
        if (i == 0 && !check_pattern(S.dst, 8))
            fail("connections: data mismatch");
        OK(dat_ep_post_send(ep, 1, &r, cookie(CK_SEND), DAT_COMPLETION_DEFAULT_FLAG));
        /* The reply's completion comes before DISCONNECTED (success or flushed). */
        next_event(S.dto2_evd, STYLE_WAIT, &ev);
        if (ev.event_number != DAT_DTO_COMPLETION_EVENT)
            fail("connections: expected the reply's completion");
        conn_event(S.conn2_evd, DAT_CONNECTION_EVENT_DISCONNECTED, "connections (passive)");
        OK(dat_ep_free(ep));
    }
    tell('D');
}

/* ---- raw TCP ------------------------------------------------------------ */

static void set_blocking(int fd, int blocking)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, blocking ? fl & ~O_NONBLOCK : fl | O_NONBLOCK) < 0)
        fail("fcntl: %s", strerror(errno));
}

static void tcp_opts(int fd)
{
    int one = 1;
    struct timeval tv = {(time_t)WAIT_S, 0};
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* read/write exactly len bytes; style POLL: the socket is non-blocking and spun on. */
static void tcp_read(int fd, void *buf, size_t len, int style)
{
    char *b = buf;
    double end = 0;
    unsigned spins = 0;
    while (len > 0) {
        ssize_t n = read(fd, b, len);
        if (n > 0) {
            b += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            fail("tcp: end of stream");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN && style == STYLE_POLL) {
            if (++spins % 1024 == 0) {
                if (end == 0)
                    end = bench_now() + WAIT_S;
                else if (bench_now() > end)
                    fail("tcp: read timed out");
            }
            continue;
        }
        fail("tcp read: %s", strerror(errno));
    }
}

static void tcp_write(int fd, const void *buf, size_t len, int style)
{
    const char *b = buf;
    double end = 0;
    unsigned spins = 0;
    while (len > 0) {
        ssize_t n = write(fd, b, len);
        if (n > 0) {
            b += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN && style == STYLE_POLL) {
            if (++spins % 1024 == 0) {
                if (end == 0)
                    end = bench_now() + WAIT_S;
                else if (bench_now() > end)
                    fail("tcp: write timed out");
            }
            continue;
        }
        fail("tcp write: %s", n < 0 ? strerror(errno) : "wrote nothing");
    }
}

static void srv_tcp_pp(const struct cmd *c)
{
    set_blocking(S.tcp, c->style == STYLE_WAIT);
    tell('R');
    for (uint64_t i = 0; i < c->count; i++) {
        tcp_read(S.tcp, S.dst, c->len, (int)c->style);
        tcp_write(S.tcp, S.dst, c->len, (int)c->style);
    }
    set_blocking(S.tcp, 1);
    tell('D');
}

static void srv_tcp_sink(const struct cmd *c)
{
    uint64_t chunk = c->len < (1u << 20) ? c->len : (1u << 20);
    set_blocking(S.tcp, c->style == STYLE_WAIT);
    tell('R');
    for (uint64_t i = 0; i < c->count; i++) {
        for (uint64_t at = 0; at < c->len; at += chunk)
            tcp_read(S.tcp, S.dst + at, c->len - at < chunk ? c->len - at : chunk, (int)c->style);
        if (i == 0 && !check_pattern(S.dst, c->len))
            fail("tcp stream: data mismatch");
    }
    tcp_write(S.tcp, "k", 1, (int)c->style);
    set_blocking(S.tcp, 1);
    tell('D');
}

static void srv_tcp_source(const struct cmd *c)
{
    set_blocking(S.tcp, c->style == STYLE_WAIT);
    for (uint64_t i = 0; i < c->count; i++)
        tcp_write(S.tcp, S.src, c->len, (int)c->style);
    set_blocking(S.tcp, 1);
    tell('D');
}

static void srv_tcp_conn(const struct cmd *c)
{
    char b[8];
    tell('R');
    for (uint64_t i = 0; i < c->count; i++) {
        int fd = accept(S.tcp_listen, NULL, NULL);
        if (fd < 0)
            fail("tcp accept: %s", strerror(errno));
        tcp_opts(fd);
        tcp_read(fd, b, 8, STYLE_WAIT);
        tcp_write(fd, b, 8, STYLE_WAIT);
        close(fd);
    }
    tell('D');
}

static void server_main(void)
{
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr_attr;
    struct hello h;
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);

    who = "bench_ep (passive side)";
    memset(&h, 0, sizeof(h));
    OK(dat_psp_create_any(S.ia, &h.qual, S.cr_evd, DAT_PSP_CONSUMER_FLAG, &S.psp));
    OK(dat_ia_query(S.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, &pr_attr));
    memcpy(&h.ia_addr, ia_attr.ia_address_ptr,
           ia_attr.ia_address_ptr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                         : sizeof(struct sockaddr_in));
    S.tcp_listen = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (S.tcp_listen < 0 || bind(S.tcp_listen, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(S.tcp_listen, 64) != 0 ||
        getsockname(S.tcp_listen, (struct sockaddr *)&a, &alen) != 0)
        fail("tcp listener: %s", strerror(errno));
    h.tcp_port = ntohs(a.sin_port);
    h.src_rmr = S.src_rmr;
    h.dst_rmr = S.dst_rmr;
    h.src_addr = (DAT_VADDR)(uintptr_t)S.src;
    h.dst_addr = (DAT_VADDR)(uintptr_t)S.dst;
    ctl_write(&h, sizeof(h));
    ctl_read(&S.peer, sizeof(S.peer), 30); /* the active side's buffers */

    for (;;) {
        struct cmd c;
        ctl_read(&c, sizeof(c), 600);
        switch (c.op) {
        case OP_ACCEPT_MAIN: {
            DAT_EP_ATTR at = ep_attr();
            DAT_EVENT ev;
            next_event(S.cr_evd, STYLE_WAIT, &ev);
            if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
                fail("expected a connection request");
            OK(dat_ep_create(S.ia, S.pz, S.dto_evd, S.dto_evd, S.conn_evd, &at, &S.ep));
            OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, S.ep, 0, NULL));
            conn_event(S.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, "main connection");
            S.tcp = accept(S.tcp_listen, NULL, NULL);
            if (S.tcp < 0)
                fail("tcp accept: %s", strerror(errno));
            tcp_opts(S.tcp);
            tell('D');
            break;
        }
        case OP_SEND_PP:
            srv_send_pp(&c);
            break;
        case OP_WRITE_PP:
            S.dst[c.len - 1] = 0;
            tell('R');
            write_pp(c.len, c.count, 0, S.peer.dst_rmr, S.peer.dst_addr);
            tell('D');
            break;
        case OP_TARGET:
            srv_target(&c);
            break;
        case OP_CHECK:
            tell(check_pattern(S.dst, c.len) ? 'D' : 'X');
            break;
        case OP_CONN:
            srv_conn(&c);
            break;
        case OP_TCP_PP:
            srv_tcp_pp(&c);
            break;
        case OP_TCP_SINK:
            srv_tcp_sink(&c);
            break;
        case OP_TCP_SOURCE:
            srv_tcp_source(&c);
            break;
        case OP_TCP_CONN:
            srv_tcp_conn(&c);
            break;
        case OP_QUIT:
            conn_event(S.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, "main connection");
            OK(dat_ep_free(S.ep));
            OK(dat_psp_free(S.psp));
            OK(dat_ia_close(S.ia, DAT_CLOSE_ABRUPT_FLAG));
            tell('D');
            exit(0);
        default:
            fail("unknown command %u", c.op);
        }
    }
}

/* ---- the active side: measurements -------------------------------------- */

/* Send ping-pong: seconds per round trip. */
static double send_pp(uint64_t len, uint64_t warm, uint64_t iters, int style)
{
    DAT_EVENT ev;
    DAT_LMR_TRIPLET s = lt(S.src, S.src_ctx, len), r = lt(S.dst, S.dst_ctx, len);
    uint64_t total = warm + iters, sends = 0;
    double t0 = 0;
    memset(S.dst, 0, len);
    send_cmd(OP_SEND_PP, (uint32_t)style, len, total);
    expect('R', WAIT_S);
    for (uint64_t i = 0; i < total; i++) {
        if (i == warm)
            t0 = bench_now();
        OK(dat_ep_post_recv(S.ep, 1, &r, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
        OK(dat_ep_post_send(S.ep, 1, &s, cookie(CK_SEND), DAT_COMPLETION_DEFAULT_FLAG));
        sends++;
        for (;;) {
            const DAT_DTO_COMPLETION_EVENT_DATA *d = next_dto(S.dto_evd, style, &ev);
            if (CK_KIND(d->user_cookie.as_64) == CK_RECV) {
                if (d->transfered_length != len)
                    fail("send ping-pong: received %llu bytes, want %llu",
                         (unsigned long long)d->transfered_length, (unsigned long long)len);
                break;
            }
            sends--;
        }
        if (i == 0 && !check_pattern(S.dst, len))
            fail("send ping-pong: data mismatch at the active side");
    }
    double per = (bench_now() - t0) / (double)iters;
    while (sends > 0) {
        next_dto(S.dto_evd, STYLE_WAIT, &ev);
        sends--;
    }
    expect('D', 60);
    return per;
}

static double write_pingpong(uint64_t len, uint64_t warm, uint64_t iters)
{
    S.dst[len - 1] = 0;
    send_cmd(OP_WRITE_PP, STYLE_POLL, len, warm);
    expect('R', WAIT_S);
    /* Warm-up round trips, then the timed ones (a fresh tag sequence). */
    write_pp(len, warm, 1, S.peer.dst_rmr, S.peer.dst_addr);
    expect('D', 60);
    S.dst[len - 1] = 0;
    send_cmd(OP_WRITE_PP, STYLE_POLL, len, iters);
    expect('R', WAIT_S);
    double t0 = bench_now();
    write_pp(len, iters, 1, S.peer.dst_rmr, S.peer.dst_addr);
    double per = (bench_now() - t0) / (double)iters;
    expect('D', 60);
    return per;
}

/* One verified transfer (not timed). */
static void rdma_verify(int read, uint64_t len)
{
    DAT_EVENT ev;
    if (read) {
        DAT_LMR_TRIPLET l = lt(S.dst, S.dst_ctx, len);
        DAT_RMR_TRIPLET r = rt(S.peer.src_rmr, S.peer.src_addr, len);
        memset(S.dst, 0, len);
        OK(dat_ep_post_rdma_read(S.ep, 1, &l, cookie(CK_READ), &r, DAT_COMPLETION_DEFAULT_FLAG));
        const DAT_DTO_COMPLETION_EVENT_DATA *d = next_dto(S.dto_evd, STYLE_WAIT, &ev);
        if (d->transfered_length != len)
            fail("RDMA Read: %llu bytes, want %llu", (unsigned long long)d->transfered_length,
                 (unsigned long long)len);
        if (!check_pattern(S.dst, len))
            fail("RDMA Read: data mismatch");
    } else {
        DAT_LMR_TRIPLET l = lt(S.src, S.src_ctx, len);
        DAT_RMR_TRIPLET r = rt(S.peer.dst_rmr, S.peer.dst_addr, len);
        OK(dat_ep_post_rdma_write(S.ep, 1, &l, cookie(CK_WRITE), &r,
                                  DAT_COMPLETION_DEFAULT_FLAG));
        next_dto(S.dto_evd, STYLE_WAIT, &ev);
        send_cmd(OP_CHECK, 0, len, 0);
        char c = 0;
        ctl_read(&c, 1, WAIT_S);
        if (c != 'D')
            fail("RDMA Write: data mismatch at the target");
    }
}

/* Windowed RDMA Writes or Reads: bytes per second. */
static double rdma_bw(int read, uint64_t len, uint64_t count, int style)
{
    DAT_EVENT ev;
    DAT_LMR_TRIPLET l = read ? lt(S.dst, S.dst_ctx, len) : lt(S.src, S.src_ctx, len);
    DAT_RMR_TRIPLET r = read ? rt(S.peer.src_rmr, S.peer.src_addr, len)
                             : rt(S.peer.dst_rmr, S.peer.dst_addr, len);
    uint64_t posted = 0, done = 0;
    send_cmd(OP_TARGET, (uint32_t)style, 0, 0);
    expect('R', WAIT_S);
    double t0 = bench_now();
    while (done < count) {
        while (posted < count && posted - done < WINDOW) {
            if (read)
                OK(dat_ep_post_rdma_read(S.ep, 1, &l, cookie(CK_READ), &r,
                                         DAT_COMPLETION_DEFAULT_FLAG));
            else
                OK(dat_ep_post_rdma_write(S.ep, 1, &l, cookie(CK_WRITE), &r,
                                          DAT_COMPLETION_DEFAULT_FLAG));
            posted++;
        }
        next_dto(S.dto_evd, style, &ev);
        done++;
    }
    double bps = (double)(len * count) / (bench_now() - t0);
    send_cmd(OP_STOP, 0, 0, 0);
    expect('D', WAIT_S);
    return bps;
}

/* Connections per second: create, connect, 8-byte round trip, disconnect, free. */
static double conn_rate(uint64_t count)
{
    DAT_EP_ATTR a = ep_attr();
    DAT_EVENT ev;
    DAT_LMR_TRIPLET s = lt(S.src, S.src_ctx, 8), r = lt(S.dst, S.dst_ctx, 8);
    send_cmd(OP_CONN, 0, 0, count);
    expect('R', WAIT_S);
    double t0 = bench_now();
    for (uint64_t i = 0; i < count; i++) {
        DAT_EP_HANDLE ep;
        OK(dat_ep_create(S.ia, S.pz, S.dto2_evd, S.dto2_evd, S.conn2_evd, &a, &ep));
        OK(dat_ep_post_recv(ep, 1, &r, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
        OK(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&S.peer.ia_addr, S.peer.qual, WAIT_US, 0,
                          NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
        conn_event(S.conn2_evd, DAT_CONNECTION_EVENT_ESTABLISHED, "connections (active)");
        OK(dat_ep_post_send(ep, 1, &s, cookie(CK_SEND), DAT_COMPLETION_DEFAULT_FLAG));
        int got_recv = 0, got_send = 0;
        while (!got_recv || !got_send) {
            const DAT_DTO_COMPLETION_EVENT_DATA *d = next_dto(S.dto2_evd, STYLE_WAIT, &ev);
            if (CK_KIND(d->user_cookie.as_64) == CK_RECV)
                got_recv = 1;
            else
                got_send = 1;
        }
        if (i == 0 && !check_pattern(S.dst, 8))
            fail("connections: data mismatch");
        OK(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
        conn_event(S.conn2_evd, DAT_CONNECTION_EVENT_DISCONNECTED, "connections (active)");
        OK(dat_ep_free(ep));
    }
    double rate = (double)count / (bench_now() - t0);
    expect('D', 60);
    return rate;
}

static double tcp_pp(uint64_t len, uint64_t warm, uint64_t iters, int style)
{
    uint64_t total = warm + iters;
    double t0 = 0;
    send_cmd(OP_TCP_PP, (uint32_t)style, len, total);
    expect('R', WAIT_S);
    set_blocking(S.tcp, style == STYLE_WAIT);
    memset(S.dst, 0, len);
    for (uint64_t i = 0; i < total; i++) {
        if (i == warm)
            t0 = bench_now();
        tcp_write(S.tcp, S.src, len, style);
        tcp_read(S.tcp, S.dst, len, style);
        if (i == 0 && !check_pattern(S.dst, len))
            fail("tcp ping-pong: data mismatch");
    }
    double per = (bench_now() - t0) / (double)iters;
    set_blocking(S.tcp, 1);
    expect('D', 60);
    return per;
}

/* One-way stream: to the passive side (the Write baseline) or from it (Read). */
static double tcp_stream(int from_peer, uint64_t len, uint64_t count, int style)
{
    double t0;
    char k;
    if (from_peer) {
        uint64_t chunk = len < (1u << 20) ? len : (1u << 20);
        set_blocking(S.tcp, style == STYLE_WAIT);
        memset(S.dst, 0, len);
        t0 = bench_now();
        send_cmd(OP_TCP_SOURCE, (uint32_t)style, len, count);
        for (uint64_t i = 0; i < count; i++) {
            for (uint64_t at = 0; at < len; at += chunk)
                tcp_read(S.tcp, S.dst + at, len - at < chunk ? len - at : chunk, style);
            if (i == 0 && !check_pattern(S.dst, len))
                fail("tcp stream: data mismatch");
        }
    } else {
        send_cmd(OP_TCP_SINK, (uint32_t)style, len, count);
        expect('R', WAIT_S);
        set_blocking(S.tcp, style == STYLE_WAIT);
        t0 = bench_now();
        for (uint64_t i = 0; i < count; i++)
            tcp_write(S.tcp, S.src, len, style);
        tcp_read(S.tcp, &k, 1, style);
    }
    double bps = (double)(len * count) / (bench_now() - t0);
    set_blocking(S.tcp, 1);
    expect('D', 60);
    return bps;
}

static double tcp_conn_rate(uint64_t count)
{
    struct sockaddr_in a;
    char b[8];
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(S.peer.tcp_port);
    send_cmd(OP_TCP_CONN, 0, 0, count);
    expect('R', WAIT_S);
    double t0 = bench_now();
    for (uint64_t i = 0; i < count; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
            fail("tcp connect: %s", strerror(errno));
        tcp_opts(fd);
        tcp_write(fd, S.src, 8, STYLE_WAIT);
        tcp_read(fd, b, 8, STYLE_WAIT);
        if (i == 0 && memcmp(b, S.src, 8) != 0)
            fail("tcp connections: data mismatch");
        close(fd);
    }
    double rate = (double)count / (bench_now() - t0);
    expect('D', 60);
    return rate;
}

/* ---- lockstep: both sides in one thread (for counting) ----------------- */

/*
 * Send/recv ping-pong with both endpoints driven by this one thread, in
 * lock step: A posts a receive and a Send; B dequeues until the receive
 * completes, posts a receive and the echo; A dequeues until its receive
 * completes. Loopback TCP delivers inside the sender's system call, so
 * every poll finds what it looks for and the work per round trip does
 * not depend on timing: run it under callgrind or perf stat with two
 * values of n and divide the difference by the difference of n. The raw
 * TCP variant does the same with a write and a read per message.
 * --style wait: dat_evd_wait (threshold 1) instead of dat_evd_dequeue;
 * --idle: then n dequeues of the (empty) EVD, timed.
 * ctests/bench/lockstep_counts.sh runs these under callgrind and perf.
 */
static uint64_t ls_polls;

static void ls_recv(DAT_EVD_HANDLE evd, uint64_t *sends, uint64_t len)
{
    DAT_EVENT ev;
    DAT_COUNT nmore;
    for (;;) {
        DAT_RETURN rc = opt_style == STYLE_WAIT ? dat_evd_wait(evd, WAIT_US, 1, &ev, &nmore)
                                                : dat_evd_dequeue(evd, &ev);
        ls_polls++;
        if (DAT_GET_TYPE(rc) == DAT_QUEUE_EMPTY)
            continue;
        if (rc != DAT_SUCCESS)
            fail_dat("dat_evd_dequeue", rc);
        const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
        if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d->status != DAT_DTO_SUCCESS)
            fail("lockstep: unexpected event 0x%x", (unsigned)ev.event_number);
        if (CK_KIND(d->user_cookie.as_64) == CK_RECV) {
            if (d->transfered_length != len)
                fail("lockstep: received %llu bytes", (unsigned long long)d->transfered_length);
            return;
        }
        (*sends)--;
        if (ls_polls > 1000000000ull)
            fail("lockstep: stuck");
    }
}

#define LS_WARMUP 200

static inline __attribute__((always_inline)) void ls_rounds(DAT_EP_HANDLE a, DAT_EP_HANDLE b,
                                                            uint64_t n, uint64_t len,
                                                            uint64_t *sa, uint64_t *sb, int last)
{
    DAT_LMR_TRIPLET as = lt(S.src, S.src_ctx, len), ar = lt(S.dst + MAXLEN / 2, S.dst_ctx, len);
    DAT_LMR_TRIPLET br = lt(S.dst, S.dst_ctx, len);
    for (uint64_t i = 0; i < n; i++) {
        OK(dat_ep_post_recv(a, 1, &ar, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
        OK(dat_ep_post_send(a, 1, &as, cookie(CK_SEND), DAT_COMPLETION_DEFAULT_FLAG));
        (*sa)++;
        ls_recv(S.dto2_evd, sb, len);
        if (i == 0 && !check_pattern(S.dst, len))
            fail("lockstep: data mismatch");
        if (i + 1 < n || !last)
            OK(dat_ep_post_recv(b, 1, &br, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
        OK(dat_ep_post_send(b, 1, &br, cookie(CK_SEND), DAT_COMPLETION_DEFAULT_FLAG));
        (*sb)++;
        ls_recv(S.dto_evd, sa, len);
        if (i == 0 && !check_pattern(S.dst + MAXLEN / 2, len))
            fail("lockstep: data mismatch (echo)");
    }
}

/* Warm-up round trips (the progress thread still looks after freshly
 * connected endpoints until it sees them polled). */
static __attribute__((noinline)) void ls_warmup_dat(DAT_EP_HANDLE a, DAT_EP_HANDLE b,
                                                    uint64_t len, uint64_t *sa, uint64_t *sb)
{
    ls_rounds(a, b, LS_WARMUP, len, sa, sb, 0);
}

/* The measured loop (callgrind: --toggle-collect='ls_loop_dat*'). */
static __attribute__((noinline)) void ls_loop_dat(DAT_EP_HANDLE a, DAT_EP_HANDLE b, uint64_t n,
                                                  uint64_t len, uint64_t *sa, uint64_t *sb)
{
    ls_rounds(a, b, n, len, sa, sb, 1);
}

/* Dequeues of an empty EVD (the spin of a busy poller; callgrind:
 * --toggle-collect='ls_empty_dat*'). */
static __attribute__((noinline)) void ls_empty_dat(uint64_t n)
{
    DAT_EVENT ev;
    for (uint64_t i = 0; i < n; i++)
        if (DAT_GET_TYPE(dat_evd_dequeue(S.dto_evd, &ev)) != DAT_QUEUE_EMPTY)
            fail("lockstep: unexpected event on an idle EVD");
}

static void lockstep_dat(const char *ia_name, uint64_t n, uint64_t len)
{
    DAT_EP_ATTR at = ep_attr();
    DAT_EP_HANDLE a, b;
    DAT_EVENT ev;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr_attr;
    DAT_CONN_QUAL qual;
    uint64_t sa = 0, sb = 0;
    open_side(ia_name);
    OK(dat_psp_create_any(S.ia, &qual, S.cr_evd, DAT_PSP_CONSUMER_FLAG, &S.psp));
    OK(dat_ia_query(S.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, &pr_attr));
    OK(dat_ep_create(S.ia, S.pz, S.dto_evd, S.dto_evd, S.conn_evd, &at, &a));
    OK(dat_ep_connect(a, ia_attr.ia_address_ptr, qual, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT,
                      DAT_CONNECT_DEFAULT_FLAG));
    next_event(S.cr_evd, STYLE_WAIT, &ev);
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
        fail("lockstep: expected a connection request");
    OK(dat_ep_create(S.ia, S.pz, S.dto2_evd, S.dto2_evd, S.conn2_evd, &at, &b));
    /* A at src -> B at dst; B echoes from dst -> A at dst + MAXLEN/2. */
    DAT_LMR_TRIPLET br = lt(S.dst, S.dst_ctx, len);
    OK(dat_ep_post_recv(b, 1, &br, cookie(CK_RECV), DAT_COMPLETION_DEFAULT_FLAG));
    OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, b, 0, NULL));
    conn_event(S.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, "lockstep (active)");
    conn_event(S.conn2_evd, DAT_CONNECTION_EVENT_ESTABLISHED, "lockstep (passive)");
    ls_warmup_dat(a, b, len, &sa, &sb);
    ls_polls = 0;
    double t0 = bench_now();
    ls_loop_dat(a, b, n, len, &sa, &sb);
    double t = bench_now() - t0;
    printf("lockstep DAT: %llu round trips of %llu B, %.2f %s per round trip, "
           "%.3f us per round trip (both sides, one thread)\n",
           (unsigned long long)n, (unsigned long long)len, (double)ls_polls / (double)n,
           opt_style == STYLE_WAIT ? "waits" : "dequeues", t * 1e6 / (double)n);
    while (sa > 0) {
        next_dto(S.dto_evd, STYLE_WAIT, &ev);
        sa--;
    }
    while (sb > 0) {
        next_dto(S.dto2_evd, STYLE_WAIT, &ev);
        sb--;
    }
    if (opt_idle) {
        t0 = bench_now();
        ls_empty_dat(n);
        printf("lockstep DAT: %.3f us per dequeue of an empty EVD\n",
               (bench_now() - t0) * 1e6 / (double)n);
    }
    OK(dat_ep_disconnect(a, DAT_CLOSE_ABRUPT_FLAG));
    OK(dat_ia_close(S.ia, DAT_CLOSE_ABRUPT_FLAG));
}

/* The measured loop (callgrind: --toggle-collect=ls_loop_tcp). */
static __attribute__((noinline)) uint64_t ls_loop_tcp(int c, int s, unsigned char *src,
                                                      unsigned char *dst, uint64_t n,
                                                      uint64_t len)
{
    uint64_t reads = 0;
    for (uint64_t i = 0; i < n; i++) {
        int fds[2][2] = {{c, s}, {s, c}};
        for (int k = 0; k < 2; k++) {
            tcp_write(fds[k][0], k ? dst : src, len, STYLE_POLL);
            size_t got = 0;
            while (got < len) {
                ssize_t r = read(fds[k][1], dst + got, len - got);
                reads++;
                if (r > 0)
                    got += (size_t)r;
                else if (r == 0 || errno != EAGAIN)
                    fail("tcp read: %s", r == 0 ? "end of stream" : strerror(errno));
            }
        }
        if (i == 0 && !check_pattern(dst, len))
            fail("lockstep tcp: data mismatch");
    }
    return reads;
}

static void lockstep_tcp(uint64_t n, uint64_t len)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof(a);
    unsigned char *src = malloc(len), *dst = malloc(len);
    uint64_t reads;
    if (src == NULL || dst == NULL)
        fail("out of memory");
    fill_pattern(src, len);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) != 0)
        fail("tcp listener: %s", strerror(errno));
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) != 0)
        fail("tcp connect: %s", strerror(errno));
    int s = accept(l, NULL, NULL);
    if (s < 0)
        fail("tcp accept: %s", strerror(errno));
    tcp_opts(c);
    tcp_opts(s);
    set_blocking(c, 0);
    set_blocking(s, 0);
    double t0 = bench_now();
    reads = ls_loop_tcp(c, s, src, dst, n, len);
    double t = bench_now() - t0;
    printf("lockstep raw TCP: %llu round trips of %llu B, %.2f reads per round trip, "
           "%.3f us per round trip (both sides, one thread)\n",
           (unsigned long long)n, (unsigned long long)len, (double)reads / (double)n,
           t * 1e6 / (double)n);
    close(c);
    close(s);
    close(l);
    free(src);
    free(dst);
}

/* ---- qp_bench's figures ------------------------------------------------- */

struct qp_row {
    char pattern[32], wait[8];
    uint64_t size;
    double ours;
};

static struct qp_row qp_rows[64];
static int n_qp_rows;

static void load_qp(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];
    if (f == NULL) {
        fprintf(stderr, "%s: cannot read %s: %s (no queue-pair column)\n", who, path,
                strerror(errno));
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL && n_qp_rows < 64) {
        struct qp_row *r = &qp_rows[n_qp_rows];
        char sunit[8], unit[16];
        double num, tcp;
        /* "{pattern:<27} {wait:>5} {size:>7} {unit:>7} {ours:>11.3} {tcp:>11.3} ..." */
        if (strlen(line) < 40 || strncmp(line, "pattern", 7) == 0)
            continue;
        memcpy(r->pattern, line, 27);
        r->pattern[27] = '\0';
        for (int i = 26; i >= 0 && r->pattern[i] == ' '; i--)
            r->pattern[i] = '\0';
        if (sscanf(line + 27, "%7s %lf %7s %15s %lf %lf", r->wait, &num, sunit, unit, &r->ours,
                   &tcp) != 6)
            continue;
        r->size = (uint64_t)num * (strcmp(sunit, "MiB") == 0   ? (1u << 20)
                                   : strcmp(sunit, "KiB") == 0 ? 1024u
                                                               : 1u);
        n_qp_rows++;
    }
    fclose(f);
}

static double qp_figure(const char *pattern, const char *wait, uint64_t size)
{
    for (int i = 0; i < n_qp_rows; i++)
        if (strcmp(qp_rows[i].pattern, pattern) == 0 && strcmp(qp_rows[i].wait, wait) == 0 &&
            qp_rows[i].size == size)
            return qp_rows[i].ours;
    return NAN;
}

/* ---- the table ---------------------------------------------------------- */

static const char *size_name(uint64_t n, char *b, size_t sz)
{
    if (n >= (1u << 20))
        snprintf(b, sz, "%llu MiB", (unsigned long long)(n >> 20));
    else if (n >= 1024)
        snprintf(b, sz, "%llu KiB", (unsigned long long)(n >> 10));
    else
        snprintf(b, sz, "%llu B", (unsigned long long)n);
    return b;
}

static void fmt(char *b, size_t sz, double v)
{
    if (isnan(v))
        snprintf(b, sz, "-");
    else
        snprintf(b, sz, "%.3f", v);
}

static void fmt_ratio(char *b, size_t sz, double a, double base)
{
    if (isnan(a) || isnan(base) || base <= 0)
        snprintf(b, sz, "-");
    else
        snprintf(b, sz, "%.2fx", a / base);
}

static void header(void)
{
    printf("%-30s %5s %7s %6s %10s %10s %7s %10s %7s  %s\n", "pattern", "wait", "size", "unit",
           "ours", "raw TCP", "ratio", "QP level", "vs QP", "targets (informative)");
    fflush(stdout);
}

/*
 * One row. lower: smaller is better (latency). Targets: ours/tcp against
 * tcp_limit (0: none), ours/qp within 2 % (when the QP figure is known).
 */
static void row(const char *pattern, const char *wait, uint64_t size, const char *unit,
                double ours, double tcp, double qp, int lower, double tcp_limit)
{
    char sz[24], o[24], t[24], r[24], q[24], rq[24], tgt[96] = "";
    size_name(size, sz, sizeof(sz));
    fmt(o, sizeof(o), ours);
    fmt(t, sizeof(t), tcp);
    fmt(q, sizeof(q), qp);
    fmt_ratio(r, sizeof(r), ours, tcp);
    fmt_ratio(rq, sizeof(rq), ours, qp);
    size_t n = 0;
    if (tcp_limit > 0 && !isnan(ours) && !isnan(tcp) && tcp > 0) {
        double x = ours / tcp;
        int ok = lower ? x <= tcp_limit : x >= tcp_limit;
        n += (size_t)snprintf(tgt + n, sizeof(tgt) - n, "tcp %s %.2fx: %s", lower ? "<=" : ">=",
                              tcp_limit, ok ? "ok" : "MISSED");
    }
    if (!isnan(qp) && qp > 0 && !isnan(ours)) {
        double x = ours / qp;
        int ok = lower ? x <= 1.02 : x >= 1.0 / 1.02;
        n += (size_t)snprintf(tgt + n, sizeof(tgt) - n, "%sQP %s: %s", n ? "; " : "",
                              lower ? "<= 1.02x" : ">= 0.98x", ok ? "ok" : "MISSED");
    }
    printf("%-30s %5s %7s %6s %10s %10s %7s %10s %7s  %s\n", pattern, wait, sz, unit, o, t, r, q,
           rq, tgt);
    fflush(stdout);
}

/* ---- the active side (parent process) ---------------------------------- */

static int runs(void)
{
    return opt_runs > 0 ? opt_runs : RUNS;
}

static double median_of(double (*f)(void *), void *ctx)
{
    double v[MAX_RUNS];
    for (int i = 0; i < runs(); i++)
        v[i] = f(ctx);
    return bench_median(v, runs());
}

struct lat_args {
    uint64_t len, warm, iters;
    int style, kind; /* kind: 0 send, 1 write, 2 tcp */
};

static double lat_run(void *p)
{
    struct lat_args *a = p;
    switch (a->kind) {
    case 0:
        return send_pp(a->len, a->warm, a->iters, a->style) * 0.5e6;
    case 1:
        return write_pingpong(a->len, a->warm, a->iters) * 0.5e6;
    default:
        return tcp_pp(a->len, a->warm, a->iters, a->style) * 0.5e6;
    }
}

struct bw_args {
    uint64_t len, count;
    int style, read, tcp;
};

static double bw_run(void *p)
{
    struct bw_args *a = p;
    if (a->tcp)
        return tcp_stream(a->read, a->len, a->count, a->style) / 1e9;
    return rdma_bw(a->read, a->len, a->count, a->style) / 1e9;
}

struct conn_args {
    uint64_t count;
    int tcp;
};

static double conn_run(void *p)
{
    struct conn_args *a = p;
    return a->tcp ? tcp_conn_rate(a->count) : conn_rate(a->count);
}

static const struct {
    uint64_t len, lat_iters, bw_count;
} SIZES[] = {
    {8, 3000, 20000},      {64, 3000, 20000},    {1024, 3000, 20000},
    {65536, 500, 2000},    {1u << 20, 60, 128}, {8u << 20, 10, 16},
};
#define NSIZES (sizeof(SIZES) / sizeof(SIZES[0]))

static int size_wanted(uint64_t len)
{
    return opt_size == 0 || opt_size == len;
}

static int style_wanted(int style)
{
    return opt_style < 0 || opt_style == style;
}

static const char *style_name(int style)
{
    return style == STYLE_WAIT ? "wait" : "poll";
}

static const char *qp_style(int style)
{
    return style == STYLE_WAIT ? "block" : "busy";
}

static void client_main(pid_t child)
{
    double t_start = bench_now();
    struct lat_args la;
    struct bw_args ba;
    struct conn_args ca;

    ctl_read(&S.peer, sizeof(S.peer), 30);
    {
        struct hello h;
        memset(&h, 0, sizeof(h));
        h.src_rmr = S.src_rmr;
        h.dst_rmr = S.dst_rmr;
        h.src_addr = (DAT_VADDR)(uintptr_t)S.src;
        h.dst_addr = (DAT_VADDR)(uintptr_t)S.dst;
        ctl_write(&h, sizeof(h));
    }
    {
        DAT_EP_ATTR at = ep_attr();
        send_cmd(OP_ACCEPT_MAIN, 0, 0, 0);
        OK(dat_ep_create(S.ia, S.pz, S.dto_evd, S.dto_evd, S.conn_evd, &at, &S.ep));
        OK(dat_ep_connect(S.ep, (DAT_IA_ADDRESS_PTR)&S.peer.ia_addr, S.peer.qual, WAIT_US, 0,
                          NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
        conn_event(S.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, "main connection");
        struct sockaddr_in a;
        memset(&a, 0, sizeof(a));
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(S.peer.tcp_port);
        S.tcp = socket(AF_INET, SOCK_STREAM, 0);
        if (S.tcp < 0 || connect(S.tcp, (struct sockaddr *)&a, sizeof(a)) != 0)
            fail("tcp connect: %s", strerror(errno));
        tcp_opts(S.tcp);
        expect('D', WAIT_S);
    }

    header();
    /* Send/recv ping-pong, both waiting styles. */
    for (int style = STYLE_WAIT; style <= STYLE_POLL && wanted("send"); style++) {
        if (!style_wanted(style))
            continue;
        for (size_t i = 0; i < NSIZES; i++) {
            uint64_t len = SIZES[i].len;
            if (!size_wanted(len))
                continue;
            uint64_t iters = opt_iters ? opt_iters : SIZES[i].lat_iters;
            la = (struct lat_args){len, iters / 10 + 2, iters, style, 0};
            double ours = skip_ours ? NAN : median_of(lat_run, &la);
            la.kind = 2;
            double tcp = skip_tcp ? NAN : median_of(lat_run, &la);
            /* The two-process rows (the same harness shape as here), else
             * the two-thread ones. */
            double qp = qp_figure("ping-pong 2 procs (RTT/2)", qp_style(style), len);
            if (isnan(qp))
                qp = qp_figure("ping-pong latency (RTT/2)", qp_style(style), len);
            row("send/recv ping-pong (RTT/2)", style_name(style), len, "us", ours, tcp, qp, 1,
                len <= 1024 ? 1.07 : 0);
        }
    }
    /* RDMA Write ping-pong, polling the last byte. */
    for (size_t i = 0; i < NSIZES && wanted("writepp"); i++) {
        uint64_t len = SIZES[i].len;
        if (!size_wanted(len))
            continue;
        uint64_t iters = opt_iters ? opt_iters : SIZES[i].lat_iters;
        la = (struct lat_args){len, iters / 10 + 2, iters, STYLE_POLL, 1};
        double ours = skip_ours ? NAN : median_of(lat_run, &la);
        la.kind = 2;
        double tcp = skip_tcp ? NAN : median_of(lat_run, &la);
        row("RDMA Write ping-pong (RTT/2)", "poll", len, "us", ours, tcp, NAN, 1,
            len <= 1024 ? 1.07 : 0);
    }
    /* Bandwidth. */
    for (int read = 0; read <= 1; read++) {
        if (!wanted(read ? "read" : "write"))
            continue;
        for (int style = STYLE_WAIT; style <= STYLE_POLL; style++) {
            if (!style_wanted(style))
                continue;
            for (size_t i = 0; i < NSIZES; i++) {
                uint64_t len = SIZES[i].len;
                if (!size_wanted(len))
                    continue;
                rdma_verify(read, len);
                ba = (struct bw_args){len, opt_iters ? opt_iters : SIZES[i].bw_count, style, read,
                                      0};
                double ours = skip_ours ? NAN : median_of(bw_run, &ba);
                ba.tcp = 1;
                double tcp = skip_tcp ? NAN : median_of(bw_run, &ba);
                const char *name = read ? "RDMA Read bandwidth" : "RDMA Write bandwidth";
                double qp = qp_figure(name, qp_style(style), len);
                /* Small messages in MB/s (qp_bench has no figure for them). */
                double scale = len < 65536 ? 1000 : 1;
                row(read ? "RDMA Read bandwidth (win 8)" : "RDMA Write bandwidth (win 8)",
                    style_name(style), len, len < 65536 ? "MB/s" : "GB/s", ours * scale,
                    tcp * scale, qp * scale, 0, len >= (1u << 20) ? 0.93 : 0);
            }
        }
    }
    /* Connection setup. */
    if (wanted("conn")) {
        ca = (struct conn_args){opt_iters ? opt_iters : 200, 0};
        double ours = skip_ours ? NAN : median_of(conn_run, &ca);
        ca.tcp = 1;
        double tcp = skip_tcp ? NAN : median_of(conn_run, &ca);
        row("connect+accept+RT+disconnect", "wait", 8, "conn/s", ours, tcp,
            qp_figure("connection setup+RT+close", "block", 8), 0, 0);
    }

    /* Done: disconnect the main connection, let the passive side finish. */
    OK(dat_ep_disconnect(S.ep, DAT_CLOSE_GRACEFUL_FLAG));
    conn_event(S.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, "main connection");
    send_cmd(OP_QUIT, 0, 0, 0);
    expect('D', 30);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("the passive side exited with status 0x%x", status);
    OK(dat_ep_free(S.ep));
    OK(dat_ia_close(S.ia, DAT_CLOSE_ABRUPT_FLAG));
    printf("ours: through the DAT C API, two processes over loopback (%s); raw TCP: the same "
           "pattern between the same processes (wait: blocking sockets, poll: busy-polled "
           "non-blocking ones); ratio = ours / raw TCP; QP level: qp_bench's figure for the "
           "same pattern (block/busy; send/recv ping-pong: its two-process rows, the same "
           "harness shape as here; the rest: two threads of one process, fresh "
           "connections), vs QP = ours / QP level (latency: lower is better, "
           "the rest: higher is better). Median of %d runs. Total %.1f s.\n",
           "tcp0", runs(), bench_now() - t_start);
}

static void on_alarm(int sig)
{
    static const char m[] = "bench_ep: FAILED: the run took more than 300 s\n";
    (void)sig;
    if (write(2, m, sizeof(m) - 1) < 0) {
    }
    _exit(1);
}

int main(int argc, char **argv)
{
    const char *ia_name = "tcp0";
    int sv[2];
    uint64_t lockstep = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--qp") == 0 && i + 1 < argc)
            load_qp(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc && n_only < 8)
            only[n_only++] = argv[++i];
        else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
            opt_size = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--style") == 0 && i + 1 < argc) {
            i++;
            opt_style = strcmp(argv[i], "poll") == 0 ? STYLE_POLL : STYLE_WAIT;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            opt_iters = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            opt_runs = atoi(argv[++i]);
            if (opt_runs < 1 || opt_runs > MAX_RUNS)
                opt_runs = RUNS;
        } else if (strcmp(argv[i], "--lockstep") == 0 && i + 1 < argc)
            lockstep = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--skip-tcp") == 0)
            skip_tcp = 1;
        else if (strcmp(argv[i], "--skip-ours") == 0)
            skip_ours = 1;
        else if (strcmp(argv[i], "--idle") == 0)
            opt_idle = 1;
        else if (argv[i][0] != '-')
            ia_name = argv[i];
        else {
            fprintf(stderr,
                    "usage: %s [--qp QP_BENCH_OUTPUT] [--only GROUP]... [--size BYTES] "
                    "[--style wait|poll] [--iters N] [--runs N] [--skip-tcp] [--skip-ours] "
                    "[--lockstep N [--idle]] [IA_NAME]\n",
                    argv[0]);
            return 2;
        }
    }
    if (lockstep > 0) {
        uint64_t len = opt_size ? opt_size : 8;
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (len > MAXLEN / 2)
            fail("--lockstep: at most %u bytes", MAXLEN / 2);
        if (!skip_ours)
            lockstep_dat(ia_name, lockstep, len);
        if (!skip_tcp)
            lockstep_tcp(lockstep, len);
        return 0;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        fail("socketpair: %s", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        fail("fork: %s", strerror(errno));
    signal(SIGALRM, on_alarm);
    alarm(300); /* the whole run, whatever happens */
    ctl = pid == 0 ? sv[1] : sv[0];
    close(pid == 0 ? sv[0] : sv[1]);
    S.server = pid == 0;
    open_side(ia_name);
    if (pid == 0) {
        server_main();
        return 0;
    }
    client_main(pid);
    return 0;
}
