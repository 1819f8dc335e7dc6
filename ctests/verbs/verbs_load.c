/*
 * The verbs transport on any machine (issue 19's tests that need no RDMA):
 * a verbs IA "stub0" from a dat.conf (DAT_OVERRIDE)
 *
 *   stub0 u1.2 nonthreadsafe default libdat.so.1 dat.1.2
 *         "transport=verbs device=stub0 port=1 netdev=lo" ""
 *
 * opened with rdma-core absent (DAT_VERBS_LIBDIR names a directory without
 * it), with the stub libraries of tests/stub-verbs/ and no device
 * (STUB_VERBS=nodev), and with a stub device that has neither memory
 * windows nor SRQs (STUB_VERBS=nomw).
 *
 * The libraries are loaded once per process and the answer kept; every
 * case runs in its own process (ctest.h), which sets the environment before
 * its first DAT call.
 */
#include "ctest.h"
#include "pair.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>

#ifndef STUB_VERBS_DIR
#error "STUB_VERBS_DIR (the directory of the stub libraries) must be defined"
#endif

#define IA_NAME "stub0"
#define CONF_LINE                                                                              \
    "stub0 u1.2 nonthreadsafe default libdat.so.1 dat.1.2 "                                    \
    "\"transport=verbs device=stub0 port=1 netdev=lo\" \"\"\n"
#define NOT_FOUND ((DAT_RETURN)(DAT_CLASS_ERROR | DAT_PROVIDER_NOT_FOUND))
#define NOT_SUPPORTED ((DAT_RETURN)(DAT_CLASS_ERROR | DAT_MODEL_NOT_SUPPORTED))

static char tdir[256];

static int file_in_tdir(char *out, size_t len, const char *name)
{
    return snprintf(out, len, "%s/%s", tdir, name) < (int)len;
}

/* A fresh temp dir with the dat.conf; DAT_OVERRIDE names it. The
 * diagnostics at their default level, on stderr. */
static int setup(const char *libdir, const char *mode)
{
    const char *tmp = getenv("TMPDIR");
    char conf[512];
    FILE *f;

    snprintf(tdir, sizeof(tdir), "%s/ctest_verbs_XXXXXX",
             (tmp != NULL && tmp[0] != '\0') ? tmp : "/tmp");
    if (mkdtemp(tdir) == NULL || !file_in_tdir(conf, sizeof(conf), "dat.conf"))
        return 0;
    f = fopen(conf, "w");
    if (f == NULL)
        return 0;
    fputs(CONF_LINE, f);
    fclose(f);
    setenv("DAT_OVERRIDE", conf, 1);
    setenv("DAT_VERBS_LIBDIR", libdir, 1);
    if (mode != NULL)
        setenv("STUB_VERBS", mode, 1);
    else
        unsetenv("STUB_VERBS");
    unsetenv("STUB_VERBS_REPORT");
    unsetenv("DAT_LOG");
    unsetenv("DAT_DBG_TYPE");
    unsetenv("DAT_DBG_DEST");
    return 1;
}

static void cleanup(void)
{
    char p[512];

    if (file_in_tdir(p, sizeof(p), "dat.conf"))
        unlink(p);
    if (file_in_tdir(p, sizeof(p), "stderr"))
        unlink(p);
    if (file_in_tdir(p, sizeof(p), "report"))
        unlink(p);
    rmdir(tdir);
}

/* stderr into tdir/stderr until capture_end, which reads it into buf. */
static int saved_stderr = -1;

static int capture_begin(void)
{
    char p[512];
    int fd;

    if (!file_in_tdir(p, sizeof(p), "stderr"))
        return 0;
    fflush(stderr);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    saved_stderr = dup(2);
    if (fd < 0 || saved_stderr < 0 || dup2(fd, 2) < 0)
        return 0;
    close(fd);
    return 1;
}

