/*
 * Consumer pattern: one side ends the connection while the other busy-loops
 * on dat_evd_dequeue of its connection EVD (bounded time, no other call),
 * as progress engines of communication libraries do.
 *
 * Whatever ends the connection from the peer's side in an orderly way or
 * abruptly - its abrupt or graceful dat_ep_disconnect, its dat_ep_free
 * without a disconnect, its process exiting - the looping side must get
 * exactly one DAT_CONNECTION_EVENT_DISCONNECTED for its EP (rulings
 * "teardown events": not BROKEN), its EP must be DISCONNECTED and every
 * receive it still had posted must come back FLUSHED, once, in order.
 * The side that disconnected itself gets its own DISCONNECTED and flushes.
 *
 * Each case runs 10 cycles on fresh processes, the teardown placed at a
 * seeded random moment (0 - 2 ms) after the looping side started; the
 * cases are named by who leaves (the passive or the active side) and how.
 */
#include "consumer.h"

#define TD_CYCLES 10
#define TD_NRECV 4
#define TD_LEN 64
#define TD_LOOP_S 5.0 /* the looping side's bound */
#define SEED9 0x7EA2u

enum how { TD_ABRUPT, TD_GRACEFUL, TD_EP_FREE, TD_EXIT };

static const char *how_name(int how)
{
    static const char *n[] = {"dat_ep_disconnect(ABRUPT)", "dat_ep_disconnect(GRACEFUL)",
                              "dat_ep_free without a disconnect", "process exit (_exit)"};
    return n[how];
}

/* Every receive still posted (cookies from..to-1) comes back FLUSHED, in order. */
static void expect_flushed(struct pair *p, int from, int to, int cycle)
{
    for (int j = from; j < to; j++) {
        DAT_EVENT ev;
        if (!CWAIT(p->recv_evd, &ev, "a flushed receive")) {
            FAILF("cycle %d: receive %d of %d posted never came back", cycle, j, to);
            return;
        }
        if (!check_dto_ev_at(__FILE__, __LINE__, &ev, p->recv_evd, p->ep, 0x100 + (uint64_t)j,
                             DAT_DTO_ERR_FLUSHED, LEN_ANY)) {
            FAILF("cycle %d: want receive %d FLUSHED", cycle, j);
            return;
        }
    }
}

/* The survivor: loops on dat_evd_dequeue of the connection EVD. */
static void survive(struct pair *p, int how, int cycle)
{
    double t0 = ctest_now(), t;
    long polls = 0;
    DAT_EVENT ev;
    DAT_RETURN r;
    memset(&ev, 0, sizeof(ev));
    for (;;) {
        r = dat_evd_dequeue(p->conn_evd, &ev);
        polls++;
        if (r == DAT_SUCCESS || DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY)
            break;
        if (ctest_now() - t0 > TD_LOOP_S)
            break;
    }
    t = ctest_now() - t0;
    if (r != DAT_SUCCESS) {
        FAILF("cycle %d: the peer's %s: no connection event after %.1f s of dat_evd_dequeue "
              "(%ld calls, last 0x%08x)",
              cycle, how_name(how), t, polls, (unsigned)r);
        give_up(cycle);
        return;
    }
    if (ev.event_number == DAT_CONNECTION_EVENT_BROKEN)
        FAILF("cycle %d: the peer's %s gave BROKEN, want DISCONNECTED (rulings: teardown "
              "events)",
              cycle, how_name(how));
    else if (!CONN_EV_OK(&ev, p->conn_evd, p->ep, DAT_CONNECTION_EVENT_DISCONNECTED))
        FAILF("cycle %d: the peer's %s: wrong connection event", cycle, how_name(how));
    if (ep_state(p->ep) != DAT_EP_STATE_DISCONNECTED)
        FAILF("cycle %d: after the event the EP is in state %u, want DISCONNECTED", cycle,
              (unsigned)ep_state(p->ep));
    /* the first receive took the peer's message */
    expect_flushed(p, 1, TD_NRECV, cycle);
    /* exactly one connection event */
    if (!expect_none_at(__FILE__, __LINE__, p->conn_evd, 50))
        FAILF("cycle %d: a second connection event", cycle);
}

/* The side that leaves, at a random moment after the survivor started. */
static void leave(struct pair *p, int how, int cycle, long delay_us)
{
    DAT_EVENT ev;
    double until = ctest_now() + (double)delay_us / 1e6;
    while (ctest_now() < until)
        cpu_relax();
    switch (how) {
    case TD_ABRUPT:
    case TD_GRACEFUL:
        CHECK_OK(dat_ep_disconnect(p->ep, how == TD_ABRUPT ? DAT_CLOSE_ABRUPT_FLAG
                                                           : DAT_CLOSE_GRACEFUL_FLAG));
        if (!CWAIT(p->conn_evd, &ev, "its own DISCONNECTED") ||
            !CONN_EV_OK(&ev, p->conn_evd, p->ep, DAT_CONNECTION_EVENT_DISCONNECTED))
            FAILF("cycle %d: %s: no DISCONNECTED for the EP that disconnected", cycle,
                  how_name(how));
        expect_flushed(p, 1, TD_NRECV, cycle);
        break;
    case TD_EP_FREE:
        CHECK_OK(dat_ep_free(p->ep));
        break;
    case TD_EXIT:
        fflush(stdout);
        fflush(stderr);
        _exit(ctest_failures == 0 ? 0 : 1);
    }
}

