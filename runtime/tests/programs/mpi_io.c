/* MPI pattern (see test_mpi.py), B = 1000 bytes, T = np*(np+1)/2:
 *   DIR/shared.dat  every rank: open(O_CREAT|O_RDWR, 0644); rank r pwrites r+1 blocks of B at
 *                   B*r*(r+1)/2 + k*B (k = 0..r); barrier; preads the same blocks back; close
 *   DIR/rank<r>.dat rank r only: open(O_CREAT|O_WRONLY|O_TRUNC, 0600); r+1 writes of B; close
 *   DIR/some.dat    ranks r < max(1, np-1): open(O_CREAT|O_WRONLY, 0644); pwrite 10 @10*r; close
 *   DIR/stdio_shared.txt every rank: fopen("a"); r+1 fwrites of 100 bytes; fclose
 * Rank 0 prints "np=<np>" at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include "common.h"

#define B 1000

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *dir = dir_arg(argc, argv);
    static _Alignas(64) char buf[B];
    memset(buf, 'A' + rank % 26, sizeof buf);
    long base = (long)B * rank * (rank + 1) / 2;

    int fd = open(path_in(dir, "shared.dat"), O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "open shared");
    for (int k = 0; k <= rank; k++)
        EXPECT_RET(pwrite(fd, buf, B, base + (long)k * B), B);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k <= rank; k++)
        EXPECT_RET(pread(fd, buf, B, base + (long)k * B), B);
    EXPECT_RET(close(fd), 0);

    char name[64];
    snprintf(name, sizeof name, "rank%d.dat", rank);
    fd = open(path_in(dir, name), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    CHECK(fd >= 0, "open per-rank");
    for (int k = 0; k <= rank; k++)
        EXPECT_RET(write(fd, buf, B), B);
    EXPECT_RET(close(fd), 0);

    int some = np > 1 ? np - 1 : 1;
    if (rank < some) {
        fd = open(path_in(dir, "some.dat"), O_CREAT | O_WRONLY, 0644);
        CHECK(fd >= 0, "open some");
        EXPECT_RET(pwrite(fd, buf, 10, 10L * rank), 10);
        EXPECT_RET(close(fd), 0);
    }

    FILE *sf = fopen(path_in(dir, "stdio_shared.txt"), "a");
    CHECK(sf != NULL, "fopen stdio_shared.txt");
    for (int k = 0; k <= rank; k++)
        EXPECT_RET(fwrite(buf, 1, 100, sf), 100);
    EXPECT_RET(fclose(sf), 0);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("np=%d\n", np);
    MPI_Finalize();
    return 0;
}
