/* Makes N MPI_File_write_at calls of 64 bytes on a file of DIR opened on MPI_COMM_SELF, so that
 * instruction counts of runs with N and with 0 calls, with and without the runtime, isolate the
 * cost the runtime adds to one MPI-IO call (and to the POSIX write beneath it).
 * Usage (one process, no launcher needed): bench_mpiio-<flavour> N DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 3) {
        fprintf(stderr, "usage: %s N DIR\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    long n = atol(argv[1]);
    char path[4096], buf[64];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/bench_mpiio.dat", argv[2]);
    MPI_File fh;
    int rc =
        MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (long i = 0; rc == MPI_SUCCESS && i < n; i++)
        rc = MPI_File_write_at(fh, (i % 1024) * 64, buf, sizeof buf, MPI_BYTE, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS)
        rc = MPI_File_close(&fh);
    MPI_Finalize();
    return rc != MPI_SUCCESS;
}
