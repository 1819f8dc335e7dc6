/*
 * Static-registry ([needs-SR]) tests: a dat.conf written by each case names
 * the stub provider library (build/ctests/registry/libstub_provider.so,
 * source stub_provider.c) or the constructor-registering noinit provider
 * (libnoinit_provider.so), and libdat loads them as third-party providers.
 *
 * IDs: IAO-20, IAC-16, IAC-17, PIN-01..09, PFI-01..06, RLP-07..09, plus
 * THIRDPARTY_01/02 (consumer calls on a third-party provider's handles),
 * CONF_01/02 (malformed dat.conf, missing dat.conf) and BUILTIN_ALIAS_01
 * (a dat.conf line naming libdat.so.1 gives the built-in provider a new IA
 * name).
 *
 * Spec: semantics-core.md §1.12, §2.1, §2.2, §2.39-§2.41; registry.md
 * §2-§8; abi-functions.md §4-§7; rulings.md (RLP, D21, D24, rule 3 list:
 * PIN-09).
 *
 * Observation of the stub: its $STUB_LOG file (one line per init, fini,
 * ia_open, ia_close and slot call; it survives the library being unloaded)
 * and, while the library is loaded, its exported counters read with
 * dlopen(RTLD_NOLOAD) + dlsym. See stub_provider.c for the line formats.
 *
 * Every case runs in its own process: it creates a temp dir, writes
 * dat.conf there, sets DAT_OVERRIDE and STUB_LOG, and only then makes its
 * first DAT call.
 */
#include "ctest.h"
#include "builtin_ias.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <sys/stat.h>

#ifndef DAT_HANDLE_TO_PROVIDER
#define DAT_HANDLE_TO_PROVIDER(h) (*(DAT_PROVIDER **)(h))
#endif

#define STUB_LIB CTEST_BUILD_DIR "/registry/libstub_provider.so"
#define NOINIT_LIB CTEST_BUILD_DIR "/registry/libnoinit_provider.so"
#define MISSING_LIB "/nonexistent/ctest/libmissing_provider.so"


#define NOT_TRIED 0xFFFFFFFFu
#define ALREADY_REGISTERED_ERR ((unsigned)(DAT_CLASS_ERROR | DAT_PROVIDER_ALREADY_REGISTERED))

/* ---- temp dir, dat.conf, log ------------------------------------------- */

static char tdir[256];
static char conf_path[320];
static char log_path[320];
static char conf_text[16384];

/* Append one formatted piece to the dat.conf text being built. */
static void conf_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void conf_add(const char *fmt, ...)
{
    size_t len = strlen(conf_text);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(conf_text + len, sizeof(conf_text) - len, fmt, ap);
    va_end(ap);
}

/* A standard installed line: NAME u1.2 (non)threadsafe default LIB ctest.1.0 "INST" "" */
static void conf_entry(const char *name, const char *version, int threadsafe, const char *lib,
                       const char *instance)
{
    conf_add("%s %s %s default %s ctest.1.0 \"%s\" \"\"\n", name, version,
             threadsafe ? "threadsafe" : "nonthreadsafe", lib, instance);
}

/* Write conf_text to a fresh temp dir; set DAT_OVERRIDE and STUB_LOG. */
static int conf_install(void)
{
    const char *tmp = getenv("TMPDIR");
    FILE *f;

    snprintf(tdir, sizeof(tdir), "%s/ctest_sr_XXXXXX",
             (tmp != NULL && tmp[0] != '\0') ? tmp : "/tmp");
    if (mkdtemp(tdir) == NULL) {
        perror("mkdtemp");
        return 0;
    }
    snprintf(conf_path, sizeof(conf_path), "%s/dat.conf", tdir);
    snprintf(log_path, sizeof(log_path), "%s/stub.log", tdir);
    f = fopen(conf_path, "w");
    if (f == NULL) {
        perror("fopen dat.conf");
        return 0;
    }
    fputs(conf_text, f);
    fclose(f);
    setenv("DAT_OVERRIDE", conf_path, 1);
    setenv("STUB_LOG", log_path, 1);
    return 1;
}

static void cleanup(void)
{
    unlink(conf_path);
    unlink(log_path);
    rmdir(tdir);
}

/* Print the log to stderr (for failure diagnosis). */
static void log_dump(void)
{
    char line[2048];
    FILE *f = fopen(log_path, "r");

    if (f == NULL) {
        fprintf(stderr, "    (stub log empty)\n");
        return;
    }
    fprintf(stderr, "    stub log:\n");
    while (fgets(line, sizeof(line), f) != NULL)
        fprintf(stderr, "      %s", line);
    fclose(f);
}

/*
 * The index (0-based line number) of the nth (0-based) line that starts with
 * `prefix`, or -1; copies the line (without newline) into out if non-NULL.
 */
static int log_find(const char *prefix, int nth, char *out, size_t outlen)
{
    char line[2048];
    int idx = 0, seen = 0, found = -1;
    FILE *f = fopen(log_path, "r");

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            if (seen++ == nth) {
                found = idx;
                if (out != NULL)
                    snprintf(out, outlen, "%s", line);
                break;
            }
        }
        idx++;
    }
    fclose(f);
    return found;
}

static int log_count(const char *prefix)
{
    int n = 0;

    while (log_find(prefix, n, NULL, 0) >= 0)
        n++;
    return n;
}

struct init_rec {
    char name[256];
    unsigned major, minor;
    int ts;
    void *ptr;
    unsigned add, add2;
    char inst[1024];
};

/* Parse the nth "init NAME ..." line of the log. */
static int log_init(const char *name, int nth, struct init_rec *r)
{
    char prefix[300], line[2048];
    int off = -1;

    snprintf(prefix, sizeof(prefix), "init %s ", name);
    memset(r, 0, sizeof(*r));
    if (log_find(prefix, nth, line, sizeof(line)) < 0)
        return 0;
    if (sscanf(line, "init %255s %u %u %d %p add=%x add2=%x inst=%n", r->name, &r->major,
               &r->minor, &r->ts, &r->ptr, &r->add, &r->add2, &off) < 7 ||
        off < 0)
        return 0;
    snprintf(r->inst, sizeof(r->inst), "%s", line + off);
    return 1;
}

