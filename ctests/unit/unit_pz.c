/*
 * Protection Zone conformance tests (semantics-core.md §2.4–§2.6).
 *
 * IDs: PZC-01…08, PZF-01…03, PZF-05…09, PZQ-01…05.
 * PZF-04 needs an EP and is covered elsewhere.
 */
#include "ctest.h"

#include <pthread.h>

static inline DAT_RETURN mk_lmr(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, void *buf, DAT_VLEN len,
                                DAT_LMR_HANDLE *lmr)
{
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;

    memset(&rd, 0, sizeof(rd));
    rd.for_va = buf;
    return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, len, pz,
                          DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG, lmr, &lc,
                          &rc, &rs, &ra);
}

/* ---- dat_pz_create (§2.4) ----------------------------------------------- */

TEST(PZC_01_create)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_HANDLE_TYPE t = (DAT_HANDLE_TYPE)-1;
    DAT_PZ_PARAM p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_pz_create(ia, &pz));
    REQUIRE(pz != DAT_HANDLE_NULL);
    CHECK(((uintptr_t)pz & 3) == 0);
    CHECK_OK(dat_get_handle_type(pz, &t));
    CHECK(t == DAT_HANDLE_TYPE_PZ);
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &p));
    CHECK(p.ia_handle == ia);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZC_02_distinct_handles)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE a, b;
    DAT_PZ_PARAM p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &a) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &b) == DAT_SUCCESS);
    CHECK(a != b);
    CHECK_OK(dat_pz_free(a));
    /* b unaffected by freeing a */
    CHECK_OK(dat_pz_query(b, DAT_PZ_FIELD_ALL, &p));
    CHECK(p.ia_handle == ia);
    CHECK_OK(dat_pz_free(b));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZC_03_null_ia)
{
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;

    CHECK_RET(dat_pz_create(DAT_HANDLE_NULL, &pz), 0x8005000B);
    CHECK_RET(dat_pz_create((DAT_IA_HANDLE)(uintptr_t)0x1001, &pz), 0x8005000B);
}

TEST(PZC_04_evd_as_ia)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, sevd;
    DAT_PZ_HANDLE pz;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(ctest_sw_evd(ia, 4, &sevd) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_create((DAT_IA_HANDLE)evd, &pz), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_pz_create((DAT_IA_HANDLE)sevd, &pz), DAT_INVALID_HANDLE);
    CHECK_OK(dat_evd_free(sevd));
    /* no PZ was left behind */
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZC_05_null_out)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_SUB(dat_pz_create(ia, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZC_06_max_pzs)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_IA_ATTR a;
    DAT_PZ_HANDLE *pzs, extra;
    DAT_COUNT i, made = 0;
    DAT_RETURN r;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    memset(&a, 0, sizeof(a));
    REQUIRE(dat_ia_query(ia, NULL, DAT_IA_FIELD_IA_MAX_PZS, &a, 0, NULL) == DAT_SUCCESS);
    REQUIRE(a.max_pzs > 0);
    if (a.max_pzs > 4096) {
        dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
        SKIP("max_pzs > 4096");
    }
    pzs = calloc((size_t)a.max_pzs, sizeof(*pzs));
    REQUIRE(pzs != NULL);
    for (i = 0; i < a.max_pzs; i++) {
        r = dat_pz_create(ia, &pzs[i]);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    create #%d of %d failed: 0x%08x\n", (int)i, (int)a.max_pzs,
                    (unsigned)r);
            CHECK(0);
            break;
        }
        made++;
    }
    if (made == a.max_pzs) {
        r = dat_pz_create(ia, &extra);
        CHECK_TYPE(r, DAT_INSUFFICIENT_RESOURCES);
        if (r == DAT_SUCCESS)
            dat_pz_free(extra);
    }
    /* freeing one makes room again */
    if (made > 0) {
        CHECK_OK(dat_pz_free(pzs[made - 1]));
        r = dat_pz_create(ia, &pzs[made - 1]);
        CHECK_OK(r);
        if (r != DAT_SUCCESS)
            made--;
    }
    for (i = 0; i < made; i++)
        CHECK_OK(dat_pz_free(pzs[i]));
    free(pzs);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZC_07_closed_ia)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_pz_create(ia, &pz), DAT_INVALID_HANDLE);
}

struct pzc08_arg {
    DAT_IA_HANDLE ia;
    int failures;
    DAT_RETURN first_bad;
};

static void *pzc08_thread(void *p)
{
    struct pzc08_arg *arg = p;
    int i;
    for (i = 0; i < 1000; i++) {
        DAT_PZ_HANDLE pz;
        DAT_RETURN r = dat_pz_create(arg->ia, &pz);
        if (r == DAT_SUCCESS)
            r = dat_pz_free(pz);
        if (r != DAT_SUCCESS && arg->failures++ == 0)
            arg->first_bad = r;
    }
    return NULL;
}

