/*
 * A DAT 1.2 provider library WITHOUT dat_provider_init / dat_provider_fini
 * (semantics-core §2.40 [R], test PIN-06).
 *
 * It registers itself from an ELF constructor while libdat dlopen()s it.
 * The constructor cannot know the dat.conf entry, so it registers the fixed
 * key {"noinit0", 1, 2, DAT_FALSE}; the test dat.conf names the IA "noinit0"
 * (u1.2 nonthreadsafe). An ELF destructor removes the key when the library
 * is unloaded.
 *
 * The object model and the 70-slot DAT_PROVIDER table are the stub
 * provider's (stub_provider.c, built here with STUB_NOINIT). Log lines go to
 * $STUB_LOG: "ctor noinit0 add=0x..." / "dtor noinit0 remove=0x..." plus the
 * stub's ia_open / ia_close / call lines.
 *
 * Note: this file includes stub_provider.c, so rebuild this library after
 * editing that file.
 */
#define STUB_NOINIT 1
#include "stub_provider.c"
