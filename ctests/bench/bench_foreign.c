/*
 * bench_foreign: cost of a call on a third-party provider's handle through
 * libdat against the same call made through the provider's DAT_PROVIDER
 * table directly. The provider is the registry tests' stub, built in.
 * Prints nanoseconds per call; a timing, not a test.
 */
#define STUB_EMBEDDED 1
#include "../registry/stub_provider.c"

#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    DAT_PROVIDER_INFO info;
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_HANDLE_TYPE type;
    double t, direct, via;
    int i, n = 2000000;

    unsetenv("STUB_LOG");
    setenv("DAT_OVERRIDE", "/dev/null", 1);
    memset(&info, 0, sizeof(info));
    snprintf(info.ia_name, sizeof(info.ia_name), "stub0");
    info.dapl_version_major = 1;
    info.dapl_version_minor = 2;
    p = stub_make_table(&info, NULL);
    if (p == NULL || dat_registry_add_provider(p, &info) != DAT_SUCCESS ||
        dat_ia_open("stub0", 8, &evd, &ia) != DAT_SUCCESS ||
        dat_pz_create(ia, &pz) != DAT_SUCCESS) {
        fprintf(stderr, "bench_foreign: setup failed\n");
        return 1;
    }

    t = now();
    for (i = 0; i < n; i++)
        p->pz_query_func(pz, 0, NULL);
    direct = (now() - t) * 1e9 / n;
    t = now();
    for (i = 0; i < n; i++)
        dat_pz_query(pz, 0, NULL);
    via = (now() - t) * 1e9 / n;
    printf("stub pz_query: table %6.1f ns/call, libdat %6.1f ns/call (+%.1f)\n", direct, via,
           via - direct);

    t = now();
    for (i = 0; i < n; i++)
        p->get_handle_type_func(ia, &type);
    direct = (now() - t) * 1e9 / n;
    t = now();
    for (i = 0; i < n; i++)
        dat_get_handle_type(ia, &type);
    via = (now() - t) * 1e9 / n;
    printf("stub get_handle_type: table %6.1f ns/call, libdat %6.1f ns/call (+%.1f)\n", direct,
           via, via - direct);

    t = now();
    for (i = 0; i < n; i++)
        dat_get_handle_type((DAT_HANDLE)&info, &type);
    printf("dat_get_handle_type on readable non-handle memory %6.1f ns/call\n",
           (now() - t) * 1e9 / n);

    dat_pz_free(pz);
    dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    dat_registry_remove_provider(p, &info);
    return 0;
}
