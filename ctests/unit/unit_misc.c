/*
 * Consumer context, handle type and dat_strerror conformance tests
 * (semantics-core.md §2.33–§2.36).
 *
 * IDs: GCC-01…06, SCC-01…08, GHT-01, GHT-03…06, STR-01…13.
 * GHT-02 needs an EP and is covered elsewhere.
 */
#include "ctest.h"

#include <pthread.h>

/* ---- fixture: one live object of every core type ------------------------- */

struct objs {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd;
    DAT_EVD_HANDLE sevd;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_RMR_HANDLE rmr;
    DAT_CNO_HANDLE cno;
    void *buf;
};

static inline int objs_open(struct objs *o)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;

    memset(o, 0, sizeof(*o));
    if (posix_memalign(&o->buf, 4096, 4096) != 0)
        return 0;
    if (ctest_open_ia(&o->ia, &o->aevd) != DAT_SUCCESS)
        return 0;
    if (ctest_sw_evd(o->ia, 8, &o->sevd) != DAT_SUCCESS)
        return 0;
    if (dat_pz_create(o->ia, &o->pz) != DAT_SUCCESS)
        return 0;
    memset(&rd, 0, sizeof(rd));
    rd.for_va = o->buf;
    if (dat_lmr_create(o->ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, o->pz, DAT_MEM_PRIV_ALL_FLAG,
                       &o->lmr, &lc, &rc, &rs, &ra) != DAT_SUCCESS)
        return 0;
    if (dat_rmr_create(o->pz, &o->rmr) != DAT_SUCCESS)
        return 0;
    if (dat_cno_create(o->ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &o->cno) != DAT_SUCCESS)
        return 0;
    return 1;
}

