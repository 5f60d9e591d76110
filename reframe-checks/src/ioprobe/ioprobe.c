/* ioprobe: the interference probe of seed 004 (adaptive I/O, section II): concurrent writers,
 * one file each, placed on a fixed storage target, and how unevenly they finish.
 *
 * Every MPI rank is one writer: after a barrier, writer r opens DIR/writer.<r>
 * (O_CREAT|O_WRONLY|O_TRUNC), writes SIZE bytes with POSIX pwrite in pieces of TRANSFER bytes,
 * fsyncs and closes it, timing the open, the writes with the fsync, and the close apart (the seed
 * omits open and close times). Writer r is on target r mod K: on Lustre its file is created on
 * OST r mod K with one stripe ("each process writes data to a separate file and to some fixed OST
 * using POSIX-IO. Writers are split evenly across the OSTs"); on GlusterFS, given the targets'
 * bricks (--brick), its file is the first of DIR/writer.<r>, DIR/writer.<r>.1, ... that lies on
 * brick r mod K (a distributed volume places a file by its name: gluster.h); elsewhere the
 * target only labels the writer. Rank 0 prints one JSON line with every writer's times and the
 * imbalance factor, slowest over fastest write time. The CLI and the output are documented in
 * reframe-checks/README.md.
 *
 * Exit status: 0 success, 1 a failing I/O call (every rank finishes), 2 bad parameters.
 */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_args.h"
#include "bench_mpi.h"
#include "gluster.h"
#include "lustre.h"

enum { EXIT_IO = 1, EXIT_USAGE = 2 };

/* Room after DIR for "/writer.<r>.<i>" with a 10-digit rank and a placement suffix. */
#define NAME_ROOM 40
/* --brick: at most this many targets by brick. */
#define MAX_BRICKS 64
#define DEFAULT_TRANSFER ((uint64_t)1 << 20)
/* Lustre numbers OSTs with 16 bits. */
#define MAX_TARGETS 65536L
#define MIB 1048576.0

typedef struct {
    const char *dir;
    uint64_t size, transfer; /* transfer 0: the default, at most size */
    long targets;
    const char *bricks[MAX_BRICKS]; /* --brick: target k's GlusterFS brick */
    int nbricks;
    bool keep, help;
} options_t;

/* One writer's phases, in seconds (MPI_Wtime differences). */
enum { T_OPEN, T_WRITE, T_CLOSE, NTIMES };

typedef struct {
    options_t opt;
    int rank, nranks;
    char path[PATH_LEN]; /* DIR/writer.<r>, or DIR/writer.<r>.<suffix> placed on a brick */
    int suffix;          /* that placement suffix; 0: none */
    int *suffixes;       /* rank 0: every writer's suffix */
    char *buf;           /* one transfer of this writer's pattern */
    double times[NTIMES];
    double *all; /* rank 0: NTIMES per writer, in rank order */
} bench_t;

#define USAGE_TEXT                                                                                 \
    "usage: ioprobe --dir DIR --size SIZE [--transfer T] [--targets K | --brick B ...] [--keep]\n"
static const char USAGE_LINE[] = USAGE_TEXT;

