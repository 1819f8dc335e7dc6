/* <dat/udat_redirection.h> (uDAPL redirection macros): everything is declared in <dat/udat.h>. */
#ifndef _UDAT_REDIRECTION_H_
#define _UDAT_REDIRECTION_H_
#include <dat/udat.h>
#endif /* _UDAT_REDIRECTION_H_ */