static inline void objs_close(struct objs *o)
{
    CHECK_OK(dat_rmr_free(o->rmr));
    CHECK_OK(dat_lmr_free(o->lmr));
    CHECK_OK(dat_pz_free(o->pz));
    CHECK_OK(dat_evd_free(o->sevd));
    CHECK_OK(dat_cno_free(o->cno));
    CHECK_OK(dat_ia_close(o->ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(o->buf);
}

#define NOBJ 7
static inline void objs_list(const struct objs *o, DAT_HANDLE h[NOBJ], const char *n[NOBJ])
{
    h[0] = o->ia;   n[0] = "IA";
    h[1] = o->aevd; n[1] = "async EVD";
    h[2] = o->sevd; n[2] = "software EVD";
    h[3] = o->pz;   n[3] = "PZ";
    h[4] = o->lmr;  n[4] = "LMR";
    h[5] = o->rmr;  n[5] = "RMR";
    h[6] = o->cno;  n[6] = "CNO";
}

/* ---- dat_get_consumer_context (§2.33) ------------------------------------ */

TEST(GCC_01_fresh_objects_zero)
{
    struct objs o;
    DAT_HANDLE h[NOBJ];
    const char *n[NOBJ];
    DAT_CONTEXT c;
    int i;

    REQUIRE(objs_open(&o));
    objs_list(&o, h, n);
    for (i = 0; i < NOBJ; i++) {
        memset(&c, 0xFF, sizeof(c));
        CHECK_OK(dat_get_consumer_context(h[i], &c));
        if (c.as_64 != 0) {
            fprintf(stderr, "    %s: fresh context 0x%llx\n", n[i], (unsigned long long)c.as_64);
            CHECK(0);
        }
    }
    objs_close(&o);
}

TEST(GCC_02_null_handle)
{
    DAT_CONTEXT c;
    CHECK_RET(dat_get_consumer_context(DAT_HANDLE_NULL, &c), 0x8005001A);
}

TEST(GCC_03_misaligned_handle)
{
    DAT_CONTEXT c;
    CHECK_RET(dat_get_consumer_context((DAT_HANDLE)(uintptr_t)0x1001, &c), 0x8005001A);
    CHECK_RET(dat_get_consumer_context((DAT_HANDLE)(uintptr_t)0x1002, &c), 0x8005001A);
    CHECK_RET(dat_get_consumer_context((DAT_HANDLE)(uintptr_t)0x1003, &c), 0x8005001A);
}

TEST(GCC_04_null_context)
{
    struct objs o;
    DAT_HANDLE h[NOBJ];
    const char *n[NOBJ];
    int i;

    REQUIRE(objs_open(&o));
    objs_list(&o, h, n);
    for (i = 0; i < NOBJ; i++)
        CHECK_SUB(dat_get_consumer_context(h[i], NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    objs_close(&o);
}

TEST(GCC_05_cno_handle)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_CNO_HANDLE cno;
    DAT_CONTEXT c;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
    memset(&c, 0xFF, sizeof(c));
    CHECK_OK(dat_get_consumer_context(cno, &c));
    CHECK(c.as_64 == 0);
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(GCC_06_freed_handles)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, sevd;
    DAT_PZ_HANDLE pz;
    DAT_CNO_HANDLE cno;
    DAT_CONTEXT c;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(ctest_sw_evd(ia, 4, &sevd) == DAT_SUCCESS);
    REQUIRE(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_evd_free(sevd));
    CHECK_OK(dat_cno_free(cno));
    CHECK_TYPE(dat_get_consumer_context(pz, &c), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_get_consumer_context(sevd, &c), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_get_consumer_context(cno, &c), DAT_INVALID_HANDLE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_get_consumer_context(ia, &c), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_get_consumer_context(evd, &c), DAT_INVALID_HANDLE);
}

/* ---- dat_set_consumer_context (§2.34) ------------------------------------ */

TEST(SCC_01_round_trip_ia)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_CONTEXT c, g;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.as_64 = 0xDEADBEEF12345678ULL;
    CHECK_OK(dat_set_consumer_context(ia, c));
    memset(&g, 0, sizeof(g));
    CHECK_OK(dat_get_consumer_context(ia, &g));
    CHECK(g.as_64 == 0xDEADBEEF12345678ULL);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(SCC_02_distinct_values_per_object)
{
    struct objs o;
    DAT_HANDLE h[NOBJ];
    const char *n[NOBJ];
    DAT_CONTEXT c;
    int i;

    REQUIRE(objs_open(&o));
    objs_list(&o, h, n);
    for (i = 0; i < NOBJ; i++) {
        memset(&c, 0, sizeof(c));
        c.as_64 = 0x1111111100000000ULL + (DAT_UINT64)i * 0x101;
        CHECK_OK(dat_set_consumer_context(h[i], c));
    }
    for (i = 0; i < NOBJ; i++) {
        memset(&c, 0, sizeof(c));
        CHECK_OK(dat_get_consumer_context(h[i], &c));
        if (c.as_64 != 0x1111111100000000ULL + (DAT_UINT64)i * 0x101) {
            fprintf(stderr, "    %s: got 0x%llx\n", n[i], (unsigned long long)c.as_64);
            CHECK(0);
        }
    }
    objs_close(&o);
}

TEST(SCC_03_clear_with_null_pointer)
{
    struct objs o;
    DAT_HANDLE h[NOBJ];
    const char *n[NOBJ];
    DAT_CONTEXT c;
    int x = 42, i;

    REQUIRE(objs_open(&o));
    objs_list(&o, h, n);
    for (i = 0; i < NOBJ; i++) {
        memset(&c, 0, sizeof(c));
        c.as_ptr = &x;
        CHECK_OK(dat_set_consumer_context(h[i], c));
        memset(&c, 0, sizeof(c));
        CHECK_OK(dat_get_consumer_context(h[i], &c));
        CHECK(c.as_ptr == &x);
        memset(&c, 0, sizeof(c));
        c.as_ptr = NULL;
        CHECK_OK(dat_set_consumer_context(h[i], c));
        memset(&c, 0xFF, sizeof(c));
        CHECK_OK(dat_get_consumer_context(h[i], &c));
        CHECK(c.as_ptr == NULL);
    }
    objs_close(&o);
}

TEST(SCC_04_replace)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_CONTEXT a, b, g;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.as_64 = 0xAAAAULL;
    b.as_index = 0xBBBBBBBBBBULL;
    CHECK_OK(dat_set_consumer_context(pz, a));
    CHECK_OK(dat_set_consumer_context(pz, b));
    memset(&g, 0, sizeof(g));
    CHECK_OK(dat_get_consumer_context(pz, &g));
    CHECK(g.as_64 == 0xBBBBBBBBBBULL);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(SCC_05_bad_handles)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_CONTEXT c;

    memset(&c, 0, sizeof(c));
    c.as_64 = 5;
    CHECK_RET(dat_set_consumer_context(DAT_HANDLE_NULL, c), 0x8005001A);
    CHECK_RET(dat_set_consumer_context((DAT_HANDLE)(uintptr_t)0x1001, c), 0x8005001A);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_TYPE(dat_set_consumer_context(pz, c), DAT_INVALID_HANDLE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_set_consumer_context(ia, c), DAT_INVALID_HANDLE);
}

TEST(SCC_06_context_survives_operations)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, sevd;
    DAT_EVD_PARAM p;
    DAT_EVENT ev;
    DAT_CONTEXT c, g;
    DAT_COUNT nmore;

    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
    REQUIRE(ctest_sw_evd(ia, 4, &sevd) == DAT_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.as_64 = 0x0123456789ABCDEFULL;
    CHECK_OK(dat_set_consumer_context(sevd, c));
    CHECK_OK(dat_set_consumer_context(ia, c));

    CHECK_OK(dat_evd_resize(sevd, 32));
    CHECK_OK(dat_evd_disable(sevd));
    CHECK_OK(dat_evd_enable(sevd));
    CHECK_OK(dat_evd_set_unwaitable(sevd));
    CHECK_OK(dat_evd_clear_unwaitable(sevd));
    CHECK_OK(dat_evd_query(sevd, DAT_EVD_FIELD_ALL, &p));
    CHECK_OK(ctest_post(sevd, &c));
    CHECK_OK(dat_evd_dequeue(sevd, &ev));
    CHECK_OK(ctest_post(sevd, &c));
    CHECK_OK(dat_evd_wait(sevd, 0, 1, &ev, &nmore));
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, 0, NULL));

    memset(&g, 0, sizeof(g));
    CHECK_OK(dat_get_consumer_context(sevd, &g));
    CHECK(g.as_64 == c.as_64);
    memset(&g, 0, sizeof(g));
    CHECK_OK(dat_get_consumer_context(ia, &g));
    CHECK(g.as_64 == c.as_64);
    CHECK_OK(dat_evd_free(sevd));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(SCC_07_cno_handle)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_CNO_HANDLE cno;
    DAT_CONTEXT c, g;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.as_64 = 0xC0C0C0C0ULL;
    CHECK_OK(dat_set_consumer_context(cno, c));
    memset(&g, 0, sizeof(g));
    CHECK_OK(dat_get_consumer_context(cno, &g));
    CHECK(g.as_64 == 0xC0C0C0C0ULL);
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(SCC_08_all_bits)
{
    struct objs o;
    DAT_HANDLE h[NOBJ];
    const char *n[NOBJ];
    DAT_CONTEXT c;
    int i;

    REQUIRE(objs_open(&o));
    objs_list(&o, h, n);
    for (i = 0; i < NOBJ; i++) {
        memset(&c, 0, sizeof(c));
        c.as_64 = ~0ULL;
        CHECK_OK(dat_set_consumer_context(h[i], c));
        memset(&c, 0, sizeof(c));
        CHECK_OK(dat_get_consumer_context(h[i], &c));
        CHECK(c.as_64 == ~0ULL);
    }
    objs_close(&o);
}

/* ---- dat_get_handle_type (§2.35) ----------------------------------------- */

TEST(GHT_01_core_types)
{
    struct objs o;
    DAT_HANDLE h[NOBJ];
    const char *n[NOBJ];
    const int want[NOBJ] = {3, 2, 2, 6, 4, 7, 9};
    DAT_HANDLE_TYPE t;
    int i;

    CHECK(DAT_HANDLE_TYPE_CR == 0);
    CHECK(DAT_HANDLE_TYPE_EP == 1);
    CHECK(DAT_HANDLE_TYPE_EVD == 2);
    CHECK(DAT_HANDLE_TYPE_IA == 3);
    CHECK(DAT_HANDLE_TYPE_LMR == 4);
    CHECK(DAT_HANDLE_TYPE_PSP == 5);
    CHECK(DAT_HANDLE_TYPE_PZ == 6);
    CHECK(DAT_HANDLE_TYPE_RMR == 7);
    CHECK(DAT_HANDLE_TYPE_RSP == 8);
    CHECK(DAT_HANDLE_TYPE_CNO == 9);
    CHECK(DAT_HANDLE_TYPE_SRQ == 10);
    REQUIRE(objs_open(&o));
    objs_list(&o, h, n);
    for (i = 0; i < NOBJ; i++) {
        t = (DAT_HANDLE_TYPE)0x7777;
        CHECK_OK(dat_get_handle_type(h[i], &t));
        if ((int)t != want[i]) {
            fprintf(stderr, "    %s: type %d, want %d\n", n[i], (int)t, want[i]);
            CHECK(0);
        }
    }
    objs_close(&o);
}

TEST(GHT_03_null_handle)
{
    DAT_HANDLE_TYPE t;
    CHECK_RET(dat_get_handle_type(DAT_HANDLE_NULL, &t), 0x8005001A);
}

TEST(GHT_04_sentinel_handles)
{
    DAT_HANDLE_TYPE t;
    CHECK_RET(dat_get_handle_type((DAT_HANDLE)DAT_EVD_ASYNC_EXISTS, &t), 0x8005001A);
    CHECK_RET(dat_get_handle_type((DAT_HANDLE)DAT_EVD_OUT_OF_SCOPE, &t), 0x8005001A);
}

TEST(GHT_05_freed_handles)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_HANDLE_TYPE t;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_TYPE(dat_get_handle_type(pz, &t), DAT_INVALID_HANDLE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_get_handle_type(ia, &t), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_get_handle_type(evd, &t), DAT_INVALID_HANDLE);
}

