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

/*
 * The parent opened and closed an IA before it forked (a harness probing
 * what the IA supports, as SRQ_GATE does), and each child then moves
 * data. Over verbs the parent's first IA made librdmacm open the device
 * contexts, and the children inherited them: a context's legacy commands
 * (the Send doorbell of rxe and siw is one) are refused with EACCES to any
 * process but the one that opened it, so every Send of a child was
 * flushed. Each IA now opens a device context of its own process.
 */
#define FD_LEN 256
#define FD_SEED 0x5eedf0u

TEST(FORK_SERVERS_children_of_a_probing_parent_move_data)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;
    DAT_IA_ATTR ia_attr;

    REQUIRE(dat_ia_open(ctest_ia_name(), 8, &aevd, &ia) == DAT_SUCCESS);
    CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    for (int c = 0; c < 3; c++) {
        struct pair p;
        struct mr sb, rb;
        DAT_EP_HANDLE ep;
        uint32_t out, in;

        REQUIRE(cpair_start(&p, 64) == 0);
        out = 2 * (uint32_t)c + (uint32_t)p.server;
        in = 2 * (uint32_t)c + (uint32_t)!p.server;
        PREQUIRE(&p, mr_make(p.ia, p.pz, FD_LEN, LRW, &sb) == DAT_SUCCESS);
        PREQUIRE(&p, mr_make(p.ia, p.pz, FD_LEN, LRW, &rb) == DAT_SUCCESS);
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, POSTED(recv1(ep, &rb, 0, FD_LEN, 0x100, DAT_COMPLETION_DEFAULT_FLAG)));
        PREQUIRE(&p, CCONNECT(&p, ep, p.cr_evd, p.conn_evd, p.psp, p.qual) == 0);
        /* the client speaks first, the server answers */
        if (p.server)
            CHECK(EXPECT_DTO(p.recv_evd, ep, 0x100, DAT_DTO_SUCCESS, FD_LEN) &&
                  CHECK_MSG(rb.buf, FD_LEN, FD_SEED, in, "message"));
        fill_msg(sb.buf, FD_LEN, FD_SEED, out);
        CHECK(POSTED(send1(ep, &sb, 0, FD_LEN, 0x200, DAT_COMPLETION_DEFAULT_FLAG)) &&
              EXPECT_DTO(p.req_evd, ep, 0x200, DAT_DTO_SUCCESS, FD_LEN));
        if (!p.server)
            CHECK(EXPECT_DTO(p.recv_evd, ep, 0x100, DAT_DTO_SUCCESS, FD_LEN) &&
                  CHECK_MSG(rb.buf, FD_LEN, FD_SEED, in, "answer"));
        PSYNC(&p, 'x');
        if (p.server)
            CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
        EXPECT_CONN(p.conn_evd, ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0);
        CHECK_OK(dat_ep_free(ep));
        PSYNC(&p, 'd');
        pair_finish(&p);
    }
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
