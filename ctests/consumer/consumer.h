/*
 * Shared pieces of the consumer-pattern tests (the programs in
 * ctests/consumer/): the API used the way third-party DAT 1.2 programs use
 * it (MPI transports, communication libraries, benchmarks), over two
 * processes, every byte checked.
 *
 * Builds on the PAIR fixture (pair.h) and the DTO helpers of the endpoint
 * tests (ctests/ep/dto_helpers.h: registered buffers, patterns, event
 * checks with every field, PREQUIRE). What the patterns need beyond them:
 *
 *   - cpair_fork: the two processes and their pipes without any DAT call,
 *     so that each side opens its IA and makes its EVDs the way the
 *     pattern does (by a name from the registry list, an EVD shared by
 *     streams, EVDs with a CNO, queues of 100,000): cpair_objects;
 *     cpair_start does both with the usual objects and a chosen queue
 *     length;
 *   - connection helpers on explicit EVDs, with the reason printed;
 *   - memory shared by the two processes (posting and arrival times for
 *     the progress bounds, flags that say what the peer is doing), and a
 *     page on which a side that gives up says so, so that the peer's
 *     failed wait is reported as the consequence it is;
 *   - polling application memory with no library call (acquire loads,
 *     a bounded spin that yields the CPU on a loaded two-core machine);
 *   - a seeded PRNG (the seed is printed; CONSUMER_SEED overrides it);
 *   - timing statistics (median, 90th percentile, maximum).
 *
 * Every wait has a timeout (WAIT_US) and every loop a time budget
 * (BUDGET_S): a hang fails with what was expected and where.
 *
 * Include after nothing else.
 */
#ifndef CONSUMER_H
#define CONSUMER_H

#ifndef CTEST_TIMEOUT_SECONDS
#define CTEST_TIMEOUT_SECONDS 50
#endif

#include "../ep/dto_helpers.h"

#include <sched.h>
#include <sys/mman.h>

/* Every event wait of the patterns: generous, so that only a lost event or
 * a lost wake-up reaches it. */
#define WAIT_US (5u * SEC)
/* Every loop stops and fails after this (the library is far faster). */
#define BUDGET_S 20.0
/* The progress bound of the memory-polling patterns (loose on purpose). */
#define MEDIAN_BOUND_S 0.001

#define KiB 1024u
#define MiB (1024u * 1024u)

/* A note on stderr, shown by run.sh with the case (sizes, seeds, times). */
#define NOTE(...) say_line(NULL, 0, "note: ", __VA_ARGS__)

/* A failure with a message (the case goes on). */
#define FAILF(...)                                                                             \
    do {                                                                                       \
        say_line(__FILE__, __LINE__, "", __VA_ARGS__);                                         \
        ctest_failures++;                                                                      \
    } while (0)

/* The EP attributes the patterns ask for, everything spelled out as such a
 * consumer does: RC, 64 KiB messages, `dtos` receives and requests with
 * one segment each, requests UNSIGNALLED unless asked for, 4 RDMA Reads
 * each way. */
static inline DAT_EP_ATTR consumer_ep_attr(DAT_COUNT dtos, DAT_VLEN max_rdma_size)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = 64 * KiB;
    a.max_rdma_size = max_rdma_size;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
    a.max_recv_dtos = dtos;
    a.max_request_dtos = dtos;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    a.max_rdma_read_in = 4;
    a.max_rdma_read_out = 4;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = 1;
    return a;
}

/* CHECK_OK that also says whether the post succeeded, so that a failed post
 * is not followed by a wait for its completion. */
static inline int posted_at(const char *file, int line, const char *expr, DAT_RETURN r)
{
    if (r != DAT_SUCCESS)
        ctest_report_ret(file, line, expr, r, DAT_SUCCESS, "exactly");
    return r == DAT_SUCCESS;
}
#define POSTED(expr) posted_at(__FILE__, __LINE__, #expr, (expr))

/* ---- seeded PRNG -------------------------------------------------------- */

