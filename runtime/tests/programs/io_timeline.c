/* MPI I/O whose problem shows in time or in offsets, only in a DXT trace (analysis/tests/
 * test_diagnose_beyond.py reads the logs Darshan 3.5.0 wrote of it with DXT on):
 *   io_timeline DIR MODE
 *   straggler every rank: DIR/straggler<r>.dat, 64 writes of 64 KiB; the last rank sleeps 2 s
 *             before its writes (the others do not wait for it until the final barrier)
 *   bursts    every rank: DIR/bursts<r>.dat, 4 phases of 8 writes of 1 MiB, each phase followed
 *             by a barrier and, but for the last, a sleep of 1.5 s (compute)
 *   random    every rank: DIR/random<r>.dat, 2048 writes of 4 KiB, each 4 KiB block of the
 *             8 MiB file once, in an order shuffled by a fixed seed (Fisher-Yates, an LCG)
 *   trickle   every rank: DIR/trickle<r>.dat, 600 writes of 100 bytes, one every 5 ms (3 s)
 *   steady    every rank: DIR/steady<r>.dat, 8 writes of 1 MiB, one after the other
 * Rank 0 prints "done MODE" at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define KIB 1024
#define MIB (1 << 20)
#define BLOCKS 2048

static char *rank_file(const char *dir, const char *stem, int rank) {
    char name[64];
    snprintf(name, sizeof name, "%s%d.dat", stem, rank);
    return path_in(dir, name);
}

static void pause_for(double seconds) {
    struct timespec t = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    while (nanosleep(&t, &t) != 0)
        CHECK(errno == EINTR, "nanosleep");
}

static int open_new(const char *path) {
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    return fd;
}

/* count writes of size bytes at the file's current offset, pause seconds after each */
static void writes(int fd, const char *buf, size_t size, int count, double pause) {
    for (int k = 0; k < count; k++) {
        EXPECT_RET(write(fd, buf, size), size);
        if (pause > 0)
            pause_for(pause);
    }
}

static void shuffled_writes(int fd, const char *buf) {
    static int order[BLOCKS];
    uint32_t state = 12345;
    for (int k = 0; k < BLOCKS; k++)
        order[k] = k;
    for (int k = BLOCKS - 1; k > 0; k--) {
        state = state * 1103515245u + 12345u;
        int j = (int)((state >> 8) % (uint32_t)(k + 1));
        int t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < BLOCKS; k++)
        EXPECT_RET(pwrite(fd, buf, 4 * KIB, (off_t)order[k] * 4 * KIB), 4 * KIB);
}

int main(int argc, char **argv) {
    int rank, np;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *dir = dir_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "";
    char *buf = aligned_alloc(4096, MIB);
    CHECK(buf != NULL, "aligned_alloc");
    memset(buf, 'A' + rank % 26, MIB);
    int fd = open_new(rank_file(dir, mode, rank));

    if (strcmp(mode, "straggler") == 0) {
        if (rank == np - 1)
            pause_for(2.0);
        writes(fd, buf, 64 * KIB, 64, 0);
    } else if (strcmp(mode, "bursts") == 0) {
        for (int phase = 0; phase < 4; phase++) {
            writes(fd, buf, MIB, 8, 0);
            MPI_Barrier(MPI_COMM_WORLD);
            if (phase < 3)
                pause_for(1.5);
        }
    } else if (strcmp(mode, "random") == 0)
        shuffled_writes(fd, buf);
    else if (strcmp(mode, "trickle") == 0)
        writes(fd, buf, 100, 600, 0.005);
    else if (strcmp(mode, "steady") == 0)
        writes(fd, buf, MIB, 8, 0);
    else
        CHECK(0, "MODE: straggler, bursts, random, trickle or steady");
    EXPECT_RET(close(fd), 0);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("done %s\n", mode);
    free(buf);
    MPI_Finalize();
    return 0;
}
