/* <dat/dat_redirection.h> (DAT_PROVIDER and the redirection macros): everything is declared in <dat/udat.h>. */
#ifndef _DAT_REDIRECTION_H_
#define _DAT_REDIRECTION_H_
#include <dat/udat.h>
#endif /* _DAT_REDIRECTION_H_ */
