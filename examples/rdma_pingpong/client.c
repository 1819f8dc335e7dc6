/*
 * rdma_pingpong client: connects to the server's PSP, receives the RMR
 * context of the server's buffer in a Send, RDMA Writes a pattern into the
 * whole buffer, RDMA Reads it back and checks it byte for byte, then tells
 * the server (DONE, with the pattern's seed) so that it checks the buffer
 * itself, receives its verdict and disconnects.
 *
 * Usage: client [-D IA_NAME] [-q QUALIFIER] HOST
 *   -D    IA to open (default tcp0, loopback; e.g. eth0 across machines)
 *   -q    the server's connection qualifier (default 4791)
 *   HOST  the server's IA address or host name (resolved with getaddrinfo
 *         in the address family of the local IA)
 * Exit status 0 when both checks pass, 1 on any failure.
 */
#include "common.h"

#include <netdb.h>
#include <unistd.h>

static void usage(void)
{
    fprintf(stderr, "usage: client [-D IA_NAME] [-q QUALIFIER] HOST\n");
    exit(2);
}

static void print_rate(const char *what, DAT_VLEN len, double secs)
{
    char sbuf[32];
    printf("client: %-11s %s in %.1f us (%.3f GB/s)\n", what, size_str(len, sbuf, sizeof(sbuf)),
           secs * 1e6, (double)len / secs / 1e9);
}

