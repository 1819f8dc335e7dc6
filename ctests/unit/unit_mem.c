/*
 * Memory registration conformance tests (semantics-core.md §2.7–§2.15).
 *
 * IDs: LMC-01…20, LMF-01, 02, 05, 06, 07, LMQ-01…06, LSR-01…09, LSW-01…08,
 * RMC-01…06, RMF-01, 02, 04, RMQ-01…05, RMB-02.
 * Tests that need a connection (LMF-03/04/08, LSW-09, RMF-03/05, RMQ-06,
 * RMB-01/03…16) are elsewhere; LMC-14's "remote read refused" half needs a
 * connection and is not run here.
 */
#include "ctest.h"

#include <sys/mman.h>

#define BUFSZ 4096

struct fx {
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd;
    DAT_PZ_HANDLE pz;
    unsigned char *buf;
};

struct lmr_out {
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
};

/* Open the IA, create a PZ and a 4096-byte, 4096-aligned buffer. */
static inline int fx_open(struct fx *f)
{
    void *p = NULL;
    memset(f, 0, sizeof(*f));
    if (posix_memalign(&p, 4096, BUFSZ) != 0)
        return 0;
    f->buf = p;
    memset(f->buf, 0, BUFSZ);
    if (ctest_open_ia(&f->ia, &f->aevd) != DAT_SUCCESS) {
        fprintf(stderr, "    fixture: dat_ia_open failed\n");
        return 0;
    }
    if (dat_pz_create(f->ia, &f->pz) != DAT_SUCCESS) {
        fprintf(stderr, "    fixture: dat_pz_create failed\n");
        return 0;
    }
    return 1;
}

/* Tear down: PZ, graceful close (checked), buffer. */
static inline void fx_close(struct fx *f)
{
    CHECK_OK(dat_pz_free(f->pz));
    CHECK_OK(dat_ia_close(f->ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(f->buf);
}

static inline DAT_RETURN lmr_va(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, void *addr, DAT_VLEN len,
                                DAT_MEM_PRIV_FLAGS priv, struct lmr_out *o)
{
    DAT_REGION_DESCRIPTION rd;
    memset(&rd, 0, sizeof(rd));
    rd.for_va = addr;
    o->h = DAT_HANDLE_NULL;
    o->lc = 0;
    o->rc = 0xFFFFFFFFu;
    o->rs = 0;
    o->ra = 0;
    return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, len, pz, priv, &o->h, &o->lc, &o->rc,
                          &o->rs, &o->ra);
}

static inline DAT_RETURN lmr_derived(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_LMR_HANDLE base,
                                     DAT_VLEN len, DAT_MEM_PRIV_FLAGS priv, struct lmr_out *o)
{
    DAT_REGION_DESCRIPTION rd;
    memset(&rd, 0, sizeof(rd));
    rd.for_lmr_handle = base;
    o->h = DAT_HANDLE_NULL;
    o->rc = 0xFFFFFFFFu;
    return dat_lmr_create(ia, DAT_MEM_TYPE_LMR, rd, len, pz, priv, &o->h, &o->lc, &o->rc, &o->rs,
                          &o->ra);
}

#define LRW (DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG)

static inline DAT_LMR_TRIPLET trip(DAT_LMR_CONTEXT lc, const void *va, DAT_VLEN len)
{
    DAT_LMR_TRIPLET t;
    memset(&t, 0, sizeof(t));
    t.lmr_context = lc;
    t.virtual_address = (DAT_VADDR)(uintptr_t)va;
    t.segment_length = len;
    return t;
}

/* ---- dat_lmr_create (§2.7) ---------------------------------------------- */

TEST(LMC_01_virtual_registered_range)
{
    struct fx f;
    struct lmr_out o;

    REQUIRE(fx_open(&f));
    CHECK_OK(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o));
    REQUIRE(o.h != DAT_HANDLE_NULL);
    CHECK(o.ra <= (DAT_VADDR)(uintptr_t)f.buf);
    CHECK(o.ra + o.rs >= (DAT_VADDR)(uintptr_t)f.buf + BUFSZ);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMC_02_no_remote_priv_no_rmr_context)
{
    struct fx f;
    struct lmr_out o;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    CHECK(o.rc == 0);
    CHECK_OK(dat_lmr_free(o.h));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_LOCAL_READ_FLAG, &o) == DAT_SUCCESS);
    CHECK(o.rc == 0);
    CHECK_OK(dat_lmr_free(o.h));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_NONE_FLAG, &o) == DAT_SUCCESS);
    CHECK(o.rc == 0);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMC_03_all_priv_rmr_context)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_PARAM p;

    REQUIRE(fx_open(&f));
    CHECK_OK(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &o));
    REQUIRE(o.h != DAT_HANDLE_NULL);
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_lmr_query(o.h, DAT_LMR_FIELD_ALL, &p));
    CHECK(p.rmr_context == o.rc);
    CHECK(p.lmr_context == o.lc);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMC_04_query_matches_create)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &o) == DAT_SUCCESS);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_lmr_query(o.h, DAT_LMR_FIELD_ALL, &p));
    CHECK(p.ia_handle == f.ia);
    CHECK(p.mem_type == DAT_MEM_TYPE_VIRTUAL || p.mem_type == DAT_MEM_TYPE_SO_VIRTUAL);
    CHECK(p.region_desc.for_va == (DAT_PVOID)f.buf);
    CHECK(p.length == BUFSZ);
    CHECK(p.pz_handle == f.pz);
    CHECK(p.mem_priv == DAT_MEM_PRIV_ALL_FLAG);
    CHECK(p.lmr_context == o.lc);
    CHECK(p.rmr_context == o.rc);
    CHECK(p.registered_size == o.rs);
    CHECK(p.registered_address == o.ra);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMC_05_register_twice)
{
    struct fx f;
    struct lmr_out a, b;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &a) == DAT_SUCCESS);
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &b) == DAT_SUCCESS);
    CHECK(a.h != b.h);
    CHECK(a.lc != b.lc);
    CHECK_OK(dat_lmr_free(a.h));
    CHECK_OK(dat_lmr_free(b.h));
    fx_close(&f);
}

