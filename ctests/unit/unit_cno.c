/*
 * CNO conformance tests: semantics-core.md §2.28-§2.32 (dat_cno_create,
 * dat_cno_free, dat_cno_modify_agent, dat_cno_query, dat_cno_wait), plus
 * IAC-11 (abrupt IA close releasing a blocked dat_cno_wait).
 *
 * Written from the spec (semantics-core.md, rulings.md), not from the
 * implementation.
 *
 * Multi-threaded cases use a waiter thread that records the return value,
 * the EVD hint and the time it returned; the main thread never waits for it
 * without a deadline. Proxy-agent calls may come from any thread, so they
 * are recorded with atomics and a mutex.
 */
#include "ctest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* ---- small helpers ----------------------------------------------------- */

#define SEC_US 1000000u

/* A value a correct library never writes into an OUT handle. */
#define BOGUS_EVD ((DAT_EVD_HANDLE)(uintptr_t)0x5a5a5a50u)

static void *P(uintptr_t v) { return (void *)v; }

static DAT_RETURN make_cno(DAT_IA_HANDLE ia, DAT_CNO_HANDLE *cno)
{
    return dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, cno);
}

static DAT_RETURN evd_on_cno(DAT_IA_HANDLE ia, DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd)
{
    return dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, evd);
}

static DAT_OS_WAIT_PROXY_AGENT mk_agent(void *inst, DAT_AGENT_FUNC fn)
{
    DAT_OS_WAIT_PROXY_AGENT a;
    memset(&a, 0, sizeof(a));
    a.instance_data = inst;
    a.proxy_agent_func = fn;
    return a;
}

static DAT_RETURN query_cno(DAT_CNO_HANDLE cno, DAT_CNO_PARAM *p)
{
    memset(p, 0xA5, sizeof(*p));
    return dat_cno_query(cno, DAT_CNO_FIELD_ALL, p);
}

/* Is the queried agent the NULL agent? (-1 if the query fails) */
static int cno_agent_is_null(DAT_CNO_HANDLE cno)
{
    DAT_CNO_PARAM p;
    if (query_cno(cno, &p) != DAT_SUCCESS)
        return -1;
    return p.agent.instance_data == NULL && p.agent.proxy_agent_func == NULL;
}

/* ---- proxy agent recorders --------------------------------------------- */

static pthread_mutex_t agent_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int agent_calls[2];
static void *agent_inst[2];
static DAT_EVD_HANDLE agent_evd[2];
static int agent_ctx1, agent_ctx2;

static void agent_record(int k, DAT_PVOID inst, DAT_EVD_HANDLE evd)
{
    pthread_mutex_lock(&agent_mu);
    agent_inst[k] = inst;
    agent_evd[k] = evd;
    pthread_mutex_unlock(&agent_mu);
    atomic_fetch_add(&agent_calls[k], 1);
}

static void agent_fn1(DAT_PVOID inst, DAT_EVD_HANDLE evd) { agent_record(0, inst, evd); }
static void agent_fn2(DAT_PVOID inst, DAT_EVD_HANDLE evd) { agent_record(1, inst, evd); }

static int agent_count(int k) { return atomic_load(&agent_calls[k]); }

/* Wait at most `secs` for agent k to have been called at least n times. */
static int agent_wait(int k, int n, double secs)
{
    double end = ctest_now() + secs;
    while (agent_count(k) < n) {
        if (ctest_now() > end)
            return 0;
        ctest_sleep_ms(2);
    }
    return 1;
}

static void agent_last(int k, void **inst, DAT_EVD_HANDLE *evd)
{
    pthread_mutex_lock(&agent_mu);
    *inst = agent_inst[k];
    *evd = agent_evd[k];
    pthread_mutex_unlock(&agent_mu);
}

#include "waiter.h"

#define FIXTURE(ia, aevd)                                                      \
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;                                        \
    DAT_EVD_HANDLE aevd = DAT_HANDLE_NULL;                                     \
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS)

/* ======================================================================== */
/* §2.28 dat_cno_create                                                      */
/* ======================================================================== */