struct fini_rec {
    char name[256];
    unsigned major, minor;
    int ts;
    void *ptr;
    unsigned remove, remove2;
};

static int log_fini(const char *name, int nth, struct fini_rec *r)
{
    char prefix[300], line[2048];

    snprintf(prefix, sizeof(prefix), "fini %s ", name);
    memset(r, 0, sizeof(*r));
    if (log_find(prefix, nth, line, sizeof(line)) < 0)
        return 0;
    return sscanf(line, "fini %255s %u %u %d %p remove=%x remove2=%x", r->name, &r->major,
                  &r->minor, &r->ts, &r->ptr, &r->remove, &r->remove2) == 7;
}

static int count_init(const char *name)
{
    char prefix[300];

    snprintf(prefix, sizeof(prefix), "init %s ", name);
    return log_count(prefix);
}

static int count_fini(const char *name)
{
    char prefix[300];

    snprintf(prefix, sizeof(prefix), "fini %s ", name);
    return log_count(prefix);
}

/* ---- looking into the loaded stub --------------------------------------- */

static int lib_loaded(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);

    if (h == NULL)
        return 0;
    dlclose(h); /* drop the reference RTLD_NOLOAD took */
    return 1;
}

/* Address of a symbol of the already-loaded stub (NULL if not loaded). */
static void *stub_sym(const char *sym)
{
    void *h = dlopen(STUB_LIB, RTLD_NOW | RTLD_NOLOAD);
    void *s;

    if (h == NULL)
        return NULL;
    s = dlsym(h, sym);
    dlclose(h); /* libdat still holds the library */
    return s;
}

static int stub_int(const char *sym)
{
    int *p = (int *)stub_sym(sym);

    return p != NULL ? *p : -1;
}

static DAT_PROVIDER *stub_table(const char *name)
{
    DAT_PROVIDER *(*find)(const char *);
    void *sym = stub_sym("stub_find_table");

    if (sym == NULL)
        return NULL;
    memcpy(&find, &sym, sizeof(find));
    return find(name);
}

/* ---- small DAT helpers --------------------------------------------------- */

static DAT_RETURN open_ia(const char *name, DAT_IA_HANDLE *ia)
{
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    *ia = DAT_HANDLE_NULL;
    return dat_ia_openv((char *)name, 8, &evd, ia, 1, 2, DAT_FALSE);
}

static DAT_RETURN open_ia_key(const DAT_PROVIDER_INFO *key, DAT_IA_HANDLE *ia)
{
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    *ia = DAT_HANDLE_NULL;
    return dat_ia_openv((char *)key->ia_name, 8, &evd, ia, key->dapl_version_major,
                        key->dapl_version_minor, key->is_thread_safe);
}

/* Room for a few dat.conf entries and the built-in IAs of a host with up
 * to BUILTIN_IF_MAX interfaces. */
#define MAXLIST (2 * (1 + BUILTIN_IF_MAX) + 16)

/* List the registry into store; returns the count, or -1 on failure. */
static DAT_COUNT list_all(DAT_PROVIDER_INFO *store)
{
    DAT_PROVIDER_INFO *list[MAXLIST];
    DAT_COUNT n = -1, i;

    for (i = 0; i < MAXLIST; i++)
        list[i] = &store[i];
    if (dat_registry_list_providers(MAXLIST, &n, list) != DAT_SUCCESS)
        return -1;
    return n;
}

static int info_is(const DAT_PROVIDER_INFO *i, const char *name, DAT_UINT32 major,
                   DAT_UINT32 minor, DAT_BOOLEAN ts)
{
    return memchr(i->ia_name, '\0', sizeof(i->ia_name)) != NULL &&
           strcmp(i->ia_name, name) == 0 && i->dapl_version_major == major &&
           i->dapl_version_minor == minor && i->is_thread_safe == ts;
}

/* The built-in IAs are listed from `at` on: the tcp0 pair (either order),
 * then each network interface's pair (builtin_ias.h). */
static int builtins_at(const DAT_PROVIDER_INFO *store, DAT_COUNT at)
{
    return builtins_from(store, at);
}

/* ---- IAO-20 / PIN-01 / PIN-02: dat_provider_init on first open --------- */

