/*
 * IA open / close / query conformance tests (semantics-core.md §2.1–§2.3).
 *
 * IDs: IAO-01…15, 18, 19 (Linux expectation), 21; IAC-01…09, 12…15;
 * IAQ-01…13. Registry-provider tests (IAO-16/17/20, IAC-16/17) and the
 * multi-threaded close tests IAC-10/11 live in other files.
 */
#include "ctest.h"

#include <pthread.h>

/* ---- helpers ------------------------------------------------------------ */

static inline DAT_RETURN open_name(const char *name, DAT_IA_HANDLE *ia, DAT_EVD_HANDLE *evd)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", name);
    *evd = DAT_HANDLE_NULL;
    return dat_ia_open(buf, 8, evd, ia);
}

static inline DAT_RETURN openv_name(const char *name, DAT_IA_HANDLE *ia, DAT_EVD_HANDLE *evd,
                                    DAT_UINT32 major, DAT_UINT32 minor, DAT_BOOLEAN ts)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", name);
    *evd = DAT_HANDLE_NULL;
    return dat_ia_openv(buf, 8, evd, ia, major, minor, ts);
}

static inline DAT_RETURN query_ia_attr(DAT_IA_HANDLE ia, DAT_IA_ATTR *a)
{
    memset(a, 0, sizeof(*a));
    return dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, a, 0, NULL);
}

static inline DAT_RETURN query_prov_attr(DAT_IA_HANDLE ia, DAT_PROVIDER_ATTR *p)
{
    memset(p, 0, sizeof(*p));
    return dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, p);
}

/* Field-by-field comparison of the non-pointer members of DAT_IA_ATTR.
 * Returns the number of differing fields and prints them. */
static inline int diff_ia_attr(const DAT_IA_ATTR *a, const DAT_IA_ATTR *b)
{
    int d = 0;
#define IA_FIELD(f)                                                            \
    do {                                                                       \
        if (a->f != b->f) {                                                    \
            fprintf(stderr, "    DAT_IA_ATTR." #f " differs: %llu vs %llu\n",  \
                    (unsigned long long)a->f, (unsigned long long)b->f);       \
            d++;                                                               \
        }                                                                      \
    } while (0)
    if (strncmp(a->adapter_name, b->adapter_name, DAT_NAME_MAX_LENGTH) != 0) {
        fprintf(stderr, "    adapter_name differs\n");
        d++;
    }
    if (strncmp(a->vendor_name, b->vendor_name, DAT_NAME_MAX_LENGTH) != 0) {
        fprintf(stderr, "    vendor_name differs\n");
        d++;
    }
    IA_FIELD(hardware_version_major);
    IA_FIELD(hardware_version_minor);
    IA_FIELD(firmware_version_major);
    IA_FIELD(firmware_version_minor);
    IA_FIELD(max_eps);
    IA_FIELD(max_dto_per_ep);
    IA_FIELD(max_rdma_read_per_ep_in);
    IA_FIELD(max_rdma_read_per_ep_out);
    IA_FIELD(max_evds);
    IA_FIELD(max_evd_qlen);
    IA_FIELD(max_iov_segments_per_dto);
    IA_FIELD(max_lmrs);
    IA_FIELD(max_lmr_block_size);
    IA_FIELD(max_lmr_virtual_address);
    IA_FIELD(max_pzs);
    IA_FIELD(max_message_size);
    IA_FIELD(max_rdma_size);
    IA_FIELD(max_rmrs);
    IA_FIELD(max_rmr_target_address);
    IA_FIELD(max_srqs);
    IA_FIELD(max_ep_per_srq);
    IA_FIELD(max_recv_per_srq);
    IA_FIELD(max_iov_segments_per_rdma_read);
    IA_FIELD(max_iov_segments_per_rdma_write);
    IA_FIELD(max_rdma_read_in);
    IA_FIELD(max_rdma_read_out);
    IA_FIELD(max_rdma_read_per_ep_in_guaranteed);
    IA_FIELD(max_rdma_read_per_ep_out_guaranteed);
    IA_FIELD(num_transport_attr);
    IA_FIELD(num_vendor_attr);
#undef IA_FIELD
    return d;
}

/* ---- dat_ia_open / dat_ia_openv (§2.1) ---------------------------------- */