TEST(CNC_01_create_with_null_agent)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    DAT_HANDLE_TYPE t;
    FIXTURE(ia, aevd);
    CHECK_OK(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
    REQUIRE(cno != DAT_HANDLE_NULL);
    CHECK_OK(query_cno(cno, &p));
    CHECK(p.ia_handle == ia);
    CHECK(p.agent.instance_data == NULL);
    CHECK(p.agent.proxy_agent_func == NULL);
    memset(&t, 0xff, sizeof(t));
    CHECK_OK(dat_get_handle_type(cno, &t));
    CHECK(t == DAT_HANDLE_TYPE_CNO);
}

TEST(CNC_02_create_with_agent_query_returns_it)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    FIXTURE(ia, aevd);
    CHECK_OK(dat_cno_create(ia, mk_agent(&agent_ctx1, agent_fn1), &cno));
    REQUIRE(cno != DAT_HANDLE_NULL);
    CHECK_OK(query_cno(cno, &p));
    CHECK(p.agent.instance_data == (void *)&agent_ctx1);
    CHECK(p.agent.proxy_agent_func == agent_fn1);
}

TEST(CNC_03_null_ia_is_0x8005000B)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    CHECK_RET(dat_cno_create(DAT_HANDLE_NULL, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), 0x8005000Bu);
}

TEST(CNC_04_null_out_pointer_is_arg3)
{
    FIXTURE(ia, aevd);
    CHECK_SUB(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, NULL), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG3);
}

TEST(CNC_05_agent_with_null_function_accepted)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    CHECK_OK(dat_cno_create(ia, mk_agent(&agent_ctx1, NULL), &cno));
    REQUIRE(cno != DAT_HANDLE_NULL);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    /* make the CNO trigger: a waiter is woken, no agent is called, no crash */
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(ctest_post(evd, P(0x501)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    CHECK(b->cno_evd == evd);
    ctest_sleep_ms(100);
    CHECK(agent_count(0) == 0 && agent_count(1) == 0);
}

TEST(CNC_06_live_cno_blocks_graceful_close)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(CNC_07_wait_on_cno_without_evds)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE e = BOGUS_EVD;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_TYPE(dat_cno_wait(cno, 0, &e), DAT_QUEUE_EMPTY);
    CHECK(e == DAT_HANDLE_NULL);
}

TEST(CNC_08_agent_called_once_then_disassociated)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, got_evd = BOGUS_EVD;
    void *got_inst = NULL;
    double end;
    int null_agent = 0;
    FIXTURE(ia, aevd);
    REQUIRE(dat_cno_create(ia, mk_agent(&agent_ctx1, agent_fn1), &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(dat_evd_enable(evd) == DAT_SUCCESS);
    REQUIRE(ctest_post(evd, P(0x801)) == DAT_SUCCESS);
    CHECK(agent_wait(0, 1, 5.0));
    ctest_sleep_ms(200);
    CHECK(agent_count(0) == 1);
    agent_last(0, &got_inst, &got_evd);
    CHECK(got_inst == (void *)&agent_ctx1);
    CHECK(got_evd == evd);
    /* one-shot: the agent is no longer associated */
    end = ctest_now() + 2.0;
    while (!(null_agent = (cno_agent_is_null(cno) == 1)) && ctest_now() < end)
        ctest_sleep_ms(5);
    CHECK(null_agent);
    REQUIRE(ctest_post(evd, P(0x802)) == DAT_SUCCESS);
    ctest_sleep_ms(300);
    CHECK(agent_count(0) == 1);
}

/* ======================================================================== */
/* §2.29 dat_cno_free                                                        */
/* ======================================================================== */

TEST(CNF_01_free_fresh_cno)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_OK(dat_cno_free(cno));
    CHECK_TYPE(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &p), DAT_INVALID_HANDLE);
}

TEST(CNF_02_referenced_cno_is_0x80070042)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    CHECK_RET(dat_cno_free(cno), 0x80070042u);
    CHECK_OK(dat_evd_modify_cno(evd, DAT_HANDLE_NULL));
    CHECK_OK(dat_cno_free(cno));
}