TEST(IAO_20_first_open_calls_init_once)
{
    DAT_IA_HANDLE ia1, ia2;
    struct init_rec r;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "mode=plain port=1");
    REQUIRE(conf_install());

    CHECK(count_init("stubA") == 0);
    CHECK_OK(open_ia("stubA", &ia1));
    CHECK(count_init("stubA") == 1);
    CHECK(log_init("stubA", 0, &r));
    CHECK(r.major == 1 && r.minor == 2 && r.ts == 0);
    CHECK(strcmp(r.inst, "mode=plain port=1") == 0);
    CHECK(r.add == 0);
    CHECK(stub_int("stub_init_calls") == 1);

    CHECK_OK(open_ia("stubA", &ia2));
    CHECK(count_init("stubA") == 1);
    CHECK(stub_int("stub_init_calls") == 1);
    CHECK(stub_int("stub_ia_open_calls") == 2);

    if (ia1 != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_ABRUPT_FLAG));
    if (ia2 != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PIN_01_init_gets_conf_key_and_instance_data)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL, iat = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    struct init_rec r;
    const DAT_PROVIDER_INFO *last;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "first entry");
    /* Quoted field with escapes: \" -> ", \\ -> \ (registry.md §3.3). */
    conf_add("stubT u1.2 threadsafe default %s ctest.1.0 \"ts \\\"q\\\" b\\\\s\" \"x y\"\n",
             STUB_LIB);
    REQUIRE(conf_install());

    CHECK_OK(open_ia("stubA", &ia));
    CHECK(count_init("stubA") == 1);
    CHECK(log_init("stubA", 0, &r));
    CHECK(strcmp(r.name, "stubA") == 0);
    CHECK(r.major == 1 && r.minor == 2 && r.ts == 0);
    CHECK(strcmp(r.inst, "first entry") == 0);
    last = (const DAT_PROVIDER_INFO *)stub_sym("stub_last_init_info");
    REQUIRE(last != NULL);
    CHECK(strcmp(last->ia_name, "stubA") == 0);
    CHECK(last->dapl_version_major == 1 && last->dapl_version_minor == 2);
    CHECK(last->is_thread_safe == DAT_FALSE);

    CHECK_OK(dat_ia_openv("stubT", 8, &evd, &iat, 1, 2, DAT_TRUE));
    CHECK(count_init("stubT") == 1);
    CHECK(log_init("stubT", 0, &r));
    CHECK(r.major == 1 && r.minor == 2 && r.ts == 1);
    CHECK(strcmp(r.inst, "ts \"q\" b\\s") == 0);
    CHECK(count_init("stubA") == 1);

    if (iat != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(iat, DAT_CLOSE_ABRUPT_FLAG));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PIN_02_second_open_does_not_init_again)
{
    DAT_IA_HANDLE ia[3];
    int i;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    for (i = 0; i < 3; i++)
        CHECK_OK(open_ia("stubA", &ia[i]));
    CHECK(count_init("stubA") == 1);
    CHECK(log_count("ia_open stubA ") == 3);
    CHECK(count_fini("stubA") == 0);
    for (i = 0; i < 3; i++)
        if (ia[i] != DAT_HANDLE_NULL)
            CHECK_OK(dat_ia_close(ia[i], DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PIN_03_reopen_after_fini_calls_init_again)
{
    DAT_IA_HANDLE ia;
    struct init_rec r;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "again");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 1);
    CHECK_OK(open_ia("stubA", &ia));
    CHECK(count_init("stubA") == 2);
    CHECK(log_init("stubA", 1, &r));
    CHECK(r.major == 1 && r.minor == 2 && r.ts == 0 && strcmp(r.inst, "again") == 0);
    CHECK(r.add == 0); /* fini removed the name, so the re-add is clean */
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 2);
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PIN_04_init_that_does_not_register)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    struct init_rec r;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "noregister");
    REQUIRE(conf_install());
    CHECK_TYPE(open_ia("stubA", &ia), DAT_PROVIDER_NOT_FOUND);
    CHECK(count_init("stubA") == 1);
    CHECK(log_init("stubA", 0, &r));
    CHECK(r.add == NOT_TRIED);
    CHECK(log_count("ia_open ") == 0);
    /* Again: still not found, still no crash. */
    CHECK_TYPE(open_ia("stubA", &ia), DAT_PROVIDER_NOT_FOUND);
    CHECK(log_count("ia_open ") == 0);
    /* The registry is still usable. */
    CHECK_OK(open_ia(BUILTIN_NAME, &ia));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PIN_05_registered_open_goes_through_stub)
{
    DAT_IA_HANDLE ia;
    DAT_PROVIDER *table;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(log_count("ia_open stubA 8 0") == 1);
    CHECK(stub_int("stub_ia_open_calls") == 1);
    table = stub_table("stubA");
    CHECK(table != NULL);
    CHECK(DAT_HANDLE_TO_PROVIDER(ia) == table);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PIN_06_constructor_registration_without_init)
{
    DAT_IA_HANDLE ia;

    conf_entry("noinit0", "u1.2", 0, NOINIT_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("noinit0", &ia));
    CHECK(log_count("ctor noinit0 add=0x00000000") == 1);
    CHECK(log_count("ia_open noinit0 8 0") == 1);
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* Last close unloads the library (no fini to call); a re-open loads it again. */
TEST(PIN_06_constructor_provider_unload_and_reopen)
{
    DAT_IA_HANDLE ia;

    conf_entry("noinit0", "u1.2", 0, NOINIT_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("noinit0", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(lib_loaded(NOINIT_LIB));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(!lib_loaded(NOINIT_LIB));
    CHECK(log_count("dtor noinit0 ") == 1);
    CHECK_OK(open_ia("noinit0", &ia));
    CHECK(log_count("ctor noinit0 ") == 2);
    CHECK(log_count("ia_open noinit0 ") == 2);
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PIN_07_missing_library_not_found)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_PROVIDER_INFO store[MAXLIST];

    conf_entry("missing0", "u1.2", 0, MISSING_LIB, "");
    REQUIRE(conf_install());
    CHECK_TYPE(open_ia("missing0", &ia), DAT_PROVIDER_NOT_FOUND);
    CHECK_TYPE(open_ia("missing0", &ia), DAT_PROVIDER_NOT_FOUND);
    /* Still listed (registry.md §6.5) and the rest of the registry works. */
    CHECK(list_all(store) == 1 + BUILTIN_COUNT);
    CHECK(info_is(&store[0], "missing0", 1, 2, DAT_FALSE));
    CHECK_OK(open_ia(BUILTIN_NAME, &ia));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    cleanup();
}

/* Listing while the library is loaded (IA open) and after it is unloaded. */
TEST(PIN_08_listing_never_calls_init)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_IA_HANDLE ia;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    conf_entry("stubB", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK(list_all(store) == 2 + BUILTIN_COUNT);
    CHECK(log_count("init ") == 0);
    CHECK_OK(open_ia("stubA", &ia));
    CHECK(count_init("stubA") == 1);
    CHECK(list_all(store) == 2 + BUILTIN_COUNT);
    CHECK(log_count("init ") == 1);
    CHECK(count_init("stubB") == 0);
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(list_all(store) == 2 + BUILTIN_COUNT);
    CHECK(log_count("init ") == 1);
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* rulings rule 3 list: a second name registered from init is accepted. */
TEST(PIN_09_init_registers_a_second_name)
{
    DAT_IA_HANDLE ia1 = DAT_HANDLE_NULL, ia2 = DAT_HANDLE_NULL;
    struct init_rec r;
    struct fini_rec f;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "second=stubA2");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia1));
    CHECK(log_init("stubA", 0, &r));
    CHECK(r.add == 0 && r.add2 == 0);
    CHECK_OK(open_ia("stubA2", &ia2));
    CHECK(log_count("ia_open stubA2 8 0") == 1);
    CHECK(count_init("stubA") == 1);
    if (ia2 != DAT_HANDLE_NULL) {
        DAT_IA_ATTR a;
        CHECK(DAT_HANDLE_TO_PROVIDER(ia2) == stub_table("stubA2"));
        CHECK_OK(dat_ia_query(ia2, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
        CHECK(strcmp(a.adapter_name, "stubA2") == 0);
        /* A name without a dat.conf entry: the close still succeeds (§2.2). */
        CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG));
    }
    CHECK(count_fini("stubA") == 0);
    CHECK(lib_loaded(STUB_LIB));
    if (ia1 != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 1);
    CHECK(log_fini("stubA", 0, &f));
    CHECK(f.remove == 0 && f.remove2 == 0);
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* ---- PFI: dat_provider_fini ---------------------------------------------- */

TEST(PFI_01_close_calls_fini_once_after_ia_close)
{
    DAT_IA_HANDLE ia;
    struct init_rec r;
    struct fini_rec f;
    int close_line, fini_line;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(count_fini("stubA") == 0);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 1);
    REQUIRE(log_init("stubA", 0, &r));
    REQUIRE(log_fini("stubA", 0, &f));
    CHECK(strcmp(f.name, r.name) == 0);
    CHECK(f.major == r.major && f.minor == r.minor && f.ts == r.ts);
    CHECK(f.ptr == r.ptr); /* the same provider_info pointer (§2.41) */
    CHECK(f.remove == 0);  /* the stub's own remove found the entry, count 0 */
    close_line = log_find("ia_close stubA ", 0, NULL, 0);
    fini_line = log_find("fini stubA ", 0, NULL, 0);
    CHECK(close_line >= 0 && fini_line > close_line);
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PFI_02_fini_only_after_last_close)
{
    DAT_IA_HANDLE ia1, ia2;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia1));
    CHECK_OK(open_ia("stubA", &ia2));
    REQUIRE(ia1 != DAT_HANDLE_NULL && ia2 != DAT_HANDLE_NULL);
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 0);
    CHECK(lib_loaded(STUB_LIB));
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 1);
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PFI_03_fini_that_does_not_remove_then_reopen)
{
    DAT_IA_HANDLE ia;
    struct init_rec r;
    struct fini_rec f;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "nofini-remove");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 1);
    CHECK(log_fini("stubA", 0, &f));
    CHECK(f.remove == NOT_TRIED);

    CHECK_OK(open_ia("stubA", &ia));
    CHECK(count_init("stubA") == 2);
    CHECK(log_init("stubA", 1, &r));
    /* Either the registry removed the entry, or the re-add found it. */
    CHECK(r.add == 0 || r.add == ALREADY_REGISTERED_ERR);
    CHECK(log_count("ia_open stubA ") == 2);
    if (ia != DAT_HANDLE_NULL) {
        CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, 0, NULL));
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PFI_04_ten_cycles_init_fini_alternate)
{
    DAT_IA_HANDLE ia;
    char line[2048];
    int i, last_was_init = 0, bad_order = 0;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    for (i = 0; i < 10; i++) {
        CHECK_OK(open_ia("stubA", &ia));
        CHECK(count_init("stubA") - count_fini("stubA") == 1);
        if (ia != DAT_HANDLE_NULL)
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
        CHECK(count_init("stubA") == count_fini("stubA"));
    }
    CHECK(count_init("stubA") == 10);
    /* Walk the init/fini lines in order: they must alternate, init first. */
    {
        FILE *fp = fopen(log_path, "r");
        REQUIRE(fp != NULL);
        while (fgets(line, sizeof(line), fp) != NULL) {
            if (strncmp(line, "init stubA ", 11) == 0) {
                if (last_was_init)
                    bad_order = 1;
                last_was_init = 1;
            } else if (strncmp(line, "fini stubA ", 11) == 0) {
                if (!last_was_init)
                    bad_order = 1;
                last_was_init = 0;
            }
        }
        fclose(fp);
    }
    CHECK(!bad_order);
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PFI_05_library_unloaded_after_fini)
{
    DAT_IA_HANDLE ia;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK(!lib_loaded(STUB_LIB));
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(lib_loaded(STUB_LIB));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 1);
    CHECK(!lib_loaded(STUB_LIB));
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(PFI_06_no_fini_while_open_despite_other_activity)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_IA_HANDLE ia, other;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    conf_entry("stubB", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);

    CHECK(list_all(store) == 2 + BUILTIN_COUNT);
    CHECK_OK(open_ia(BUILTIN_NAME, &other));
    if (other != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(other, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_OK(open_ia("stubB", &other));
    if (other != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(other, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_init("stubB") == 1);
    CHECK(count_fini("stubB") == 1);
    CHECK(list_all(store) == 2 + BUILTIN_COUNT);

    CHECK(count_fini("stubA") == 0);
    CHECK(lib_loaded(STUB_LIB));
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, 0, NULL));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 1);
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* ---- IAC-16, IAC-17 ------------------------------------------------------ */

