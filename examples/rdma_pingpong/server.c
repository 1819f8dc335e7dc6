/*
 * rdma_pingpong server: opens an IA, registers a buffer, listens on a
 * connection qualifier (PSP), accepts one connection and sends the client
 * the buffer's RMR context, address and length. The client RDMA Writes a
 * pattern into the buffer and reads it back, then says DONE (with the
 * pattern's seed) in a Send; the server checks every byte, answers with
 * the result and waits for the client to disconnect.
 *
 * Usage: server [-D IA_NAME] [-q QUALIFIER] [-s SIZE] [-t SECONDS]
 *   -D  IA to open (default tcp0, loopback; e.g. eth0 across machines)
 *   -q  connection qualifier (default 4791; 0 = any free one, printed)
 *   -s  buffer size, K/M suffixes allowed (default 1M)
 *   -t  seconds to wait for the client to connect (default 60)
 * Exit status 0 when the client's data arrived intact, 1 on any failure.
 */
#include "common.h"

#include <unistd.h>

static void usage(void)
{
    fprintf(stderr, "usage: server [-D IA_NAME] [-q QUALIFIER] [-s SIZE] [-t SECONDS]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *ia_name = DEFAULT_IA_NAME;
    DAT_CONN_QUAL qual = DEFAULT_QUAL;
    DAT_VLEN size = 1u << 20;
    unsigned long accept_s = 60;
    int opt;
    char sbuf[32], abuf[INET6_ADDRSTRLEN + 8];

    prog = "server";
    setvbuf(stdout, NULL, _IOLBF, 0);
    while ((opt = getopt(argc, argv, "D:q:s:t:")) != -1) {
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
        case 's':
            if (parse_size(optarg, &size) != 0)
                usage();
            break;
        case 't':
            accept_s = strtoul(optarg, &end, 10);
            if (*end != '\0' || end == optarg || accept_s == 0 || accept_s > 4000)
                usage();
            break;
        default:
            usage();
        }
    }
    if (optind != argc)
        usage();

    /* The IA and its address. */
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_IA_ATTR ia_attr;
    DAT_PROVIDER_ATTR pr_attr;
    DAT_CALL(dat_ia_open(ia_name, 8, &async_evd, &ia));
    DAT_CALL(dat_ia_query(ia, &async_evd, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL,
                          &pr_attr));
    printf("server: IA %s, address %s\n", ia_name,
           addr_str(ia_attr.ia_address_ptr, abuf, sizeof(abuf)));
    if (size > ia_attr.max_rdma_size)
        die("-s: larger than the IA's max_rdma_size");

    /* Event dispatchers: connection requests, connection events, DTOs. */
    DAT_EVD_HANDLE cr_evd, conn_evd, req_evd, recv_evd;
    DAT_PZ_HANDLE pz;
    DAT_CALL(dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
    DAT_CALL(dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd));
    DAT_CALL(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_evd));
    DAT_CALL(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv_evd));
    DAT_CALL(dat_pz_create(ia, &pz));

    /* The buffer the client writes and reads, and one for messages. */
    struct region data, msg;
    region_create(ia, pz, size, &data);
    region_create(ia, pz, 2 * MSG_SIZE, &msg);
    for (DAT_VLEN i = 0; i < size; i++)
        data.buf[i] = 0xa5;
    printf("server: registered %s at %p (rmr_context 0x%08x)\n", size_str(size, sbuf, sizeof(sbuf)),
           (void *)data.buf, (unsigned)data.rmr_context);

    /* Listen. */
    DAT_PSP_HANDLE psp;
    if (qual == 0)
        DAT_CALL(dat_psp_create_any(ia, &qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    else
        DAT_CALL(dat_psp_create(ia, qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
    printf("server: listening on qualifier %llu\n", (unsigned long long)qual);
    fflush(stdout);

    /* One connection request; accept it on a new endpoint. */
    DAT_EVENT ev;
    DAT_EP_ATTR attr = ep_attr(size);
    DAT_EP_HANDLE ep;
    wait_event(cr_evd, (DAT_TIMEOUT)(accept_s * 1000000u), DAT_CONNECTION_REQUEST_EVENT,
               "a connection request", &ev);
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    DAT_CR_PARAM cr_param;
    DAT_CALL(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cr_param));
    printf("server: connection request from %s\n",
           addr_str(cr_param.remote_ia_address_ptr, abuf, sizeof(abuf)));
    double t_conn = now_s();
    DAT_CALL(dat_ep_create(ia, pz, recv_evd, req_evd, conn_evd, &attr, &ep));
    /* The receive for the client's DONE goes up before the connection does. */
    DAT_LMR_TRIPLET rx = triplet(&msg, MSG_SIZE, MSG_SIZE);
    DAT_DTO_COOKIE ck;
    ck.as_64 = 1;
    DAT_CALL(dat_ep_post_recv(ep, 1, &rx, ck, DAT_COMPLETION_DEFAULT_FLAG));
    DAT_CALL(dat_cr_accept(cr, ep, 0, NULL));
    wait_event(conn_evd, WAIT_US, DAT_CONNECTION_EVENT_ESTABLISHED, "the connection", &ev);
    printf("server: connected (accept to established %.0f us)\n", (now_s() - t_conn) * 1e6);

    /* Tell the client where the buffer is. */
    put32(msg.buf, MAGIC_REGION);
    put32(msg.buf + 4, data.rmr_context);
    put64(msg.buf + 8, (uint64_t)(uintptr_t)data.buf);
    put64(msg.buf + 16, size);
    DAT_LMR_TRIPLET tx = triplet(&msg, 0, 24);
    ck.as_64 = 2;
    DAT_CALL(dat_ep_post_send(ep, 1, &tx, ck, DAT_COMPLETION_DEFAULT_FLAG));
    wait_dto(req_evd, 2, "the Send of the RMR context");
    printf("server: sent rmr_context 0x%08x, address 0x%llx, length %llu\n",
           (unsigned)data.rmr_context, (unsigned long long)(uintptr_t)data.buf,
           (unsigned long long)size);

    /* The client's DONE: check what it wrote. */
    DAT_VLEN got = wait_dto(recv_evd, 1, "the client's DONE message");
    const unsigned char *in = msg.buf + MSG_SIZE;
    if (got < 16 || get32(in) != MAGIC_DONE)
        die("the client's DONE message is malformed");
    uint32_t seed = get32(in + 4);
    uint64_t wlen = get64(in + 8);
    if (wlen != size)
        die("the client says it wrote a different length");
    uint64_t bad = 0;
    for (uint64_t i = 0; i < size; i++) {
        if (data.buf[i] != pattern_byte(i, seed)) {
            bad = i + 1;
            break;
        }
    }
    if (bad == 0)
        printf("server: DONE received; all %llu bytes written by RDMA Write are as expected\n",
               (unsigned long long)size);
    else
        fprintf(stderr, "server: byte %llu is 0x%02x, expected 0x%02x\n",
                (unsigned long long)(bad - 1), data.buf[bad - 1], pattern_byte(bad - 1, seed));

    /* Answer with the result; the client then disconnects. */
    put32(msg.buf, MAGIC_RESULT);
    put32(msg.buf + 4, 0);
    put64(msg.buf + 8, bad);
    tx.segment_length = 16;
    ck.as_64 = 3;
    DAT_CALL(dat_ep_post_send(ep, 1, &tx, ck, DAT_COMPLETION_DEFAULT_FLAG));
    wait_dto(req_evd, 3, "the Send of the result");
    wait_event(conn_evd, WAIT_US, DAT_CONNECTION_EVENT_DISCONNECTED, "the client to disconnect",
               &ev);
    printf("server: client disconnected\n");

    DAT_CALL(dat_ep_free(ep));
    DAT_CALL(dat_psp_free(psp));
    region_free(&msg);
    region_free(&data);
    DAT_CALL(dat_pz_free(pz));
    DAT_CALL(dat_evd_free(recv_evd));
    DAT_CALL(dat_evd_free(req_evd));
    DAT_CALL(dat_evd_free(conn_evd));
    DAT_CALL(dat_evd_free(cr_evd));
    DAT_CALL(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG));
    if (bad != 0)
        die("the data written by the client is wrong");
    printf("server: OK\n");
    return 0;
}
