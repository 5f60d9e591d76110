/* MPI I/O patterns with a known diagnosis (analysis/tests/test_diagnose_programs.py):
 *   io_patterns DIR MODE
 *   small     every rank: DIR/small<r>.dat, 2000 writes of 100 bytes
 *   rank0     rank 0 only: DIR/rank0.dat, 8 writes of 1 MiB (the others do no I/O)
 *   indep     every rank: DIR/indep.dat opened with MPI-IO, 600 independent MPI_File_write_at
 *             of 64 KiB at rank-interleaved offsets
 *   imbalance rank r: DIR/imb<r>.dat, (1 + 7r) writes of 1 MiB (rank 0: 1 MiB, rank 1: 8 MiB)
 *   meta      rank r: DIR/meta<r>.dat, one write of 1 KiB, then 50000 times open, fstat, close
 *   good      every rank: DIR/good.dat opened with MPI-IO, one MPI_File_write_at_all of 8 MiB
 *             at 8 MiB x rank (large, aligned, collective, one shared file)
 * Rank 0 prints "done MODE" at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define MIB (1 << 20)

static char *rank_file(const char *dir, const char *stem, int rank) {
    char name[64];
    snprintf(name, sizeof name, "%s%d.dat", stem, rank);
    return path_in(dir, name);
}

static void posix_writes(const char *path, const char *buf, size_t size, int count) {
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    for (int k = 0; k < count; k++)
        EXPECT_RET(write(fd, buf, size), size);
    EXPECT_RET(close(fd), 0);
}

static void metadata_loop(const char *path, const char *buf) {
    posix_writes(path, buf, 1024, 1);
    struct stat st;
    for (int k = 0; k < 50000; k++) {
        int fd = open(path, O_RDONLY);
        CHECK(fd >= 0, "open");
        EXPECT_RET(fstat(fd, &st), 0);
        EXPECT_RET(close(fd), 0);
    }
}

static void mpiio_writes(const char *path, const char *buf, int rank, int np, int collective) {
    MPI_File fh;
    MPI_Status st;
    int rc =
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_SUCCESS, "MPI_File_open");
    if (collective) {
        rc = MPI_File_write_at_all(fh, (MPI_Offset)8 * MIB * rank, buf, 8 * MIB, MPI_BYTE, &st);
        CHECK(rc == MPI_SUCCESS, "MPI_File_write_at_all");
    } else {
        for (int k = 0; k < 600; k++) {
            MPI_Offset at = ((MPI_Offset)k * np + rank) * 65536;
            rc = MPI_File_write_at(fh, at, buf, 65536, MPI_BYTE, &st);
            CHECK(rc == MPI_SUCCESS, "MPI_File_write_at");
        }
    }
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "MPI_File_close");
}

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *dir = dir_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "";
    char *buf = aligned_alloc(4096, 8 * MIB);
    CHECK(buf != NULL, "aligned_alloc");
    memset(buf, 'A' + rank % 26, 8 * MIB);

    if (strcmp(mode, "small") == 0)
        posix_writes(rank_file(dir, "small", rank), buf, 100, 2000);
    else if (strcmp(mode, "rank0") == 0) {
        if (rank == 0)
            posix_writes(path_in(dir, "rank0.dat"), buf, MIB, 8);
    } else if (strcmp(mode, "indep") == 0)
        mpiio_writes(path_in(dir, "indep.dat"), buf, rank, np, 0);
    else if (strcmp(mode, "imbalance") == 0)
        posix_writes(rank_file(dir, "imb", rank), buf, MIB, 1 + 7 * rank);
    else if (strcmp(mode, "meta") == 0)
        metadata_loop(rank_file(dir, "meta", rank), buf);
    else if (strcmp(mode, "good") == 0)
        mpiio_writes(path_in(dir, "good.dat"), buf, rank, np, 1);
    else
        CHECK(0, "MODE: small, rank0, indep, imbalance, meta or good");

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("done %s\n", mode);
    free(buf);
    MPI_Finalize();
    return 0;
}