TEST(LMC_06_zero_length)
{
    struct fx f;
    struct lmr_out o;

    REQUIRE(fx_open(&f));
    CHECK_SUB(lmr_va(f.ia, f.pz, f.buf, 0, LRW, &o), DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    fx_close(&f); /* nothing left behind: graceful close succeeds */
}

TEST(LMC_07_null_ia)
{
    struct fx f;
    struct lmr_out o;

    REQUIRE(fx_open(&f));
    CHECK_RET(lmr_va(DAT_HANDLE_NULL, f.pz, f.buf, BUFSZ, LRW, &o), 0x8005000B);
    fx_close(&f);
}

TEST(LMC_08_bad_pz)
{
    struct fx f;
    struct lmr_out o;
    DAT_CNO_HANDLE cno;

    REQUIRE(fx_open(&f));
    CHECK_TYPE(lmr_va(f.ia, DAT_HANDLE_NULL, f.buf, BUFSZ, LRW, &o), DAT_INVALID_HANDLE);
    REQUIRE(dat_cno_create(f.ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
    CHECK_TYPE(lmr_va(f.ia, (DAT_PZ_HANDLE)cno, f.buf, BUFSZ, LRW, &o), DAT_INVALID_HANDLE);
    CHECK_OK(dat_cno_free(cno));
    fx_close(&f);
}

TEST(LMC_09_pz_of_other_ia)
{
    struct fx f;
    struct lmr_out o;
    DAT_IA_HANDLE ia2;
    DAT_EVD_HANDLE e2;
    DAT_PZ_HANDLE pz2;

    REQUIRE(fx_open(&f));
    REQUIRE(ctest_open_ia(&ia2, &e2) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia2, &pz2) == DAT_SUCCESS);
    CHECK_TYPE(lmr_va(f.ia, pz2, f.buf, BUFSZ, LRW, &o), DAT_INVALID_HANDLE);
    /* pz2 is not in use (nothing was created) */
    CHECK_OK(dat_pz_free(pz2));
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
    fx_close(&f);
}

TEST(LMC_10_undefined_mem_type)
{
    struct fx f;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_HANDLE h;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;

    REQUIRE(fx_open(&f));
    memset(&rd, 0, sizeof(rd));
    rd.for_va = f.buf;
    CHECK_TYPE(dat_lmr_create(f.ia, (DAT_MEM_TYPE)7, rd, BUFSZ, f.pz, LRW, &h, &lc, &rc, &rs, &ra),
               DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_lmr_create(f.ia, (DAT_MEM_TYPE)0x7fffffff, rd, BUFSZ, f.pz, LRW, &h, &lc, &rc,
                              &rs, &ra),
               DAT_INVALID_PARAMETER);
    fx_close(&f);
}

TEST(LMC_11_derived_lmr)
{
    struct fx f;
    struct lmr_out base, d;
    DAT_PZ_HANDLE pz2;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &base) == DAT_SUCCESS);
    CHECK_OK(lmr_derived(f.ia, pz2, base.h, 0, DAT_MEM_PRIV_LOCAL_READ_FLAG, &d));
    if (d.h != DAT_HANDLE_NULL) {
        CHECK(d.rs == base.rs);
        CHECK(d.ra == base.ra);
        CHECK(d.lc != base.lc);
        CHECK(d.h != base.h);
        CHECK_OK(dat_lmr_free(d.h));
    }
    CHECK_OK(dat_lmr_free(base.h));
    CHECK_OK(dat_pz_free(pz2));
    fx_close(&f);
}

TEST(LMC_12_lmr_type_with_pz_handle)
{
    struct fx f;
    struct lmr_out d;

    REQUIRE(fx_open(&f));
    CHECK_TYPE(lmr_derived(f.ia, f.pz, (DAT_LMR_HANDLE)f.pz, 0, LRW, &d), DAT_INVALID_HANDLE);
    CHECK_TYPE(lmr_derived(f.ia, f.pz, DAT_HANDLE_NULL, 0, LRW, &d), DAT_INVALID_HANDLE);
    fx_close(&f);
}