/* One cycle, in a process of its own (the active side; it forks the
 * passive side), so that every cycle starts from a process that has not
 * used the library. */
static void teardown_cycle(int how, int leaver_is_server, int c, long delay)
{
    struct pair p;
    struct mr sb, rb;
    int leaver;
    REQUIRE(cpair_start(&p, 64) == 0);
    leaver = p.server == leaver_is_server;
    PREQUIRE(&p, cpair_connect(&p, NULL) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, TD_LEN, LRW, &sb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, TD_NRECV * TD_LEN, LRW, &rb) == DAT_SUCCESS);
    for (int j = 0; j < TD_NRECV; j++)
        PREQUIRE(&p, POSTED(recv1(p.ep, &rb, (size_t)j * TD_LEN, TD_LEN, 0x100 + (uint64_t)j,
                                  DAT_COMPLETION_DEFAULT_FLAG)));
    PSYNC(&p, 'r');
    /* the connection carries data both ways first */
    fill_msg(sb.buf, TD_LEN, SEED9, (uint32_t)(2 * c + p.server));
    PREQUIRE(&p, POSTED(send1(p.ep, &sb, 0, TD_LEN, 0x200, DAT_COMPLETION_DEFAULT_FLAG)));
    PREQUIRE(&p, EXPECT_DTO(p.req_evd, p.ep, 0x200, DAT_DTO_SUCCESS, TD_LEN));
    PREQUIRE(&p, EXPECT_DTO(p.recv_evd, p.ep, 0x100, DAT_DTO_SUCCESS, TD_LEN));
    PREQUIRE(&p, CHECK_MSG(rb.buf, TD_LEN, SEED9, (uint32_t)(2 * c + !p.server), "message"));
    /* the survivor starts looping, then the other side leaves */
    PSYNC(&p, 'g');
    if (leaver)
        leave(&p, how, c, delay);
    else
        survive(&p, how, c);
    if (how != TD_EXIT)
        PSYNC(&p, 'd');
    pair_finish(&p);
}

static void teardown_case(int how, int leaver_is_server)
{
    struct rng rg;
    uint64_t seed = consumer_seed(SEED9 + (uint64_t)how * 2 + (uint64_t)leaver_is_server);
    rng_init(&rg, seed);
    NOTE("seed 0x%llx; %s leaves by %s, %d cycles", (unsigned long long)seed,
         leaver_is_server ? "the passive side" : "the active side", how_name(how), TD_CYCLES);
    for (int c = 0; c < TD_CYCLES; c++) {
        long delay = (long)rng_range(&rg, 0, 2000);
        int status = 0, done = 0;
        pid_t pid;
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ctest_failures = 0;
            teardown_cycle(how, leaver_is_server, c, delay);
            fflush(stdout);
            fflush(stderr);
            _exit(ctest_failures == 0 ? 0 : 1);
        }
        for (int t = 0; t < 4000 && !done; t++) {
            if (waitpid(pid, &status, WNOHANG) == pid)
                done = 1;
            else
                ctest_sleep_ms(10);
        }
        if (!done) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            FAILF("cycle %d (teardown %.1f ms after the loop began) hung for 40 s", c,
                  delay / 1000.0);
            break;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            FAILF("cycle %d (teardown %.2f ms after the loop began) failed", c, delay / 1000.0);
            break;
        }
    }
}

TEST(TEARDOWN_passive_side_abrupt_disconnect_gives_DISCONNECTED)
{
    teardown_case(TD_ABRUPT, 1);
}

TEST(TEARDOWN_active_side_abrupt_disconnect_gives_DISCONNECTED)
{
    teardown_case(TD_ABRUPT, 0);
}

TEST(TEARDOWN_passive_side_graceful_disconnect_gives_DISCONNECTED)
{
    teardown_case(TD_GRACEFUL, 1);
}

TEST(TEARDOWN_active_side_graceful_disconnect_gives_DISCONNECTED)
{
    teardown_case(TD_GRACEFUL, 0);
}

TEST(TEARDOWN_passive_side_ep_free_gives_DISCONNECTED) { teardown_case(TD_EP_FREE, 1); }

TEST(TEARDOWN_active_side_ep_free_gives_DISCONNECTED) { teardown_case(TD_EP_FREE, 0); }

TEST(TEARDOWN_passive_side_process_exit_gives_DISCONNECTED) { teardown_case(TD_EXIT, 1); }

int main(int argc, char **argv) { return ctest_main(argc, argv); }