TEST(IAC_16_fini_at_last_close_then_reinit)
{
    DAT_IA_HANDLE ia1, ia2;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia1));
    CHECK_OK(open_ia("stubA", &ia2));
    REQUIRE(ia1 != DAT_HANDLE_NULL && ia2 != DAT_HANDLE_NULL);
    CHECK(count_init("stubA") == 1);
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK(count_fini("stubA") == 0);
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK(count_fini("stubA") == 1);
    CHECK_OK(open_ia("stubA", &ia1));
    CHECK(count_init("stubA") == 2);
    if (ia1 != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(count_fini("stubA") == 2);
    if (ctest_failures)
        log_dump();
    cleanup();
}

/*
 * The stub's ia_query reports dapl minor 3 for a u1.2 entry. The library
 * remembers the entry the IA was opened through: the close succeeds, runs
 * fini, and the stub's own remove from fini finds no reference left.
 */
TEST(IAC_17_ia_query_misreports_minor)
{
    DAT_IA_HANDLE ia;
    DAT_PROVIDER_ATTR pa;
    struct fini_rec f;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "badminor");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa));
    CHECK(pa.dapl_version_minor == 3); /* the stub really misreports */
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK(log_count("ia_close stubA 0 ret=0x00000000") == 1);
    CHECK(count_fini("stubA") == 1);
    CHECK(log_fini("stubA", 0, &f));
    CHECK(f.remove == 0); /* not DAT_PROVIDER_IN_USE: the count was released */
    CHECK(!lib_loaded(STUB_LIB));
    /* And the name opens again. */
    CHECK_OK(open_ia("stubA", &ia));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* ---- RLP-07..09 ---------------------------------------------------------- */