TEST(LMC_13_shared_virtual)
{
    struct fx f;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_HANDLE h = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    char cookie[DAT_LMR_COOKIE_SIZE];
    size_t len = 2 * 4096;
    void *shm;
    int i;
    DAT_RETURN r;

    CHECK(DAT_LMR_COOKIE_SIZE == 40);
    REQUIRE(fx_open(&f));
    for (i = 0; i < (int)sizeof(cookie); i++)
        cookie[i] = (i % 3 == 0) ? '\0' : (char)('A' + i); /* NUL bytes inside */

    /* plain heap memory: not created shared by the platform */
    memset(&rd, 0, sizeof(rd));
    rd.for_shared_memory.virtual_address = f.buf;
    rd.for_shared_memory.shared_memory_id = (DAT_LMR_COOKIE)(void *)cookie;
    r = dat_lmr_create(f.ia, DAT_MEM_TYPE_SHARED_VIRTUAL, rd, BUFSZ, f.pz, LRW, &h, &lc, &rc, &rs,
                       &ra);
    CHECK_TYPE(r, DAT_INVALID_STATE);
    if (r == DAT_SUCCESS)
        dat_lmr_free(h);

    /* platform shared memory */
    shm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(shm != MAP_FAILED);
    memset(shm, 0x3C, len);
    memset(&rd, 0, sizeof(rd));
    rd.for_shared_memory.virtual_address = shm;
    rd.for_shared_memory.shared_memory_id = (DAT_LMR_COOKIE)(void *)cookie;
    h = DAT_HANDLE_NULL;
    r = dat_lmr_create(f.ia, DAT_MEM_TYPE_SHARED_VIRTUAL, rd, len, f.pz, LRW, &h, &lc, &rc, &rs,
                       &ra);
    CHECK_OK(r);
    if (r == DAT_SUCCESS) {
        DAT_LMR_PARAM p;
        CHECK(ra <= (DAT_VADDR)(uintptr_t)shm);
        CHECK(ra + rs >= (DAT_VADDR)(uintptr_t)shm + len);
        memset(&p, 0, sizeof(p));
        CHECK_OK(dat_lmr_query(h, DAT_LMR_FIELD_MEM_TYPE | DAT_LMR_FIELD_LENGTH, &p));
        CHECK(p.mem_type == DAT_MEM_TYPE_SHARED_VIRTUAL);
        CHECK(p.length == len);
        CHECK_OK(dat_lmr_free(h)); /* rulings D5 */
    }
    CHECK(((unsigned char *)shm)[0] == 0x3C && ((unsigned char *)shm)[len - 1] == 0x3C);
    munmap(shm, len);
    fx_close(&f);
}

TEST(LMC_14_undefined_priv_bit_accepted)
{
    struct fx f;
    struct lmr_out o;
    DAT_RETURN r;

    REQUIRE(fx_open(&f));
    r = lmr_va(f.ia, f.pz, f.buf, BUFSZ, (DAT_MEM_PRIV_FLAGS)0x04, &o);
    CHECK_OK(r);
    if (r == DAT_SUCCESS) {
        /* the undefined bit grants no remote access: no RMR context */
        CHECK(o.rc == 0);
        CHECK_OK(dat_lmr_free(o.h));
    }
    /* "a remote read through the context is refused" needs a connection: not run here */
    fx_close(&f);
}

TEST(LMC_15_null_lmr_handle)
{
    struct fx f;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;

    REQUIRE(fx_open(&f));
    memset(&rd, 0, sizeof(rd));
    rd.for_va = f.buf;
    CHECK_SUB(dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, rd, BUFSZ, f.pz, LRW, NULL, &lc, &rc, &rs,
                             &ra),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
    fx_close(&f);
}

TEST(LMC_16_optional_outputs_null)
{
    struct fx f;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_HANDLE h = DAT_HANDLE_NULL;
    DAT_LMR_PARAM p;
    DAT_LMR_TRIPLET t;

    REQUIRE(fx_open(&f));
    memset(&rd, 0, sizeof(rd));
    rd.for_va = f.buf;
    CHECK_OK(dat_lmr_create(f.ia, DAT_MEM_TYPE_VIRTUAL, rd, BUFSZ, f.pz, DAT_MEM_PRIV_ALL_FLAG, &h,
                            NULL, NULL, NULL, NULL));
    REQUIRE(h != DAT_HANDLE_NULL);
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_lmr_query(h, DAT_LMR_FIELD_ALL, &p));
    CHECK(p.length == BUFSZ);
    /* usable: its context names it */
    t = trip(p.lmr_context, f.buf, BUFSZ);
    CHECK_OK(dat_lmr_sync_rdma_read(f.ia, &t, 1));
    CHECK_OK(dat_lmr_sync_rdma_write(f.ia, &t, 1));
    CHECK_OK(dat_lmr_free(h));
    fx_close(&f);
}

TEST(LMC_17_lmr_pins_pz)
{
    struct fx f;
    struct lmr_out o;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free(f.pz), DAT_INVALID_STATE);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMC_18_length_above_max_block)
{
    struct fx f;
    struct lmr_out o;
    DAT_IA_ATTR a;
    DAT_RETURN r;

