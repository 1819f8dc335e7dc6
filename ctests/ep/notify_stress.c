/*
 * Notification stress: every combination of who waits for a completion and
 * who delivers it, thousands of Send/Recv messages each, every notification
 * accounted for. The sibling hunt of the lost wake-up fixed in
 * src/transport/iwarp/cq.rs (a CNO hook that re-armed a completion queue
 * drained the notification eventfd a thread sleeping in dat_evd_wait
 * needed): no notification may be consumed without waking the thread that
 * waits for it.
 *
 * Two processes (the PAIR fixture). The server P sends messages 0..n-1
 * (1-256 B, data checked); the client R receives them with the combination
 * under test, and in some cases sends messages of its own whose completions
 * are waited for too (P takes those with a thread of its own).
 *
 * Who waits on the receiving side R (one case each):
 *   A  dat_evd_wait on the receive EVD, no CNO;
 *   B  dat_evd_wait on the receive EVD, with a CNO attached (receive and
 *      request EVDs) that nobody waits on: its hook re-arms the completion
 *      queue after every notification (the fixed bug's ingredient; here the
 *      sleeping waiter drives its queue pair itself, so it is also the
 *      producer: F and G, where another thread of R delivers, are the
 *      cases that fail with the old arm that drained the notification);
 *   C  dat_cno_wait on a CNO with the receive EVD only;
 *   D  dat_cno_wait on a CNO with the receive and request EVDs (P's
 *      messages and R's own Sends' completions both arriving);
 *   E  an OS wait proxy agent on that CNO: a C function the library calls
 *      once per trigger (one-shot: reinstalled with dat_cno_modify_agent
 *      after every call) that writes an eventfd R sleeps on in poll(2) -
 *      nobody in R sleeps in the library, the progress thread delivers;
 *   F  two waiters in two threads: dat_evd_wait on the receive EVD (A) and
 *      dat_cno_wait on the CNO of A and the request EVD (B), the first
 *      thread's Sends completing on B. An EVD with a blocked waiter does not
 *      trigger its CNO (semantics-core.md §1.8), so the CNO thread counts on
 *      B only and takes only B's events; a software EVD on the CNO tells it
 *      the end;
 *   G  a thread polling the request EVD with dat_evd_dequeue (it posts Sends
 *      and reaps them) while another waits on the receive EVD of the same
 *      EP with dat_evd_wait: the poller's dequeues run the engine that
 *      delivers the waiter's completions; both EVDs have a CNO nobody waits
 *      on, whose hook re-arms (as in B);
 *   H  dat_evd_wait on the request EVD while another thread posts Sends on
 *      an EP of 4 request slots: a post that finds none free moves the
 *      completions from the completion queue into that EVD itself
 *      (Ep::take_request_slot) while the waiter sleeps on it (no CNO).
 *
 * Who delivers: the thread that sleeps (woken by the socket, it runs the
 * engine), a thread of R that polls (G, H, and the CNO waiter of F, which
 * polls A and B while it spins), the waiter itself while it spins
 * (messages back to back), or the progress thread (E, where nobody in R is
 * in the library while it waits).
 *
 * Timing: P's messages come in segments of 20-150 of one style, seeded
 * (NOTIFY_SEED overrides the seed; it is printed):
 *   burst      bursts of 1-16 back to back, each after R said it is about
 *              to wait (a 4-byte token on the pair pipe) and 0-20 us;
 *   ping-pong  each message right after R's token;
 *   sleeping   each message 50-1000 us after R's token: R is asleep;
 *   free       no token, 0-150 us apart (within R's posted receives).
 * dat_evd_wait on a receive EVD asks for a threshold of 1 half the time,
 * else 1 to 8 but never more than the messages that will come without
 * another token; nmore must then be >= threshold - 1.
 *
 * Asserted: every message and every Send completion arrives exactly once,
 * in order, with its data; every wait returns within its timeout (5 s: a
 * lost wake-up shows as a failure naming the case, message, segment style
 * and whether the EVD held the completion all along, never as a hang); no
 * DAT_TIMEOUT_EXPIRED or DAT_QUEUE_EMPTY while something is owed; no
 * completion is taken more than 1 s after its post, and no successful wait
 * lasts more than 1 s (a waiter that slept through its wake-up and was
 * woken by its deadline timer, which then finds the events and succeeds,
 * or by some later arrival); the agent is called once per installation,
 * with one of the CNO's EVDs; nothing extra is left at the end.
 * NOTIFY_STRESS_MSGS sets the number of messages (default 2000).
 *
 * The whole program takes about 10 s (2 cores); each case is bounded by
 * its 5 s waits, a 25 s budget and the harness's alarm.
 */
#define _GNU_SOURCE 1
#define CTEST_TIMEOUT_SECONDS 45

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "dto_helpers.h"

#ifndef NS_MSGS
#define NS_MSGS 2000
#endif
#define NS_MAXN 100000
#define MAXMSG 256
#define NRECV_R 32   /* receives R keeps posted for P's messages */
#define NRECV_P 32   /* receives P keeps posted for R's messages */
#define NSB 64       /* send buffer slots (each side) */
#define R_OUT 24     /* R's Sends in flight at most (request queue 32) */
#define P_OUT 48     /* P's Sends in flight at most (request queue 64) */
#define H_SLOTS 4    /* the request queue of case H */
#define WAIT_US (5u * SEC)
#define BUDGET_S 25.0
#define SEED_P 0x5EED0001u /* data pattern of P's messages */
#define SEED_R 0x5EED0002u /* of R's */
#define TAG_RR 0x1100000000ull /* R's receives */
#define TAG_RS 0x2200000000ull /* R's Sends */
#define TAG_PR 0x3300000000ull /* P's receives */
#define TAG_PS 0x4400000000ull /* P's Sends */

enum { K_A, K_B, K_C, K_D, K_E, K_F, K_G, K_H };
static const char *const kind_name[] = {
    "A dat_evd_wait, no CNO",
    "B dat_evd_wait, CNO attached",
    "C dat_cno_wait, one EVD",
    "D dat_cno_wait, two EVDs",
    "E CNO proxy agent",
    "F dat_evd_wait + dat_cno_wait threads",
    "G dat_evd_dequeue poller + dat_evd_wait threads",
    "H poster filling + dat_evd_wait threads",
};

enum { ST_BURST, ST_PING, ST_SLEEP, ST_FREE, NSTYLE };
static const char *const style_name[] = {"burst", "ping-pong", "sleeping", "free"};

/* ---- small helpers ----------------------------------------------------------- */

static atomic_int ns_failures; /* checks failed in any thread of this process */

#define NOTE(...) say_line(NULL, 0, "note: ", __VA_ARGS__)
#define FAILF(...)                                                                             \
    do {                                                                                       \
        say_line(__FILE__, __LINE__, "", __VA_ARGS__);                                         \
        atomic_fetch_add(&ns_failures, 1);                                                     \
    } while (0)

