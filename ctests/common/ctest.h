/*
 * Minimal test harness for the libdat C conformance tests.
 *
 * Each test file is one program holding many TEST() cases. Every case runs
 * in its own forked child process, so a crash, a hang (alarm) or leftover
 * library state in one case cannot affect another. The parent never calls
 * the DAT API itself, so each child starts with a fresh registry.
 *
 * Output: one line per case ("ok   NAME" / "FAIL NAME"), failure details on
 * stderr, and a closing line "N passed, N failed".
 *
 * Usage:
 *   TEST(EWT_05_threshold_not_met) { ... CHECK_RET(dat_evd_wait(...), ...); }
 *   int main(int argc, char **argv) { return ctest_main(argc, argv); }
 *
 * A case name starts with its spec ID (IAO_01, EWT_05, ...). Running the
 * program with an argument runs only the cases whose name contains it.
 */
#ifndef CTEST_H
#define CTEST_H

#define _GNU_SOURCE 1
#include <dat/udat.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CTEST_MAX_CASES
#define CTEST_MAX_CASES 512
#endif
#ifndef CTEST_TIMEOUT_SECONDS
#define CTEST_TIMEOUT_SECONDS 60
#endif

typedef void (*ctest_fn)(void);

struct ctest_case {
    const char *name;
    ctest_fn fn;
};

static struct ctest_case ctest_cases[CTEST_MAX_CASES];
static int ctest_ncases;
static int ctest_failures; /* in the child: failed checks of the current case */
static int ctest_skipped;  /* in the child: the case asked to be skipped */

static inline void ctest_register(const char *name, ctest_fn fn)
{
    if (ctest_ncases < CTEST_MAX_CASES) {
        ctest_cases[ctest_ncases].name = name;
        ctest_cases[ctest_ncases].fn = fn;
        ctest_ncases++;
    }
}

#define TEST(name)                                                             \
    static void ctest_case_##name(void);                                       \
    __attribute__((constructor)) static void ctest_reg_##name(void)            \
    {                                                                          \
        ctest_register(#name, ctest_case_##name);                              \
    }                                                                          \
    static void ctest_case_##name(void)

/* Record a failure and go on with the case. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "    %s:%d: CHECK failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                          \
            ctest_failures++;                                                  \
        }                                                                      \
    } while (0)

/* Record a failure and end the case at once (for setup steps). */
#define REQUIRE(cond)                                                          \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "    %s:%d: REQUIRE failed: %s\n", __FILE__,       \
                    __LINE__, #cond);                                          \
            ctest_failures++;                                                  \
            return;                                                            \
        }                                                                      \
    } while (0)

/* Skip the rest of the case (counted as passed, reported as skipped). */
#define SKIP(why)                                                              \
    do {                                                                       \
        fprintf(stderr, "    skipped: %s\n", why);                             \
        ctest_skipped = 1;                                                     \
        return;                                                                \
    } while (0)

static inline void ctest_report_ret(const char *file, int line, const char *expr,
                             DAT_RETURN got, DAT_RETURN want, const char *what)
{
    fprintf(stderr, "    %s:%d: %s\n      got 0x%08x, want %s 0x%08x\n", file,
            line, expr, (unsigned)got, what, (unsigned)want);
    ctest_failures++;
}

/* Exact 32-bit comparison, class bit included. */
#define CHECK_RET(expr, want)                                                  \
    do {                                                                       \
        DAT_RETURN ctest_got_ = (expr);                                        \
        DAT_RETURN ctest_want_ = (DAT_RETURN)(want);                           \
        if (ctest_got_ != ctest_want_)                                         \
            ctest_report_ret(__FILE__, __LINE__, #expr, ctest_got_,            \
                             ctest_want_, "exactly");                          \
    } while (0)

/* Success is exactly 0. */
#define CHECK_OK(expr) CHECK_RET(expr, DAT_SUCCESS)

/* Type comparison (DAT_GET_TYPE), plus the error class bit for errors. */
#define CHECK_TYPE(expr, type)                                                 \
    do {                                                                       \
        DAT_RETURN ctest_got_ = (expr);                                        \
        DAT_RETURN ctest_want_ = (DAT_RETURN)(type);                           \
        if (DAT_GET_TYPE(ctest_got_) != DAT_GET_TYPE(ctest_want_) ||           \
            (ctest_want_ != 0 && (ctest_got_ & DAT_CLASS_ERROR) == 0))         \
            ctest_report_ret(__FILE__, __LINE__, #expr, ctest_got_,            \
                             ctest_want_, "type");                             \
    } while (0)