static const char USAGE[] = USAGE_TEXT
    "Interference probe (seed 004): every MPI rank is a writer; after a barrier, writer r writes\n"
    "SIZE bytes to its own file DIR/writer.<r> with POSIX pwrite, then fsync and close.\n"
    "\n"
    "  -d, --dir DIR       where the files go (required; created by rank 0 like mkdir -p)\n"
    "  -s, --size SIZE     bytes per writer, > 0; suffix K, M or G: KiB, MiB, GiB\n"
    "  -t, --transfer T    bytes per pwrite, at most SIZE (default 1M, or SIZE if smaller); the\n"
    "                      last piece is shorter when T does not divide SIZE\n"
    "  -T, --targets K     storage targets (default 1): writer r is on target r mod K; on Lustre\n"
    "                      its file gets one stripe on OST r mod K (llapi_file_create)\n"
    "  -b, --brick B       GlusterFS: target k's brick as trusted.glusterfs.pathinfo names it\n"
    "                      (repeat: one per target, in order; their number is K): writer r's\n"
    "                      file is the first of DIR/writer.<r>, DIR/writer.<r>.1, ... on brick\n"
    "                      r mod K (created before the timing)\n"
    "  -k, --keep          leave the files (byte 1 + r mod 255 throughout); otherwise each\n"
    "                      writer removes its file after the timed phases\n"
    "  -h, --help          this text\n"
    "\n"
    "Rank 0 prints one JSON line on stdout:\n"
    "  benchmark          \"ioprobe\"\n"
    "  writers            MPI processes W\n"
    "  targets            K\n"
    "  bytes_per_writer   SIZE\n"
    "  transfer           T\n"
    "  files              per writer: its file's name in DIR\n"
    "  write_s            per writer in rank order: the pwrites and the fsync (MPI_Wtime)\n"
    "  open_s, close_s    per writer: the open and the close, not in write_s\n"
    "  slowest_write_s    max of write_s\n"
    "  fastest_write_s    min of write_s\n"
    "  imbalance          slowest_write_s / fastest_write_s\n"
    "  aggregate_mib_s    W * SIZE / 2^20 / slowest_write_s\n"
    "  mean_writer_mib_s  mean over writers of SIZE / 2^20 / write_s\n"
    "Exit status: 0; 1 an I/O call failed (ioprobe: rank R: CALL PATH: reason); 2 bad\n"
    "parameters.\n";

