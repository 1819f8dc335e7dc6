/*
 * Consumer patterns around connection setup: how programs find their IA,
 * choose their qualifier and lay out their EVDs.
 *
 *   CR_CONN_EVD_*    one EVD created with DAT_EVD_CR_FLAG|DAT_EVD_CONNECTION_FLAG
 *                    is both the PSP's CR EVD and the server EP's connect EVD
 *                    (the client: a CONNECTION EVD): the request, then
 *                    ESTABLISHED, then DISCONNECTED arrive on it, every field
 *                    checked, over 300 connect/disconnect cycles (each side
 *                    disconnecting gracefully in turn), a message each way
 *                    per cycle
 *   PSP_GETPID_*     a PSP on getpid() as qualifier, the next qualifier tried
 *                    on DAT_CONN_QUAL_IN_USE: a second PSP on a taken
 *                    qualifier gives exactly DAT_CONN_QUAL_IN_USE (in this
 *                    process and in the peer process), the retry moves on;
 *                    the client connects to both PSPs and moves data
 *   LIST_PROVIDERS_* dat_registry_list_providers as benchmarks call it: the
 *                    first entry, or the entry named like the test IA, opened
 *                    by the ia_name from the list on both sides; connect and
 *                    move 64 KiB each way
 */
#include "consumer.h"

#define SEED8 0xC0FFu
#define QUAL_IN_USE ((DAT_RETURN)(DAT_CLASS_ERROR | DAT_CONN_QUAL_IN_USE))

/* One message each way on a connected EP: the client sends, the server
 * answers; every byte and event checked. Receives must be posted (cookie
 * 0x100 + tag) before the peer can send. */
static int exchange(struct pair *p, DAT_EP_HANDLE ep, struct mr *sb, struct mr *rb, size_t len,
                    uint32_t tag)
{
    uint32_t out = 2 * tag + (uint32_t)p->server, in = 2 * tag + (uint32_t)!p->server;
    int ok = 1;
    if (p->server) {
        ok = EXPECT_DTO(p->recv_evd, ep, 0x100 + (uint64_t)tag, DAT_DTO_SUCCESS, len) &&
             CHECK_MSG(rb->buf, len, SEED8, in, "message");
    }
    fill_msg(sb->buf, len, SEED8, out);
    ok = ok && POSTED(send1(ep, sb, 0, len, 0x200 + (uint64_t)tag, DAT_COMPLETION_DEFAULT_FLAG)) &&
         EXPECT_DTO(p->req_evd, ep, 0x200 + (uint64_t)tag, DAT_DTO_SUCCESS, len);
    if (ok && !p->server)
        ok = EXPECT_DTO(p->recv_evd, ep, 0x100 + (uint64_t)tag, DAT_DTO_SUCCESS, len) &&
             CHECK_MSG(rb->buf, len, SEED8, in, "answer");
    return ok;
}

/* ---- one EVD for connection requests and connection events --------------- */

#define CC_CYCLES 300
#define CC_LEN 256