TEST(IAO_01_open_ok)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_HANDLE_TYPE t;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK(ia != DAT_HANDLE_NULL);
    CHECK(evd != DAT_HANDLE_NULL);
    t = (DAT_HANDLE_TYPE)-1;
    CHECK_OK(dat_get_handle_type(ia, &t));
    CHECK(t == DAT_HANDLE_TYPE_IA);
    t = (DAT_HANDLE_TYPE)-1;
    CHECK_OK(dat_get_handle_type(evd, &t));
    CHECK(t == DAT_HANDLE_TYPE_EVD);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(IAO_02_async_evd_properties)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_EVD_PARAM p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    memset(&p, 0xAB, sizeof(p));
    CHECK_OK(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &p));
    CHECK(p.evd_flags == DAT_EVD_ASYNC_FLAG);
    CHECK(p.evd_qlen >= 8);
    CHECK(p.cno_handle == DAT_HANDLE_NULL);
    CHECK((p.evd_state & 0x3) == DAT_EVD_STATE_ENABLED);
    CHECK((p.evd_state & 0xC) == DAT_EVD_STATE_WAITABLE);
    CHECK(p.ia_handle == ia);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(IAO_03_query_returns_async_evd)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, q = DAT_HANDLE_NULL;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_query(ia, &q, 0, NULL, 0, NULL));
    CHECK(q == evd);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(IAO_04_open_twice_distinct)
{
    DAT_IA_HANDLE ia1, ia2;
    DAT_EVD_HANDLE e1, e2, q;
    DAT_PZ_HANDLE pz1, pz2;

    REQUIRE(ctest_open_ia(&ia1, &e1) == DAT_SUCCESS);
    REQUIRE(ctest_open_ia(&ia2, &e2) == DAT_SUCCESS);
    CHECK(ia1 != ia2);
    CHECK(e1 != e2);
    /* both independently usable */
    CHECK_OK(dat_ia_query(ia1, &q, 0, NULL, 0, NULL));
    CHECK(q == e1);
    CHECK_OK(dat_ia_query(ia2, &q, 0, NULL, 0, NULL));
    CHECK(q == e2);
    REQUIRE(dat_pz_create(ia1, &pz1) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia2, &pz2) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz1));
    CHECK_OK(dat_pz_free(pz2));
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
    /* IA#2 still fine after IA#1 closed */
    CHECK_OK(dat_ia_query(ia2, &q, 0, NULL, 0, NULL));
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAO_05_null_name)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    CHECK_RET(dat_ia_openv(NULL, 8, &evd, &ia, DAT_VERSION_MAJOR, DAT_VERSION_MINOR,
                           DAT_THREADSAFE),
              0x80060024);
    CHECK(evd == DAT_HANDLE_NULL);
}