    REQUIRE(fx_open(&f));
    memset(&a, 0, sizeof(a));
    REQUIRE(dat_ia_query(f.ia, NULL, DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE, &a, 0, NULL) ==
            DAT_SUCCESS);
    CHECK(a.max_lmr_block_size > 0);
    if (a.max_lmr_block_size == ~(DAT_VLEN)0) {
        fx_close(&f);
        SKIP("max_lmr_block_size is the maximum DAT_VLEN");
    }
    r = lmr_va(f.ia, f.pz, f.buf, a.max_lmr_block_size + 1, LRW, &o);
    if (DAT_GET_TYPE(r) == DAT_INVALID_PARAMETER)
        CHECK_TYPE(r, DAT_INVALID_PARAMETER);
    else
        CHECK_TYPE(r, DAT_INSUFFICIENT_RESOURCES);
    if (r == DAT_SUCCESS)
        dat_lmr_free(o.h);
    fx_close(&f);
}

TEST(LMC_19_memory_unchanged)
{
    struct fx f;
    struct lmr_out o;
    int i, bad = 0;

    REQUIRE(fx_open(&f));
    for (i = 0; i < BUFSZ; i++)
        f.buf[i] = (unsigned char)(i * 7 + 3);
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &o) == DAT_SUCCESS);
    for (i = 0; i < BUFSZ; i++)
        if (f.buf[i] != (unsigned char)(i * 7 + 3))
            bad++;
    CHECK(bad == 0);
    CHECK_OK(dat_lmr_free(o.h));
    bad = 0;
    for (i = 0; i < BUFSZ; i++)
        if (f.buf[i] != (unsigned char)(i * 7 + 3))
            bad++;
    CHECK(bad == 0);
    /* still writable; freed by fx_close */
    memset(f.buf, 0xA5, BUFSZ);
    CHECK(f.buf[BUFSZ - 1] == 0xA5);
    fx_close(&f);
}

TEST(LMC_20_ro_disable_flag)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_PARAM p;
    DAT_RETURN r;

    REQUIRE(fx_open(&f));
    r = lmr_va(f.ia, f.pz, f.buf, BUFSZ,
               (DAT_MEM_PRIV_FLAGS)(LRW | DAT_MEM_PRIV_RO_DISABLE_FLAG), &o);
    CHECK_OK(r);
    if (r == DAT_SUCCESS) {
        memset(&p, 0, sizeof(p));
        CHECK_OK(dat_lmr_query(o.h, DAT_LMR_FIELD_MEM_PRIV, &p));
        CHECK(p.mem_priv == LRW); /* RO_DISABLE masked out (LMC-04) */
        CHECK_OK(dat_lmr_free(o.h));
    }
    fx_close(&f);
}

/* ---- dat_lmr_free (§2.8) ------------------------------------------------ */

TEST(LMF_01_free)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_PARAM p;
    int i, bad = 0;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &o) == DAT_SUCCESS);
    CHECK_OK(dat_lmr_free(o.h));
    CHECK_TYPE(dat_lmr_query(o.h, DAT_LMR_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    for (i = 0; i < BUFSZ; i++)
        f.buf[i] = (unsigned char)(255 - (i & 0xFF));
    for (i = 0; i < BUFSZ; i++)
        if (f.buf[i] != (unsigned char)(255 - (i & 0xFF)))
            bad++;
    CHECK(bad == 0);
    fx_close(&f);
}

TEST(LMF_02_free_releases_pz)
{
    struct fx f;
    struct lmr_out o;
    DAT_PZ_HANDLE pz2;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(lmr_va(f.ia, pz2, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free(pz2), DAT_INVALID_STATE);
    CHECK_OK(dat_lmr_free(o.h));
    CHECK_OK(dat_pz_free(pz2));
    fx_close(&f);
}

TEST(LMF_05_bad_handles)
{
    struct fx f;

    CHECK_RET(dat_lmr_free(DAT_HANDLE_NULL), 0x8005000D);
    REQUIRE(fx_open(&f));
    CHECK_TYPE(dat_lmr_free((DAT_LMR_HANDLE)f.pz), DAT_INVALID_HANDLE);
    fx_close(&f); /* the PZ was not freed by the bad call */
}

TEST(LMF_06_free_base_keeps_derived)
{
    struct fx f;
    struct lmr_out base, d;
    DAT_LMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &base) == DAT_SUCCESS);
    REQUIRE(lmr_derived(f.ia, f.pz, base.h, 0, DAT_MEM_PRIV_LOCAL_READ_FLAG, &d) == DAT_SUCCESS);
    CHECK_OK(dat_lmr_free(base.h));
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_lmr_query(d.h, DAT_LMR_FIELD_ALL, &p));
    CHECK(p.lmr_context == d.lc);
    CHECK_OK(dat_lmr_free(d.h));
    fx_close(&f);
}

TEST(LMF_07_double_free)
{
    struct fx f;
    struct lmr_out o;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    CHECK_OK(dat_lmr_free(o.h));
    CHECK_TYPE(dat_lmr_free(o.h), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_lmr_free(o.h), DAT_INVALID_HANDLE);
    fx_close(&f);
}