TEST(GHT_06_null_out)
{
    struct objs o;
    DAT_HANDLE h[NOBJ];
    const char *n[NOBJ];
    int i;

    REQUIRE(objs_open(&o));
    objs_list(&o, h, n);
    for (i = 0; i < NOBJ; i++)
        CHECK_SUB(dat_get_handle_type(h[i], NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    objs_close(&o);
}

/* ---- dat_strerror (§2.36) ------------------------------------------------ */

/* abi-errors.md §2: every DAT_RETURN_TYPE and its major string. */
static const struct {
    DAT_UINT32 value;
    const char *name;
} str_types[] = {
    {0x00000000u, "DAT_SUCCESS"},
    {0x00010000u, "DAT_ABORT"},
    {0x00020000u, "DAT_CONN_QUAL_IN_USE"},
    {0x00030000u, "DAT_INSUFFICIENT_RESOURCES"},
    {0x00040000u, "DAT_INTERNAL_ERROR"},
    {0x00050000u, "DAT_INVALID_HANDLE"},
    {0x00060000u, "DAT_INVALID_PARAMETER"},
    {0x00070000u, "DAT_INVALID_STATE"},
    {0x00080000u, "DAT_LENGTH_ERROR"},
    {0x00090000u, "DAT_MODEL_NOT_SUPPORTED"},
    {0x000A0000u, "DAT_NAME_NOT_FOUND"}, /* or "DAT_PROVIDER_NOT_FOUND" (STR-09) */
    {0x000B0000u, "DAT_PRIVILEGES_VIOLATION"},
    {0x000C0000u, "DAT_PROTECTION_VIOLATION"},
    {0x000D0000u, "DAT_QUEUE_EMPTY"},
    {0x000E0000u, "DAT_QUEUE_FULL"},
    {0x000F0000u, "DAT_TIMEOUT_EXPIRED"},
    {0x00100000u, "DAT_PROVIDER_ALREADY_REGISTERED"},
    {0x00110000u, "DAT_PROVIDER_IN_USE"},
    {0x00120000u, "DAT_INVALID_ADDRESS"},
    {0x00130000u, "DAT_INTERRUPTED_CALL"},
    {0x00140000u, "DAT_CONN_QUAL_UNAVAILABLE"},
    {0x0FFF0000u, "DAT_NOT_IMPLEMENTED"},
};
#define N_TYPES ((int)(sizeof(str_types) / sizeof(str_types[0])))

/* abi-errors.md §3: the 103 DAT_RETURN_SUBTYPE identifiers, index = value.
 * Index 0 (DAT_NO_SUBTYPE) maps to the empty minor string. */
static const char *const str_subtypes[] = {
    /* 0x0000 */ "DAT_NO_SUBTYPE",
    /* 0x0001 */ "DAT_SUB_INTERRUPTED",
    /* 0x0002 */ "DAT_RESOURCE_MEMORY",
    /* 0x0003 */ "DAT_RESOURCE_DEVICE",
    /* 0x0004 */ "DAT_RESOURCE_TEP",
    /* 0x0005 */ "DAT_RESOURCE_TEVD",
    /* 0x0006 */ "DAT_RESOURCE_PROTECTION_DOMAIN",
    /* 0x0007 */ "DAT_RESOURCE_MEMORY_REGION",
    /* 0x0008 */ "DAT_RESOURCE_ERROR_HANDLER",
    /* 0x0009 */ "DAT_RESOURCE_CREDITS",
    /* 0x000A */ "DAT_RESOURCE_SRQ",
    /* 0x000B */ "DAT_INVALID_HANDLE_IA",
    /* 0x000C */ "DAT_INVALID_HANDLE_EP",
    /* 0x000D */ "DAT_INVALID_HANDLE_LMR",
    /* 0x000E */ "DAT_INVALID_HANDLE_RMR",
    /* 0x000F */ "DAT_INVALID_HANDLE_PZ",
    /* 0x0010 */ "DAT_INVALID_HANDLE_PSP",
    /* 0x0011 */ "DAT_INVALID_HANDLE_RSP",
    /* 0x0012 */ "DAT_INVALID_HANDLE_CR",
    /* 0x0013 */ "DAT_INVALID_HANDLE_CNO",
    /* 0x0014 */ "DAT_INVALID_HANDLE_EVD_CR",
    /* 0x0015 */ "DAT_INVALID_HANDLE_EVD_REQUEST",
    /* 0x0016 */ "DAT_INVALID_HANDLE_EVD_RECV",
    /* 0x0017 */ "DAT_INVALID_HANDLE_EVD_CONN",
    /* 0x0018 */ "DAT_INVALID_HANDLE_EVD_ASYNC",
    /* 0x0019 */ "DAT_INVALID_HANDLE_SRQ",
    /* 0x001A */ "DAT_INVALID_HANDLE1",
    /* 0x001B */ "DAT_INVALID_HANDLE2",
    /* 0x001C */ "DAT_INVALID_HANDLE3",
    /* 0x001D */ "DAT_INVALID_HANDLE4",
    /* 0x001E */ "DAT_INVALID_HANDLE5",
    /* 0x001F */ "DAT_INVALID_HANDLE6",
    /* 0x0020 */ "DAT_INVALID_HANDLE7",
    /* 0x0021 */ "DAT_INVALID_HANDLE8",
    /* 0x0022 */ "DAT_INVALID_HANDLE9",
    /* 0x0023 */ "DAT_INVALID_HANDLE10",
    /* 0x0024 */ "DAT_INVALID_ARG1",
    /* 0x0025 */ "DAT_INVALID_ARG2",
    /* 0x0026 */ "DAT_INVALID_ARG3",
    /* 0x0027 */ "DAT_INVALID_ARG4",
    /* 0x0028 */ "DAT_INVALID_ARG5",
    /* 0x0029 */ "DAT_INVALID_ARG6",
    /* 0x002A */ "DAT_INVALID_ARG7",
    /* 0x002B */ "DAT_INVALID_ARG8",
    /* 0x002C */ "DAT_INVALID_ARG9",
    /* 0x002D */ "DAT_INVALID_ARG10",
    /* 0x002E */ "DAT_INVALID_STATE_EP_UNCONNECTED",
    /* 0x002F */ "DAT_INVALID_STATE_EP_ACTCONNPENDING",
    /* 0x0030 */ "DAT_INVALID_STATE_EP_PASSCONNPENDING",
    /* 0x0031 */ "DAT_INVALID_STATE_EP_TENTCONNPENDING",
    /* 0x0032 */ "DAT_INVALID_STATE_EP_CONNECTED",
    /* 0x0033 */ "DAT_INVALID_STATE_EP_DISCONNECTED",
    /* 0x0034 */ "DAT_INVALID_STATE_EP_RESERVED",
    /* 0x0035 */ "DAT_INVALID_STATE_EP_COMPLPENDING",
    /* 0x0036 */ "DAT_INVALID_STATE_EP_DISCPENDING",
    /* 0x0037 */ "DAT_INVALID_STATE_EP_PROVIDERCONTROL",
    /* 0x0038 */ "DAT_INVALID_STATE_EP_NOTREADY",
    /* 0x0039 */ "DAT_INVALID_STATE_EP_RECV_WATERMARK",
    /* 0x003A */ "DAT_INVALID_STATE_EP_PZ",
    /* 0x003B */ "DAT_INVALID_STATE_EP_EVD_REQUEST",
    /* 0x003C */ "DAT_INVALID_STATE_EP_EVD_RECV",
    /* 0x003D */ "DAT_INVALID_STATE_EP_EVD_CONNECT",
    /* 0x003E */ "DAT_INVALID_STATE_EP_UNCONFIGURED",
    /* 0x003F */ "DAT_INVALID_STATE_EP_UNCONFRESERVED",
    /* 0x0040 */ "DAT_INVALID_STATE_EP_UNCONFPASSIVE",
    /* 0x0041 */ "DAT_INVALID_STATE_EP_UNCONFTENTATIVE",
    /* 0x0042 */ "DAT_INVALID_STATE_CNO_IN_USE",
    /* 0x0043 */ "DAT_INVALID_STATE_CNO_DEAD",
    /* 0x0044 */ "DAT_INVALID_STATE_EVD_OPEN",
    /* 0x0045 */ "DAT_INVALID_STATE_EVD_ENABLED",
    /* 0x0046 */ "DAT_INVALID_STATE_EVD_DISABLED",
    /* 0x0047 */ "DAT_INVALID_STATE_EVD_WAITABLE",
    /* 0x0048 */ "DAT_INVALID_STATE_EVD_UNWAITABLE",
    /* 0x0049 */ "DAT_INVALID_STATE_EVD_IN_USE",
    /* 0x004A */ "DAT_INVALID_STATE_EVD_CONFIG_NOTIFY",
    /* 0x004B */ "DAT_INVALID_STATE_EVD_CONFIG_SOLICITED",
    /* 0x004C */ "DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD",
    /* 0x004D */ "DAT_INVALID_STATE_EVD_WAITER",
    /* 0x004E */ "DAT_INVALID_STATE_EVD_ASYNC",
    /* 0x004F */ "DAT_INVALID_STATE_IA_IN_USE",
    /* 0x0050 */ "DAT_INVALID_STATE_LMR_IN_USE",
    /* 0x0051 */ "DAT_INVALID_STATE_LMR_FREE",
    /* 0x0052 */ "DAT_INVALID_STATE_PZ_IN_USE",
    /* 0x0053 */ "DAT_INVALID_STATE_PZ_FREE",
    /* 0x0054 */ "DAT_INVALID_STATE_SRQ_OPERATIONAL",
    /* 0x0055 */ "DAT_INVALID_STATE_SRQ_ERROR",
    /* 0x0056 */ "DAT_INVALID_STATE_SRQ_IN_USE",
    /* 0x0057 */ "DAT_PRIVILEGES_READ",
    /* 0x0058 */ "DAT_PRIVILEGES_WRITE",
    /* 0x0059 */ "DAT_PRIVILEGES_RDMA_READ",
    /* 0x005A */ "DAT_PRIVILEGES_RDMA_WRITE",
    /* 0x005B */ "DAT_PROTECTION_READ",
    /* 0x005C */ "DAT_PROTECTION_WRITE",
    /* 0x005D */ "DAT_PROTECTION_RDMA_READ",
    /* 0x005E */ "DAT_PROTECTION_RDMA_WRITE",
    /* 0x005F */ "DAT_INVALID_ADDRESS_UNSUPPORTED",
    /* 0x0060 */ "DAT_INVALID_ADDRESS_UNREACHABLE",
    /* 0x0061 */ "DAT_INVALID_ADDRESS_MALFORMED",
    /* 0x0062 */ "DAT_NAME_NOT_REGISTERED",
    /* 0x0063 */ "DAT_MAJOR_NOT_FOUND",
    /* 0x0064 */ "DAT_MINOR_NOT_FOUND",
    /* 0x0065 */ "DAT_THREAD_SAFETY_NOT_FOUND",
    /* 0x0066 */ "DAT_INVALID_RO_COOKIE",
};
#define N_SUBTYPES ((int)(sizeof(str_subtypes) / sizeof(str_subtypes[0])))

static inline int major_ok(DAT_UINT32 type, const char *got)
{
    int i;
    if (got == NULL)
        return 0;
    if (type == 0x000A0000u)
        return strcmp(got, "DAT_NAME_NOT_FOUND") == 0 || strcmp(got, "DAT_PROVIDER_NOT_FOUND") == 0;
    for (i = 0; i < N_TYPES; i++)
        if (str_types[i].value == type)
            return strcmp(got, str_types[i].name) == 0;
    return 0;
}

static inline int minor_ok(DAT_UINT32 sub, const char *got)
{
    if (got == NULL || sub >= (DAT_UINT32)N_SUBTYPES)
        return 0;
    if (sub == 0)
        return got[0] == '\0';
    return strcmp(got, str_subtypes[sub]) == 0;
}

TEST(STR_01_success)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_OK(dat_strerror(DAT_SUCCESS, &ma, &mi));
    CHECK(ma != NULL && strcmp(ma, "DAT_SUCCESS") == 0);
    CHECK(mi != NULL && mi[0] == '\0');
}

TEST(STR_02_invalid_handle_ia)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_OK(dat_strerror(0x8005000Bu, &ma, &mi));
    CHECK(ma != NULL && strcmp(ma, "DAT_INVALID_HANDLE") == 0);
    CHECK(mi != NULL && strcmp(mi, "DAT_INVALID_HANDLE_IA") == 0);
}