TEST(CNF_03_waiter_blocks_free_until_released)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b));
    CHECK_TYPE(dat_cno_free(cno), DAT_INVALID_STATE);
    /* usage rule: post on the attached EVD to release the waiter */
    REQUIRE(ctest_post(evd, P(0x301)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    CHECK_OK(dat_evd_modify_cno(evd, DAT_HANDLE_NULL));
    CHECK_OK(dat_cno_free(cno));
}

TEST(CNF_04_null_is_0x80050013)
{
    CHECK_RET(dat_cno_free(DAT_HANDLE_NULL), 0x80050013u);
}

TEST(CNF_05_evd_handle_as_cno_is_invalid_handle)
{
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    FIXTURE(ia, aevd);
    REQUIRE(ctest_sw_evd(ia, 8, &evd) == DAT_SUCCESS);
    CHECK_TYPE(dat_cno_free((DAT_CNO_HANDLE)evd), DAT_INVALID_HANDLE);
}

TEST(CNF_06_double_free_is_invalid_handle)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_OK(dat_cno_free(cno));
    CHECK_TYPE(dat_cno_free(cno), DAT_INVALID_HANDLE);
}

TEST(CNF_07_waiter_only_blocks_free)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, 2 * SEC_US));
    ctest_sleep_ms(300);
    if (waiter_done(b)) {
        waiter_finish(b, 1.0);
        SKIP("dat_cno_wait does not block on a CNO without EVDs");
    }
    CHECK_TYPE(dat_cno_free(cno), DAT_INVALID_STATE);
    REQUIRE(waiter_finish(b, 7.0));
}

/* ======================================================================== */
/* §2.30 dat_cno_modify_agent                                                */
/* ======================================================================== */

TEST(CNA_01_set_agent_query_returns_it)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_OK(dat_cno_modify_agent(cno, mk_agent(&agent_ctx2, agent_fn2)));
    CHECK_OK(query_cno(cno, &p));
    CHECK(p.agent.instance_data == (void *)&agent_ctx2);
    CHECK(p.agent.proxy_agent_func == agent_fn2);
}

TEST(CNA_02_null_agent_disassociates)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(dat_cno_create(ia, mk_agent(&agent_ctx1, agent_fn1), &cno) == DAT_SUCCESS);
    CHECK_OK(dat_cno_modify_agent(cno, DAT_OS_WAIT_PROXY_AGENT_NULL));
    CHECK_OK(query_cno(cno, &p));
    CHECK(p.agent.instance_data == NULL);
    CHECK(p.agent.proxy_agent_func == NULL);
    /* a trigger calls no agent */
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(ctest_post(evd, P(0x201)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    ctest_sleep_ms(200);
    CHECK(agent_count(0) == 0);
}

TEST(CNA_03_null_is_0x80050013)
{
    CHECK_RET(dat_cno_modify_agent(DAT_HANDLE_NULL, DAT_OS_WAIT_PROXY_AGENT_NULL), 0x80050013u);
}

TEST(CNA_04_agent_with_null_function_accepted)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_OK(dat_cno_modify_agent(cno, mk_agent(&agent_ctx1, NULL)));
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(ctest_post(evd, P(0x401)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    CHECK(b->cno_evd == evd);
    ctest_sleep_ms(100);
    CHECK(agent_count(0) == 0 && agent_count(1) == 0);
}

TEST(CNA_05_replaced_agent_only_new_one_called)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, got_evd = BOGUS_EVD;
    void *got_inst = NULL;
    FIXTURE(ia, aevd);
    REQUIRE(dat_cno_create(ia, mk_agent(&agent_ctx1, agent_fn1), &cno) == DAT_SUCCESS);
    CHECK_OK(dat_cno_modify_agent(cno, mk_agent(&agent_ctx2, agent_fn2)));
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(ctest_post(evd, P(0x501)) == DAT_SUCCESS);
    CHECK(agent_wait(1, 1, 5.0));
    ctest_sleep_ms(200);
    CHECK(agent_count(0) == 0);
    CHECK(agent_count(1) == 1);
    agent_last(1, &got_inst, &got_evd);
    CHECK(got_inst == (void *)&agent_ctx2);
    CHECK(got_evd == evd);
}

/* ======================================================================== */
/* §2.31 dat_cno_query                                                       */
/* ======================================================================== */

TEST(CNQ_01_mask_all)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    FIXTURE(ia, aevd);
    REQUIRE(dat_cno_create(ia, mk_agent(&agent_ctx2, agent_fn2), &cno) == DAT_SUCCESS);
    CHECK_OK(query_cno(cno, &p));
    CHECK(p.ia_handle == ia);
    CHECK(p.agent.instance_data == (void *)&agent_ctx2);
    CHECK(p.agent.proxy_agent_func == agent_fn2);
}