static void capture_end(char *buf, size_t len)
{
    char p[512];
    size_t n = 0;
    FILE *f;

    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    buf[0] = '\0';
    if (!file_in_tdir(p, sizeof(p), "stderr") || (f = fopen(p, "r")) == NULL)
        return;
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static int lines_containing(const char *text, const char *word)
{
    int n = 0;

    while (*text != '\0') {
        const char *end = strchr(text, '\n');
        size_t len = end != NULL ? (size_t)(end - text) : strlen(text);
        if (memmem(text, len, word, strlen(word)) != NULL)
            n++;
        text += len + (end != NULL);
    }
    return n;
}

static int count_lines(const char *text)
{
    int n = 0;

    for (; *text != '\0'; text++)
        n += *text == '\n';
    return n;
}

/* The stub libibverbs if this process has it loaded (NULL otherwise). */
static void *stub_loaded(void)
{
    return dlopen(STUB_VERBS_DIR "/libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
}

/* A Send from the client to a Receive posted by the server over tcp0. */
static void tcp0_exchange(void)
{
    static char msg[64];
    DAT_REGION_DESCRIPTION r;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    DAT_VLEN rlen;
    DAT_VADDR raddr;
    DAT_LMR_TRIPLET iov;
    DAT_DTO_COOKIE ck;
    DAT_EVENT ev;
    struct pair p;

    setenv("DAT_TEST_IA", "tcp0", 1);
    REQUIRE(pair_start(&p) == 0);
    r.for_va = msg;
    REQUIRE(dat_lmr_create(p.ia, DAT_MEM_TYPE_VIRTUAL, r, sizeof(msg), p.pz,
                           DAT_MEM_PRIV_ALL_FLAG, &lmr, &lctx, &rctx, &rlen, &raddr) ==
            DAT_SUCCESS);
    iov.lmr_context = lctx;
    iov.pad = 0;
    iov.virtual_address = (DAT_VADDR)(uintptr_t)msg;
    iov.segment_length = sizeof(msg);
    ck.as_64 = 5;
    if (p.server) {
        memset(msg, 0, sizeof(msg));
        REQUIRE(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, NULL, &p.ep) ==
                DAT_SUCCESS);
        CHECK_OK(dat_ep_post_recv(p.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG));
        REQUIRE(pair_wait(p.cr_evd, &ev) == DAT_SUCCESS);
        REQUIRE(ev.event_number == DAT_CONNECTION_REQUEST_EVENT);
        CHECK_OK(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, p.ep, 0, NULL));
        REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        REQUIRE(pair_wait(p.recv_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        CHECK(ev.event_data.dto_completion_event_data.transfered_length == 12);
        ctest_handover(msg, sizeof(msg));
        CHECK(memcmp(msg, "over tcp0 ok", 12) == 0);
    } else {
        memcpy(msg, "over tcp0 ok", 12);
        iov.segment_length = 12;
        REQUIRE(pair_connect(&p, NULL) == 0);
        CHECK_OK(dat_ep_post_send(p.ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG));
        REQUIRE(pair_wait(p.req_evd, &ev) == DAT_SUCCESS);
        CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
        CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
    }
    /* Both completions seen before either side goes. */
    CHECK(pair_sync(&p, 'd') == 0);
    pair_finish(&p);
}

/* tcp0_exchange with failures counted from zero (the server process it
 * forks inherits the count and reports failure if it is not zero). */
static void tcp0_send_recv(void)
{
    int before = ctest_failures;

    ctest_failures = 0;
    tcp0_exchange();
    ctest_failures += before;
}

TEST(VLOAD_01_libraries_absent)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_RETURN first, second;
    char err[4096];

    REQUIRE(setup("/nonexistent", NULL));
    REQUIRE(capture_begin());
    first = dat_ia_open(IA_NAME, 8, &evd, &ia);
    second = dat_ia_open(IA_NAME, 8, &evd, &ia);
    capture_end(err, sizeof(err));
    CHECK_RET(first, NOT_FOUND);
    CHECK_RET(second, NOT_FOUND);
    if (count_lines(err) != 1 || lines_containing(err, "libibverbs.so.1") != 1) {
        fprintf(stderr, "    want one line naming libibverbs.so.1 on stderr, got:\n%s", err);
        ctest_failures++;
    }
    tcp0_send_recv();
    cleanup();
}

TEST(VLOAD_02_no_devices)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_PROVIDER_INFO store[64], *list[64];
    DAT_COUNT n = 0, i;

    REQUIRE(setup(STUB_VERBS_DIR, "nodev"));
    CHECK_RET(dat_ia_open(IA_NAME, 8, &evd, &ia), NOT_FOUND);
    CHECK_RET(dat_ia_open(IA_NAME, 8, &evd, &ia), NOT_FOUND);
    /* The answer came from the (stub) libraries, not from before them. */
    CHECK(stub_loaded() != NULL);
    for (i = 0; i < 64; i++)
        list[i] = &store[i];
    CHECK_OK(dat_registry_list_providers(64, &n, list));
    for (i = 0; i < n && i < 64; i++) {
        if (strncmp(store[i].ia_name, "OpenIB-", 7) == 0) {
            fprintf(stderr, "    listed %s with no device\n", store[i].ia_name);
            ctest_failures++;
        }
    }
    cleanup();
}