TEST(RLP_07_empty_conf_lists_builtins_all_openable)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_COUNT n, i;

    conf_text[0] = '\0';
    REQUIRE(conf_install());
    n = list_all(store);
    CHECK(n == BUILTIN_COUNT);
    REQUIRE(n >= 1 && n <= MAXLIST);
    if (n == BUILTIN_COUNT)
        CHECK(builtins_at(store, 0));
    for (i = 0; i < n; i++) {
        DAT_IA_HANDLE ia;
        CHECK_OK(open_ia_key(&store[i], &ia));
        if (ia != DAT_HANDLE_NULL)
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    cleanup();
}

TEST(RLP_08_listing_does_not_load_or_init)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_PROVIDER_INFO *list[1] = {&store[0]};
    DAT_COUNT n = -1;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_RET(dat_registry_list_providers(0, &n, list), 0x80060024);
    CHECK(n == 1 + BUILTIN_COUNT);
    CHECK(list_all(store) == 1 + BUILTIN_COUNT);
    CHECK(info_is(&store[0], "stubA", 1, 2, DAT_FALSE));
    CHECK_OK(dat_registry_list_providers(-1, &n, list));
    CHECK(log_count("init ") == 0);
    CHECK(!lib_loaded(STUB_LIB));
    cleanup();
}

