/* An MPI job that ends without MPI_Finalize (test_mpi_unfinished.py).
 *
 *   every rank r of np: DIR/shared.dat: open(O_CREAT|O_WRONLY), pwrite (r+1)*100 bytes at
 *   offset 1000*r, close; DIR/rank<r>.dat: open, write 10 bytes, close; MPI_Barrier; exit(0)
 */
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init");
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char buf[1000], name[32];
    memset(buf, 'm', sizeof buf);
    int fd = open(path_in(dir, "shared.dat"), O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0, "open shared");
    EXPECT_RET(pwrite(fd, buf, (size_t)(rank + 1) * 100, 1000 * rank), (rank + 1) * 100);
    EXPECT_RET(close(fd), 0);
    snprintf(name, sizeof name, "rank%d.dat", rank);
    fd = open(path_in(dir, name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open own");
    EXPECT_RET(write(fd, buf, 10), 10);
    EXPECT_RET(close(fd), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    exit(0);
}
