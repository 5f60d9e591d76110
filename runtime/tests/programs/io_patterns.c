/* MPI I/O patterns with a known diagnosis (analysis/tests/test_diagnose_programs.py):
 *   io_patterns DIR MODE
 * r is the rank, np the number of ranks (2 unless the mode says); KiB and MiB are 1,024 and
 * 1,048,576 bytes. "Shared": opened with POSIX open by every rank, which the runtime reduces to
 * one record of rank -1. Writes go from an aligned buffer unless the mode says otherwise.
 *   small       every rank: DIR/small<r>.dat, 2000 writes of 100 bytes
 *   rank0       rank 0 only: DIR/rank0.dat, 8 writes of 1 MiB (the others do no I/O)
 *   indep       every rank: DIR/indep.dat opened with MPI-IO, 600 independent MPI_File_write_at
 *               of 64 KiB at rank-interleaved offsets ((k np + r) 64 KiB, k = 0..599), then 600
 *               independent MPI_File_read_at of the same blocks in the same order
 *   imbalance   rank r: DIR/imb<r>.dat, (1 + 7r) writes of 1 MiB (rank 0: 1 MiB, rank 1: 8 MiB)
 *   meta        rank r: DIR/meta<r>.dat, one write of 1 KiB, then 50000 times open, fstat, close
 *   good        every rank: DIR/good.dat opened with MPI-IO, one MPI_File_write_at_all of 8 MiB
 *               at 8 MiB x r (large, aligned, collective, one shared file)
 *   memalign    every rank: DIR/memalign<r>.dat, 8 writes of 1 MiB at offsets 0, 1, ..., 7 MiB;
 *               the 2nd, 4th, 6th and 8th from an odd address (the buffer + 1)
 *   backward    every rank: DIR/backward<r>.dat, 1024 pwrite of 4 KiB at blocks 1023, 1022, ...,
 *               0 (block b at b x 4 KiB), then 1024 pread of 4 KiB in the same order: each access
 *               after the first at a lower offset than the one before
 *   sharedsmall shared DIR/sharedsmall.dat: every rank 600 pwrite of 4 KiB at blocks k np + r
 *               (k = 0..599), then 600 pread of 4 KiB of the same blocks in the same order
 *   sizeimb     shared DIR/sizeimb.dat: rank 0 8 pwrite of 1 MiB at 0..7 MiB, every other rank
 *               one pwrite of 1 MiB at (7 + r) MiB
 *   straggler   shared DIR/straggler.dat: every rank one pwrite of 1 MiB at r MiB; then the last
 *               rank 500,000 lseek(fd, 0, SEEK_CUR), POSIX metadata time the others do not have
 *   partial     3 ranks: DIR/partial.dat opened by ranks 0 and 1 only (so a record per rank):
 *               rank 0 8 pwrite of 1 MiB at 0..7 MiB, rank 1 one of 1 MiB at 8 MiB; then each
 *               reads back what it wrote in the same calls (pread); rank 2 does no I/O
 *   rewrite     every rank: DIR/rewrite<r>.dat, 4 pwrite of the same 1 MiB at offset 0
 * The files of the pwrite/pread modes are opened O_CREAT | O_RDWR without O_TRUNC (DIR starts
 * empty; ranks sharing a file must not truncate each other's data). At the end every rank meets
 * the others at a barrier; rank 0 then prints "done MODE".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define KIB 1024
#define MIB (1 << 20)
#define STRAGGLER_SEEKS 500000

struct job {
    const char *dir;
    char *buf; /* 8 MiB, 4 KiB aligned */
    int rank, np;
};

static char *rank_file(const char *dir, const char *stem, int rank) {
    char name[64];
    snprintf(name, sizeof name, "%s%d.dat", stem, rank);
    return path_in(dir, name);
}

static int open_rw(const char *path) {
    int fd = open(path, O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "open");
    return fd;
}

static void posix_writes(const char *path, const char *buf, size_t size, int count) {
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    for (int k = 0; k < count; k++)
        EXPECT_RET(write(fd, buf, size), size);
    EXPECT_RET(close(fd), 0);
}

/* count pwrite (then, with readback, as many pread) of size bytes at offsets first,
 * first + step, ... (step may be negative) */
static void blocks(int fd, char *buf, size_t size, int count, off_t first, off_t step,
                   int readback) {
    for (int k = 0; k < count; k++)
        EXPECT_RET(pwrite(fd, buf, size, first + k * step), size);
    for (int k = 0; k < count && readback; k++)
        EXPECT_RET(pread(fd, buf, size, first + k * step), size);
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

static void mpiio_io(const char *path, char *buf, int rank, int np, int collective) {
    MPI_File fh;
    MPI_Status st;
    int amode = MPI_MODE_CREATE | (collective ? MPI_MODE_WRONLY : MPI_MODE_RDWR);
    int rc = MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &fh);
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
        for (int k = 0; k < 600; k++) {
            MPI_Offset at = ((MPI_Offset)k * np + rank) * 65536;
            rc = MPI_File_read_at(fh, at, buf, 65536, MPI_BYTE, &st);
            CHECK(rc == MPI_SUCCESS, "MPI_File_read_at");
        }
    }
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "MPI_File_close");
}

