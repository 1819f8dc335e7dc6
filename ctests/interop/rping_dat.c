/*
 * rping_dat: rdma-core's rping exchange, spoken by a DAT 1.2 consumer, to
 * check the library against the Linux kernel's siw (and any other iWARP
 * peer running rping).
 *
 * The protocol (facts from rdma-core's librdmacm/examples/rping.c): every
 * message is a 16-byte Send {be64 addr; be32 rkey; be32 size}. Per ping the
 * client advertises its source buffer, the server RDMA-Reads it and answers
 * with a "go ahead" Send; the client advertises its sink buffer, the server
 * RDMA-Writes the data into it and answers again; the client compares sink
 * and source (-V). The client's data is "rdma-ping-N: " followed by letters
 * 'A'..'z' cycling from a start letter that advances per ping, with a NUL
 * in the last byte (the server writes strlen + 1 bytes back). The client
 * ends the connection after -C pings; a server goes on until the client
 * disconnects.
 *
 * Usage:
 *   rping_dat -s [-a ADDR] [-p PORT] [-C COUNT] [-S SIZE] [-V] [-D IA] [-t SECS]
 *   rping_dat -c -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-V] [-D IA] [-t SECS] [-r]
 *     -s / -c   server (accepts one rping client) / client (default)
 *     -a ADDR   client: the server's address; server: ignored (the IA's address)
 *     -p PORT   connection qualifier, i.e. TCP port (default 7174, rping's)
 *     -C COUNT  pings (default 10 for the client; server: 0 = until the client leaves)
 *     -S SIZE   ping size in bytes, as rping's -S (default 64)
 *     -V        verify the data (client: sink == source; server: the pattern read)
 *     -D IA     IA name (default tcp0)
 *     -t SECS   deadline for the whole run (default 60); every wait ends by it
 *     -w SECS   longest wait for any one event after the connection (default 10)
 *     -r        client: retry the connection until the deadline (server not up yet)
 *     -I N/-O N the endpoint's max_rdma_read_in / max_rdma_read_out (default 1 each;
 *               a peer cannot RDMA Read from an endpoint that advertises IRD 0)
 *     -v        one line per ping and the endpoint's attributes after connecting
 * Exit status 0 when every ping went through (and verified with -V), 1 with
 * a one-line reason otherwise, 2 for bad usage.
 */
#define _GNU_SOURCE 1
#include <dat/udat.h>

#include <arpa/inet.h>
#include <endian.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG_LEN 16           /* rping's struct rping_rdma_info */
#define MIN_SIZE 23          /* rping 44's minimum -S */
#define MAX_SIZE 65535       /* rping's maximum -S (RPING_BUFSIZE - 1) */

static const char *role = "client";
static double deadline;      /* CLOCK_MONOTONIC seconds */
static double max_wait = 10; /* seconds, one event */
static int verbose;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "rping_dat: %s: ", role);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void die_dat(const char *call, DAT_RETURN rc) __attribute__((noreturn));
static void die_dat(const char *call, DAT_RETURN rc)
{
    const char *major = "?", *minor = "?";
    dat_strerror(rc, &major, &minor);
    die("%s failed: %s%s%s (0x%08x)", call, major, minor[0] ? " " : "", minor, (unsigned)rc);
}

#define DAT_CALL(call, expr)                    \
    do {                                        \
        DAT_RETURN rc_ = (expr);                \
        if (rc_ != DAT_SUCCESS)                 \
            die_dat(call, rc_);                 \
    } while (0)

