/* PnetCDF pattern (see test_hdf5_pnetcdf.py), N = 1024 ints per rank:
 *   DIR/data.nc  every rank: ncmpi_create; dimension "x" of np*N; int variables "v" and "w";
 *                enddef; rank r puts its N ints of "v" at r*N (put_vara_int_all); redef, an
 *                attribute, enddef; ncmpi_sync; iput of its N ints of "w", ncmpi_wait_all;
 *                close. ncmpi_open read-only; get_vara_int_all of its N ints of "v", checked;
 *                close.
 * Per rank: 1 create, 1 open, 1 redef, 1 sync, 1 collective wait; at least 2 N * 4 bytes put
 * and N * 4 got. Rank 0 prints "np=<np>" at the end.
 */
#include <mpi.h>
#include <pnetcdf.h>

#include "common.h"

#define N 1024

#define NC(call) CHECK((call) == NC_NOERR, #call)

int main(int argc, char **argv) {
    int rank, np, ncid, dim, v, w, req, status;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = path_in(dir_arg(argc, argv), "data.nc");
    static int buf[N];
    for (int i = 0; i < N; i++)
        buf[i] = rank * N + i;
    MPI_Offset start = (MPI_Offset)rank * N, count = N;

    NC(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    NC(ncmpi_def_dim(ncid, "x", (MPI_Offset)np * N, &dim));
    NC(ncmpi_def_var(ncid, "v", NC_INT, 1, &dim, &v));
    NC(ncmpi_def_var(ncid, "w", NC_INT, 1, &dim, &w));
    NC(ncmpi_enddef(ncid));
    NC(ncmpi_put_vara_int_all(ncid, v, &start, &count, buf));
    NC(ncmpi_redef(ncid));
    NC(ncmpi_put_att_text(ncid, NC_GLOBAL, "note", 4, "iost"));
    NC(ncmpi_enddef(ncid));
    NC(ncmpi_sync(ncid));
    NC(ncmpi_iput_vara_int(ncid, w, &start, &count, buf, &req));
    NC(ncmpi_wait_all(ncid, 1, &req, &status));
    NC(status);
    NC(ncmpi_close(ncid));

    memset(buf, 0, sizeof buf);
    NC(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    NC(ncmpi_inq_varid(ncid, "v", &v));
    NC(ncmpi_get_vara_int_all(ncid, v, &start, &count, buf));
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == rank * N + i, "read back");
    NC(ncmpi_close(ncid));

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d\n", np);
    MPI_Finalize();
    return 0;
}
