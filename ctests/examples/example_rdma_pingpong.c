/*
 * Runs the rdma_pingpong example (examples/rdma_pingpong, built by
 * `make examples` into build/examples/) over loopback: the server on a
 * free qualifier (-q 0, read back from its output), then the client; both
 * must exit 0 and say OK. Also the failure paths a user meets first: no
 * server listening, a qualifier already in use. Every wait has a deadline.
 */
#include "ctest.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#define EXAMPLES_DIR CTEST_BUILD_DIR "/../examples/rdma_pingpong"

struct proc {
    pid_t pid;
    int out; /* read end of its stdout */
    int err; /* read end of its stderr */
    char obuf[8192], ebuf[4096];
    size_t olen, elen;
};

/* Starts EXAMPLES_DIR/prog with args (NULL-terminated). */
static int spawn(struct proc *p, const char *prog, const char *const *args)
{
    int o[2], e[2];
    char path[512];
    const char *argv[16];
    int n = 0;
    memset(p, 0, sizeof(*p));
    snprintf(path, sizeof(path), "%s/%s", EXAMPLES_DIR, prog);
    argv[n++] = path;
    while (args[n - 1] != NULL && n < 15) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    if (pipe(o) != 0 || pipe(e) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    p->pid = fork();
    if (p->pid < 0)
        return -1;
    if (p->pid == 0) {
        dup2(o[1], 1);
        dup2(e[1], 2);
        close(o[0]);
        close(o[1]);
        close(e[0]);
        close(e[1]);
        execv(path, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    p->out = o[0];
    p->err = e[0];
    fcntl(p->out, F_SETFL, O_NONBLOCK);
    fcntl(p->err, F_SETFL, O_NONBLOCK);
    return 0;
}

/* Reads whatever is available (waits up to ms for something). */
static void drain(struct proc *p, int ms)
{
    struct pollfd f[2] = {{p->out, POLLIN, 0}, {p->err, POLLIN, 0}};
    if (poll(f, 2, ms) <= 0)
        return;
    ssize_t r;
    while (p->olen < sizeof(p->obuf) - 1 &&
           (r = read(p->out, p->obuf + p->olen, sizeof(p->obuf) - 1 - p->olen)) > 0)
        p->olen += (size_t)r;
    while (p->elen < sizeof(p->ebuf) - 1 &&
           (r = read(p->err, p->ebuf + p->elen, sizeof(p->ebuf) - 1 - p->elen)) > 0)
        p->elen += (size_t)r;
    p->obuf[p->olen] = '\0';
    p->ebuf[p->elen] = '\0';
}

/* Waits up to secs for the line "...qualifier N" on the server's stdout. */
static unsigned long long listening_on(struct proc *p, double secs)
{
    double end = ctest_now() + secs;
    while (ctest_now() < end) {
        drain(p, 50);
        const char *q = strstr(p->obuf, "listening on qualifier ");
        if (q != NULL && strchr(q, '\n') != NULL)
            return strtoull(q + strlen("listening on qualifier "), NULL, 10);
        if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
            p->pid = 0;
            drain(p, 0);
            break;
        }
    }
    return 0;
}

/* Waits up to secs for the process to exit: its exit status, or -1 (killed). */
static int finish(struct proc *p, double secs)
{
    double end = ctest_now() + secs;
    int status = 0, rc = -1;
    if (p->pid == 0)
        return -1;
    for (;;) {
        drain(p, 10);
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            break;
        }
        if (ctest_now() > end) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &status, 0);
            fprintf(stderr, "    process %d hung; killed\n", (int)p->pid);
            break;
        }
    }
    drain(p, 0);
    close(p->out);
    close(p->err);
    p->pid = 0;
    return rc;
}

static void show(const char *who, struct proc *p)
{
    fprintf(stderr, "    --- %s stdout:\n%s    --- %s stderr:\n%s", who, p->obuf, who, p->ebuf);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A TCP port on 127.0.0.1 that nothing listens on (just released). */
static unsigned free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0)
        return 0;
    close(s);
    return ntohs(a.sin_port);
}

