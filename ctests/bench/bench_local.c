/*
 * bench_local: cost of the local hot paths of libdat (no connection):
 * handle validation, software event post + dequeue, and a cross-thread
 * post -> dat_evd_wait wake-up. Prints nanoseconds per operation.
 */
#include <dat/udat.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static DAT_EVD_HANDLE ping, pong;
static atomic_int stop;

static void *echo(void *arg)
{
    DAT_EVENT ev;
    DAT_COUNT nmore;
    (void)arg;
    while (!atomic_load(&stop)) {
        if (dat_evd_wait(ping, 1000000, 1, &ev, &nmore) == DAT_SUCCESS)
            dat_evd_post_se(pong, &ev);
    }
    return NULL;
}

int main(void)
{
    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL, evd;
    DAT_HANDLE_TYPE type;
    DAT_EVENT ev;
    DAT_COUNT nmore;
    pthread_t th;
    double t;
    int i, n;

    if (dat_ia_open("tcp0", 8, &async_evd, &ia) != DAT_SUCCESS)
        return 1;
    dat_evd_create(ia, 1024, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd);
    memset(&ev, 0, sizeof(ev));
    ev.event_number = DAT_SOFTWARE_EVENT;

    n = 2000000;
    t = now();
    for (i = 0; i < n; i++)
        dat_get_handle_type(evd, &type);
    printf("dat_get_handle_type (handle validation)   %8.1f ns/op\n", (now() - t) * 1e9 / n);

    t = now();
    for (i = 0; i < n; i++)
        dat_get_handle_type((DAT_HANDLE)&ev, &type);
    printf("dat_get_handle_type (garbage handle)      %8.1f ns/op\n", (now() - t) * 1e9 / n);

    t = now();
    for (i = 0; i < n; i++) {
        dat_evd_post_se(evd, &ev);
        dat_evd_dequeue(evd, &ev);
    }
    printf("dat_evd_post_se + dat_evd_dequeue         %8.1f ns/pair\n", (now() - t) * 1e9 / n);

    t = now();
    for (i = 0; i < n; i++) {
        dat_evd_post_se(evd, &ev);
        dat_evd_wait(evd, 0, 1, &ev, &nmore);
    }
    printf("dat_evd_post_se + dat_evd_wait (ready)    %8.1f ns/pair\n", (now() - t) * 1e9 / n);

    dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &ping);
    dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &pong);
    pthread_create(&th, NULL, echo, NULL);
    n = 50000;
    t = now();
    for (i = 0; i < n; i++) {
        dat_evd_post_se(ping, &ev);
        dat_evd_wait(pong, 1000000, 1, &ev, &nmore);
    }
    printf("cross-thread post -> wait round trip      %8.1f us/round trip\n", (now() - t) * 1e6 / n);
    atomic_store(&stop, 1);
    dat_evd_post_se(ping, &ev);
    pthread_join(th, NULL);
    dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    return 0;
}