static inline uint64_t consumer_seed(uint64_t dflt)
{
    const char *s = getenv("CONSUMER_SEED");
    if (s != NULL && s[0] != '\0')
        return strtoull(s, NULL, 0);
    return dflt;
}

struct rng {
    uint64_t s;
};

static inline void rng_init(struct rng *r, uint64_t seed) { r->s = seed ? seed : 0x9E3779B97F4A7C15ull; }

static inline uint64_t rng_next(struct rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [lo, hi]. */
static inline size_t rng_range(struct rng *r, size_t lo, size_t hi)
{
    return lo + (size_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* Log-uniform in [lo, hi] (lo >= 1): as many small messages as large. */
static inline size_t rng_logsize(struct rng *r, size_t lo, size_t hi)
{
    int bits_lo = 0, bits_hi = 0, b;
    size_t base, top;
    while (((size_t)1 << (bits_lo + 1)) <= lo)
        bits_lo++;
    while (((size_t)1 << (bits_hi + 1)) <= hi)
        bits_hi++;
    b = (int)rng_range(r, (size_t)bits_lo, (size_t)bits_hi);
    base = (size_t)1 << b;
    top = base * 2 - 1;
    if (base < lo)
        base = lo;
    if (top > hi)
        top = hi;
    return rng_range(r, base, top);
}

/* ---- memory shared by the two processes --------------------------------- */

/* Zeroed memory both processes see (map it before the fork). */
static inline void *shared_alloc(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* ---- timing statistics -------------------------------------------------- */

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stats {
    double median, p90, max;
    int n;
};

/* Sorts v in place. */
static inline struct stats stats_of(double *v, int n)
{
    struct stats s = {0, 0, 0, n};
    if (n <= 0)
        return s;
    qsort(v, (size_t)n, sizeof(v[0]), dbl_cmp);
    s.median = v[n / 2];
    s.p90 = v[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
    s.max = v[n - 1];
    return s;
}

/* ---- polling application memory, no library call ------------------------ */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * One step of a memory-polling loop: spin briefly, then give the CPU away
 * (sched_yield is not a library call), so that on a loaded machine with two
 * cores the library's own thread is not starved by the poller. `spins`
 * counts the steps of this wait.
 */
static inline void poll_step(unsigned *spins)
{
    if (++*spins < 256)
        cpu_relax();
    else
        sched_yield();
}

static inline uint32_t load32_acquire(const void *p)
{
    return __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
}

static inline uint8_t load8_acquire(const void *p)
{
    return __atomic_load_n((const uint8_t *)p, __ATOMIC_ACQUIRE);
}

/* ---- the two processes --------------------------------------------------- */

/*
 * A page both processes of a pair see: when one side gives up (its time
 * budget ran out, or a check failed), the other side's wait can no longer
 * succeed; its failure message then says so instead of blaming the library.
 */
struct cshared {
    int stopped[2]; /* [server]: that side gave up, at iteration stopped_at */
    int stopped_at[2];
};
static struct cshared *cshared;

/* This side gives up at iteration `iter`. */
static inline void give_up(int iter)
{
    if (cshared != NULL) {
        cshared->stopped_at[dto_is_server] = iter;
        __atomic_store_n(&cshared->stopped[dto_is_server], 1, __ATOMIC_RELEASE);
    }
}

/* True once the peer has given up. */
static inline int peer_gave_up(void)
{
    return cshared != NULL &&
           __atomic_load_n(&cshared->stopped[!dto_is_server], __ATOMIC_ACQUIRE) != 0;
}

/* After a wait failed: a note if the peer had given up first. */
static inline void explain_peer(void)
{
    if (cshared != NULL && __atomic_load_n(&cshared->stopped[!dto_is_server], __ATOMIC_ACQUIRE))
        NOTE("(the peer had already given up at its iteration %d: this wait could not succeed)",
             cshared->stopped_at[!dto_is_server]);
}

/* The loop's time budget: fails and gives up once BUDGET_S has passed. */
static inline int over_budget_at(const char *file, int line, double t0, int done, int total,
                                 const char *what)
{
    if (ctest_now() - t0 <= BUDGET_S)
        return 0;
    say_line(file, line, "", "only %d of %d %s in %.0f s", done, total, what, BUDGET_S);
    ctest_failures++;
    give_up(done);
    return 1;
}
#define OVER_BUDGET(t0, done, total, what) over_budget_at(__FILE__, __LINE__, (t0), (done), (total), (what))

/*
 * Forks the server (passive side) with pipes both ways and no DAT call on
 * either side. Returns 0 in both processes, -1 on failure (client).
 */
static inline int cpair_fork(struct pair *p)
{
    int a[2], b[2];
    pid_t pid;
    memset(p, 0, sizeof(*p));
    if (pipe(a) != 0 || pipe(b) != 0)
        return -1;
    if (cshared == NULL)
        cshared = shared_alloc(sizeof(*cshared));
    if (cshared != NULL)
        memset(cshared, 0, sizeof(*cshared));
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        p->server = 1;
        p->tx = a[1];
        p->rx = b[0];
        close(a[0]);
        close(b[1]);
        dto_is_server = 1;
        alarm(CTEST_TIMEOUT_SECONDS);
        return 0;
    }
    p->server = 0;
    p->server_pid = pid;
    p->tx = b[1];
    p->rx = a[0];
    close(a[1]);
    close(b[0]);
    dto_is_server = 0;
    return 0;
}

/* Opens the IA `name` (async EVD of qlen 8, made by the IA) and a PZ. */
static inline int cpair_open(struct pair *p, const char *name)
{
    DAT_RETURN r;
    p->async_evd = DAT_HANDLE_NULL;
    r = dat_ia_open(name, 8, &p->async_evd, &p->ia);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %sdat_ia_open(\"%s\") returned 0x%08x\n", side(), name, (unsigned)r);
        return -1;
    }
    r = dat_pz_create(p->ia, &p->pz);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %sdat_pz_create returned 0x%08x\n", side(), (unsigned)r);
        return -1;
    }
    return 0;
}

/* An EVD, the failure printed. */
static inline int mk_evd(struct pair *p, DAT_COUNT qlen, DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags,
                         DAT_EVD_HANDLE *evd)
{
    DAT_RETURN r = dat_evd_create(p->ia, qlen, cno, flags, evd);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %sdat_evd_create(qlen %d, flags 0x%x) returned 0x%08x\n", side(),
                (int)qlen, (unsigned)flags, (unsigned)r);
        return -1;
    }
    return 0;
}