TEST(CR_CONN_EVD_one_evd_for_requests_and_connection_events)
{
    struct pair p;
    DAT_EVD_HANDLE cc = DAT_HANDLE_NULL;
    struct mr sb, rb;
    double t0;
    int c;

    REQUIRE(cpair_fork(&p) == 0);
    PREQUIRE(&p, cpair_objects(&p, ctest_ia_name(), 64, NULL, 0) == 0);
    if (p.server) {
        DAT_CONN_QUAL q = 0;
        DAT_RETURN r;
        PREQUIRE(&p, mk_evd(&p, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG | DAT_EVD_CONNECTION_FLAG,
                            &cc) == 0);
        r = dat_psp_create_any(p.ia, &q, cc, DAT_PSP_CONSUMER_FLAG, &p.psp);
        if (r != DAT_SUCCESS)
            FAILF("dat_psp_create_any on a CR|CONNECTION EVD returned 0x%08x", (unsigned)r);
        PREQUIRE(&p, r == DAT_SUCCESS && cpair_tell_listener(&p, q) == 0);
    } else {
        PREQUIRE(&p, cpair_hear_listener(&p) == 0);
        cc = p.conn_evd;
    }
    PREQUIRE(&p, mr_make(p.ia, p.pz, CC_LEN, LRW, &sb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, CC_LEN, LRW, &rb) == DAT_SUCCESS);
    t0 = ctest_now();
    for (c = 0; c < CC_CYCLES; c++) {
        /* even cycles: the client ends the connection, odd: the server
         * (graceful: abrupt teardown is teardown.c's subject) */
        int ender = c % 2;
        DAT_EP_HANDLE ep;
        DAT_EVENT ev;
        DAT_RETURN r = dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, cc, NULL, &ep);
        if (r != DAT_SUCCESS) {
            FAILF("cycle %d: dat_ep_create with the %s EVD as connect EVD returned 0x%08x", c,
                  p.server ? "CR|CONNECTION" : "CONNECTION", (unsigned)r);
            break;
        }
        if (!POSTED(recv1(ep, &rb, 0, CC_LEN, 0x100 + (uint64_t)c, DAT_COMPLETION_DEFAULT_FLAG)))
            break;
        /* the server: the request and ESTABLISHED both on the one EVD */
        if (CCONNECT(&p, ep, cc, cc, p.psp, p.qual) != 0) {
            FAILF("cycle %d: no connection", c);
            give_up(c);
            break;
        }
        if (!exchange(&p, ep, &sb, &rb, CC_LEN, (uint32_t)c)) {
            FAILF("cycle %d: the exchange failed", c);
            give_up(c);
            break;
        }
        if (ender == p.server) {
            r = dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG);
            if (r != DAT_SUCCESS)
                FAILF("cycle %d: dat_ep_disconnect(GRACEFUL) returned 0x%08x", c, (unsigned)r);
        }
        if (!CWAIT(cc, &ev, "DISCONNECTED") ||
            !CONN_EV_OK(&ev, cc, ep, DAT_CONNECTION_EVENT_DISCONNECTED)) {
            FAILF("cycle %d: %s graceful disconnect: no DISCONNECTED on the %s EVD", c,
                  ender == p.server ? "after its own" : "after the peer's",
                  p.server ? "CR|CONNECTION" : "CONNECTION");
            give_up(c);
            break;
        }
        r = dat_ep_free(ep);
        if (r != DAT_SUCCESS)
            FAILF("cycle %d: dat_ep_free returned 0x%08x", c, (unsigned)r);
        /* the next cycle starts when both sides have seen this one end */
        if (pair_sync(&p, 'c') != 0) {
            FAILF("cycle %d: the peer did not finish the cycle", c);
            break;
        }
        if (OVER_BUDGET(t0, c + 1, CC_CYCLES, "cycles"))
            break;
    }
    if (!p.server)
        NOTE("%d connect/disconnect cycles in %.3f s", c, ctest_now() - t0);
    if (c == CC_CYCLES)
        EXPECT_NONE(cc);
    PSYNC(&p, 'd');
    if (p.server)
        CHECK_OK(dat_psp_free(p.psp));
    pair_finish(&p);
}

/* ---- a PSP on getpid() ------------------------------------------------------- */

/* The consumer's loop: qualifier `start`, then the next one while taken.
 * Returns the result of the last attempt; *in_use counts the refusals. */
static DAT_RETURN psp_from(DAT_IA_HANDLE ia, DAT_CONN_QUAL start, DAT_EVD_HANDLE evd,
                           DAT_CONN_QUAL *q, DAT_PSP_HANDLE *psp, int *in_use)
{
    DAT_RETURN r = DAT_SUCCESS;
    *in_use = 0;
    for (int k = 0; k < 64; k++) {
        r = dat_psp_create(ia, start + (DAT_CONN_QUAL)k, evd, DAT_PSP_CONSUMER_FLAG, psp);
        if (r == DAT_SUCCESS) {
            *q = start + (DAT_CONN_QUAL)k;
            return r;
        }
        if (r != QUAL_IN_USE)
            return r;
        (*in_use)++;
    }
    return r;
}

