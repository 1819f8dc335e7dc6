/*
 * Consumer patterns that sleep in the library between messages: a
 * ping-pong of 20,000 round trips of Send/Recv (1 B - 1 KiB, data checked)
 * where each side blocks for every completion, with a CNO in the picture.
 *
 *   EVD_WAIT_CNO_*  both DTO EVDs attached to a CNO (as programs that may
 *                   also wait on the CNO make them), each completion taken
 *                   with dat_evd_wait(threshold 1) on its EVD
 *   CNO_WAIT_*      the same EVDs, each side waiting with dat_cno_wait and
 *                   then dequeuing the EVD it names until empty
 *
 * Every wait has a generous timeout (5 s, where a consumer would pass
 * DAT_TIMEOUT_INFINITE): a lost wake-up fails with the iteration, the wait
 * that timed out, and whether the completion was in fact queued.
 *
 * A waiting thread drives its own queue pairs, CNO waits included: the
 * library's progress thread (named udapl-progress; over verbs the event
 * thread, dat-verbs-events) is not woken for each message. Each side
 * counts that thread's context switches over the run and fails if they
 * reach half the round trips (a CNO wait that left every
 * arrival to it cost two switches per round trip and 2x the latency; with
 * waits that drive, 1,200-3,200 in 20,000, the rest being its periodic
 * checks and connection work).
 */
#include "consumer.h"

#include <dirent.h>

#ifndef NW_ITER
#define NW_ITER 20000
#endif
#define NW_MAX 1024
#define NW_NRECV 2
#define SEED7 0xC0C0u
#define TAG_SEND 0x5E00000000ull
#define TAG_RECV 0x7E00000000ull
#define TAG_MASK 0xFF00000000ull

enum { BY_EVD_WAIT, BY_CNO_WAIT };

struct nw {
    struct pair *p;
    DAT_CNO_HANDLE cno;
    int mode;
    struct mr sb, rb;
    size_t size[NW_ITER];
    int iter, recv_done, send_done;
    double wt[3 * NW_ITER]; /* how long each wait call took */
    int nwt;
};

static void nw_took(struct nw *x, double t0)
{
    if (x->nwt < (int)(sizeof(x->wt) / sizeof(x->wt[0])))
        x->wt[x->nwt++] = ctest_now() - t0;
}

static const char *evd_role(struct nw *x, DAT_EVD_HANDLE evd)
{
    return evd == x->p->recv_evd ? "receive" : evd == x->p->req_evd ? "request" : "unknown";
}

static int nw_post_recv(struct nw *x, int k)
{
    return POSTED(recv1(x->p->ep, &x->rb, (size_t)(k % NW_NRECV) * NW_MAX, NW_MAX,
                        TAG_RECV | (uint64_t)k, DAT_COMPLETION_DEFAULT_FLAG));
}

/* Client messages are 2i, server replies 2i+1. */
static uint32_t nw_msg(int server, int i) { return (uint32_t)(2 * i + server); }

/* Checks one completion against its stream; receives are checked and
 * replaced. */
static int nw_handle(struct nw *x, DAT_EVD_HANDLE evd, const DAT_EVENT *ev)
{
    const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;
    if (ev->event_number != DAT_DTO_COMPLETION_EVENT) {
        FAILF("iteration %d: not a DTO completion on the %s EVD", x->iter, evd_role(x, evd));
        ev_print(ev);
        return 0;
    }
    if (evd == x->p->recv_evd) {
        int k = x->recv_done;
        const unsigned char *b = x->rb.buf + (size_t)(k % NW_NRECV) * NW_MAX;
        if (!check_dto_ev_at(__FILE__, __LINE__, ev, evd, x->p->ep, TAG_RECV | (uint64_t)k,
                             DAT_DTO_SUCCESS, x->size[k]))
            return 0;
        ctest_handover(b, x->size[k]);
        if (!CHECK_MSG(b, x->size[k], SEED7, nw_msg(!x->p->server, k), "message"))
            return 0;
        x->recv_done++;
        return k + NW_NRECV >= NW_ITER || nw_post_recv(x, k + NW_NRECV);
    }
    if (evd == x->p->req_evd) {
        int k = x->send_done;
        if ((d->user_cookie.as_64 & TAG_MASK) != TAG_SEND ||
            !check_dto_ev_at(__FILE__, __LINE__, ev, evd, x->p->ep, TAG_SEND | (uint64_t)k,
                             DAT_DTO_SUCCESS, x->size[k]))
            return 0;
        x->send_done++;
        return 1;
    }
    FAILF("iteration %d: an event from EVD %p", x->iter, (void *)evd);
    return 0;
}

