/*
 * The stub rdma-core libraries (tests/stub-verbs/) themselves, before the
 * DAT tests rely on them (verbs_load.c): every (library, function, version)
 * of the verbs transport's table (src/transport/verbs/lib.rs, listed in
 * stub_symbols.h by tests/stub-verbs/symbols.sh at build time) resolves
 * with dlvsym; the SONAMEs and librdmacm's dependency; the device as
 * $STUB_VERBS sets it; the transport's open sequence; completions, events
 * and the refusals a real device gives; the live-object report at exit.
 *
 * This program is linked against the stubs (rpath build/stub-verbs), so the
 * calls below go through rdma-core's own headers, inline wrappers
 * included, as an application's would.
 */
#include "ctest.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "stub.h"

#ifndef STUB_VERBS_DIR
#error "STUB_VERBS_DIR (the directory of the stub libraries) must be defined"
#endif

static const struct {
    const char *lib, *name, *version;
} table[] = {
#include "stub_symbols.h"
};

#define TABLE_LEN ((int)(sizeof(table) / sizeof(table[0])))

TEST(VSTUB_01_every_table_symbol_resolves_at_its_version)
{
    int i;

    CHECK(TABLE_LEN >= 40);
    for (i = 0; i < TABLE_LEN; i++) {
        char path[512];
        void *h;

        snprintf(path, sizeof(path), "%s/%s", STUB_VERBS_DIR, table[i].lib);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        REQUIRE(h != NULL);
        if (dlvsym(h, table[i].name, table[i].version) == NULL) {
            fprintf(stderr, "    %s: no %s@%s\n", table[i].lib, table[i].name, table[i].version);
            ctest_failures++;
        }
        CHECK(dlvsym(h, table[i].name, "IBVERBS_0.9") == NULL);
        dlclose(h);
    }
}

/* The SONAME of the loaded object `h`, and whether it needs `needed`. */
static const char *soname_of(void *h, const char *needed, int *has_needed)
{
    struct link_map *lm = NULL;
    const ElfW(Dyn) *d;
    const char *strtab = NULL, *soname = NULL;

    *has_needed = 0;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
        return NULL;
    for (d = lm->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr;
    if (strtab == NULL)
        return NULL;
    for (d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_SONAME)
            soname = strtab + d->d_un.d_val;
        if (d->d_tag == DT_NEEDED && needed != NULL && strcmp(strtab + d->d_un.d_val, needed) == 0)
            *has_needed = 1;
    }
    return soname;
}

TEST(VSTUB_02_sonames_and_librdmacm_needs_libibverbs)
{
    void *v = dlopen(STUB_VERBS_DIR "/libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *r = dlopen(STUB_VERBS_DIR "/librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD);
    const char *s;
    int needs = 0;

    REQUIRE(v != NULL && r != NULL);
    s = soname_of(v, NULL, &needs);
    CHECK(s != NULL && strcmp(s, "libibverbs.so.1") == 0);
    s = soname_of(r, "libibverbs.so.1", &needs);
    CHECK(s != NULL && strcmp(s, "librdmacm.so.1") == 0);
    CHECK(needs);
}

static int bind_loopback(struct rdma_event_channel **ch, struct rdma_cm_id **id)
{
    struct sockaddr_in sin;

    *ch = rdma_create_event_channel();
    if (*ch == NULL || rdma_create_id(*ch, id, NULL, RDMA_PS_TCP) != 0)
        return -1;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return rdma_bind_addr(*id, (struct sockaddr *)&sin);
}

static int counts_are(const char *want)
{
    char line[128];

    stub_verbs_report_line(line, sizeof(line));
    if (strcmp(line, want) != 0) {
        fprintf(stderr, "    live objects: \"%s\", want \"%s\"\n", line, want);
        return 0;
    }
    return 1;
}

TEST(VSTUB_03_nodev_has_no_device)
{
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id = NULL;
    struct ibv_device **list;
    int n = -1;

    setenv("STUB_VERBS", "nodev", 1);
    list = ibv_get_device_list(&n);
    REQUIRE(list != NULL);
    CHECK(n == 0);
    CHECK(list[0] == NULL);
    ibv_free_device_list(list);
    errno = 0;
    CHECK(bind_loopback(&ch, &id) == -1);
    CHECK(errno == ENODEV);
    REQUIRE(id != NULL);
    CHECK(id->verbs == NULL);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(counts_are("pd 0 mr 0 cq 0 qp 0 ch 0 id 0 ctx 0"));
}