int main(int argc, char **argv)
{
    const char *ia_name = DEFAULT_IA_NAME;
    DAT_CONN_QUAL qual = DEFAULT_QUAL;
    int opt;
    char abuf[INET6_ADDRSTRLEN + 8], msgbuf[256];

    prog = "client";
    setvbuf(stdout, NULL, _IOLBF, 0);
    while ((opt = getopt(argc, argv, "D:q:")) != -1) {
        char *end;
        switch (opt) {
        case 'D':
            ia_name = optarg;
            break;
        case 'q':
            qual = strtoull(optarg, &end, 0);
            if (*end != '\0' || end == optarg)
                usage();
            break;
        default:
            usage();
        }
    }
    if (optind != argc - 1)
        usage();
    const char *host = argv[optind];

    /* The IA; its address family decides how HOST is resolved. */
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr_attr;
    DAT_CALL(dat_ia_open(ia_name, 8, &async_evd, &ia));
    DAT_CALL(dat_ia_query(ia, &async_evd, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL,
                          &pr_attr));
    int family = ia_attr.ia_address_ptr->sa_family;
    printf("client: IA %s, address %s\n", ia_name,
           addr_str(ia_attr.ia_address_ptr, abuf, sizeof(abuf)));

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, NULL, &hints, &res);
    if (gai != 0) {
        snprintf(msgbuf, sizeof(msgbuf), "cannot resolve %s: %s", host, gai_strerror(gai));
        die(msgbuf);
    }
    struct sockaddr_storage server;
    memset(&server, 0, sizeof(server));
    memcpy(&server, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);

    DAT_EVD_HANDLE conn_evd, req_evd, recv_evd;
    DAT_PZ_HANDLE pz;
    DAT_CALL(dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd));
    DAT_CALL(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_evd));
    DAT_CALL(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv_evd));
    DAT_CALL(dat_pz_create(ia, &pz));
    struct region msg;
    region_create(ia, pz, 2 * MSG_SIZE, &msg);

    /* Connect, with the receive for the server's first message posted. */
    DAT_EP_ATTR attr = ep_attr(ia_attr.max_rdma_size);
    DAT_EP_HANDLE ep;
    DAT_EVENT ev;
    DAT_DTO_COOKIE ck;
    DAT_CALL(dat_ep_create(ia, pz, recv_evd, req_evd, conn_evd, &attr, &ep));
    DAT_LMR_TRIPLET rx = triplet(&msg, MSG_SIZE, MSG_SIZE);
    ck.as_64 = 1;
    DAT_CALL(dat_ep_post_recv(ep, 1, &rx, ck, DAT_COMPLETION_DEFAULT_FLAG));
    printf("client: connecting to %s, qualifier %llu\n",
           addr_str((struct sockaddr *)&server, abuf, sizeof(abuf)), (unsigned long long)qual);
    double t0 = now_s();
    DAT_CALL(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&server, qual, WAIT_US, 0, NULL,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
    DAT_COUNT nmore;
    DAT_RETURN rc = dat_evd_wait(conn_evd, WAIT_US, 1, &ev, &nmore);
    if (rc != DAT_SUCCESS)
        die_dat("dat_evd_wait (connection event)", rc);
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        snprintf(msgbuf, sizeof(msgbuf), "connection to %s qualifier %llu failed: %s%s", abuf,
                 (unsigned long long)qual, event_name(ev.event_number),
                 ev.event_number == DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                     ? " (no server listening there?)"
                     : "");
        die(msgbuf);
    }
    printf("client: connected in %.0f us\n", (now_s() - t0) * 1e6);

    /* The server's buffer. */
    DAT_VLEN got = wait_dto(recv_evd, 1, "the server's RMR context");
    const unsigned char *in = msg.buf + MSG_SIZE;
    if (got < 24 || get32(in) != MAGIC_REGION)
        die("the server's first message is malformed");
    DAT_RMR_CONTEXT rctx = get32(in + 4);
    DAT_VADDR raddr = get64(in + 8);
    DAT_VLEN len = get64(in + 16);
    if (len == 0 || len > ia_attr.max_rdma_size)
        die("the server's buffer length is out of range");
    printf("client: got rmr_context 0x%08x, address 0x%llx, length %llu\n", (unsigned)rctx,
           (unsigned long long)raddr, (unsigned long long)len);

    /* RDMA Write a pattern into all of it. */
    struct region src, dst;
    region_create(ia, pz, len, &src);
    region_create(ia, pz, len, &dst);
    uint32_t seed = (uint32_t)time(NULL) ^ (uint32_t)getpid();
    for (DAT_VLEN i = 0; i < len; i++)
        src.buf[i] = pattern_byte(i, seed);
    DAT_LMR_TRIPLET lt = triplet(&src, 0, len);
    DAT_RMR_TRIPLET rt;
    rt.rmr_context = rctx;
    rt.pad = 0;
    rt.target_address = raddr;
    rt.segment_length = len;
    ck.as_64 = 2;
    t0 = now_s();
    DAT_CALL(dat_ep_post_rdma_write(ep, 1, &lt, ck, &rt, DAT_COMPLETION_DEFAULT_FLAG));
    wait_dto(req_evd, 2, "the RDMA Write");
    print_rate("RDMA Write", len, now_s() - t0);

    /* RDMA Read it back into another buffer and compare. */
    lt = triplet(&dst, 0, len);
    ck.as_64 = 3;
    t0 = now_s();
    DAT_CALL(dat_ep_post_rdma_read(ep, 1, &lt, ck, &rt, DAT_COMPLETION_DEFAULT_FLAG));
    DAT_VLEN rlen = wait_dto(req_evd, 3, "the RDMA Read");
    print_rate("RDMA Read", len, now_s() - t0);
    if (rlen != len)
        die("the RDMA Read completed with a different length");
    for (DAT_VLEN i = 0; i < len; i++) {
        if (dst.buf[i] != src.buf[i]) {
            snprintf(msgbuf, sizeof(msgbuf), "read back: byte %llu is 0x%02x, expected 0x%02x",
                     (unsigned long long)i, dst.buf[i], src.buf[i]);
            die(msgbuf);
        }
    }
    printf("client: read back all %llu bytes, as written\n", (unsigned long long)len);

    /* DONE -> server checks its buffer -> RESULT. */
    ck.as_64 = 4;
    DAT_CALL(dat_ep_post_recv(ep, 1, &rx, ck, DAT_COMPLETION_DEFAULT_FLAG));
    put32(msg.buf, MAGIC_DONE);
    put32(msg.buf + 4, seed);
    put64(msg.buf + 8, len);
    DAT_LMR_TRIPLET tx = triplet(&msg, 0, 16);
    ck.as_64 = 5;
    t0 = now_s();
    DAT_CALL(dat_ep_post_send(ep, 1, &tx, ck, DAT_COMPLETION_DEFAULT_FLAG));
    wait_dto(req_evd, 5, "the Send of DONE");
    got = wait_dto(recv_evd, 4, "the server's result");
    if (got < 16 || get32(in) != MAGIC_RESULT)
        die("the server's result message is malformed");
    uint64_t bad = get64(in + 8);
    if (bad != 0) {
        snprintf(msgbuf, sizeof(msgbuf), "the server found byte %llu wrong",
                 (unsigned long long)(bad - 1));
        die(msgbuf);
    }
    printf("client: server checked the buffer: OK (DONE -> result %.0f us)\n",
           (now_s() - t0) * 1e6);

    DAT_CALL(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
    wait_event(conn_evd, WAIT_US, DAT_CONNECTION_EVENT_DISCONNECTED, "the disconnection", &ev);
    printf("client: disconnected\n");

    DAT_CALL(dat_ep_free(ep));
    region_free(&dst);
    region_free(&src);
    region_free(&msg);
    DAT_CALL(dat_pz_free(pz));
    DAT_CALL(dat_evd_free(recv_evd));
    DAT_CALL(dat_evd_free(req_evd));
    DAT_CALL(dat_evd_free(conn_evd));
    DAT_CALL(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    printf("client: OK\n");
    return 0;
}
