/*
 * 4. Third-party dispatch: an IA of the C stub provider (named in the
 * temporary dat.conf), a PZ of it, and two cheap calls on the PZ through
 * libdat's exported functions vs. straight through the provider's table
 * (DAT_HANDLE_TO_PROVIDER(h)->slot(...)). Both end in the same stub
 * function, so the difference is what libdat adds.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

static void ght_loop_dat(void *p, long n)
{
    DAT_HANDLE h = p;
    DAT_HANDLE_TYPE type = 0;
    long i;

    for (i = 0; i < n; i++)
        BENCH_OK("dat_get_handle_type (stub PZ)", dat_get_handle_type(h, &type));
    if (type != DAT_HANDLE_TYPE_PZ)
        bench_die("dat_get_handle_type: stub PZ not reported as a PZ");
}

static void ght_loop_direct(void *p, long n)
{
    DAT_HANDLE h = p;
    DAT_HANDLE_TYPE type = 0;
    long i;

    for (i = 0; i < n; i++)
        BENCH_OK("provider get_handle_type_func", DAT_HANDLE_TO_PROVIDER(h)->get_handle_type_func(h, &type));
    if (type != DAT_HANDLE_TYPE_PZ)
        bench_die("get_handle_type_func: stub PZ not reported as a PZ");
}

static void pzq_loop_dat(void *p, long n)
{
    DAT_PZ_HANDLE h = p;
    DAT_PZ_PARAM param;
    long i;

    for (i = 0; i < n; i++)
        BENCH_OK("dat_pz_query (stub PZ)", dat_pz_query(h, DAT_PZ_FIELD_ALL, &param));
}

static void pzq_loop_direct(void *p, long n)
{
    DAT_PZ_HANDLE h = p;
    DAT_PZ_PARAM param;
    long i;

    for (i = 0; i < n; i++)
        BENCH_OK("provider pz_query_func", DAT_HANDLE_TO_PROVIDER(h)->pz_query_func(h, DAT_PZ_FIELD_ALL, &param));
}

static void pair(const char *what, bench_loop via_dat, bench_loop direct, void *h)
{
    char name[64];
    double d, b;
    long n;

    n = bench_calibrate(via_dat, h, BENCH_REP_SECONDS);
    d = bench_ns(via_dat, h, n);
    b = bench_ns(direct, h, n);
    snprintf(name, sizeof(name), "%s via libdat", what);
    table_row(name, d, "ns", b, "", VERDICT_NONE);
    snprintf(name, sizeof(name), "%s: added by libdat", what);
    table_row(name, d - b, "ns", BENCH_NONE, "<= 100 ns", bench_at_most(d - b, 100));
}

void bench_dispatch(const char *stub_ia_name)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_PROVIDER *prov;

    BENCH_OK("dat_ia_open (stub provider)", dat_ia_open(stub_ia_name, 8, &async_evd, &ia));
    BENCH_OK("dat_pz_create (stub provider)", dat_pz_create(ia, &pz));
    prov = DAT_HANDLE_TO_PROVIDER(pz);
    if (prov == NULL || prov->device_name == NULL || strcmp(prov->device_name, stub_ia_name) != 0)
        bench_die("stub PZ does not carry the stub provider's table");

    table_section("4. third-party dispatch: cheap calls on a PZ of the C stub provider, ns per call\n"
                  "   baseline: the same slot called directly, DAT_HANDLE_TO_PROVIDER(pz)->slot(...)");
    pair("dat_get_handle_type", ght_loop_dat, ght_loop_direct, pz);
    pair("dat_pz_query", pzq_loop_dat, pzq_loop_direct, pz);

    BENCH_OK("dat_pz_free (stub provider)", dat_pz_free(pz));
    BENCH_OK("dat_ia_close (stub provider)", dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}
