/* PNETCDF_VAR module: what its wrappers (pnetcdf_var_api.c) tell its records (pnetcdf_var.c). */
#ifndef IOS_PNETCDF_VAR_H
#define IOS_PNETCDF_VAR_H

#include "wrap.h"

/* The access kinds, in the order of the counters PNETCDF_VAR_PUT_VAR ... _PUT_VARD (and GET,
 * IPUT, IGET, BPUT likewise, without VARD). */
enum pnc_kind { PNC_K_VAR, PNC_K_VAR1, PNC_K_VARA, PNC_K_VARS, PNC_K_VARM, PNC_K_VARN, PNC_K_VARD };
enum pnc_op { PNC_OP_PUT, PNC_OP_GET, PNC_OP_IPUT, PNC_OP_IGET, PNC_OP_BPUT };
enum pnc_mode { PNC_INDEP, PNC_COLL, PNC_NB };

/* What a put or get names of its variable: count and stride per dimension (vara, vars, varm),
 * num subarrays of counts (varn), the file's MPI datatype (vard). */
struct pnc_shape {
    int kind, num;
    const long long *count, *stride;
    long long *const *counts;
    uintptr_t filetype; /* vard: its size is the access's */
};

/* A successful put or get of varid in ncid, posted (nonblocking) or done in [t1, t2]. */
void ios_pnc_var_access(int ncid, int varid, int op, int mode, const struct pnc_shape *s, double t1,
                        double t2) IOS_HIDDEN;
/* A variable defined or inquired: its record made or found, opened once more. */
void ios_pnc_var_opened(int ncid, const char *name, int xtype, int ndims, const int *dimids,
                        int varid, double t1, double t2) IOS_HIDDEN;

#endif