TEST(IAO_06_name_length_limit)
{
    char name[300];
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    memset(name, 'a', sizeof(name));
    name[256] = '\0'; /* 256 characters: too long */
    evd = DAT_HANDLE_NULL;
    CHECK_SUB(dat_ia_open(name, 8, &evd, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);

    name[255] = '\0'; /* 255 characters: well formed, unregistered */
    evd = DAT_HANDLE_NULL;
    CHECK_TYPE(dat_ia_open(name, 8, &evd, &ia), DAT_PROVIDER_NOT_FOUND);

    /* 300 characters, for good measure */
    memset(name, 'b', sizeof(name));
    name[sizeof(name) - 1] = '\0';
    evd = DAT_HANDLE_NULL;
    CHECK_SUB(dat_ia_open(name, 8, &evd, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
}

TEST(IAO_07_unregistered_name)
{
    char name[] = "no_such_ia";
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    CHECK_TYPE(dat_ia_open(name, 8, &evd, &ia), DAT_PROVIDER_NOT_FOUND);
    CHECK(evd == DAT_HANDLE_NULL);

    /* byte-exact, case-sensitive lookup */
    {
        char up[256];
        const char *n = ctest_ia_name();
        size_t i;
        int changed = 0;
        snprintf(up, sizeof(up), "%s", n);
        for (i = 0; up[i]; i++) {
            if (up[i] >= 'a' && up[i] <= 'z') {
                up[i] = (char)(up[i] - 'a' + 'A');
                changed = 1;
            }
        }
        if (changed) {
            evd = DAT_HANDLE_NULL;
            CHECK_TYPE(dat_ia_open(up, 8, &evd, &ia), DAT_PROVIDER_NOT_FOUND);
        }
    }
}

TEST(IAO_08_null_ia_handle_pointer)
{
    char name[256];
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;

    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    CHECK_RET(dat_ia_open(name, 8, &evd, NULL), 0x8005000B);
}

TEST(IAO_09_null_async_pointer)
{
    char name[256];
    DAT_IA_HANDLE ia;

    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    CHECK_SUB(dat_ia_open(name, 8, NULL, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
}

TEST(IAO_10_bad_qlen)
{
    char name[256];
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    evd = DAT_HANDLE_NULL;
    CHECK_SUB(dat_ia_open(name, 0, &evd, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    evd = DAT_HANDLE_NULL;
    CHECK_SUB(dat_ia_open(name, -1, &evd, &ia), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    evd = DAT_HANDLE_NULL;
    CHECK_SUB(dat_ia_open(name, (DAT_COUNT)0x80000000u, &evd, &ia), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    /* a good open still works afterwards */
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAO_11_qlen_above_max)
{
    DAT_IA_HANDLE ia, ia2;
    DAT_EVD_HANDLE evd, evd2;
    DAT_IA_ATTR a;
    char name[256];
    DAT_RETURN r;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(query_ia_attr(ia, &a) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    if (a.max_evd_qlen <= 0 || a.max_evd_qlen == 0x7fffffff)
        SKIP("max_evd_qlen has no representable max + 1");
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    evd2 = DAT_HANDLE_NULL;
    r = dat_ia_open(name, a.max_evd_qlen + 1, &evd2, &ia2);
    if (DAT_GET_TYPE(r) == DAT_INVALID_PARAMETER)
        CHECK_TYPE(r, DAT_INVALID_PARAMETER);
    else
        CHECK_TYPE(r, DAT_INSUFFICIENT_RESOURCES);
    if (r == DAT_SUCCESS)
        dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG);
}

TEST(IAO_12_consumer_supplied_async_evd)
{
    DAT_IA_HANDLE ia1, ia2;
    DAT_EVD_HANDLE e1, e2, q;
    DAT_EVD_PARAM p;
    char name[256];

    REQUIRE(ctest_open_ia(&ia1, &e1) == DAT_SUCCESS);
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e2 = e1;
    REQUIRE(dat_ia_open(name, 8, &e2, &ia2) == DAT_SUCCESS);
    CHECK(e2 == e1);
    CHECK(ia2 != ia1);
    q = DAT_HANDLE_NULL;
    CHECK_OK(dat_ia_query(ia2, &q, 0, NULL, 0, NULL));
    CHECK(q == e1);

    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG));
    /* the consumer-supplied EVD is not destroyed by IA#2's close */
    CHECK_OK(dat_evd_query(e1, DAT_EVD_FIELD_ALL, &p));
    CHECK(p.ia_handle == ia1);

    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_ABRUPT_FLAG));
    /* IA#1 created it: now it is gone */
    CHECK_TYPE(dat_evd_query(e1, DAT_EVD_FIELD_ALL, &p), DAT_INVALID_HANDLE);
}

TEST(IAO_13_software_evd_as_async)
{
    DAT_IA_HANDLE ia1, ia2;
    DAT_EVD_HANDLE e1, sevd, e2;
    char name[256];
    DAT_RETURN r;

    REQUIRE(ctest_open_ia(&ia1, &e1) == DAT_SUCCESS);
    REQUIRE(ctest_sw_evd(ia1, 8, &sevd) == DAT_SUCCESS);
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e2 = sevd;
    r = dat_ia_open(name, 8, &e2, &ia2);
    CHECK_TYPE(r, DAT_INVALID_HANDLE);
    CHECK(e2 == sevd);
    if (r == DAT_SUCCESS)
        dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG);
    /* the software EVD is untouched */
    CHECK_OK(ctest_post(sevd, &r));
    CHECK_OK(dat_evd_free(sevd));
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAO_14_pz_as_async)
{
    DAT_IA_HANDLE ia1, ia2;
    DAT_EVD_HANDLE e1, e2;
    DAT_PZ_HANDLE pz;
    char name[256];
    DAT_RETURN r;

    REQUIRE(ctest_open_ia(&ia1, &e1) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia1, &pz) == DAT_SUCCESS);
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e2 = (DAT_EVD_HANDLE)pz;
    r = dat_ia_open(name, 8, &e2, &ia2);
    CHECK_TYPE(r, DAT_INVALID_HANDLE);
    CHECK(e2 == (DAT_EVD_HANDLE)pz);
    if (r == DAT_SUCCESS)
        dat_ia_close(ia2, DAT_CLOSE_ABRUPT_FLAG);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAO_15_version_and_thread_safety_lookup)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_RETURN r;
    const char *n = ctest_ia_name();

    CHECK_TYPE(openv_name(n, &ia, &evd, 2, 2, DAT_FALSE), DAT_PROVIDER_NOT_FOUND);
    CHECK_TYPE(openv_name(n, &ia, &evd, 0, 2, DAT_FALSE), DAT_PROVIDER_NOT_FOUND);
    CHECK_TYPE(openv_name(n, &ia, &evd, 1, 3, DAT_FALSE), DAT_PROVIDER_NOT_FOUND);

    /* requested minor 1 < registered minor 2: accepted (rulings D21) */
    r = openv_name(n, &ia, &evd, 1, 1, DAT_FALSE);
    CHECK_OK(r);
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));

    /* exact key */
    r = openv_name(n, &ia, &evd, 1, 2, DAT_FALSE);
    CHECK_OK(r);
    if (r == DAT_SUCCESS)
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));

    /* The built-in "tcp0" is registered for both thread-safety values, so
     * the "opposite flag" half of IAO-15 has no unregistered flag to try:
     * both values must open. */
    if (strcmp(n, "tcp0") == 0) {
        r = openv_name(n, &ia, &evd, 1, 2, DAT_TRUE);
        CHECK_OK(r);
        if (r == DAT_SUCCESS)
            CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    }
}