struct rng {
    uint64_t s;
};
static void rng_init(struct rng *r, uint64_t seed) { r->s = seed ? seed : 0x9E3779B97F4A7C15ull; }
static uint64_t rng_next(struct rng *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}
static unsigned rng_range(struct rng *r, unsigned lo, unsigned hi)
{
    return lo + (unsigned)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

static void sleep_us(unsigned us)
{
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    return (s != NULL && s[0] != '\0') ? strtoull(s, NULL, 0) : dflt;
}

static void fill_msg(unsigned char *b, size_t n, uint32_t seed, uint32_t msg)
{
    uint32_t s = seed * 2654435761u + msg;
    for (size_t i = 0; i < n; i++)
        b[i] = pat_byte(s, i);
}

static int msg_ok(const unsigned char *b, size_t n, uint32_t seed, uint32_t msg)
{
    uint32_t s = seed * 2654435761u + msg;
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat_byte(s, i)) {
            FAILF("message %u: byte %zu of %zu is 0x%02x, want 0x%02x", msg, i, n, b[i],
                  pat_byte(s, i));
            return 0;
        }
    return 1;
}

/* The size of R's j-th message. */
static size_t r_size(int j)
{
    uint64_t x = (uint64_t)j * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return 1 + (size_t)(x % MAXMSG);
}

/* ---- what both processes share -------------------------------------------------- */

/* Mapped before the fork. */
struct shm {
    atomic_int stop;        /* 0, or who gave up first: 1 R (client), 2 P (server) */
    atomic_int stop_at;
    atomic_uint r_consumed; /* P's messages R has taken (their receives re-posted) */
    atomic_uint r_sent;     /* R's messages posted */
    atomic_int r_final;     /* R posts no more: r_sent is final */
    atomic_uint p_consumed; /* R's messages P has taken */
};
static struct shm *S;
/* When P posted each of its messages (us, CLOCK_MONOTONIC: the same clock
 * in both processes); mapped before the fork. */
static atomic_llong *p_post_us;

#define LATE_S 1.0 /* a completion taken this long after its post was slept through */

static long long now_us(void) { return (long long)(ctest_now() * 1e6); }

static int stopped(void) { return atomic_load(&S->stop) != 0; }

static void give_up(int at)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&S->stop, &none, dto_is_server ? 2 : 1))
        atomic_store(&S->stop_at, at);
}

/* After a failed wait: a note if the peer had given up first. */
static void explain_peer(void)
{
    int who = atomic_load(&S->stop);
    if (who != 0 && who != (dto_is_server ? 2 : 1))
        NOTE("(the peer had already given up at its message %d: this wait could not succeed)",
             atomic_load(&S->stop_at));
}

/* P's schedule: identical in both processes (same seed). */
struct slot {
    uint8_t hs;     /* R sends a token before P sends this message */
    uint8_t style;
    uint16_t pause; /* us P waits (after the token) before sending it */
    uint16_t size;
};
static struct slot sched[NS_MAXN];

static void make_sched(uint64_t seed, int n, int count[NSTYLE])
{
    struct rng r;
    int i = 0;
    rng_init(&r, seed);
    memset(count, 0, sizeof(int) * NSTYLE);
    while (i < n) {
        unsigned style = rng_range(&r, 0, NSTYLE - 1);
        int len = (int)rng_range(&r, 20, 150), burst_left = 0;
        for (int j = i; j < n && j < i + len; j++) {
            struct slot *s = &sched[j];
            s->style = (uint8_t)style;
            switch (style) {
            case ST_BURST:
                if (burst_left == 0) {
                    burst_left = (int)rng_range(&r, 1, 16);
                    s->hs = 1;
                    s->pause = (uint16_t)rng_range(&r, 0, 20);
                } else {
                    s->hs = 0;
                    s->pause = 0;
                }
                burst_left--;
                break;
            case ST_PING:
                s->hs = 1;
                s->pause = 0;
                break;
            case ST_SLEEP:
                s->hs = 1;
                s->pause = (uint16_t)rng_range(&r, 50, 1000);
                break;
            default:
                s->hs = 0;
                s->pause = (uint16_t)rng_range(&r, 0, 150);
                break;
            }
            s->size = (uint16_t)rng_range(&r, 1, MAXMSG);
            count[style]++;
        }
        i += len;
    }
}

static DAT_EP_ATTR ns_attr(struct pair *p, DAT_COUNT nrecv, DAT_COUNT nreq)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    if (dto_attr(p, &a) != 0)
        FAILF("the EP defaults could not be read");
    a.max_recv_dtos = nrecv;
    a.max_request_dtos = nreq;
    return a;
}

/* Checks a DTO completion: number, EVD, EP, cookie, status, length. */
static int dto_ok(const DAT_EVENT *ev, DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, uint64_t cookie,
                  DAT_VLEN len, const char *what, int idx)
{
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
    if (ev->event_number != DAT_DTO_COMPLETION_EVENT || ev->evd_handle != evd ||
        d->ep_handle != ep || d->user_cookie.as_64 != cookie || d->status != DAT_DTO_SUCCESS ||
        d->transfered_length != len) {
        FAILF("%s %d: want the DTO completion of cookie 0x%llx, length %llu on EVD %p, got:",
              what, idx, (unsigned long long)cookie, (unsigned long long)len, (void *)evd);
        ev_print(ev);
        return 0;
    }
    return 1;
}

/* ---- the sender P (server) ------------------------------------------------------- */

struct ps {
    struct pair *p;
    int n;
    struct mr sb, rb;
    int posted, done; /* P's Sends */
    int got;          /* R's messages taken (reaper thread) */
    pthread_t reaper;
};
static struct ps PS;

static int p_post_recv(struct ps *x, int j)
{
    DAT_RETURN r = recv1(x->p->ep, &x->rb, (size_t)(j % NRECV_P) * MAXMSG, MAXMSG,
                         TAG_PR | (uint64_t)j, DAT_COMPLETION_DEFAULT_FLAG);
    if (r != DAT_SUCCESS)
        FAILF("dat_ep_post_recv for R's message %d returned 0x%08x", j, (unsigned)r);
    return r == DAT_SUCCESS;
}

/* Takes R's messages until R says it sent its last and all came. */
static void *p_reaper(void *arg)
{
    struct ps *x = arg;
    double idle = ctest_now();
    for (;;) {
        DAT_EVENT ev;
        DAT_COUNT nmore = 0;
        DAT_RETURN r;
        if (stopped())
            break;
        if (atomic_load(&S->r_final) && (unsigned)x->got == atomic_load(&S->r_sent))
            break;
        r = dat_evd_wait(x->p->recv_evd, 50000, 1, &ev, &nmore);
        if (r == DAT_SUCCESS) {
            int j = x->got;
            const unsigned char *b = x->rb.buf + (size_t)(j % NRECV_P) * MAXMSG;
            if (!dto_ok(&ev, x->p->recv_evd, x->p->ep, TAG_PR | (uint64_t)j, r_size(j),
                        "R's message", j) ||
                (ctest_handover(b, r_size(j)), !msg_ok(b, r_size(j), SEED_R, (uint32_t)j))) {
                give_up(j);
                break;
            }
            x->got++;
            if (!p_post_recv(x, j + NRECV_P)) {
                give_up(j);
                break;
            }
            atomic_store(&S->p_consumed, (unsigned)x->got);
            idle = ctest_now();
        } else if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED) {
            if (ctest_now() - idle > 10.0 && (unsigned)x->got < atomic_load(&S->r_sent)) {
                FAILF("R's message %d (of %u posted) did not come in 10 s", x->got,
                      atomic_load(&S->r_sent));
                give_up(x->got);
                break;
            }
        } else {
            FAILF("dat_evd_wait(P's receive EVD) returned 0x%08x", (unsigned)r);
            give_up(x->got);
            break;
        }
    }
    return NULL;
}

