/*
 * A process that forks a fresh server for each client connection, as
 * test harnesses and fork-per-connection servers do, and keeps using the
 * library in both processes.
 *
 * The library's per-thread sleeper (the eventfd a waiting thread sleeps
 * on, and the timerfd of its deadline) was inherited by the child and
 * shared with the parent's thread: a wait in one process drained the
 * other's wake-ups and re-armed its deadline, so the parent's connection
 * waits ended only at their timeouts (5, 10 s), or the connection timed
 * out. A child now makes sleepers of its own.
 */
#include "consumer.h"

static void fork_rounds(int close_each)
{
    for (int c = 0; c < 12; c++) {
        struct pair p;
        double t0 = ctest_now();
        REQUIRE(cpair_start(&p, 64) == 0);
        if (cpair_connect(&p, NULL) != 0) {
            FAILF("round %d: connect failed after %.2f s", c, ctest_now() - t0);
            pair_abort(&p);
            return;
        }
        if (p.server)
            CHECK_OK(dat_ep_disconnect(p.ep, DAT_CLOSE_GRACEFUL_FLAG));
        EXPECT_CONN(p.conn_evd, p.ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0);
        PSYNC(&p, 'd');
        if (!p.server && close_each) {
            CHECK_OK(dat_ep_free(p.ep));
            CHECK_OK(dat_ia_close(p.ia, DAT_CLOSE_ABRUPT_FLAG));
        }
        pair_finish(&p);
        /* Each round is milliseconds; a lost wake-up costs a whole
         * wait timeout (5 s). */
        double took = ctest_now() - t0;
        if (took > 2.5)
            FAILF("round %d took %.2f s", c, took);
    }
}

/* The parent keeps every IA it opened (the children inherit them all). */
TEST(FORK_SERVERS_parent_keeps_its_ias)
{
    fork_rounds(0);
}

/* The parent frees its EP and closes its IA after each round. */
TEST(FORK_SERVERS_parent_closes_each_round)
{
    fork_rounds(1);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