TEST(IAO_18_async_exists)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd = DAT_EVD_ASYNC_EXISTS, q = DAT_HANDLE_NULL;
    char name[256];
    DAT_RETURN r;

    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    r = dat_ia_open(name, 8, &evd, &ia);
    CHECK_OK(r);
    if (r != DAT_SUCCESS)
        return;
    CHECK(evd == DAT_EVD_ASYNC_EXISTS); /* left as passed, no EVD created */
    CHECK_OK(dat_ia_query(ia, &q, 0, NULL, 0, NULL));
    CHECK(q == DAT_EVD_OUT_OF_SCOPE);
    /* nothing but the IA exists: a graceful close succeeds */
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

/* Linux expectation: no relaxed-ordering cookie error; the RO_AWARE_ prefix
 * is stripped and not reported back in adapter_name. */
TEST(IAO_19_ro_aware_prefix_linux)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_IA_ATTR a;
    char name[300];
    DAT_RETURN r;

    snprintf(name, sizeof(name), "RO_AWARE_%s", ctest_ia_name());
    evd = DAT_HANDLE_NULL;
    r = dat_ia_open(name, 8, &evd, &ia);
    CHECK_OK(r);
    if (r == DAT_SUCCESS) {
        memset(&a, 0, sizeof(a));
        CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_IA_ADAPTER_NAME, &a, 0, NULL));
        CHECK(strcmp(a.adapter_name, ctest_ia_name()) == 0);
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    }

    /* plain name: opens on Linux (no DAT_INVALID_RO_COOKIE) */
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    evd = DAT_HANDLE_NULL;
    r = dat_ia_open(name, 8, &evd, &ia);
    CHECK_OK(r);
    if (r == DAT_SUCCESS) {
        memset(&a, 0, sizeof(a));
        CHECK_OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_IA_ADAPTER_NAME, &a, 0, NULL));
        CHECK(strcmp(a.adapter_name, ctest_ia_name()) == 0);
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    }

    /* the prefix alone leaves an empty name */
    snprintf(name, sizeof(name), "RO_AWARE_");
    evd = DAT_HANDLE_NULL;
    CHECK_TYPE(dat_ia_open(name, 8, &evd, &ia), DAT_PROVIDER_NOT_FOUND);
}

struct iao21_arg {
    int failures;
    DAT_RETURN first_bad;
};

static void *iao21_thread(void *p)
{
    struct iao21_arg *arg = p;
    int i;
    for (i = 0; i < 100; i++) {
        DAT_IA_HANDLE ia;
        DAT_EVD_HANDLE evd;
        DAT_RETURN r = ctest_open_ia(&ia, &evd);
        if (r != DAT_SUCCESS) {
            if (arg->failures++ == 0)
                arg->first_bad = r;
            continue;
        }
        r = dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);
        if (r != DAT_SUCCESS) {
            if (arg->failures++ == 0)
                arg->first_bad = r;
        }
    }
    return NULL;
}

TEST(IAO_21_concurrent_open_close)
{
    pthread_t th[8];
    struct iao21_arg args[8];
    int i, started = 0;
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    memset(args, 0, sizeof(args));
    for (i = 0; i < 8; i++) {
        if (pthread_create(&th[i], NULL, iao21_thread, &args[i]) == 0)
            started++;
        else
            break;
    }
    REQUIRE(started == 8);
    for (i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < 8; i++) {
        if (args[i].failures) {
            fprintf(stderr, "    thread %d: %d failures, first 0x%08x\n", i, args[i].failures,
                    (unsigned)args[i].first_bad);
        }
        CHECK(args[i].failures == 0);
    }
    /* afterwards the IA still opens and closes normally */
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

/* ---- dat_ia_close (§2.2) ------------------------------------------------ */

TEST(IAC_01_graceful_empty)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAC_02_abrupt_empty)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
}