/* ---- dat_lmr_query (§2.9) ----------------------------------------------- */

TEST(LMQ_01_all_fields)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_PARAM p;
    DAT_MEM_PRIV_FLAGS priv = (DAT_MEM_PRIV_FLAGS)(DAT_MEM_PRIV_LOCAL_READ_FLAG |
                                                   DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
                                                   DAT_MEM_PRIV_REMOTE_WRITE_FLAG);

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf + 256, 1024, priv, &o) == DAT_SUCCESS);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_lmr_query(o.h, DAT_LMR_FIELD_ALL, &p));
    CHECK(p.ia_handle == f.ia);
    CHECK(p.mem_type == DAT_MEM_TYPE_VIRTUAL || p.mem_type == DAT_MEM_TYPE_SO_VIRTUAL);
    CHECK(p.region_desc.for_va == (DAT_PVOID)(f.buf + 256));
    CHECK(p.length == 1024);
    CHECK(p.pz_handle == f.pz);
    CHECK(p.mem_priv == priv);
    CHECK(p.lmr_context == o.lc);
    CHECK(p.rmr_context == o.rc);
    CHECK(p.registered_size == o.rs);
    CHECK(p.registered_address == o.ra);
    CHECK(o.ra <= (DAT_VADDR)(uintptr_t)(f.buf + 256));
    CHECK(o.ra + o.rs >= (DAT_VADDR)(uintptr_t)(f.buf + 256 + 1024));
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMQ_02_single_bits)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_PARAM all, p;
    unsigned bit;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &o) == DAT_SUCCESS);
    memset(&all, 0, sizeof(all));
    REQUIRE(dat_lmr_query(o.h, DAT_LMR_FIELD_ALL, &all) == DAT_SUCCESS);
    for (bit = 0x001; bit <= 0x200; bit <<= 1) {
        memset(&p, 0xEE, sizeof(p));
        CHECK_OK(dat_lmr_query(o.h, (DAT_LMR_PARAM_MASK)bit, &p));
        if (bit == DAT_LMR_FIELD_IA_HANDLE)
            CHECK(p.ia_handle == f.ia);
        else if (bit == DAT_LMR_FIELD_MEM_TYPE)
            CHECK(p.mem_type == all.mem_type);
        else if (bit == DAT_LMR_FIELD_REGION_DESC)
            CHECK(p.region_desc.for_va == (DAT_PVOID)f.buf);
        else if (bit == DAT_LMR_FIELD_LENGTH)
            CHECK(p.length == BUFSZ);
        else if (bit == DAT_LMR_FIELD_PZ_HANDLE)
            CHECK(p.pz_handle == f.pz);
        else if (bit == DAT_LMR_FIELD_MEM_PRIV)
            CHECK(p.mem_priv == DAT_MEM_PRIV_ALL_FLAG);
        else if (bit == DAT_LMR_FIELD_LMR_CONTEXT)
            CHECK(p.lmr_context == o.lc);
        else if (bit == DAT_LMR_FIELD_RMR_CONTEXT)
            CHECK(p.rmr_context == o.rc);
        else if (bit == DAT_LMR_FIELD_REGISTERED_SIZE)
            CHECK(p.registered_size == o.rs);
        else if (bit == DAT_LMR_FIELD_REGISTERED_ADDRESS)
            CHECK(p.registered_address == o.ra);
        else
            CHECK(0);
    }
    /* mask 0: success, nothing required */
    CHECK_OK(dat_lmr_query(o.h, (DAT_LMR_PARAM_MASK)0, &p));
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMQ_03_unknown_mask_bit)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    CHECK_SUB(dat_lmr_query(o.h, (DAT_LMR_PARAM_MASK)0x400, &p), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    CHECK_SUB(dat_lmr_query(o.h, (DAT_LMR_PARAM_MASK)(DAT_LMR_FIELD_ALL | 0x80000000u), &p),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMQ_04_null_param)
{
    struct fx f;
    struct lmr_out o;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    CHECK_SUB(dat_lmr_query(o.h, DAT_LMR_FIELD_ALL, NULL), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG3);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(LMQ_05_bad_handles)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;
    DAT_LMR_PARAM p;

    CHECK_RET(dat_lmr_query(DAT_HANDLE_NULL, DAT_LMR_FIELD_ALL, &p), 0x8005000D);
    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_lmr_query((DAT_LMR_HANDLE)rmr, DAT_LMR_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    CHECK_OK(dat_rmr_free(rmr));
    fx_close(&f);
}

TEST(LMQ_06_derived_query)
{
    struct fx f;
    struct lmr_out base, d;
    DAT_LMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &base) == DAT_SUCCESS);
    REQUIRE(lmr_derived(f.ia, f.pz, base.h, 0, DAT_MEM_PRIV_LOCAL_READ_FLAG, &d) == DAT_SUCCESS);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_lmr_query(d.h, DAT_LMR_FIELD_ALL, &p));
    CHECK(p.mem_type == DAT_MEM_TYPE_LMR);
    CHECK(p.region_desc.for_lmr_handle == base.h);
    CHECK(p.mem_priv == DAT_MEM_PRIV_LOCAL_READ_FLAG);
    CHECK(p.lmr_context == d.lc);
    CHECK(p.registered_size == base.rs);
    CHECK(p.registered_address == base.ra);
    CHECK_OK(dat_lmr_free(d.h));
    CHECK_OK(dat_lmr_free(base.h));
    fx_close(&f);
}

