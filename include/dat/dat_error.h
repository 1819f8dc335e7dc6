/* <dat/dat_error.h> (DAT_RETURN codes): everything is declared in <dat/udat.h>. */
#ifndef _DAT_ERROR_H_
#define _DAT_ERROR_H_
#include <dat/udat.h>
#endif /* _DAT_ERROR_H_ */
