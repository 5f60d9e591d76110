/* PNETCDF_VAR module: the wrappers of PnetCDF's variable calls, as darshan-runtime 3.5.0 wraps
 * them: ncmpi_def_var and ncmpi_inq_varid (a variable's record), and the put and get families
 * var, var1, vara, vars, varm and varn, for each element type and the flexible form (a buffer,
 * its count and MPI datatype), independent and collective (_all), and the nonblocking iput, iget
 * and bput (counted when posted; their waits are PNETCDF_FILE's); vard, flexible and blocking
 * only, its size its file type's. The records are kept by pnetcdf_var.c.
 *
 * As in pnetcdf.c, neither pnetcdf.h nor mpi.h is included: MPI_Offset is long long, MPI handles
 * are uintptr_t, every typed buffer is a pointer (void *: the same in the ABI). */
#include "pnetcdf_var.h"

#include <errno.h>
#include <stdlib.h>

typedef uintptr_t ios_handle; /* MPI_Datatype */

/* ---- def_var, inq_varid ------------------------------------------------------------------ */
IOS_EXPORT int ncmpi_def_var(int ncid, const char *name, int xtype, int ndims, const int *dimids,
                             int *varidp) {
    IOS_NEXT_REAL(int, (int, const char *, int, int, const int *, int *), "ncmpi_def_var",
                  "PnetCDF");
    if (!ios_recording())
        return real(ncid, name, xtype, ndims, dimids, varidp);
    IOS_TIMED_CALL(int, ret, real(ncid, name, xtype, ndims, dimids, varidp));
    if (ret == 0 && varidp)
        IOS_KEEP_ERRNO(ios_pnc_var_opened(ncid, name, xtype, ndims, dimids, *varidp, t1, t2));
    return ret;
}

typedef int (*inq_var_int_fn)(int ncid, int varid, int *out);

/* The type, rank and dimensions of a variable, asked of PnetCDF, then its record opened. */
static void inquired(int ncid, const char *name, int varid, double t1, double t2) {
    static inq_var_int_fn vartype, varndims, vardimid;
    if (IOS_UNLIKELY(!vardimid)) {
        vartype = (inq_var_int_fn)ios_next_symbol("ncmpi_inq_vartype", "PnetCDF");
        varndims = (inq_var_int_fn)ios_next_symbol("ncmpi_inq_varndims", "PnetCDF");
        vardimid = (inq_var_int_fn)ios_next_symbol("ncmpi_inq_vardimid", "PnetCDF");
    }
    int xtype, ndims, few[64], *dimids = NULL;
    ios_guard(1);
    int ok = vartype(ncid, varid, &xtype) == 0 && varndims(ncid, varid, &ndims) == 0 && ndims >= 0;
    if (ok) {
        dimids = ndims <= 64 ? few : malloc((size_t)ndims * sizeof *dimids);
        ok = dimids && vardimid(ncid, varid, dimids) == 0;
    }
    ios_guard(0);
    if (ok)
        ios_pnc_var_opened(ncid, name, xtype, ndims, dimids, varid, t1, t2);
    if (dimids != few)
        free(dimids);
}

IOS_EXPORT int ncmpi_inq_varid(int ncid, const char *name, int *varidp) {
    IOS_NEXT_REAL(int, (int, const char *, int *), "ncmpi_inq_varid", "PnetCDF");
    if (!ios_recording())
        return real(ncid, name, varidp);
    IOS_TIMED_CALL(int, ret, real(ncid, name, varidp));
    if (ret == 0 && varidp)
        IOS_KEEP_ERRNO(inquired(ncid, name, *varidp, t1, t2));
    return ret;
}

/* ---- puts and gets ------------------------------------------------------------------------ */
/* Each kind's parameters after the buffer's (P), its arguments (A), and its shape (S). */
#define PNC_P_var int ncid, int varid
#define PNC_A_var ncid, varid
#define PNC_S_var                                                                                  \
    { .kind = PNC_K_VAR }
#define PNC_P_var1 int ncid, int varid, const long long *start
#define PNC_A_var1 ncid, varid, start
#define PNC_S_var1                                                                                 \
    { .kind = PNC_K_VAR1 }
#define PNC_P_vara int ncid, int varid, const long long *start, const long long *count
#define PNC_A_vara ncid, varid, start, count
#define PNC_S_vara                                                                                 \
    { .kind = PNC_K_VARA, .count = count }
#define PNC_P_vars                                                                                 \
    int ncid, int varid, const long long *start, const long long *count, const long long *stride
#define PNC_A_vars ncid, varid, start, count, stride
#define PNC_S_vars                                                                                 \
    { .kind = PNC_K_VARS, .count = count, .stride = stride }
#define PNC_P_varm                                                                                 \
    int ncid, int varid, const long long *start, const long long *count, const long long *stride,  \
        const long long *imap
#define PNC_A_varm ncid, varid, start, count, stride, imap
#define PNC_S_varm                                                                                 \
    { .kind = PNC_K_VARM, .count = count, .stride = stride }
#define PNC_P_varn int ncid, int varid, int num, long long *const *starts, long long *const *counts
#define PNC_A_varn ncid, varid, num, starts, counts
#define PNC_S_varn                                                                                 \
    { .kind = PNC_K_VARN, .num = num, .counts = counts }
