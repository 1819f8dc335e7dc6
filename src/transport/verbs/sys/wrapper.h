/* The rdma-core headers the verbs transport's bindings are generated from
 * (regenerate with generate.sh; rdma-core 44, Debian 12). */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