/* Type and subtype comparison, plus the error class bit. */
#define CHECK_SUB(expr, type, sub)                                             \
    do {                                                                       \
        DAT_RETURN ctest_got_ = (expr);                                        \
        DAT_RETURN ctest_want_ = (DAT_RETURN)(DAT_CLASS_ERROR | (type) | (sub)); \
        if (ctest_got_ != ctest_want_)                                         \
            ctest_report_ret(__FILE__, __LINE__, #expr, ctest_got_,            \
                             ctest_want_, "type|sub");                         \
    } while (0)

/* ---- timing helpers ---------------------------------------------------- */

static inline double ctest_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void ctest_sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- memory handed over by the library ---------------------------------- */

/*
 * The library has handed `len` bytes at `p` to the calling thread: a receive
 * buffer whose completion was dequeued, private data whose event arrived.
 * libdat's threads wrote that memory and ordered the hand-over with Rust
 * std locks (futexes and atomics), which helgrind and drd cannot see; this
 * tells them that the memory now belongs to this thread (the DAT ownership
 * rule, semantics-ep.md §3.6), so that reading it is not reported as a race
 * (make helgrind). A no-op outside valgrind, and without its headers.
 */
#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#define CTEST_HAVE_HELGRIND 1
#endif
#endif

static inline void ctest_handover(const void *p, size_t len)
{
#ifdef CTEST_HAVE_HELGRIND
    /* The same request as drd's DRD_CLEAN_MEMORY (drd.h shares the code). */
    VALGRIND_HG_CLEAN_MEMORY(p, len);
#else
    (void)p;
    (void)len;
#endif
}

/* ---- default fixture --------------------------------------------------- */

/* The IA name the tests open: $DAT_TEST_IA, else the built-in "tcp0". */
static inline const char *ctest_ia_name(void)
{
    const char *n = getenv("DAT_TEST_IA");
    return (n != NULL && n[0] != '\0') ? n : "tcp0";
}

/* Open the test IA with an IA-created async EVD of qlen 8. */
static inline DAT_RETURN ctest_open_ia(DAT_IA_HANDLE *ia, DAT_EVD_HANDLE *async_evd)
{
    *async_evd = DAT_HANDLE_NULL;
    return dat_ia_open(ctest_ia_name(), 8, async_evd, ia);
}

/* A software-only EVD with the given qlen and no CNO. */
static inline DAT_RETURN ctest_sw_evd(DAT_IA_HANDLE ia, DAT_COUNT qlen, DAT_EVD_HANDLE *evd)
{
    return dat_evd_create(ia, qlen, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, evd);
}

/* Post a software event carrying `p`. */
static inline DAT_RETURN ctest_post(DAT_EVD_HANDLE evd, void *p)
{
    DAT_EVENT ev;
    memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_SOFTWARE_EVENT;
    ev.evd_handle = evd;
    ev.event_data.software_event_data.pointer = p;
    return dat_evd_post_se(evd, &ev);
}

/* ---- runner ------------------------------------------------------------ */

static inline int ctest_run_one(const struct ctest_case *c)
{
    pid_t pid;
    int status = 0;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        alarm(CTEST_TIMEOUT_SECONDS);
        ctest_failures = 0;
        ctest_skipped = 0;
        c->fn();
        fflush(stdout);
        fflush(stderr);
        _exit(ctest_failures == 0 ? (ctest_skipped ? 3 : 0) : 1);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3)) {
        printf("ok   %s%s\n", c->name, WEXITSTATUS(status) == 3 ? " (skipped)" : "");
        return 1;
    }
    if (WIFSIGNALED(status))
        printf("FAIL %s (killed by signal %d%s)\n", c->name, WTERMSIG(status),
               WTERMSIG(status) == SIGALRM ? ": timeout" : "");
    else
        printf("FAIL %s\n", c->name);
    return 0;
}

static inline int ctest_main(int argc, char **argv)
{
    int i, passed = 0, failed = 0;
    const char *filter = argc > 1 ? argv[1] : NULL;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 0; i < ctest_ncases; i++) {
        if (filter != NULL && strstr(ctest_cases[i].name, filter) == NULL)
            continue;
        if (ctest_run_one(&ctest_cases[i]))
            passed++;
        else
            failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

#endif /* CTEST_H */
