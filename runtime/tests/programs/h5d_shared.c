/* One HDF5 dataset shared by every rank (see test_h5d.py), through the MPI-IO driver:
 *   DIR/shared.h5: H5Fcreate; "grid" 2-D (np * 8) x 16 int, chunks {8, 16}, H5Dcreate2;
 *   rank r writes rows [8r, 8r + 8) collectively (regular hyperslab start {8r, 0}, count
 *   {8, 16}: 128 points, 512 bytes); H5Dflush; reads the same rows back independently (default
 *   transfer properties), checked; H5Dclose; H5Fclose.
 * Per rank: 1 open, 1 write, 1 read, 1 flush, 512 bytes each way. Rank 0 prints "np=<np>".
 */
#include <hdf5.h>
#include <mpi.h>

#include "common.h"

#define ROWS 8
#define COLS 16

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *path = path_in(dir_arg(argc, argv), "shared.h5");
    static int buf[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        buf[i] = rank * ROWS * COLS + i;

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(fapl >= 0 && H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) >= 0, "fapl");
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK(dxpl >= 0 && H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) >= 0, "dxpl");
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file >= 0, "H5Fcreate");

    hsize_t dims[2] = {(hsize_t)np * ROWS, COLS}, chunk[2] = {ROWS, COLS};
    hsize_t start[2] = {(hsize_t)rank * ROWS, 0}, count[2] = {ROWS, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL), mem = H5Screate_simple(2, count, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(space >= 0 && mem >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 2, chunk) >= 0, "spaces");
    hid_t dset = H5Dcreate2(file, "grid", H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(dset >= 0, "H5Dcreate2");
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) >= 0, "select");
    CHECK(H5Dwrite(dset, H5T_NATIVE_INT, mem, space, dxpl, buf) >= 0, "H5Dwrite");
    CHECK(H5Dflush(dset) >= 0, "H5Dflush");
    memset(buf, 0, sizeof buf);
    CHECK(H5Dread(dset, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf) >= 0, "H5Dread");
    for (int i = 0; i < ROWS * COLS; i++)
        CHECK(buf[i] == rank * ROWS * COLS + i, "read back");
    CHECK(H5Dclose(dset) >= 0 && H5Sclose(space) >= 0 && H5Sclose(mem) >= 0, "close dataset");
    CHECK(H5Fclose(file) >= 0, "H5Fclose");
    CHECK(H5Pclose(dcpl) >= 0 && H5Pclose(dxpl) >= 0 && H5Pclose(fapl) >= 0, "H5Pclose");

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d\n", np);
    MPI_Finalize();
    return 0;
}
