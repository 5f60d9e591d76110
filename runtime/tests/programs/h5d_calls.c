/* HDF5 dataset calls (see test_h5d.py): every rank alone in its own file DIR/calls.<rank>.h5,
 * HDF5's default (sec2) driver, default transfer properties.
 *   create phase (H5Fcreate):
 *     "contig"  2-D 16 x 32 int (4 bytes), contiguous, H5Dcreate2:
 *               H5Dwrite H5S_ALL (512 points, 2048 bytes);
 *               H5Dwrite regular hyperslab start {2,4} stride {4,8} count {3,2} block {2,4}
 *                 (6 x 8 = 48 points, 192 bytes);
 *               H5Dflush;
 *               H5Dread the same hyperslab (192 bytes);
 *               H5Dwrite irregular hyperslab: block {2,2} at {0,0} OR block {3,3} at {5,5}
 *                 (4 + 9 = 13 points, 52 bytes);
 *               H5Dread 5 points (20 bytes);
 *               H5Dread a none selection (0 bytes);
 *               H5Dclose.
 *     "chunked" 3-D 4 x 6 x 8 double, chunks {2,3,4}, H5Dcreate2: H5Dwrite H5S_ALL (192 points,
 *               1536 bytes); H5Dclose.
 *     "old"     1-D 100 short, H5Dcreate1 (deprecated): H5Dwrite H5S_ALL (200 bytes); H5Dclose.
 *     group "g", "inner" in it, 1-D 10 long long, H5Dcreate2 from the group: H5Dwrite H5S_ALL
 *               (80 bytes); H5Dclose.
 *     "many"    1-D 64 int, H5Dcreate2: H5Dwrite of the first k elements (regular hyperslab
 *               start 0, count k) for k = 1 .. 40 (40 distinct accesses, 4k bytes), then of the
 *               first 40 three times more, then of the first 1 once more; H5Dclose.
 *   H5Fclose; H5Fopen read-only:
 *     H5Dopen2 "chunked", H5Dread H5S_ALL (1536 bytes), H5Dclose;
 *     H5Dopen1 "old", H5Dread H5S_ALL (200 bytes), H5Dclose;
 *     H5Oopen "contig", H5Dread H5S_ALL (2048 bytes), H5Oclose;
 *     H5Oopen_by_idx of the root group's first link by name ("chunked"), H5Oclose.
 *   H5Fclose. Rank 0 prints "np=<np>" at the end.
 */
#include <hdf5.h>
#include <mpi.h>

#include "common.h"

static void write_all(hid_t dset, hid_t type, const void *buf) {
    CHECK(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "H5Dwrite all");
}

static void read_all(hid_t dset, hid_t type, void *buf) {
    CHECK(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "H5Dread all");
}

/* Reads or writes n points of dset's file selection space from or to buf. */
static void transfer(hid_t dset, hid_t space, hssize_t n, int is_write, int *buf) {
    hsize_t count = (hsize_t)(n > 0 ? n : 1);
    hid_t mem = H5Screate_simple(1, &count, NULL);
    CHECK(mem >= 0 && H5Sget_select_npoints(space) == n, "selection");
    if (n == 0)
        CHECK(H5Sselect_none(mem) >= 0, "H5Sselect_none mem");
    herr_t r = is_write ? H5Dwrite(dset, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf)
                        : H5Dread(dset, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf);
    CHECK(r >= 0 && H5Sclose(mem) >= 0, is_write ? "H5Dwrite" : "H5Dread");
}

static void contig(hid_t file) {
    static int buf[16 * 32];
    hsize_t dims[2] = {16, 32};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t d =
        H5Dcreate2(file, "contig", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(space >= 0 && d >= 0, "H5Dcreate2 contig");
    for (int i = 0; i < 16 * 32; i++)
        buf[i] = i;
    write_all(d, H5T_NATIVE_INT, buf);

    hsize_t start[2] = {2, 4}, stride[2] = {4, 8}, count[2] = {3, 2}, block[2] = {2, 4};
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, block) >= 0, "hs");
    transfer(d, space, 48, 1, buf);
    CHECK(H5Dflush(d) >= 0, "H5Dflush");
    transfer(d, space, 48, 0, buf);

    hsize_t s1[2] = {0, 0}, b1[2] = {2, 2}, s2[2] = {5, 5}, b2[2] = {3, 3}, one[2] = {1, 1};
    CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, s1, NULL, one, b1) >= 0 &&
              H5Sselect_hyperslab(space, H5S_SELECT_OR, s2, NULL, one, b2) >= 0,
          "irregular");
    transfer(d, space, 13, 1, buf);

    hsize_t points[5][2] = {{0, 0}, {1, 3}, {7, 7}, {15, 31}, {9, 2}};
    CHECK(H5Sselect_elements(space, H5S_SELECT_SET, 5, &points[0][0]) >= 0, "points");
    transfer(d, space, 5, 0, buf);

    CHECK(H5Sselect_none(space) >= 0, "none");
    transfer(d, space, 0, 0, buf);
    CHECK(H5Dclose(d) >= 0 && H5Sclose(space) >= 0, "close contig");
}

