/* PnetCDF variable pattern of one put/get family (see test_pnc_var.py): `pnc_var_families DIR F`,
 * F one of var, var1, vara, vars, varm, varn, vard. Every rank r of np:
 *   DIR/F.nc  ncmpi_create; dimensions "y" = 4, "x" = np * 8, "t" unlimited; variables
 *             int v(y, x), double w(y, x), int r(t, x) (three ncmpi_def_var); enddef;
 *             v: one independent put (begin/end_indep_data), one collective put (_all), one
 *                iput and one bput (buffer attached), each completed by ncmpi_wait_all; all
 *                typed (_int);
 *             w: one collective put of the flexible API (MPI_DOUBLE);
 *             r: put_vara_int_all of record 0, columns r*8 .. r*8+7 (count {1, 8});
 *             close. ncmpi_open read-only; ncmpi_inq_varid of "v" and "w";
 *             v: one independent get, one collective get, one iget completed by ncmpi_wait_all,
 *                each checked against what was put; w: one collective get (flexible), checked;
 *             close.
 * The region of family F, in the same shape for every put and get of the rank:
 *   var   the whole variable (every rank writes the same values)     4 * np * 8 elements
 *   var1  the element (0, r*8)                                       1
 *   vara  start {0, r*8}, count {4, 8}                               32
 *   vars  start {0, r*8}, count {2, 4}, stride {2, 2}                8
 *   varm  as vars, imap {1, 2} (the buffer transposed)               8
 *   varn  two subarrays: {0, r*8} count {1, 8}; {2, r*8} count {2, 4}  16
 *   vard  as vara, an MPI subarray file type (put/get_vard: blocking only, so v has no iput,
 *         bput or iget)                                              32
 * Rank 0 prints "np=<np> family=<F>" at the end. With a third argument "wait", every rank prints
 * "ready <rank> <pid>" instead and waits to be killed (the records must survive in the
 * memory-mapped logs).
 */
#include <mpi.h>
#include <pnetcdf.h>

#include "common.h"

#define NY 4
#define NX_RANK 8

#define NC(call) CHECK((call) == NC_NOERR, #call)

struct region {
    MPI_Offset start[2], count[2], stride[2], imap[2];
    MPI_Offset *starts[2], *counts[2];
    MPI_Offset nstart[2][2], ncount[2][2];
    MPI_Offset n;          /* elements */
    MPI_Datatype ftype[2]; /* vard: the region as file types of int and of double */
};

static void region_of(struct region *out, const char *f, int rank, int np) {
    struct region g = {.start = {0, rank * NX_RANK}, .stride = {2, 2}, .imap = {1, 2}};
    if (!strcmp(f, "var")) {
        g.n = NY * np * NX_RANK;
    } else if (!strcmp(f, "var1")) {
        g.n = 1;
    } else if (!strcmp(f, "vard")) {
        int sizes[2] = {NY, np * NX_RANK}, sub[2] = {NY, NX_RANK}, at[2] = {0, rank * NX_RANK};
        MPI_Datatype base[2] = {MPI_INT, MPI_DOUBLE};
        for (int i = 0; i < 2; i++) {
            MPI_Type_create_subarray(2, sizes, sub, at, MPI_ORDER_C, base[i], &g.ftype[i]);
            MPI_Type_commit(&g.ftype[i]);
        }
        g.n = 32;
    } else if (!strcmp(f, "vara")) {
        g.count[0] = NY, g.count[1] = NX_RANK, g.n = 32;
    } else if (!strcmp(f, "vars") || !strcmp(f, "varm")) {
        g.count[0] = 2, g.count[1] = 4, g.n = 8;
    } else {
        CHECK(!strcmp(f, "varn"), "family is one of var, var1, vara, vars, varm, varn");
        MPI_Offset s[2][2] = {{0, rank * NX_RANK}, {2, rank * NX_RANK}}, c[2][2] = {{1, 8}, {2, 4}};
        memcpy(g.nstart, s, sizeof s);
        memcpy(g.ncount, c, sizeof c);
        g.n = 16;
    }
    *out = g;
    for (int i = 0; i < 2; i++) /* into *out's own arrays */
        out->starts[i] = out->nstart[i], out->counts[i] = out->ncount[i];
}