static void on_alarm(int sig)
{
    static const char msg[] = "rping_dat: deadline passed (a call did not return)\n";
    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

/* Microseconds to wait: up to `limit` seconds, never past the deadline. */
static DAT_TIMEOUT wait_us(double limit)
{
    double left = deadline - now_s();
    if (left > limit)
        left = limit;
    if (left < 0.001)
        left = 0.001;
    return (DAT_TIMEOUT)(left * 1e6);
}

static const char *event_name(DAT_EVENT_NUMBER n)
{
    switch (n) {
    case DAT_DTO_COMPLETION_EVENT: return "DTO_COMPLETION";
    case DAT_CONNECTION_REQUEST_EVENT: return "CONNECTION_REQUEST";
    case DAT_CONNECTION_EVENT_ESTABLISHED: return "ESTABLISHED";
    case DAT_CONNECTION_EVENT_PEER_REJECTED: return "PEER_REJECTED";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "NON_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return "ACCEPT_COMPLETION_ERROR";
    case DAT_CONNECTION_EVENT_DISCONNECTED: return "DISCONNECTED";
    case DAT_CONNECTION_EVENT_BROKEN: return "BROKEN";
    case DAT_CONNECTION_EVENT_TIMED_OUT: return "TIMED_OUT";
    case DAT_CONNECTION_EVENT_UNREACHABLE: return "UNREACHABLE";
    default: return "another event";
    }
}

/* One event from evd within `limit` seconds (and the deadline); 0 on timeout. */
static int get_event(DAT_EVD_HANDLE evd, double limit, DAT_EVENT *ev)
{
    DAT_COUNT nmore = 0;
    DAT_RETURN rc = dat_evd_wait(evd, wait_us(limit), 1, ev, &nmore);
    if (DAT_GET_TYPE(rc) == DAT_TIMEOUT_EXPIRED)
        return 0;
    if (rc != DAT_SUCCESS)
        die_dat("dat_evd_wait", rc);
    return 1;
}

/* A successful DTO completion with this cookie; returns the length. */
static DAT_VLEN wait_dto(DAT_EVD_HANDLE evd, uint64_t cookie, const char *what)
{
    DAT_EVENT ev;
    double t0 = now_s();
    if (!get_event(evd, max_wait, &ev))
        die("timed out after %.1f s waiting for the completion of %s", now_s() - t0, what);
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT)
        die("waiting for the completion of %s: got %s", what, event_name(ev.event_number));
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
    if (d->status != DAT_DTO_SUCCESS)
        die("%s completed with DTO status %u%s", what, (unsigned)d->status,
            d->status == DAT_DTO_ERR_FLUSHED ? " (flushed: the connection ended)" : "");
    if (d->user_cookie.as_64 != cookie)
        die("completion of cookie %llu while waiting for %s (cookie %llu)",
            (unsigned long long)d->user_cookie.as_64, what, (unsigned long long)cookie);
    return d->transfered_length;
}

struct region {
    unsigned char *buf;
    DAT_VLEN len;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lmr_context;
    DAT_RMR_CONTEXT rmr_context;
};

static void region_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_VLEN len, DAT_MEM_PRIV_FLAGS priv,
                          struct region *r)
{
    DAT_REGION_DESCRIPTION d;
    DAT_VLEN reg_len;
    DAT_VADDR reg_addr;
    void *p = NULL;
    if (posix_memalign(&p, 4096, len) != 0)
        die("out of memory");
    memset(p, 0, len);
    r->buf = p;
    r->len = len;
    d.for_va = p;
    DAT_CALL("dat_lmr_create", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, d, len, pz, priv, &r->lmr,
                                              &r->lmr_context, &r->rmr_context, &reg_len,
                                              &reg_addr));
}

static void region_free(struct region *r)
{
    DAT_CALL("dat_lmr_free", dat_lmr_free(r->lmr));
    free(r->buf);
}

static DAT_LMR_TRIPLET triplet(const struct region *r, DAT_VLEN off, DAT_VLEN len)
{
    DAT_LMR_TRIPLET t;
    t.lmr_context = r->lmr_context;
    t.pad = 0;
    t.virtual_address = (DAT_VADDR)(uintptr_t)(r->buf + off);
    t.segment_length = len;
    return t;
}

/* rping's message: {be64 addr; be32 rkey; be32 size}. */
static void put_info(unsigned char *p, uint64_t addr, uint32_t rkey, uint32_t size)
{
    uint64_t a = htobe64(addr);
    uint32_t k = htobe32(rkey), s = htobe32(size);
    memcpy(p, &a, 8);
    memcpy(p + 8, &k, 4);
    memcpy(p + 12, &s, 4);
}