/* Server: tells the client its IA address and the qualifier `qual`. */
static inline int cpair_tell_listener(struct pair *p, DAT_CONN_QUAL qual)
{
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr_attr;
    size_t alen;
    if (dat_ia_query(p->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, &pr_attr) != DAT_SUCCESS)
        return -1;
    alen = ia_attr.ia_address_ptr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                          : sizeof(struct sockaddr_in);
    memset(&p->server_addr, 0, sizeof(p->server_addr));
    memcpy(&p->server_addr, ia_attr.ia_address_ptr, alen);
    p->qual = qual;
    if (pair_tell(p, &p->server_addr, sizeof(p->server_addr)) != 0 ||
        pair_tell(p, &p->qual, sizeof(p->qual)) != 0)
        return -1;
    return 0;
}

/* Client: hears the server's IA address and qualifier. */
static inline int cpair_hear_listener(struct pair *p)
{
    if (pair_hear(p, &p->server_addr, sizeof(p->server_addr)) != 0 ||
        pair_hear(p, &p->qual, sizeof(p->qual)) != 0)
        return -1;
    return 0;
}

/*
 * After cpair_fork: the fixture's usual objects on the IA `name`: a PZ,
 * CR (qlen 8), connection (qlen 8), request (DTO|RMR_BIND) and receive
 * (DTO) EVDs of queue length `qlen`. With `cno`, a CNO is made first and
 * both DTO EVDs are attached to it. With `psp_any`, the server makes a PSP
 * with dat_psp_create_any and the client learns its address and
 * qualifier. 0 in both processes; on a failure the server exits and the
 * client reaps it and returns -1.
 */