TEST(STR_03_bare_type)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_OK(dat_strerror(0x00050000u, &ma, &mi));
    CHECK(ma != NULL && strcmp(ma, "DAT_INVALID_HANDLE") == 0);
    CHECK(mi != NULL && mi[0] == '\0');
}

TEST(STR_04_every_type)
{
    int i;

    CHECK(N_TYPES == 22);
    for (i = 0; i < N_TYPES; i++) {
        DAT_UINT32 classes[2] = {0, 0x80000000u};
        int k;
        for (k = 0; k < 2; k++) {
            const char *ma = NULL, *mi = NULL;
            DAT_RETURN v = (DAT_RETURN)(classes[k] | str_types[i].value);
            DAT_RETURN r = dat_strerror(v, &ma, &mi);
            if (r != DAT_SUCCESS || !major_ok(str_types[i].value, ma) || ma[0] == '\0' ||
                mi == NULL || mi[0] != '\0') {
                fprintf(stderr, "    0x%08x: ret 0x%08x major \"%s\" minor \"%s\"\n",
                        (unsigned)v, (unsigned)r, ma ? ma : "(null)", mi ? mi : "(null)");
                CHECK(0);
            }
        }
    }
}

TEST(STR_05_every_subtype)
{
    int s;

    CHECK(N_SUBTYPES == 103);
    for (s = 1; s <= 0x66 && s < N_SUBTYPES; s++) {
        const char *ma = NULL, *mi = NULL;
        DAT_RETURN v = (DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | (DAT_UINT32)s);
        DAT_RETURN r = dat_strerror(v, &ma, &mi);
        if (r != DAT_SUCCESS || ma == NULL || strcmp(ma, "DAT_INVALID_PARAMETER") != 0 ||
            mi == NULL || mi[0] == '\0' || strcmp(mi, str_subtypes[s]) != 0) {
            fprintf(stderr, "    subtype 0x%02x: ret 0x%08x minor \"%s\", want \"%s\"\n", s,
                    (unsigned)r, (r == DAT_SUCCESS && mi) ? mi : "?", str_subtypes[s]);
            CHECK(0);
        }
    }
}

