/*
 * End-to-end connection cases beyond the spec's numbered tests
 * (semantics-ep.md §0.4, §2, §4.3, §4.17, §4.18; rulings.md): private data
 * both ways at the size limits, rejection and reuse, connect timeout,
 * nothing listening, kill -9 of either peer, 32 connections at once,
 * address handling (port field ignored, unsupported families), qualifier
 * collisions, a connection inside one process.
 */
#include "conn_util.h"

TEST(E2E_CONN_01_private_data_both_ways)
{
    struct pair p;
    DAT_COUNT sz[4];
    unsigned char cpd[4096], spd[4096];
    int i;

    REQUIRE(pair_start(&p) == 0);
    sz[0] = 0;
    sz[1] = 1;
    sz[3] = max_pd(p.ia);
    sz[2] = sz[3] > 64 ? 64 : sz[3] / 2; /* InfiniBand's REQ: 56 */
    REQUIRE(sz[3] >= 4 && sz[3] < (DAT_COUNT)sizeof(cpd));
    for (i = 0; i < 4; i++) {
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_EVENT ev;
        REQUIRE(ep != DAT_HANDLE_NULL);
        pd_fill(cpd, sz[i], 10u + (unsigned)i);
        pd_fill(spd, sz[i], 20u + (unsigned)i);
        if (p.server) {
            DAT_CR_PARAM cp;
            DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
            REQUIRE(cr != DAT_HANDLE_NULL);
            memset(&cp, 0, sizeof(cp));
            CHECK_OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
            CHECK_PD(cp.private_data, cp.private_data_size, cpd, sz[i]);
            CHECK_OK(dat_cr_accept(cr, ep, sz[i], sz[i] ? spd : NULL));
            if (EXPECT_CONN_EV(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev))
                CHECK(pair_pd_size_ok(ev.event_data.connect_event_data.private_data,
                                      ev.event_data.connect_event_data.private_data_size, 0));
        } else {
            CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, sz[i] ? cpd : NULL, sz[i]));
            if (EXPECT_CONN_EV(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev))
                CHECK_PD(ev.event_data.connect_event_data.private_data,
                         ev.event_data.connect_event_data.private_data_size, spd, sz[i]);
        }
    }
    /* max + 1 on either side → DAT_INVALID_PARAMETER, nothing changes */
    {
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        memset(cpd, 0x3C, sizeof(cpd));
        if (p.server) {
            DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
            REQUIRE(cr != DAT_HANDLE_NULL);
            CHECK_TYPE(dat_cr_accept(cr, ep, sz[3] + 1, cpd), DAT_INVALID_PARAMETER);
            CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
            CHECK_OK(dat_cr_accept(cr, ep, sz[3], cpd));
            EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
            HEAR(&p, 'z');
        } else {
            DAT_EVENT ev;
            CHECK_TYPE(connect_to(&p, ep, p.qual, WAIT_US, cpd, sz[3] + 1),
                       DAT_INVALID_PARAMETER);
            CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
            EXPECT_QUIET(p.conn_evd);
            CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, cpd, sz[3]));
            if (EXPECT_CONN_EV(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev))
                CHECK_PD(ev.event_data.connect_event_data.private_data,
                         ev.event_data.connect_event_data.private_data_size, cpd, sz[3]);
            say(&p, 'z');
        }
    }
    pair_finish(&p);
}