static void get_info(const unsigned char *p, uint64_t *addr, uint32_t *rkey, uint32_t *size)
{
    uint64_t a;
    uint32_t k, s;
    memcpy(&a, p, 8);
    memcpy(&k, p + 8, 4);
    memcpy(&s, p + 12, 4);
    *addr = be64toh(a);
    *rkey = be32toh(k);
    *size = be32toh(s);
}

/* The data an rping client sends in ping number `ping` (0-based). */
static void fill_ping(unsigned char *buf, size_t size, int ping)
{
    int start = 65 + ping % 58; /* 'A' + ping, wrapping after 'z' */
    int cc = snprintf((char *)buf, size, "rdma-ping-%d: ", ping);
    unsigned char c = (unsigned char)start;
    if (cc < 0 || (size_t)cc > size)
        cc = (int)size;
    for (size_t i = (size_t)cc; i < size; i++) {
        buf[i] = c;
        if (++c > 122)
            c = 65;
    }
    buf[size - 1] = 0;
}

struct opts {
    int server;
    const char *addr;
    unsigned port;
    int count;
    unsigned size;
    int validate;
    const char *ia_name;
    int retry;
    int ird, ord;
};

struct conn {
    DAT_IA_HANDLE ia;
    DAT_PZ_HANDLE pz;
    DAT_EVD_HANDLE conn_evd, req_evd, recv_evd, cr_evd;
    DAT_EP_HANDLE ep;
    struct region msg;  /* [0,16) send, [16,32) send #2, [32,48) recv 1, [48,64) recv 2 */
    struct region rdma; /* server: read target / write source; client: the sink */
    struct region src;  /* client: the source */
    uint64_t send_cookie;
};

static DAT_EP_ATTR ep_attr(const struct opts *o)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = 4096;
    a.max_rdma_size = o->size;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.max_recv_dtos = 4;
    a.max_request_dtos = 8;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    a.max_rdma_read_in = o->ird;
    a.max_rdma_read_out = o->ord;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = 1;
    return a;
}

static void post_recv(struct conn *c, int slot)
{
    DAT_LMR_TRIPLET t = triplet(&c->msg, 32 + 16 * (DAT_VLEN)slot, MSG_LEN);
    DAT_DTO_COOKIE ck;
    ck.as_64 = 100 + (uint64_t)slot;
    DAT_CALL("dat_ep_post_recv", dat_ep_post_recv(c->ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG));
}

/* A received message: 16 bytes; returns its slot (reposted) and copies it. */
static int wait_recv(struct conn *c, const char *what, unsigned char out[MSG_LEN])
{
    DAT_EVENT ev;
    double t0 = now_s();
    if (!get_event(c->recv_evd, max_wait, &ev))
        die("timed out after %.1f s waiting for %s", now_s() - t0, what);
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT)
        die("waiting for %s: got %s", what, event_name(ev.event_number));
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
    if (d->status != DAT_DTO_SUCCESS)
        return -1; /* flushed: the caller looks at the connection */
    int slot = (int)(d->user_cookie.as_64 - 100);
    if (slot < 0 || slot > 1)
        die("receive completion with unknown cookie %llu", (unsigned long long)d->user_cookie.as_64);
    if (d->transfered_length != MSG_LEN)
        die("%s: %llu bytes, rping's messages are %d", what,
            (unsigned long long)d->transfered_length, MSG_LEN);
    memcpy(out, c->msg.buf + 32 + 16 * slot, MSG_LEN);
    post_recv(c, slot);
    return slot;
}

/* Sends 16 bytes from send slot `slot` and reaps nothing (see send_done). */
static uint64_t post_send(struct conn *c, int slot)
{
    DAT_LMR_TRIPLET t = triplet(&c->msg, 16 * (DAT_VLEN)slot, MSG_LEN);
    DAT_DTO_COOKIE ck;
    ck.as_64 = ++c->send_cookie;
    DAT_CALL("dat_ep_post_send", dat_ep_post_send(c->ep, 1, &t, ck, DAT_COMPLETION_DEFAULT_FLAG));
    return ck.as_64;
}