TEST(STR_06_library_codes)
{
    /* Every full value the library itself returns (abi-errors.md §5,
     * semantics-core.md §1.2 and the per-function tables). */
    static const DAT_UINT32 codes[] = {
        0x8005000Bu, 0x8005000Cu, 0x8005000Du, 0x8005000Eu, 0x8005000Fu, 0x80050010u,
        0x80050011u, 0x80050012u, 0x80050013u, 0x80050014u, 0x80050015u, 0x80050016u,
        0x80050017u, 0x80050018u, 0x80050019u, 0x8005001Au, 0x80060024u, 0x80060025u,
        0x80060026u, 0x80060027u, 0x80060028u, 0x80060029u, 0x8006002Au, 0x80060066u,
        0x80070000u, 0x8007002Eu, 0x80070033u, 0x80070038u, 0x8007004Fu, 0x80070050u,
        0x80070052u, 0x80070049u, 0x80070042u, 0x80070056u, 0x800A0000u, 0x80030002u,
        0x80030005u, 0x80030006u, 0x80030007u, 0x80030004u, 0x80030000u, 0x80100000u,
        0x80110000u, 0x80010000u, 0x800D0000u, 0x800E0000u, 0x800F0000u, 0x80130000u,
        0x80090000u, 0x800B0000u, 0x800C0000u, 0x80040000u, 0x80020000u, 0x80140000u,
        0x80120000u, 0x8012005Fu, 0x80120060u, 0x80120061u, 0x80080000u, 0x8FFF0000u,
    };
    size_t i;

    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *ma = NULL, *mi = NULL;
        DAT_RETURN r = dat_strerror((DAT_RETURN)codes[i], &ma, &mi);
        if (r != DAT_SUCCESS || !major_ok(DAT_GET_TYPE(codes[i]), ma) ||
            !minor_ok(DAT_GET_SUBTYPE(codes[i]), mi)) {
            fprintf(stderr, "    0x%08x: ret 0x%08x major \"%s\" minor \"%s\"\n",
                    (unsigned)codes[i], (unsigned)r, (r == DAT_SUCCESS && ma) ? ma : "?",
                    (r == DAT_SUCCESS && mi) ? mi : "?");
            CHECK(0);
        }
    }
}

