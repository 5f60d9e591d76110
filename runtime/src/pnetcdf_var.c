/* PNETCDF_VAR module: Darshan's PNETCDF_VAR v1 record, one per variable, named
 * "<file>:<variable>", with darshan-runtime 3.5.0's semantics: a record is made (or opened once
 * more) by ncmpi_def_var and ncmpi_inq_varid; every successful put and get (blocking, and
 * nonblocking when posted) counts its kind, its bytes (the elements it names times the type's
 * size), its size bin and its access (size, lengths and strides of the last five dimensions),
 * with its time. The wrappers are in pnetcdf_var_api.c.
 *
 * Differences from Darshan, on purpose: variables are found by (ncid, varid), not by varid alone
 * (Darshan mixes up the variables of two open files that share a varid); a whole-variable access
 * (put_var, get_var) multiplies by the number of records only for a record variable (Darshan
 * does for any variable of a file that has a record dimension). */
#include "pnetcdf_var.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>

#define TUPLE (1 + 2 * IOS_PNETCDF_VAR_MAX_NDIMS) /* size, lengths, strides */
#define TUPLES_MAX 32                             /* Darshan's distinct accesses per variable */
#define NAME_MAX_NC 256                           /* NC_MAX_NAME */
enum { IO_NONE, IO_READ, IO_WRITE };

struct access_count {
    int64_t v[TUPLE];
    int64_t freq;
};

struct pnc_var { /* the record first: ios_file_by_name */
    struct ios_pnetcdf_var_record *rec;
    double last_read_end, last_write_end, last_meta_end;
    int last_io, unlimdimid;
    int ntuples;
    struct access_count *tuples; /* TUPLES_MAX, made at the first access */
};

static struct ios_map vars_by_id;    /* record id -> variable */
static struct ios_map vars_by_varid; /* (ncid, varid) -> variable */

static inline uint64_t varid_key(int ncid, int varid) {
    return ((uint64_t)(uint32_t)ncid << 32 | (uint32_t)varid) + 1;
}

/* PnetCDF's inquiries, made with the guard on (they are not the program's). */
typedef int (*inq_path_fn)(int ncid, int *len, char *path);
typedef int (*inq_int_fn)(int ncid, int *out);
typedef int (*inq_dimlen_fn)(int ncid, int dimid, long long *len);
static inq_path_fn inq_path;
static inq_int_fn inq_unlimdim;
static inq_dimlen_fn inq_dimlen;

static void resolve(void) {
    if (IOS_UNLIKELY(!inq_dimlen)) {
        inq_path = (inq_path_fn)ios_next_symbol("ncmpi_inq_path", "PnetCDF");
        inq_unlimdim = (inq_int_fn)ios_next_symbol("ncmpi_inq_unlimdim", "PnetCDF");
        inq_dimlen = (inq_dimlen_fn)ios_next_symbol("ncmpi_inq_dimlen", "PnetCDF");
    }
}

static long long dim_len(int ncid, int dimid) {
    long long len = 0;
    return inq_dimlen(ncid, dimid, &len) == 0 ? len : 0;
}

/* Darshan's sizes of nc_type: byte, char, ubyte 1; short, ushort 2; int, uint, float 4; else 8. */
static int64_t type_size(int xtype) {
    switch (xtype) {
    case 1:
    case 2:
    case 7:
        return 1; /* NC_BYTE, NC_CHAR, NC_UBYTE */
    case 3:
    case 8:
        return 2; /* NC_SHORT, NC_USHORT */
    case 4:
    case 5:
    case 9:
        return 4; /* NC_INT, NC_FLOAT, NC_UINT */
    default:
        return 8;
    }
}

