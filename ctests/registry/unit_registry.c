/*
 * Registry unit tests: dat_registry_add_provider (RAP-01..10),
 * dat_registry_remove_provider (RRP-01..08), the registry side of
 * dat_ia_open / dat_ia_close (IAO-16, IAO-17, IAC-17 without dat.conf) and
 * dat_registry_list_providers (RLP-01..06, 10, 11).
 *
 * Spec: semantics-core.md §1.12, §2.1, §2.2, §2.37-§2.39; registry.md;
 * rulings.md (D18-D21, D24, RLP, rule 3 list: RAP-09).
 *
 * The provider registered here is built inside this program: the stub
 * provider's object model (stub_provider.c, compiled in with STUB_EMBEDDED)
 * gives a complete 70-slot DAT_PROVIDER table per key whose ia_open_func
 * records its arguments (stub_last_open_name/qlen/ro_aware).
 *
 * Every case points DAT_OVERRIDE at its own dat.conf before the first DAT
 * call: /dev/null (empty: only the built-in IAs) or a temp file (RLP).
 * Built-in IAs of this implementation: "tcp0" u1.2, then one per network
 * interface that is up and has an address, named after it, each registered
 * both nonthreadsafe and threadsafe; they are listed after the dat.conf
 * entries (rulings RLP). builtin_ias.h works out what this host's are.
 */
#include "ctest.h"
#include "builtin_ias.h"

#define STUB_EMBEDDED 1
#include "stub_provider.c"

#include <sys/stat.h>

#ifndef DAT_HANDLE_TO_PROVIDER
#define DAT_HANDLE_TO_PROVIDER(h) (*(DAT_PROVIDER **)(h))
#endif


/* Room for every registry entry a case lists (the built-in IAs of a host
 * with up to BUILTIN_IF_MAX interfaces, a few dat.conf entries, 3 spare). */
#define RLP_MAX (2 * (1 + BUILTIN_IF_MAX) + 8)

/* ---- helpers ------------------------------------------------------------ */

static DAT_PROVIDER_INFO info_of(const char *name, DAT_UINT32 major, DAT_UINT32 minor,
                                 DAT_BOOLEAN ts)
{
    DAT_PROVIDER_INFO i;

    memset(&i, 0, sizeof(i));
    snprintf(i.ia_name, sizeof(i.ia_name), "%s", name);
    i.dapl_version_major = major;
    i.dapl_version_minor = minor;
    i.is_thread_safe = ts;
    return i;
}

/* No dat.conf entries: only the built-in IAs exist. */
static void no_conf(void)
{
    setenv("DAT_OVERRIDE", "/dev/null", 1);
}

static char conf_dir[256];
static char conf_path[300];

/* Write `text` as this case's dat.conf and point DAT_OVERRIDE at it. */
static int write_conf(const char *text)
{
    const char *tmp = getenv("TMPDIR");
    FILE *f;

    snprintf(conf_dir, sizeof(conf_dir), "%s/ctest_reg_XXXXXX",
             (tmp != NULL && tmp[0] != '\0') ? tmp : "/tmp");
    if (mkdtemp(conf_dir) == NULL)
        return 0;
    snprintf(conf_path, sizeof(conf_path), "%s/dat.conf", conf_dir);
    f = fopen(conf_path, "w");
    if (f == NULL)
        return 0;
    fputs(text, f);
    fclose(f);
    setenv("DAT_OVERRIDE", conf_path, 1);
    return 1;
}

static void remove_conf(void)
{
    if (conf_path[0] != '\0')
        unlink(conf_path);
    if (conf_dir[0] != '\0')
        rmdir(conf_dir);
}

/* Build a stub table for the key and register it; returns the table. */
static DAT_PROVIDER *add_stub(const DAT_PROVIDER_INFO *info, const char *options)
{
    DAT_PROVIDER *p = stub_make_table(info, options);

    if (p == NULL)
        return NULL;
    if (dat_registry_add_provider(p, info) != DAT_SUCCESS)
        return NULL;
    return p;
}