TEST(RLP_09_every_listed_entry_opens)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_COUNT n, i;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    conf_entry("stubT", "u1.2", 1, STUB_LIB, "");
    conf_add("OpenIB-cma u1.2 nonthreadsafe default libdat.so.1 dapl.1.2 "
             "\"transport=tcp netdev=lo\" \"\"\n");
    conf_entry("missing0", "u1.2", 0, MISSING_LIB, "");
    REQUIRE(conf_install());
    n = list_all(store);
    CHECK(n == 4 + BUILTIN_COUNT);
    REQUIRE(n >= 4);
    CHECK(info_is(&store[0], "stubA", 1, 2, DAT_FALSE));
    CHECK(info_is(&store[1], "stubT", 1, 2, DAT_TRUE));
    CHECK(info_is(&store[2], "OpenIB-cma", 1, 2, DAT_FALSE));
    CHECK(info_is(&store[3], "missing0", 1, 2, DAT_FALSE));
    if (n == 4 + BUILTIN_COUNT)
        CHECK(builtins_at(store, 4));
    for (i = 0; i < n; i++) {
        DAT_IA_HANDLE ia;
        DAT_RETURN r = open_ia_key(&store[i], &ia);

        if (strcmp(store[i].ia_name, "missing0") == 0) {
            CHECK_TYPE(r, DAT_PROVIDER_NOT_FOUND); /* its library does not exist */
            continue;
        }
        if (r != DAT_SUCCESS)
            fprintf(stderr, "    entry %d (%s) failed to open\n", (int)i, store[i].ia_name);
        CHECK_OK(r);
        if (ia != DAT_HANDLE_NULL)
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* ---- third-party provider end to end ----------------------------------- */

TEST(THIRDPARTY_01_consumer_calls_reach_stub_slots)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL, q_async = DAT_HANDLE_NULL, evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_PROVIDER *table;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pa;
    DAT_PZ_PARAM pzp;
    DAT_HANDLE_TYPE type;
    DAT_CONTEXT ctx, got;
    int calls;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(dat_ia_open("stubA", 8, &async, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(async != DAT_HANDLE_NULL);

    /* Handles are the stub's own objects, dispatched through its table. */
    table = stub_table("stubA");
    REQUIRE(table != NULL);
    CHECK(DAT_HANDLE_TO_PROVIDER(ia) == table);
    CHECK(strcmp(DAT_HANDLE_TO_PROVIDER(ia)->device_name, "stubA") == 0);
    CHECK(DAT_HANDLE_TO_PROVIDER(async) == table);

    /* dat_ia_query -> ia_query_func, values unchanged. */
    calls = stub_int("stub_ia_query_calls");
    memset(&ia_attr, 0, sizeof(ia_attr));
    memset(&pa, 0, sizeof(pa));
    CHECK_OK(dat_ia_query(ia, &q_async, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pa));
    CHECK(stub_int("stub_ia_query_calls") == calls + 1);
    CHECK(q_async == async);
    CHECK(strcmp(ia_attr.adapter_name, "stubA") == 0);
    CHECK(strcmp(ia_attr.vendor_name, "ctest-stub-vendor") == 0);
    CHECK(ia_attr.max_pzs == 16);
    CHECK(strcmp(pa.provider_name, "ctest_stub_provider") == 0);
    CHECK(pa.provider_version_major == 7 && pa.provider_version_minor == 3);
    CHECK(pa.dapl_version_major == 1 && pa.dapl_version_minor == 2);
    CHECK(pa.is_thread_safe == DAT_FALSE);
    /* NULL outputs with mask 0 reach the stub and succeed. */
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, 0, NULL));

    /* dat_pz_create / dat_pz_query. */
    CHECK_OK(dat_pz_create(ia, &pz));
    CHECK(stub_int("stub_pz_create_calls") == 1);
    REQUIRE(pz != DAT_HANDLE_NULL);
    CHECK(DAT_HANDLE_TO_PROVIDER(pz) == table);
    memset(&pzp, 0, sizeof(pzp));
    CHECK_OK(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pzp));
    CHECK(stub_int("stub_pz_query_calls") == 1);
    CHECK(pzp.ia_handle == ia);

    /* dat_get_handle_type on each stub handle. */
    CHECK_OK(dat_get_handle_type(ia, &type));
    CHECK(type == DAT_HANDLE_TYPE_IA);
    CHECK_OK(dat_get_handle_type(pz, &type));
    CHECK(type == DAT_HANDLE_TYPE_PZ);
    CHECK_OK(dat_get_handle_type(async, &type));
    CHECK(type == DAT_HANDLE_TYPE_EVD);
    CHECK(stub_int("stub_get_handle_type_calls") == 3);

    /* dat_set/get_consumer_context (DAT_CONTEXT by value). */
    ctx.as_64 = 0xDEADBEEF12345678ULL;
    CHECK_OK(dat_set_consumer_context(pz, ctx));
    ctx.as_64 = ~0ULL;
    CHECK_OK(dat_set_consumer_context(ia, ctx));
    got.as_64 = 0;
    CHECK_OK(dat_get_consumer_context(pz, &got));
    CHECK(got.as_64 == 0xDEADBEEF12345678ULL);
    got.as_64 = 0;
    CHECK_OK(dat_get_consumer_context(ia, &got));
    CHECK(got.as_64 == ~0ULL);
    CHECK(stub_int("stub_set_context_calls") == 2);
    CHECK(stub_int("stub_get_context_calls") == 2);

    /* A slot the stub does not implement: its exact result comes back. */
    CHECK_RET(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd), 0x8FFF0000);
    CHECK(log_count("call evd_create") == 1);

    /* dat_pz_free, then a graceful close (only the IA's async EVD is left). */
    CHECK_OK(dat_pz_free(pz));
    CHECK(stub_int("stub_pz_free_calls") == 1);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK(log_count("ia_close stubA 1 ret=0x00000000") == 1);
    CHECK(count_fini("stubA") == 1);
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* A failed provider close is returned unchanged and changes no count. */
TEST(THIRDPARTY_02_failed_stub_close_is_passed_back)
{
    DAT_IA_HANDLE ia;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;

    conf_entry("stubA", "u1.2", 0, STUB_LIB, "");
    REQUIRE(conf_install());
    CHECK_OK(open_ia("stubA", &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK_OK(dat_pz_create(ia, &pz));
    CHECK_SUB(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE,
              DAT_INVALID_STATE_IA_IN_USE);
    CHECK(count_fini("stubA") == 0);
    CHECK(lib_loaded(STUB_LIB));
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, 0, NULL));
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK(count_fini("stubA") == 1);
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* ---- dat.conf parsing ----------------------------------------------------- */

TEST(CONF_01_malformed_lines_skipped_good_ones_listed_and_open)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_COUNT n, i;
    struct init_rec r;
    const char *L = STUB_LIB;

    conf_add("# IAname version threadsafe default library-path provider-version "
             "instance-data platform-information\n");
    conf_add("\n");
    conf_add("stubA u1.2 nonthreadsafe default %s ctest.1.0 \"inst A\" \"\"\n", L);
    conf_add("bad1 u1.2 nonthreadsafe default %s ctest.1.0 \"\"\n", L);          /* 7 fields */
    conf_add("bad2 u1.2 nonthreadsafe default %s ctest.1.0 \"\" \"\" extra\n", L); /* 9 fields */
    conf_add("bad3 x1.2 nonthreadsafe default %s ctest.1.0 \"\" \"\"\n", L);     /* API type */
    conf_add("bad4 u1.2 sometimes default %s ctest.1.0 \"\" \"\"\n", L);        /* thread safety */
    conf_add("bad5 u1.2 nonthreadsafe maybe %s ctest.1.0 \"\" \"\"\n", L);      /* default flag */
    conf_add("bad6 u1.2 nonthreadsafe default %s dapl \"\" \"\"\n", L);         /* provider version */
    conf_add("bad7 u1.2 nonthreadsafe default %s ctest.1. \"\" \"\"\n", L);     /* provider version */
    conf_add("bad8 u1.2 nonthreadsafe nondefault %s ctest.1.0 \"\" \"\"\n", L); /* not installed */
    conf_add("bad9 k1.2 nonthreadsafe default %s ctest.1.0 \"\" \"\"\n", L);    /* kernel entry */
    /*
     * No CRLF line here: registry.md §3.3 describes the reference discarding
     * them, but neither the man pages nor rulings.md make that a requirement,
     * and accepting them is a harmless extension.
     */
    conf_add("   \t# indented comment\n");
    conf_add("\tstubT\tu1.2 \t threadsafe\tdefault %s ctest.1.0 \"\" \"\"   # trailing comment\n",
             L);
    conf_add("stubA u1.2 nonthreadsafe default %s ctest.1.0 \"duplicate\" \"\"\n", L);
    conf_add("OpenIB-cma u1.2 nonthreadsafe default libdat.so.1 dapl.1.2 "
             "\"transport=tcp netdev=lo\" \"\"\n");
    conf_add("bad10 u1.2 nonthreadsafe default %s ctest.1.0 \"unterminated\n", L);
    REQUIRE(conf_install());

    n = list_all(store);
    CHECK(n == 3 + BUILTIN_COUNT);
    REQUIRE(n >= 3);
    for (i = 0; i < n; i++)
        if (strncmp(store[i].ia_name, "bad", 3) == 0)
            fprintf(stderr, "    malformed entry listed: %s\n", store[i].ia_name);
    CHECK(info_is(&store[0], "stubA", 1, 2, DAT_FALSE));
    CHECK(info_is(&store[1], "stubT", 1, 2, DAT_TRUE));
    CHECK(info_is(&store[2], "OpenIB-cma", 1, 2, DAT_FALSE));
    if (n == 3 + BUILTIN_COUNT)
        CHECK(builtins_at(store, 3));

    for (i = 0; i < n && i < 3; i++) {
        DAT_IA_HANDLE ia;
        DAT_RETURN ret = open_ia_key(&store[i], &ia);

        if (ret != DAT_SUCCESS)
            fprintf(stderr, "    entry %s failed to open\n", store[i].ia_name);
        CHECK_OK(ret);
        if (ia != DAT_HANDLE_NULL)
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    /* The first line of a duplicated key wins. */
    CHECK(log_init("stubA", 0, &r));
    CHECK(strcmp(r.inst, "inst A") == 0);
    if (ctest_failures)
        log_dump();
    cleanup();
}

TEST(CONF_02_missing_conf_file_builtins_only)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_IA_HANDLE ia;
    DAT_COUNT n;

    conf_text[0] = '\0';
    REQUIRE(conf_install());
    unlink(conf_path); /* DAT_OVERRIDE now names a file that does not exist */
    n = list_all(store);
    CHECK(n == BUILTIN_COUNT);
    if (n == BUILTIN_COUNT)
        CHECK(builtins_at(store, 0));
    CHECK_OK(dat_ia_open(BUILTIN_NAME, 8, &(DAT_EVD_HANDLE){DAT_HANDLE_NULL}, &ia));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    cleanup();
}