static void memalign_writes(const struct job *j) {
    int fd = open_rw(rank_file(j->dir, "memalign", j->rank));
    for (int k = 0; k < 8; k++)
        EXPECT_RET(pwrite(fd, j->buf + k % 2, MIB, (off_t)k * MIB), MIB);
    EXPECT_RET(close(fd), 0);
}

static void backward(const struct job *j) {
    int fd = open_rw(rank_file(j->dir, "backward", j->rank));
    blocks(fd, j->buf, 4 * KIB, 1024, (off_t)1023 * 4 * KIB, -4 * KIB, 1);
    EXPECT_RET(close(fd), 0);
}

static void shared_small(const struct job *j) {
    int fd = open_rw(path_in(j->dir, "sharedsmall.dat"));
    blocks(fd, j->buf, 4 * KIB, 600, (off_t)j->rank * 4 * KIB, (off_t)j->np * 4 * KIB, 1);
    EXPECT_RET(close(fd), 0);
}

static void size_imbalance(const struct job *j) {
    int fd = open_rw(path_in(j->dir, "sizeimb.dat"));
    if (j->rank == 0)
        blocks(fd, j->buf, MIB, 8, 0, MIB, 0);
    else
        blocks(fd, j->buf, MIB, 1, (off_t)(7 + j->rank) * MIB, 0, 0);
    EXPECT_RET(close(fd), 0);
}

static void straggler(const struct job *j) {
    int fd = open_rw(path_in(j->dir, "straggler.dat"));
    blocks(fd, j->buf, MIB, 1, (off_t)j->rank * MIB, 0, 0);
    for (int k = 0; j->rank == j->np - 1 && k < STRAGGLER_SEEKS; k++)
        EXPECT_RET(lseek(fd, 0, SEEK_CUR), 0); /* pwrite leaves the offset at 0 */
    EXPECT_RET(close(fd), 0);
}

static void partial(const struct job *j) {
    CHECK(j->np == 3, "partial runs on 3 ranks");
    if (j->rank > 1)
        return;
    int fd = open_rw(path_in(j->dir, "partial.dat"));
    if (j->rank == 0)
        blocks(fd, j->buf, MIB, 8, 0, MIB, 1);
    else
        blocks(fd, j->buf, MIB, 1, (off_t)8 * MIB, 0, 1);
    EXPECT_RET(close(fd), 0);
}

static void rewrite(const struct job *j) {
    int fd = open_rw(rank_file(j->dir, "rewrite", j->rank));
    blocks(fd, j->buf, MIB, 4, 0, 0, 0);
    EXPECT_RET(close(fd), 0);
}

static void small(const struct job *j) {
    posix_writes(rank_file(j->dir, "small", j->rank), j->buf, 100, 2000);
}

static void rank0(const struct job *j) {
    if (j->rank == 0)
        posix_writes(path_in(j->dir, "rank0.dat"), j->buf, MIB, 8);
}

static void indep(const struct job *j) {
    mpiio_io(path_in(j->dir, "indep.dat"), j->buf, j->rank, j->np, 0);
}

static void imbalance(const struct job *j) {
    posix_writes(rank_file(j->dir, "imb", j->rank), j->buf, MIB, 1 + 7 * j->rank);
}

static void meta(const struct job *j) { metadata_loop(rank_file(j->dir, "meta", j->rank), j->buf); }

static void good(const struct job *j) {
    mpiio_io(path_in(j->dir, "good.dat"), j->buf, j->rank, j->np, 1);
}

static const struct {
    const char *name;
    void (*run)(const struct job *);
} MODES[] = {
    {"small", small},
    {"rank0", rank0},
    {"indep", indep},
    {"imbalance", imbalance},
    {"meta", meta},
    {"good", good},
    {"memalign", memalign_writes},
    {"backward", backward},
    {"sharedsmall", shared_small},
    {"sizeimb", size_imbalance},
    {"straggler", straggler},
    {"partial", partial},
    {"rewrite", rewrite},
};

int main(int argc, char **argv) {
    struct job j;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &j.np);
    j.dir = dir_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "";
    j.buf = aligned_alloc(4096, 8 * MIB);
    CHECK(j.buf != NULL, "aligned_alloc");
    memset(j.buf, 'A' + j.rank % 26, 8 * MIB);

    size_t m = 0, n = sizeof MODES / sizeof MODES[0];
    while (m < n && strcmp(mode, MODES[m].name) != 0)
        m++;
    CHECK(m < n, "MODE: one of the modes in io_patterns.c's header");
    MODES[m].run(&j);

    MPI_Barrier(MPI_COMM_WORLD);
    if (j.rank == 0)
        printf("done %s\n", mode);
    free(j.buf);
    MPI_Finalize();
    return 0;
}