TEST(PZC_08_concurrent_create_free)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    pthread_t th[4];
    struct pzc08_arg args[4];
    int i, started = 0;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    memset(args, 0, sizeof(args));
    for (i = 0; i < 4; i++) {
        args[i].ia = ia;
        if (pthread_create(&th[i], NULL, pzc08_thread, &args[i]) != 0)
            break;
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    REQUIRE(started == 4);
    for (i = 0; i < 4; i++) {
        if (args[i].failures)
            fprintf(stderr, "    thread %d: %d failures, first 0x%08x\n", i, args[i].failures,
                    (unsigned)args[i].first_bad);
        CHECK(args[i].failures == 0);
    }
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

/* ---- dat_pz_free (§2.5) ------------------------------------------------- */

TEST(PZF_01_free_unused)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_PZ_PARAM p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_TYPE(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZF_02_in_use_by_lmr)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_PARAM lp;
    void *buf = NULL;

    REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(mk_lmr(ia, pz, buf, 4096, &lmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free(pz), DAT_INVALID_STATE);
    memset(&lp, 0, sizeof(lp));
    CHECK_OK(dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, &lp));
    CHECK(lp.pz_handle == pz);
    CHECK_OK(dat_lmr_free(lmr));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(buf);
}

TEST(PZF_03_in_use_by_rmr)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_PARAM rp;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(dat_rmr_create(pz, &rmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free(pz), DAT_INVALID_STATE);
    CHECK_OK(dat_rmr_query(rmr, DAT_RMR_FIELD_PZ_HANDLE, &rp));
    CHECK_OK(dat_rmr_free(rmr));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZF_05_null)
{
    CHECK_RET(dat_pz_free(DAT_HANDLE_NULL), 0x8005000F);
    CHECK_RET(dat_pz_free((DAT_PZ_HANDLE)(uintptr_t)0x1002), 0x8005000F);
}

TEST(PZF_06_lmr_as_pz)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    void *buf = NULL;

    REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(mk_lmr(ia, pz, buf, 4096, &lmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free((DAT_PZ_HANDLE)lmr), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_pz_free((DAT_PZ_HANDLE)ia), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_pz_free((DAT_PZ_HANDLE)evd), DAT_INVALID_HANDLE);
    /* nothing was freed */
    CHECK_OK(dat_lmr_query(lmr, DAT_LMR_FIELD_IA_HANDLE, &(DAT_LMR_PARAM){0}));
    CHECK_OK(dat_lmr_free(lmr));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(buf);
}

TEST(PZF_07_double_free)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_TYPE(dat_pz_free(pz), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_pz_free(pz), DAT_INVALID_HANDLE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZF_08_in_use_subtype)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_RMR_HANDLE rmr;
    void *buf = NULL;

    REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(mk_lmr(ia, pz, buf, 4096, &lmr) == DAT_SUCCESS);
    CHECK_RET(dat_pz_free(pz), 0x80070052);
    CHECK_OK(dat_lmr_free(lmr));
    REQUIRE(dat_rmr_create(pz, &rmr) == DAT_SUCCESS);
    CHECK_RET(dat_pz_free(pz), 0x80070052);
    CHECK_OK(dat_rmr_free(rmr));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(buf);
}

TEST(PZF_09_derived_lmr_holds_pz)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE base, derived;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    void *buf = NULL;

    REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(mk_lmr(ia, pz, buf, 4096, &base) == DAT_SUCCESS);
    memset(&rd, 0, sizeof(rd));
    rd.for_lmr_handle = base;
    REQUIRE(dat_lmr_create(ia, DAT_MEM_TYPE_LMR, rd, 0, pz, DAT_MEM_PRIV_LOCAL_READ_FLAG,
                           &derived, &lc, &rc, &rs, &ra) == DAT_SUCCESS);
    CHECK_OK(dat_lmr_free(base));
    CHECK_TYPE(dat_pz_free(pz), DAT_INVALID_STATE);
    CHECK_OK(dat_lmr_free(derived));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(buf);
}

/* ---- dat_pz_query (§2.6) ------------------------------------------------ */

TEST(PZQ_01_all)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_PZ_PARAM p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &p));
    CHECK(p.ia_handle == ia);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_pz_query(pz, DAT_PZ_FIELD_IA_HANDLE, &p));
    CHECK(p.ia_handle == ia);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZQ_02_zero_mask)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_PZ_PARAM p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_pz_query(pz, (DAT_PZ_PARAM_MASK)0, &p));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZQ_03_unknown_mask_bit)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_PZ_PARAM p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_SUB(dat_pz_query(pz, (DAT_PZ_PARAM_MASK)0x02, &p), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    CHECK_SUB(dat_pz_query(pz, (DAT_PZ_PARAM_MASK)0x80000001u, &p), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZQ_04_null_param)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_SUB(dat_pz_query(pz, DAT_PZ_FIELD_ALL, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(PZQ_05_bad_handles)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_PZ_PARAM p;

    CHECK_RET(dat_pz_query(DAT_HANDLE_NULL, DAT_PZ_FIELD_ALL, &p), 0x8005000F);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_TYPE(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
