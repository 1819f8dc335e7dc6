/* <dat/dat_vendor_specific.h> (vendor extensions (none)): everything is declared in <dat/udat.h>. */
#ifndef _DAT_VENDOR_SPECIFIC_H_
#define _DAT_VENDOR_SPECIFIC_H_
#include <dat/udat.h>
#endif /* _DAT_VENDOR_SPECIFIC_H_ */