TEST(IAC_03_default_is_abrupt)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_PZ_PARAM pp;

    CHECK(DAT_CLOSE_DEFAULT == 0);
    CHECK(DAT_CLOSE_ABRUPT_FLAG == 0);
    CHECK(DAT_CLOSE_GRACEFUL_FLAG == 1);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_DEFAULT));
    CHECK_TYPE(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pp), DAT_INVALID_HANDLE);
}

TEST(IAC_04_graceful_refused_with_pz)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_PZ_PARAM pp;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
    memset(&pp, 0, sizeof(pp));
    CHECK_OK(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pp));
    CHECK(pp.ia_handle == ia);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAC_05_graceful_refused_with_sw_evd)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, sevd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(ctest_sw_evd(ia, 8, &sevd) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
    /* still usable */
    CHECK_OK(ctest_post(sevd, NULL));
    CHECK_OK(dat_evd_free(sevd));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAC_06_graceful_refused_with_cno)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_CNO_HANDLE cno;
    DAT_CNO_PARAM cp;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
    CHECK_OK(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp));
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAC_07_graceful_refused_with_lmr_or_rmr)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_RMR_HANDLE rmr;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    void *buf = NULL;

    REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);

    /* PZ + LMR */
    memset(&rd, 0, sizeof(rd));
    rd.for_va = buf;
    REQUIRE(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, pz,
                           DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &lmr,
                           &lc, &rc, &rs, &ra) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
    CHECK_OK(dat_lmr_free(lmr));
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE); /* PZ */

    /* PZ + unbound RMR */
    REQUIRE(dat_rmr_create(pz, &rmr) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_STATE);
    CHECK_OK(dat_rmr_free(rmr));

    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    free(buf);
}

TEST(IAC_08_graceful_with_only_async_evd)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, sevd;
    DAT_PZ_HANDLE pz;
    DAT_CNO_HANDLE cno;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    /* create and free a few objects first; only the IA-created async EVD remains */
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    REQUIRE(ctest_sw_evd(ia, 4, &sevd) == DAT_SUCCESS);
    REQUIRE(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_evd_free(sevd));
    CHECK_OK(dat_cno_free(cno));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    /* the IA-created async EVD went with it */
    {
        DAT_EVD_PARAM p;
        CHECK_TYPE(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &p), DAT_INVALID_HANDLE);
    }
}

TEST(IAC_09_abrupt_full_tree)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE aevd, evd;
    DAT_CNO_HANDLE cno;
    DAT_PZ_HANDLE pz;
    DAT_LMR_HANDLE lmr;
    DAT_RMR_HANDLE rmr;
    DAT_REGION_DESCRIPTION rd;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rc;
    DAT_VLEN rs;
    DAT_VADDR ra;
    DAT_EVD_PARAM ep;
    DAT_CNO_PARAM cp;
    DAT_PZ_PARAM pp;
    DAT_LMR_PARAM lp;
    DAT_RMR_PARAM rp;
    DAT_IA_ATTR ia_attr;
    void *buf = NULL;
    int i;

    REQUIRE(posix_memalign(&buf, 4096, 4096) == 0);
    REQUIRE(ctest_open_ia(&ia, &aevd) == DAT_SUCCESS);
    REQUIRE(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno) == DAT_SUCCESS);
    REQUIRE(dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    memset(&rd, 0, sizeof(rd));
    rd.for_va = buf;
    REQUIRE(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, rd, 4096, pz, DAT_MEM_PRIV_ALL_FLAG, &lmr,
                           &lc, &rc, &rs, &ra) == DAT_SUCCESS);
    REQUIRE(dat_rmr_create(pz, &rmr) == DAT_SUCCESS);
    for (i = 0; i < 3; i++)
        CHECK_OK(ctest_post(evd, &buf));

    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));

    CHECK_TYPE(dat_rmr_query(rmr, DAT_RMR_FIELD_IA_HANDLE, &rp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_lmr_query(lmr, DAT_LMR_FIELD_IA_HANDLE, &lp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &pp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_evd_query(evd, DAT_EVD_FIELD_ALL, &ep), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_evd_query(aevd, DAT_EVD_FIELD_ALL, &ep), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &cp), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), DAT_INVALID_HANDLE);
    /* the consumer memory is untouched and still ours */
    memset(buf, 0x5A, 4096);
    free(buf);
}