/* The stub's own functions (stub.h), from the copy libdat loaded. */
struct stub_fns {
    int (*report)(void);
    void (*report_line)(char *, size_t);
    int (*mr_keys)(const void *, size_t, uint32_t *, uint32_t *);
};

static int stub_fns(struct stub_fns *f)
{
    void *h = stub_loaded();

    if (h == NULL)
        return 0;
    *(void **)&f->report = dlvsym(h, "stub_verbs_report", "STUB_VERBS_PRIVATE");
    *(void **)&f->report_line = dlvsym(h, "stub_verbs_report_line", "STUB_VERBS_PRIVATE");
    *(void **)&f->mr_keys = dlvsym(h, "stub_verbs_mr_keys", "STUB_VERBS_PRIVATE");
    return f->report != NULL && f->report_line != NULL && f->mr_keys != NULL;
}

TEST(VLOAD_03_device_without_windows_and_srqs)
{
    static char buf[8192];
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto_evd, conn_evd;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr_attr;
    DAT_PZ_HANDLE pz;
    DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    DAT_SRQ_ATTR srq_attr;
    DAT_REGION_DESCRIPTION r;
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lctx;
    DAT_RMR_CONTEXT rctx;
    DAT_VLEN rlen;
    DAT_VADDR raddr;
    DAT_EP_HANDLE ep;
    struct stub_fns stub;
    uint32_t lkey = 0, rkey = 0;
    char report[512], line[128] = "";
    int pd = -1, mr = -1;
    FILE *f;

    REQUIRE(setup(STUB_VERBS_DIR, "nomw"));
    REQUIRE(file_in_tdir(report, sizeof(report), "report"));
    setenv("STUB_VERBS_REPORT", report, 1);
    REQUIRE(dat_ia_open(IA_NAME, 8, &async_evd, &ia) == DAT_SUCCESS);
    REQUIRE(stub_fns(&stub));

    CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL,
                          &pr_attr));
    CHECK(ia_attr.max_rmrs == 0);
    CHECK(ia_attr.max_srqs == 0);
    CHECK(pr_attr.srq_supported == DAT_FALSE);

    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_RET(dat_rmr_create(pz, &rmr), NOT_SUPPORTED);
    srq_attr.max_recv_dtos = 8;
    srq_attr.max_recv_iov = 1;
    srq_attr.low_watermark = DAT_SRQ_LW_DEFAULT;
    CHECK_RET(dat_srq_create(ia, pz, &srq_attr, &srq), NOT_SUPPORTED);

    r.for_va = buf;
    REQUIRE(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, r, sizeof(buf), pz,
                           DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &lmr,
                           &lctx, &rctx, &rlen, &raddr) == DAT_SUCCESS);
    CHECK(stub.mr_keys(buf, sizeof(buf), &lkey, &rkey) == 0);
    CHECK(lctx == lkey);
    REQUIRE(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd) == DAT_SUCCESS);
    REQUIRE(dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd) ==
            DAT_SUCCESS);
    REQUIRE(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, NULL, &ep) == DAT_SUCCESS);

    /* The objects are the stub's. */
    stub.report_line(line, sizeof(line));
    CHECK(sscanf(line, "pd %d mr %d", &pd, &mr) == 2 && pd >= 1 && mr >= 1);
    /* The IA's device context is its own (ibv_open_device), not rdma_cm's:
     * a process forked after an IA was opened must not use its parent's. */
    CHECK(strstr(line, " ctx 1") != NULL);

    CHECK_OK(dat_ep_free(ep));
    CHECK_OK(dat_evd_free(conn_evd));
    CHECK_OK(dat_evd_free(dto_evd));
    CHECK_OK(dat_lmr_free(lmr));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));

    /* dat_ia_close freed everything the IA had of the device. */
    CHECK(stub.report() == 0);
    f = fopen(report, "r");
    REQUIRE(f != NULL);
    CHECK(fgets(line, sizeof(line), f) != NULL);
    fclose(f);
    if (strcmp(line, "pd 0 mr 0 cq 0 qp 0 ch 0 id 0 ctx 0\n") != 0) {
        fprintf(stderr, "    live after dat_ia_close: %s", line);
        ctest_failures++;
    }
    cleanup();
}