static const struct option LONG_OPTIONS[] = {
    {"dir", required_argument, NULL, 'd'},      {"size", required_argument, NULL, 's'},
    {"transfer", required_argument, NULL, 't'}, {"targets", required_argument, NULL, 'T'},
    {"brick", required_argument, NULL, 'b'},    {"keep", no_argument, NULL, 'k'},
    {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
};

/* One option; the value-taking ones are checked at once so that errors name the option. */
static int apply_option(void *opts, int c, const char *arg, char *err) {
    options_t *o = opts;
    switch (c) {
    case 'd':
        o->dir = arg;
        return 0;
    case 's':
        return parse_size("--size", arg, &o->size, err);
    case 't':
        return parse_size("--transfer", arg, &o->transfer, err);
    case 'T':
        return parse_count("--targets", arg, MAX_TARGETS, &o->targets, err);
    case 'b':
        if (o->nbricks == MAX_BRICKS)
            return fail(err, "more than %d --brick", MAX_BRICKS);
        o->bricks[o->nbricks++] = arg;
        return 0;
    case 'k':
        o->keep = true;
        return 0;
    default:
        o->help = true;
        return 0;
    }
}

/* Everything a rank can check alone; all ranks see the same argv and reach the same verdict. */
static int setup_local(bench_t *b, int argc, char **argv, char *err) {
    options_t *o = &b->opt;
    o->targets = 1;
    if (parse_args(argc, argv, ":d:s:t:T:b:kh", LONG_OPTIONS, apply_option, o, err) != 0)
        return -1;
    if (o->help)
        return 0;
    if (o->dir == NULL || o->dir[0] == '\0')
        return fail(err, "--dir is required");
    if (o->nbricks > 0 && o->targets != 1 && o->targets != o->nbricks)
        return fail(err, "--targets %ld differs from the %d --brick", o->targets, o->nbricks);
    if (o->nbricks > 0)
        o->targets = o->nbricks;
    if (o->size == 0)
        return fail(err, "--size is required");
    if (o->transfer > o->size)
        return fail(err, "--transfer %" PRIu64 " is larger than --size %" PRIu64, o->transfer,
                    o->size);
    if (o->transfer == 0)
        o->transfer = o->size < DEFAULT_TRANSFER ? o->size : DEFAULT_TRANSFER;
    if (o->transfer > SIZE_MAX / 2)
        return fail(err, "--transfer %" PRIu64 " is too large for this machine", o->transfer);
    return 0;
}

/* 0, or EXIT_USAGE after rank 0 printed the error. DIR is checked (and created) on rank 0 only,
 * the file system being shared, and the verdict is broadcast. */
static int setup(bench_t *b, int argc, char **argv) {
    char err[ERR_LEN] = "";
    int bad = setup_local(b, argc, argv, err) != 0;
    if (!bad && !b->opt.help)
        bad = check_dir_on_rank0(b->rank, b->opt.dir, NAME_ROOM, err) != 0;
    if (bad && b->rank == 0)
        fprintf(stderr, "ioprobe: error: %s\n%s(see ioprobe --help)\n", err, USAGE_LINE);
    return bad ? EXIT_USAGE : 0;
}

/* Reports a failed call with errno e; returns EXIT_IO for the caller to return. */
static int io_error(const bench_t *b, const char *call, int e) {
    fprintf(stderr, "ioprobe: rank %d: %s %s: %s\n", b->rank, call, b->path, strerror(e));
    return EXIT_IO;
}

static int target_of(const bench_t *b) { return (int)(b->rank % b->opt.targets); }

/* Untimed: writer r's file on brick r mod K (gluster.h), b->path and b->suffix set to it. */
static int place_on_brick(bench_t *b) {
    char stem[PATH_LEN];
    const char *call = NULL;
    snprintf(stem, sizeof stem, "%s/writer.%d", b->opt.dir, b->rank);
    int e = gluster_place(stem, b->opt.bricks[target_of(b)], b->path, sizeof b->path, &b->suffix,
                          &call);
    return e == 0 ? 0 : io_error(b, call, e);
}

/* Untimed, before the barrier: on Lustre, the writer's file is made anew (a kept file of an
 * earlier run would keep its layout) with one stripe on OST r mod K, stripe size the default.
 * Rank 0 says whether DIR is on Lustre; a job in which liblustreapi loads on some ranks only
 * says so too. Given bricks (GlusterFS), the file's name is searched for instead
 * (place_on_brick). Elsewhere nothing happens: the open creates the file. */
static int place_file(bench_t *b) {
    if (b->opt.nbricks > 0)
        return place_on_brick(b);
    char what[96];
    snprintf(what, sizeof what, "one stripe per file, writer r on OST r mod %ld", b->opt.targets);
    llapi_file_create_fn create = lustre_api(b->rank == 0 ? "ioprobe" : NULL, b->opt.dir, what);
    int have = create != NULL, ranks_with = 0;
    MPI_Allreduce(&have, &ranks_with, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (b->rank == 0 && ranks_with > 0 && ranks_with < b->nranks)
        fprintf(stderr,
                "ioprobe: warning: liblustreapi loads on %d of %d ranks: the others' files "
                "get the default striping\n",
                ranks_with, b->nranks);
    if (create == NULL)
        return 0;
    if (unlink(b->path) != 0 && errno != ENOENT)
        return io_error(b, "unlink", errno);
    int rc = create(b->path, 0, target_of(b), 1, 0);
    return rc == 0 ? 0 : io_error(b, "llapi_file_create", -rc);
}

/* SIZE bytes from offset 0 in pwrites of TRANSFER bytes (the last one shorter when TRANSFER does
 * not divide SIZE), resuming after short writes; 0 or errno. */
static int write_all(const bench_t *b, int fd) {
    uint64_t off = 0;
    while (off < b->opt.size) {
        uint64_t left = b->opt.size - off;
        size_t want = (size_t)(left < b->opt.transfer ? left : b->opt.transfer);
        ssize_t got = pwrite(fd, b->buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? errno : EIO;
        off += (uint64_t)got;
    }
    return 0;
}

/* The timed part of one writer: open, pwrites + fsync, close, each on its own clock. A failing
 * call ends it (the file is still closed when it was opened). */
static int write_file(bench_t *b) {
    double t0 = MPI_Wtime();
    int fd = open(b->path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    double t1 = MPI_Wtime();
    if (fd < 0)
        return io_error(b, "open", errno);
    int e = write_all(b, fd);
    const char *call = "pwrite";
    if (e == 0 && fsync(fd) != 0) {
        e = errno;
        call = "fsync";
    }
    double t2 = MPI_Wtime();
    int closed = close(fd);
    double t3 = MPI_Wtime();
    if (e != 0)
        return io_error(b, call, e);
    if (closed != 0)
        return io_error(b, "close", errno);
    b->times[T_OPEN] = t1 - t0;
    b->times[T_WRITE] = t2 - t1;
    b->times[T_CLOSE] = t3 - t2;
    return 0;
}

static void print_list(const char *key, const double *all, int nranks, int which) {
    printf(",\"%s\":[", key);
    for (int r = 0; r < nranks; r++)
        printf("%s%.9g", r ? "," : "", all[r * NTIMES + which]);
    printf("]");
}

/* A ratio, or null when the divisor is not positive (a write faster than the clock's tick). */
static void print_ratio(const char *key, double num, double den) {
    if (den > 0)
        printf(",\"%s\":%.9g", key, num / den);
    else
        printf(",\"%s\":null", key);
}

/* ,"files":["writer.<r>[.<suffix>]", ...] in rank order. */
static void print_files(const bench_t *b) {
    printf(",\"files\":[");
    for (int r = 0; r < b->nranks; r++) {
        printf("%s\"writer.%d", r ? "," : "", r);
        if (b->suffixes[r] > 0)
            printf(".%d", b->suffixes[r]);
        printf("\"");
    }
    printf("]");
}

static void report(const bench_t *b) {
    double slowest = 0, fastest = 0, rate_sum = 0;
    bool all_positive = true;
    for (int r = 0; r < b->nranks; r++) {
        double w = b->all[r * NTIMES + T_WRITE];
        slowest = r == 0 || w > slowest ? w : slowest;
        fastest = r == 0 || w < fastest ? w : fastest;
        all_positive = all_positive && w > 0;
        rate_sum += w > 0 ? (double)b->opt.size / MIB / w : 0;
    }
    printf("{\"benchmark\":\"ioprobe\",\"writers\":%d,\"targets\":%ld,\"bytes_per_writer\":%" PRIu64
           ",\"transfer\":%" PRIu64,
           b->nranks, b->opt.targets, b->opt.size, b->opt.transfer);
    print_files(b);
    print_list("write_s", b->all, b->nranks, T_WRITE);
    print_list("open_s", b->all, b->nranks, T_OPEN);
    print_list("close_s", b->all, b->nranks, T_CLOSE);
    printf(",\"slowest_write_s\":%.9g,\"fastest_write_s\":%.9g", slowest, fastest);
    print_ratio("imbalance", slowest, fastest);
    print_ratio("aggregate_mib_s", (double)b->nranks * (double)b->opt.size / MIB, slowest);
    print_ratio("mean_writer_mib_s", all_positive ? rate_sum : 0, all_positive ? b->nranks : 0);
    printf("}\n");
    fflush(stdout);
}

static int run(bench_t *b) {
    snprintf(b->path, sizeof b->path, "%s/writer.%d", b->opt.dir, b->rank);
    b->buf = malloc((size_t)b->opt.transfer);
    if (b->rank == 0) {
        b->all = malloc(sizeof *b->all * NTIMES * (size_t)b->nranks);
        b->suffixes = malloc(sizeof *b->suffixes * (size_t)b->nranks);
    }
    bool lacking = b->rank == 0 && (b->all == NULL || b->suffixes == NULL);
    int status = b->buf == NULL || lacking ? EXIT_IO : 0;
    if (status != 0)
        fprintf(stderr, "ioprobe: rank %d: cannot allocate %" PRIu64 " bytes\n", b->rank,
                b->opt.transfer);
    else
        memset(b->buf, fill_byte(b->rank), (size_t)b->opt.transfer);
    status = agree(status);
    if (status == 0)
        status = agree(place_file(b));
    if (status == 0) {
        MPI_Barrier(MPI_COMM_WORLD); /* all writers start together */
        status = agree(write_file(b));
    }
    if (status == 0) {
        MPI_Gather(b->times, NTIMES, MPI_DOUBLE, b->all, NTIMES, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Gather(&b->suffix, 1, MPI_INT, b->suffixes, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (b->rank == 0)
            report(b);
    }
    /* After the timing, and after a failure too: no file is left without --keep. */
    if (!b->opt.keep && unlink(b->path) != 0 && errno != ENOENT && status == 0)
        status = io_error(b, "unlink", errno);
    return agree(status);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    bench_t b = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    int status = setup(&b, argc, argv);
    if (status == 0 && b.opt.help && b.rank == 0)
        fputs(USAGE, stdout);
    else if (status == 0 && !b.opt.help)
        status = run(&b);
    free(b.buf);
    free(b.all);
    free(b.suffixes);
    MPI_Finalize();
    return status;
}