TEST(IAC_12_bad_flags)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, q;
    DAT_PZ_HANDLE pz;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_SUB(dat_ia_close(ia, (DAT_CLOSE_FLAGS)2), DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    CHECK_SUB(dat_ia_close(ia, (DAT_CLOSE_FLAGS)0x80000000u), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG2);
    /* the IA is still usable */
    q = DAT_HANDLE_NULL;
    CHECK_OK(dat_ia_query(ia, &q, 0, NULL, 0, NULL));
    CHECK(q == evd);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAC_13_bad_handle)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PZ_HANDLE pz;

    CHECK_RET(dat_ia_close(DAT_HANDLE_NULL, DAT_CLOSE_ABRUPT_FLAG), 0x8005000B);
    CHECK_RET(dat_ia_close(DAT_HANDLE_NULL, DAT_CLOSE_GRACEFUL_FLAG), 0x8005000B);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(dat_pz_create(ia, &pz) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_close((DAT_IA_HANDLE)pz, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ia_close((DAT_IA_HANDLE)evd, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
    /* nothing happened to the PZ or the IA */
    CHECK_OK(dat_pz_free(pz));
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAC_14_double_close)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_HANDLE);
}

TEST(IAC_15_shared_async_evd_graceful)
{
    DAT_IA_HANDLE ia1, ia2;
    DAT_EVD_HANDLE e1, e2;
    DAT_EVD_PARAM p;
    char name[256];

    REQUIRE(ctest_open_ia(&ia1, &e1) == DAT_SUCCESS);
    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e2 = e1;
    REQUIRE(dat_ia_open(name, 8, &e2, &ia2) == DAT_SUCCESS);
    CHECK(e2 == e1);
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_OK(dat_evd_query(e1, DAT_EVD_FIELD_ALL, &p));
    CHECK(p.evd_flags == DAT_EVD_ASYNC_FLAG);
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
}

/* ---- dat_ia_query (§2.3) ------------------------------------------------ */