/* Server with `size`, client against it; both must succeed. */
static void run_pair(const char *size)
{
    struct proc srv, cli;
    char qual[32];
    const char *sargs[] = {"-q", "0", "-s", size, "-t", "10", NULL};
    REQUIRE(spawn(&srv, "server", sargs) == 0);
    unsigned long long q = listening_on(&srv, 10);
    if (q == 0) {
        show("server", &srv);
        finish(&srv, 1);
        REQUIRE(q != 0);
    }
    snprintf(qual, sizeof(qual), "%llu", q);
    const char *cargs[] = {"-q", qual, "127.0.0.1", NULL};
    REQUIRE(spawn(&cli, "client", cargs) == 0);
    int crc = finish(&cli, 20);
    int src = finish(&srv, 10);
    CHECK(crc == 0);
    CHECK(src == 0);
    CHECK(strstr(cli.obuf, "client: OK\n") != NULL);
    CHECK(strstr(srv.obuf, "server: OK\n") != NULL);
    CHECK(strstr(cli.obuf, "RDMA Write") != NULL && strstr(cli.obuf, "RDMA Read") != NULL);
    CHECK(cli.elen == 0 && srv.elen == 0);
    if (ctest_failures) {
        show("server", &srv);
        show("client", &cli);
    }
}

TEST(EXAMPLE_01_pingpong_loopback_1MiB)
{
    run_pair("1M");
}

TEST(EXAMPLE_02_pingpong_loopback_odd_sizes)
{
    run_pair("1");
    run_pair("4097");
    run_pair("8M");
}

/* No server: the client exits 1 with one line on stderr. */
TEST(EXAMPLE_03_client_without_server)
{
    struct proc cli;
    char qual[32];
    unsigned port = free_port();
    REQUIRE(port != 0);
    snprintf(qual, sizeof(qual), "%u", port);
    const char *cargs[] = {"-q", qual, "127.0.0.1", NULL};
    REQUIRE(spawn(&cli, "client", cargs) == 0);
    CHECK(finish(&cli, 20) == 1);
    CHECK(count_lines(cli.ebuf) == 1);
    CHECK(strstr(cli.ebuf, "client: connection to 127.0.0.1") != NULL);
    if (ctest_failures)
        show("client", &cli);
}

/* A second server on the same qualifier: DAT_CONN_QUAL_IN_USE, exit 1. */
TEST(EXAMPLE_04_qualifier_in_use)
{
    struct proc a, b;
    char qual[32];
    const char *aargs[] = {"-q", "0", "-s", "4K", "-t", "10", NULL};
    REQUIRE(spawn(&a, "server", aargs) == 0);
    unsigned long long q = listening_on(&a, 10);
    REQUIRE(q != 0);
    snprintf(qual, sizeof(qual), "%llu", q);
    const char *bargs[] = {"-q", qual, "-s", "4K", "-t", "1", NULL};
    REQUIRE(spawn(&b, "server", bargs) == 0);
    CHECK(finish(&b, 10) == 1);
    CHECK(count_lines(b.ebuf) == 1);
    CHECK(strstr(b.ebuf, "dat_psp_create failed: DAT_CONN_QUAL_IN_USE") != NULL);
    kill(a.pid, SIGTERM);
    finish(&a, 5);
    if (ctest_failures)
        show("second server", &b);
}

/* Bad arguments: usage on stderr, exit 2. */
TEST(EXAMPLE_05_usage)
{
    struct proc p;
    const char *args[] = {"-x", NULL};
    REQUIRE(spawn(&p, "client", args) == 0);
    CHECK(finish(&p, 10) == 2);
    CHECK(strstr(p.ebuf, "usage: client") != NULL);
}

int main(int argc, char **argv)
{
    return ctest_main(argc, argv);
}