#define PNC_P_vard int ncid, int varid, ios_handle filetype
#define PNC_A_vard ncid, varid, filetype
#define PNC_S_vard                                                                                 \
    { .kind = PNC_K_VARD, .filetype = filetype }
/* The buffer: typed (T) or flexible (F); then nothing (blocking, B) or the request (N). */
#define PNC_BP_T , const void *buf
#define PNC_BA_T , buf
#define PNC_BP_F , const void *buf, long long bufcount, ios_handle buftype
#define PNC_BA_F , buf, bufcount, buftype
#define PNC_TP_B
#define PNC_TA_B
#define PNC_TP_N , int *reqid
#define PNC_TA_N , reqid

/* int ncmpi_<op>_<kind><type><all>: the real call, timed; a success is recorded. */
#define PNC_VAR_WRAP(op, kind, type, all, buf, tail, mode, opcode)                                 \
    IOS_EXPORT int ncmpi_##op##_##kind##type##all(PNC_P_##kind PNC_BP_##buf PNC_TP_##tail) {       \
        IOS_NEXT_REAL(int, (PNC_P_##kind PNC_BP_##buf PNC_TP_##tail),                              \
                      "ncmpi_" #op "_" #kind #type #all, "PnetCDF");                               \
        if (!ios_recording())                                                                      \
            return real(PNC_A_##kind PNC_BA_##buf PNC_TA_##tail);                                  \
        IOS_TIMED_CALL(int, ret, real(PNC_A_##kind PNC_BA_##buf PNC_TA_##tail));                   \
        if (ret == 0) {                                                                            \
            struct pnc_shape shape = PNC_S_##kind;                                                 \
            ios_pnc_var_access(ncid, varid, opcode, mode, &shape, t1, t2);                         \
        }                                                                                          \
        return ret;                                                                                \
    }

/* One family: the flexible form and the twelve element types of PnetCDF's API. */
#define PNC_VAR_FAMILY(op, kind, all, tail, mode, opcode)                                          \
    PNC_VAR_WRAP(op, kind, , all, F, tail, mode, opcode)                                           \
    PNC_VAR_WRAP(op, kind, _text, all, T, tail, mode, opcode)                                      \
    PNC_VAR_WRAP(op, kind, _schar, all, T, tail, mode, opcode)                                     \
    PNC_VAR_WRAP(op, kind, _uchar, all, T, tail, mode, opcode)                                     \
    PNC_VAR_WRAP(op, kind, _short, all, T, tail, mode, opcode)                                     \
    PNC_VAR_WRAP(op, kind, _ushort, all, T, tail, mode, opcode)                                    \
    PNC_VAR_WRAP(op, kind, _int, all, T, tail, mode, opcode)                                       \
    PNC_VAR_WRAP(op, kind, _uint, all, T, tail, mode, opcode)                                      \
    PNC_VAR_WRAP(op, kind, _long, all, T, tail, mode, opcode)                                      \
    PNC_VAR_WRAP(op, kind, _float, all, T, tail, mode, opcode)                                     \
    PNC_VAR_WRAP(op, kind, _double, all, T, tail, mode, opcode)                                    \
    PNC_VAR_WRAP(op, kind, _longlong, all, T, tail, mode, opcode)                                  \
    PNC_VAR_WRAP(op, kind, _ulonglong, all, T, tail, mode, opcode)

/* A kind's blocking families (put, get; independent, collective) and nonblocking ones. */
#define PNC_VAR_KIND(kind)                                                                         \
    PNC_VAR_FAMILY(put, kind, , B, PNC_INDEP, PNC_OP_PUT)                                          \
    PNC_VAR_FAMILY(put, kind, _all, B, PNC_COLL, PNC_OP_PUT)                                       \
    PNC_VAR_FAMILY(get, kind, , B, PNC_INDEP, PNC_OP_GET)                                          \
    PNC_VAR_FAMILY(get, kind, _all, B, PNC_COLL, PNC_OP_GET)                                       \
    PNC_VAR_FAMILY(iput, kind, , N, PNC_NB, PNC_OP_IPUT)                                           \
    PNC_VAR_FAMILY(iget, kind, , N, PNC_NB, PNC_OP_IGET)                                           \
    PNC_VAR_FAMILY(bput, kind, , N, PNC_NB, PNC_OP_BPUT)

PNC_VAR_KIND(var)
PNC_VAR_KIND(var1)
PNC_VAR_KIND(vara)
PNC_VAR_KIND(vars)
PNC_VAR_KIND(varm)
PNC_VAR_KIND(varn)

/* vard: the flexible form only, blocking only. */
PNC_VAR_WRAP(put, vard, , , F, B, PNC_INDEP, PNC_OP_PUT)
PNC_VAR_WRAP(put, vard, , _all, F, B, PNC_COLL, PNC_OP_PUT)
PNC_VAR_WRAP(get, vard, , , F, B, PNC_INDEP, PNC_OP_GET)
PNC_VAR_WRAP(get, vard, , _all, F, B, PNC_COLL, PNC_OP_GET)