TEST(IAQ_01_all_fields)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, q = DAT_HANDLE_NULL;
    DAT_IA_ATTR a;
    DAT_PROVIDER_ATTR p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    memset(&a, 0, sizeof(a));
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_ia_query(ia, &q, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &p));
    CHECK(q == evd);
    CHECK(strncmp(a.adapter_name, ctest_ia_name(), DAT_NAME_MAX_LENGTH) == 0);
    CHECK(a.max_evd_qlen > 0);
    CHECK(a.max_pzs > 0);
    CHECK(a.max_lmrs > 0);
    CHECK(a.max_eps > 0);
    CHECK(a.max_evds > 0);
    CHECK(a.max_rmrs > 0);
    CHECK(a.max_lmr_block_size > 0);
    CHECK(a.max_message_size > 0);
    CHECK(a.max_iov_segments_per_dto > 0);
    CHECK(a.num_transport_attr >= 0);
    CHECK(a.num_vendor_attr >= 0);
    CHECK(a.num_transport_attr == 0 || a.transport_attr != NULL);
    CHECK(a.num_vendor_attr == 0 || a.vendor_attr != NULL);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_02_provider_attributes)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PROVIDER_ATTR p;
    int i, j;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    REQUIRE(query_prov_attr(ia, &p) == DAT_SUCCESS);
    CHECK(p.dapl_version_major == 1);
    CHECK(p.dapl_version_minor == 2);
    CHECK(p.max_private_data_size >= 64);
    CHECK(p.optimal_buffer_alignment > 0);
    CHECK(p.optimal_buffer_alignment <= 256);
    if (p.optimal_buffer_alignment > 0)
        CHECK(256 % p.optimal_buffer_alignment == 0);
    CHECK(p.is_thread_safe == DAT_THREADSAFE); /* the key dat_ia_open passed */
    CHECK((unsigned)p.iov_ownership_on_return <= 2);
    CHECK((unsigned)p.ep_creator <= 2);
    for (i = 0; i < 6; i++) {
        CHECK(p.evd_stream_merging_supported[i][i] == DAT_TRUE);
        for (j = 0; j < 6; j++) {
            if (p.evd_stream_merging_supported[i][j] != p.evd_stream_merging_supported[j][i]) {
                fprintf(stderr, "    merging matrix not symmetric at [%d][%d]\n", i, j);
                CHECK(0);
            }
        }
    }
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_03_null_outputs_with_zero_masks)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PROVIDER_ATTR p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, 0, NULL));
    memset(&p, 0, sizeof(p));
    CHECK_OK(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &p));
    CHECK(p.dapl_version_major == 1);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_04_async_evd_round_trip)
{
    DAT_IA_HANDLE ia1, ia2;
    DAT_EVD_HANDLE e1, e2, q;
    char name[256];

    REQUIRE(ctest_open_ia(&ia1, &e1) == DAT_SUCCESS);
    q = DAT_HANDLE_NULL;
    CHECK_OK(dat_ia_query(ia1, &q, 0, NULL, 0, NULL));
    CHECK(q == e1);

    snprintf(name, sizeof(name), "%s", ctest_ia_name());
    e2 = e1;
    REQUIRE(dat_ia_open(name, 8, &e2, &ia2) == DAT_SUCCESS);
    q = DAT_HANDLE_NULL;
    CHECK_OK(dat_ia_query(ia2, &q, 0, NULL, 0, NULL));
    CHECK(q == e1);
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_05_unknown_ia_mask_bit)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_IA_ATTR a;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_SUB(dat_ia_query(ia, NULL, (DAT_IA_ATTR_MASK)0x800000000ULL, &a, 0, NULL),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    CHECK_SUB(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL | (1ULL << 63), &a, 0, NULL),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_06_null_ia_attr)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_SUB(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, NULL, 0, NULL), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG4);
    CHECK_SUB(dat_ia_query(ia, NULL, DAT_IA_FIELD_IA_ADAPTER_NAME, NULL, 0, NULL),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_07_null_provider_attr)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_SUB(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, NULL),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    CHECK_SUB(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_IS_THREAD_SAFE, NULL),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_08_unknown_provider_mask_bit)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_PROVIDER_ATTR p;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_SUB(dat_ia_query(ia, NULL, 0, NULL, (DAT_PROVIDER_ATTR_MASK)0x4000000ULL, &p),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    CHECK_SUB(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL | (1ULL << 40), &p),
              DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_09_bad_handle)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd;
    DAT_IA_ATTR a;

    CHECK_RET(dat_ia_query(DAT_HANDLE_NULL, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL), 0x8005000B);
    CHECK_RET(dat_ia_query(DAT_HANDLE_NULL, NULL, 0, NULL, 0, NULL), 0x8005000B);
    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_TYPE(dat_ia_query((DAT_IA_HANDLE)evd, NULL, DAT_IA_FIELD_ALL, &a, 0, NULL),
               DAT_INVALID_HANDLE);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_10_instances_share_ia_attr)
{
    DAT_IA_HANDLE ia1, ia2;
    DAT_EVD_HANDLE e1, e2;
    DAT_IA_ATTR a1, a2;

    REQUIRE(ctest_open_ia(&ia1, &e1) == DAT_SUCCESS);
    REQUIRE(ctest_open_ia(&ia2, &e2) == DAT_SUCCESS);
    REQUIRE(query_ia_attr(ia1, &a1) == DAT_SUCCESS);
    REQUIRE(query_ia_attr(ia2, &a2) == DAT_SUCCESS);
    CHECK(diff_ia_attr(&a1, &a2) == 0);
    CHECK_OK(dat_ia_close(ia1, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_OK(dat_ia_close(ia2, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_11_query_is_stable)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, q1 = DAT_HANDLE_NULL, q2 = DAT_HANDLE_NULL;
    DAT_IA_ATTR a1, a2;
    DAT_PROVIDER_ATTR p1, p2;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    memset(&a1, 0, sizeof(a1));
    memset(&a2, 0, sizeof(a2));
    memset(&p1, 0, sizeof(p1));
    memset(&p2, 0, sizeof(p2));
    REQUIRE(dat_ia_query(ia, &q1, DAT_IA_FIELD_ALL, &a1, DAT_PROVIDER_FIELD_ALL, &p1) ==
            DAT_SUCCESS);
    REQUIRE(dat_ia_query(ia, &q2, DAT_IA_FIELD_ALL, &a2, DAT_PROVIDER_FIELD_ALL, &p2) ==
            DAT_SUCCESS);
    CHECK(q1 == q2);
    CHECK(diff_ia_attr(&a1, &a2) == 0);
    /* address contents are the same */
    if (a1.ia_address_ptr != NULL && a2.ia_address_ptr != NULL)
        CHECK(a1.ia_address_ptr->sa_family == a2.ia_address_ptr->sa_family);
    CHECK((a1.ia_address_ptr == NULL) == (a2.ia_address_ptr == NULL));
    CHECK(strncmp(p1.provider_name, p2.provider_name, DAT_NAME_MAX_LENGTH) == 0);
    CHECK(p1.provider_version_major == p2.provider_version_major);
    CHECK(p1.provider_version_minor == p2.provider_version_minor);
    CHECK(p1.dapl_version_major == p2.dapl_version_major);
    CHECK(p1.dapl_version_minor == p2.dapl_version_minor);
    CHECK(p1.lmr_mem_types_supported == p2.lmr_mem_types_supported);
    CHECK(p1.iov_ownership_on_return == p2.iov_ownership_on_return);
    CHECK(p1.dat_qos_supported == p2.dat_qos_supported);
    CHECK(p1.completion_flags_supported == p2.completion_flags_supported);
    CHECK(p1.is_thread_safe == p2.is_thread_safe);
    CHECK(p1.max_private_data_size == p2.max_private_data_size);
    CHECK(p1.supports_multipath == p2.supports_multipath);
    CHECK(p1.ep_creator == p2.ep_creator);
    CHECK(p1.pz_support == p2.pz_support);
    CHECK(p1.optimal_buffer_alignment == p2.optimal_buffer_alignment);
    CHECK(memcmp(p1.evd_stream_merging_supported, p2.evd_stream_merging_supported,
                 sizeof(p1.evd_stream_merging_supported)) == 0);
    CHECK(p1.srq_supported == p2.srq_supported);
    CHECK(p1.srq_watermarks_supported == p2.srq_watermarks_supported);
    CHECK(p1.srq_ep_pz_difference_supported == p2.srq_ep_pz_difference_supported);
    CHECK(p1.srq_info_supported == p2.srq_info_supported);
    CHECK(p1.ep_recv_info_supported == p2.ep_recv_info_supported);
    CHECK(p1.lmr_sync_req == p2.lmr_sync_req);
    CHECK(p1.dto_async_return_guaranteed == p2.dto_async_return_guaranteed);
    CHECK(p1.rdma_write_for_rdma_read_req == p2.rdma_write_for_rdma_read_req);
    CHECK(p1.num_provider_specific_attr == p2.num_provider_specific_attr);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
}

TEST(IAQ_12_is_thread_safe_matches_registry)
{
    const char *n = ctest_ia_name();
    DAT_COUNT size = -1, got = -1, i;
    DAT_PROVIDER_INFO *store = NULL;
    DAT_PROVIDER_INFO **list = NULL;
    int ts;

    /* size probe */
    CHECK_SUB(dat_registry_list_providers(0, &size, NULL), DAT_INVALID_PARAMETER,
              DAT_INVALID_ARG1);
    REQUIRE(size > 0);
    store = calloc((size_t)size, sizeof(*store));
    list = calloc((size_t)size, sizeof(*list));
    REQUIRE(store != NULL && list != NULL);
    for (i = 0; i < size; i++)
        list[i] = &store[i];
    REQUIRE(dat_registry_list_providers(size, &got, list) == DAT_SUCCESS);
    REQUIRE(got > 0 && got <= size);

    for (ts = 0; ts <= 1; ts++) {
        DAT_IA_HANDLE ia;
        DAT_EVD_HANDLE evd;
        DAT_PROVIDER_ATTR p;
        int listed = 0;
        DAT_BOOLEAN want = ts ? DAT_TRUE : DAT_FALSE;

        for (i = 0; i < got; i++) {
            if (strncmp(store[i].ia_name, n, DAT_NAME_MAX_LENGTH) == 0 &&
                store[i].dapl_version_major == 1 && store[i].is_thread_safe == want)
                listed = 1;
        }
        if (!listed)
            continue; /* this flag is not registered for the IA under test */
        if (openv_name(n, &ia, &evd, 1, 2, want) != DAT_SUCCESS) {
            fprintf(stderr, "    listed entry (ts=%d) does not open\n", ts);
            CHECK(0);
            continue;
        }
        CHECK(query_prov_attr(ia, &p) == DAT_SUCCESS);
        CHECK(p.is_thread_safe == want);
        CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    }
    /* the default (DAT_THREADSAFE) key must be listed */
    {
        int found = 0;
        for (i = 0; i < got; i++)
            if (strncmp(store[i].ia_name, n, DAT_NAME_MAX_LENGTH) == 0 &&
                store[i].is_thread_safe == DAT_THREADSAFE)
                found = 1;
        CHECK(found);
    }
    free(store);
    free(list);
}

TEST(IAQ_13_query_closed_ia)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE evd, q;
    DAT_IA_ATTR a;

    REQUIRE(ctest_open_ia(&ia, &evd) == DAT_SUCCESS);
    CHECK_OK(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    CHECK_TYPE(dat_ia_query(ia, &q, DAT_IA_FIELD_ALL, &a, 0, NULL), DAT_INVALID_HANDLE);
    CHECK_TYPE(dat_ia_query(ia, NULL, 0, NULL, 0, NULL), DAT_INVALID_HANDLE);
}

int main(int argc, char **argv) { return ctest_main(argc, argv); }
