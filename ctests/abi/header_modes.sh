#!/usr/bin/env bash
# Syntax-check every public header in include/dat/ in every language mode a
# DAT 1.2 program may use: C89, C99, C11 (gcc) and C++11, C++17 (g++), all
# with -Wall -Wextra -Werror -pedantic. C89 also gets -Wno-long-long: the
# header uses unsigned long long (DAT_UVERYLONG), which ISO C90 lacks, and
# which every C89 compiler of interest accepts as an extension.
#
# Two translation units per header and mode:
#   - one that only includes the header;
#   - one that includes it and expands the header's macros (the
#     DAT_OS_WAIT_PROXY_AGENT_NULL literal, dat_ia_open, the return-code
#     helpers, the handle sentinels, a redirection macro), so that the
#     macros, not just the declarations, are valid in every mode.
#
# Usage: ctests/abi/header_modes.sh [include-dir]   (default: include)
# Exits non-zero if any check fails. $CC / $CXX select the compilers.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
incdir=${1:-$root/include}
CC=${CC:-gcc}
CXX=${CXX:-g++}
# CC may be "cc", which is fine; CXX must be a C++ compiler.

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

modes=(
    "c89|$CC -x c -std=c89 -pedantic -Wno-long-long"
    "c99|$CC -x c -std=c99 -pedantic"
    "c11|$CC -x c -std=c11 -pedantic"
    "c++11|$CXX -x c++ -std=c++11 -pedantic"
    "c++17|$CXX -x c++ -std=c++17 -pedantic"
)
warn="-Wall -Wextra -Werror"

pass=0
fail=0

check() { # name, compiler command, source file
    local name=$1 cmd=$2 src=$3
    # shellcheck disable=SC2086
    if out=$($cmd $warn -I"$incdir" -fsyntax-only "$src" 2>&1); then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $name"
        printf '%s\n' "$out" | sed 's/^/    /' | head -n 40
    fi
}

headers=$(cd "$incdir/dat" && ls ./*.h | sed 's|^\./||' | sort)
if [ -z "$headers" ]; then
    echo "no headers in $incdir/dat" >&2
    exit 1
fi

for h in $headers; do
    cat >"$tmp/only.c" <<EOF
#include <dat/$h>
EOF
    cat >"$tmp/use.c" <<EOF
#include <dat/$h>
#include <dat/udat.h> /* a second include must be harmless */

static void agent(DAT_PVOID data, DAT_EVD_HANDLE evd)
{
    (void)data;
    (void)evd;
}

/* Takes the agent by value, like dat_cno_modify_agent. */
static DAT_RETURN take_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT a)
{
    return (cno == DAT_HANDLE_NULL && a.proxy_agent_func == NULL) ? 0 : 1;
}

int dat_header_use(void);
int dat_header_use(void)
{
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE evd = DAT_EVD_ASYNC_EXISTS;
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_OS_WAIT_PROXY_AGENT none = DAT_OS_WAIT_PROXY_AGENT_NULL;
    DAT_OS_WAIT_PROXY_AGENT some;
    DAT_RETURN ret;
    DAT_TIMEOUT t = DAT_TIMEOUT_INFINITE;
    DAT_COUNT c = DAT_VALUE_UNKNOWN;
    DAT_IA_ATTR attr;
    DAT_IA_ATTR_MASK m = DAT_IA_FIELD_ALL | DAT_IA_ALL | DAT_IA_FIELD_IA_MAX_MTU_SIZE;
    DAT_RMR_BIND_COMPLETION_STATUS st = DAT_RMR_BIND_FAILURE;
    const char *name = "x";

    some.instance_data = DAT_HANDLE_NULL;
    some.proxy_agent_func = agent;
    attr.max_rdma_read_per_ep = 1;
    attr.max_mtu_size = 2;
    ret = dat_ia_open(name, 8, &evd, &ia);
    ret |= dat_ia_open("y", 8, &evd, &ia);
    ret |= DAT_ERROR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (DAT_IS_WARNING(ret) || DAT_GET_TYPE(ret) == DAT_INVALID_STATE ||
        DAT_GET_SUBTYPE(ret) == DAT_INVALID_ARG1 || t == 0 || c == 0 ||
        m == DAT_IA_FIELD_NONE || st == DAT_RMR_BIND_SUCCESS ||
        evd == DAT_EVD_OUT_OF_SCOPE)
        return 1;
    if (ia != DAT_HANDLE_NULL)
        ret |= DAT_CNO_CREATE(ia, none, &cno);
    (void)DAT_PROVIDER_INIT_FUNC_STR;
    (void)DAT_OPTIMAL_ALIGNMENT;
    (void)DAT_AF_INET6;
    return (int)(ret + (DAT_RETURN)attr.max_rdma_read_per_ep_in +
                 (DAT_RETURN)attr.max_message_size) +
           (int)take_agent(cno, DAT_OS_WAIT_PROXY_AGENT_NULL) +
           (int)take_agent(cno, some);
}
EOF
    for mode in "${modes[@]}"; do
        label=${mode%%|*}
        cmd=${mode#*|}
        check "$h [$label] include only" "$cmd" "$tmp/only.c"
        check "$h [$label] macro use" "$cmd" "$tmp/use.c"
    done
done

echo "header_modes: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
