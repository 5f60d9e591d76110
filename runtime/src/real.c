/* The real libc functions (real_symbols.def), resolved at their first use: the ones the wrappers
 * forward to, and those the runtime's own I/O and the log writer call past the wrappers. */
#include "logwrite.h"

#include <dlfcn.h>

struct ios_real_functions ios_real;

void ios_resolve_one(void **slot, const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    /* glibc >= 2.33 keeps the __xstat family only as compat symbols, which dlsym cannot see. */
    *slot = f ? f : dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
}
