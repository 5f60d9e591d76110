/* PnetCDF variable edge cases (see test_pnc_var.py): `pnc_var_edges DIR`. Every rank r of np,
 * all calls collective:
 *   DIR/edges.nc  ncmpi_create; dimensions d0 = 2, d1 .. d4 = 1, d5 = 3 * np, "t" unlimited,
 *                 c = 4; variables short h(d0, .., d5) (six dimensions: the access tuples keep
 *                 the last five), int t(t, c) (a record variable), double s (a scalar); enddef;
 *                 ncmpi_inq_varid of "h" twice;
 *     h: A put_vara {0,0,0,0,0,r*3} count {2,1,1,1,1,3}            12 bytes
 *        B put_vars, the same with stride NULL (strides 1)        12
 *        C put_vara count {1,1,1,1,1,1} at {0,..,0,r*3+i}, i < 3   2, three times
 *          put_vara of count 0 (nothing)                          0
 *        D put_var1 at {0,..,0,r*3} twice                         2, twice
 *     t: put_vara of record r (start {r, 0}, count {1, 4})        16
 *        get_var: the whole variable, np records                  np * 16
 *     s: put_var, get_var1 (start NULL)                           8 each
 *   close. Rank 0 prints "np=<np> edges" at the end.
 */
#include <mpi.h>
#include <pnetcdf.h>

#include "common.h"

#define NC(call) CHECK((call) == NC_NOERR, #call)

int main(int argc, char **argv) {
    int rank, np, ncid, dims[8], h, t, s, v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = path_in(dir_arg(argc, argv), "edges.nc");
    NC(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    const char *names[] = {"d0", "d1", "d2", "d3", "d4", "d5"};
    MPI_Offset lens[] = {2, 1, 1, 1, 1, 3 * np};
    for (int i = 0; i < 6; i++)
        NC(ncmpi_def_dim(ncid, names[i], lens[i], &dims[i]));
    NC(ncmpi_def_dim(ncid, "t", NC_UNLIMITED, &dims[6]));
    NC(ncmpi_def_dim(ncid, "c", 4, &dims[7]));
    NC(ncmpi_def_var(ncid, "h", NC_SHORT, 6, dims, &h));
    NC(ncmpi_def_var(ncid, "t", NC_INT, 2, &dims[6], &t));
    NC(ncmpi_def_var(ncid, "s", NC_DOUBLE, 0, NULL, &s));
    NC(ncmpi_enddef(ncid));
    NC(ncmpi_inq_varid(ncid, "h", &v));
    NC(ncmpi_inq_varid(ncid, "h", &v));
    CHECK(v == h, "inq_varid finds h");

    short hb[6] = {1, 2, 3, 4, 5, 6};
    MPI_Offset start[6] = {0, 0, 0, 0, 0, rank * 3}, count[6] = {2, 1, 1, 1, 1, 3};
    NC(ncmpi_put_vara_short_all(ncid, h, start, count, hb));
    NC(ncmpi_put_vars_short_all(ncid, h, start, count, NULL, hb));
    MPI_Offset one[6] = {1, 1, 1, 1, 1, 1}, none[6] = {0};
    for (int i = 0; i < 3; i++) {
        MPI_Offset at[6] = {0, 0, 0, 0, 0, rank * 3 + i};
        NC(ncmpi_put_vara_short_all(ncid, h, at, one, hb));
    }
    NC(ncmpi_put_vara_short_all(ncid, h, start, none, hb));
    NC(ncmpi_put_var1_short_all(ncid, h, start, hb));
    NC(ncmpi_put_var1_short_all(ncid, h, start, hb));

    int tb[4 * 64] = {7, 8, 9, 10};
    CHECK(np <= 64, "at most 64 ranks");
    MPI_Offset ts[2] = {rank, 0}, tc[2] = {1, 4};
    NC(ncmpi_put_vara_int_all(ncid, t, ts, tc, tb));
    NC(ncmpi_get_var_int_all(ncid, t, tb));
    CHECK(tb[4 * rank] == 7 && tb[4 * rank + 3] == 10, "t read back");

    double sv = 2.5, got = 0;
    NC(ncmpi_put_var_double_all(ncid, s, &sv));
    NC(ncmpi_get_var1_double_all(ncid, s, NULL, &got));
    CHECK(got == 2.5, "s read back");
    NC(ncmpi_close(ncid));

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d edges\n", np);
    MPI_Finalize();
    return 0;
}