/* Reads R's token for message `want` (10 s at most, watching `stop`). */
static int hear_token(struct pair *p, int want)
{
    int32_t got = -1;
    size_t have = 0;
    double end = ctest_now() + 10.0;
    while (have < sizeof(got)) {
        struct pollfd pfd = {p->rx, POLLIN, 0};
        int r;
        if (stopped())
            return 0;
        r = poll(&pfd, 1, 100);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (ctest_now() > end) {
                FAILF("message %d: R's token did not come in 10 s", want);
                return 0;
            }
            continue;
        }
        ssize_t k = read(p->rx, (char *)&got + have, sizeof(got) - have);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (!stopped())
                FAILF("message %d: the pipe from R closed", want);
            return 0;
        }
        have += (size_t)k;
    }
    if (got != want) {
        FAILF("R's token says message %d, want %d", (int)got, want);
        return 0;
    }
    return 1;
}

static int p_take_send(struct ps *x, const DAT_EVENT *ev)
{
    int i = x->done;
    if (!dto_ok(ev, x->p->req_evd, x->p->ep, TAG_PS | (uint64_t)i, sched[i].size, "P's Send", i))
        return 0;
    x->done++;
    return 1;
}

/* Reaps P's Send completions: all there are (block 0), or until fewer than
 * `below` are in flight. */
static int p_reap(struct ps *x, int below)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    while ((r = dat_evd_dequeue(x->p->req_evd, &ev)) == DAT_SUCCESS)
        if (!p_take_send(x, &ev))
            return 0;
    if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY) {
        FAILF("dat_evd_dequeue(P's request EVD) returned 0x%08x", (unsigned)r);
        return 0;
    }
    while (x->posted - x->done >= below) {
        DAT_COUNT nmore = 0;
        r = dat_evd_wait(x->p->req_evd, WAIT_US, 1, &ev, &nmore);
        if (r != DAT_SUCCESS) {
            FAILF("P's Send %d: dat_evd_wait(request EVD, 5 s) returned 0x%08x", x->done,
                  (unsigned)r);
            return 0;
        }
        if (!p_take_send(x, &ev))
            return 0;
    }
    return 1;
}

static void p_run(struct pair *p, int n, int r_sends)
{
    struct ps *x = &PS;
    int i;
    memset(x, 0, sizeof(*x));
    x->p = p;
    x->n = n;
    if (mr_make(p->ia, p->pz, NSB * MAXMSG, LRW, &x->sb) != DAT_SUCCESS ||
        mr_make(p->ia, p->pz, NRECV_P * MAXMSG, LRW, &x->rb) != DAT_SUCCESS) {
        FAILF("P: buffers could not be registered");
        give_up(0);
        return;
    }
    for (int j = 0; j < NRECV_P; j++)
        if (!p_post_recv(x, j)) {
            give_up(0);
            return;
        }
    if (pair_sync(p, 'r') != 0) {
        FAILF("P: R did not start");
        give_up(0);
        return;
    }
    if (r_sends && pthread_create(&x->reaper, NULL, p_reaper, x) != 0) {
        FAILF("P: no reaper thread");
        give_up(0);
        return;
    }
    for (i = 0; i < n && !stopped(); i++) {
        const struct slot *s = &sched[i];
        double end;
        if (s->hs && !hear_token(p, i))
            break;
        if (s->pause)
            sleep_us(s->pause);
        end = ctest_now() + 10.0;
        while ((unsigned)i - atomic_load(&S->r_consumed) >= NRECV_R) {
            if (stopped())
                break;
            if (ctest_now() > end) {
                FAILF("message %d: R took none of its receives back in 10 s (it has %u)", i,
                      atomic_load(&S->r_consumed));
                break;
            }
            sleep_us(20);
        }
        if (stopped() || (unsigned)i - atomic_load(&S->r_consumed) >= NRECV_R)
            break;
        if (!p_reap(x, P_OUT))
            break;
        fill_msg(x->sb.buf + (size_t)(i % NSB) * MAXMSG, s->size, SEED_P, (uint32_t)i);
        atomic_store(&p_post_us[i], now_us());
        if (send1(p->ep, &x->sb, (size_t)(i % NSB) * MAXMSG, s->size, TAG_PS | (uint64_t)i,
                  DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS) {
            FAILF("message %d: dat_ep_post_send failed", i);
            break;
        }
        x->posted++;
        if (!p_reap(x, NSB))
            break;
    }
    if (i < n || !p_reap(x, 1))
        give_up(i);
    if (r_sends)
        pthread_join(x->reaper, NULL);
}

/* After a failure: P stays (its connection up) until R is done, at most
 * 15 s, so that its exit does not wake a thread of R that slept through
 * its wake-up: that thread's wait must time out and say so. */
static void p_linger(struct pair *p)
{
    double end = ctest_now() + 15.0;
    char c;
    while (ctest_now() < end) {
        struct pollfd pfd = {p->rx, POLLIN, 0};
        int r = poll(&pfd, 1, 100);
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0 && read(p->rx, &c, 1) <= 0)
            return;
    }
}

/* ---- the receiver R (client) --------------------------------------------------- */

struct rs {
    struct pair *p;
    int kind, n, nsend; /* P's messages; R's messages at most */
    DAT_CNO_HANDLE cno;
    DAT_EVD_HANDLE A, B, Z; /* receive, request, software (F) EVDs */
    struct mr rb, sb;
    int h_slots;            /* H: the request queue's actual depth */
    int recv_done;          /* P's messages taken (by the one thread that takes them) */
    int token_next;         /* the next message whose token may be given */
    atomic_int send_posted, send_done, send_final;
    atomic_int a_done;      /* F, G: the receiving thread finished */
    atomic_llong end_us;    /* F: when it posted the end signal */
    struct rng rr;          /* thresholds and replies (receiving thread) */
    double t0;
    int efd;                /* E: the agent's eventfd */
    /* counts */
    atomic_long waits, thr_gt1, cno_waits, cno_empty, polls, post_refused;
    atomic_long agent_calls, agent_installs, agent_over;
    atomic_llong max_lat_us; /* the longest from a post to the take of its completion */
    atomic_uintptr_t agent_bad;
};
static struct rs RS;

/* When each of R's messages was posted (us on ctest_now's clock): a
 * completion owed for long is a failure, one posted just before a wait
 * timed out is not. */
static atomic_llong post_us[NS_MAXN];

