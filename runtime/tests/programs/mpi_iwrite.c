/* MPI-IO's non-blocking calls (test_mpiio.py::test_nonblocking_posix_bytes_match_strace).
 *
 *   every rank r: MPI_File_open(DIR/iwrite.dat, CREATE|RDWR); MPI_File_iwrite_at(offset
 *   4096*r, 4096 bytes) + MPI_Wait; MPI_File_iread_at(same) + MPI_Wait; MPI_File_close
 *
 * Open MPI's ompio does both through POSIX AIO (aio_write, aio_read, collected by aio_return).
 */
#include <mpi.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init");
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char buf[4096];
    memset(buf, 'a' + rank, sizeof buf);
    MPI_File fh;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path_in(dir, "iwrite.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR,
                        MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "MPI_File_open");
    MPI_Request req;
    MPI_Status st;
    MPI_Offset at = (MPI_Offset)4096 * rank;
    CHECK(MPI_File_iwrite_at(fh, at, buf, sizeof buf, MPI_BYTE, &req) == MPI_SUCCESS, "iwrite_at");
    CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS, "wait");
    memset(buf, 0, sizeof buf);
    CHECK(MPI_File_iread_at(fh, at, buf, sizeof buf, MPI_BYTE, &req) == MPI_SUCCESS, "iread_at");
    CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS, "wait");
    CHECK(buf[0] == 'a' + rank && buf[4095] == 'a' + rank, "the bytes read back");
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "MPI_File_close");
    MPI_Finalize();
    return 0;
}
