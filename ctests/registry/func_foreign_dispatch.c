/*
 * Dispatch of calls on third-party provider handles (FHD).
 *
 * A handle that is not one of libdat's own is handed to the DAT_PROVIDER
 * table named by its first word, if that word can be read without faulting
 * and names a registered provider table; anything else is
 * DAT_INVALID_HANDLE, never a crash (abi-functions §4, rulings rule 1).
 *
 * The provider is the stub (stub_provider.c, compiled in with
 * STUB_EMBEDDED), registered by the test itself. Cases:
 *   - calls on stub handles reach the stub and return its results;
 *   - a pointer into an unmapped page, into a PROT_NONE page, a word that
 *     runs into an unmapped page, and readable words that name no
 *     registered table are all DAT_INVALID_HANDLE;
 *   - memory that held a handle is not trusted after its provider is
 *     removed (the page may be unmapped afterwards);
 *   - dispatch from several threads while providers come and go;
 *   - the same again in a process where a seccomp filter makes
 *     process_vm_readv fail with EPERM or ENOSYS (installed before the
 *     first DAT call, or after libdat has already checked handles), and
 *     in a child forked from such a process.
 * Every case runs in its own forked child (ctest.h), so a seccomp filter
 * stays in the case that installs it.
 */
#include "ctest.h"

#define STUB_EMBEDDED 1
#include "stub_provider.c"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#if defined(__x86_64__)
#define FHD_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FHD_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef DAT_HANDLE_TO_PROVIDER
#define DAT_HANDLE_TO_PROVIDER(h) (*(DAT_PROVIDER **)(h))
#endif

#define HANDLE1_INVALID ((DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_HANDLE | DAT_INVALID_HANDLE1))

/* ---- helpers ------------------------------------------------------------ */

static DAT_PROVIDER_INFO info_of(const char *name)
{
    DAT_PROVIDER_INFO i;

    memset(&i, 0, sizeof(i));
    snprintf(i.ia_name, sizeof(i.ia_name), "%s", name);
    i.dapl_version_major = 1;
    i.dapl_version_minor = 2;
    i.is_thread_safe = DAT_FALSE;
    return i;
}

/* Register a stub table under `name` (DAT_OVERRIDE /dev/null first); a
 * second call for the same name finds it registered. */
static DAT_PROVIDER *add_stub(const char *name)
{
    DAT_PROVIDER_INFO info = info_of(name);
    DAT_PROVIDER *p = stub_make_table(&info, NULL);
    DAT_RETURN r;

    setenv("DAT_OVERRIDE", "/dev/null", 1);
    if (p == NULL)
        return NULL;
    r = dat_registry_add_provider(p, &info);
    if (r != DAT_SUCCESS && DAT_GET_TYPE(r) != DAT_PROVIDER_ALREADY_REGISTERED)
        return NULL;
    return p;
}

static long page_size(void)
{
    return sysconf(_SC_PAGESIZE);
}

/* A fresh read-write anonymous mapping of `pages` pages. */
static char *map_pages(int pages)
{
    void *p = mmap(NULL, (size_t)pages * (size_t)page_size(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : (char *)p;
}

/* Makes process_vm_readv fail with `err` in this process; 1 on success. */
static int block_process_vm_readv(int err)
{
#ifdef FHD_AUDIT_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FHD_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {
        .len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
        .filter = filter,
    };
    long x = 1, y = 0;
    struct iovec local = {&y, sizeof(y)}, remote = {&x, sizeof(x)};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("prctl(PR_SET_NO_NEW_PRIVS)");
        return 0;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("prctl(PR_SET_SECCOMP)");
        return 0;
    }
    /* The filter really is in force. */
    errno = 0;
    if (syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L) != -1 ||
        errno != err) {
        fprintf(stderr, "    process_vm_readv not blocked (errno %d)\n", errno);
        return 0;
    }
    return 1;
#else
    (void)err;
    return 0;
#endif
}

#ifdef FHD_AUDIT_ARCH
#define REQUIRE_SECCOMP(err) REQUIRE(block_process_vm_readv(err))
#else
#define REQUIRE_SECCOMP(err) SKIP("no seccomp architecture value for this CPU in this test")
#endif

/* ---- bodies (run plain and under seccomp) ------------------------------ */