/* True if R's Send `j` was posted more than `secs` ago. */
static int posted_before(int j, double secs)
{
    return j >= 0 && j < NS_MAXN && atomic_load(&post_us[j]) != 0 &&
           now_us() - atomic_load(&post_us[j]) > (long long)(secs * 1e6);
}

/* The state of a message for failure reports. */
static const char *st_of(struct rs *x, int k)
{
    return k < x->n ? style_name[sched[k].style] : "-";
}

static const char *rname(struct rs *x, DAT_EVD_HANDLE e)
{
    return e == x->A ? "receive" : e == x->B ? "request" : e == x->Z ? "software" : "unknown";
}

static int over_budget(struct rs *x, const char *what, int done, int total)
{
    if (ctest_now() - x->t0 <= BUDGET_S)
        return 0;
    FAILF("%s: only %d of %d %s in %.0f s", kind_name[x->kind], done, total, what, BUDGET_S);
    give_up(done);
    return 1;
}

static int r_post_recv(struct rs *x, int k)
{
    DAT_RETURN r = recv1(x->p->ep, &x->rb, (size_t)(k % NRECV_R) * MAXMSG, MAXMSG,
                         TAG_RR | (uint64_t)k, DAT_COMPLETION_DEFAULT_FLAG);
    if (r != DAT_SUCCESS)
        FAILF("dat_ep_post_recv for message %d returned 0x%08x", k, (unsigned)r);
    return r == DAT_SUCCESS;
}

/* R is about to block for message recv_done: its token, if P waits for one. */
static int r_token(struct rs *x)
{
    int k = x->recv_done;
    if (k < x->n && sched[k].hs && x->token_next <= k) {
        int32_t t = k;
        x->token_next = k + 1;
        if (pair_tell(x->p, &t, sizeof(t)) != 0) {
            FAILF("message %d: the token could not be written", k);
            return 0;
        }
    }
    return 1;
}

/* Posts one of R's messages if P has a receive for it and the request
 * queue room. 1 posted, 0 not now, -1 failed. */
static int r_send(struct rs *x)
{
    int j = atomic_load(&x->send_posted);
    DAT_RETURN r;
    if (j >= x->nsend || (unsigned)j - atomic_load(&S->p_consumed) >= NRECV_P ||
        j - atomic_load(&x->send_done) >= R_OUT)
        return 0;
    fill_msg(x->sb.buf + (size_t)(j % NSB) * MAXMSG, r_size(j), SEED_R, (uint32_t)j);
    /* Counted before the post: its completion may be taken (by another
     * thread) before dat_ep_post_send returns. */
    atomic_store(&post_us[j], now_us());
    atomic_store(&x->send_posted, j + 1);
    r = send1(x->p->ep, &x->sb, (size_t)(j % NSB) * MAXMSG, r_size(j), TAG_RS | (uint64_t)j,
              DAT_COMPLETION_DEFAULT_FLAG);
    if (r != DAT_SUCCESS) {
        FAILF("%s: R's message %d: dat_ep_post_send returned 0x%08x", kind_name[x->kind], j,
              (unsigned)r);
        return -1;
    }
    atomic_store(&S->r_sent, (unsigned)(j + 1));
    return 1;
}

/* After taking a message: a reply half the time (D, E, F). */
static int r_maybe_reply(struct rs *x)
{
    if (x->nsend == 0 || rng_next(&x->rr) % 2)
        return 1;
    return r_send(x) >= 0;
}

/* R posts no more messages. */
static void r_sends_final(struct rs *x)
{
    atomic_store(&x->send_final, 1);
    atomic_store(&S->r_sent, (unsigned)atomic_load(&x->send_posted));
    atomic_store(&S->r_final, 1);
}

static void r_show_next(struct rs *x, DAT_EVD_HANDLE evd);

/* A completion taken `lat` us after its post: slept through if over
 * LATE_S (a lost wake-up that something else - a later message, the
 * peer's exit - ended). */
static int r_latency(struct rs *x, long long lat, const char *what, int idx)
{
    long long m = atomic_load(&x->max_lat_us);
    while (lat > m && !atomic_compare_exchange_weak(&x->max_lat_us, &m, lat)) {
    }
    if (lat > (long long)(LATE_S * 1e6)) {
        FAILF("%s: %s %d (%s segment) was taken %.2f s after its post: its wake-up was "
              "lost and something else ended the sleep",
              kind_name[x->kind], what, idx, st_of(x, idx), (double)lat / 1e6);
        return 0;
    }
    return 1;
}

/* One of P's messages, from the receive EVD: checked, its receive
 * re-posted. */
static int r_take_recv(struct rs *x, const DAT_EVENT *ev)
{
    int k = x->recv_done;
    const unsigned char *b = x->rb.buf + (size_t)(k % NRECV_R) * MAXMSG;
    if (k >= x->n) {
        FAILF("%s: a receive completion beyond the %d messages sent:", kind_name[x->kind], x->n);
        ev_print(ev);
        return 0;
    }
    if (!dto_ok(ev, x->A, x->p->ep, TAG_RR | (uint64_t)k, sched[k].size, "message", k)) {
        r_show_next(x, x->A);
        return 0;
    }
    ctest_handover(b, sched[k].size);
    if (!msg_ok(b, sched[k].size, SEED_P, (uint32_t)k) ||
        !r_latency(x, now_us() - atomic_load(&p_post_us[k]), "message", k))
        return 0;
    x->recv_done++;
    if (k + NRECV_R < x->n && !r_post_recv(x, k + NRECV_R))
        return 0;
    atomic_store(&S->r_consumed, (unsigned)x->recv_done);
    return 1;
}

/* After an out-of-order completion: the cookies of what follows on the EVD
 * (a reordering shows the missing one next, a loss never). */
static void r_show_next(struct rs *x, DAT_EVD_HANDLE evd)
{
    char buf[256];
    int n = 0;
    DAT_EVENT ev;
    buf[0] = '\0';
    ctest_sleep_ms(10);
    for (int i = 0; i < 8 && dat_evd_dequeue(evd, &ev) == DAT_SUCCESS; i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, " 0x%llx",
                      (unsigned long long)ev.event_data.dto_completion_event_data.user_cookie.as_64);
    NOTE("%s: then on the %s EVD:%s", kind_name[x->kind], rname(x, evd), n ? buf : " nothing");
}

/* The completion of one of R's Sends, from the request EVD. */
static int r_take_send(struct rs *x, const DAT_EVENT *ev)
{
    int j = atomic_load(&x->send_done);
    if (j >= atomic_load(&x->send_posted)) {
        FAILF("%s: a request completion with none of R's Sends outstanding (%d done):",
              kind_name[x->kind], j);
        ev_print(ev);
        return 0;
    }
    if (!dto_ok(ev, x->B, x->p->ep, TAG_RS | (uint64_t)j, r_size(j), "R's Send", j)) {
        r_show_next(x, x->B);
        return 0;
    }
    if (!r_latency(x, now_us() - atomic_load(&post_us[j]), "R's Send", j))
        return 0;
    atomic_store(&x->send_done, j + 1);
    return 1;
}