TEST(STR_07_undefined_type)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_RET(dat_strerror(0x00150000u, &ma, &mi), 0x80060000u);
    CHECK_RET(dat_strerror(0x80150000u, &ma, &mi), 0x80060000u);
    CHECK_RET(dat_strerror(0x3FFF0000u, &ma, &mi), 0x80060000u); /* DAT 2.0 NOT_IMPLEMENTED */
    CHECK_RET(dat_strerror(0x00FF0000u, &ma, &mi), 0x80060000u);
}

TEST(STR_08_undefined_subtype)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_RET(dat_strerror(0x80060067u, &ma, &mi), 0x80060000u);
    CHECK_RET(dat_strerror(0x8006FFFFu, &ma, &mi), 0x80060000u);
    CHECK_RET(dat_strerror(0x00050067u, &ma, &mi), 0x80060000u);
}

TEST(STR_09_provider_not_found_major)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_OK(dat_strerror(0x800A0000u, &ma, &mi));
    CHECK(ma != NULL &&
          (strcmp(ma, "DAT_NAME_NOT_FOUND") == 0 || strcmp(ma, "DAT_PROVIDER_NOT_FOUND") == 0));
    CHECK(mi != NULL && mi[0] == '\0');
    CHECK_OK(dat_strerror(DAT_NAME_NOT_FOUND, &ma, &mi));
    CHECK(DAT_NAME_NOT_FOUND == DAT_PROVIDER_NOT_FOUND);
}

