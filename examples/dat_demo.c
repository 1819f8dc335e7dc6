/*
 * dat_demo: a small uDAPL 1.2 program that touches what works without a
 * connection: it opens an IA, queries it, registers memory, posts and
 * dequeues software events (directly and through a CNO), and prints what it
 * did. Build: cc -Iinclude dat_demo.c -ldat
 * Usage: dat_demo [IA name]   (default: the first IA the registry lists)
 */
#include <dat/udat.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(const char *what, DAT_RETURN ret)
{
    const char *major = "?", *minor = "?";
    if (ret == DAT_SUCCESS) {
        printf("  %-44s ok\n", what);
        return 0;
    }
    dat_strerror(ret, &major, &minor);
    printf("  %-44s FAILED 0x%08x %s %s\n", what, (unsigned)ret, major, minor);
    return 1;
}

int main(int argc, char **argv)
{
    DAT_PROVIDER_INFO infos[16], *list[16];
    DAT_COUNT n = 0, nmore = 0;
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, evd;
    DAT_CNO_HANDLE cno;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lmr_ctx;
    DAT_RMR_CONTEXT rmr_ctx;
    DAT_VLEN reg_len;
    DAT_VADDR reg_addr;
    DAT_REGION_DESCRIPTION region;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR prov_attr;
    DAT_EVENT ev;
    const char *major, *minor;
    char addr[64] = "?";
    static const char *msgs[] = { "first", "second", "third" };
    char *buf;
    const char *name;
    int i, failures = 0;

    printf("Registry:\n");
    for (i = 0; i < 16; i++)
        list[i] = &infos[i];
    failures += check("dat_registry_list_providers", dat_registry_list_providers(16, &n, list));
    for (i = 0; i < n; i++)
        printf("    %-24s DAT %u.%u %s\n", infos[i].ia_name, infos[i].dapl_version_major,
               infos[i].dapl_version_minor, infos[i].is_thread_safe ? "threadsafe" : "nonthreadsafe");
    name = argc > 1 ? argv[1] : (n > 0 ? infos[0].ia_name : "tcp0");

    printf("Interface adapter \"%s\":\n", name);
    if (check("dat_ia_open", dat_ia_open(name, 16, &async_evd, &ia)))
        return 1;
    failures += check("dat_ia_query", dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr,
                                                   DAT_PROVIDER_FIELD_ALL, &prov_attr));
    if (ia_attr.ia_address_ptr != NULL && ia_attr.ia_address_ptr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)ia_attr.ia_address_ptr)->sin_addr,
                  addr, sizeof(addr));
    printf("    adapter %s, address %s, provider %s %u.%u (DAT %u.%u)\n", ia_attr.adapter_name, addr,
           prov_attr.provider_name, prov_attr.provider_version_major,
           prov_attr.provider_version_minor, prov_attr.dapl_version_major,
           prov_attr.dapl_version_minor);
    printf("    max EVD qlen %d, max LMRs %d, max PZs %d, max message %llu bytes\n",
           ia_attr.max_evd_qlen, ia_attr.max_lmrs, ia_attr.max_pzs,
           (unsigned long long)ia_attr.max_message_size);

    printf("Memory registration:\n");
    failures += check("dat_pz_create", dat_pz_create(ia, &pz));
    buf = malloc(1 << 16);
    memset(buf, 0x5a, 1 << 16);
    region.for_va = buf;
    failures += check("dat_lmr_create (64 KiB, all privileges)",
                      dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, 1 << 16, pz,
                                     DAT_MEM_PRIV_ALL_FLAG, &lmr, &lmr_ctx, &rmr_ctx, &reg_len,
                                     &reg_addr));
    printf("    lmr_context 0x%x, rmr_context 0x%x, registered %llu bytes at %p\n", lmr_ctx,
           rmr_ctx, (unsigned long long)reg_len, (void *)(unsigned long)reg_addr);

    printf("Software events:\n");
    failures += check("dat_cno_create", dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno));
    failures += check("dat_evd_create (software, qlen 8, CNO)",
                      dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evd));
    for (i = 0; i < 3; i++) {
        memset(&ev, 0, sizeof(ev));
        ev.event_number = DAT_SOFTWARE_EVENT;
        ev.event_data.software_event_data.pointer = (DAT_PVOID)msgs[i];
        failures += check("dat_evd_post_se", dat_evd_post_se(evd, &ev));
    }
    {
        DAT_EVD_HANDLE hint = DAT_HANDLE_NULL;
        failures += check("dat_cno_wait (1 s)", dat_cno_wait(cno, 1000000, &hint));
        printf("    CNO woke up for EVD %p\n", hint);
    }
    failures += check("dat_evd_dequeue", dat_evd_dequeue(evd, &ev));
    printf("    got \"%s\"\n", (const char *)ev.event_data.software_event_data.pointer);
    failures += check("dat_evd_wait (threshold 2)", dat_evd_wait(evd, 1000000, 2, &ev, &nmore));
    printf("    got \"%s\", %d more queued\n",
           (const char *)ev.event_data.software_event_data.pointer, nmore);
    failures += check("dat_evd_wait (threshold 1)", dat_evd_wait(evd, 1000000, 1, &ev, &nmore));
    printf("    got \"%s\", %d more queued\n",
           (const char *)ev.event_data.software_event_data.pointer, nmore);
    {
        DAT_RETURN r = dat_evd_dequeue(evd, &ev);
        dat_strerror(r, &major, &minor);
        printf("    dequeue on the empty EVD: 0x%08x %s\n", (unsigned)r, major);
    }

    printf("Teardown:\n");
    failures += check("dat_evd_free", dat_evd_free(evd));
    failures += check("dat_cno_free", dat_cno_free(cno));
    failures += check("dat_lmr_free", dat_lmr_free(lmr));
    failures += check("dat_pz_free", dat_pz_free(pz));
    failures += check("dat_ia_close (graceful)", dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(buf);
    printf("%s\n", failures == 0 ? "demo finished: every call succeeded" : "demo finished with failures");
    return failures == 0 ? 0 : 1;
}
