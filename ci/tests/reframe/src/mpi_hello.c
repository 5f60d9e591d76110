/* One line per rank: rank, size, host name and Slurm node name. The tests count the lines and
 * check the size, which catches an MPI launched as N independent singletons (each "rank 0 of 1").
 * SLURMD_NODENAME tells the nodes apart even when they share a host name. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    char host[256] = "?";
    const char *node = getenv("SLURMD_NODENAME");

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host - 1);
    /* A collective, so that a rank that cannot reach the others fails the job. */
    MPI_Barrier(MPI_COMM_WORLD);
    printf("hello rank %d of %d host %s node %s\n", rank, size, host, node ? node : "-");
    MPI_Finalize();
    return 0;
}