TEST(E2E_CONN_02_reject_then_reset_and_connect)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(ep != DAT_HANDLE_NULL && cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_reject(cr));
        srv_accept_ep(&p, ep, NULL, 0);
        HEAR(&p, 'z');
    } else {
        struct mr m;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        REQUIRE(mk_mr(p.ia, p.pz, 4096, &m));
        CHECK_OK(post_recv(ep, &m, 0, 128, 5));
        CHECK_OK(connect_to(&p, ep, p.qual, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_PEER_REJECTED, ep);
        CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
        EXPECT_DTO(p.recv_evd, ep, 5, DAT_DTO_ERR_FLUSHED, -1);
        CHECK_TYPE(connect_to(&p, ep, p.qual, WAIT_US, NULL, 0), DAT_INVALID_STATE);
        CHECK_OK(dat_ep_reset(ep));
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
        cli_connect_ep(&p, ep, NULL, 0);
        CHECK_STATE(ep, DAT_EP_STATE_CONNECTED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(E2E_CONN_03_held_cr_times_out)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        DAT_RETURN r;
        REQUIRE(ep != DAT_HANDLE_NULL && cr != DAT_HANDLE_NULL);
        HEAR(&p, 't'); /* never accepted before the client timed out */
        r = dat_cr_accept(cr, ep, 0, NULL);
        if (r == DAT_SUCCESS)
            EXPECT_LATE_ACCEPT_ENDS(p.ia, p.conn_evd, ep, 30 * US);
        else
            CHECK_FAILS(r);
        HEAR(&p, 'z');
    } else {
        DAT_EP_HANDLE ep = mk_ep(&p);
        double t0, dt;
        REQUIRE(ep != DAT_HANDLE_NULL);
        t0 = ctest_now();
        CHECK_OK(connect_to(&p, ep, p.qual, 1 * US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_TIMED_OUT, ep);
        dt = ctest_now() - t0;
        if (dt < 0.9 || dt > 5.0)
            FAILF("TIMED_OUT after %.3f s for a 1 s timeout", dt);
        CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
        say(&p, 't');
        EXPECT_QUIET(p.conn_evd);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(E2E_CONN_04_nothing_listening_infinite_timeout)
{
    struct pair p;
    DAT_EP_HANDLE ep;
    DAT_CONN_QUAL q;
    double t0;

    REQUIRE(local_open(&p));
    q = free_qual(p.ia, p.cr_evd);
    ep = mk_ep(&p);
    REQUIRE(q != 0 && ep != DAT_HANDLE_NULL);
    t0 = ctest_now();
    CHECK_OK(connect_to(&p, ep, q, DAT_TIMEOUT_INFINITE, NULL, 0));
    if (EXPECT_CONN_ANY(p.conn_evd, ep, 5 * US, DAT_CONNECTION_EVENT_NON_PEER_REJECTED) &&
        ctest_now() - t0 > 3.0)
        FAILF("NON_PEER_REJECTED took %.3f s", ctest_now() - t0);
    CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
    EXPECT_QUIET(p.conn_evd);
    local_close(&p);
}

TEST(E2E_CONN_05_kill9_passive_peer)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(link_ep(&p, &ep));
    if (p.server) {
        /* wait to be killed */
        HEAR(&p, 'z');
        pair_finish(&p);
    } else {
        struct mr m;
        int st;
        double t0;
        REQUIRE(mk_mr(p.ia, p.pz, 4096, &m));
        CHECK_OK(post_recv(ep, &m, 0, 256, 1));
        CHECK_OK(post_recv(ep, &m, 256, 256, 2));
        REQUIRE(kill(p.server_pid, SIGKILL) == 0);
        waitpid(p.server_pid, &st, 0);
        t0 = ctest_now();
        EXPECT_CONN_ANY(p.conn_evd, ep, WAIT_US, DAT_CONNECTION_EVENT_BROKEN,
                        DAT_CONNECTION_EVENT_DISCONNECTED);
        fprintf(stderr, "    (peer death seen after %.3f s)\n", ctest_now() - t0);
        CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
        EXPECT_DTO_SET(p.recv_evd, ep, 1, 2, DAT_DTO_ERR_FLUSHED);
        CHECK_OK(post_send(ep, &m, 1024, 16, 3));
        EXPECT_DTO(p.req_evd, ep, 3, DAT_DTO_ERR_FLUSHED, -1);
        CHECK_OK(dat_ep_free(ep));
        close(p.tx);
        close(p.rx);
    }
}

TEST(E2E_CONN_06_kill9_active_peer)
{
    struct pair p;
    struct kid k;
    DAT_EP_HANDLE ep;
    DAT_CR_HANDLE cr;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp) ==
            DAT_SUCCESS);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    REQUIRE(kid_go(&p, &k, p.qual, WAIT_US));
    cr = WAIT_CR(p.cr_evd, NULL);
    if (cr != DAT_HANDLE_NULL) {
        int st;
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        kid_expect(&k, DAT_CONNECTION_EVENT_ESTABLISHED);
        REQUIRE(kill(k.pid, SIGKILL) == 0);
        waitpid(k.pid, &st, 0);
        k.pid = -1;
        close(k.to);
        close(k.from);
        EXPECT_CONN_ANY(p.conn_evd, ep, WAIT_US, DAT_CONNECTION_EVENT_BROKEN,
                        DAT_CONNECTION_EVENT_DISCONNECTED);
        CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
        /* the PSP still takes new requests */
        {
            struct kid k2;
            DAT_EP_HANDLE ep2 = mk_ep(&p);
            REQUIRE(ep2 != DAT_HANDLE_NULL);
            REQUIRE(kid_go(&p, &k2, p.qual, WAIT_US));
            cr = WAIT_CR(p.cr_evd, NULL);
            if (cr != DAT_HANDLE_NULL) {
                CHECK_OK(dat_cr_accept(cr, ep2, 0, NULL));
                EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep2);
                kid_expect(&k2, DAT_CONNECTION_EVENT_ESTABLISHED);
            }
            kid_end(&k2);
        }
    }
    kid_end(&k);
    local_close(&p);
}