/* The file's record name (as PNETCDF_FILE's) into file, and "<file>:<name>" into out. */
static int var_name(int ncid, const char *name, char *file, char *out, size_t outlen) {
    char path[PATH_MAX];
    int len = 0;
    if (inq_path(ncid, &len, NULL) != 0 || len < 0 || (size_t)len >= sizeof path ||
        inq_path(ncid, NULL, path) != 0)
        return -1;
    path[len] = '\0';
    if (ios_normalize_path(ios_strip_fs_prefix(path), AT_FDCWD, file, PATH_MAX) != 0)
        return -1;
    int n = snprintf(out, outlen, "%s:%s", file, name);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

struct var_facts {
    int unlimdimid, is_record;
    int64_t npoints;
};

static struct var_facts facts_of(int ncid, int ndims, const int *dimids) {
    struct var_facts f = {-1, 0, 1};
    if (inq_unlimdim(ncid, &f.unlimdimid) != 0)
        f.unlimdimid = -1;
    int i = 0;
    if (ndims > 0 && f.unlimdimid >= 0 && dimids[0] == f.unlimdimid)
        f.is_record = i = 1;
    for (; i < ndims; i++)
        f.npoints *= dim_len(ncid, dimids[i]);
    return f;
}

void ios_pnc_var_opened(int ncid, const char *name, int xtype, int ndims, const int *dimids,
                        int varid, double t1, double t2) {
    char file[PATH_MAX], full[PATH_MAX + NAME_MAX_NC + 2];
    resolve();
    int saved = errno;
    ios_guard(1);
    int ok = name && (ndims == 0 || dimids) && var_name(ncid, name, file, full, sizeof full) == 0;
    struct var_facts facts = ok ? facts_of(ncid, ndims, dimids) : (struct var_facts){0};
    ios_guard(0);
    errno = saved;
    if (!ok || !ios_enter())
        return;
    struct pnc_var *v = ios_file_by_name(&vars_by_id, IOS_MOD_PNETCDF_VAR, full,
                                         sizeof(struct pnc_var), sizeof(*v->rec), NULL);
    if (v) {
        int64_t *c = v->rec->counters;
        double *fc = v->rec->fcounters;
        c[PNETCDF_VAR_OPENS]++;
        ios_first_start(&fc[PNETCDF_VAR_F_OPEN_START_TIMESTAMP], t1);
        fc[PNETCDF_VAR_F_OPEN_END_TIMESTAMP] = t2;
        ios_timer_add(&fc[PNETCDF_VAR_F_META_TIME], t1, t2, &v->last_meta_end);
        v->unlimdimid = facts.unlimdimid;
        if (facts.is_record)
            c[PNETCDF_VAR_IS_RECORD_VAR] = 1;
        c[PNETCDF_VAR_NPOINTS] = facts.npoints;
        c[PNETCDF_VAR_NDIMS] = ndims;
        c[PNETCDF_VAR_DATATYPE_SIZE] = type_size(xtype);
        v->rec->file_rec_id = ios_record_id(file);
        ios_map_put(&vars_by_varid, varid_key(ncid, varid), v);
    }
    ios_leave();
}

/* The access's bytes, and its tuple t (zeroed by the caller): size, then the lengths and strides
 * of the last five dimensions where the call names them (vara: lengths; vars, varm: both). */
static int64_t access_info(const struct pnc_var *v, int ncid, const struct pnc_shape *s,
                           int64_t *t) {
    const int64_t *c = v->rec->counters;
    int nd = (int)c[PNETCDF_VAR_NDIMS], first = nd > IOS_PNETCDF_VAR_MAX_NDIMS ? nd - 5 : 0;
    int64_t n = 1;
    switch (s->kind) {
    case PNC_K_VAR:
        n = c[PNETCDF_VAR_NPOINTS];
        if (c[PNETCDF_VAR_IS_RECORD_VAR] && v->unlimdimid >= 0)
            n *= dim_len(ncid, v->unlimdimid);
        break;
    case PNC_K_VARA:
    case PNC_K_VARS:
    case PNC_K_VARM:
        for (int i = 0; s->count && i < nd; i++) {
            n *= s->count[i];
            if (i < first)
                continue;
            t[1 + i - first] = s->count[i];
            if (s->kind != PNC_K_VARA)
                t[1 + IOS_PNETCDF_VAR_MAX_NDIMS + i - first] = s->stride ? s->stride[i] : 1;
        }
        break;
    case PNC_K_VARN:
        n = s->counts ? 0 : s->num;
        for (int i = 0; s->counts && i < s->num; i++) {
            int64_t p = 1;
            for (int j = 0; j < nd; j++)
                p *= s->counts[i][j];
            n += p;
        }
        break;
    case PNC_K_VARD:
        return t[0] = ios_mpi_type_bytes(s->filetype);
    default: /* var1: one element */
        break;
    }
    return t[0] = n * c[PNETCDF_VAR_DATATYPE_SIZE];
}

/* Counts tuple t; its count, or 0 once TUPLES_MAX others are counted (Darshan's limit). */
static int64_t count_access(struct pnc_var *v, const int64_t *t) {
    for (int i = 0; i < v->ntuples; i++)
        if (memcmp(v->tuples[i].v, t, sizeof v->tuples[i].v) == 0)
            return ++v->tuples[i].freq;
    if (!v->tuples)
        v->tuples = calloc(TUPLES_MAX, sizeof *v->tuples);
    if (!v->tuples || v->ntuples == TUPLES_MAX)
        return 0;
    memcpy(v->tuples[v->ntuples].v, t, sizeof v->tuples[0].v);
    v->tuples[v->ntuples++].freq = 1;
    return 1;
}

static void io_done(struct pnc_var *v, int is_read, int64_t size, double t1, double t2) {
    int64_t *c = v->rec->counters;
    double *fc = v->rec->fcounters;
    int d = is_read ? 0 : 1; /* read and write counters and fcounters come in pairs */
    c[PNETCDF_VAR_BYTES_READ + d] += size;
    if (v->last_io == (is_read ? IO_WRITE : IO_READ))
        c[PNETCDF_VAR_RW_SWITCHES]++;
    v->last_io = is_read ? IO_READ : IO_WRITE;
    c[(is_read ? PNETCDF_VAR_SIZE_READ_AGG_0_100 : PNETCDF_VAR_SIZE_WRITE_AGG_0_100) +
      ios_size_bin(size)]++;
    ios_first_start(&fc[PNETCDF_VAR_F_READ_START_TIMESTAMP + d], t1);
    fc[PNETCDF_VAR_F_READ_END_TIMESTAMP + d] = t2;
    if (fc[PNETCDF_VAR_F_MAX_READ_TIME + d] < t2 - t1) {
        fc[PNETCDF_VAR_F_MAX_READ_TIME + d] = t2 - t1;
        c[PNETCDF_VAR_MAX_READ_TIME_SIZE + d] = size;
    }
    ios_timer_add(&fc[PNETCDF_VAR_F_READ_TIME + d], t1, t2,
                  is_read ? &v->last_read_end : &v->last_write_end);
}

void ios_pnc_var_access(int ncid, int varid, int op, int mode, const struct pnc_shape *s, double t1,
                        double t2) {
    static const int first_of_op[] = {PNETCDF_VAR_PUT_VAR, PNETCDF_VAR_GET_VAR,
                                      PNETCDF_VAR_IPUT_VAR, PNETCDF_VAR_IGET_VAR,
                                      PNETCDF_VAR_BPUT_VAR};
    static const int by_mode[][2] = {{PNETCDF_VAR_INDEP_WRITES, PNETCDF_VAR_INDEP_READS},
                                     {PNETCDF_VAR_COLL_WRITES, PNETCDF_VAR_COLL_READS},
                                     {PNETCDF_VAR_NB_WRITES, PNETCDF_VAR_NB_READS}};
    resolve();
    int saved = errno;
    if (!ios_enter())
        return;
    struct pnc_var *v = ios_map_get(&vars_by_varid, varid_key(ncid, varid));
    if (v) {
        int64_t *c = v->rec->counters, t[TUPLE] = {0};
        int is_read = op == PNC_OP_GET || op == PNC_OP_IGET;
        c[first_of_op[op] + s->kind]++;
        int64_t size = access_info(v, ncid, s, t);
        io_done(v, is_read, size, t1, t2);
        int64_t freq = count_access(v, t);
        if (freq)
            ios_common_tuple_insert(&c[PNETCDF_VAR_ACCESS1_ACCESS], &c[PNETCDF_VAR_ACCESS1_COUNT],
                                    t, TUPLE, freq);
        c[by_mode[mode][is_read]]++;
    }
    ios_leave();
    errno = saved;
}

/* ---- shutdown ------------------------------------------------------------------------------ */
void ios_pnetcdf_var_collect(struct ios_record_set *set) {
    ios_collect_records(set, IOS_MOD_PNETCDF_VAR, sizeof(struct ios_pnetcdf_var_record),
                        &vars_by_id);
}

void ios_pnetcdf_var_reset(void) {
    for (size_t i = 0; i < vars_by_id.cap; i++)
        if (vars_by_id.keys[i]) {
            struct pnc_var *v = vars_by_id.vals[i];
            free(v->tuples);
            v->tuples = NULL;
            v->ntuples = 0;
        }
    ios_map_free(&vars_by_id);
    ios_map_free(&vars_by_varid);
}
