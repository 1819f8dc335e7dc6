/*
 * Threads: posts from several threads on different endpoints that share
 * their EVDs, with one thread reaping completions, on both sides of a
 * PAIR (issue 9, "Threads"). Every completion arrives once, per EP in
 * posting order, with the right EP handle and cookie; every message is
 * received intact.
 */
#include <pthread.h>

#include "ctest.h"
#include "pair.h"

#define NEP 4
#define NMSG 300
#define MSG 64

struct side {
    struct pair *p;
    DAT_EP_HANDLE ep[NEP];
    DAT_LMR_CONTEXT ctx;
    unsigned char *buf; /* NEP * NMSG * MSG */
    int errors;
};

struct poster {
    struct side *s;
    int i;
};

static DAT_EP_ATTR attrs(void)
{
    DAT_EP_ATTR a;
    memset(&a, 0, sizeof(a));
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = 1 << 20;
    a.max_rdma_size = 1 << 20;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.max_recv_dtos = NMSG;
    a.max_request_dtos = NMSG;
    a.max_recv_iov = 1;
    a.max_request_iov = 1;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = 1;
    return a;
}

static unsigned char *slot(struct side *s, int ep, int k)
{
    return s->buf + ((size_t)ep * NMSG + (size_t)k) * MSG;
}

static void *post_sends(void *arg)
{
    struct poster *po = arg;
    struct side *s = po->s;
    for (int k = 0; k < NMSG; k++) {
        unsigned char *m = slot(s, po->i, k);
        memset(m, (po->i * 31 + k) & 0xff, MSG);
        DAT_LMR_TRIPLET t = {s->ctx, 0, (DAT_VADDR)(uintptr_t)m, MSG};
        DAT_DTO_COOKIE c;
        c.as_64 = ((uint64_t)po->i << 32) | (uint64_t)k;
        if (dat_ep_post_send(s->ep[po->i], 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG) !=
            DAT_SUCCESS)
            __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Reaps NEP * NMSG completions from evd; checks per-EP order. */
static int reap(struct side *s, DAT_EVD_HANDLE evd, int recv)
{
    int next[NEP] = {0};
    for (int n = 0; n < NEP * NMSG; n++) {
        DAT_EVENT ev;
        DAT_RETURN r = pair_wait(evd, &ev);
        if (r != DAT_SUCCESS) {
            fprintf(stderr, "    reap %s: completion %d of %d: wait 0x%08x\n", recv ? "recv" : "req",
                    n, NEP * NMSG, (unsigned)r);
            return -1;
        }
        DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
        int i = (int)(d->user_cookie.as_64 >> 32), k = (int)(d->user_cookie.as_64 & 0xffffffff);
        if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d->status != DAT_DTO_SUCCESS ||
            d->transfered_length != MSG || i < 0 || i >= NEP || d->ep_handle != s->ep[i] ||
            k != next[i]) {
            fprintf(stderr,
                    "    reap %s: completion %d: event 0x%x status %d length %llu cookie %d:%d "
                    "(expected %d)\n",
                    recv ? "recv" : "req", n, (unsigned)ev.event_number, (int)d->status,
                    (unsigned long long)d->transfered_length, i, k,
                    i >= 0 && i < NEP ? next[i] : -1);
            return -1;
        }
        if (recv) {
            unsigned char *m = slot(s, i, k);
            ctest_handover(m, MSG);
            for (int b = 0; b < MSG; b++)
                if (m[b] != (unsigned char)((i * 31 + k) & 0xff))
                    return -1;
        }
        next[i]++;
    }
    return 0;
}

TEST(E2E_THREADS_posts_on_shared_evds)
{
    struct pair p;
    struct side s;
    memset(&s, 0, sizeof(s));
    REQUIRE(pair_start(&p) == 0);
    s.p = &p;
    s.buf = calloc(NEP * NMSG, MSG);
    REQUIRE(s.buf != NULL);
    DAT_REGION_DESCRIPTION r;
    r.for_va = s.buf;
    DAT_LMR_HANDLE lmr;
    DAT_RMR_CONTEXT rctx;
    DAT_VLEN rlen;
    DAT_VADDR raddr;
    REQUIRE(dat_lmr_create(p.ia, DAT_MEM_TYPE_VIRTUAL, r, (DAT_VLEN)NEP * NMSG * MSG, p.pz,
                           DAT_MEM_PRIV_ALL_FLAG, &lmr, &s.ctx, &rctx, &rlen, &raddr) ==
            DAT_SUCCESS);
    DAT_EP_ATTR a = attrs();
    DAT_EVENT ev;
    for (int i = 0; i < NEP; i++) {
        REQUIRE(dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &a, &s.ep[i]) ==
                DAT_SUCCESS);
    }
    if (p.server) {
        /* Receives first, then accept the NEP requests in arrival order,
         * matching them by the EP index the client sends as private data. */
        for (int i = 0; i < NEP; i++)
            for (int k = 0; k < NMSG; k++) {
                DAT_LMR_TRIPLET t = {s.ctx, 0, (DAT_VADDR)(uintptr_t)slot(&s, i, k), MSG};
                DAT_DTO_COOKIE c;
                c.as_64 = ((uint64_t)i << 32) | (uint64_t)k;
                REQUIRE(dat_ep_post_recv(s.ep[i], 1, &t, c, DAT_COMPLETION_DEFAULT_FLAG) ==
                        DAT_SUCCESS);
            }
        for (int n = 0; n < NEP; n++) {
            REQUIRE(pair_wait(p.cr_evd, &ev) == DAT_SUCCESS);
            DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
            DAT_CR_PARAM cp;
            REQUIRE(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp) == DAT_SUCCESS);
            REQUIRE(pair_pd_size_ok(cp.private_data, cp.private_data_size, 1));
            ctest_handover(cp.private_data, 1);
            int i = *(unsigned char *)cp.private_data;
            REQUIRE(i >= 0 && i < NEP);
            REQUIRE(dat_cr_accept(cr, s.ep[i], 0, NULL) == DAT_SUCCESS);
        }
        for (int n = 0; n < NEP; n++) {
            REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
            REQUIRE(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        }
        REQUIRE(pair_sync(&p, 'c') == 0);
        CHECK(reap(&s, p.recv_evd, 1) == 0);
        REQUIRE(pair_sync(&p, 'd') == 0);
    } else {
        for (int i = 0; i < NEP; i++) {
            unsigned char pd = (unsigned char)i;
            REQUIRE(dat_ep_connect(s.ep[i], (DAT_IA_ADDRESS_PTR)&p.server_addr, p.qual,
                                   PAIR_WAIT_US, 1, &pd, DAT_QOS_BEST_EFFORT,
                                   DAT_CONNECT_DEFAULT_FLAG) == DAT_SUCCESS);
        }
        for (int n = 0; n < NEP; n++) {
            REQUIRE(pair_wait(p.conn_evd, &ev) == DAT_SUCCESS);
            REQUIRE(ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED);
        }
        REQUIRE(pair_sync(&p, 'c') == 0);
        pthread_t th[NEP];
        struct poster po[NEP];
        for (int i = 0; i < NEP; i++) {
            po[i].s = &s;
            po[i].i = i;
            REQUIRE(pthread_create(&th[i], NULL, post_sends, &po[i]) == 0);
        }
        CHECK(reap(&s, p.req_evd, 0) == 0);
        for (int i = 0; i < NEP; i++)
            pthread_join(th[i], NULL);
        CHECK(s.errors == 0);
        REQUIRE(pair_sync(&p, 'd') == 0);
    }
    pair_finish(&p);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