/* After a wait timed out: was the completion there all along? */
static void nw_probe(struct nw *x, DAT_EVD_HANDLE evd)
{
    DAT_EVENT ev;
    DAT_RETURN r = dat_evd_dequeue(evd, &ev);
    if (r == DAT_SUCCESS) {
        FAILF("iteration %d: ... yet the %s EVD held a completion: a lost wake-up", x->iter,
              evd_role(x, evd));
        ev_print(&ev);
    } else {
        NOTE("iteration %d: the %s EVD is empty too (dat_evd_dequeue 0x%08x): the completion "
             "never came",
             x->iter, evd_role(x, evd), (unsigned)r);
    }
}

/* One completion from `evd` by dat_evd_wait. */
static int nw_evd_wait(struct nw *x, DAT_EVD_HANDLE evd)
{
    DAT_EVENT ev;
    DAT_COUNT nmore = 0;
    double t0 = ctest_now();
    DAT_RETURN r;
    memset(&ev, 0, sizeof(ev));
    r = dat_evd_wait(evd, WAIT_US, 1, &ev, &nmore);
    nw_took(x, t0);
    if (r != DAT_SUCCESS) {
        FAILF("iteration %d: dat_evd_wait(%s EVD with a CNO, %u s, threshold 1) returned "
              "0x%08x after %.2f s (receives done %d, sends done %d)",
              x->iter, evd_role(x, evd), WAIT_US / SEC, (unsigned)r, ctest_now() - t0,
              x->recv_done, x->send_done);
        nw_probe(x, evd);
        explain_peer();
        return 0;
    }
    return nw_handle(x, evd, &ev);
}

/* Waits on the CNO until receives and sends reach the counts. */
static int nw_cno_until(struct nw *x, int recvs, int sends)
{
    while (x->recv_done < recvs || x->send_done < sends) {
        DAT_EVD_HANDLE hint = BOGUS_EVD;
        DAT_EVENT ev;
        double t0 = ctest_now();
        DAT_RETURN r = dat_cno_wait(x->cno, WAIT_US, &hint);
        nw_took(x, t0);
        if (r != DAT_SUCCESS) {
            FAILF("iteration %d: dat_cno_wait(%u s) returned 0x%08x (evd %p) after %.2f s, "
                  "waiting for %s (receives done %d, sends done %d)",
                  x->iter, WAIT_US / SEC, (unsigned)r, (void *)hint, ctest_now() - t0,
                  x->recv_done < recvs ? "a receive" : "a send completion", x->recv_done,
                  x->send_done);
            nw_probe(x, x->p->recv_evd);
            nw_probe(x, x->p->req_evd);
            explain_peer();
            return 0;
        }
        if (hint != x->p->recv_evd && hint != x->p->req_evd) {
            FAILF("iteration %d: dat_cno_wait succeeded naming EVD %p, not one of the CNO's",
                  x->iter, (void *)hint);
            return 0;
        }
        /* the consumer's loop: dequeue the EVD named until it is empty */
        while ((r = dat_evd_dequeue(hint, &ev)) == DAT_SUCCESS)
            if (!nw_handle(x, hint, &ev))
                return 0;
        if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY) {
            FAILF("iteration %d: dat_evd_dequeue(%s EVD) returned 0x%08x", x->iter,
                  evd_role(x, hint), (unsigned)r);
            return 0;
        }
    }
    return 1;
}

static int nw_until(struct nw *x, int recvs, int sends)
{
    if (x->mode == BY_CNO_WAIT)
        return nw_cno_until(x, recvs, sends);
    while (x->recv_done < recvs)
        if (!nw_evd_wait(x, x->p->recv_evd))
            return 0;
    while (x->send_done < sends)
        if (!nw_evd_wait(x, x->p->req_evd))
            return 0;
    return 1;
}

