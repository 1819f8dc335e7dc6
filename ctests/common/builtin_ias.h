/*
 * The built-in IAs libdat.so.1 registers without a dat.conf (rulings RLP;
 * docs/configuration.md), worked out independently of the library:
 *
 *   - "tcp0" (loopback), first;
 *   - then one IA per network interface that is up (IFF_UP), not loopback
 *     (IFF_LOOPBACK), and has an IPv4 address or an IPv6 address that is
 *     not link-local (fe80::/10), named after the interface, in the order
 *     getifaddrs() lists them, each name once;
 *
 * each DAT 1.2, for both thread-safety values. A dat.conf entry with the
 * same IA name replaces the built-in IA of that name; the test dat.conf
 * files use no interface names, so here the count is simply
 * 2 * (1 + number of such interfaces).
 *
 * Include after ctest.h (which defines _GNU_SOURCE).
 */
#ifndef CTEST_BUILTIN_IAS_H
#define CTEST_BUILTIN_IAS_H

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define BUILTIN_NAME "tcp0"

/* More interfaces than any test host has. */
#define BUILTIN_IF_MAX 64
#define BUILTIN_IF_NAME_MAX 64

static char builtin_if_names[BUILTIN_IF_MAX][BUILTIN_IF_NAME_MAX];
static int builtin_if_count = -1;

static inline int builtin_if_usable(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return 1;
    if (sa->sa_family == AF_INET6) {
        const unsigned char *b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        return !(b[0] == 0xfe && (b[1] & 0xc0) == 0x80);
    }
    return 0;
}

/* The interfaces that get a built-in IA, in listing order (cached). */
static inline int builtin_interfaces(void)
{
    struct ifaddrs *head, *a;
    int i, seen;

    if (builtin_if_count >= 0)
        return builtin_if_count;
    builtin_if_count = 0;
    if (getifaddrs(&head) != 0)
        return 0;
    for (a = head; a != NULL; a = a->ifa_next) {
        if (a->ifa_name == NULL || a->ifa_addr == NULL)
            continue;
        if (!(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK))
            continue;
        if (!builtin_if_usable(a->ifa_addr))
            continue;
        if (strcmp(a->ifa_name, BUILTIN_NAME) == 0 ||
            strlen(a->ifa_name) >= BUILTIN_IF_NAME_MAX)
            continue;
        seen = 0;
        for (i = 0; i < builtin_if_count; i++)
            if (strcmp(builtin_if_names[i], a->ifa_name) == 0)
                seen = 1;
        if (!seen && builtin_if_count < BUILTIN_IF_MAX) {
            snprintf(builtin_if_names[builtin_if_count], BUILTIN_IF_NAME_MAX, "%s", a->ifa_name);
            builtin_if_count++;
        }
    }
    freeifaddrs(head);
    return builtin_if_count;
}

/* The IA address the library gives an IA on interface `name` (family):
 * AF_INET: its first IPv4 address; AF_INET6: its first IPv6 address that is
 * not link-local, else its first link-local one; AF_UNSPEC: IPv4 if it has
 * one, else IPv6. Port 0. Returns 0 if there is none. */
static inline int builtin_if_address(const char *name, int family, struct sockaddr_storage *out)
{
    struct ifaddrs *head, *a;
    int found = 0, pass;

    if (getifaddrs(&head) != 0)
        return 0;
    /* pass 0: IPv4, 1: IPv6 not link-local, 2: IPv6 link-local */
    for (pass = 0; pass < 3 && !found; pass++) {
        if ((pass == 0 && family == AF_INET6) || (pass > 0 && family == AF_INET))
            continue;
        for (a = head; a != NULL && !found; a = a->ifa_next) {
            int want = pass == 0 ? AF_INET : AF_INET6;

            if (a->ifa_name == NULL || a->ifa_addr == NULL || strcmp(a->ifa_name, name) != 0 ||
                a->ifa_addr->sa_family != want)
                continue;
            if (pass > 0 && builtin_if_usable(a->ifa_addr) != (pass == 1))
                continue;
            memset(out, 0, sizeof(*out));
            if (want == AF_INET) {
                memcpy(out, a->ifa_addr, sizeof(struct sockaddr_in));
                ((struct sockaddr_in *)(void *)out)->sin_port = 0;
            } else {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)out;

                memcpy(out, a->ifa_addr, sizeof(struct sockaddr_in6));
                s6->sin6_port = 0;
                s6->sin6_flowinfo = 0;
                if (pass == 1)
                    s6->sin6_scope_id = 0;
            }
            found = 1;
        }
    }
    freeifaddrs(head);
    return found;
}

/* True if `sa` (an IA address) is `want` (family, port, address, and for
 * IPv6 the scope). */
static inline int builtin_same_address(const struct sockaddr *sa, const struct sockaddr_storage *want)
{
    if (sa == NULL || sa->sa_family != want->ss_family)
        return 0;
    if (sa->sa_family == AF_INET)
        return memcmp(sa, want, sizeof(struct sockaddr_in)) == 0;
    if (sa->sa_family == AF_INET6)
        return memcmp(sa, want, sizeof(struct sockaddr_in6)) == 0;
    return 0;
}

/* How many built-in registry entries there are: tcp0 and each interface,
 * both thread-safety values. */
static inline DAT_COUNT builtin_ia_count(void)
{
    return 2 * (1 + builtin_interfaces());
}

#define BUILTIN_COUNT builtin_ia_count()

/* True if `at` and `at + 1` are NAME u1.2, one nonthreadsafe and one
 * threadsafe, in either order. */
static inline int builtin_pair_at(const DAT_PROVIDER_INFO *store, DAT_COUNT at, const char *name)
{
    const DAT_PROVIDER_INFO *x = &store[at], *y = &store[at + 1];

    if (memchr(x->ia_name, '\0', sizeof(x->ia_name)) == NULL ||
        memchr(y->ia_name, '\0', sizeof(y->ia_name)) == NULL)
        return 0;
    return strcmp(x->ia_name, name) == 0 && strcmp(y->ia_name, name) == 0 &&
           x->dapl_version_major == 1 && x->dapl_version_minor == 2 &&
           y->dapl_version_major == 1 && y->dapl_version_minor == 2 &&
           ((x->is_thread_safe == DAT_FALSE && y->is_thread_safe == DAT_TRUE) ||
            (x->is_thread_safe == DAT_TRUE && y->is_thread_safe == DAT_FALSE));
}

/* True if the built-in IAs are listed from `at` on: tcp0, then the
 * interfaces in order. */
static inline int builtins_from(const DAT_PROVIDER_INFO *store, DAT_COUNT at)
{
    int i, n = builtin_interfaces();

    if (!builtin_pair_at(store, at, BUILTIN_NAME))
        return 0;
    for (i = 0; i < n; i++)
        if (!builtin_pair_at(store, at + 2 + 2 * i, builtin_if_names[i]))
            return 0;
    return 1;
}

#endif