/* Registry size through the max_to_return == 0 probe (-1 if it misbehaves). */
static DAT_COUNT registry_size(void)
{
    DAT_PROVIDER_INFO store[1];
    DAT_PROVIDER_INFO *list[1] = {&store[0]};
    DAT_COUNT n = -1;
    DAT_RETURN r = dat_registry_list_providers(0, &n, list);

    return r == (DAT_RETURN)(DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG1) ? n : -1;
}

static int info_is(const DAT_PROVIDER_INFO *i, const char *name, DAT_UINT32 major,
                   DAT_UINT32 minor, DAT_BOOLEAN ts)
{
    return memchr(i->ia_name, '\0', sizeof(i->ia_name)) != NULL &&
           strcmp(i->ia_name, name) == 0 && i->dapl_version_major == major &&
           i->dapl_version_minor == minor && i->is_thread_safe == ts;
}

/* ---- RAP: dat_registry_add_provider ------------------------------------ */

TEST(RAP_01_add_then_open_reaches_stub_ia_open)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    p = stub_make_table(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_registry_add_provider(p, &info));

    CHECK_OK(dat_ia_open("stub0", 8, &evd, &ia));
    CHECK(stub_ia_open_calls == 1);
    CHECK(strcmp(stub_last_open_name, "stub0") == 0);
    CHECK(stub_last_open_qlen == 8);
    CHECK(stub_last_open_ro_aware == 0);
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(evd != DAT_HANDLE_NULL);
    CHECK(DAT_HANDLE_TO_PROVIDER(ia) == p);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(stub_ia_close_calls == 1);
}

/* registry.md §4 steps 3 and 7: the prefix is stripped, the 5th argument is 1. */
TEST(RAP_01_ro_aware_prefix_reaches_stub_stripped)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    REQUIRE(add_stub(&info, NULL) != NULL);
    CHECK_OK(dat_ia_open("RO_AWARE_stub0", 8, &evd, &ia));
    CHECK(stub_ia_open_calls == 1);
    CHECK(strcmp(stub_last_open_name, "stub0") == 0);
    CHECK(stub_last_open_ro_aware == 1);
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(RAP_02_identical_key_twice_is_already_registered)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;

    no_conf();
    p = stub_make_table(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_registry_add_provider(p, &info));
    CHECK_TYPE(dat_registry_add_provider(p, &info), DAT_PROVIDER_ALREADY_REGISTERED);
    /* The first registration is intact. */
    CHECK_OK(dat_registry_remove_provider(p, &info));
    CHECK_TYPE(dat_registry_remove_provider(p, &info), DAT_INVALID_PARAMETER);
}

TEST(RAP_03_null_provider)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);

    no_conf();
    CHECK_RET(dat_registry_add_provider(NULL, &info), 0x80060024);
}

TEST(RAP_04_null_info)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;

    no_conf();
    p = stub_make_table(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_RET(dat_registry_add_provider(p, NULL), 0x80060025);
}