/* Context switches (voluntary and not) of this process's thread named
 * udapl-progress (or dat-verbs-events, whose name the kernel cuts to 15
 * characters), or -1 when there is none. */
static long progress_switches(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    long n = -1;
    if (!d)
        return -1;
    while (n < 0 && (e = readdir(d)) != NULL) {
        char path[300], line[128];
        FILE *f;
        int named = 0;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof(line), f)) {
            long v;
            if (strncmp(line, "Name:", 5) == 0)
                named = strstr(line, "udapl-progress") != NULL ||
                        strstr(line, "dat-verbs-event") != NULL;
            else if (named && (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
                               sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1))
                n = (n < 0 ? 0 : n) + v;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

static int nw_send(struct nw *x, int i)
{
    unsigned char *b = x->sb.buf;
    fill_msg(b, x->size[i], SEED7, nw_msg(x->p->server, i));
    if (!POSTED(send1(x->p->ep, &x->sb, 0, x->size[i], TAG_SEND | (uint64_t)i,
                      DAT_COMPLETION_DEFAULT_FLAG))) {
        FAILF("iteration %d: the Send was refused", i);
        return 0;
    }
    return 1;
}

static void nw_pingpong(int mode)
{
    static struct nw x;
    struct pair p;
    struct rng rg;
    uint64_t seed = consumer_seed(SEED7);
    double t0;
    long sw0, sw1;
    int i;

    memset(&x, 0, sizeof(x));
    rng_init(&rg, seed);
    for (i = 0; i < NW_ITER; i++)
        x.size[i] = rng_range(&rg, 1, NW_MAX);
    REQUIRE(cpair_start_cno(&p, 64, &x.cno) == 0);
    PREQUIRE(&p, cpair_connect(&p, NULL) == 0);
    x.p = &p;
    x.mode = mode;
    PREQUIRE(&p, mr_make(p.ia, p.pz, NW_MAX, LRW, &x.sb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, NW_NRECV * NW_MAX, LRW, &x.rb) == DAT_SUCCESS);
    for (i = 0; i < NW_NRECV; i++)
        PREQUIRE(&p, nw_post_recv(&x, i));
    if (!p.server)
        NOTE("seed 0x%llx, %d round trips of 1 B - %u B", (unsigned long long)seed, NW_ITER,
             NW_MAX);
    PSYNC(&p, 'r');
    sw0 = progress_switches();
    t0 = ctest_now();
    for (i = 0; i < NW_ITER; i++) {
        x.iter = i;
        if (p.server ? !nw_until(&x, i + 1, i) || !nw_send(&x, i) || !nw_until(&x, i + 1, i + 1)
                     : !nw_send(&x, i) || !nw_until(&x, i + 1, i + 1)) {
            give_up(i);
            break;
        }
        if (OVER_BUDGET(t0, i + 1, NW_ITER, "round trips"))
            break;
    }
    {
        struct stats st = stats_of(x.wt, x.nwt);
        int slow = 0;
        for (int k = 0; k < x.nwt; k++)
            slow += x.wt[k] >= 0.001;
        NOTE("%d round trips in %.3f s; %d %s calls: median %.1f us, p90 %.1f us, max %.1f us, "
             "%d over 1 ms",
             i, ctest_now() - t0, st.n, mode == BY_CNO_WAIT ? "dat_cno_wait" : "dat_evd_wait",
             st.median * 1e6, st.p90 * 1e6, st.max * 1e6, slow);
    }
    sw1 = progress_switches();
    if (sw0 < 0 || sw1 < 0)
        FAILF("no thread named udapl-progress or dat-verbs-events while connected");
    else if (i == NW_ITER && sw1 - sw0 >= NW_ITER / 2)
        FAILF("the progress thread switched %ld times in %d round trips: the waiting thread "
              "should drive its own queue pairs",
              sw1 - sw0, i);
    else
        NOTE("the progress thread switched %ld times in %d round trips", sw1 - sw0, i);
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(EVD_WAIT_CNO_attached_pingpong_no_lost_wakeup) { nw_pingpong(BY_EVD_WAIT); }

TEST(CNO_WAIT_pingpong_dequeue_hinted_evd_until_empty) { nw_pingpong(BY_CNO_WAIT); }

int main(int argc, char **argv) { return ctest_main(argc, argv); }