static void setup(struct conn *c, const struct opts *o)
{
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_CALL("dat_ia_open", dat_ia_open(o->ia_name, 8, &async_evd, &c->ia));
    DAT_CALL("dat_evd_create", dat_evd_create(c->ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
                                              &c->conn_evd));
    DAT_CALL("dat_evd_create", dat_evd_create(c->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
                                              &c->req_evd));
    DAT_CALL("dat_evd_create", dat_evd_create(c->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
                                              &c->recv_evd));
    DAT_CALL("dat_pz_create", dat_pz_create(c->ia, &c->pz));
    region_create(c->ia, c->pz, 64, DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
                  &c->msg);
    /* rping registers its buffers for local write, remote read and write. */
    region_create(c->ia, c->pz, o->size, DAT_MEM_PRIV_ALL_FLAG, &c->rdma);
    if (!o->server)
        region_create(c->ia, c->pz, o->size, DAT_MEM_PRIV_ALL_FLAG, &c->src);
}

static void create_ep(struct conn *c, const struct opts *o)
{
    DAT_EP_ATTR a = ep_attr(o);
    DAT_CALL("dat_ep_create",
             dat_ep_create(c->ia, c->pz, c->recv_evd, c->req_evd, c->conn_evd, &a, &c->ep));
    post_recv(c, 0);
    post_recv(c, 1);
}

static void show_ep(struct conn *c)
{
    DAT_EP_PARAM p;
    if (!verbose)
        return;
    if (dat_ep_query(c->ep, DAT_EP_FIELD_ALL, &p) == DAT_SUCCESS)
        printf("rping_dat: %s: connected: max_rdma_read_in %d, max_rdma_read_out %d\n", role,
               (int)p.ep_attr.max_rdma_read_in, (int)p.ep_attr.max_rdma_read_out);
}

/* Waits for the connection to be torn down after the last ping. */
static void wait_disconnected(struct conn *c, const char *who)
{
    DAT_EVENT ev;
    double t0 = now_s();
    for (;;) {
        if (!get_event(c->conn_evd, max_wait, &ev))
            die("timed out after %.1f s waiting for %s to disconnect", now_s() - t0, who);
        if (ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED)
            return;
        if (ev.event_number == DAT_CONNECTION_EVENT_BROKEN)
            die("the connection broke (waiting for %s to disconnect)", who);
    }
}