/* After a wait failed: was the event there all along? */
static void r_probe(struct rs *x, DAT_EVD_HANDLE evd)
{
    DAT_EVENT ev;
    DAT_RETURN r = dat_evd_dequeue(evd, &ev);
    if (r == DAT_SUCCESS) {
        FAILF("%s: ... yet the %s EVD held an event: a lost wake-up", kind_name[x->kind],
              rname(x, evd));
        ev_print(&ev);
    } else {
        NOTE("the %s EVD is empty too (dat_evd_dequeue 0x%08x): the completion never came",
             rname(x, evd), (unsigned)r);
    }
}


/* dat_evd_wait with a threshold of 1 half the time, else up to the
 * messages that come without another token (at most 8). */
static int pick_threshold(struct rs *x, int k)
{
    int run = 1;
    if (rng_next(&x->rr) % 2)
        return 1;
    for (int j = k + 1; j < x->n && !sched[j].hs && run < 8; j++)
        run++;
    return (int)rng_range(&x->rr, 1, (unsigned)run);
}

/* Takes P's next message with dat_evd_wait on the receive EVD. */
static int r_evd_wait_recv(struct rs *x)
{
    int k = x->recv_done, thr = pick_threshold(x, k);
    DAT_EVENT ev;
    DAT_COUNT nmore = -1;
    DAT_RETURN r;
    double t;
    if (!r_token(x))
        return 0;
    memset(&ev, 0, sizeof(ev));
    t = ctest_now();
    r = dat_evd_wait(x->A, WAIT_US, thr, &ev, &nmore);
    atomic_fetch_add(&x->waits, 1);
    if (thr > 1)
        atomic_fetch_add(&x->thr_gt1, 1);
    if (r != DAT_SUCCESS) {
        FAILF("%s: message %d (%s segment): dat_evd_wait(receive EVD, 5 s, threshold %d) "
              "returned 0x%08x after %.2f s, nmore %d",
              kind_name[x->kind], k, st_of(x, k), thr, (unsigned)r, ctest_now() - t, (int)nmore);
        if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED && nmore >= thr)
            FAILF("%s: ... with %d events queued: a lost wake-up", kind_name[x->kind], (int)nmore);
        r_probe(x, x->A);
        explain_peer();
        return 0;
    }
    if (nmore < thr - 1) {
        FAILF("%s: message %d: dat_evd_wait(threshold %d) succeeded with nmore %d",
              kind_name[x->kind], k, thr, (int)nmore);
        return 0;
    }
    if (ctest_now() - t > LATE_S)
        FAILF("%s: message %d (%s segment): dat_evd_wait(receive EVD, 5 s, threshold %d) "
              "succeeded only after %.2f s (at its deadline: it slept through its wake-up and "
              "found the events when the timer woke it), nmore %d",
              kind_name[x->kind], k, st_of(x, k), thr, ctest_now() - t, (int)nmore);
    return r_take_recv(x, &ev);
}

/* Dequeues `evd` until it is empty, handling what comes. */
static int r_drain(struct rs *x, DAT_EVD_HANDLE evd, int *got)
{
    DAT_EVENT ev;
    DAT_RETURN r;
    while ((r = dat_evd_dequeue(evd, &ev)) == DAT_SUCCESS) {
        if (got)
            ++*got;
        if (evd == x->A) {
            if (!r_take_recv(x, &ev) || !r_maybe_reply(x))
                return 0;
        } else if (evd == x->B) {
            if (!r_take_send(x, &ev))
                return 0;
        } else if (evd == x->Z) {
            if (ev.event_number != DAT_SOFTWARE_EVENT) {
                FAILF("not a software event on the software EVD:");
                ev_print(&ev);
                return 0;
            }
        }
    }
    if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY) {
        FAILF("%s: dat_evd_dequeue(%s EVD) returned 0x%08x", kind_name[x->kind], rname(x, evd),
              (unsigned)r);
        return 0;
    }
    return 1;
}

static int r_owed(struct rs *x)
{
    return x->recv_done < x->n || atomic_load(&x->send_done) < atomic_load(&x->send_posted);
}

/* A, B: every message by dat_evd_wait on the receive EVD. */
static void r_run_evd(struct rs *x)
{
    while (x->recv_done < x->n && !stopped())
        if (!r_evd_wait_recv(x) || over_budget(x, "messages", x->recv_done, x->n)) {
            give_up(x->recv_done);
            return;
        }
}

/* C, D: dat_cno_wait, then every EVD of the CNO dequeued until empty. */
static void r_run_cno(struct rs *x, int two)
{
    while (r_owed(x) && !stopped()) {
        DAT_EVD_HANDLE hint = BOGUS_EVD;
        int k = x->recv_done, sp = atomic_load(&x->send_posted), sd = atomic_load(&x->send_done);
        int got = 0;
        double t;
        DAT_RETURN r;
        if (!r_token(x))
            break;
        t = ctest_now();
        r = dat_cno_wait(x->cno, WAIT_US, &hint);
        atomic_fetch_add(&x->cno_waits, 1);
        if (r != DAT_SUCCESS) {
            FAILF("%s: message %d (%s segment), R's Sends done %d of %d: dat_cno_wait(5 s) "
                  "returned 0x%08x (EVD %p) after %.2f s",
                  kind_name[x->kind], k, st_of(x, k), sd, sp, (unsigned)r, (void *)hint,
                  ctest_now() - t);
            r_probe(x, x->A);
            if (two)
                r_probe(x, x->B);
            explain_peer();
            break;
        }
        if (hint != x->A && !(two && hint == x->B)) {
            FAILF("%s: dat_cno_wait succeeded naming EVD %p, not one of the CNO's",
                  kind_name[x->kind], (void *)hint);
            break;
        }
        if (!r_drain(x, x->A, &got) || (two && !r_drain(x, x->B, &got)))
            break;
        if (got == 0)
            atomic_fetch_add(&x->cno_empty, 1);
        if (over_budget(x, "messages", x->recv_done, x->n))
            break;
    }
    if (r_owed(x))
        give_up(x->recv_done);
}

/* E: the agent writes the eventfd R sleeps on; reinstalled after each call. */
static void ns_agent(DAT_PVOID instance, DAT_EVD_HANDLE evd)
{
    struct rs *x = instance;
    uint64_t one = 1;
    long calls = atomic_fetch_add(&x->agent_calls, 1) + 1;
    if (calls > atomic_load(&x->agent_installs))
        atomic_fetch_add(&x->agent_over, 1);
    if (evd != x->A && evd != x->B)
        atomic_store(&x->agent_bad, (uintptr_t)evd);
    if (write(x->efd, &one, sizeof(one)) < 0) {
    }
}

static DAT_OS_WAIT_PROXY_AGENT ns_agent_of(struct rs *x)
{
    DAT_OS_WAIT_PROXY_AGENT a;
    a.instance_data = x;
    a.proxy_agent_func = ns_agent;
    return a;
}