TEST(CNQ_02_mask_ia_handle)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_cno_query(cno, DAT_CNO_FIELD_IA_HANDLE, &p));
    CHECK(p.ia_handle == ia);
}

TEST(CNQ_03_undefined_mask_bit_is_arg2)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_SUB(dat_cno_query(cno, (DAT_CNO_PARAM_MASK)0x4, &p), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
}

TEST(CNQ_04_null_param_is_arg3)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    CHECK_SUB(dat_cno_query(cno, DAT_CNO_FIELD_ALL, NULL), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG3);
}

TEST(CNQ_05_null_is_0x80050013)
{
    DAT_CNO_PARAM p;
    CHECK_RET(dat_cno_query(DAT_HANDLE_NULL, DAT_CNO_FIELD_ALL, &p), 0x80050013u);
}

/* ======================================================================== */
/* §2.32 dat_cno_wait                                                        */
/* ======================================================================== */

TEST(CNW_01_pending_event_returns_at_once)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, e = BOGUS_EVD;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(ctest_post(evd, P(0x101)) == DAT_SUCCESS);
    CHECK_OK(dat_cno_wait(cno, 0, &e));
    CHECK(e == evd);
}

TEST(CNW_02_post_wakes_blocked_waiter)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b));
    REQUIRE(ctest_post(evd, P(0x102)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    CHECK(b->cno_evd == evd);
}

TEST(CNW_03_timeout_is_queue_empty)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, e = BOGUS_EVD;
    double t0, dt;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    t0 = ctest_now();
    CHECK_TYPE(dat_cno_wait(cno, 100000, &e), DAT_QUEUE_EMPTY);
    dt = ctest_now() - t0;
    CHECK(e == DAT_HANDLE_NULL);
    if (dt < 0.095)
        fprintf(stderr, "    elapsed %.3f s\n", dt);
    CHECK(dt >= 0.095);
    CHECK(dt <= 5.0);
}

TEST(CNW_04_disabled_evd_does_not_notify)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, e = BOGUS_EVD;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(dat_evd_disable(evd) == DAT_SUCCESS);
    REQUIRE(ctest_post(evd, P(0x104)) == DAT_SUCCESS);
    CHECK_TYPE(dat_cno_wait(cno, 100000, &e), DAT_QUEUE_EMPTY);
    CHECK(e == DAT_HANDLE_NULL);
}

TEST(CNW_05_direct_waiter_takes_event_cno_times_out)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *a = &W[0], *b = &W[1];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_evd_waiter(a, evd, DAT_TIMEOUT_INFINITE, 1));
    settle_evd_waiter(a);
    REQUIRE(!waiter_done(a));
    REQUIRE(start_cno_waiter(b, cno, 300000));
    ctest_sleep_ms(50);
    REQUIRE(ctest_post(evd, P(0x105)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(a, 5.0));
    CHECK_OK(a->ret);
    CHECK(a->ev.event_data.software_event_data.pointer == P(0x105));
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_TYPE(b->ret, DAT_QUEUE_EMPTY);
    CHECK(b->cno_evd == DAT_HANDLE_NULL);
}

TEST(CNW_06_two_evds_hint_is_one_of_them)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE e1 = DAT_HANDLE_NULL, e2 = DAT_HANDLE_NULL;
    DAT_EVENT ev;
    int found = 0;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &e1) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &e2) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b));
    REQUIRE(ctest_post(e2, P(0x106)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    CHECK(b->cno_evd == e1 || b->cno_evd == e2);
    /* polling both EVDs finds exactly one event */
    while (dat_evd_dequeue(e1, &ev) == DAT_SUCCESS)
        found++;
    while (dat_evd_dequeue(e2, &ev) == DAT_SUCCESS) {
        CHECK(ev.event_data.software_event_data.pointer == P(0x106));
        found++;
    }
    CHECK(found == 1);
}

TEST(CNW_07_abrupt_ia_close_releases_waiter)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b));
    dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK(b->cno_evd == DAT_HANDLE_NULL);
}