static int run_client(const struct opts *o)
{
    struct conn c;
    memset(&c, 0, sizeof(c));
    setup(&c, o);

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(o->addr, NULL, &hints, &res);
    if (gai != 0)
        die("cannot resolve %s: %s", o->addr, gai_strerror(gai));
    struct sockaddr_storage server;
    memset(&server, 0, sizeof(server));
    memcpy(&server, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);

    DAT_EVENT ev;
    int attempts = 0;
    for (;;) {
        attempts++;
        create_ep(&c, o);
        DAT_CALL("dat_ep_connect",
                 dat_ep_connect(c.ep, (DAT_IA_ADDRESS_PTR)&server, o->port, wait_us(max_wait), 0,
                                NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
        if (!get_event(c.conn_evd, max_wait, &ev))
            die("timed out waiting for the connection to %s port %u", o->addr, o->port);
        if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED)
            break;
        if (!o->retry || now_s() + 0.3 >= deadline)
            die("connection to %s port %u failed: %s (after %d attempt%s)", o->addr, o->port,
                event_name(ev.event_number), attempts, attempts == 1 ? "" : "s");
        /* The flushed receives, then a new endpoint. */
        DAT_EVENT dummy;
        while (dat_evd_dequeue(c.recv_evd, &dummy) == DAT_SUCCESS) {
        }
        DAT_CALL("dat_ep_free", dat_ep_free(c.ep));
        usleep(300000);
    }
    show_ep(&c);

    double t0 = now_s();
    unsigned char in[MSG_LEN];
    for (int ping = 0; ping < o->count; ping++) {
        fill_ping(c.src.buf, o->size, ping);
        /* Source advertisement; the server reads it, then says go ahead. */
        put_info(c.msg.buf, (uint64_t)(uintptr_t)c.src.buf, c.src.rmr_context, o->size);
        uint64_t ck = post_send(&c, 0);
        if (wait_recv(&c, "the server's go-ahead after its RDMA Read", in) < 0)
            die("ping %d: the connection ended before the server's go-ahead (RDMA Read)", ping);
        char what[96];
        snprintf(what, sizeof(what), "ping %d's first Send (the source buffer), which the server "
                 "had already answered", ping);
        wait_dto(c.req_evd, ck, what);

        /* Sink advertisement; the server RDMA Writes into it, then says go ahead. */
        memset(c.rdma.buf, 0, o->size);
        put_info(c.msg.buf + 16, (uint64_t)(uintptr_t)c.rdma.buf, c.rdma.rmr_context, o->size);
        ck = post_send(&c, 1);
        if (wait_recv(&c, "the server's go-ahead after its RDMA Write", in) < 0)
            die("ping %d: the connection ended before the server's go-ahead (RDMA Write)", ping);
        snprintf(what, sizeof(what), "ping %d's second Send (the sink buffer), which the server "
                 "had already answered", ping);
        wait_dto(c.req_evd, ck, what);

        if (o->validate && memcmp(c.src.buf, c.rdma.buf, o->size) != 0) {
            size_t i = 0;
            while (c.src.buf[i] == c.rdma.buf[i])
                i++;
            die("ping %d: data mismatch at byte %zu: 0x%02x, sent 0x%02x", ping, i, c.rdma.buf[i],
                c.src.buf[i]);
        }
        if (verbose)
            printf("rping_dat: client: ping %d ok: %.40s...\n", ping, (char *)c.rdma.buf);
    }
    double secs = now_s() - t0;

    DAT_CALL("dat_ep_disconnect", dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG));
    wait_disconnected(&c, "the connection");
    printf("rping_dat: client: %d pings of %u bytes%s in %.3f s (%.2f ms each)\n", o->count,
           o->size, o->validate ? " verified" : "", secs, secs * 1e3 / (o->count ? o->count : 1));
    DAT_EVENT dummy;
    while (dat_evd_dequeue(c.recv_evd, &dummy) == DAT_SUCCESS) {
    }
    DAT_CALL("dat_ep_free", dat_ep_free(c.ep));
    region_free(&c.src);
    region_free(&c.rdma);
    region_free(&c.msg);
    DAT_CALL("dat_pz_free", dat_pz_free(c.pz));
    DAT_CALL("dat_ia_close", dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG));
    return 0;
}

/* Server: the connection ended (flushed receive); was it the client's disconnect? */
static int ended_by_peer(struct conn *c)
{
    DAT_EVENT ev;
    if (!get_event(c->conn_evd, 2.0, &ev))
        return 0;
    return ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED;
}

