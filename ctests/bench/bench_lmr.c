/*
 * 3. dat_lmr_create + dat_lmr_free of one page (VIRTUAL, LOCAL_READ |
 * LOCAL_WRITE) with the process's few mappings, then again after it has
 * mapped 20,000 more single pages that the kernel cannot merge (alternating
 * protections). Baseline, for scale: mmap + munmap of one page.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXTRA_MAPPINGS 20000
#define LMR_BYTES 4096

struct lmr_ctx {
    DAT_IA_HANDLE ia;
    DAT_PZ_HANDLE pz;
    void *buf;
};

static void lmr_loop(void *p, long n)
{
    const struct lmr_ctx *c = p;
    long i;

    for (i = 0; i < n; i++) {
        DAT_REGION_DESCRIPTION region;
        DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
        DAT_LMR_CONTEXT lctx;
        DAT_RMR_CONTEXT rctx;
        DAT_VLEN rlen;
        DAT_VADDR raddr;

        memset(&region, 0, sizeof(region));
        region.for_va = c->buf;
        BENCH_OK("dat_lmr_create",
                 dat_lmr_create(c->ia, DAT_MEM_TYPE_VIRTUAL, region, LMR_BYTES, c->pz,
                                DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
                                &lmr, &lctx, &rctx, &rlen, &raddr));
        BENCH_OK("dat_lmr_free", dat_lmr_free(lmr));
    }
}

static void mmap_loop(void *p, long n)
{
    size_t page = *(const size_t *)p;
    long i;

    for (i = 0; i < n; i++) {
        void *m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED)
            bench_die("baseline mmap");
        if (munmap(m, page) != 0)
            bench_die("baseline munmap");
    }
}

/* Lines of /proc/self/maps (one per mapping); outside the timed regions. */
static long maps_lines(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long lines = 0;
    int ch;

    if (f == NULL)
        bench_die("open /proc/self/maps");
    while ((ch = getc(f)) != EOF)
        if (ch == '\n')
            lines++;
    fclose(f);
    return lines;
}

/* Measure LMR and baseline in the current state: us per op. */
static void measure(struct lmr_ctx *c, double *lmr_us, double *mmap_us)
{
    static size_t page;
    long n;

    page = (size_t)sysconf(_SC_PAGESIZE);

    n = bench_calibrate(lmr_loop, c, BENCH_REP_SECONDS);
    *lmr_us = bench_ns(lmr_loop, c, n) / 1000;
    n = bench_calibrate(mmap_loop, &page, BENCH_REP_SECONDS);
    *mmap_us = bench_ns(mmap_loop, &page, n) / 1000;
}

void bench_lmr(DAT_IA_HANDLE ia)
{
    struct lmr_ctx c;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void **extra;
    double lmr_few, mmap_few, lmr_many, mmap_many;
    long before, after;
    char name[64];
    int i;

    memset(&c, 0, sizeof(c));
    c.ia = ia;
    BENCH_OK("dat_pz_create", dat_pz_create(ia, &c.pz));
    if (posix_memalign(&c.buf, page, LMR_BYTES) != 0)
        bench_die("posix_memalign");
    memset(c.buf, 0x5a, LMR_BYTES);

    table_section("3. dat_lmr_create + dat_lmr_free, 4096-byte aligned VIRTUAL buffer, us per pair\n"
                  "   baseline (for scale): mmap + munmap of one anonymous page");
    before = maps_lines();
    measure(&c, &lmr_few, &mmap_few);

    extra = calloc(EXTRA_MAPPINGS, sizeof(*extra));
    if (extra == NULL)
        bench_die("calloc");
    for (i = 0; i < EXTRA_MAPPINGS; i++) {
        /* Alternating protections: neighbours can never be merged. */
        int prot = (i % 2) ? PROT_READ : PROT_READ | PROT_WRITE;

        extra[i] = mmap(NULL, page, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (extra[i] == MAP_FAILED)
            bench_die("mmap of an extra mapping");
    }
    after = maps_lines();
    if (after - before < EXTRA_MAPPINGS * 95 / 100)
        bench_die("the 20,000 extra mappings did not show up in /proc/self/maps");
    measure(&c, &lmr_many, &mmap_many);
    for (i = 0; i < EXTRA_MAPPINGS; i++)
        if (munmap(extra[i], page) != 0)
            bench_die("munmap of an extra mapping");
    free(extra);

    snprintf(name, sizeof(name), "few mappings (%ld in maps)", before);
    table_row(name, lmr_few, "us", mmap_few, "", VERDICT_NONE);
    snprintf(name, sizeof(name), "+%d mappings (%ld in maps)", EXTRA_MAPPINGS, after);
    table_row(name, lmr_many, "us", mmap_many, "", VERDICT_NONE);
    table_row("many mappings / few", lmr_many / lmr_few, "x", mmap_many / mmap_few, "<= 2.00x",
              bench_at_most(lmr_many / lmr_few, 2.0));

    BENCH_OK("dat_pz_free", dat_pz_free(c.pz));
    free(c.buf);
}