#define NEPS 32

TEST(E2E_CONN_07_32_endpoints_at_once)
{
    struct pair p;
    struct mr m;
    DAT_EP_HANDLE ep[NEPS];
    int i;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(mk_mr(p.ia, p.pz, NEPS * 256, &m));
    for (i = 0; i < NEPS; i++) {
        ep[i] = mk_ep(&p);
        REQUIRE(ep[i] != DAT_HANDLE_NULL);
    }
    if (p.server) {
        int seen[NEPS] = {0}, est = 0, n;
        for (i = 0; i < NEPS; i++)
            CHECK_OK(post_recv(ep[i], &m, (size_t)i * 256, 256, (DAT_UINT64)i));
        /* take all 32 requests; the private data names the client's index */
        for (n = 0; n < NEPS; n++) {
            DAT_CR_PARAM cp;
            DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
            int idx;
            REQUIRE(cr != DAT_HANDLE_NULL);
            memset(&cp, 0, sizeof(cp));
            REQUIRE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp) == DAT_SUCCESS);
            REQUIRE(pair_pd_size_ok(cp.private_data, cp.private_data_size, 4) &&
                    cp.private_data != NULL);
            memcpy(&idx, cp.private_data, 4);
            REQUIRE(idx >= 0 && idx < NEPS && !seen[idx]);
            seen[idx] = 1;
            CHECK_OK(dat_cr_accept(cr, ep[idx], 4, &idx));
        }
        for (n = 0; n < NEPS; n++) {
            DAT_EVENT ev;
            if (wait_ev(p.conn_evd, &ev, WAIT_US) != DAT_SUCCESS) {
                FAILF("only %d of %d ESTABLISHED at the server", est, NEPS);
                break;
            }
            if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED)
                est++;
            else
                FAILF("server: event %#x (%s)", (unsigned)ev.event_number,
                      ev_name(ev.event_number));
        }
        CHECK(est == NEPS);
        /* one message per connection, carrying the index */
        for (n = 0; n < NEPS; n++) {
            DAT_EVENT ev;
            const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
            int idx;
            if (wait_ev(p.recv_evd, &ev, WAIT_US) != DAT_SUCCESS) {
                FAILF("receive %d missing", n);
                break;
            }
            idx = (int)d->user_cookie.as_64;
            CHECK(ev.event_number == DAT_DTO_COMPLETION_EVENT);
            CHECK(d->status == DAT_DTO_SUCCESS);
            CHECK(d->transfered_length == 8);
            if (idx >= 0 && idx < NEPS) {
                int got[2];
                CHECK(d->ep_handle == ep[idx]);
                memcpy(got, m.buf + idx * 256, 8);
                CHECK(got[0] == idx && got[1] == ~idx);
            } else {
                FAILF("unknown cookie %d", idx);
            }
        }
        say(&p, 'm');
        for (n = 0; n < NEPS; n++) {
            DAT_EVENT ev;
            if (wait_ev(p.conn_evd, &ev, WAIT_US) != DAT_SUCCESS) {
                FAILF("only %d of %d connections ended", n, NEPS);
                break;
            }
            CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
                  ev.event_number == DAT_CONNECTION_EVENT_BROKEN);
        }
        HEAR(&p, 'z');
    } else {
        int est = 0, n;
        for (i = 0; i < NEPS; i++)
            CHECK_OK(connect_to(&p, ep[i], p.qual, WAIT_US, &i, 4));
        for (n = 0; n < NEPS; n++) {
            DAT_EVENT ev;
            const DAT_CONNECTION_EVENT_DATA *d = &ev.event_data.connect_event_data;
            if (wait_ev(p.conn_evd, &ev, WAIT_US) != DAT_SUCCESS) {
                FAILF("only %d of %d ESTABLISHED at the client", est, NEPS);
                break;
            }
            if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
                FAILF("client: event %#x (%s)", (unsigned)ev.event_number,
                      ev_name(ev.event_number));
                continue;
            }
            est++;
            /* the accept data echoes the index of the EP it was for */
            for (i = 0; i < NEPS; i++)
                if (d->ep_handle == ep[i])
                    break;
            if (i == NEPS || !pair_pd_size_ok(d->private_data, d->private_data_size, 4) ||
                d->private_data == NULL ||
                memcmp(d->private_data, &i, 4) != 0)
                FAILF("ESTABLISHED for an unknown EP or with the wrong accept data");
        }
        REQUIRE(est == NEPS);
        for (i = 0; i < NEPS; i++) {
            int v[2] = {i, ~i};
            memcpy(m.buf + i * 256, v, 8);
            CHECK_OK(post_send(ep[i], &m, (size_t)i * 256, 8, (DAT_UINT64)(1000 + i)));
        }
        {
            int done[NEPS] = {0};
            for (n = 0; n < NEPS; n++) {
                DAT_EVENT ev;
                const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
                int idx;
                if (wait_ev(p.req_evd, &ev, WAIT_US) != DAT_SUCCESS) {
                    FAILF("send completion %d missing", n);
                    break;
                }
                idx = (int)d->user_cookie.as_64 - 1000;
                if (ev.event_number != DAT_DTO_COMPLETION_EVENT || idx < 0 || idx >= NEPS ||
                    done[idx] || d->ep_handle != ep[idx] || d->status != DAT_DTO_SUCCESS ||
                    d->transfered_length != 8)
                    FAILF("send completion: event %#x cookie %llu status %u",
                          (unsigned)ev.event_number, (unsigned long long)d->user_cookie.as_64,
                          (unsigned)d->status);
                else
                    done[idx] = 1;
            }
        }
        HEAR(&p, 'm');
        for (i = 0; i < NEPS; i++)
            CHECK_OK(dat_ep_disconnect(ep[i], DAT_CLOSE_ABRUPT_FLAG));
        for (n = 0; n < NEPS; n++) {
            DAT_EVENT ev;
            if (wait_ev(p.conn_evd, &ev, WAIT_US) != DAT_SUCCESS) {
                FAILF("only %d of %d DISCONNECTED", n, NEPS);
                break;
            }
            CHECK(ev.event_number == DAT_CONNECTION_EVENT_DISCONNECTED);
        }
        for (i = 0; i < NEPS; i++)
            CHECK_STATE(ep[i], DAT_EP_STATE_DISCONNECTED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(E2E_CONN_08_address_port_field_ignored)
{
    struct pair p;
    static const unsigned short ports[] = {0, 1, 0xBEEF};
    int i;

    REQUIRE(pair_start(&p) == 0);
    for (i = 0; i < 3; i++) {
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        if (p.server) {
            srv_accept_ep(&p, ep, NULL, 0);
        } else {
            struct sockaddr_storage a = p.server_addr;
            if (a.ss_family == AF_INET)
                ((struct sockaddr_in *)&a)->sin_port = htons(ports[i]);
            else if (a.ss_family == AF_INET6)
                ((struct sockaddr_in6 *)&a)->sin6_port = htons(ports[i]);
            CHECK_OK(dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&a, p.qual, WAIT_US, 0, NULL,
                                    DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
            if (!EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep)) {
                fprintf(stderr, "    (port field %u)\n", ports[i]);
                break;
            }
        }
    }
    if (p.server)
        HEAR(&p, 'z');
    else
        say(&p, 'z');
    pair_finish(&p);
}

TEST(E2E_CONN_09_unsupported_address_family)
{
    static const int fams[] = {AF_UNIX, 5 /* AF_APPLETALK */, 17 /* AF_PACKET */, 0x7777};
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q = 0;
    DAT_EP_HANDLE ep;
    size_t i;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    for (i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
        struct sockaddr_storage a = p.server_addr;
        DAT_RETURN r;
        a.ss_family = (sa_family_t)fams[i];
        r = dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&a, q, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT,
                           DAT_CONNECT_DEFAULT_FLAG);
        if (DAT_GET_TYPE(r) != DAT_INVALID_ADDRESS || !(r & DAT_CLASS_ERROR))
            FAILF("family %d: 0x%08x, want DAT_INVALID_ADDRESS", fams[i], (unsigned)r);
        else if (DAT_GET_SUBTYPE(r) != DAT_INVALID_ADDRESS_UNSUPPORTED)
            fprintf(stderr, "    note: family %d: subtype %u, §2.8 [REC] names UNSUPPORTED\n",
                    fams[i], (unsigned)DAT_GET_SUBTYPE(r));
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    }
    EXPECT_QUIET(p.conn_evd);
    EXPECT_QUIET(p.cr_evd);
    /* the EP still connects afterwards */
    CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
    {
        DAT_EP_HANDLE srv = mk_ep(&p);
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(srv != DAT_HANDLE_NULL && cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, srv, 0, NULL));
        /* both ESTABLISHED events land on the one connect EVD, in any order */
        {
            DAT_EVENT e1, e2;
            int ok_c = 0, ok_s = 0;
            if (wait_ev(p.conn_evd, &e1, WAIT_US) == DAT_SUCCESS &&
                wait_ev(p.conn_evd, &e2, WAIT_US) == DAT_SUCCESS) {
                DAT_EVENT *e[2] = {&e1, &e2};
                int j;
                for (j = 0; j < 2; j++) {
                    if (e[j]->event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
                        continue;
                    if (e[j]->event_data.connect_event_data.ep_handle == ep)
                        ok_c = 1;
                    if (e[j]->event_data.connect_event_data.ep_handle == srv)
                        ok_s = 1;
                }
            }
            CHECK(ok_c && ok_s);
        }
    }
    local_close(&p);
}