static int fd_valid(int fd)
{
    return fd >= 0 && fcntl(fd, F_GETFD) != -1;
}

TEST(VSTUB_04_open_sequence_on_a_device_without_mw_and_srq)
{
    static char buf[4096];
    struct rdma_event_channel *ech;
    struct rdma_cm_id *id;
    struct ibv_device **list;
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    struct ibv_comp_channel *cch;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_qp_init_attr qa;
    struct ibv_srq_init_attr sa;
    struct ibv_async_event ae;
    uint32_t lkey = 0, rkey = 0;
    int n = 0;

    unsetenv("STUB_VERBS");
    list = ibv_get_device_list(&n);
    REQUIRE(list != NULL && n == 1);
    CHECK(strcmp(ibv_get_device_name(list[0]), "stub0") == 0);
    ibv_free_device_list(list);

    REQUIRE(bind_loopback(&ech, &id) == 0);
    CHECK(fd_valid(ech->fd));
    ctx = id->verbs;
    REQUIRE(ctx != NULL);
    CHECK(id->port_num == 1);
    CHECK(id->route.addr.src_sin.sin_port != 0);
    CHECK(strcmp(ibv_get_device_name(ctx->device), "stub0") == 0);
    CHECK(fd_valid(ctx->async_fd));

    CHECK(ibv_query_device(ctx, &da) == 0);
    CHECK(da.max_qp == 1024 && da.max_qp_wr == 4096 && da.max_sge == 4);
    CHECK(da.max_cq == 64 && da.max_cqe == 4096 && da.max_mr == 1024 && da.max_pd == 16);
    CHECK(da.max_mr_size == 1ull << 32);
    CHECK(da.max_qp_rd_atom == 4 && da.max_qp_init_rd_atom == 4);
    CHECK(da.max_mw == 0 && da.max_srq == 0);
    CHECK(ibv_query_port(ctx, 1, &pa) == 0);
    CHECK(pa.state == IBV_PORT_ACTIVE);
    CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET);
    CHECK(pa.active_mtu == IBV_MTU_1024);
    CHECK(ibv_query_port(ctx, 2, &pa) == EINVAL);

    pd = ibv_alloc_pd(ctx);
    REQUIRE(pd != NULL);
    mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    REQUIRE(mr != NULL);
    CHECK(mr->addr == buf && mr->length == sizeof(buf) && mr->pd == pd && mr->context == ctx);
    CHECK(mr->lkey != mr->rkey);
    CHECK(stub_verbs_mr_keys(buf + 8, 16, &lkey, &rkey) == 0);
    CHECK(lkey == mr->lkey && rkey == mr->rkey);
    errno = 0;
    CHECK(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE) == NULL);
    CHECK(errno == EINVAL);

    cch = ibv_create_comp_channel(ctx);
    REQUIRE(cch != NULL);
    CHECK(fd_valid(cch->fd));
    cq = ibv_create_cq(ctx, 10, NULL, cch, 0);
    REQUIRE(cq != NULL);
    CHECK(cq->cqe >= 10);
    CHECK(ibv_resize_cq(cq, 100) == 0 && cq->cqe >= 100);

    memset(&qa, 0, sizeof(qa));
    qa.send_cq = cq;
    qa.recv_cq = cq;
    qa.cap.max_send_wr = 8;
    qa.cap.max_recv_wr = 8;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.qp_type = IBV_QPT_RC;
    qp = ibv_create_qp(pd, &qa);
    REQUIRE(qp != NULL);
    CHECK(qp->state == IBV_QPS_RESET);
    CHECK(qp->qp_num != 0);
    CHECK(counts_are("pd 1 mr 1 cq 1 qp 1 ch 2 id 1 ctx 0"));

    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    errno = 0;
    CHECK(ibv_create_srq(pd, &sa) == NULL);
    CHECK(errno == EOPNOTSUPP);
    errno = 0;
    CHECK(ibv_alloc_mw(pd, IBV_MW_TYPE_1) == NULL);
    CHECK(errno == EOPNOTSUPP);
    errno = 0;
    CHECK(ibv_get_async_event(ctx, &ae) == -1);
    CHECK(errno == EAGAIN);

    /* In use: refused, as the kernel refuses it. */
    CHECK(ibv_dealloc_pd(pd) == EBUSY);
    CHECK(ibv_destroy_cq(cq) == EBUSY);
    CHECK(ibv_destroy_comp_channel(cch) == EBUSY);

    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
    CHECK(ibv_destroy_comp_channel(cch) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ech);
    CHECK(counts_are("pd 0 mr 0 cq 0 qp 0 ch 0 id 0 ctx 0"));
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = s;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int readable(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

/* ibv_destroy_cq with stderr sent to /dev/null. */
static int quietly_destroy_cq(struct ibv_cq *cq)
{
    int saved, null, rc;

    fflush(stderr);
    saved = dup(2);
    null = open("/dev/null", O_WRONLY);
    if (saved < 0 || null < 0 || dup2(null, 2) < 0)
        return -1;
    rc = ibv_destroy_cq(cq);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(null);
    return rc;
}

TEST(VSTUB_05_completions_and_events)
{
    static char buf[256];
    struct rdma_event_channel *ech;
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    struct ibv_comp_channel *cch;
    struct ibv_cq *cq, *ev_cq = NULL;
    struct ibv_qp *qp;
    struct ibv_qp_init_attr qa;
    struct ibv_sge sge;
    struct ibv_send_wr swr, *sbad = NULL;
    struct ibv_recv_wr rwr, *rbad = NULL;
    struct ibv_wc wc[4];
    void *ev_ctx = NULL;
    int cq_tag;

    unsetenv("STUB_VERBS");
    REQUIRE(bind_loopback(&ech, &id) == 0);
    pd = ibv_alloc_pd(id->verbs);
    mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    cch = ibv_create_comp_channel(id->verbs);
    cq = ibv_create_cq(id->verbs, 16, &cq_tag, cch, 0);
    REQUIRE(pd != NULL && mr != NULL && cch != NULL && cq != NULL);
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = cq;
    qa.recv_cq = cq;
    qa.cap.max_send_wr = 2;
    qa.cap.max_recv_wr = 2;
    qa.cap.max_send_sge = 1;
    qa.cap.max_recv_sge = 1;
    qa.qp_type = IBV_QPT_RC;
    qp = ibv_create_qp(pd, &qa);
    REQUIRE(qp != NULL);

    sge.addr = (uintptr_t)buf;
    sge.length = 100;
    sge.lkey = mr->lkey;
    memset(&swr, 0, sizeof(swr));
    swr.wr_id = 7;
    swr.sg_list = &sge;
    swr.num_sge = 1;
    swr.opcode = IBV_WR_SEND;
    swr.send_flags = IBV_SEND_SIGNALED;
    memset(&rwr, 0, sizeof(rwr));
    rwr.wr_id = 8;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;

    /* Posting needs the right state; transitions follow the QP diagram. */
    CHECK(ibv_post_recv(qp, &rwr, &rbad) == EINVAL && rbad == &rwr);
    CHECK(to_state(qp, IBV_QPS_RTS) == EINVAL);
    CHECK(to_state(qp, IBV_QPS_INIT) == 0);
    CHECK(ibv_post_send(qp, &swr, &sbad) == EINVAL && sbad == &swr);
    CHECK(to_state(qp, IBV_QPS_RTR) == 0);
    CHECK(to_state(qp, IBV_QPS_RTS) == 0);
    CHECK(qp->state == IBV_QPS_RTS);

    /* Nothing yet: no completion, no event. */
    CHECK(ibv_poll_cq(cq, 4, wc) == 0);
    errno = 0;
    CHECK(ibv_get_cq_event(cch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN);

    /* An armed CQ signals its channel on the next completion, once. */
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(ibv_post_send(qp, &swr, &sbad) == 0);
    CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0);
    CHECK(readable(cch->fd));
    CHECK(ibv_get_cq_event(cch, &ev_cq, &ev_ctx) == 0);
    CHECK(ev_cq == cq && ev_ctx == &cq_tag);
    CHECK(!readable(cch->fd));
    CHECK(ibv_get_cq_event(cch, &ev_cq, &ev_ctx) == -1);

    /* The queue depth is enforced until completions are polled. */
    CHECK(ibv_post_send(qp, &swr, &sbad) == 0);
    CHECK(ibv_post_send(qp, &swr, &sbad) == ENOMEM);
    CHECK(ibv_poll_cq(cq, 4, wc) == 3);
    CHECK(wc[0].wr_id == 7 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND);
    CHECK(wc[0].qp_num == qp->qp_num);
    CHECK(wc[1].wr_id == 8 && wc[1].status == IBV_WC_SUCCESS && wc[1].opcode == IBV_WC_RECV);
    CHECK(wc[2].wr_id == 7);

    /* Unacknowledged events keep the CQ from being destroyed (the stub
     * says so on stderr, silenced here). */
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(quietly_destroy_cq(cq) == EBUSY);
    ibv_ack_cq_events(cq, 1);

    /* A key that is not the MR's: protection error, QP to ERR, then flushes. */
    qp = ibv_create_qp(pd, &qa);
    REQUIRE(qp != NULL);
    CHECK(to_state(qp, IBV_QPS_INIT) == 0 && to_state(qp, IBV_QPS_RTR) == 0 &&
          to_state(qp, IBV_QPS_RTS) == 0);
    sge.lkey = mr->rkey;
    CHECK(ibv_post_send(qp, &swr, &sbad) == 0);
    CHECK(qp->state == IBV_QPS_ERR);
    sge.lkey = mr->lkey;
    CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0);
    CHECK(ibv_poll_cq(cq, 4, wc) == 2);
    CHECK(wc[0].status == IBV_WC_LOC_PROT_ERR);
    CHECK(wc[1].status == IBV_WC_WR_FLUSH_ERR && wc[1].wr_id == 8);

    /* A destroyed QP's completions leave its CQ. */
    CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0);
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_poll_cq(cq, 4, wc) == 0);

    CHECK(ibv_destroy_cq(cq) == 0);
    CHECK(ibv_destroy_comp_channel(cch) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ech);
    CHECK(counts_are("pd 0 mr 0 cq 0 qp 0 ch 0 id 0 ctx 0"));
}

