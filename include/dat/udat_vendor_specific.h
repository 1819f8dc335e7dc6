/* <dat/udat_vendor_specific.h> (uDAPL vendor extensions (none)): everything is declared in <dat/udat.h>. */
#ifndef _UDAT_VENDOR_SPECIFIC_H_
#define _UDAT_VENDOR_SPECIFIC_H_
#include <dat/udat.h>
#endif /* _UDAT_VENDOR_SPECIFIC_H_ */