static void r_run_agent(struct rs *x)
{
    for (;;) {
        int k, sp, sd, rc;
        uint64_t v = 0;
        struct pollfd pfd;
        double t;
        if (!r_drain(x, x->A, NULL) || !r_drain(x, x->B, NULL))
            break;
        if (!r_owed(x) || stopped())
            break;
        if (!r_token(x))
            break;
        k = x->recv_done;
        sp = atomic_load(&x->send_posted);
        sd = atomic_load(&x->send_done);
        pfd.fd = x->efd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        t = ctest_now();
        do
            rc = poll(&pfd, 1, (int)(WAIT_US / 1000));
        while (rc < 0 && errno == EINTR);
        atomic_fetch_add(&x->cno_waits, 1);
        if (rc != 1) {
            DAT_CNO_PARAM cp;
            memset(&cp, 0, sizeof(cp));
            (void)dat_cno_query(x->cno, DAT_CNO_FIELD_ALL, &cp);
            FAILF("%s: message %d (%s segment), R's Sends done %d of %d: the agent was not "
                  "called in %.2f s (calls %ld, installs %ld; the CNO's agent now %s)",
                  kind_name[x->kind], k, st_of(x, k), sd, sp, ctest_now() - t,
                  atomic_load(&x->agent_calls), atomic_load(&x->agent_installs),
                  cp.agent.proxy_agent_func ? "installed" : "NULL");
            r_probe(x, x->A);
            r_probe(x, x->B);
            explain_peer();
            break;
        }
        if (read(x->efd, &v, sizeof(v)) != (ssize_t)sizeof(v) || v != 1) {
            FAILF("%s: the agent's eventfd held %llu calls since the last read, want 1",
                  kind_name[x->kind], (unsigned long long)v);
            break;
        }
        atomic_fetch_add(&x->agent_installs, 1);
        if (dat_cno_modify_agent(x->cno, ns_agent_of(x)) != DAT_SUCCESS) {
            FAILF("dat_cno_modify_agent failed");
            break;
        }
        if (over_budget(x, "messages", x->recv_done, x->n))
            break;
    }
    (void)dat_cno_modify_agent(x->cno, DAT_OS_WAIT_PROXY_AGENT_NULL);
    if (r_owed(x))
        give_up(x->recv_done);
}

/* F: the CNO thread. Takes the request EVD's events (R's Sends, posted by
 * the receiving thread) and the software EVD's end signal; the receive EVD
 * is the other thread's. */
static void *f_cno_thread(void *arg)
{
    struct rs *x = arg;
    while (!stopped()) {
        DAT_EVD_HANDLE hint = BOGUS_EVD;
        int sp = atomic_load(&x->send_posted), sd = atomic_load(&x->send_done);
        int ended = atomic_load(&x->a_done), got = 0;
        double t;
        DAT_RETURN r;
        if (ended && atomic_load(&x->send_final) && sd == sp)
            break;
        t = ctest_now();
        r = dat_cno_wait(x->cno, WAIT_US, &hint);
        atomic_fetch_add(&x->cno_waits, 1);
        if (r != DAT_SUCCESS) {
            /* Only the request EVD and the end signal are owed to this
             * thread: the receive EVD has a waiter most of the time, which
             * takes its notifications. A timeout is a failure if one of
             * them was owed for a second or more of the wait. */
            int sd2 = atomic_load(&x->send_done), sp2 = atomic_load(&x->send_posted);
            int owed_b = sd2 < sp2 && posted_before(sd2, 1.0);
            int owed_z = atomic_load(&x->a_done) && now_us() - atomic_load(&x->end_us) > 1000000;
            if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY && !owed_b && !owed_z)
                continue;
            FAILF("%s: R's Send %d of %d posted (%d of %d when the wait began), receiving "
                  "thread %s: dat_cno_wait(5 s) returned 0x%08x (EVD %p) after %.2f s",
                  kind_name[x->kind], sd2, sp2, sd, sp,
                  atomic_load(&x->a_done) ? "done" : "busy", (unsigned)r, (void *)hint,
                  ctest_now() - t);
            ended = atomic_load(&x->a_done);
            r_probe(x, x->B);
            if (ended)
                r_probe(x, x->Z);
            explain_peer();
            give_up(sd);
            break;
        }
        if (hint != x->A && hint != x->B && hint != x->Z) {
            FAILF("%s: dat_cno_wait succeeded naming EVD %p, not one of the CNO's",
                  kind_name[x->kind], (void *)hint);
            give_up(sd);
            break;
        }
        if (!r_drain(x, x->B, &got) || !r_drain(x, x->Z, &got)) {
            give_up(sd);
            break;
        }
        if (got == 0)
            atomic_fetch_add(&x->cno_empty, 1);
    }
    return NULL;
}

/* G: the polling thread. Posts R's messages now and then and reaps their
 * completions with dat_evd_dequeue, spinning, until the receiving thread is
 * done and every completion came. */
static void *g_poll_thread(void *arg)
{
    struct rs *x = arg;
    struct rng r;
    double last = ctest_now();
    unsigned empty = 0;
    rng_init(&r, 0x6060u ^ (uint64_t)x->n);
    while (!stopped()) {
        DAT_EVENT ev;
        DAT_RETURN ret;
        int sp = atomic_load(&x->send_posted), sd = atomic_load(&x->send_done);
        if (atomic_load(&x->a_done)) {
            if (!atomic_load(&x->send_final))
                r_sends_final(x);
            if (sd == sp)
                break;
        } else if ((long long)sp <
                       (long long)x->nsend * atomic_load(&S->r_consumed) / (x->n ? x->n : 1) + 1 &&
                   rng_next(&r) % 8 == 0 && r_send(x) < 0) {
            give_up(sd);
            break;
        }
        ret = dat_evd_dequeue(x->B, &ev);
        atomic_fetch_add(&x->polls, 1);
        if (ret == DAT_SUCCESS) {
            if (!r_take_send(x, &ev)) {
                give_up(sd);
                break;
            }
            last = ctest_now();
            continue;
        }
        if (DAT_GET_TYPE(ret) != DAT_QUEUE_EMPTY) {
            FAILF("%s: dat_evd_dequeue(request EVD) returned 0x%08x", kind_name[x->kind],
                  (unsigned)ret);
            give_up(sd);
            break;
        }
        if (sd < sp && ctest_now() - last > 5.0) {
            FAILF("%s: R's Send %d of %d posted did not complete in 5 s of polling",
                  kind_name[x->kind], sd, sp);
            give_up(sd);
            break;
        }
        if (sd == sp)
            last = ctest_now();
        if (++empty % 64 == 0)
            sched_yield();
        if (rng_next(&r) % 512 == 0)
            sleep_us(rng_range(&r, 1, 300));
    }
    return NULL;
}

/* H: the posting thread. Posts R's messages on an EP of H_SLOTS request
 * slots, retrying while none is free, in bursts and with pauses. */
