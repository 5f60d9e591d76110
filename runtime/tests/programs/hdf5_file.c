/* Parallel HDF5 pattern (see test_hdf5_pnetcdf.py), N = 1024 ints per rank:
 *   DIR/data.h5  every rank, through the MPI-IO driver (H5Pset_fapl_mpio): H5Fcreate; dataset
 *                "data" of np*N ints, rank r writes its N at r*N collectively; H5Fflush of the
 *                file, H5Fflush of the dataset (HDF5 flushes its file); H5Fclose; H5Fopen
 *                read-only; collective read of the same N ints, checked; H5Fclose.
 * Per rank: 2 opens, 2 flushes. Rank 0 prints "np=<np>" at the end. With a second argument
 * "wait", every rank prints "ready <rank> <pid>" instead and waits to be killed (test_killed's
 * way: the records must survive in the memory-mapped logs).
 */
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include "common.h"

#define N 1024

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = path_in(dir_arg(argc, argv), "data.h5");
    static int buf[N];
    for (int i = 0; i < N; i++)
        buf[i] = rank * N + i;

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(fapl >= 0 && H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) >= 0, "fapl");
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK(dxpl >= 0 && H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) >= 0, "dxpl");
    hsize_t total = (hsize_t)np * N, start = (hsize_t)rank * N, count = N;

    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file >= 0, "H5Fcreate");
    hid_t space = H5Screate_simple(1, &total, NULL);
    hid_t mem = H5Screate_simple(1, &count, NULL);
    CHECK(space >= 0 && mem >= 0, "H5Screate_simple");
    hid_t dset =
        H5Dcreate2(file, "data", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(dset >= 0, "H5Dcreate2");
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0, "select");
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, mem, space, dxpl, buf) >= 0, "H5Dwrite");
    CHECK(H5Fflush(file, H5F_SCOPE_LOCAL) >= 0, "H5Fflush file");
    CHECK(H5Fflush(dset, H5F_SCOPE_GLOBAL) >= 0, "H5Fflush dataset");
    CHECK(H5Dclose(dset) >= 0 && H5Sclose(space) >= 0, "close dataset");
    CHECK(H5Fclose(file) >= 0, "H5Fclose");

    memset(buf, 0, sizeof buf);
    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    CHECK(file >= 0, "H5Fopen");
    dset = H5Dopen2(file, "data", H5P_DEFAULT);
    CHECK(dset >= 0, "H5Dopen2");
    space = H5Dget_space(dset);
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0, "select");
    CHECK(H5Dread(dset, H5T_NATIVE_INT, mem, space, dxpl, buf) >= 0, "H5Dread");
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == rank * N + i, "read back");
    CHECK(H5Dclose(dset) >= 0 && H5Sclose(space) >= 0 && H5Sclose(mem) >= 0, "close dataset");
    CHECK(H5Fclose(file) >= 0, "H5Fclose");
    CHECK(H5Pclose(dxpl) >= 0 && H5Pclose(fapl) >= 0, "H5Pclose");

    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2 && strcmp(argv[2], "wait") == 0) {
        printf("ready %d %d\n", rank, (int)getpid());
        fflush(stdout);
        for (;;)
            pause();
    }
    if (rank == 0)
        printf("np=%d\n", np);
    MPI_Finalize();
    return 0;
}
