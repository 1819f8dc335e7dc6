/*
 * The two-process fixture "PAIR" of semantics-ep.md §4.0.
 *
 * Inside a TEST (which already runs in its own child), pair_start() forks
 * once more: the new child is the server (passive side, P), the caller
 * stays the client (active side, A). Both open the test IA and create
 * their EVDs (CR, connection, request DTO, receive DTO) and a PZ; the
 * server creates a PSP with dat_psp_create_any and sends its IA address
 * and connection qualifier to the client over a pipe. pair_connect()
 * then creates one EP per side and connects it (client: dat_ep_connect;
 * server: CR event, dat_cr_accept); both wait for ESTABLISHED.
 *
 * Each side runs its own half of the test (if (p.server) ... else ...)
 * and records failures with CHECK as usual; pair_finish() ends the
 * server (its exit status carries its failures) and, in the client,
 * waits for the server and counts its failure. The pipes also carry small
 * messages between the sides (pair_tell / pair_hear), e.g. an RMR
 * context or "ready".
 *
 * Include after ctest.h.
 */
#ifndef CTEST_PAIR_H
#define CTEST_PAIR_H

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#define PAIR_WAIT_US 10000000u /* every event wait: 10 s */

struct pair {
    int server;           /* 1 in the server process, 0 in the client */
    pid_t server_pid;     /* in the client */
    int tx, rx;           /* pipe ends to and from the peer process */
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd, cr_evd, conn_evd, req_evd, recv_evd;
    DAT_PZ_HANDLE pz;
    DAT_PSP_HANDLE psp;   /* server */
    DAT_CONN_QUAL qual;   /* the server's PSP qualifier (both sides) */
    struct sockaddr_storage server_addr; /* the server's IA address (both) */
    DAT_EP_HANDLE ep;     /* after pair_connect */
};