/* D18: the key is (name, major, minor, thread-safety). */
TEST(RAP_05_same_name_other_minor_is_a_separate_entry)
{
    DAT_PROVIDER_INFO i12 = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER_INFO i13 = info_of("stub0", 1, 3, DAT_FALSE);
    DAT_PROVIDER *p12, *p13;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    p12 = stub_make_table(&i12, NULL);
    p13 = stub_make_table(&i13, NULL);
    REQUIRE(p12 != NULL && p13 != NULL && p12 != p13);
    CHECK_OK(dat_registry_add_provider(p12, &i12));
    CHECK_OK(dat_registry_add_provider(p13, &i13));

    /* Remove 1.3: the 1.2 entry stays and opens through its own table. */
    CHECK_OK(dat_registry_remove_provider(p13, &i13));
    CHECK_OK(dat_ia_openv("stub0", 8, &evd, &ia, 1, 2, DAT_FALSE));
    if (ia != DAT_HANDLE_NULL) {
        CHECK(DAT_HANDLE_TO_PROVIDER(ia) == p12);
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    CHECK_TYPE(dat_registry_remove_provider(p13, &i13), DAT_INVALID_PARAMETER);

    /* Re-add 1.3, remove 1.2: the 1.3 entry stays. */
    CHECK_OK(dat_registry_add_provider(p13, &i13));
    CHECK_OK(dat_registry_remove_provider(p12, &i12));
    ia = DAT_HANDLE_NULL;
    evd = DAT_HANDLE_NULL;
    CHECK_OK(dat_ia_openv("stub0", 8, &evd, &ia, 1, 3, DAT_FALSE));
    if (ia != DAT_HANDLE_NULL) {
        CHECK(DAT_HANDLE_TO_PROVIDER(ia) == p13);
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    CHECK_OK(dat_registry_remove_provider(p13, &i13));
}

TEST(RAP_05_same_name_other_thread_safety_is_a_separate_entry)
{
    DAT_PROVIDER_INFO inf = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER_INFO int_ = info_of("stub0", 1, 2, DAT_TRUE);

    no_conf();
    REQUIRE(add_stub(&inf, NULL) != NULL);
    CHECK_OK(dat_registry_add_provider(stub_make_table(&int_, NULL), &int_));
}

TEST(RAP_06_add_remove_add)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    p = stub_make_table(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_registry_add_provider(p, &info));
    CHECK_OK(dat_registry_remove_provider(p, &info));
    CHECK_OK(dat_registry_add_provider(p, &info));
    CHECK_OK(dat_ia_open("stub0", 8, &evd, &ia));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(RAP_07_one_provider_two_names_both_openable)
{
    DAT_PROVIDER_INFO i0 = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER_INFO i1 = info_of("stub1", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p0, *p1;
    DAT_IA_HANDLE ia0 = DAT_HANDLE_NULL, ia1 = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE e0 = DAT_HANDLE_NULL, e1 = DAT_HANDLE_NULL;
    DAT_IA_ATTR a;

    no_conf();
    p0 = add_stub(&i0, NULL);
    p1 = add_stub(&i1, NULL);
    REQUIRE(p0 != NULL && p1 != NULL);

    CHECK_OK(dat_ia_open("stub0", 8, &e0, &ia0));
    CHECK(strcmp(stub_last_open_name, "stub0") == 0);
    CHECK_OK(dat_ia_open("stub1", 8, &e1, &ia1));
    CHECK(strcmp(stub_last_open_name, "stub1") == 0);
    REQUIRE(ia0 != DAT_HANDLE_NULL && ia1 != DAT_HANDLE_NULL);
    CHECK(ia0 != ia1);
    CHECK(DAT_HANDLE_TO_PROVIDER(ia0) == p0);
    CHECK(DAT_HANDLE_TO_PROVIDER(ia1) == p1);

    CHECK_OK(dat_ia_query(ia0, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
    CHECK(strcmp(a.adapter_name, "stub0") == 0);
    CHECK_OK(dat_ia_query(ia1, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
    CHECK(strcmp(a.adapter_name, "stub1") == 0);

    /* Independent: closing one leaves the other usable. */
    CHECK_OK(dat_ia_close(ia0, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(dat_ia_query(ia1, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(dat_registry_remove_provider(p0, &i0));
    CHECK_OK(dat_registry_remove_provider(p1, &i1));
}

TEST(RAP_08_thread_safety_mismatch_not_found)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    REQUIRE(add_stub(&info, NULL) != NULL);
    CHECK_TYPE(dat_ia_openv("stub0", 8, &evd, &ia, 1, 2, DAT_TRUE), DAT_PROVIDER_NOT_FOUND);
    CHECK(stub_ia_open_calls == 0);
}

/* rulings rule 3 list: the reference accepts an empty IA name. */
TEST(RAP_09_empty_name_accepted_once)
{
    DAT_PROVIDER_INFO info = info_of("", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;

    no_conf();
    p = stub_make_table(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_registry_add_provider(p, &info));
    CHECK_TYPE(dat_registry_add_provider(p, &info), DAT_PROVIDER_ALREADY_REGISTERED);
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

TEST(RAP_10_dynamic_add_does_not_change_the_list)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    DAT_COUNT before, after, n = -1, i;

    no_conf();
    for (i = 0; i < RLP_MAX; i++)
        list[i] = &store[i];
    before = registry_size();
    CHECK(before == BUILTIN_COUNT);
    REQUIRE(add_stub(&info, NULL) != NULL);
    after = registry_size();
    CHECK(after == before);
    CHECK_OK(dat_registry_list_providers(RLP_MAX, &n, list));
    CHECK(n == before);
    for (i = 0; i < n && i < RLP_MAX; i++)
        CHECK(strcmp(store[i].ia_name, "stub0") != 0);
}

/* ---- RRP: dat_registry_remove_provider --------------------------------- */

TEST(RRP_01_remove_then_open_not_found)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_registry_remove_provider(p, &info));
    CHECK_TYPE(dat_ia_open("stub0", 8, &evd, &ia), DAT_PROVIDER_NOT_FOUND);
    CHECK(stub_ia_open_calls == 0);
}

/* D19: unknown provider -> DAT_INVALID_PARAMETER (reference: 0x800A0000). */
TEST(RRP_02_remove_twice_invalid_parameter)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_registry_remove_provider(p, &info));
    CHECK_TYPE(dat_registry_remove_provider(p, &info), DAT_INVALID_PARAMETER);
}

TEST(RRP_03_remove_while_open_in_use)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_ia_open("stub0", 8, &evd, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK_TYPE(dat_registry_remove_provider(p, &info), DAT_PROVIDER_IN_USE);
    /* Refused means nothing changed: the IA still works through the stub. */
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, 0, NULL));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

TEST(RRP_04_null_provider)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);

    no_conf();
    REQUIRE(add_stub(&info, NULL) != NULL);
    CHECK_RET(dat_registry_remove_provider(NULL, &info), 0x80060024);
}

/* D25 / rule 1: the reference crashes here; this library must not. */
TEST(RRP_05_null_info)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_SUB(dat_registry_remove_provider(p, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

TEST(RRP_06_other_key_not_found)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER_INFO minor3 = info_of("stub0", 1, 3, DAT_FALSE);
    DAT_PROVIDER_INFO major2 = info_of("stub0", 2, 2, DAT_FALSE);
    DAT_PROVIDER_INFO ts = info_of("stub0", 1, 2, DAT_TRUE);
    DAT_PROVIDER_INFO upper = info_of("STUB0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_TYPE(dat_registry_remove_provider(p, &minor3), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_registry_remove_provider(p, &major2), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_registry_remove_provider(p, &ts), DAT_INVALID_PARAMETER);
    CHECK_TYPE(dat_registry_remove_provider(p, &upper), DAT_INVALID_PARAMETER);
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

TEST(RRP_07_two_ias_in_use_until_both_closed)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia1 = DAT_HANDLE_NULL, ia2 = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE e1 = DAT_HANDLE_NULL, e2 = DAT_HANDLE_NULL;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    CHECK_OK(dat_ia_open("stub0", 8, &e1, &ia1));
    CHECK_OK(dat_ia_open("stub0", 8, &e2, &ia2));
    REQUIRE(ia1 != DAT_HANDLE_NULL && ia2 != DAT_HANDLE_NULL);
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_TYPE(dat_registry_remove_provider(p, &info), DAT_PROVIDER_IN_USE);
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

/* D24: a failed open leaves no reference behind. */
TEST(RRP_08_failed_open_leaves_no_reference)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    /* The stub refuses qlen 0; its result comes back unchanged. */
    CHECK_SUB(dat_ia_open("stub0", 0, &evd, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

/* ---- IAO-16, IAO-17 on the built-in provider -------------------------- */

TEST(IAO_16_builtin_remove_in_use_while_open)
{
    DAT_PROVIDER_INFO info = info_of(BUILTIN_NAME, 1, 2, DAT_FALSE);
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_PROVIDER *p;

    no_conf();
    CHECK_OK(dat_ia_open(BUILTIN_NAME, 8, &evd, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    p = DAT_HANDLE_TO_PROVIDER(ia);
    REQUIRE(p != NULL);
    CHECK_TYPE(dat_registry_remove_provider(p, &info), DAT_PROVIDER_IN_USE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

TEST(IAO_16_builtin_remove_in_use_two_ias)
{
    DAT_PROVIDER_INFO info = info_of(BUILTIN_NAME, 1, 2, DAT_FALSE);
    DAT_IA_HANDLE ia1 = DAT_HANDLE_NULL, ia2 = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE e1 = DAT_HANDLE_NULL, e2 = DAT_HANDLE_NULL;
    DAT_PROVIDER *p;

    no_conf();
    CHECK_OK(dat_ia_open(BUILTIN_NAME, 8, &e1, &ia1));
    CHECK_OK(dat_ia_open(BUILTIN_NAME, 8, &e2, &ia2));
    REQUIRE(ia1 != DAT_HANDLE_NULL && ia2 != DAT_HANDLE_NULL);
    p = DAT_HANDLE_TO_PROVIDER(ia1);
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_registry_remove_provider(p, &info), DAT_PROVIDER_IN_USE);
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

/* D24: the built-in provider's failed open (bad qlen) takes no reference. */
TEST(IAO_17_builtin_failed_open_leaves_no_reference)
{
    DAT_PROVIDER_INFO info = info_of(BUILTIN_NAME, 1, 2, DAT_FALSE);
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_PROVIDER *p;

    no_conf();
    /* Learn the built-in provider's table from a successful open. */
    CHECK_OK(dat_ia_open(BUILTIN_NAME, 8, &evd, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    p = DAT_HANDLE_TO_PROVIDER(ia);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));

    ia = DAT_HANDLE_NULL;
    evd = DAT_HANDLE_NULL;
    CHECK_SUB(dat_ia_open(BUILTIN_NAME, 0, &evd, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    evd = DAT_HANDLE_NULL;
    CHECK_SUB(dat_ia_open(BUILTIN_NAME, -1, &evd, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

/* The same on a test-built provider, with an argument the registry passes through. */
TEST(IAO_17_stub_failed_open_leaves_no_reference)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;

    no_conf();
    p = add_stub(&info, NULL);
    REQUIRE(p != NULL);
    /* async_evd_handle NULL: the stub answers ARG3 (semantics-core §2.1). */
    CHECK_SUB(dat_ia_open("stub0", 8, NULL, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

/*
 * IAC-17 without dat.conf: ia_query reports another dapl minor than the key
 * the IA was opened through; the close still releases that key's count.
 */
TEST(IAC_17_close_uses_open_entry_not_ia_query)
{
    DAT_PROVIDER_INFO info = info_of("stub0", 1, 2, DAT_FALSE);
    DAT_PROVIDER *p;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_PROVIDER_ATTR pa;

    no_conf();
    p = add_stub(&info, "badminor");
    REQUIRE(p != NULL);
    CHECK_OK(dat_ia_open("stub0", 8, &evd, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa));
    CHECK(pa.dapl_version_minor == 3); /* the stub really misreports */
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(stub_ia_close_calls == 1);
    CHECK_OK(dat_registry_remove_provider(p, &info));
}

/* ---- RLP: dat_registry_list_providers ---------------------------------- */

/* Two installed entries (file order confA, confB) and one that is not. */
static const char rlp_conf[] =
    "# IAname version threadsafe default library-path provider-version instance-data platform-information\n"
    "confA u1.2 nonthreadsafe default /nonexistent/ctest/libconfA.so ctest.1.0 \"a\" \"\"\n"
    "confB u1.3 threadsafe default /nonexistent/ctest/libconfB.so ctest.1.0 \"b\" \"\"\n"
    "confC u1.2 nonthreadsafe nondefault /nonexistent/ctest/libconfC.so ctest.1.0 \"c\" \"\"\n";
#define RLP_CONF_ENTRIES 2
#define RLP_N (RLP_CONF_ENTRIES + BUILTIN_COUNT)

TEST(RLP_01_size_probe)
{
    DAT_PROVIDER_INFO store[1];
    DAT_PROVIDER_INFO *list[1] = {&store[0]};
    DAT_COUNT n = -7;

    REQUIRE(write_conf(rlp_conf));
    CHECK_RET(dat_registry_list_providers(0, &n, list), 0x80060024);
    CHECK(n == RLP_N);
    remove_conf();
}

TEST(RLP_02_full_list_conf_order_then_builtins)
{
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    DAT_COUNT n = -7, i;

    REQUIRE(write_conf(rlp_conf));
    memset(store, 0x5A, sizeof(store));
    for (i = 0; i < RLP_N; i++)
        list[i] = &store[i];
    CHECK_OK(dat_registry_list_providers(RLP_N, &n, list));
    REQUIRE(n == RLP_N);
    for (i = 0; i < n; i++) {
        CHECK(memchr(store[i].ia_name, '\0', sizeof(store[i].ia_name)) != NULL);
        CHECK(store[i].dapl_version_major == 1);
    }
    CHECK(info_is(&store[0], "confA", 1, 2, DAT_FALSE));
    CHECK(info_is(&store[1], "confB", 1, 3, DAT_TRUE));
    /* The built-in tcp0 pair (in either order), then the interfaces'. */
    CHECK(builtin_pair_at(store, 2, BUILTIN_NAME));
    CHECK(builtins_from(store, 2));
    remove_conf();
}

/* D20: a list smaller than the registry is filled and succeeds. */
TEST(RLP_03_short_list_truncates)
{
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    DAT_COUNT n = -7, i;

    REQUIRE(write_conf(rlp_conf));
    memset(store, 0x5A, sizeof(store));
    for (i = 0; i < RLP_N; i++)
        list[i] = &store[i];
    CHECK_OK(dat_registry_list_providers(RLP_N - 1, &n, list));
    CHECK(n == RLP_N - 1);
    CHECK(info_is(&store[0], "confA", 1, 2, DAT_FALSE));
    CHECK(info_is(&store[1], "confB", 1, 3, DAT_TRUE));
    CHECK(strcmp(store[2].ia_name, BUILTIN_NAME) == 0);
    /* Nothing is written past max_to_return. */
    {
        unsigned char canary[sizeof(DAT_PROVIDER_INFO)];
        memset(canary, 0x5A, sizeof(canary));
        CHECK(memcmp(&store[RLP_N - 1], canary, sizeof(canary)) == 0);
    }
    /* max 1: only the first dat.conf entry. */
    n = -7;
    CHECK_OK(dat_registry_list_providers(1, &n, list));
    CHECK(n == 1);
    CHECK(info_is(&store[0], "confA", 1, 2, DAT_FALSE));
    remove_conf();
}

TEST(RLP_04_null_list)
{
    DAT_COUNT n = -7;

    REQUIRE(write_conf(rlp_conf));
    CHECK_SUB(dat_registry_list_providers(5, &n, NULL), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    /* semantics-core §2.39: on failure *number_entries holds the size [M]. */
    CHECK(n == RLP_N);
    remove_conf();
}

TEST(RLP_05_null_number_entries)
{
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    DAT_COUNT i;

    REQUIRE(write_conf(rlp_conf));
    for (i = 0; i < RLP_N; i++)
        list[i] = &store[i];
    CHECK_SUB(dat_registry_list_providers(RLP_N, NULL, list), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    CHECK_SUB(dat_registry_list_providers(0, NULL, list), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    remove_conf();
}

TEST(RLP_06_null_element)
{
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    DAT_COUNT n = -7, i;

    REQUIRE(write_conf(rlp_conf));
    for (i = 0; i < RLP_N; i++)
        list[i] = &store[i];
    list[0] = NULL;
    CHECK_SUB(dat_registry_list_providers(RLP_N, &n, list), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG3);
    /* semantics-core §2.39: on failure *number_entries holds the size [M]. */
    CHECK(n == RLP_N);
    /* A NULL element later in the list fails the same way. */
    list[0] = &store[0];
    list[RLP_N - 1] = NULL;
    n = -7;
    CHECK_SUB(dat_registry_list_providers(RLP_N, &n, list), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG3);
    remove_conf();
}

TEST(RLP_10_longer_list_leaves_extra_structs_untouched)
{
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    unsigned char canary[sizeof(DAT_PROVIDER_INFO)];
    DAT_COUNT n = -7, i;

    REQUIRE(write_conf(rlp_conf));
    memset(store, 0xA5, sizeof(store));
    memset(canary, 0xA5, sizeof(canary));
    for (i = 0; i < RLP_N + 3; i++)
        list[i] = &store[i];
    CHECK_OK(dat_registry_list_providers(RLP_N + 3, &n, list));
    CHECK(n == RLP_N);
    for (i = RLP_N; i < RLP_N + 3; i++)
        CHECK(memcmp(&store[i], canary, sizeof(canary)) == 0);
    CHECK(info_is(&store[0], "confA", 1, 2, DAT_FALSE));
    remove_conf();
}

/* D20, rule 3: a negative max copies nothing and succeeds. */
TEST(RLP_11_negative_max)
{
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    unsigned char canary[sizeof(store)];
    DAT_COUNT n = -7, i;

    REQUIRE(write_conf(rlp_conf));
    memset(store, 0xA5, sizeof(store));
    memset(canary, 0xA5, sizeof(canary));
    for (i = 0; i < RLP_N; i++)
        list[i] = &store[i];
    CHECK_OK(dat_registry_list_providers(-1, &n, list));
    CHECK(n == 0);
    CHECK(memcmp(store, canary, sizeof(canary)) == 0);
    remove_conf();
}

/* Without dat.conf, each network interface that is up and has an address
 * has a built-in IA of its name after tcp0; it opens for both thread-safety
 * values and its IA address is the interface's (IPv4 first). */
TEST(RLP_12_interface_ias_follow_tcp0_and_use_their_address)
{
    DAT_PROVIDER_INFO store[RLP_MAX];
    DAT_PROVIDER_INFO *list[RLP_MAX];
    DAT_COUNT n = -7, i;
    int k, ts;

    no_conf();
    for (i = 0; i < RLP_MAX; i++)
        list[i] = &store[i];
    CHECK_OK(dat_registry_list_providers(RLP_MAX, &n, list));
    REQUIRE(n == BUILTIN_COUNT);
    CHECK(builtins_from(store, 0));
    if (builtin_interfaces() == 0)
        SKIP("no network interface besides loopback has an address");
    for (k = 0; k < builtin_interfaces(); k++) {
        const char *name = builtin_if_names[k];
        struct sockaddr_storage want;

        REQUIRE(builtin_if_address(name, AF_UNSPEC, &want));
        for (ts = 0; ts <= 1; ts++) {
            DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
            DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
            DAT_IA_ATTR a;

            CHECK_OK(dat_ia_openv((char *)name, 8, &evd, &ia, 1, 2, ts ? DAT_TRUE : DAT_FALSE));
            if (ia == DAT_HANDLE_NULL)
                continue;
            memset(&a, 0, sizeof(a));
            CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
            CHECK(strcmp(a.adapter_name, name) == 0);
            if (!builtin_same_address(a.ia_address_ptr, &want))
                fprintf(stderr, "    %s: IA address is not the interface's\n", name);
            CHECK(builtin_same_address(a.ia_address_ptr, &want));
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
        }
    }
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
