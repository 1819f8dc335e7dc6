/*
 * The hot-path machinery seen from a C program: memory contexts that cannot
 * be guessed and die with their LMR, registration checks against what is
 * really mapped, aliasing OUT arguments, the CNO proxy agent on teardown,
 * the provider attributes, and deadlines of short waits.
 *
 * Names say what each case checks (there are no spec IDs for these).
 */
#include "ctest.h"

#include <sys/mman.h>

struct fx {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd;
    DAT_PZ_HANDLE pz;
};

static void fx_open(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    REQUIRE(ctest_open_ia(&f->ia, &f->aevd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(f->ia, &f->pz) == DAT_SUCCESS);
}

static DAT_RETURN reg(struct fx *f, void *addr, DAT_VLEN len, DAT_MEM_PRIV_FLAGS priv,
                      DAT_LMR_HANDLE *h, DAT_LMR_CONTEXT *lc, DAT_RMR_CONTEXT *rc)
{
    DAT_REGION_DESCRIPTION r;
    DAT_VLEN rs;
    DAT_VADDR ra;
    r.for_va = addr;
    return dat_lmr_create(f->ia, DAT_MEM_TYPE_VIRTUAL, r, len, f->pz, priv, h, lc, rc, &rs, &ra);
}

static DAT_RETURN sync_one(DAT_IA_HANDLE ia, DAT_LMR_CONTEXT c, void *addr, DAT_VLEN len)
{
    DAT_LMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.lmr_context = c;
    t.virtual_address = (DAT_VADDR)(uintptr_t)addr;
    t.segment_length = len;
    return dat_lmr_sync_rdma_write(ia, &t, 1);
}

TEST(KEYS_contexts_are_not_sequential)
{
    struct fx f;
    static char buf[64][64];
    DAT_LMR_HANDLE h[64];
    DAT_LMR_CONTEXT lc[64];
    DAT_RMR_CONTEXT rc[64];
    int i, same_step = 0;
    fx_open(&f);
    for (i = 0; i < 64; i++)
        CHECK_OK(reg(&f, buf[i], 64, DAT_MEM_PRIV_ALL_FLAG, &h[i], &lc[i], &rc[i]));
    for (i = 1; i < 64; i++) {
        CHECK(lc[i] != 0 && rc[i] != 0 && lc[i] != rc[i]);
        if (lc[i] - lc[i - 1] == lc[1] - lc[0])
            same_step++;
    }
    /* Index bits step by one, the generation bits are random. */
    CHECK(same_step < 8);
    for (i = 0; i < 64; i++)
        CHECK_OK(dat_lmr_free(h[i]));
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(KEYS_forged_stale_and_freed_contexts_are_refused)
{
    struct fx f;
    static char buf[4096];
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    fx_open(&f);
    CHECK_OK(reg(&f, buf, sizeof(buf), DAT_MEM_PRIV_ALL_FLAG, &h, &lc, &rc));
    CHECK_OK(sync_one(f.ia, lc, buf, sizeof(buf)));
    CHECK_SUB(sync_one(f.ia, lc ^ 0x80000000u, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_SUB(sync_one(f.ia, lc + 1, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_SUB(sync_one(f.ia, 0, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    /* The remote context is not a local one. */
    CHECK_SUB(sync_one(f.ia, rc, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    /* Out of range, and wrapping around. */
    CHECK_SUB(sync_one(f.ia, lc, buf + 1, sizeof(buf)), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_SUB(sync_one(f.ia, lc, (void *)(uintptr_t)~(uintptr_t)0, 2), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    CHECK_OK(dat_lmr_free(h));
    CHECK_SUB(sync_one(f.ia, lc, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    /* A new registration of the same memory gets different contexts. */
    {
        DAT_LMR_CONTEXT lc2;
        DAT_RMR_CONTEXT rc2;
        CHECK_OK(reg(&f, buf, sizeof(buf), DAT_MEM_PRIV_ALL_FLAG, &h, &lc2, &rc2));
        CHECK(lc2 != lc && rc2 != rc);
        CHECK_SUB(sync_one(f.ia, lc, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        CHECK_OK(dat_lmr_free(h));
    }
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(KEYS_contexts_of_another_ia_are_refused)
{
    struct fx a, b;
    static char buf[256];
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    fx_open(&a);
    fx_open(&b);
    CHECK_OK(reg(&a, buf, sizeof(buf), DAT_MEM_PRIV_LOCAL_READ_FLAG, &h, &lc, &rc));
    CHECK_OK(sync_one(a.ia, lc, buf, sizeof(buf)));
    CHECK_SUB(sync_one(b.ia, lc, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(dat_lmr_free(h));
    CHECK_OK(dat_pz_free(a.pz));
    CHECK_OK(dat_pz_free(b.pz));
    CHECK_OK(dat_ia_close(a.ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_OK(dat_ia_close(b.ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(KEYS_lmr_from_lmr_keeps_its_base_registration)
{
    struct fx f;
    static char buf[8192];
    DAT_LMR_HANDLE base, derived;
    DAT_LMR_CONTEXT blc, dlc;
    DAT_RMR_CONTEXT brc, drc;
    DAT_REGION_DESCRIPTION r;
    DAT_VLEN rs;
    DAT_VADDR ra;
    fx_open(&f);
    CHECK_OK(reg(&f, buf, sizeof(buf), DAT_MEM_PRIV_ALL_FLAG, &base, &blc, &brc));
    r.for_lmr_handle = base;
    CHECK_OK(dat_lmr_create(f.ia, DAT_MEM_TYPE_LMR, r, 0, f.pz, DAT_MEM_PRIV_LOCAL_READ_FLAG,
                            &derived, &dlc, &drc, &rs, &ra));
    CHECK(rs == sizeof(buf) && ra == (DAT_VADDR)(uintptr_t)buf);
    CHECK_OK(dat_lmr_free(base));
    CHECK_SUB(sync_one(f.ia, blc, buf, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(sync_one(f.ia, dlc, buf, sizeof(buf)));
    CHECK_OK(dat_lmr_free(derived));
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(KEYS_one_variable_for_both_context_out_arguments)
{
    struct fx f;
    static char buf[128];
    DAT_LMR_HANDLE h;
    DAT_UINT32 both = 0xdeadbeef;
    DAT_LMR_PARAM p;
    fx_open(&f);
    /* An application may pass one variable for lmr_context and rmr_context. */
    CHECK_OK(reg(&f, buf, sizeof(buf), DAT_MEM_PRIV_ALL_FLAG, &h, &both, &both));
    CHECK_OK(dat_lmr_query(h, DAT_LMR_FIELD_ALL, &p));
    /* The OUT arguments are written in order: the last one wins. */
    CHECK(both == p.rmr_context);
    CHECK(p.lmr_context != p.rmr_context);
    CHECK_OK(dat_lmr_free(h));
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(REG_unmapped_memory_is_refused)
{
    struct fx f;
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    REQUIRE(munmap(p + 4096, 4096) == 0);
    fx_open(&f);
    CHECK_SUB(reg(&f, p, 3 * 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &h, &lc, &rc),
              DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    CHECK_SUB(reg(&f, p + 4096, 1, DAT_MEM_PRIV_LOCAL_READ_FLAG, &h, &lc, &rc),
              DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    CHECK_OK(reg(&f, p, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &h, &lc, &rc));
    CHECK_OK(dat_lmr_free(h));
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
    munmap(p, 4096);
    munmap(p + 2 * 4096, 4096);
}

TEST(REG_read_only_memory_with_write_access_is_refused)
{
    struct fx f;
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    char *p = mmap(NULL, 2 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    fx_open(&f);
    CHECK_SUB(reg(&f, p, 4096, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &h, &lc, &rc),
              DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    CHECK_SUB(reg(&f, p, 4096, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, &h, &lc, &rc),
              DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    /* Reading is what the memory allows. */
    CHECK_OK(reg(&f, p, 2 * 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG,
                 &h, &lc, &rc));
    CHECK_OK(dat_lmr_free(h));
    /* PROT_NONE memory cannot be registered at all. */
    REQUIRE(mprotect(p, 4096, PROT_NONE) == 0);
    CHECK_SUB(reg(&f, p, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, &h, &lc, &rc),
              DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
    munmap(p, 2 * 4096);
}

TEST(REG_memory_contents_unchanged_by_registration)
{
    struct fx f;
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    int i, same = 1;
    unsigned char *p = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    REQUIRE(p != MAP_FAILED);
    for (i = 0; i < 8 * 4096; i += 512)
        p[i] = (unsigned char)(i / 512 + 1);
    fx_open(&f);
    CHECK_OK(reg(&f, p, 8 * 4096, DAT_MEM_PRIV_ALL_FLAG, &h, &lc, &rc));
    CHECK_OK(dat_lmr_free(h));
    for (i = 0; i < 8 * 4096; i++)
        if (p[i] != ((i % 512) ? 0 : (unsigned char)(i / 512 + 1)))
            same = 0;
    CHECK(same);
    CHECK_OK(dat_pz_free(f.pz));
    CHECK_OK(dat_ia_close(f.ia, DAT_CLOSE_GRACEFUL_FLAG));
    munmap(p, 8 * 4096);
}

TEST(ATTR_mem_types_supported_is_the_union)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd;
    DAT_PROVIDER_ATTR pa;
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa));
    CHECK(pa.lmr_mem_types_supported ==
          (DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_LMR | DAT_MEM_TYPE_SHARED_VIRTUAL));
    CHECK((pa.lmr_mem_types_supported & DAT_MEM_TYPE_LMR) != 0);
    CHECK((pa.lmr_mem_types_supported & DAT_MEM_TYPE_SHARED_VIRTUAL) != 0);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

static volatile int agent_calls;
static volatile DAT_EVD_HANDLE agent_evd = (DAT_EVD_HANDLE)1;
static void agent_fn(DAT_PVOID data, DAT_EVD_HANDLE evd)
{
    (void)data;
    agent_calls++;
    agent_evd = evd;
}

TEST(CNO_agent_called_when_all_evds_are_freed)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, e1, e2;
    DAT_CNO_HANDLE cno;
    DAT_OS_WAIT_PROXY_AGENT agent = {NULL, agent_fn};
    DAT_CNO_PARAM p;
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
    CHECK_OK(dat_cno_create(ia, agent, &cno));
    CHECK_OK(dat_evd_create(ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &e1));
    CHECK_OK(dat_evd_create(ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &e2));
    CHECK_OK(dat_evd_free(e1));
    CHECK(agent_calls == 0);
    CHECK_OK(dat_evd_free(e2));
    CHECK(agent_calls == 1);
    CHECK(agent_evd == DAT_HANDLE_NULL);
    /* One-shot: the agent is no longer associated. */
    CHECK_OK(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &p));
    CHECK(p.agent.proxy_agent_func == NULL);
    CHECK_OK(dat_cno_free(cno));
    CHECK(agent_calls == 1);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(CNO_agent_called_on_abrupt_ia_close)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, e1;
    DAT_CNO_HANDLE cno;
    DAT_OS_WAIT_PROXY_AGENT agent = {NULL, agent_fn};
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
    CHECK_OK(dat_cno_create(ia, agent, &cno));
    CHECK_OK(dat_evd_create(ia, 4, cno, DAT_EVD_SOFTWARE_FLAG, &e1));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(agent_calls == 1);
    CHECK(agent_evd == DAT_HANDLE_NULL);
}

TEST(CNO_agent_not_called_by_freeing_the_cno)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd;
    DAT_CNO_HANDLE cno;
    DAT_OS_WAIT_PROXY_AGENT agent = {NULL, agent_fn};
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
    CHECK_OK(dat_cno_create(ia, agent, &cno));
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(agent_calls == 0);
}

/* A finite timeout of at most the spin budget ends by spinning: close to
 * the deadline, never before it. */
TEST(WAIT_short_timeouts_keep_their_deadline)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, evd;
    DAT_CNO_HANDLE cno;
    DAT_EVENT ev;
    DAT_COUNT nmore;
    int i, late = 0;
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
    REQUIRE(ctest_sw_evd(ia, 4, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
    for (i = 0; i < 100; i++) {
        DAT_EVD_HANDLE hint;
        double t0 = ctest_now(), dt;
        CHECK_TYPE(dat_evd_wait(evd, 3, 1, &ev, &nmore), DAT_TIMEOUT_EXPIRED);
        dt = ctest_now() - t0;
        CHECK(dt >= 3e-6);
        late += dt > 1e-3;
        t0 = ctest_now();
        CHECK_TYPE(dat_cno_wait(cno, 3, &hint), DAT_QUEUE_EMPTY);
        dt = ctest_now() - t0;
        CHECK(dt >= 3e-6);
        late += dt > 1e-3;
    }
    /* Not a timing assertion: a few preemptions on a busy machine are fine,
     * a sleep through the timer slack on every call is not. */
    CHECK(late < 20);
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_evd_free(evd));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
