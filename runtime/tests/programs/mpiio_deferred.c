/* A collective write through ROMIO's deferred open (see test_file_sharing.py): every rank of np
 * opens DIR/shared.dat with MPI_File_open on MPI_COMM_WORLD and writes 64 KiB at 64 KiB x rank
 * with MPI_File_write_at_all; with the hints romio_no_indep_rw=true and cb_nodes=2 only the two
 * aggregators open the file through POSIX and write every byte. Rank 0 prints "np=<np>".
 */
#include <mpi.h>

#include "common.h"

#define B 65536

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    static char buf[B];
    memset(buf, 'a' + rank % 26, sizeof buf);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_no_indep_rw", "true");
    MPI_Info_set(info, "cb_nodes", "2");
    MPI_Info_set(info, "cb_config_list", "*:2"); /* two aggregators on one host too */
    MPI_File fh;
    const char *path = path_in(dir_arg(argc, argv), "shared.dat");
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh) ==
              MPI_SUCCESS,
          "MPI_File_open");
    CHECK(MPI_File_write_at_all(fh, (MPI_Offset)B * rank, buf, B, MPI_BYTE, MPI_STATUS_IGNORE) ==
              MPI_SUCCESS,
          "MPI_File_write_at_all");
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "MPI_File_close");
    MPI_Info_free(&info);
    if (rank == 0)
        printf("np=%d\n", np);
    MPI_Finalize();
    return 0;
}