#define PG_LEN 4096

TEST(PSP_GETPID_in_use_then_next_qualifier)
{
    struct pair p;
    DAT_CONN_QUAL qa = 0, qb = 0;
    DAT_PSP_HANDLE psp_a = DAT_HANDLE_NULL, psp_b = DAT_HANDLE_NULL;
    struct mr sb, rb;

    REQUIRE(cpair_fork(&p) == 0);
    PREQUIRE(&p, cpair_objects(&p, ctest_ia_name(), 64, NULL, 0) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, PG_LEN, LRW, &sb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, PG_LEN, LRW, &rb) == DAT_SUCCESS);
    if (p.server) {
        DAT_CONN_QUAL pid = (DAT_CONN_QUAL)getpid();
        DAT_PSP_HANDLE x = DAT_HANDLE_NULL;
        DAT_RETURN r;
        int busy = 0;
        r = psp_from(p.ia, pid, p.cr_evd, &qa, &psp_a, &busy);
        if (r != DAT_SUCCESS)
            FAILF("dat_psp_create from qualifier getpid() = %llu returned 0x%08x after %d "
                  "qualifiers in use",
                  (unsigned long long)pid, (unsigned)r, busy);
        PREQUIRE(&p, r == DAT_SUCCESS);
        NOTE("getpid() %llu: PSP on qualifier %llu (%d in use before it)",
             (unsigned long long)pid, (unsigned long long)qa, busy);
        /* the same qualifier again, in this process: exactly IN_USE */
        CHECK_RET(dat_psp_create(p.ia, qa, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &x), QUAL_IN_USE);
        /* a second instance of the program: its loop moves past qa */
        r = psp_from(p.ia, qa, p.cr_evd, &qb, &psp_b, &busy);
        if (r != DAT_SUCCESS)
            FAILF("the retry loop from qualifier %llu returned 0x%08x", (unsigned long long)qa,
                  (unsigned)r);
        PREQUIRE(&p, r == DAT_SUCCESS);
        CHECK(busy >= 1);
        CHECK(qb > qa);
        NOTE("second PSP on qualifier %llu after %d refusals", (unsigned long long)qb, busy);
        PREQUIRE(&p, cpair_tell_listener(&p, qa) == 0 && pair_tell(&p, &qb, sizeof(qb)) == 0);
    } else {
        DAT_PSP_HANDLE x = DAT_HANDLE_NULL;
        PREQUIRE(&p, cpair_hear_listener(&p) == 0 && pair_hear(&p, &qb, sizeof(qb)) == 0);
        qa = p.qual;
        /* the qualifier is taken on this IA from another process too */
        CHECK_RET(dat_psp_create(p.ia, qa, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &x), QUAL_IN_USE);
    }
    /* connect to each PSP in turn and move data */
    for (int i = 0; i < 2; i++) {
        DAT_CONN_QUAL q = i ? qb : qa;
        DAT_EP_HANDLE ep;
        PREQUIRE(&p, dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &ep) ==
                         DAT_SUCCESS);
        PREQUIRE(&p, POSTED(recv1(ep, &rb, 0, PG_LEN, 0x100 + (uint64_t)i,
                                  DAT_COMPLETION_DEFAULT_FLAG)));
        PREQUIRE(&p, CCONNECT(&p, ep, p.cr_evd, p.conn_evd, i ? psp_b : psp_a, q) == 0);
        PREQUIRE(&p, exchange(&p, ep, &sb, &rb, PG_LEN, (uint32_t)i));
        PSYNC(&p, 'x');
        if (!p.server) {
            CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
        }
        EXPECT_CONN(p.conn_evd, ep, DAT_CONNECTION_EVENT_DISCONNECTED, 0);
        CHECK_OK(dat_ep_free(ep));
    }
    PSYNC(&p, 'd');
    if (p.server) {
        CHECK_OK(dat_psp_free(psp_a));
        CHECK_OK(dat_psp_free(psp_b));
    }
    pair_finish(&p);
}