/* ---- dat_lmr_sync_rdma_read / _write (§2.10, §2.11) --------------------- */

typedef DAT_RETURN (*sync_fn)(DAT_IA_HANDLE, const DAT_LMR_TRIPLET *, DAT_VLEN);

static inline void sync_one_segment(sync_fn fn)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_TRIPLET t;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &o) == DAT_SUCCESS);
    t = trip(o.lc, f.buf, BUFSZ);
    CHECK_OK(fn(f.ia, &t, 1));
    t = trip(o.lc, f.buf + 100, 50); /* a sub-range */
    CHECK_OK(fn(f.ia, &t, 1));
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

static inline void sync_two_pzs(sync_fn fn)
{
    struct fx f;
    struct lmr_out a, b;
    DAT_PZ_HANDLE pz2;
    DAT_LMR_TRIPLET t[2];
    void *buf2 = NULL;

    REQUIRE(posix_memalign(&buf2, 4096, BUFSZ) == 0);
    REQUIRE(fx_open(&f));
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &a) == DAT_SUCCESS);
    REQUIRE(lmr_va(f.ia, pz2, buf2, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &b) == DAT_SUCCESS);
    t[0] = trip(a.lc, f.buf, BUFSZ);
    t[1] = trip(b.lc, buf2, BUFSZ);
    CHECK_OK(fn(f.ia, t, 2));
    CHECK_OK(dat_lmr_free(a.h));
    CHECK_OK(dat_lmr_free(b.h));
    CHECK_OK(dat_pz_free(pz2));
    fx_close(&f);
    free(buf2);
}

static inline void sync_zero_segments(sync_fn fn)
{
    struct fx f;
    DAT_LMR_TRIPLET t;

    REQUIRE(fx_open(&f));
    CHECK_OK(fn(f.ia, NULL, 0));
    t = trip(0xDEADBEEFu, (void *)(uintptr_t)0x10, 0);
    CHECK_OK(fn(f.ia, &t, 0));
    fx_close(&f);
}

static inline void sync_zero_length_garbage(sync_fn fn)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_TRIPLET t[2];

    REQUIRE(fx_open(&f));
    t[0] = trip(0xDEADBEEFu, (void *)(uintptr_t)0xFFFFFFFFFFFF0000ull, 0);
    CHECK_OK(fn(f.ia, t, 1));
    /* mixed with a valid segment */
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    t[1] = trip(o.lc, f.buf, BUFSZ);
    CHECK_OK(fn(f.ia, t, 2));
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

static inline void sync_null_ia(sync_fn fn)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_TRIPLET t;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    t = trip(o.lc, f.buf, BUFSZ);
    CHECK_RET(fn(DAT_HANDLE_NULL, &t, 1), 0x8005000B);
    CHECK_RET(fn(DAT_HANDLE_NULL, NULL, 0), 0x8005000B);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

static inline void sync_past_end(sync_fn fn)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_TRIPLET t;
    DAT_VADDR end;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    end = o.ra + o.rs; /* first byte past the registered range */
    t = trip(o.lc, f.buf, (DAT_VLEN)(end - (DAT_VADDR)(uintptr_t)f.buf) + 1);
    CHECK_TYPE(fn(f.ia, &t, 1), DAT_INVALID_PARAMETER);
    /* starting before the registered range */
    t = trip(o.lc, (const void *)(uintptr_t)(o.ra - 1), 2);
    CHECK_TYPE(fn(f.ia, &t, 1), DAT_INVALID_PARAMETER);
    /* exactly the registered range is fine */
    t = trip(o.lc, (const void *)(uintptr_t)o.ra, o.rs);
    CHECK_OK(fn(f.ia, &t, 1));
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

static inline void sync_freed_context(sync_fn fn)
{
    struct fx f;
    struct lmr_out o;
    DAT_LMR_TRIPLET t;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    t = trip(o.lc, f.buf, BUFSZ);
    CHECK_OK(dat_lmr_free(o.h));
    CHECK_TYPE(fn(f.ia, &t, 1), DAT_INVALID_PARAMETER);
    fx_close(&f);
}

