/* <dat/dat.h> (common DAT API): everything is declared in <dat/udat.h>. */
#ifndef _DAT_H_
#define _DAT_H_
#include <dat/udat.h>
#endif /* _DAT_H_ */