/* ---- built-in provider under a dat.conf name ---------------------------- */

TEST(BUILTIN_ALIAS_01_conf_line_naming_libdat)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_IA_ATTR a;
    DAT_PROVIDER_ATTR pa;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_COUNT n;

    conf_add("OpenIB-cma u1.2 nonthreadsafe default libdat.so.1 dapl.1.2 "
             "\"transport=tcp netdev=lo\" \"\"\n");
    REQUIRE(conf_install());
    n = list_all(store);
    CHECK(n == 1 + BUILTIN_COUNT);
    CHECK(n >= 1 && info_is(&store[0], "OpenIB-cma", 1, 2, DAT_FALSE));

    CHECK_OK(dat_ia_open("OpenIB-cma", 8, &async, &ia));
    REQUIRE(ia != DAT_HANDLE_NULL);
    CHECK(async != DAT_HANDLE_NULL);
    memset(&a, 0, sizeof(a));
    CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &pa));
    CHECK(strcmp(a.adapter_name, "OpenIB-cma") == 0);
    CHECK(pa.dapl_version_major == 1 && pa.dapl_version_minor == 2);
    CHECK(pa.is_thread_safe == DAT_FALSE);
    CHECK_OK(dat_pz_create(ia, &pz));
    if (pz != DAT_HANDLE_NULL)
        CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    /* The built-in name keeps working beside the alias. */
    CHECK_OK(open_ia(BUILTIN_NAME, &ia));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    cleanup();
}

/* A dat.conf entry takes the name of a built-in IA away from the built-in
 * one, for both thread-safety values: here a third-party line for "tcp0"
 * and a built-in line (with instance options, one of them bad) for the
 * first network interface's IA, if the host has one. */
TEST(BUILTIN_ALIAS_02_conf_line_replaces_builtin_ia_of_its_name)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_IA_ATTR a;
    const char *if0 = builtin_interfaces() > 0 ? builtin_if_names[0] : NULL;
    DAT_COUNT n, at, conf_n = if0 != NULL ? 2 : 1;
    int k;

    conf_entry(BUILTIN_NAME, "u1.2", 0, STUB_LIB, "stub tcp0");
    if (if0 != NULL)
        conf_add("%s u1.2 threadsafe default libdat.so.1 udapl.1.2 "
                 "\"transport=tcp crc=on ack=local bogus=1 keepalive=1,2\" \"\"\n",
                 if0);
    REQUIRE(conf_install());

    n = list_all(store);
    /* dat.conf entries, then the built-in pairs of the other interfaces. */
    CHECK(n == conf_n + BUILTIN_COUNT - 2 - (if0 != NULL ? 2 : 0));
    REQUIRE(n >= conf_n);
    CHECK(info_is(&store[0], BUILTIN_NAME, 1, 2, DAT_FALSE));
    if (if0 != NULL)
        CHECK(info_is(&store[1], if0, 1, 2, DAT_TRUE));
    at = conf_n;
    for (k = if0 != NULL ? 1 : 0; k < builtin_interfaces() && at + 1 < n; k++, at += 2)
        CHECK(builtin_pair_at(store, at, builtin_if_names[k]));

    /* tcp0 is the stub's now; there is no threadsafe tcp0 any more. */
    CHECK_OK(open_ia(BUILTIN_NAME, &ia));
    CHECK(count_init(BUILTIN_NAME) == 1);
    CHECK(log_count("ia_open tcp0 ") == 1);
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    CHECK_TYPE(dat_ia_openv(BUILTIN_NAME, 8, &evd, &ia, 1, 2, DAT_TRUE), DAT_PROVIDER_NOT_FOUND);

    if (if0 != NULL) {
        /* The dat.conf line's device (no netdev=: loopback), for threadsafe only. */
        ia = DAT_HANDLE_NULL;
        evd = DAT_HANDLE_NULL;
        CHECK_OK(dat_ia_openv((char *)if0, 8, &evd, &ia, 1, 2, DAT_TRUE));
        if (ia != DAT_HANDLE_NULL) {
            memset(&a, 0, sizeof(a));
            CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
            CHECK(a.ia_address_ptr != NULL && a.ia_address_ptr->sa_family == AF_INET);
            if (a.ia_address_ptr != NULL && a.ia_address_ptr->sa_family == AF_INET)
                CHECK(((struct sockaddr_in *)(void *)a.ia_address_ptr)->sin_addr.s_addr ==
                      htonl(INADDR_LOOPBACK));
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
        }
        CHECK_TYPE(open_ia(if0, &ia), DAT_PROVIDER_NOT_FOUND);
    }
    if (ctest_failures)
        log_dump();
    cleanup();
}

/* The built-in provider's instance options are accepted and reported as
 * its named attributes (bad ones are ignored with a warning), and family=inet6 picks the IPv6 loopback address,
 * or with netdev= the interface's IPv6 address. */