static inline int cpair_objects(struct pair *p, const char *name, DAT_COUNT qlen,
                                DAT_CNO_HANDLE *cno, int psp_any)
{
    DAT_CNO_HANDLE c = DAT_HANDLE_NULL;
    if (cpair_open(p, name) != 0)
        goto fail;
    if (cno != NULL) {
        DAT_RETURN r = dat_cno_create(p->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &c);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    %sdat_cno_create returned 0x%08x\n", side(), (unsigned)r);
            goto fail;
        }
        *cno = c;
    }
    if (mk_evd(p, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &p->cr_evd) != 0 ||
        mk_evd(p, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &p->conn_evd) != 0 ||
        mk_evd(p, qlen, c, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &p->req_evd) != 0 ||
        mk_evd(p, qlen, c, DAT_EVD_DTO_FLAG, &p->recv_evd) != 0)
        goto fail;
    if (!psp_any)
        return 0;
    if (p->server) {
        DAT_CONN_QUAL q = 0;
        DAT_RETURN r = dat_psp_create_any(p->ia, &q, p->cr_evd, DAT_PSP_CONSUMER_FLAG, &p->psp);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    [server] dat_psp_create_any returned 0x%08x\n", (unsigned)r);
            goto fail;
        }
        if (cpair_tell_listener(p, q) != 0)
            goto fail;
    } else if (cpair_hear_listener(p) != 0) {
        fprintf(stderr, "    the server did not send its address\n");
        goto fail;
    }
    return 0;
fail:
    if (p->server) {
        fprintf(stderr, "    [server] setup failed\n");
        fflush(stderr);
        _exit(1);
    }
    kill(p->server_pid, SIGKILL);
    waitpid(p->server_pid, NULL, 0);
    return -1;
}

/* fork + cpair_objects on the test IA, with a PSP. */
static inline int cpair_start_cno(struct pair *p, DAT_COUNT qlen, DAT_CNO_HANDLE *cno)
{
    if (cpair_fork(p) != 0)
        return -1;
    return cpair_objects(p, ctest_ia_name(), qlen, cno, 1);
}

static inline int cpair_start(struct pair *p, DAT_COUNT qlen)
{
    return cpair_start_cno(p, qlen, NULL);
}

/* Waits for one event (WAIT_US); prints what was wanted on failure. */
static inline int cwait_at(const char *file, int line, DAT_EVD_HANDLE evd, DAT_EVENT *ev,
                           const char *what)
{
    DAT_COUNT nmore = 0;
    DAT_RETURN r;
    memset(ev, 0, sizeof(*ev));
    r = dat_evd_wait(evd, WAIT_US, 1, ev, &nmore);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %s:%d: %swaiting for %s: dat_evd_wait returned 0x%08x after %u s\n",
                file, line, side(), what, (unsigned)r, WAIT_US / SEC);
        explain_peer();
        return 0;
    }
    return 1;
}
#define CWAIT(evd, ev, what) cwait_at(__FILE__, __LINE__, (evd), (ev), (what))

/* Checks a connection event: number, EVD and EP. */
static inline int conn_ev_ok_at(const char *file, int line, const DAT_EVENT *ev,
                                DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, DAT_EVENT_NUMBER want)
{
    if (ev->event_number != want || ev->evd_handle != evd ||
        ev->event_data.connect_event_data.ep_handle != ep) {
        fprintf(stderr, "    %s:%d: %swant %s on evd %p for ep %p, got:\n", file, line, side(),
                ev_name(want), (void *)evd, (void *)ep);
        ev_print(ev);
        return 0;
    }
    return 1;
}
#define CONN_EV_OK(ev, evd, ep, want) conn_ev_ok_at(__FILE__, __LINE__, (ev), (evd), (ep), (want))

/*
 * Connects `ep` (created by the caller). Server: the next CR on `cr_evd`
 * (checked: from `psp` when given, on the qualifier p->qual), accepted
 * with `ep`, then ESTABLISHED on `conn_evd`. Client: dat_ep_connect to the
 * server's address and qualifier `qual`, then ESTABLISHED on `conn_evd`.
 * 0 on success; the reason is printed otherwise.
 */