/* Typed (int) access of family f: put (0), get (1), iput (2), iget (3), bput (4); all: _all. */
static int int_access(const char *f, int how, int all, int ncid, int v, struct region *g, int *b,
                      int *req) {
    switch (f[3] == '1' ? '1' : f[3] ? f[3] : '-') {
    case '-':
        return how == 0   ? (all ? ncmpi_put_var_int_all : ncmpi_put_var_int)(ncid, v, b)
               : how == 1 ? (all ? ncmpi_get_var_int_all : ncmpi_get_var_int)(ncid, v, b)
               : how == 2 ? ncmpi_iput_var_int(ncid, v, b, req)
               : how == 3 ? ncmpi_iget_var_int(ncid, v, b, req)
                          : ncmpi_bput_var_int(ncid, v, b, req);
    case '1':
        return how == 0 ? (all ? ncmpi_put_var1_int_all : ncmpi_put_var1_int)(ncid, v, g->start, b)
               : how == 1
                   ? (all ? ncmpi_get_var1_int_all : ncmpi_get_var1_int)(ncid, v, g->start, b)
               : how == 2 ? ncmpi_iput_var1_int(ncid, v, g->start, b, req)
               : how == 3 ? ncmpi_iget_var1_int(ncid, v, g->start, b, req)
                          : ncmpi_bput_var1_int(ncid, v, g->start, b, req);
    case 'a': {
        const MPI_Offset *s = g->start, *c = g->count;
        return how == 0   ? (all ? ncmpi_put_vara_int_all : ncmpi_put_vara_int)(ncid, v, s, c, b)
               : how == 1 ? (all ? ncmpi_get_vara_int_all : ncmpi_get_vara_int)(ncid, v, s, c, b)
               : how == 2 ? ncmpi_iput_vara_int(ncid, v, s, c, b, req)
               : how == 3 ? ncmpi_iget_vara_int(ncid, v, s, c, b, req)
                          : ncmpi_bput_vara_int(ncid, v, s, c, b, req);
    }
    case 's': {
        const MPI_Offset *s = g->start, *c = g->count, *st = g->stride;
        return how == 0 ? (all ? ncmpi_put_vars_int_all : ncmpi_put_vars_int)(ncid, v, s, c, st, b)
               : how == 1
                   ? (all ? ncmpi_get_vars_int_all : ncmpi_get_vars_int)(ncid, v, s, c, st, b)
               : how == 2 ? ncmpi_iput_vars_int(ncid, v, s, c, st, b, req)
               : how == 3 ? ncmpi_iget_vars_int(ncid, v, s, c, st, b, req)
                          : ncmpi_bput_vars_int(ncid, v, s, c, st, b, req);
    }
    case 'm': {
        const MPI_Offset *s = g->start, *c = g->count, *st = g->stride, *m = g->imap;
        return how == 0
                   ? (all ? ncmpi_put_varm_int_all : ncmpi_put_varm_int)(ncid, v, s, c, st, m, b)
               : how == 1
                   ? (all ? ncmpi_get_varm_int_all : ncmpi_get_varm_int)(ncid, v, s, c, st, m, b)
               : how == 2 ? ncmpi_iput_varm_int(ncid, v, s, c, st, m, b, req)
               : how == 3 ? ncmpi_iget_varm_int(ncid, v, s, c, st, m, b, req)
                          : ncmpi_bput_varm_int(ncid, v, s, c, st, m, b, req);
    }
    case 'd':
        CHECK(how < 2, "vard is blocking only");
        return how == 0 ? (all ? ncmpi_put_vard_all : ncmpi_put_vard)(ncid, v, g->ftype[0], b, g->n,
                                                                      MPI_INT)
                        : (all ? ncmpi_get_vard_all : ncmpi_get_vard)(ncid, v, g->ftype[0], b, g->n,
                                                                      MPI_INT);
    default: {
        MPI_Offset *const *s = g->starts, *const *c = g->counts;
        return how == 0   ? (all ? ncmpi_put_varn_int_all : ncmpi_put_varn_int)(ncid, v, 2, s, c, b)
               : how == 1 ? (all ? ncmpi_get_varn_int_all : ncmpi_get_varn_int)(ncid, v, 2, s, c, b)
               : how == 2 ? ncmpi_iput_varn_int(ncid, v, 2, s, c, b, req)
               : how == 3 ? ncmpi_iget_varn_int(ncid, v, 2, s, c, b, req)
                          : ncmpi_bput_varn_int(ncid, v, 2, s, c, b, req);
    }
    }
}

/* Collective flexible (MPI_DOUBLE) put (0) or get (1) of family f. */
static int double_access(const char *f, int get, int ncid, int w, struct region *g, double *b) {
    MPI_Offset n = g->n;
    MPI_Datatype t = MPI_DOUBLE;
    if (!strcmp(f, "var"))
        return get ? ncmpi_get_var_all(ncid, w, b, n, t) : ncmpi_put_var_all(ncid, w, b, n, t);
    if (!strcmp(f, "var1"))
        return get ? ncmpi_get_var1_all(ncid, w, g->start, b, n, t)
                   : ncmpi_put_var1_all(ncid, w, g->start, b, n, t);
    if (!strcmp(f, "vara"))
        return get ? ncmpi_get_vara_all(ncid, w, g->start, g->count, b, n, t)
                   : ncmpi_put_vara_all(ncid, w, g->start, g->count, b, n, t);
    if (!strcmp(f, "vars"))
        return get ? ncmpi_get_vars_all(ncid, w, g->start, g->count, g->stride, b, n, t)
                   : ncmpi_put_vars_all(ncid, w, g->start, g->count, g->stride, b, n, t);
    if (!strcmp(f, "varm"))
        return get ? ncmpi_get_varm_all(ncid, w, g->start, g->count, g->stride, g->imap, b, n, t)
                   : ncmpi_put_varm_all(ncid, w, g->start, g->count, g->stride, g->imap, b, n, t);
    if (!strcmp(f, "vard"))
        return get ? ncmpi_get_vard_all(ncid, w, g->ftype[1], b, n, t)
                   : ncmpi_put_vard_all(ncid, w, g->ftype[1], b, n, t);
    return get ? ncmpi_get_varn_all(ncid, w, 2, g->starts, g->counts, b, n, t)
               : ncmpi_put_varn_all(ncid, w, 2, g->starts, g->counts, b, n, t);
}

