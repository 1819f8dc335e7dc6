/* <dat/dat_platform_specific.h> (platform base types): everything is declared in <dat/udat.h>. */
#ifndef _DAT_PLATFORM_SPECIFIC_H_
#define _DAT_PLATFORM_SPECIFIC_H_
#include <dat/udat.h>
#endif /* _DAT_PLATFORM_SPECIFIC_H_ */
