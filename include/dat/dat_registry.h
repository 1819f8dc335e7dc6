/* <dat/dat_registry.h> (provider registration API): everything is declared in <dat/udat.h>. */
#ifndef _DAT_REGISTRY_H_
#define _DAT_REGISTRY_H_
#include <dat/udat.h>
#endif /* _DAT_REGISTRY_H_ */