static void *h_post_thread(void *arg)
{
    struct rs *x = arg;
    struct rng r;
    int burst = 0;
    rng_init(&r, 0x4848u ^ (uint64_t)x->nsend);
    for (int j = 0; j < x->nsend && !stopped(); j++) {
        double end = ctest_now() + 5.0;
        DAT_RETURN ret;
        if (burst == 0) {
            burst = (int)rng_range(&r, 1, 12);
            if (rng_next(&r) % 2)
                sleep_us(rng_range(&r, 0, 600));
        }
        burst--;
        while ((unsigned)j - atomic_load(&S->p_consumed) >= NRECV_P && !stopped()) {
            if (ctest_now() > end) {
                FAILF("%s: R's message %d: P took none in 5 s", kind_name[x->kind], j);
                give_up(j);
                return NULL;
            }
            sched_yield();
        }
        fill_msg(x->sb.buf + (size_t)(j % NSB) * MAXMSG, r_size(j), SEED_R, (uint32_t)j);
        /* Counted before the post succeeds: its completion may be taken
         * before dat_ep_post_send returns. */
        atomic_store(&post_us[j], now_us());
        atomic_store(&x->send_posted, j + 1);
        for (;;) {
            ret = send1(x->p->ep, &x->sb, (size_t)(j % NSB) * MAXMSG, r_size(j),
                        TAG_RS | (uint64_t)j, DAT_COMPLETION_DEFAULT_FLAG);
            if (DAT_GET_TYPE(ret) != DAT_INSUFFICIENT_RESOURCES || stopped())
                break;
            atomic_fetch_add(&x->post_refused, 1);
            if (ctest_now() > end) {
                FAILF("%s: R's message %d: dat_ep_post_send refused for 5 s (no request slot: "
                      "the waiting thread took %d of %d completions)",
                      kind_name[x->kind], j, atomic_load(&x->send_done),
                      atomic_load(&x->send_posted));
                give_up(j);
                return NULL;
            }
            sched_yield();
        }
        if (ret != DAT_SUCCESS) {
            if (!stopped()) {
                FAILF("%s: R's message %d: dat_ep_post_send returned 0x%08x", kind_name[x->kind],
                      j, (unsigned)ret);
                give_up(j);
            }
            return NULL;
        }
        atomic_store(&S->r_sent, (unsigned)(j + 1));
    }
    r_sends_final(x);
    return NULL;
}

/* H: the waiting thread, on the request EVD. */
static void r_run_h(struct rs *x)
{
    while (atomic_load(&x->send_done) < x->nsend && !stopped()) {
        int sd = atomic_load(&x->send_done), sp = atomic_load(&x->send_posted);
        int left = x->nsend - sd, thr = 1;
        DAT_EVENT ev;
        DAT_COUNT nmore = -1;
        DAT_RETURN r;
        double t;
        if (rng_next(&x->rr) % 2 == 0)
            thr = (int)rng_range(&x->rr, 1, (unsigned)(left < x->h_slots ? left : x->h_slots));
        memset(&ev, 0, sizeof(ev));
        t = ctest_now();
        r = dat_evd_wait(x->B, WAIT_US, thr, &ev, &nmore);
        atomic_fetch_add(&x->waits, 1);
        if (thr > 1)
            atomic_fetch_add(&x->thr_gt1, 1);
        if (r != DAT_SUCCESS) {
            FAILF("%s: R's Send %d (%d posted then, %d now, %ld refused posts): "
                  "dat_evd_wait(request EVD, 5 s, threshold %d) returned 0x%08x after %.2f s, "
                  "nmore %d",
                  kind_name[x->kind], sd, sp, atomic_load(&x->send_posted),
                  atomic_load(&x->post_refused), thr, (unsigned)r, ctest_now() - t, (int)nmore);
            if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED && nmore >= thr)
                FAILF("%s: ... with %d events queued: a lost wake-up", kind_name[x->kind],
                      (int)nmore);
            r_probe(x, x->B);
            explain_peer();
            break;
        }
        if (nmore < thr - 1) {
            FAILF("%s: R's Send %d: dat_evd_wait(threshold %d) succeeded with nmore %d",
                  kind_name[x->kind], sd, thr, (int)nmore);
            break;
        }
        if (ctest_now() - t > LATE_S)
            FAILF("%s: R's Send %d (%d posted then, %d now): dat_evd_wait(request EVD, 5 s, "
                  "threshold %d) succeeded only after %.2f s (at its deadline: it slept through "
                  "its wake-up and found the events when the timer woke it), nmore %d",
                  kind_name[x->kind], sd, sp, atomic_load(&x->send_posted), thr,
                  ctest_now() - t, (int)nmore);
        if (!r_take_send(x, &ev) || over_budget(x, "Send completions", sd, x->nsend))
            break;
    }
    if (atomic_load(&x->send_done) < x->nsend)
        give_up(atomic_load(&x->send_done));
}

/* F, G: the receiving thread's loop, with replies (F) and the end signal. */
static void r_run_receiver(struct rs *x)
{
    while (x->recv_done < x->n && !stopped()) {
        if (!r_evd_wait_recv(x) || (x->kind == K_F && !r_maybe_reply(x)) ||
            over_budget(x, "messages", x->recv_done, x->n)) {
            give_up(x->recv_done);
            break;
        }
    }
    if (x->kind == K_F) {
        DAT_EVENT se;
        r_sends_final(x);
        atomic_store(&x->end_us, now_us());
        atomic_store(&x->a_done, 1);
        memset(&se, 0, sizeof(se));
        se.event_number = DAT_SOFTWARE_EVENT;
        se.evd_handle = x->Z;
        if (dat_evd_post_se(x->Z, &se) != DAT_SUCCESS)
            FAILF("dat_evd_post_se(the end signal) failed");
    } else {
        atomic_store(&x->a_done, 1);
    }
}

/* Joins a thread within `secs` (every wait in it is bounded). */
static int join_within(pthread_t th, double secs)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)secs;
    if (pthread_timedjoin_np(th, NULL, &ts) != 0) {
        FAILF("a thread of R did not end within %.0f s", secs);
        return 0;
    }
    return 1;
}

/* ---- one case ------------------------------------------------------------------ */