static void create_others(hid_t file) {
    static double dbl[4 * 6 * 8];
    static short sht[100];
    static long long ll[10];
    hsize_t dims3[3] = {4, 6, 8}, chunk[3] = {2, 3, 4}, n100 = 100, n10 = 10;
    hid_t s3 = H5Screate_simple(3, dims3, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    CHECK(s3 >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 3, chunk) >= 0, "chunk");
    hid_t d = H5Dcreate2(file, "chunked", H5T_NATIVE_DOUBLE, s3, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(d >= 0, "H5Dcreate2 chunked");
    write_all(d, H5T_NATIVE_DOUBLE, dbl);
    CHECK(H5Dclose(d) >= 0 && H5Sclose(s3) >= 0 && H5Pclose(dcpl) >= 0, "close chunked");

    hid_t s1 = H5Screate_simple(1, &n100, NULL);
    d = H5Dcreate1(file, "old", H5T_NATIVE_SHORT, s1, H5P_DEFAULT);
    CHECK(s1 >= 0 && d >= 0, "H5Dcreate1");
    write_all(d, H5T_NATIVE_SHORT, sht);
    CHECK(H5Dclose(d) >= 0 && H5Sclose(s1) >= 0, "close old");

    hid_t g = H5Gcreate2(file, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s10 = H5Screate_simple(1, &n10, NULL);
    d = H5Dcreate2(g, "inner", H5T_NATIVE_LLONG, s10, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(g >= 0 && s10 >= 0 && d >= 0, "H5Dcreate2 inner");
    write_all(d, H5T_NATIVE_LLONG, ll);
    CHECK(H5Dclose(d) >= 0 && H5Sclose(s10) >= 0 && H5Gclose(g) >= 0, "close inner");
}

/* More distinct accesses than the 32 a dataset's most common ones are counted among. */
static void many(hid_t file) {
    static int buf[64];
    hsize_t n = 64, start = 0;
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t d =
        H5Dcreate2(file, "many", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(space >= 0 && d >= 0, "H5Dcreate2 many");
    int sizes[44];
    for (int k = 1; k <= 40; k++)
        sizes[k - 1] = k;
    sizes[40] = sizes[41] = sizes[42] = 40;
    sizes[43] = 1;
    for (int i = 0; i < 44; i++) {
        hsize_t count = (hsize_t)sizes[i];
        CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL) >= 0, "hs");
        transfer(d, space, sizes[i], 1, buf);
    }
    CHECK(H5Dclose(d) >= 0 && H5Sclose(space) >= 0, "close many");
}

static void reopen(const char *path) {
    static double dbl[4 * 6 * 8];
    static short sht[100];
    static int buf[16 * 32];
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(file >= 0, "H5Fopen");
    hid_t d = H5Dopen2(file, "chunked", H5P_DEFAULT);
    CHECK(d >= 0, "H5Dopen2");
    read_all(d, H5T_NATIVE_DOUBLE, dbl);
    CHECK(H5Dclose(d) >= 0, "close chunked");
    d = H5Dopen1(file, "old");
    CHECK(d >= 0, "H5Dopen1");
    read_all(d, H5T_NATIVE_SHORT, sht);
    CHECK(H5Dclose(d) >= 0, "close old");
    d = H5Oopen(file, "contig", H5P_DEFAULT);
    CHECK(d >= 0, "H5Oopen");
    read_all(d, H5T_NATIVE_INT, buf);
    CHECK(buf[16 * 32 - 1] == 16 * 32 - 1, "read back");
    CHECK(H5Oclose(d) >= 0, "H5Oclose");
    d = H5Oopen_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT);
    CHECK(d >= 0 && H5Iget_type(d) == H5I_DATASET, "H5Oopen_by_idx");
    CHECK(H5Oclose(d) >= 0, "H5Oclose by idx");
    CHECK(H5Fclose(file) >= 0, "H5Fclose");
}

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    char name[32];
    snprintf(name, sizeof name, "calls.%d.h5", rank);
    const char *path = path_in(dir_arg(argc, argv), name);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(file >= 0, "H5Fcreate");
    contig(file);
    create_others(file);
    many(file);
    CHECK(H5Fclose(file) >= 0, "H5Fclose");
    reopen(path);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d\n", np);
    MPI_Finalize();
    return 0;
}
