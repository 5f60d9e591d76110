/* Every MPI-IO call family once per rank (see test_mpiio.py). Rank r of np, n_r = 256 (r + 1)
 * MPI_INTs (S_r = 1024 (r + 1) bytes) per call:
 *   DIR/shared.dat  MPI_COMM_WORLD, amode CREATE|RDWR, an info object (hints); set_view with
 *                   MPI_INFO_NULL; then the writes: write, write_at, write_shared (independent),
 *                   write_all, write_at_all, write_ordered (collective), write_all_begin/end,
 *                   write_at_all_begin/end, write_ordered_begin/end (split), iwrite, iwrite_at,
 *                   iwrite_shared, iwrite_all, iwrite_at_all (non-blocking, then MPI_Wait);
 *                   sync; seek_shared to 0; the same 14 reads in the same order; close.
 *   DIR/rank<r>.dat MPI_COMM_SELF, amode CREATE|WRONLY, MPI_INFO_NULL; set_view with an info
 *                   object; r + 1 write_at of one element of a contiguous type of 10 doubles
 *                   (80 bytes); close.
 * Rank 0 prints "shared_amode=<n> unique_amode=<n>" (the values differ between MPIs).
 * Any MPI call that fails exits with 99.
 */
#include <mpi.h>

#include "common.h"

#define OK(call) CHECK((call) == MPI_SUCCESS, #call)

/* Each call of a rank works on its own block: offsets never overlap, so every call moves
 * exactly S_r bytes whatever the MPI does with file pointers. */
static MPI_Offset block(int call, int rank, int np, int n) {
    return ((MPI_Offset)call * np + rank) * (MPI_Offset)n * (MPI_Offset)sizeof(int) * 4;
}

static void write_all_families(MPI_File fh, int *buf, int n, int rank, int np) {
    MPI_Status st;
    MPI_Request req;
    int call = 0;
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_write(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_write_at(fh, block(call++, rank, np, n), buf, n, MPI_INT, &st));
    OK(MPI_File_write_shared(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_write_all(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_write_at_all(fh, block(call++, rank, np, n), buf, n, MPI_INT, &st));
    OK(MPI_File_write_ordered(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_write_all_begin(fh, buf, n, MPI_INT));
    OK(MPI_File_write_all_end(fh, buf, &st));
    OK(MPI_File_write_at_all_begin(fh, block(call++, rank, np, n), buf, n, MPI_INT));
    OK(MPI_File_write_at_all_end(fh, buf, &st));
    OK(MPI_File_write_ordered_begin(fh, buf, n, MPI_INT));
    OK(MPI_File_write_ordered_end(fh, buf, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_iwrite(fh, buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_iwrite_at(fh, block(call++, rank, np, n), buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_iwrite_shared(fh, buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_iwrite_all(fh, buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_iwrite_at_all(fh, block(call++, rank, np, n), buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
}

static void read_all_families(MPI_File fh, int *buf, int n, int rank, int np) {
    MPI_Status st;
    MPI_Request req;
    int call = 0;
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_read(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_read_at(fh, block(call++, rank, np, n), buf, n, MPI_INT, &st));
    OK(MPI_File_read_shared(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_read_all(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_read_at_all(fh, block(call++, rank, np, n), buf, n, MPI_INT, &st));
    OK(MPI_File_read_ordered(fh, buf, n, MPI_INT, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_read_all_begin(fh, buf, n, MPI_INT));
    OK(MPI_File_read_all_end(fh, buf, &st));
    OK(MPI_File_read_at_all_begin(fh, block(call++, rank, np, n), buf, n, MPI_INT));
    OK(MPI_File_read_at_all_end(fh, buf, &st));
    OK(MPI_File_read_ordered_begin(fh, buf, n, MPI_INT));
    OK(MPI_File_read_ordered_end(fh, buf, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_iread(fh, buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_iread_at(fh, block(call++, rank, np, n), buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_iread_shared(fh, buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_seek(fh, block(call++, rank, np, n), MPI_SEEK_SET));
    OK(MPI_File_iread_all(fh, buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
    OK(MPI_File_iread_at_all(fh, block(call++, rank, np, n), buf, n, MPI_INT, &req));
    OK(MPI_Wait(&req, &st));
}

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *dir = dir_arg(argc, argv);
    int n = 256 * (rank + 1);
    int *buf = calloc((size_t)n, sizeof(int));
    CHECK(buf != NULL, "calloc");
    for (int i = 0; i < n; i++)
        buf[i] = rank * 100000 + i;

    MPI_Info info;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "romio_cb_write", "enable"));
    int shared_amode = MPI_MODE_CREATE | MPI_MODE_RDWR;
    MPI_File fh;
    OK(MPI_File_open(MPI_COMM_WORLD, path_in(dir, "shared.dat"), shared_amode, info, &fh));
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    write_all_families(fh, buf, n, rank, np);
    OK(MPI_File_sync(fh));
    OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET)); /* collective: also the barrier */
    read_all_families(fh, buf, n, rank, np);
    OK(MPI_File_close(&fh));

    char name[64];
    snprintf(name, sizeof name, "rank%d.dat", rank);
    int unique_amode = MPI_MODE_CREATE | MPI_MODE_WRONLY;
    OK(MPI_File_open(MPI_COMM_SELF, path_in(dir, name), unique_amode, MPI_INFO_NULL, &fh));
    OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info));
    MPI_Datatype ten_doubles;
    OK(MPI_Type_contiguous(10, MPI_DOUBLE, &ten_doubles));
    OK(MPI_Type_commit(&ten_doubles));
    double values[10] = {0};
    MPI_Status st;
    for (int k = 0; k <= rank; k++)
        OK(MPI_File_write_at(fh, (MPI_Offset)k * 80, values, 1, ten_doubles, &st));
    OK(MPI_File_close(&fh));
    OK(MPI_Type_free(&ten_doubles));
    OK(MPI_Info_free(&info));

    if (rank == 0)
        printf("shared_amode=%d unique_amode=%d\n", shared_amode, unique_amode);
    free(buf);
    MPI_Finalize();
    return 0;
}