TEST(BUILTIN_OPTIONS_01_instance_options_and_family)
{
    DAT_IA_HANDLE ia;
    DAT_IA_ATTR a;
    struct sockaddr_storage lo6;
    int has_lo6 = builtin_if_address("lo", AF_INET6, &lo6);

    conf_add("opts0 u1.2 nonthreadsafe default libdat.so.1 udapl.1.2 "
             "\"transport=tcp crc=on ack=local fpdu=mss rnr_timeout=100 keepalive=30,5,3 "
             "user_timeout=5000\" \"\"\n");
    conf_add("bad0 u1.2 nonthreadsafe default libdat.so.1 udapl.1.2 "
             "\"crc=maybe keepalive=1,2 user_timeout=0 family=ipx\" \"\"\n");
    conf_add("lo6 u1.2 nonthreadsafe default libdat.so.1 udapl.1.2 "
             "\"netdev=lo family=inet6\" \"\"\n");
    conf_add("loop6 u1.2 nonthreadsafe default libdat.so.1 udapl.1.2 \"family=inet6\" \"\"\n");
    REQUIRE(conf_install());

    CHECK_OK(open_ia("opts0", &ia));
    if (ia != DAT_HANDLE_NULL) {
        /* The options come back as the provider's named attributes. */
        DAT_PROVIDER_ATTR pa;
        static const char *want[][2] = {
            {"transport", "iwarp-tcp"}, {"netdev", "loopback"}, {"crc", "on"},
            {"ack", "local"}, {"fpdu", "mss"}, {"rnr_timeout", "100"},
            {"keepalive", "30,5,3"}, {"user_timeout", "5000"}, {"address", "127.0.0.1"},
        };
        memset(&pa, 0, sizeof(pa));
        CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pa));
        CHECK(pa.num_provider_specific_attr == 9 && pa.provider_specific_attr != NULL);
        for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
            int found = 0;
            for (DAT_COUNT k = 0; pa.provider_specific_attr != NULL &&
                                  k < pa.num_provider_specific_attr;
                 k++)
                if (strcmp(pa.provider_specific_attr[k].name, want[w][0]) == 0) {
                    found = 1;
                    if (strcmp(pa.provider_specific_attr[k].value, want[w][1]) != 0)
                        CHECK(!"named attribute value");
                }
            if (!found)
                fprintf(stderr, "    missing named attribute %s\n", want[w][0]);
            CHECK(found);
        }
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    CHECK_OK(open_ia("bad0", &ia));
    if (ia != DAT_HANDLE_NULL) {
        memset(&a, 0, sizeof(a));
        CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
        CHECK(a.ia_address_ptr != NULL && a.ia_address_ptr->sa_family == AF_INET);
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }

    /* No interface: the loopback address of the family asked for. */
    CHECK_OK(open_ia("loop6", &ia));
    if (ia != DAT_HANDLE_NULL) {
        memset(&a, 0, sizeof(a));
        CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
        CHECK(a.ia_address_ptr != NULL && a.ia_address_ptr->sa_family == AF_INET6);
        if (a.ia_address_ptr != NULL && a.ia_address_ptr->sa_family == AF_INET6)
            CHECK(memcmp(&((struct sockaddr_in6 *)(void *)a.ia_address_ptr)->sin6_addr,
                         &in6addr_loopback, sizeof(struct in6_addr)) == 0);
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }

    if (!has_lo6) {
        CHECK_TYPE(open_ia("lo6", &ia), DAT_INSUFFICIENT_RESOURCES);
        cleanup();
        SKIP("lo has no IPv6 address");
    }
    CHECK_OK(open_ia("lo6", &ia));
    if (ia != DAT_HANDLE_NULL) {
        memset(&a, 0, sizeof(a));
        CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL));
        CHECK(builtin_same_address(a.ia_address_ptr, &lo6));
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    }
    cleanup();
}

/* Lines of `text` that contain both `a` and `b`. */
static int lines_with(const char *text, const char *a, const char *b)
{
    int n = 0;
    for (const char *l = text; l != NULL && *l != '\0';) {
        const char *end = strchr(l, '\n');
        size_t len = end != NULL ? (size_t)(end - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), l);
        n += strstr(line, a) != NULL && strstr(line, b) != NULL;
        l = end != NULL ? end + 1 : NULL;
    }
    return n;
}

/* A built-in IA whose transport= names a transport this build does not
 * have (shm) is listed but does not open: DAT_PROVIDER_NOT_FOUND and one
 * warning line on stderr saying why (it once opened iWARP over TCP under
 * that name). A verbs IA that names no RDMA port (neither netdev= nor
 * device=; or, on a host without rdma-core, any verbs IA) fails the same
 * honest way. */
TEST(BUILTIN_TRANSPORT_01_transport_not_in_this_build)
{
    DAT_PROVIDER_INFO store[MAXLIST];
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    char err[4096];
    FILE *cap = tmpfile();
    int saved, shm_listed = 0, verbs_listed = 0;
    DAT_COUNT n;
    size_t got;

    conf_add("shm0 u1.2 nonthreadsafe default libdat.so.1 udapl.1.2 \"transport=shm\" \"\"\n");
    conf_add("vb0 u1.2 nonthreadsafe default libdat.so.1 udapl.1.2 \"transport=verbs\" \"\"\n");
    REQUIRE(conf_install());
    REQUIRE(cap != NULL);
    n = list_all(store);
    for (DAT_COUNT i = 0; i < n; i++) {
        shm_listed += strcmp(store[i].ia_name, "shm0") == 0;
        verbs_listed += strcmp(store[i].ia_name, "vb0") == 0;
    }
    CHECK(shm_listed == 1 && verbs_listed == 1);

    fflush(stderr);
    saved = dup(2);
    REQUIRE(saved >= 0);
    REQUIRE(dup2(fileno(cap), 2) == 2);
    CHECK_TYPE(open_ia("shm0", &ia), DAT_PROVIDER_NOT_FOUND);
    CHECK(ia == DAT_HANDLE_NULL);
    CHECK_TYPE(open_ia("vb0", &ia), DAT_PROVIDER_NOT_FOUND);
    CHECK(ia == DAT_HANDLE_NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    got = fread(err, 1, sizeof(err) - 1, cap);
    err[got] = '\0';
    fclose(cap);
    CHECK(lines_with(err, "transport=shm", "not in this build") == 1);
    CHECK(lines_with(err, "transport=verbs", ": ") == 1);
    if (ctest_failures)
        fprintf(stderr, "    stderr was:\n%s", err);
    /* The built-in IAs still open. */
    CHECK_OK(open_ia(BUILTIN_NAME, &ia));
    if (ia != DAT_HANDLE_NULL)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    cleanup();
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