/* Calls on live stub handles reach the stub and return its answers. */
static void body_dispatch(void)
{
    DAT_PROVIDER *p = add_stub("stub0");
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_PZ_PARAM param;
    DAT_HANDLE_TYPE type = (DAT_HANDLE_TYPE)-1;
    DAT_CONTEXT ctx;
    DAT_IA_ATTR attr;
    int i, bad = 0;

    REQUIRE(p != NULL);
    CHECK_OK(dat_ia_open("stub0", 8, &evd, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(DAT_HANDLE_TO_PROVIDER(ia) == p);
    CHECK_OK(dat_pz_create(ia, &pz));
    CHECK(stub_pz_create_calls == 1);
    REQUIRE(pz != DAT_HANDLE_NULL);

    /* Many times: the first call checks the handle, later ones hit the cache. */
    for (i = 0; i < 1000; i++) {
        memset(&param, 0, sizeof(param));
        if (dat_pz_query(pz, DAT_PZ_FIELD_ALL, &param) != DAT_SUCCESS || param.ia_handle != ia)
            bad++;
    }
    CHECK(bad == 0);
    CHECK(stub_pz_query_calls == 1000);
    /* The stub's own parameter check comes back unchanged. */
    CHECK_SUB(dat_pz_query(pz, DAT_PZ_FIELD_ALL, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);

    CHECK_OK(dat_get_handle_type(pz, &type));
    CHECK(type == DAT_HANDLE_TYPE_PZ);
    CHECK_OK(dat_get_handle_type(ia, &type));
    CHECK(type == DAT_HANDLE_TYPE_IA);
    memset(&ctx, 0, sizeof(ctx));
    ctx.as_64 = 0x1122334455667788ULL;
    CHECK_OK(dat_set_consumer_context(pz, ctx));
    ctx.as_64 = 0;
    CHECK_OK(dat_get_consumer_context(pz, &ctx));
    CHECK(ctx.as_64 == 0x1122334455667788ULL);
    CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &attr, 0, NULL));
    CHECK(strcmp(attr.adapter_name, "stub0") == 0);
    /* A slot the stub does not implement answers through the table too. */
    CHECK_RET(dat_cno_free((DAT_CNO_HANDLE)ia), DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED);
    CHECK(strcmp(stub_last_unimpl, "cno_free") == 0);

    CHECK_OK(dat_pz_free(pz));
    CHECK(stub_pz_free_calls == 1);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(stub_ia_close_calls == 1);
}

static uint64_t not_a_table_words[4];

/* Garbage handles: DAT_INVALID_HANDLE, nothing reaches the stub, no crash. */
static void body_garbage(void)
{
    DAT_PROVIDER *p = add_stub("stub0");
    DAT_PROVIDER_INFO other_info = info_of("unregistered");
    DAT_PROVIDER *other = stub_make_table(&other_info, NULL);
    long ps = page_size();
    char *m = map_pages(3);
    DAT_HANDLE_TYPE type;
    DAT_HANDLE h[8];
    int i, n = 0;
    int calls_before = stub_pz_query_calls + stub_get_handle_type_calls + stub_ia_close_calls +
                       stub_unimpl_calls;

    REQUIRE(p != NULL && other != NULL && m != NULL);
    /* Page 0 readable, page 1 PROT_NONE, page 2 unmapped. */
    REQUIRE(mprotect(m + ps, (size_t)ps, PROT_NONE) == 0);
    REQUIRE(munmap(m + 2 * ps, (size_t)ps) == 0);
    memset(m, 0x5A, (size_t)ps);
    /* The last 4 readable bytes of page 0 hold half of p. */
    memcpy(m + ps - 4, &p, 4);

    not_a_table_words[0] = 0x123456789abcdef0ULL;
    not_a_table_words[1] = (uint64_t)(uintptr_t)&not_a_table_words[1];
    not_a_table_words[2] = (uint64_t)(uintptr_t)other; /* a table, not registered */
    not_a_table_words[3] = (uint64_t)(uintptr_t)p + 8; /* near a registered one */

    h[n++] = m + 2 * ps;       /* unmapped page */
    h[n++] = m + 2 * ps + 64;  /* unmapped page */
    h[n++] = m + ps;           /* PROT_NONE page */
    h[n++] = m + ps - 4;       /* 4 bytes readable, then PROT_NONE */
    h[n++] = &not_a_table_words[0];
    h[n++] = &not_a_table_words[1];
    h[n++] = &not_a_table_words[2];
    h[n++] = &not_a_table_words[3];
    for (i = 0; i < n; i++) {
        CHECK_SUB(dat_pz_query(h[i], 0, NULL), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
        CHECK_TYPE(dat_get_handle_type(h[i], &type), DAT_INVALID_HANDLE);
        CHECK_TYPE(dat_ia_close(h[i], DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
        CHECK_TYPE(dat_evd_free(h[i]), DAT_INVALID_HANDLE);
        /* Twice: nothing about a rejected handle is remembered as good. */
        CHECK_SUB(dat_pz_query(h[i], 0, NULL), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    }
    /* Nothing reached the stub. */
    CHECK(stub_pz_query_calls + stub_get_handle_type_calls + stub_ia_close_calls +
              stub_unimpl_calls ==
          calls_before);
    munmap(m, 2 * (size_t)ps);
}

/*
 * A readable page holding a word that names the stub table is dispatched
 * (the stub itself answers, since no live object is there); its neighbour
 * word naming nothing is not. After the provider is removed and the page
 * unmapped, the same addresses are DAT_INVALID_HANDLE without a crash.
 */
static void body_forget_on_remove(void)
{
    DAT_PROVIDER_INFO info = info_of("stub0");
    DAT_PROVIDER *p = add_stub("stub0");
    long ps = page_size();
    char *m = map_pages(1);
    DAT_HANDLE_TYPE type;
    int i;

    REQUIRE(p != NULL && m != NULL);
    memset(m, 0, (size_t)ps);
    memcpy(m, &p, sizeof(p));
    memcpy(m + 128, &p, sizeof(p));
    memset(m + 64, 0x77, 8);

    for (i = 0; i < 3; i++) {
        CHECK_SUB(dat_get_handle_type(m, &type), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
        CHECK_SUB(dat_get_handle_type(m + 128, &type), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
        CHECK_TYPE(dat_get_handle_type(m + 64, &type), DAT_INVALID_HANDLE);
    }
    CHECK(stub_get_handle_type_calls == 6); /* the stub answered m and m+128 */

    CHECK_OK(dat_registry_remove_provider(p, &info));
    CHECK_TYPE(dat_get_handle_type(m, &type), DAT_INVALID_HANDLE);
    CHECK(stub_get_handle_type_calls == 6);
    REQUIRE(munmap(m, (size_t)ps) == 0);
    CHECK_TYPE(dat_get_handle_type(m, &type), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_get_handle_type(m + 128, &type), DAT_INVALID_HANDLE);
    CHECK(stub_get_handle_type_calls == 6);

    /* Registered again: a fresh object is dispatched as before. */
    m = map_pages(1);
    REQUIRE(m != NULL);
    memcpy(m + 256, &p, sizeof(p));
    CHECK_OK(dat_registry_add_provider(p, &info));
    CHECK_SUB(dat_get_handle_type(m + 256, &type), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1);
    CHECK(stub_get_handle_type_calls == 7);
    munmap(m, (size_t)ps);
}

struct churn_arg {
    DAT_PZ_HANDLE pz;
    DAT_IA_HANDLE ia;
    int bad;
};

static void *churn_caller(void *a)
{
    struct churn_arg *arg = a;
    DAT_PZ_PARAM param;
    DAT_HANDLE_TYPE type;
    int i;

    for (i = 0; i < 20000; i++) {
        memset(&param, 0, sizeof(param));
        if (dat_pz_query(arg->pz, DAT_PZ_FIELD_ALL, &param) != DAT_SUCCESS ||
            param.ia_handle != arg->ia)
            arg->bad++;
        if (dat_get_handle_type(&not_a_table_words[0], &type) != HANDLE1_INVALID)
            arg->bad++;
    }
    return NULL;
}

/* Several threads dispatch while another provider is added and removed. */
static void body_threads(void)
{
    DAT_PROVIDER_INFO info1 = info_of("stub1");
    DAT_PROVIDER *p1;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    struct churn_arg args[4];
    pthread_t th[4];
    int i, started = 0, churn_bad = 0;

    REQUIRE(add_stub("stub0") != NULL);
    p1 = stub_make_table(&info1, NULL);
    REQUIRE(p1 != NULL);
    CHECK_OK(dat_ia_open("stub0", 8, &evd, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK_OK(dat_pz_create(ia, &pz));
    REQUIRE(pz != DAT_HANDLE_NULL);
    not_a_table_words[0] = 0x0badf00d0badf00dULL;

    for (i = 0; i < 4; i++) {
        args[i].pz = pz;
        args[i].ia = ia;
        args[i].bad = 0;
        if (pthread_create(&th[i], NULL, churn_caller, &args[i]) == 0)
            started++;
    }
    CHECK(started == 4);
    for (i = 0; i < 2000; i++) {
        if (dat_registry_add_provider(p1, &info1) != DAT_SUCCESS)
            churn_bad++;
        if (dat_registry_remove_provider(p1, &info1) != DAT_SUCCESS)
            churn_bad++;
    }
    CHECK(churn_bad == 0);
    for (i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].bad == 0);
    }
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

/* ---- FHD: plain process -------------------------------------------------- */

TEST(FHD_01_stub_handles_dispatch_to_the_stub)
{
    body_dispatch();
}

TEST(FHD_02_garbage_handles_are_invalid)
{
    body_garbage();
}

TEST(FHD_03_memory_not_trusted_after_provider_removed)
{
    body_forget_on_remove();
}

TEST(FHD_04_threads_dispatch_while_providers_change)
{
    body_threads();
}

/* ---- FHD: process_vm_readv refused by seccomp --------------------------- */

TEST(FHD_11_seccomp_eperm_dispatch)
{
    REQUIRE_SECCOMP(EPERM);
    body_dispatch();
}

TEST(FHD_12_seccomp_eperm_garbage_handles_are_invalid)
{
    REQUIRE_SECCOMP(EPERM);
    body_garbage();
}

TEST(FHD_13_seccomp_eperm_memory_not_trusted_after_provider_removed)
{
    REQUIRE_SECCOMP(EPERM);
    body_forget_on_remove();
}

TEST(FHD_14_seccomp_eperm_threads)
{
    REQUIRE_SECCOMP(EPERM);
    body_threads();
}

TEST(FHD_15_seccomp_enosys_dispatch_and_garbage)
{
    REQUIRE_SECCOMP(ENOSYS);
    body_dispatch();
    body_garbage();
}

/* The filter arrives after libdat has already checked handles its usual way. */
TEST(FHD_16_seccomp_installed_after_first_use)
{
    DAT_HANDLE_TYPE type;

    CHECK_TYPE(dat_get_handle_type(&not_a_table_words[0], &type), DAT_INVALID_HANDLE);
    REQUIRE_SECCOMP(EPERM);
    body_garbage();
    body_dispatch();
}

/* A child forked after the fallback started checks handles on its own pipe. */
TEST(FHD_17_seccomp_fork_child_and_parent_check_concurrently)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_HANDLE_TYPE type;
    char *m = map_pages(1);
    pid_t pid;
    int i, bad = 0, status = 0;

    REQUIRE(m != NULL);
    REQUIRE(munmap(m, (size_t)page_size()) == 0);
    REQUIRE_SECCOMP(EPERM);
    REQUIRE(add_stub("stub0") != NULL);
    CHECK_OK(dat_ia_open("stub0", 8, &evd, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    /* Uses the fallback's pipe before the fork. */
    CHECK_TYPE(dat_get_handle_type(m, &type), DAT_INVALID_HANDLE);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    REQUIRE(pid >= 0);
    for (i = 0; i < 3000; i++) {
        /* Uncached every time: each goes through the pipe. */
        if (dat_get_handle_type(m + (i % 64) * 8, &type) != HANDLE1_INVALID)
            bad++;
        not_a_table_words[1] = (uint64_t)i;
        if (dat_get_handle_type(&not_a_table_words[1], &type) != HANDLE1_INVALID)
            bad++;
        if (dat_get_handle_type(ia, &type) != DAT_SUCCESS || type != DAT_HANDLE_TYPE_IA)
            bad++;
    }
    if (pid == 0)
        _exit(bad == 0 ? 0 : 1);
    CHECK(bad == 0);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