/* Registrations made by several threads at once are all usable: each
 * one's LMR context is accepted by a post (the device's table of keys
 * is copied and replaced on every registration; two at once must not
 * lose one). */
#define REG_THREADS 4
#define REG_EACH 48

struct reg_job {
    DAT_IA_HANDLE ia;
    DAT_PZ_HANDLE pz;
    char *base;
    DAT_LMR_HANDLE lmr[REG_EACH];
    DAT_LMR_CONTEXT ctx[REG_EACH];
    int failed;
};

static void *register_many(void *arg)
{
    struct reg_job *j = arg;
    int i;

    for (i = 0; i < REG_EACH; i++) {
        DAT_REGION_DESCRIPTION r;
        DAT_RMR_CONTEXT rctx;
        DAT_VLEN rlen;
        DAT_VADDR raddr;

        r.for_va = j->base + 64 * i;
        if (dat_lmr_create(j->ia, DAT_MEM_TYPE_VIRTUAL, r, 64, j->pz,
                           DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG,
                           &j->lmr[i], &j->ctx[i], &rctx, &rlen, &raddr) != DAT_SUCCESS)
            j->failed++;
    }
    return NULL;
}

TEST(VLOAD_04_registrations_from_several_threads_are_all_usable)
{
    static char buf[REG_THREADS][REG_EACH * 64];
    static struct reg_job job[REG_THREADS];
    pthread_t th[REG_THREADS];
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, dto_evd;
    DAT_PZ_HANDLE pz;
    DAT_EP_HANDLE ep;
    int t, i, refused = 0;

    REQUIRE(setup(STUB_VERBS_DIR, NULL));
    REQUIRE(dat_ia_open(IA_NAME, 8, &async_evd, &ia) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd) == DAT_SUCCESS);
    REQUIRE(dat_ep_create(ia, pz, dto_evd, dto_evd, DAT_HANDLE_NULL, NULL, &ep) == DAT_SUCCESS);
    for (t = 0; t < REG_THREADS; t++) {
        job[t].ia = ia;
        job[t].pz = pz;
        job[t].base = buf[t];
        REQUIRE(pthread_create(&th[t], NULL, register_many, &job[t]) == 0);
    }
    for (t = 0; t < REG_THREADS; t++)
        pthread_join(th[t], NULL);
    for (t = 0; t < REG_THREADS; t++) {
        CHECK(job[t].failed == 0);
        for (i = 0; i < REG_EACH; i++) {
            DAT_LMR_TRIPLET seg;
            DAT_DTO_COOKIE ck;
            DAT_EVENT ev;
            DAT_RETURN rc;

            seg.lmr_context = job[t].ctx[i];
            seg.virtual_address = (DAT_VADDR)(uintptr_t)(buf[t] + 64 * i);
            seg.segment_length = 8;
            ck.as_64 = (DAT_UINT64)(t * REG_EACH + i);
            rc = dat_ep_post_recv(ep, 1, &seg, ck, DAT_COMPLETION_DEFAULT_FLAG);
            if (rc != DAT_SUCCESS) {
                if (refused++ == 0)
                    fprintf(stderr, "    LMR %d of thread %d refused: %#x\n", i, t, rc);
                continue;
            }
            /* (the stub completes a receive at once) */
            CHECK_OK(dat_evd_dequeue(dto_evd, &ev));
            CHECK(ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS);
        }
    }
    CHECK(refused == 0);
    CHECK_OK(dat_ep_free(ep));
    for (t = 0; t < REG_THREADS; t++)
        for (i = 0; i < REG_EACH; i++)
            CHECK_OK(dat_lmr_free(job[t].lmr[i]));
    CHECK_OK(dat_evd_free(dto_evd));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    cleanup();
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