static inline void sync_null_segments(sync_fn fn)
{
    struct fx f;

    REQUIRE(fx_open(&f));
    CHECK_SUB(fn(f.ia, NULL, 1), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_SUB(fn(f.ia, NULL, ~(DAT_VLEN)0), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    fx_close(&f);
}

static inline void sync_other_ia_context(sync_fn fn)
{
    struct fx f;
    struct lmr_out o;
    DAT_IA_HANDLE ia2;
    DAT_EVD_HANDLE e2;
    DAT_PZ_HANDLE pz2;
    DAT_LMR_TRIPLET t;

    REQUIRE(fx_open(&f)); /* IA#1 has no LMR at all */
    REQUIRE(ctest_open_ia(&ia2, &e2) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia2, &pz2) == DAT_SUCCESS);
    REQUIRE(lmr_va(ia2, pz2, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    t = trip(o.lc, f.buf, BUFSZ);
    CHECK_OK(fn(ia2, &t, 1)); /* valid on its own IA */
    CHECK_TYPE(fn(f.ia, &t, 1), DAT_INVALID_PARAMETER);
    CHECK_OK(dat_lmr_free(o.h));
    CHECK_OK(dat_pz_free(pz2));
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
    fx_close(&f);
}

TEST(LSR_01_one_segment) { sync_one_segment(dat_lmr_sync_rdma_read); }
TEST(LSR_02_two_pzs) { sync_two_pzs(dat_lmr_sync_rdma_read); }
TEST(LSR_03_zero_segments) { sync_zero_segments(dat_lmr_sync_rdma_read); }
TEST(LSR_04_zero_length_garbage_context) { sync_zero_length_garbage(dat_lmr_sync_rdma_read); }
TEST(LSR_05_null_ia) { sync_null_ia(dat_lmr_sync_rdma_read); }
TEST(LSR_06_past_registered_range) { sync_past_end(dat_lmr_sync_rdma_read); }
TEST(LSR_07_freed_lmr_context) { sync_freed_context(dat_lmr_sync_rdma_read); }
TEST(LSR_08_null_segments) { sync_null_segments(dat_lmr_sync_rdma_read); }
TEST(LSR_09_other_ia_context) { sync_other_ia_context(dat_lmr_sync_rdma_read); }

TEST(LSW_01_one_segment) { sync_one_segment(dat_lmr_sync_rdma_write); }
TEST(LSW_02_two_pzs) { sync_two_pzs(dat_lmr_sync_rdma_write); }
TEST(LSW_03_zero_segments) { sync_zero_segments(dat_lmr_sync_rdma_write); }
TEST(LSW_04_zero_length_garbage_context) { sync_zero_length_garbage(dat_lmr_sync_rdma_write); }
TEST(LSW_05_null_ia) { sync_null_ia(dat_lmr_sync_rdma_write); }
TEST(LSW_06_past_registered_range) { sync_past_end(dat_lmr_sync_rdma_write); }
TEST(LSW_07_freed_lmr_context) { sync_freed_context(dat_lmr_sync_rdma_write); }
TEST(LSW_08_null_segments) { sync_null_segments(dat_lmr_sync_rdma_write); }

/* ---- dat_rmr_create (§2.12) --------------------------------------------- */

TEST(RMC_01_create)
{
    struct fx f;
    DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
    DAT_HANDLE_TYPE t = (DAT_HANDLE_TYPE)-1;
    DAT_RMR_PARAM p;

    REQUIRE(fx_open(&f));
    CHECK_OK(dat_rmr_create(f.pz, &rmr));
    REQUIRE(rmr != DAT_HANDLE_NULL);
    CHECK_OK(dat_get_handle_type(rmr, &t));
    CHECK(t == DAT_HANDLE_TYPE_RMR);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_rmr_query(rmr, DAT_RMR_FIELD_IA_HANDLE | DAT_RMR_FIELD_PZ_HANDLE, &p));
    CHECK(p.ia_handle == f.ia);
    CHECK(p.pz_handle == f.pz);
    CHECK_OK(dat_rmr_free(rmr));
    fx_close(&f);
}

TEST(RMC_02_bad_pz)
{
    struct fx f;
    struct lmr_out o;
    DAT_RMR_HANDLE rmr;

    CHECK_RET(dat_rmr_create(DAT_HANDLE_NULL, &rmr), 0x8005000F);
    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, LRW, &o) == DAT_SUCCESS);
    CHECK_TYPE(dat_rmr_create((DAT_PZ_HANDLE)o.h, &rmr), DAT_INVALID_HANDLE);
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

TEST(RMC_03_null_out)
{
    struct fx f;

    REQUIRE(fx_open(&f));
    CHECK_SUB(dat_rmr_create(f.pz, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    fx_close(&f); /* PZ not held by a phantom RMR */
}

TEST(RMC_04_rmr_pins_pz)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_pz_free(f.pz), DAT_INVALID_STATE);
    CHECK_OK(dat_rmr_free(rmr));
    fx_close(&f);
}

TEST(RMC_05_freed_pz)
{
    struct fx f;
    DAT_PZ_HANDLE pz2;
    DAT_RMR_HANDLE rmr;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_pz_create(f.ia, &pz2) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz2));
    CHECK_TYPE(dat_rmr_create(pz2, &rmr), DAT_INVALID_HANDLE);
    fx_close(&f);
}

TEST(RMC_06_distinct_handles)
{
    struct fx f;
    DAT_RMR_HANDLE a, b;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &a) == DAT_SUCCESS);
    REQUIRE(dat_rmr_create(f.pz, &b) == DAT_SUCCESS);
    CHECK(a != b);
    CHECK_OK(dat_rmr_free(a));
    CHECK_OK(dat_rmr_free(b));
    fx_close(&f);
}