TEST(STR_10_warning_class)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_OK(dat_strerror((DAT_RETURN)(0x40000000u | DAT_QUEUE_EMPTY), &ma, &mi));
    CHECK(ma != NULL && strcmp(ma, "DAT_QUEUE_EMPTY") == 0);
    CHECK(mi != NULL && mi[0] == '\0');
    /* class bits are ignored: same answer for 0x0, 0x4 and 0x8 classes */
    {
        const char *a1 = "", *b1 = "", *a2 = "?", *b2 = "?", *a3 = "!", *b3 = "!";
        CHECK_OK(dat_strerror(0x0005000Bu, &a1, &b1));
        CHECK_OK(dat_strerror(0x4005000Bu, &a2, &b2));
        CHECK_OK(dat_strerror(0x8005000Bu, &a3, &b3));
        CHECK(strcmp(a1, a2) == 0 && strcmp(a2, a3) == 0);
        CHECK(strcmp(b1, b2) == 0 && strcmp(b2, b3) == 0);
    }
}

TEST(STR_11_static_strings)
{
    const char *ma1 = NULL, *mi1 = NULL, *ma2 = NULL, *mi2 = NULL;
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_strerror(0x80070052u, &ma1, &mi1));
    CHECK_OK(dat_strerror(0x80070052u, &ma2, &mi2));
    CHECK(ma1 == ma2);
    CHECK(mi1 == mi2);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK(ma1 != NULL && strcmp(ma1, "DAT_INVALID_STATE") == 0);
    CHECK(mi1 != NULL && strcmp(mi1, "DAT_INVALID_STATE_PZ_IN_USE") == 0);
    CHECK_OK(dat_strerror(0x80070052u, &ma2, &mi2));
    CHECK(ma1 == ma2);
    CHECK(mi1 == mi2);
}

