/* What iostudy's benchmarks (iomodel, metarates, ioprobe) share across their MPI ranks: how a
 * failing rank stops the job, the check of the output directory on rank 0, and the pattern byte
 * of a rank's data. Header-only: each benchmark is one C file. */
#ifndef IOSTUDY_BENCH_MPI_H
#define IOSTUDY_BENCH_MPI_H

#include <mpi.h>
#include <stddef.h>

#include "bench_args.h"

/* The worst status of all ranks. A failing rank goes on to the same collectives as the others
 * and every rank stops after the same one, so the job ends through MPI_Finalize rather than
 * MPI_Abort: with MPICH's mpiexec an abort can kill the job before the failing rank's message
 * has been forwarded (about one run in ten), and that message is the whole diagnosis. As a
 * collective it is also a barrier. */
static inline int agree(int status) {
    int worst = status;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

/* check_dir on rank 0 only (the file system is shared: one mkdir -p, not one per rank), its
 * verdict broadcast: 0, or -1 on every rank, with the error in err on rank 0. */
static inline int check_dir_on_rank0(int rank, const char *dir, size_t room, char *err) {
    int bad = rank == 0 ? check_dir(dir, room, err) != 0 : 0;
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return bad ? -1 : 0;
}

/* The pattern byte of a rank's data, never 0: a hole in a file (zeros) cannot pass for data, and
 * a kept file shows which rank wrote each byte. */
static inline int fill_byte(int rank) { return 1 + rank % 255; }

#endif