/* ---- dat_rmr_free (§2.13) ----------------------------------------------- */

TEST(RMF_01_free_unbound)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    CHECK_OK(dat_rmr_free(rmr));
    CHECK_TYPE(dat_rmr_query(rmr, DAT_RMR_FIELD_IA_HANDLE, &p), DAT_INVALID_HANDLE);
    fx_close(&f); /* dat_pz_free succeeds */
}

TEST(RMF_02_bad_handles)
{
    struct fx f;

    CHECK_RET(dat_rmr_free(DAT_HANDLE_NULL), 0x8005000E);
    REQUIRE(fx_open(&f));
    CHECK_TYPE(dat_rmr_free((DAT_RMR_HANDLE)f.pz), DAT_INVALID_HANDLE);
    fx_close(&f);
}

TEST(RMF_04_double_free)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    CHECK_OK(dat_rmr_free(rmr));
    CHECK_TYPE(dat_rmr_free(rmr), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_rmr_free(rmr), DAT_INVALID_HANDLE);
    fx_close(&f);
}

/* ---- dat_rmr_query (§2.14) ---------------------------------------------- */

TEST(RMQ_01_unbound_ia_pz)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_rmr_query(rmr, DAT_RMR_FIELD_IA_HANDLE | DAT_RMR_FIELD_PZ_HANDLE, &p));
    CHECK(p.ia_handle == f.ia);
    CHECK(p.pz_handle == f.pz);
    CHECK_OK(dat_rmr_free(rmr));
    fx_close(&f);
}

TEST(RMQ_02_unbound_all_zero)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &p));
    CHECK(p.ia_handle == f.ia);
    CHECK(p.pz_handle == f.pz);
    CHECK(p.lmr_triplet.lmr_context == 0);
    CHECK(p.lmr_triplet.virtual_address == 0);
    CHECK(p.lmr_triplet.segment_length == 0);
    CHECK(p.mem_priv == DAT_MEM_PRIV_NONE_FLAG);
    CHECK(p.rmr_context == 0);
    CHECK_OK(dat_rmr_free(rmr));
    fx_close(&f);
}

TEST(RMQ_03_unknown_mask_bit)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;
    DAT_RMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    CHECK_SUB(dat_rmr_query(rmr, (DAT_RMR_PARAM_MASK)0x20, &p), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    CHECK_SUB(dat_rmr_query(rmr, (DAT_RMR_PARAM_MASK)(DAT_RMR_FIELD_ALL | 0x40000000u), &p),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(dat_rmr_free(rmr));
    fx_close(&f);
}

TEST(RMQ_04_null_param)
{
    struct fx f;
    DAT_RMR_HANDLE rmr;

    REQUIRE(fx_open(&f));
    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    CHECK_SUB(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, NULL), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG3);
    CHECK_OK(dat_rmr_free(rmr));
    fx_close(&f);
}

TEST(RMQ_05_null_handle)
{
    DAT_RMR_PARAM p;

    CHECK_RET(dat_rmr_query(DAT_HANDLE_NULL, DAT_RMR_FIELD_ALL, &p), 0x8005000E);
    CHECK_RET(dat_rmr_query((DAT_RMR_HANDLE)(uintptr_t)0x1003, DAT_RMR_FIELD_ALL, &p), 0x8005000E);
}

/* ---- dat_rmr_bind (§2.15) ----------------------------------------------- */

TEST(RMB_02_bad_rmr_and_ep_handles)
{
    struct fx f;
    struct lmr_out o;
    DAT_RMR_HANDLE rmr;
    DAT_LMR_TRIPLET t;
    DAT_RMR_COOKIE cookie;
    DAT_RMR_CONTEXT ctx = 0;
    DAT_RMR_PARAM p;

    REQUIRE(fx_open(&f));
    REQUIRE(lmr_va(f.ia, f.pz, f.buf, BUFSZ, DAT_MEM_PRIV_ALL_FLAG, &o) == DAT_SUCCESS);
    t = trip(o.lc, f.buf, BUFSZ);
    memset(&cookie, 0, sizeof(cookie));
    cookie.as_64 = 0x1234;

    CHECK_RET(dat_rmr_bind(DAT_HANDLE_NULL, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, (DAT_EP_HANDLE)f.pz,
                           cookie, DAT_COMPLETION_DEFAULT_FLAG, &ctx),
              0x8005000E);

    REQUIRE(dat_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, (DAT_EP_HANDLE)f.pz, cookie,
                            DAT_COMPLETION_DEFAULT_FLAG, &ctx),
               DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_rmr_bind(rmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_HANDLE_NULL, cookie,
                            DAT_COMPLETION_DEFAULT_FLAG, &ctx),
               DAT_INVALID_HANDLE);
    /* the RMR stays unbound: the LMR can be freed */
    memset(&p, 0xEE, sizeof(p));
    CHECK_OK(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &p));
    CHECK(p.rmr_context == 0);
    CHECK_OK(dat_rmr_free(rmr));
    CHECK_OK(dat_lmr_free(o.h));
    fx_close(&f);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