static inline int cconnect_at(const char *file, int line, struct pair *p, DAT_EP_HANDLE ep,
                              DAT_EVD_HANDLE cr_evd, DAT_EVD_HANDLE conn_evd, DAT_PSP_HANDLE psp,
                              DAT_CONN_QUAL qual)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    if (p->server) {
        const DAT_CR_ARRIVAL_EVENT_DATA *cr = &ev.event_data.cr_arrival_event_data;
        if (!cwait_at(file, line, cr_evd, &ev, "the connection request"))
            return -1;
        if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT || ev.evd_handle != cr_evd ||
            (psp != DAT_HANDLE_NULL && cr->sp_handle.psp_handle != psp) || cr->conn_qual != qual) {
            fprintf(stderr,
                    "    %s:%d: %swant CONNECTION_REQUEST on evd %p from psp %p qualifier %llu, "
                    "got:\n",
                    file, line, side(), (void *)cr_evd, (void *)psp, (unsigned long long)qual);
            ev_print(&ev);
            if (ev.event_number == DAT_CONNECTION_REQUEST_EVENT)
                fprintf(stderr, "      (sp %p, qualifier %llu)\n", (void *)cr->sp_handle.psp_handle,
                        (unsigned long long)cr->conn_qual);
            return -1;
        }
        r = dat_cr_accept(cr->cr_handle, ep, 0, NULL);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    %s:%d: %sdat_cr_accept returned 0x%08x\n", file, line, side(),
                    (unsigned)r);
            return -1;
        }
    } else {
        r = dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, qual, WAIT_US, 0, NULL,
                           DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    %s:%d: dat_ep_connect returned 0x%08x\n", file, line,
                    (unsigned)r);
            return -1;
        }
    }
    if (!cwait_at(file, line, conn_evd, &ev, "ESTABLISHED"))
        return -1;
    if (!conn_ev_ok_at(file, line, &ev, conn_evd, ep, DAT_CONNECTION_EVENT_ESTABLISHED))
        return -1;
    return 0;
}
#define CCONNECT(p, ep, cr_evd, conn_evd, psp, qual)                                           \
    cconnect_at(__FILE__, __LINE__, (p), (ep), (cr_evd), (conn_evd), (psp), (qual))

/* dat_ep_create with the fixture's EVDs and `attr`, then connect. */
static inline int cpair_connect(struct pair *p, const DAT_EP_ATTR *attr)
{
    DAT_RETURN r = dat_ep_create(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, attr, &p->ep);
    if (r != DAT_SUCCESS) {
        fprintf(stderr, "    %sdat_ep_create returned 0x%08x\n", side(), (unsigned)r);
        return -1;
    }
    return CCONNECT(p, p->ep, p->cr_evd, p->conn_evd, p->psp, p->qual);
}

/* ---- messages ------------------------------------------------------------ */

/* Fills b[0..n) with the pattern of (seed, msg); checks it back. */
static inline void fill_msg(unsigned char *b, size_t n, uint32_t seed, uint32_t msg)
{
    uint32_t s = seed * 2654435761u + msg;
    for (size_t i = 0; i < n; i++)
        b[i] = pat_byte(s, i);
}

/* 1 if b[0..n) holds the pattern of (seed, msg); prints the first bad byte. */
static inline int check_msg_at(const char *file, int line, const unsigned char *b, size_t n,
                               uint32_t seed, uint32_t msg, const char *what)
{
    uint32_t s = seed * 2654435761u + msg;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != pat_byte(s, i)) {
            fprintf(stderr, "    %s:%d: %s%s %u: byte %zu of %zu is 0x%02x, want 0x%02x\n", file,
                    line, side(), what, msg, i, n, b[i], pat_byte(s, i));
            ctest_failures++;
            return 0;
        }
    }
    return 1;
}
#define CHECK_MSG(b, n, seed, msg, what) check_msg_at(__FILE__, __LINE__, (b), (n), (seed), (msg), (what))

#endif /* CONSUMER_H */