static void write_phase(const char *path, const char *f, int rank, int np, struct region *g) {
    int ncid, dims[3], v, w, r, req[2], st[2];
    static int b[NY * 64 * NX_RANK];
    static double d[NY * 64 * NX_RANK];
    for (MPI_Offset i = 0; i < g->n; i++)
        b[i] = (int)i + (strcmp(f, "var") ? 1000 * rank : 0), d[i] = b[i] + 0.5;
    NC(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    NC(ncmpi_def_dim(ncid, "y", NY, &dims[0]));
    NC(ncmpi_def_dim(ncid, "x", (MPI_Offset)np * NX_RANK, &dims[1]));
    NC(ncmpi_def_dim(ncid, "t", NC_UNLIMITED, &dims[2]));
    NC(ncmpi_def_var(ncid, "v", NC_INT, 2, dims, &v));
    NC(ncmpi_def_var(ncid, "w", NC_DOUBLE, 2, dims, &w));
    int rdims[2] = {dims[2], dims[1]};
    NC(ncmpi_def_var(ncid, "r", NC_INT, 2, rdims, &r));
    NC(ncmpi_enddef(ncid));
    NC(ncmpi_begin_indep_data(ncid));
    NC(int_access(f, 0, 0, ncid, v, g, b, NULL));
    NC(ncmpi_end_indep_data(ncid));
    NC(int_access(f, 0, 1, ncid, v, g, b, NULL));
    if (strcmp(f, "vard")) { /* nonblocking */
        NC(ncmpi_buffer_attach(ncid, g->n * (MPI_Offset)sizeof(int)));
        NC(int_access(f, 2, 0, ncid, v, g, b, &req[0]));
        NC(int_access(f, 4, 0, ncid, v, g, b, &req[1]));
        NC(ncmpi_wait_all(ncid, 2, req, st));
        NC(st[0]);
        NC(st[1]);
        NC(ncmpi_buffer_detach(ncid));
    }
    NC(double_access(f, 0, ncid, w, g, d));
    MPI_Offset rs[2] = {0, rank * NX_RANK}, rc[2] = {1, NX_RANK};
    NC(ncmpi_put_vara_int_all(ncid, r, rs, rc, b));
    NC(ncmpi_close(ncid));
}

static void read_phase(const char *path, const char *f, int rank, struct region *g) {
    int ncid, v, w, req, st;
    static int b[NY * 64 * NX_RANK];
    static double d[NY * 64 * NX_RANK];
    NC(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    NC(ncmpi_inq_varid(ncid, "v", &v));
    NC(ncmpi_inq_varid(ncid, "w", &w));
    int base = strcmp(f, "var") ? 1000 * rank : 0;
    for (int k = 0; k < (strcmp(f, "vard") ? 3 : 2); k++) {
        memset(b, 0, sizeof b);
        if (k == 0)
            NC(ncmpi_begin_indep_data(ncid));
        NC(int_access(f, k == 2 ? 3 : 1, k == 1, ncid, v, g, b, &req));
        if (k == 0)
            NC(ncmpi_end_indep_data(ncid));
        if (k == 2) {
            NC(ncmpi_wait_all(ncid, 1, &req, &st));
            NC(st);
        }
        for (MPI_Offset i = 0; i < g->n; i++)
            CHECK(b[i] == (int)i + base, "v read back");
    }
    NC(double_access(f, 1, ncid, w, g, d));
    for (MPI_Offset i = 0; i < g->n; i++)
        CHECK(d[i] == (int)i + base + 0.5, "w read back");
    NC(ncmpi_close(ncid));
}

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    CHECK((argc == 3 || argc == 4) && np <= 64, "usage: pnc_var_families DIR FAMILY [wait]");
    const char *f = argv[2];
    char name[64];
    snprintf(name, sizeof name, "%s.nc", f);
    const char *path = path_in(dir_arg(argc, argv), name);
    struct region g;
    region_of(&g, f, rank, np);
    write_phase(path, f, rank, np, &g);
    read_phase(path, f, rank, &g);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc == 4 && strcmp(argv[3], "wait") == 0) {
        printf("ready %d %d\n", rank, (int)getpid());
        fflush(stdout);
        for (;;)
            pause();
    }
    if (rank == 0)
        printf("np=%d family=%s\n", np, f);
    MPI_Finalize();
    return 0;
}