TEST(CNW_08_free_only_evd_releases_waiter)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b));
    CHECK_OK(dat_evd_free(evd));
    REQUIRE(waiter_finish(b, 5.0));
    CHECK(b->cno_evd == DAT_HANDLE_NULL);
}

TEST(CNW_09_null_handle_and_null_out_pointer)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL, e = BOGUS_EVD;
    FIXTURE(ia, aevd);
    CHECK_RET(dat_cno_wait(DAT_HANDLE_NULL, 0, &e), 0x80050013u);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    CHECK_TYPE(dat_cno_wait(cno, 0, NULL), DAT_INVALID_PARAMETER);
}

TEST(CNW_10_two_waiters_one_post)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b1 = &W[0], *b2 = &W[1];
    double end;
    int ok = 0;
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b1, cno, DAT_TIMEOUT_INFINITE));
    REQUIRE(start_cno_waiter(b2, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b1) && !waiter_done(b2));
    REQUIRE(ctest_post(evd, P(0x110)) == DAT_SUCCESS);
    end = ctest_now() + 5.0;
    while (!waiter_done(b1) && !waiter_done(b2) && ctest_now() < end)
        ctest_sleep_ms(2);
    REQUIRE(waiter_done(b1) || waiter_done(b2));
    if (waiter_done(b1) && b1->ret == DAT_SUCCESS)
        ok++;
    if (waiter_done(b2) && b2->ret == DAT_SUCCESS)
        ok++;
    CHECK(ok >= 1);
    /* a second post: both have returned by then */
    REQUIRE(ctest_post(evd, P(0x111)) == DAT_SUCCESS);
    CHECK(waiter_finish(b1, 5.0));
    CHECK(waiter_finish(b2, 5.0));
}

TEST(CNW_11_wait_dequeues_nothing)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_EVENT ev;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(ctest_post(evd, P(0x120)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    memset(&ev, 0, sizeof(ev));
    CHECK_OK(dat_evd_dequeue(evd, &ev));
    CHECK(ev.event_data.software_event_data.pointer == P(0x120));
}

TEST(CNW_12_infinite_wait_blocks_until_post)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    ctest_sleep_ms(1000);
    CHECK(!waiter_done(b));
    REQUIRE(ctest_post(evd, P(0x130)) == DAT_SUCCESS);
    REQUIRE(waiter_finish(b, 5.0));
    CHECK_OK(b->ret);
    CHECK(b->cno_evd == evd);
}

TEST(CNW_13_signal_interrupts_wait)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(install_sigusr1_no_restart());
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b));
    REQUIRE(pthread_kill(b->th, SIGUSR1) == 0);
    if (!waiter_finish(b, 2.0)) {
        /* in case the signal landed just before the thread blocked */
        REQUIRE(pthread_kill(b->th, SIGUSR1) == 0);
        REQUIRE(waiter_finish(b, 3.0));
    }
    CHECK(sigusr1_count >= 1);
    CHECK_TYPE(b->ret, DAT_INTERRUPTED_CALL);
}

/* ======================================================================== */
/* §2.2 dat_ia_close: abrupt close releases a blocked dat_cno_wait           */
/* ======================================================================== */

TEST(IAC_11_abrupt_close_releases_cno_waiter)
{
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct waiter *b = &W[0];
    FIXTURE(ia, aevd);
    REQUIRE(make_cno(ia, &cno) == DAT_SUCCESS);
    REQUIRE(evd_on_cno(ia, cno, &evd) == DAT_SUCCESS);
    REQUIRE(start_cno_waiter(b, cno, DAT_TIMEOUT_INFINITE));
    settle_delay();
    REQUIRE(!waiter_done(b));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    REQUIRE(waiter_finish(b, 5.0));
    CHECK(b->cno_evd == DAT_HANDLE_NULL);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
