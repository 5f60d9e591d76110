/* DXT pattern (see test_dxt.py), rank r of np:
 *   DIR/posix.dat  every rank: open(O_CREAT|O_RDWR, 0644); 3 pwrites of 100 (r + 1) bytes at
 *                  1000 (3 r + k), k = 0..2; barrier; 2 preads of 50 bytes at 1000 (3 r + k),
 *                  k = 0..1; close
 *   DIR/mpiio.dat  MPI_File_open on MPI_COMM_WORLD (CREATE|RDWR), default view; 2
 *                  MPI_File_write_at of 64 (r + 1) MPI_BYTEs at 4096 (2 r + k), k = 0..1; barrier;
 *                  1 MPI_File_read_at of 32 MPI_BYTEs at 4096 (2 r); close
 * Rank 0 prints "np=<np>" at the end. With a third argument "wait", every rank then prints
 * "ready <rank> <pid>" and waits for a signal instead of ending (test_dxt.py kills it). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *dir = dir_arg(argc, argv);
    static _Alignas(64) char buf[4096];
    memset(buf, 'a' + rank % 26, sizeof buf);

    int fd = open(path_in(dir, "posix.dat"), O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "open posix.dat");
    for (int k = 0; k < 3; k++)
        EXPECT_RET(pwrite(fd, buf, 100 * (rank + 1), 1000L * (3 * rank + k)), 100 * (rank + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 2; k++)
        EXPECT_RET(pread(fd, buf, 50, 1000L * (3 * rank + k)), 50);
    EXPECT_RET(close(fd), 0);

    MPI_File fh;
    MPI_Status st;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path_in(dir, "mpiio.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR,
                        MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "MPI_File_open");
    for (int k = 0; k < 2; k++)
        CHECK(MPI_File_write_at(fh, 4096L * (2 * rank + k), buf, 64 * (rank + 1), MPI_BYTE, &st) ==
                  MPI_SUCCESS,
              "MPI_File_write_at");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_read_at(fh, 4096L * (2 * rank), buf, 32, MPI_BYTE, &st) == MPI_SUCCESS,
          "MPI_File_read_at");
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "MPI_File_close");

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