/* Writes all of buf to the peer. 0 on success. */
static inline int pair_tell(struct pair *p, const void *buf, size_t len)
{
    const char *b = (const char *)buf;
    while (len > 0) {
        ssize_t n = write(p->tx, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly len bytes from the peer within 20 s. 0 on success. */
static inline int pair_hear(struct pair *p, void *buf, size_t len)
{
    char *b = (char *)buf;
    while (len > 0) {
        struct pollfd pfd = {p->rx, POLLIN, 0};
        int r = poll(&pfd, 1, 20000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = read(p->rx, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A one-byte rendezvous: tell the peer `tag`, then wait for its `tag`. */
static inline int pair_sync(struct pair *p, char tag)
{
    char got = 0;
    if (pair_tell(p, &tag, 1) != 0 || pair_hear(p, &got, 1) != 0)
        return -1;
    return got == tag ? 0 : -1;
}

/* Waits up to PAIR_WAIT_US for one event on evd. */
static inline DAT_RETURN pair_wait(DAT_EVD_HANDLE evd, DAT_EVENT *ev)
{
    DAT_COUNT nmore = 0;
    return dat_evd_wait(evd, PAIR_WAIT_US, 1, ev, &nmore);
}

/*
 * Whether connection private data arrives padded on the IA under test: over
 * InfiniBand and RoCE, rdma_cm carries no length, so the receiver sees the
 * whole REQ/REP private data field (its unused tail zero), as OFED's dapl
 * reported it. The IA says so in its provider-specific attribute
 * "private_data_exact" ("false"); elsewhere the size is exact.
 */
static int pair_pd_padded;

/* Whether the IA's provider-specific attribute `name` starts with `value`
 * (all of it when `whole`). */
static inline int pair_ia_attr_is(DAT_IA_HANDLE ia, const char *name, const char *value, int whole)
{
    DAT_PROVIDER_ATTR pr;
    DAT_COUNT i;
    memset(&pr, 0, sizeof(pr));
    if (dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL, &pr) != DAT_SUCCESS)
        return 0;
    for (i = 0; i < pr.num_provider_specific_attr; i++)
        if (strcmp(pr.provider_specific_attr[i].name, name) == 0)
            return whole ? strcmp(pr.provider_specific_attr[i].value, value) == 0
                         : strncmp(pr.provider_specific_attr[i].value, value, strlen(value)) == 0;
    return 0;
}

static inline int pair_ia_says(DAT_IA_HANDLE ia, const char *name, const char *value)
{
    return pair_ia_attr_is(ia, name, value, 1);
}

/* Private data of `gsz` bytes at `got` stands for `wsz` bytes the peer
 * sent: the same size, or (padded) larger with a zero tail. */
static inline int pair_pd_size_ok(const void *got, DAT_COUNT gsz, DAT_COUNT wsz)
{
    DAT_COUNT i;
    if (gsz == wsz)
        return 1;
    if (!pair_pd_padded || gsz < wsz || got == NULL)
        return 0;
    for (i = wsz; i < gsz; i++)
        if (((const unsigned char *)got)[i] != 0)
            return 0;
    return 1;
}

/* Creates the per-side objects (IA, EVDs of qlen `qlen`, PZ). */
static inline int pair_objects(struct pair *p, DAT_COUNT qlen)
{
    if (ctest_open_ia(&p->ia, &p->async_evd) != DAT_SUCCESS)
        return -1;
    pair_pd_padded = pair_ia_says(p->ia, "private_data_exact", "false");
    if (dat_evd_create(p->ia, qlen, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &p->cr_evd) ||
        dat_evd_create(p->ia, qlen, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &p->conn_evd) ||
        dat_evd_create(p->ia, qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
                       &p->req_evd) ||
        dat_evd_create(p->ia, qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &p->recv_evd) ||
        dat_pz_create(p->ia, &p->pz))
        return -1;
    return 0;
}

/*
 * Forks the server. Returns 0 in both processes with the objects made and
 * the server's address and qualifier known to both; -1 on a setup failure
 * (in the server process, a setup failure exits it).
 */
static inline int pair_start(struct pair *p)
{
    int a[2], b[2];
    memset(p, 0, sizeof(*p));
    if (pipe(a) != 0 || pipe(b) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        p->server = 1;
        p->tx = a[1];
        p->rx = b[0];
        close(a[0]);
        close(b[1]);
        if (pair_objects(p, 64) != 0 ||
            dat_psp_create_any(p->ia, &p->qual, p->cr_evd, DAT_PSP_CONSUMER_FLAG, &p->psp)) {
            fprintf(stderr, "    pair: server setup failed\n");
            _exit(1);
        }
        DAT_IA_ATTR ia_attr;
        DAT_PROVIDER_ATTR pr_attr;
        if (dat_ia_query(p->ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, &pr_attr) != DAT_SUCCESS)
            _exit(1);
        size_t alen = ia_attr.ia_address_ptr->sa_family == AF_INET6
                          ? sizeof(struct sockaddr_in6)
                          : sizeof(struct sockaddr_in);
        memcpy(&p->server_addr, ia_attr.ia_address_ptr, alen);
        if (pair_tell(p, &p->server_addr, sizeof(p->server_addr)) != 0 ||
            pair_tell(p, &p->qual, sizeof(p->qual)) != 0)
            _exit(1);
        return 0;
    }
    p->server = 0;
    p->server_pid = pid;
    p->tx = b[1];
    p->rx = a[0];
    close(a[1]);
    close(b[0]);
    if (pair_objects(p, 64) != 0)
        return -1;
    if (pair_hear(p, &p->server_addr, sizeof(p->server_addr)) != 0 ||
        pair_hear(p, &p->qual, sizeof(p->qual)) != 0)
        return -1;
    return 0;
}

/* Default EP attributes of the fixture (NULL attributes = provider defaults). */
static inline int pair_connect_with(struct pair *p, const DAT_EP_ATTR *attr,
                                    const void *pd, DAT_COUNT pd_size)
{
    DAT_EVENT ev;
    if (dat_ep_create(p->ia, p->pz, p->recv_evd, p->req_evd, p->conn_evd, attr, &p->ep))
        return -1;
    if (p->server) {
        if (pair_wait(p->cr_evd, &ev) != DAT_SUCCESS ||
            ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
            return -1;
        if (dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, p->ep, pd_size,
                          (DAT_PVOID)pd))
            return -1;
    } else {
        if (dat_ep_connect(p->ep, (DAT_IA_ADDRESS_PTR)&p->server_addr, p->qual, PAIR_WAIT_US,
                           pd_size, (DAT_PVOID)pd, DAT_QOS_BEST_EFFORT,
                           DAT_CONNECT_DEFAULT_FLAG))
            return -1;
    }
    if (pair_wait(p->conn_evd, &ev) != DAT_SUCCESS ||
        ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        return -1;
    return 0;
}

static inline int pair_connect(struct pair *p, const DAT_EP_ATTR *attr)
{
    return pair_connect_with(p, attr, NULL, 0);
}

/*
 * Ends the pair. In the server: exits with its result. In the client:
 * waits (at most 30 s) for the server and counts a server failure.
 */
static inline void pair_finish(struct pair *p)
{
    if (p->server) {
        fflush(stdout);
        fflush(stderr);
        _exit(ctest_failures == 0 ? 0 : 1);
    }
    close(p->tx);
    int status = 0;
    for (int i = 0; i < 3000; i++) {
        pid_t r = waitpid(p->server_pid, &status, WNOHANG);
        if (r == p->server_pid) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "    pair: the server side failed (status 0x%x)\n", status);
                ctest_failures++;
            }
            return;
        }
        ctest_sleep_ms(10);
    }
    kill(p->server_pid, SIGKILL);
    waitpid(p->server_pid, &status, 0);
    fprintf(stderr, "    pair: the server side hung\n");
    ctest_failures++;
}

#endif /* CTEST_PAIR_H */
