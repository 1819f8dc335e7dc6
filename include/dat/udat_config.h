/* <dat/udat_config.h> (version and thread-safety defaults): everything is declared in <dat/udat.h>. */
#ifndef _UDAT_CONFIG_H_
#define _UDAT_CONFIG_H_
#include <dat/udat.h>
#endif /* _UDAT_CONFIG_H_ */