TEST(E2E_CONN_10_null_remote_address)
{
    struct pair p;
    DAT_PSP_HANDLE psp;
    DAT_CONN_QUAL q = 0;
    DAT_EP_HANDLE ep;

    REQUIRE(local_open(&p));
    REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) == DAT_SUCCESS);
    ep = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL);
    CHECK_TYPE(dat_ep_connect(ep, NULL, q, WAIT_US, 0, NULL, DAT_QOS_BEST_EFFORT,
                              DAT_CONNECT_DEFAULT_FLAG),
               DAT_INVALID_PARAMETER);
    CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
    EXPECT_QUIET(p.conn_evd);
    EXPECT_QUIET(p.cr_evd);
    local_close(&p);
}

TEST(E2E_CONN_11_qualifier_in_use_across_processes)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_RSP_HANDLE rsp;
        DAT_CONN_QUAL qr = free_qual(p.ia, p.cr_evd);
        REQUIRE(ep != DAT_HANDLE_NULL && qr != 0);
        REQUIRE(dat_rsp_create(p.ia, qr, ep, p.cr_evd, &rsp) == DAT_SUCCESS);
        tell_u64(&p, qr);
        HEAR(&p, 'z');
        CHECK_STATE(ep, DAT_EP_STATE_RESERVED);
        EXPECT_QUIET(p.cr_evd);
    } else {
        DAT_CONN_QUAL qr = hear_u64(&p);
        DAT_PSP_HANDLE psp;
        DAT_RSP_HANDLE rsp;
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(ep != DAT_HANDLE_NULL);
        CHECK_TYPE(dat_psp_create(p.ia, p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
                   DAT_CONN_QUAL_IN_USE);
        CHECK_TYPE(dat_psp_create(p.ia, qr, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
                   DAT_CONN_QUAL_IN_USE);
        CHECK_TYPE(dat_rsp_create(p.ia, p.qual, ep, p.cr_evd, &rsp), DAT_CONN_QUAL_IN_USE);
        CHECK_TYPE(dat_rsp_create(p.ia, qr, ep, p.cr_evd, &rsp), DAT_CONN_QUAL_IN_USE);
        CHECK_STATE(ep, DAT_EP_STATE_UNCONNECTED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(E2E_CONN_12_create_any_qualifier_cannot_be_taken)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        HEAR(&p, 'z');
    } else {
        DAT_PSP_HANDLE a, b;
        DAT_CONN_QUAL q = 0;
        int i;
        REQUIRE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &a) ==
                DAT_SUCCESS);
        CHECK_TYPE(dat_psp_create(p.ia, q, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &b),
                   DAT_CONN_QUAL_IN_USE);
        /* neither our own nor the server's create_any qualifier comes back */
        for (i = 0; i < 20; i++) {
            DAT_CONN_QUAL q2 = 0;
            if (dat_psp_create_any(p.ia, &q2, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &b) !=
                DAT_SUCCESS) {
                FAILF("dat_psp_create_any failed on round %d", i);
                break;
            }
            CHECK(q2 != q);
            CHECK(q2 != p.qual);
        }
        say(&p, 'z');
    }
    pair_finish(&p);
}