static int run_server(const struct opts *o)
{
    struct conn c;
    memset(&c, 0, sizeof(c));
    setup(&c, o);
    DAT_CALL("dat_evd_create", dat_evd_create(c.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &c.cr_evd));
    DAT_PSP_HANDLE psp;
    DAT_CALL("dat_psp_create",
             dat_psp_create(c.ia, o->port, c.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    printf("rping_dat: server: listening on %s port %u\n", o->ia_name, o->port);
    fflush(stdout);

    DAT_EVENT ev;
    if (!get_event(c.cr_evd, deadline - now_s(), &ev))
        die("no connection request before the deadline");
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
        die("waiting for a connection request: got %s", event_name(ev.event_number));
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    create_ep(&c, o);
    DAT_CALL("dat_cr_accept", dat_cr_accept(cr, c.ep, 0, NULL));
    if (!get_event(c.conn_evd, max_wait, &ev))
        die("timed out waiting for the accepted connection to be established");
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        die("accepting the connection: got %s", event_name(ev.event_number));
    show_ep(&c);

    double t0 = now_s();
    unsigned char in[MSG_LEN], *expect = NULL;
    if (o->validate && (expect = malloc(o->size)) == NULL)
        die("out of memory");
    int ping = 0;
    int peer_left = 0;
    for (;; ping++) {
        uint64_t raddr;
        uint32_t rkey, rlen;
        char what[96];
        if (o->count > 0 && ping == o->count) {
            /* the client disconnects after its last ping */
            wait_disconnected(&c, "the client");
            peer_left = 1;
            break;
        }
        if (wait_recv(&c, "the client's source advertisement", in) < 0) {
            if (!ended_by_peer(&c))
                die("ping %d: the connection broke waiting for the client's next message", ping);
            peer_left = 1;
            break;
        }
        get_info(in, &raddr, &rkey, &rlen);
        if (rlen != o->size)
            die("ping %d: the client advertises %u bytes; this server runs with -S %u (rping "
                "needs the same -S on both sides)", ping, rlen, o->size);

        /* RDMA Read the client's source buffer. */
        DAT_LMR_TRIPLET lt = triplet(&c.rdma, 0, rlen);
        DAT_RMR_TRIPLET rt;
        rt.rmr_context = rkey;
        rt.pad = 0;
        rt.target_address = raddr;
        rt.segment_length = rlen;
        DAT_DTO_COOKIE ck;
        ck.as_64 = 1000 + (uint64_t)ping * 2;
        memset(c.rdma.buf, 0, o->size);
        DAT_CALL("dat_ep_post_rdma_read",
                 dat_ep_post_rdma_read(c.ep, 1, &lt, ck, &rt, DAT_COMPLETION_DEFAULT_FLAG));
        snprintf(what, sizeof(what), "ping %d's RDMA Read of %u bytes", ping, rlen);
        DAT_VLEN got = wait_dto(c.req_evd, ck.as_64, what);
        if (got != rlen)
            die("ping %d: the RDMA Read completed with %llu bytes of %u", ping,
                (unsigned long long)got, rlen);
        if (o->validate) {
            fill_ping(expect, o->size, ping);
            if (memcmp(expect, c.rdma.buf, o->size) != 0) {
                size_t i = 0;
                while (expect[i] == c.rdma.buf[i])
                    i++;
                die("ping %d: the data read differs at byte %zu: 0x%02x, rping's is 0x%02x",
                    ping, i, c.rdma.buf[i], expect[i]);
            }
        }

        /* Go ahead (rping's server sends its 16-byte buffer, unformatted). */
        memset(c.msg.buf, 0, MSG_LEN);
        uint64_t sck = post_send(&c, 0);
        snprintf(what, sizeof(what), "ping %d's go-ahead Send after the RDMA Read", ping);
        wait_dto(c.req_evd, sck, what);

        /* The client's sink; RDMA Write what was read (strlen + 1, as rping). */
        if (wait_recv(&c, "the client's sink advertisement", in) < 0)
            die("ping %d: the connection ended before the client's sink advertisement", ping);
        get_info(in, &raddr, &rkey, &rlen);
        uint32_t wlen = (uint32_t)strnlen((const char *)c.rdma.buf, o->size - 1) + 1;
        if (wlen > rlen)
            die("ping %d: the client's sink has %u bytes, %u to write", ping, rlen, wlen);
        lt = triplet(&c.rdma, 0, wlen);
        rt.rmr_context = rkey;
        rt.target_address = raddr;
        rt.segment_length = wlen;
        ck.as_64 = 1001 + (uint64_t)ping * 2;
        DAT_CALL("dat_ep_post_rdma_write",
                 dat_ep_post_rdma_write(c.ep, 1, &lt, ck, &rt, DAT_COMPLETION_DEFAULT_FLAG));
        snprintf(what, sizeof(what), "ping %d's RDMA Write of %u bytes", ping, wlen);
        wait_dto(c.req_evd, ck.as_64, what);

        sck = post_send(&c, 1);
        snprintf(what, sizeof(what), "ping %d's go-ahead Send after the RDMA Write", ping);
        wait_dto(c.req_evd, sck, what);
        if (verbose)
            printf("rping_dat: server: ping %d ok: %.40s...\n", ping, (char *)c.rdma.buf);
    }
    double secs = now_s() - t0;
    if (ping == 0)
        die("the client left before its first ping");
    printf("rping_dat: server: %d pings of %u bytes%s in %.3f s (%.2f ms each), client %s\n", ping,
           o->size, o->validate ? " verified" : "", secs, secs * 1e3 / ping,
           peer_left ? "disconnected" : "still there");
    free(expect);
    dat_ep_disconnect(c.ep, DAT_CLOSE_ABRUPT_FLAG);
    DAT_EVENT dummy;
    while (dat_evd_dequeue(c.recv_evd, &dummy) == DAT_SUCCESS) {
    }
    DAT_CALL("dat_ep_free", dat_ep_free(c.ep));
    DAT_CALL("dat_psp_free", dat_psp_free(psp));
    region_free(&c.rdma);
    region_free(&c.msg);
    DAT_CALL("dat_pz_free", dat_pz_free(c.pz));
    DAT_CALL("dat_ia_close", dat_ia_close(c.ia, DAT_CLOSE_ABRUPT_FLAG));
    return 0;
}

static void usage(void) __attribute__((noreturn));
static void usage(void)
{
    fprintf(stderr,
            "usage: rping_dat -s [-p PORT] [-C COUNT] [-S SIZE] [-V] [-D IA] [-t SECS] [-w SECS] [-v]\n"
            "       rping_dat [-c] -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-V] [-D IA] [-t SECS] [-w SECS] [-r] [-v]\n"
            "       (-I N / -O N: the endpoint's max_rdma_read_in / _out, default 1)\n");
    exit(2);
}

static long num(const char *s, long lo, long hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi)
        usage();
    return v;
}

int main(int argc, char **argv)
{
    struct opts o;
    double total = 60;
    int opt, count_set = 0;
    memset(&o, 0, sizeof(o));
    o.port = 7174;
    o.size = 64;
    o.ia_name = "tcp0";
    o.ird = o.ord = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    while ((opt = getopt(argc, argv, "sca:p:C:S:VD:t:w:rI:O:v")) != -1) {
        switch (opt) {
        case 's': o.server = 1; role = "server"; break;
        case 'c': o.server = 0; role = "client"; break;
        case 'a': o.addr = optarg; break;
        case 'p': o.port = (unsigned)num(optarg, 1, 65535); break;
        case 'C': o.count = (int)num(optarg, 0, 1000000); count_set = 1; break;
        case 'S': o.size = (unsigned)num(optarg, MIN_SIZE, MAX_SIZE); break;
        case 'V': o.validate = 1; break;
        case 'D': o.ia_name = optarg; break;
        case 't': total = (double)num(optarg, 1, 86400); break;
        case 'w': max_wait = (double)num(optarg, 1, 86400); break;
        case 'r': o.retry = 1; break;
        case 'I': o.ird = (int)num(optarg, 0, 128); break;
        case 'O': o.ord = (int)num(optarg, 0, 128); break;
        case 'v': verbose = 1; break;
        default: usage();
        }
    }
    if (optind != argc || (!o.server && o.addr == NULL))
        usage();
    if (!o.server && !count_set)
        o.count = 10;
    if (!o.server && o.count == 0)
        usage();
    if (o.server && o.ord < 1)
        die("-O 0: the server role RDMA Reads, it needs max_rdma_read_out >= 1");
    deadline = now_s() + total;
    signal(SIGALRM, on_alarm);
    alarm((unsigned)total + 5);
    return o.server ? run_server(&o) : run_client(&o);
}