/* ---- choosing the IA from dat_registry_list_providers --------------------- */

#define LP_MAX 64
#define LP_LEN (64 * KiB)

/* Lists the registry as benchmarks do; copies the chosen entry's name:
 * the first entry (named == NULL) or the first named `named`. */
static int pick_ia(const char *named, char *out, size_t outlen)
{
    static DAT_PROVIDER_INFO store[LP_MAX];
    DAT_PROVIDER_INFO *list[LP_MAX];
    DAT_COUNT n = 0;
    DAT_RETURN r;
    int i;
    for (i = 0; i < LP_MAX; i++)
        list[i] = &store[i];
    memset(store, 0, sizeof(store));
    r = dat_registry_list_providers(LP_MAX, &n, list);
    if (r != DAT_SUCCESS || n < 1 || n > LP_MAX) {
        FAILF("dat_registry_list_providers(%d) returned 0x%08x with %d entries", LP_MAX,
              (unsigned)r, (int)n);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const DAT_PROVIDER_INFO *e = list[i];
        if (memchr(e->ia_name, '\0', sizeof(e->ia_name)) == NULL) {
            FAILF("entry %d: ia_name not terminated", i);
            return -1;
        }
        if (named == NULL || strcmp(e->ia_name, named) == 0) {
            if (e->dapl_version_major != 1 || e->dapl_version_minor != 2)
                FAILF("entry %d (%s): version %u.%u, want 1.2", i, e->ia_name,
                      (unsigned)e->dapl_version_major, (unsigned)e->dapl_version_minor);
            snprintf(out, outlen, "%s", e->ia_name);
            if (!dto_is_server)
                NOTE("%d registry entries; chose entry %d \"%s\" (%s)", (int)n, i, e->ia_name,
                     e->is_thread_safe ? "threadsafe" : "nonthreadsafe");
            return 0;
        }
    }
    FAILF("no registry entry is named \"%s\" (%d entries, the first \"%s\")", named, (int)n,
          list[0]->ia_name);
    return -1;
}

static void list_providers_case(const char *named)
{
    struct pair p;
    char name[DAT_NAME_MAX_LENGTH + 1], peer[DAT_NAME_MAX_LENGTH + 1];
    struct mr sb, rb;

    REQUIRE(cpair_fork(&p) == 0);
    /* each process lists and chooses for itself */
    if (pick_ia(named, name, sizeof(name)) != 0) {
        give_up(0);
        pair_abort(&p);
        return;
    }
    if (p.server) {
        PREQUIRE(&p, pair_tell(&p, name, sizeof(name)) == 0);
    } else {
        PREQUIRE(&p, pair_hear(&p, peer, sizeof(peer)) == 0);
        if (strcmp(peer, name) != 0)
            FAILF("the two processes chose \"%s\" and \"%s\"", name, peer);
    }
    /* opened by the name from the list */
    PREQUIRE(&p, cpair_objects(&p, name, 64, NULL, 1) == 0);
    PREQUIRE(&p, cpair_connect(&p, NULL) == 0);
    PREQUIRE(&p, mr_make(p.ia, p.pz, LP_LEN, LRW, &sb) == DAT_SUCCESS);
    PREQUIRE(&p, mr_make(p.ia, p.pz, LP_LEN, LRW, &rb) == DAT_SUCCESS);
    PREQUIRE(&p, POSTED(recv1(p.ep, &rb, 0, LP_LEN, 0x100, DAT_COMPLETION_DEFAULT_FLAG)));
    PSYNC(&p, 'r');
    CHECK(exchange(&p, p.ep, &sb, &rb, LP_LEN, 0));
    PSYNC(&p, 'd');
    pair_finish(&p);
}

TEST(LIST_PROVIDERS_open_the_first_entry) { list_providers_case(NULL); }

TEST(LIST_PROVIDERS_open_the_entry_named_like_the_test_ia)
{
    list_providers_case(ctest_ia_name());
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