static void ns_case(int kind)
{
    static struct pair p;
    struct rs *x = &RS;
    uint64_t seed = env_u64("NOTIFY_SEED", 0xB0B0u + (uint64_t)kind);
    int n = (int)env_u64("NOTIFY_STRESS_MSGS", NS_MSGS), nsend, count[NSTYLE];
    int r_sends;
    DAT_EP_ATTR a;
    double t0;

    if (n < 1)
        n = 1;
    if (n > NS_MAXN)
        n = NS_MAXN;
    nsend = kind == K_H ? n : (kind == K_D || kind == K_E || kind == K_F || kind == K_G) ? n / 2 : 0;
    if (kind == K_H)
        n = 0; /* P only takes R's messages */
    r_sends = nsend > 0;
    atomic_store(&ns_failures, 0);
    if (S == NULL)
        S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(S != MAP_FAILED && S != NULL);
    memset(S, 0, sizeof(*S));
    if (p_post_us == NULL)
        p_post_us = mmap(NULL, sizeof(*p_post_us) * NS_MAXN, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p_post_us != MAP_FAILED && p_post_us != NULL);
    make_sched(seed, n, count);

    REQUIRE(dpair_start(&p) == 0);
    if (p.server) {
        a = ns_attr(&p, NRECV_P, 64);
        PREQUIRE(&p, dpair_connect(&p, &a, NULL, NULL) == 0);
        p_run(&p, n, r_sends);
        if (!stopped())
            PSYNC(&p, 'd');
        else
            p_linger(&p);
        ctest_failures += atomic_load(&ns_failures);
        pair_finish(&p);
        return;
    }

    memset(x, 0, sizeof(*x));
    x->p = &p;
    x->kind = kind;
    x->n = n;
    x->nsend = nsend;
    x->A = p.recv_evd;
    x->B = p.req_evd;
    x->efd = -1;
    rng_init(&x->rr, seed * 31 + 7);
    if (kind != K_A && kind != K_H) {
        DAT_OS_WAIT_PROXY_AGENT ag = DAT_OS_WAIT_PROXY_AGENT_NULL;
        if (kind == K_E) {
            x->efd = eventfd(0, EFD_CLOEXEC);
            PREQUIRE(&p, x->efd >= 0);
            ag = ns_agent_of(x);
            atomic_store(&x->agent_installs, 1);
        }
        PREQUIRE(&p, dat_cno_create(p.ia, ag, &x->cno) == DAT_SUCCESS);
        PREQUIRE(&p, dat_evd_modify_cno(x->A, x->cno) == DAT_SUCCESS);
        if (kind != K_C)
            PREQUIRE(&p, dat_evd_modify_cno(x->B, x->cno) == DAT_SUCCESS);
        if (kind == K_F)
            PREQUIRE(&p, dat_evd_create(p.ia, 4, x->cno, DAT_EVD_SOFTWARE_FLAG, &x->Z) ==
                             DAT_SUCCESS);
    }
    a = ns_attr(&p, NRECV_R, kind == K_H ? H_SLOTS : 32);
    PREQUIRE(&p, dpair_connect(&p, &a, NULL, NULL) == 0);
    x->h_slots = H_SLOTS;
    if (kind == K_H) {
        DAT_EP_ATTR got;
        PREQUIRE(&p, ep_attr_of(p.ep, &got) == 0);
        x->h_slots = got.max_request_dtos;
        PREQUIRE(&p, x->h_slots >= 1 && x->h_slots <= 64);
    }
    PREQUIRE(&p, mr_make(p.ia, p.pz, NRECV_R * MAXMSG, LRW, &x->rb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, NSB * MAXMSG, LRW, &x->sb) == DAT_SUCCESS);
    for (int k = 0; k < NRECV_R && k < n; k++)
        PREQUIRE(&p, r_post_recv(x, k));
    NOTE("%s: seed 0x%llx, %d messages from P (segments: burst %d, ping-pong %d, sleeping %d, "
         "free %d), up to %d from R",
         kind_name[kind], (unsigned long long)seed, n, count[ST_BURST], count[ST_PING],
         count[ST_SLEEP], count[ST_FREE], nsend);
    PSYNC(&p, 'r');
    t0 = ctest_now();
    x->t0 = t0;

    switch (kind) {
    case K_A:
    case K_B:
        r_run_evd(x);
        break;
    case K_C:
        r_run_cno(x, 0);
        break;
    case K_D:
        r_run_cno(x, 1);
        break;
    case K_E:
        r_run_agent(x);
        break;
    case K_F:
    case K_G: {
        pthread_t th;
        PREQUIRE(&p, pthread_create(&th, NULL, kind == K_F ? f_cno_thread : g_poll_thread, x) ==
                         0);
        r_run_receiver(x);
        if (!join_within(th, 12.0)) {
            give_up(x->recv_done);
            ctest_failures += atomic_load(&ns_failures);
            pair_abort(&p);
            return;
        }
        break;
    }
    case K_H: {
        pthread_t th;
        PREQUIRE(&p, pthread_create(&th, NULL, h_post_thread, x) == 0);
        r_run_h(x);
        if (!join_within(th, 12.0)) {
            give_up(0);
            ctest_failures += atomic_load(&ns_failures);
            pair_abort(&p);
            return;
        }
        break;
    }
    }
    if (kind == K_C || kind == K_D || kind == K_E || kind == K_A || kind == K_B)
        r_sends_final(x);

    if (!stopped()) {
        /* Everything came; nothing more may. */
        DAT_EVENT ev;
        ctest_sleep_ms(20);
        if (dat_evd_dequeue(x->A, &ev) == DAT_SUCCESS) {
            FAILF("%s: an event after the last message:", kind_name[kind]);
            ev_print(&ev);
        }
        if (dat_evd_dequeue(x->B, &ev) == DAT_SUCCESS) {
            FAILF("%s: a request event after the last completion:", kind_name[kind]);
            ev_print(&ev);
        }
        if (atomic_load(&x->agent_over) != 0)
            FAILF("%s: the agent was called %ld times beyond its %ld installations",
                  kind_name[kind], atomic_load(&x->agent_over), atomic_load(&x->agent_installs));
        if (atomic_load(&x->agent_bad) != 0)
            FAILF("%s: the agent was called with EVD %p, not one of the CNO's", kind_name[kind],
                  (void *)atomic_load(&x->agent_bad));
        NOTE("%s: %d messages and %d of R's in %.2f s; %ld dat_evd_wait (%ld with threshold "
             "> 1), %ld CNO waits (%ld found nothing), %ld agent calls, %ld polls, %ld refused "
             "posts; longest from a post to its completion taken %.1f ms",
             kind_name[kind], x->recv_done, atomic_load(&x->send_done), ctest_now() - t0,
             atomic_load(&x->waits), atomic_load(&x->thr_gt1), atomic_load(&x->cno_waits),
             atomic_load(&x->cno_empty), atomic_load(&x->agent_calls), atomic_load(&x->polls),
             atomic_load(&x->post_refused), (double)atomic_load(&x->max_lat_us) / 1e3);
        ctest_failures += atomic_load(&ns_failures);
        atomic_store(&ns_failures, 0);
        PSYNC(&p, 'd');
    }
    ctest_failures += atomic_load(&ns_failures);
    pair_finish(&p);
}

TEST(NS_A_evd_wait_no_cno) { ns_case(K_A); }
TEST(NS_B_evd_wait_cno_attached) { ns_case(K_B); }
TEST(NS_C_cno_wait_one_evd) { ns_case(K_C); }
TEST(NS_D_cno_wait_recv_and_request_evds) { ns_case(K_D); }
TEST(NS_E_cno_proxy_agent_reinstalled) { ns_case(K_E); }
TEST(NS_F_evd_waiter_and_cno_waiter_threads) { ns_case(K_F); }
TEST(NS_G_dequeue_poller_and_evd_waiter_threads) { ns_case(K_G); }
TEST(NS_H_poster_fills_request_evd_of_evd_waiter) { ns_case(K_H); }

int main(int argc, char **argv) { return ctest_main(argc, argv); }