TEST(E2E_CONN_13_connection_inside_one_process)
{
    struct pair p;
    struct mr m;
    DAT_EP_HANDLE a, b;
    DAT_CR_HANDLE cr;
    DAT_EVENT e1, e2;
    int seen_a = 0, seen_b = 0;
    unsigned char pd[20];

    REQUIRE(local_open(&p));
    REQUIRE(mk_mr(p.ia, p.pz, 4096, &m));
    REQUIRE(dat_psp_create_any(p.ia, &p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp) ==
            DAT_SUCCESS);
    a = mk_ep(&p);
    b = mk_ep(&p);
    REQUIRE(a != DAT_HANDLE_NULL && b != DAT_HANDLE_NULL);
    CHECK_OK(post_recv(b, &m, 2048, 512, 9));
    pd_fill(pd, 20, 3);
    CHECK_OK(connect_to(&p, a, p.qual, WAIT_US, pd, 20));
    cr = WAIT_CR(p.cr_evd, NULL);
    REQUIRE(cr != DAT_HANDLE_NULL);
    CHECK_OK(dat_cr_accept(cr, b, 20, pd));
    REQUIRE(wait_ev(p.conn_evd, &e1, WAIT_US) == DAT_SUCCESS);
    REQUIRE(wait_ev(p.conn_evd, &e2, WAIT_US) == DAT_SUCCESS);
    {
        DAT_EVENT *e[2] = {&e1, &e2};
        int j;
        for (j = 0; j < 2; j++) {
            CHECK(e[j]->event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
            if (e[j]->event_data.connect_event_data.ep_handle == a) {
                seen_a++;
                CHECK_PD(e[j]->event_data.connect_event_data.private_data,
                         e[j]->event_data.connect_event_data.private_data_size, pd, 20);
            } else if (e[j]->event_data.connect_event_data.ep_handle == b) {
                seen_b++;
                CHECK(pair_pd_size_ok(e[j]->event_data.connect_event_data.private_data,
                                      e[j]->event_data.connect_event_data.private_data_size, 0));
            }
        }
    }
    CHECK(seen_a == 1 && seen_b == 1);
    pd_fill(m.buf, 300, 44);
    CHECK_OK(post_send(a, &m, 0, 300, 8));
    EXPECT_DTO(p.req_evd, a, 8, DAT_DTO_SUCCESS, 300);
    if (EXPECT_DTO(p.recv_evd, b, 9, DAT_DTO_SUCCESS, 300))
        CHECK(memcmp(m.buf, m.buf + 2048, 300) == 0);
    CHECK_OK(dat_ep_disconnect(a, DAT_CLOSE_GRACEFUL_FLAG));
    REQUIRE(wait_ev(p.conn_evd, &e1, WAIT_US) == DAT_SUCCESS);
    REQUIRE(wait_ev(p.conn_evd, &e2, WAIT_US) == DAT_SUCCESS);
    CHECK(e1.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
          e1.event_number == DAT_CONNECTION_EVENT_BROKEN);
    CHECK(e2.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
          e2.event_number == DAT_CONNECTION_EVENT_BROKEN);
    CHECK_STATE(a, DAT_EP_STATE_DISCONNECTED);
    CHECK_STATE(b, DAT_EP_STATE_DISCONNECTED);
    local_close(&p);
}

/* §2.1 step 4, [M:dat_evd_dequeue]: the accept data of the active side's
 * ESTABLISHED stays valid until the EP is freed or reset. */
TEST(E2E_CONN_14_established_private_data_lifetime)
{
    struct pair p;
    DAT_EP_HANDLE ep1, ep2;
    unsigned char pd1[64], pd2[64];
    DAT_COUNT n;

    pd_fill(pd1, 64, 140);
    pd_fill(pd2, 64, 141);
    REQUIRE(pair_start(&p) == 0);
    n = max_pd(p.ia) < 64 ? max_pd(p.ia) : 64; /* InfiniBand's REQ: 56 */
    ep1 = mk_ep(&p);
    ep2 = mk_ep(&p);
    REQUIRE(ep1 != DAT_HANDLE_NULL && ep2 != DAT_HANDLE_NULL);
    if (p.server) {
        REQUIRE(srv_accept_ep(&p, ep1, pd1, n));
        REQUIRE(srv_accept_ep(&p, ep2, pd2, n));
        say(&p, '2');
        EXPECT_CONN_ANY(p.conn_evd, ep1, WAIT_US, DAT_CONNECTION_EVENT_DISCONNECTED,
                        DAT_CONNECTION_EVENT_BROKEN);
        HEAR(&p, 'z');
    } else {
        DAT_EVENT ev;
        const unsigned char *keep;
        CHECK_OK(connect_to(&p, ep1, p.qual, WAIT_US, NULL, 0));
        REQUIRE(EXPECT_CONN_EV(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep1, &ev));
        keep = ev.event_data.connect_event_data.private_data;
        REQUIRE(keep != NULL &&
                pair_pd_size_ok(keep, ev.event_data.connect_event_data.private_data_size, n));
        /* other connection traffic, then the end of this connection */
        cli_connect_ep(&p, ep2, NULL, 0);
        HEAR(&p, '2');
        CHECK_OK(dat_ep_disconnect(ep1, DAT_CLOSE_ABRUPT_FLAG));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, ep1);
        CHECK_STATE(ep1, DAT_EP_STATE_DISCONNECTED);
        CHECK(memcmp(keep, pd1, (size_t)n) == 0);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* §2.3: the provider-created EP, the whole sequence with a transfer. */
TEST(E2E_CONN_15_provider_psp_sequence)
{
    struct pair p;
    struct attrs a;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(get_attrs(p.ia, &a));
    if (a.pr.ep_creator == DAT_PSP_CREATES_EP_NEVER) {
        if (p.server) {
            DAT_PSP_HANDLE t;
            DAT_CONN_QUAL q;
            CHECK_TYPE(dat_psp_create_any(p.ia, &q, p.cr_evd, DAT_PSP_PROVIDER_FLAG, &t),
                       DAT_MODEL_NOT_SUPPORTED);
        }
        NOTE_SKIP("ep_creator NEVER");
        pair_finish(&p);
        return;
    }
    if (p.server) {
        struct mr m;
        DAT_EVD_HANDLE evd = mk_cr_evd(p.ia, 8);
        DAT_PSP_HANDLE psp;
        DAT_CONN_QUAL q = 0;
        DAT_CR_PARAM cp;
        DAT_EP_PARAM prm;
        DAT_EP_HANDLE pep;
        DAT_CR_HANDLE cr;
        REQUIRE(evd != DAT_HANDLE_NULL && mk_mr(p.ia, p.pz, 4096, &m));
        REQUIRE(dat_psp_create_any(p.ia, &q, evd, DAT_PSP_PROVIDER_FLAG, &psp) == DAT_SUCCESS);
        tell_u64(&p, q);
        cr = WAIT_CR(evd, NULL);
        REQUIRE(cr != DAT_HANDLE_NULL);
        memset(&cp, 0, sizeof(cp));
        REQUIRE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp) == DAT_SUCCESS);
        pep = cp.local_ep_handle;
        CHECK_STATE(pep, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
        CHECK_TYPE(dat_ep_free(pep), DAT_INVALID_STATE); /* §2.3 step 5, §6.6 */
        memset(&prm, 0, sizeof(prm));
        prm.pz_handle = p.pz;
        prm.recv_evd_handle = p.recv_evd;
        prm.request_evd_handle = p.req_evd;
        prm.connect_evd_handle = p.conn_evd;
        CHECK_OK(dat_ep_modify(pep,
                               DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
                                   DAT_EP_FIELD_REQUEST_EVD_HANDLE |
                                   DAT_EP_FIELD_CONNECT_EVD_HANDLE,
                               &prm));
        CHECK_OK(post_recv(pep, &m, 0, 512, 1));
        CHECK_OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, pep);
        if (EXPECT_DTO(p.recv_evd, pep, 1, DAT_DTO_SUCCESS, 200)) {
            unsigned char want[200];
            pd_fill(want, 200, 150);
            CHECK(memcmp(m.buf, want, 200) == 0);
        }
        HEAR(&p, 'z');
    } else {
        struct mr m;
        DAT_CONN_QUAL q = hear_u64(&p);
        DAT_EP_HANDLE ep = mk_ep(&p);
        REQUIRE(q != 0 && ep != DAT_HANDLE_NULL && mk_mr(p.ia, p.pz, 4096, &m));
        CHECK_OK(connect_to(&p, ep, q, WAIT_US, NULL, 0));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
        pd_fill(m.buf, 200, 150);
        CHECK_OK(post_send(ep, &m, 0, 200, 2));
        EXPECT_DTO(p.req_evd, ep, 2, DAT_DTO_SUCCESS, 200);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* §2.10: the passive side frees its EP right after accepting. */
TEST(E2E_CONN_16_passive_frees_ep_during_setup)
{
    struct pair p;

    REQUIRE(pair_start(&p) == 0);
    if (p.server) {
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_CR_HANDLE cr = WAIT_CR(p.cr_evd, NULL);
        REQUIRE(ep != DAT_HANDLE_NULL && cr != DAT_HANDLE_NULL);
        CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
        CHECK_OK(dat_ep_free(ep));
        HEAR(&p, 'z');
        /* no event for the freed EP may appear later ([REC] §3.3 rule 5);
         * one queued before the free is allowed */
        {
            DAT_EVENT ev;
            int n = 0;
            while (dat_evd_dequeue(p.conn_evd, &ev) == DAT_SUCCESS)
                n++;
            CHECK(n <= 1);
            EXPECT_QUIET(p.conn_evd);
        }
    } else {
        DAT_EP_HANDLE ep = mk_ep(&p);
        DAT_EVENT_NUMBER got;
        REQUIRE(ep != DAT_HANDLE_NULL);
        CHECK_OK(connect_to(&p, ep, p.qual, 3 * US, NULL, 0));
        got = EXPECT_CONN_ANY(p.conn_evd, ep, WAIT_US, DAT_CONNECTION_EVENT_ESTABLISHED,
                              DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                              DAT_CONNECTION_EVENT_TIMED_OUT, DAT_CONNECTION_EVENT_UNREACHABLE);
        if (got == DAT_CONNECTION_EVENT_ESTABLISHED)
            EXPECT_CONN_ANY(p.conn_evd, ep, WAIT_US, DAT_CONNECTION_EVENT_DISCONNECTED,
                            DAT_CONNECTION_EVENT_BROKEN);
        CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* T25, §2.12: the passive side disconnects gracefully. */
TEST(E2E_CONN_17_passive_side_disconnects)
{
    struct pair p;
    struct mr m;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(mk_mr(p.ia, p.pz, 4096, &m));
    REQUIRE(link_ep(&p, &ep));
    if (p.server) {
        HEAR(&p, 'r');
        CHECK_OK(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
        EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, ep);
        CHECK_STATE(ep, DAT_EP_STATE_DISCONNECTED);
        HEAR(&p, 'z');
    } else {
        CHECK_OK(post_recv(ep, &m, 0, 256, 7));
        say(&p, 'r');
        EXPECT_CONN_ANY(p.conn_evd, ep, WAIT_US, DAT_CONNECTION_EVENT_DISCONNECTED,
                        DAT_CONNECTION_EVENT_BROKEN);
        CHECK(state_becomes(ep, DAT_EP_STATE_DISCONNECTED, 1000));
        EXPECT_DTO(p.recv_evd, ep, 7, DAT_DTO_ERR_FLUSHED, -1);
        say(&p, 'z');
    }
    pair_finish(&p);
}

/* T30, §2.12: the peer frees a connected EP. */
TEST(E2E_CONN_18_peer_frees_connected_ep)
{
    struct pair p;
    DAT_EP_HANDLE ep;

    REQUIRE(pair_start(&p) == 0);
    REQUIRE(link_ep(&p, &ep));
    if (p.server) {
        CHECK_OK(dat_ep_free(ep));
        HEAR(&p, 'z');
        EXPECT_QUIET(p.conn_evd);
    } else {
        EXPECT_CONN_ANY(p.conn_evd, ep, WAIT_US, DAT_CONNECTION_EVENT_DISCONNECTED,
                        DAT_CONNECTION_EVENT_BROKEN);
        CHECK(state_becomes(ep, DAT_EP_STATE_DISCONNECTED, 1000));
        say(&p, 'z');
    }
    pair_finish(&p);
}

/*
 * §4.19 side effects with traffic: a PSP that produced CRs (one rejected,
 * one accepted and still connected) is freed; a request after the free is
 * refused as if nothing listened, and the qualifier can be taken again.
 */
TEST(E2E_CONN_19_psp_free_after_traffic_releases_qualifier)
{
    struct pair p;
    struct kid k1, k2, k3, k4;
    DAT_CR_HANDLE cr;
    DAT_EP_HANDLE ep, ep4;
    DAT_PSP_HANDLE psp2 = DAT_HANDLE_NULL;
    DAT_EVENT ev;

    REQUIRE(local_open(&p));
    ep = mk_ep(&p);
    ep4 = mk_ep(&p);
    REQUIRE(ep != DAT_HANDLE_NULL && ep4 != DAT_HANDLE_NULL);
    REQUIRE(dat_psp_create_any(p.ia, &p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp) ==
            DAT_SUCCESS);
    /* one rejected request */
    REQUIRE(kid_go(&p, &k1, p.qual, WAIT_US));
    cr = WAIT_CR(p.cr_evd, NULL);
    REQUIRE(cr != DAT_HANDLE_NULL);
    CHECK_OK(dat_cr_reject(cr));
    kid_expect(&k1, DAT_CONNECTION_EVENT_PEER_REJECTED);
    kid_end(&k1);
    /* one accepted connection that stays up */
    REQUIRE(kid_go(&p, &k2, p.qual, WAIT_US));
    cr = WAIT_CR(p.cr_evd, NULL);
    REQUIRE(cr != DAT_HANDLE_NULL);
    CHECK_OK(dat_cr_accept(cr, ep, 0, NULL));
    EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep);
    kid_expect(&k2, DAT_CONNECTION_EVENT_ESTABLISHED);

    CHECK_OK(dat_psp_free(p.psp));
    /* refused as if nothing listened */
    REQUIRE(kid_go(&p, &k3, p.qual, 3 * US));
    kid_expect(&k3, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
    kid_end(&k3);
    EXPECT_QUIET(p.cr_evd);
    /* the qualifier is free again */
    CHECK_OK(dat_psp_create(p.ia, p.qual, p.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp2));
    if (psp2 != DAT_HANDLE_NULL) {
        REQUIRE(kid_go(&p, &k4, p.qual, WAIT_US));
        cr = WAIT_CR(p.cr_evd, &ev);
        if (cr != DAT_HANDLE_NULL) {
            CHECK(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle == psp2);
            CHECK_OK(dat_cr_accept(cr, ep4, 0, NULL));
            EXPECT_CONN(p.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep4);
            kid_expect(&k4, DAT_CONNECTION_EVENT_ESTABLISHED);
        }
        kid_end(&k4);
    }
    CHECK_STATE(ep, DAT_EP_STATE_CONNECTED);
    kid_end(&k2);
    local_close(&p);
}

CONN_MAIN