TEST(VSTUB_06_bind_ports)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *a, *b, *w;
    struct sockaddr_in sin;

    unsetenv("STUB_VERBS");
    REQUIRE(ch != NULL);
    REQUIRE(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
    REQUIRE(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP) == 0);
    REQUIRE(rdma_create_id(ch, &w, NULL, RDMA_PS_TCP) == 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(4791);
    CHECK(rdma_bind_addr(a, (struct sockaddr *)&sin) == 0);
    errno = 0;
    CHECK(rdma_bind_addr(b, (struct sockaddr *)&sin) == -1 && errno == EADDRINUSE);
    sin.sin_addr.s_addr = htonl(INADDR_ANY);
    sin.sin_port = 0;
    CHECK(rdma_bind_addr(w, (struct sockaddr *)&sin) == 0);
    CHECK(w->verbs == NULL);
    CHECK(w->route.addr.src_sin.sin_port != 0);
    errno = 0;
    CHECK(rdma_listen(a, 8) == -1 && errno == ENOSYS);
    CHECK(strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED") == 0);
    CHECK(rdma_destroy_id(a) == 0 && rdma_destroy_id(b) == 0 && rdma_destroy_id(w) == 0);
    rdma_destroy_event_channel(ch);
    CHECK(counts_are("pd 0 mr 0 cq 0 qp 0 ch 0 id 0 ctx 0"));
}

TEST(VSTUB_07_report_written_at_exit)
{
    char path[] = "/tmp/stub_verbs_report_XXXXXX";
    char line[128] = "";
    int fd = mkstemp(path), status = 0;
    pid_t pid;
    FILE *f;

    REQUIRE(fd >= 0);
    close(fd);
    unsetenv("STUB_VERBS");
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        struct rdma_event_channel *ch;
        struct rdma_cm_id *id;

        setenv("STUB_VERBS_REPORT", path, 1);
        if (bind_loopback(&ch, &id) != 0 || ibv_alloc_pd(id->verbs) == NULL)
            _exit(2);
        exit(0); /* leaking all three: the destructor reports them */
    }
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    f = fopen(path, "r");
    REQUIRE(f != NULL);
    CHECK(fgets(line, sizeof(line), f) != NULL);
    fclose(f);
    unlink(path);
    CHECK(strcmp(line, "pd 1 mr 0 cq 0 qp 0 ch 1 id 1 ctx 0\n") == 0);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