TEST(STR_12_null_out_pointers)
{
    const char *ma = NULL, *mi = NULL;

    CHECK_TYPE(dat_strerror(0x8005000Bu, NULL, &mi), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_strerror(0x8005000Bu, &ma, NULL), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_strerror(0x8005000Bu, NULL, NULL), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_strerror(DAT_SUCCESS, NULL, NULL), DAT_INVALID_PARAMETER);
}

struct str13_arg {
    unsigned seed;
    int failures;
    DAT_RETURN first_bad;
};

static void *str13_thread(void *p)
{
    struct str13_arg *a = p;
    int i;
    for (i = 0; i < 10000; i++) {
        unsigned t = (unsigned)rand_r(&a->seed) % (unsigned)N_TYPES;
        unsigned s = (unsigned)rand_r(&a->seed) % (unsigned)N_SUBTYPES;
        unsigned cls = (unsigned)rand_r(&a->seed) % 3u;
        DAT_RETURN v = (DAT_RETURN)((cls == 0 ? 0u : cls == 1 ? 0x40000000u : 0x80000000u) |
                                    str_types[t].value | s);
        const char *ma = NULL, *mi = NULL;
        DAT_RETURN r = dat_strerror(v, &ma, &mi);
        if (r != DAT_SUCCESS || !major_ok(str_types[t].value, ma) || !minor_ok(s, mi)) {
            if (a->failures++ == 0)
                a->first_bad = v;
        }
    }
    return NULL;
}

TEST(STR_13_concurrent)
{
    pthread_t th[8];
    struct str13_arg args[8];
    int i, started = 0;

    for (i = 0; i < 8; i++) {
        args[i].seed = 0x1234u + (unsigned)i * 7919u;
        args[i].failures = 0;
        args[i].first_bad = 0;
        if (pthread_create(&th[i], NULL, str13_thread, &args[i]) != 0)
            break;
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    REQUIRE(started == 8);
    for (i = 0; i < 8; i++) {
        if (args[i].failures)
            fprintf(stderr, "    thread %d: %d bad answers, first for 0x%08x\n", i,
                    args[i].failures, (unsigned)args[i].first_bad);
        CHECK(args[i].failures == 0);
    }
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
