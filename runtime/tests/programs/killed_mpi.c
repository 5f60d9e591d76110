/* MPI I/O, then a wait to be killed (see test_killed.py). Rank r of np: r + 1 write()s of 1000
 * bytes to DIR/rank<r>.dat; one pwrite of 1000 bytes at 1000 r to DIR/shared.dat (opened by all
 * ranks); then a barrier, "ready <rank> <pid>" on stdout, and a wait for a signal. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = dir_arg(argc, argv);
    static char buf[1000];
    memset(buf, 'm', sizeof buf);
    char name[64];
    snprintf(name, sizeof name, "rank%d.dat", rank);
    int fd = open(path_in(dir, name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open rank file");
    for (int i = 0; i <= rank; i++)
        EXPECT_RET(write(fd, buf, sizeof buf), sizeof buf);
    fd = open(path_in(dir, "shared.dat"), O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0, "open shared");
    EXPECT_RET(pwrite(fd, buf, sizeof buf, 1000L * rank), sizeof buf);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("ready %d %d\n", rank, (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
