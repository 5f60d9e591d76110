/* adaptive: seed 004's adaptive I/O (section III-B, Algorithms 1-3) and the two methods it is
 * measured against, one shared file written collectively with MPI-IO and a file per process.
 *
 * The ranks are split into K groups of consecutive ranks, one per storage target; target k is the
 * folder DIR/target.<k> (on Lustre its files get one stripe on OST k, the shared file a stripe on
 * each of K OSTs; on GlusterFS, given the targets' bricks with --brick, each file's name gets
 * the first suffix of "", ".1", ".2", ... that puts it on its target's brick, the shared file on
 * the first brick: gluster.h). In --mode adaptive the
 * first rank of each group is its sub-coordinator (SC): it writes its own data first, then lets
 * its writers write one at a time, each at the next offset of the group's one file
 * DIR/target.<k>/adaptive.dat. Rank 0 is also the coordinator (C): as groups finish, it asks the
 * groups still writing for a waiting writer to write into a finished group's file instead (one
 * such adaptive write per file at a time, the groups asked in turn), so that writers leave slow
 * (busy) targets for fast (idle) ones. Every write is recorded as an index entry (writer, target,
 * offset, bytes) that goes with its WRITE COMPLETE message to the file's SC; each SC writes its
 * file's index (adaptive.idx) and rank 0 the global one (DIR/adaptive.gidx), from which every
 * byte can be found. --mode mpiio: every rank writes its data at rank * SIZE of one file,
 * DIR/target.0/shared.dat, with MPI_File_write_at_all; --mode posix-fpp: rank r writes its own
 * file DIR/target.<k>/fpp.<r> in its group's target. Every method ends with a flush (fsync,
 * MPI_File_sync) before the close, and its time is from a barrier to the last close.
 *
 * --slow-target K --slow-ms MS is a test seam: each write of a block into target K's folder is
 * followed by MS ms of sleep, a busy target made on purpose (the tests use it to see adaptive
 * I/O move work away from it). The CLI and the output are documented in reframe-checks/README.md.
 *
 * Exit status: 0 success, 1 a failing I/O call or a failed verification, 2 bad parameters.
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
#include <time.h>
#include <unistd.h>

#include "bench_args.h"
#include "bench_mpi.h"
#include "gluster.h"
#include "lustre.h"

enum { EXIT_IO = 1, EXIT_USAGE = 2 };
enum { MODE_ADAPTIVE, MODE_MPIIO, MODE_FPP, NMODES };
static const char *const MODE_NAMES[NMODES] = {"adaptive", "mpiio", "posix-fpp"};

/* Room after DIR for "/target.<k>/adaptive.idx" and "/fpp.<r>" with 10-digit numbers. */
#define NAME_ROOM 64
#define DEFAULT_BLOCK ((uint64_t)1 << 20)
#define MAX_TARGETS 65536L
#define MAX_SLOW_MS 60000L
#define MAX_TARGET_DIRS 1024
#define MIB 1048576.0

/* The messages of Algorithms 1-3, each six int64: kind and up to five fields. */
enum {
    MSG_START = 1,   /* SC -> writer: target, offset */
    MSG_DONE,        /* writer -> SC (and the target's SC): writer, target, offset, bytes */
    MSG_SC_DONE,     /* SC -> C: group, final offset of its file */
    MSG_ADAPT_DONE,  /* SC -> C: target, bytes of an adaptive write by one of its writers */
    MSG_ADAPT_START, /* C -> SC: target, offset for one of its waiting writers */
    MSG_BUSY,        /* SC -> C: target: no waiting writer for it */
    MSG_ALL_DONE,    /* C -> SC: adaptive writes its file received */
};
#define MSG_LEN 6
#define TAG 7

typedef struct {
    const char *dir, *mode_name;
    int mode;
    uint64_t size, block; /* block 0: the default, at most size */
    long targets, slow_target, slow_ms;
    bool no_adapt, verify, keep, help;
    const char *target_dirs[MAX_TARGET_DIRS]; /* --target-dir: target k's folder */
    int ntarget_dirs;
    const char *bricks[MAX_TARGET_DIRS]; /* --brick: target k's GlusterFS brick */
    int nbricks;
} options_t;

/* An index entry: where one writer's data is. */
typedef struct {
    int64_t writer, target, offset, bytes;
} entry_t;

typedef struct {
    options_t opt;
    int rank, nranks, group;
    char *buf;          /* one block */
    double t0, done_at; /* the barrier; this rank's last close, seconds after it */
    entry_t mine;       /* where this rank's data went */
    entry_t *index;     /* SC: its file's entries; rank 0 then the global index */
    int nindex;
    long moves;  /* rank 0: adaptive writes */
    char *bsend; /* the buffer MPI_Bsend uses */
    int *suffix; /* per rank: the placement suffix of the file it owns (owned_file); 0: none */
} bench_t;

#define USAGE_TEXT                                                                                 \
    "usage: adaptive --dir DIR --size SIZE [--mode M] [--targets K | --target-dir D ...]\n"        \
    "                [--block B] [--no-adapt] [--verify] [--keep] [--slow-target K --slow-ms "     \
    "MS]\n"                                                                                        \
    "                [--help]\n"
static const char USAGE_LINE[] = USAGE_TEXT;

static const char USAGE[] = USAGE_TEXT
    "Seed 004's adaptive I/O against MPI-IO and a file per process: every MPI rank writes SIZE\n"
    "bytes; the ranks form K groups of consecutive ranks, group k on target DIR/target.<k>.\n"
    "\n"
    "  -d, --dir DIR        where the files go (required; created by rank 0 like mkdir -p)\n"
    "  -m, --mode M         adaptive (default), mpiio (one shared file, collective writes) or\n"
    "                       posix-fpp (a file per process in its group's target)\n"
    "  -s, --size SIZE      bytes per rank, a multiple of 8; suffix K, M or G: KiB, MiB, GiB\n"
    "  -T, --targets K      storage targets and groups, 1 to the ranks (default 1); on Lustre\n"
    "                       group k's files get one stripe on OST k, the shared file K stripes\n"
    "  -t, --target-dir D   a target's folder instead of DIR/target.<k> (repeat: one per\n"
    "                       target, in order; the number of them is K); DIR keeps the index\n"
    "  -B, --brick B        GlusterFS: target k's brick as trusted.glusterfs.pathinfo names it\n"
    "                       (repeat: one per target, in order): each data file is named onto\n"
    "                       its target's brick (NAME, NAME.1, ...; the shared file: brick 0)\n"
    "  -b, --block B        bytes per write call, a multiple of 8, at most SIZE (default 1M)\n"
    "  -n, --no-adapt       adaptive's groups and files without moving writers: the baseline\n"
    "  -V, --verify         read every rank's data back (adaptive: through the global index)\n"
    "  -k, --keep           leave the files; otherwise they are removed at the end\n"
    "  -S, --slow-target K  test seam: sleep after every block written into target K ...\n"
    "  -M, --slow-ms MS     ... for MS milliseconds (a busy target made on purpose)\n"
    "  -h, --help           this text\n"
    "\n"
    "Rank 0 prints one JSON line on stdout: benchmark \"adaptive\", mode, adapt, writers,\n"
    "targets, bytes_per_writer, block, bytes (all ranks), seconds (barrier to the last close),\n"
    "mib_s (bytes / 2^20 / seconds), target_s (per target: when its last write closed), writers\n"
    "per target (where the data went), moves (adaptive writes), index_s (writing the indices),\n"
    "index_bytes (the global index file), verified (true, or null without --verify).\n"
    "Exit status: 0; 1 an I/O call or the verification failed (adaptive: rank R: ...); 2 bad\n"
    "parameters.\n";

static const struct option LONG_OPTIONS[] = {
    {"dir", required_argument, NULL, 'd'},
    {"mode", required_argument, NULL, 'm'},
    {"size", required_argument, NULL, 's'},
    {"targets", required_argument, NULL, 'T'},
    {"block", required_argument, NULL, 'b'},
    {"no-adapt", no_argument, NULL, 'n'},
    {"verify", no_argument, NULL, 'V'},
    {"keep", no_argument, NULL, 'k'},
    {"slow-target", required_argument, NULL, 'S'},
    {"slow-ms", required_argument, NULL, 'M'},
    {"target-dir", required_argument, NULL, 't'},
    {"brick", required_argument, NULL, 'B'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_mode(const char *arg, options_t *o, char *err) {
    for (int m = 0; m < NMODES; m++)
        if (strcmp(arg, MODE_NAMES[m]) == 0) {
            o->mode = m;
            return 0;
        }
    return fail(err, "--mode '%s' is not adaptive, mpiio or posix-fpp", arg);
}

static int apply_option(void *opts, int c, const char *arg, char *err) {
    options_t *o = opts;
    long target = 0;
    switch (c) {
    case 'd':
        o->dir = arg;
        return 0;
    case 'm':
        return parse_mode(arg, o, err);
    case 's':
        return parse_size("--size", arg, &o->size, err);
    case 'T':
        return parse_count("--targets", arg, MAX_TARGETS, &o->targets, err);
    case 'b':
        return parse_size("--block", arg, &o->block, err);
    case 'S': /* a target index, 0 included */
        if (parse_count("--slow-target", arg, MAX_TARGETS, &target, err) != 0 &&
            strcmp(arg, "0") != 0)
            return -1;
        o->slow_target = strcmp(arg, "0") == 0 ? 0 : target;
        return 0;
    case 'M':
        return parse_count("--slow-ms", arg, MAX_SLOW_MS, &o->slow_ms, err);
    case 't':
        if (o->ntarget_dirs == MAX_TARGET_DIRS)
            return fail(err, "more than %d --target-dir", MAX_TARGET_DIRS);
        if (arg[0] == '\0' || strlen(arg) > PATH_LEN - NAME_ROOM)
            return fail(err, "--target-dir '%s': empty or too long", arg);
        o->target_dirs[o->ntarget_dirs++] = arg;
        return 0;
    case 'B':
        if (o->nbricks == MAX_TARGET_DIRS)
            return fail(err, "more than %d --brick", MAX_TARGET_DIRS);
        o->bricks[o->nbricks++] = arg;
        return 0;
    case 'n':
        o->no_adapt = true;
        return 0;
    case 'V':
        o->verify = true;
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
    o->slow_target = -1;
    if (parse_args(argc, argv, ":d:m:s:T:t:B:b:S:M:nVkh", LONG_OPTIONS, apply_option, o, err) != 0)
        return -1;
    if (o->help)
        return 0;
    if (o->dir == NULL || o->dir[0] == '\0')
        return fail(err, "--dir is required");
    if (o->size == 0)
        return fail(err, "--size is required");
    if (o->ntarget_dirs > 0 && o->targets != 1 && o->targets != o->ntarget_dirs)
        return fail(err, "--targets %ld and %d --target-dir differ", o->targets, o->ntarget_dirs);
    o->targets = o->ntarget_dirs > 0 ? o->ntarget_dirs : o->targets;
    if (o->nbricks > 0 && o->nbricks != o->targets)
        return fail(err, "%d --brick for %ld targets", o->nbricks, o->targets);
    if (o->block == 0)
        o->block = o->size < DEFAULT_BLOCK ? o->size : DEFAULT_BLOCK;
    if (o->size % 8 != 0 || o->block % 8 != 0)
        return fail(err, "--size and --block must be multiples of 8 (the data's pattern words)");
    if (o->block > o->size)
        return fail(err, "--block %" PRIu64 " is larger than --size %" PRIu64, o->block, o->size);
    if (o->block > SIZE_MAX / 2)
        return fail(err, "--block %" PRIu64 " is too large for this machine", o->block);
    if (o->targets > b->nranks)
        return fail(err, "--targets %ld is more than the %d ranks (a group each)", o->targets,
                    b->nranks);
    if ((o->slow_target >= 0) != (o->slow_ms > 0))
        return fail(err, "--slow-target and --slow-ms go together");
    if (o->slow_target >= o->targets)
        return fail(err, "--slow-target %ld is not a target (0 to %ld)", o->slow_target,
                    o->targets - 1);
    return 0;
}

static int setup(bench_t *b, int argc, char **argv) {
    char err[ERR_LEN] = "";
    int bad = setup_local(b, argc, argv, err) != 0;
    if (!bad && !b->opt.help)
        bad = check_dir_on_rank0(b->rank, b->opt.dir, NAME_ROOM, err) != 0;
    if (bad && b->rank == 0)
        fprintf(stderr, "adaptive: error: %s\n%s(see adaptive --help)\n", err, USAGE_LINE);
    return bad ? EXIT_USAGE : 0;
}

static int io_error(const bench_t *b, const char *call, const char *path, int e) {
    fprintf(stderr, "adaptive: rank %d: %s %s: %s\n", b->rank, call, path, strerror(e));
    return EXIT_IO;
}

/* ---- groups: K groups of consecutive ranks, the first of each its SC ---------------------- */
static int group_of(const bench_t *b, int rank) {
    return (int)((int64_t)rank * b->opt.targets / b->nranks);
}
static int sc_of(const bench_t *b, int group) {
    return (int)(((int64_t)group * b->nranks + b->opt.targets - 1) / b->opt.targets);
}
static bool is_sc(const bench_t *b) { return sc_of(b, b->group) == b->rank; }

/* Target k's folder: its --target-dir, else DIR/target.<k>. */
static void target_folder(const bench_t *b, char *path, long target) {
    if (b->opt.ntarget_dirs > 0)
        snprintf(path, PATH_LEN, "%s", b->opt.target_dirs[target]);
    else
        snprintf(path, PATH_LEN, "%s/target.%ld", b->opt.dir, target);
}

static void target_path(const bench_t *b, char *path, int target, const char *name) {
    target_folder(b, path, target); /* the folder has room for a name (NAME_ROOM) */
    size_t n = strlen(path);
    snprintf(path + n, PATH_LEN - n, "/%s", name);
}

/* target's file NAME as its owner placed it: NAME, or NAME.<suffix> on a brick (place_files). */
static void owned_path(const bench_t *b, char *path, int target, const char *name, int owner) {
    char placed[64];
    if (b->suffix != NULL && b->suffix[owner] > 0)
        snprintf(placed, sizeof placed, "%s.%d", name, b->suffix[owner]);
    else
        snprintf(placed, sizeof placed, "%s", name);
    target_path(b, path, target, placed);
}

/* ---- the data: 8-byte words, word p of rank r's data ((r + 1) << 40 | p), never zero ------- */
static void fill_block(const bench_t *b, uint64_t *words, uint64_t from, size_t n) {
    for (size_t i = 0; i < n; i++)
        words[i] = ((uint64_t)(b->rank + 1) << 40) | (from / 8 + i);
}

static void slow_down(const bench_t *b, int target) {
    if (target != b->opt.slow_target)
        return;
    struct timespec ts = {b->opt.slow_ms / 1000, (b->opt.slow_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* This rank's SIZE bytes at offset of the open file fd in target's folder; 0 or errno. */
static int write_data(const bench_t *b, int fd, int target, uint64_t offset) {
    for (uint64_t done = 0; done < b->opt.size;) {
        size_t want =
            (size_t)(b->opt.size - done < b->opt.block ? b->opt.size - done : b->opt.block);
        fill_block(b, (uint64_t *)b->buf, done, want / 8);
        for (size_t put = 0; put < want;) {
            ssize_t got = pwrite(fd, b->buf + put, want - put, (off_t)(offset + done + put));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return got < 0 ? errno : EIO;
            put += (size_t)got;
        }
        slow_down(b, target);
        done += want;
    }
    return 0;
}

/* Opens path, writes this rank's data at offset, fsyncs and closes; records where it went. */
static int write_file(bench_t *b, const char *path, int target, uint64_t offset) {
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd < 0)
        return io_error(b, "open", path, errno);
    int e = write_data(b, fd, target, offset);
    const char *call = "pwrite";
    if (e == 0 && fsync(fd) != 0) {
        e = errno;
        call = "fsync";
    }
    if (close(fd) != 0 && e == 0) {
        e = errno;
        call = "close";
    }
    b->done_at = MPI_Wtime() - b->t0;
    b->mine = (entry_t){b->rank, target, (int64_t)offset, (int64_t)b->opt.size};
    return e ? io_error(b, call, path, e) : 0;
}

static void send(bench_t *b, int to, int64_t kind, int64_t a, int64_t c, int64_t d, int64_t e) {
    int64_t m[MSG_LEN] = {kind, a, c, d, e, 0};
    MPI_Bsend(m, MSG_LEN, MPI_INT64_T, to, TAG, MPI_COMM_WORLD);
}

/* ---- Algorithm 1: a writer ---------------------------------------------------------------- */
static int writer(bench_t *b) {
    int64_t m[MSG_LEN];
    MPI_Recv(m, MSG_LEN, MPI_INT64_T, sc_of(b, b->group), TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    char path[PATH_LEN];
    owned_path(b, path, (int)m[1], "adaptive.dat", sc_of(b, (int)m[1]));
    int status = write_file(b, path, (int)m[1], (uint64_t)m[2]);
    /* WRITE COMPLETE with the index entry, to the SC that started it and to the file's SC */
    send(b, sc_of(b, b->group), MSG_DONE, b->rank, m[1], m[2], (int64_t)b->opt.size);
    if (m[1] != b->group)
        send(b, sc_of(b, (int)m[1]), MSG_DONE, b->rank, m[1], m[2], (int64_t)b->opt.size);
    return status;
}

/* ---- Algorithm 3: the coordinator, on rank 0 beside its SC -------------------------------- */
enum { WRITING, BUSY, COMPLETE };
typedef struct {
    int *state;       /* per group */
    int64_t *offset;  /* per target: the next free offset of its file */
    int64_t *foreign; /* per target: adaptive writes into it */
    bool *asked;      /* per target: an adaptive write for it is outstanding */
    int next;         /* the group asked next (in turn, to spread the moves) */
    bool finished;
} coord_t;

/* Request an adaptive write into target t from the next group still writing, if any. */
static void request(bench_t *b, coord_t *c, int t) {
    c->asked[t] = false;
    if (b->opt.no_adapt)
        return;
    for (long i = 0; i < b->opt.targets; i++) {
        int g = (int)((c->next + i) % b->opt.targets);
        if (g != t && c->state[g] == WRITING) {
            send(b, sc_of(b, g), MSG_ADAPT_START, t, c->offset[t], 0, 0);
            c->asked[t] = true;
            c->next = (int)((g + 1) % b->opt.targets);
            return;
        }
    }
}

/* A message for C; when every group is complete and no request is out, OVERALL WRITE
 * COMPLETE to every SC, with the adaptive writes its file received. */
static void coordinate(bench_t *b, coord_t *c, const int64_t *m, int from) {
    int t = (int)m[1];
    if (m[0] == MSG_SC_DONE) {
        c->state[t] = COMPLETE;
        c->offset[t] = m[2];
        request(b, c, t);
    } else if (m[0] == MSG_ADAPT_DONE) {
        c->offset[t] += m[2];
        c->foreign[t]++;
        b->moves++;
        request(b, c, t);
    } else { /* MSG_BUSY */
        int g = group_of(b, from);
        c->state[g] = c->state[g] == WRITING ? BUSY : c->state[g];
        request(b, c, t);
    }
    for (long k = 0; k < b->opt.targets; k++)
        if (c->state[k] != COMPLETE || c->asked[k])
            return;
    for (long k = 0; k < b->opt.targets; k++)
        send(b, sc_of(b, (int)k), MSG_ALL_DONE, c->foreign[k], 0, 0, 0);
    c->finished = true;
}

/* ---- Algorithm 2: a sub-coordinator (and, on rank 0, the coordinator) -------------------- */
typedef struct {
    int next_waiting, end; /* the group's ranks not yet started: [next_waiting, end) */
    int64_t own_offset;    /* the next offset of the group's own stream */
    int completed, members;
    long foreign_expected, foreign_got;
} sc_t;

/* Starts the group's next waiting writer at target t, offset; false when none waits. */
static bool start_next(bench_t *b, sc_t *s, int64_t t, int64_t offset) {
    if (s->next_waiting >= s->end)
        return false;
    send(b, s->next_waiting++, MSG_START, t, offset, 0, 0);
    return true;
}

static void on_done(bench_t *b, sc_t *s, const int64_t *m) {
    bool mine = group_of(b, (int)m[1]) == b->group;
    if (m[2] == b->group) { /* an entry of my file's index */
        b->index[b->nindex++] = (entry_t){m[1], m[2], m[3], m[4]};
        s->foreign_got += mine ? 0 : 1;
    }
    if (!mine)
        return;
    s->completed++;
    if (m[2] != b->group)
        send(b, 0, MSG_ADAPT_DONE, m[2], m[4], 0, 0);
    else if (start_next(b, s, b->group, s->own_offset))
        s->own_offset += (int64_t)b->opt.size;
    if (s->completed == s->members)
        send(b, 0, MSG_SC_DONE, b->group, s->own_offset, 0, 0);
}

static int sub_coordinator(bench_t *b) {
    sc_t s = {.next_waiting = b->rank + 1,
              .end = sc_of(b, b->group + 1),
              .completed = 1,
              .foreign_expected = -1};
    s.members = s.end - b->rank;
    coord_t c = {0};
    long k = b->opt.targets;
    if (b->rank == 0) {
        c.state = calloc((size_t)k, sizeof *c.state);
        c.offset = calloc((size_t)k, sizeof *c.offset);
        c.foreign = calloc((size_t)k, sizeof *c.foreign);
        c.asked = calloc((size_t)k, sizeof *c.asked);
    }
    char path[PATH_LEN];
    owned_path(b, path, b->group, "adaptive.dat", b->rank);
    int status = write_file(b, path, b->group, 0); /* its own data first */
    b->index[b->nindex++] = b->mine;
    s.own_offset = (int64_t)b->opt.size;
    if (start_next(b, &s, b->group, s.own_offset))
        s.own_offset += (int64_t)b->opt.size;
    if (s.members == 1)
        send(b, 0, MSG_SC_DONE, b->group, s.own_offset, 0, 0);
    while (s.completed < s.members || s.foreign_got != s.foreign_expected) {
        int64_t m[MSG_LEN];
        MPI_Status st;
        MPI_Recv(m, MSG_LEN, MPI_INT64_T, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &st);
        if (m[0] == MSG_DONE)
            on_done(b, &s, m);
        else if (m[0] == MSG_ADAPT_START && !start_next(b, &s, m[1], m[2]))
            send(b, 0, MSG_BUSY, m[1], 0, 0, 0);
        else if (m[0] == MSG_ALL_DONE)
            s.foreign_expected = m[1];
        else if (m[0] != MSG_ADAPT_START)
            coordinate(b, &c, m, st.MPI_SOURCE);
    }
    free(c.state);
    free(c.offset);
    free(c.foreign);
    free(c.asked);
    return status;
}

/* ---- the indices ------------------------------------------------------------------------- */
static int by_offset(const void *x, const void *y) {
    const entry_t *a = x, *b = y;
    return a->target != b->target ? (a->target > b->target) - (a->target < b->target)
                                  : (a->offset > b->offset) - (a->offset < b->offset);
}

static int write_entries(const bench_t *b, const char *path, const entry_t *e, int n) {
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return io_error(b, "fopen", path, errno);
    size_t put = fwrite(e, sizeof *e, (size_t)n, f);
    int e1 = put == (size_t)n ? 0 : errno ? errno : EIO;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        e1 = e1 ? e1 : errno;
    if (fclose(f) != 0)
        e1 = e1 ? e1 : errno;
    return e1 ? io_error(b, "write", path, e1) : 0;
}

/* Each SC sorts and writes its file's index; rank 0 gathers them into the global index. */
static int write_indices(bench_t *b) {
    int status = 0, n = is_sc(b) ? b->nindex : 0;
    char path[PATH_LEN];
    if (n > 0) {
        qsort(b->index, (size_t)n, sizeof *b->index, by_offset);
        target_path(b, path, b->group, "adaptive.idx");
        status = write_entries(b, path, b->index, n);
    }
    int *counts = b->rank == 0 ? calloc((size_t)b->nranks, sizeof *counts) : NULL;
    int *displs = b->rank == 0 ? calloc((size_t)b->nranks, sizeof *displs) : NULL;
    int words = n * 4;
    MPI_Gather(&words, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    entry_t *all = NULL;
    if (b->rank == 0) {
        for (int r = 1; r < b->nranks; r++)
            displs[r] = displs[r - 1] + counts[r - 1];
        all = malloc(sizeof *all * (size_t)b->nranks);
    }
    MPI_Gatherv(b->index, words, MPI_INT64_T, all, counts, displs, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (b->rank == 0) {
        qsort(all, (size_t)b->nranks, sizeof *all, by_offset);
        snprintf(path, PATH_LEN, "%s/adaptive.gidx", b->opt.dir);
        status = status ? status : write_entries(b, path, all, b->nranks);
        free(b->index);
        b->index = all;
        b->nindex = b->nranks;
    }
    free(counts);
    free(displs);
    return status;
}

/* ---- the two baselines -------------------------------------------------------------------- */
static int write_fpp(bench_t *b) {
    char path[PATH_LEN], name[32];
    snprintf(name, sizeof name, "fpp.%d", b->rank);
    owned_path(b, path, b->group, name, b->rank);
    return write_file(b, path, b->group, 0);
}

/* Every rank's data at rank * SIZE of one file, block by block, each block a collective write
 * (every rank has the same number of blocks); MPI_File_sync before the close. */
static int write_shared(bench_t *b) {
    char path[PATH_LEN];
    owned_path(b, path, 0, "shared.dat", 0);
    MPI_File fh;
    int rc =
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS)
        return io_error(b, "MPI_File_open", path, EIO);
    uint64_t base = (uint64_t)b->rank * b->opt.size;
    for (uint64_t done = 0; done < b->opt.size && rc == MPI_SUCCESS; done += b->opt.block) {
        uint64_t n = b->opt.size - done < b->opt.block ? b->opt.size - done : b->opt.block;
        fill_block(b, (uint64_t *)b->buf, done, (size_t)(n / 8));
        rc = MPI_File_write_at_all(fh, (MPI_Offset)(base + done), b->buf, (int)n, MPI_BYTE,
                                   MPI_STATUS_IGNORE);
        slow_down(b, 0);
    }
    int synced = rc == MPI_SUCCESS ? MPI_File_sync(fh) : rc;
    int closed = MPI_File_close(&fh);
    b->done_at = MPI_Wtime() - b->t0;
    b->mine = (entry_t){b->rank, 0, (int64_t)base, (int64_t)b->opt.size};
    if (rc != MPI_SUCCESS || synced != MPI_SUCCESS || closed != MPI_SUCCESS)
        return io_error(b, rc != MPI_SUCCESS ? "MPI_File_write_at_all" : "MPI_File_sync/close",
                        path, EIO);
    return 0;
}

/* ---- verification ------------------------------------------------------------------------- */
/* Rank 0: the global index as read back from its file holds every writer once, and each
 * target's entries tile its file from 0 without a gap or an overlap; 0 or EXIT_IO. */
static int check_global_index(bench_t *b) {
    char path[PATH_LEN];
    snprintf(path, PATH_LEN, "%s/adaptive.gidx", b->opt.dir);
    FILE *f = fopen(path, "rb");
    entry_t *read_back = malloc(sizeof *read_back * ((size_t)b->nranks + 1));
    size_t n = f && read_back ? fread(read_back, sizeof *read_back, (size_t)b->nranks + 1, f) : 0;
    if (f)
        fclose(f);
    int bad = n != (size_t)b->nranks;
    int64_t *seen = calloc((size_t)b->nranks, sizeof *seen), end = 0;
    for (size_t i = 0; !bad && i < n; i++) {
        entry_t e = read_back[i];
        end = i == 0 || e.target != read_back[i - 1].target ? 0 : end;
        bad = e.writer < 0 || e.writer >= b->nranks || seen[e.writer]++ || e.offset != end ||
              e.bytes != (int64_t)b->opt.size;
        end += e.bytes;
    }
    if (!bad)
        memcpy(b->index, read_back, sizeof *read_back * n);
    free(read_back);
    free(seen);
    if (bad)
        fprintf(stderr, "adaptive: rank 0: %s: not one entry per writer tiling each file\n", path);
    return bad ? EXIT_IO : 0;
}

/* This rank's data read back from where its entry says it is; 0 or EXIT_IO. */
static int check_data(bench_t *b, const entry_t *e) {
    char path[PATH_LEN], name[32];
    const char *file = b->opt.mode == MODE_MPIIO ? "shared.dat"
                       : b->opt.mode == MODE_FPP ? name
                                                 : "adaptive.dat";
    snprintf(name, sizeof name, "fpp.%d", b->rank);
    int owner = b->opt.mode == MODE_MPIIO ? 0
                : b->opt.mode == MODE_FPP ? b->rank
                                          : sc_of(b, (int)e->target);
    owned_path(b, path, (int)e->target, file, owner);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return io_error(b, "open", path, errno);
    uint64_t *want = malloc((size_t)b->opt.block);
    int bad = want == NULL;
    for (uint64_t done = 0; !bad && done < b->opt.size; done += b->opt.block) {
        uint64_t n = b->opt.size - done < b->opt.block ? b->opt.size - done : b->opt.block;
        fill_block(b, want, done, (size_t)(n / 8));
        ssize_t got = pread(fd, b->buf, (size_t)n, (off_t)((uint64_t)e->offset + done));
        bad = got != (ssize_t)n || memcmp(b->buf, want, (size_t)n) != 0;
    }
    free(want);
    close(fd);
    if (bad)
        fprintf(stderr, "adaptive: rank %d: %s: its data is not at offset %" PRId64 "\n", b->rank,
                path, e->offset);
    return bad ? EXIT_IO : 0;
}

static int verify(bench_t *b) {
    if (b->opt.mode != MODE_ADAPTIVE)
        return agree(check_data(b, &b->mine));
    if (b->rank != 0)
        b->index = realloc(b->index, sizeof *b->index * (size_t)b->nranks);
    int status = agree(b->rank == 0 ? check_global_index(b) : 0);
    if (status != 0)
        return status;
    MPI_Bcast(b->index, b->nranks * 4, MPI_INT64_T, 0, MPI_COMM_WORLD);
    for (int i = 0; i < b->nranks; i++)
        if (b->index[i].writer == b->rank)
            status = check_data(b, &b->index[i]);
    return agree(status);
}

/* ---- the run ------------------------------------------------------------------------------ */
static int make_targets(bench_t *b) {
    int status = 0;
    if (b->rank == 0)
        for (long k = 0; k < b->opt.targets && status == 0; k++) {
            char path[PATH_LEN], failed[PATH_LEN];
            target_folder(b, path, k);
            int e = make_dirs(path, failed);
            status = e ? io_error(b, "mkdir", failed, e) : 0;
        }
    return agree(status);
}

/* The file this rank makes before the timed phase, and its Lustre layout: an SC its group's
 * file (adaptive) and every rank its own (posix-fpp) with one stripe on OST k of target k, rank 0
 * the shared file (mpiio) over K OSTs; false for the others. */
static bool owned_file(const bench_t *b, char *path, int *ost, int *stripes) {
    char name[32];
    *ost = b->group;
    *stripes = 1;
    if (b->opt.mode == MODE_ADAPTIVE && is_sc(b)) {
        target_path(b, path, b->group, "adaptive.dat");
    } else if (b->opt.mode == MODE_FPP) {
        snprintf(name, sizeof name, "fpp.%d", b->rank);
        target_path(b, path, b->group, name);
    } else if (b->opt.mode == MODE_MPIIO && b->rank == 0) {
        target_path(b, path, 0, "shared.dat");
        *ost = -1; /* the file system's choice of the first */
        *stripes = (int)b->opt.targets;
    } else {
        return false;
    }
    return true;
}

/* Untimed: the owned file stem (owned_file) named onto target's brick (gluster.h); its suffix
 * in b->suffix[rank], which run() then shares with every rank. */
static int place_on_brick(bench_t *b, const char *stem, int target) {
    char placed[PATH_LEN];
    const char *call = NULL;
    int e = gluster_place(stem, b->opt.bricks[target], placed, sizeof placed, &b->suffix[b->rank],
                          &call);
    return e == 0 ? 0 : io_error(b, call, placed, e);
}

/* Untimed, before the barrier: a file of an earlier run (--keep) is removed, so that no stale
 * byte stays past the new data and, on Lustre, the file is made anew with its layout
 * (owned_file; llapi_file_create refuses an existing file). Rank 0 says whether the targets
 * are on Lustre. Elsewhere the opens create the files. */
static int place_files(bench_t *b) {
    char path[PATH_LEN], what[128];
    target_folder(b, path, 0);
    snprintf(what, sizeof what,
             "group k's files on OST k, one stripe each; the shared file over %ld OSTs",
             b->opt.targets);
    llapi_file_create_fn create = lustre_api(b->rank == 0 ? "adaptive" : NULL, path, what);
    int ost, stripes;
    if (!owned_file(b, path, &ost, &stripes))
        return 0;
    if (b->opt.nbricks > 0)
        return place_on_brick(b, path, ost < 0 ? 0 : ost);
    if (unlink(path) != 0 && errno != ENOENT)
        return io_error(b, "unlink", path, errno);
    int rc = create ? create(path, 0, ost, stripes, 0) : 0;
    return rc == 0 ? 0 : io_error(b, "llapi_file_create", path, -rc);
}

static void report(const bench_t *b, double seconds, double index_s, const double *target_s,
                   bool verified) {
    double bytes = (double)b->opt.size * b->nranks;
    printf("{\"benchmark\":\"adaptive\",\"mode\":\"%s\",\"adapt\":%s,\"writers\":%d,"
           "\"targets\":%ld,\"bytes_per_writer\":%" PRIu64 ",\"block\":%" PRIu64
           ",\"bytes\":%.0f,\"seconds\":%.9g,\"mib_s\":%.9g,\"target_s\":[",
           MODE_NAMES[b->opt.mode],
           b->opt.mode == MODE_ADAPTIVE && !b->opt.no_adapt ? "true" : "false", b->nranks,
           b->opt.targets, b->opt.size, b->opt.block, bytes, seconds,
           seconds > 0 ? bytes / MIB / seconds : 0.0);
    for (long k = 0; k < b->opt.targets; k++)
        printf("%s%.9g", k ? "," : "", target_s[k]);
    printf("],\"writers_per_target\":[");
    for (long k = 0; k < b->opt.targets; k++) {
        int n = 0;
        for (int i = 0; i < b->nindex; i++)
            n += b->index[i].target == k;
        printf("%s%d", k ? "," : "", n);
    }
    printf("],\"moves\":%ld,\"index_s\":%.9g,\"index_bytes\":%d,\"verified\":%s}\n", b->moves,
           index_s, b->opt.mode == MODE_ADAPTIVE ? b->nranks * (int)sizeof(entry_t) : 0,
           verified ? "true" : "null");
    fflush(stdout);
}

static int write_phase(bench_t *b) {
    if (b->opt.mode == MODE_MPIIO)
        return write_shared(b);
    if (b->opt.mode == MODE_FPP)
        return write_fpp(b);
    return is_sc(b) ? sub_coordinator(b) : writer(b);
}

/* The timed phases, the per-target times, the indices' time, and the report. */
static int measure(bench_t *b) {
    MPI_Barrier(MPI_COMM_WORLD);
    b->t0 = MPI_Wtime();
    int status = agree(write_phase(b));
    double seconds = 0, index_s = 0, *mine = calloc((size_t)b->opt.targets, sizeof *mine);
    double *target_s = calloc((size_t)b->opt.targets, sizeof *target_s);
    mine[b->mine.target] = b->done_at;
    MPI_Reduce(&b->done_at, &seconds, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, target_s, (int)b->opt.targets, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (status == 0 && b->opt.mode == MODE_ADAPTIVE) {
        double t = MPI_Wtime();
        status = agree(write_indices(b));
        index_s = MPI_Wtime() - t;
    } else if (b->rank == 0) { /* the baselines' data stays where the groups are */
        b->nindex = b->nranks;
        for (int r = 0; r < b->nranks; r++)
            b->index[r] = (entry_t){r, b->opt.mode == MODE_MPIIO ? 0 : group_of(b, r), 0, 0};
    }
    if (status == 0 && b->opt.verify)
        status = verify(b);
    if (status == 0 && b->rank == 0)
        report(b, seconds, index_s, target_s, b->opt.verify);
    free(mine);
    free(target_s);
    return status;
}

/* Without --keep, every file of the run goes, whatever happened. */
static void remove_files(const bench_t *b) {
    char path[PATH_LEN], name[32];
    snprintf(name, sizeof name, "fpp.%d", b->rank);
    owned_path(b, path, b->group, name, b->rank);
    unlink(path);
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's own file first, then rank 0 the rest */
    if (b->rank != 0)
        return;
    for (long k = 0; k < b->opt.targets; k++) {
        owned_path(b, path, (int)k, "adaptive.dat", sc_of(b, (int)k));
        unlink(path);
        owned_path(b, path, (int)k, "shared.dat", 0);
        unlink(path);
        target_path(b, path, (int)k, "adaptive.idx");
        unlink(path);
        target_folder(b, path, k);
        if (b->opt.ntarget_dirs == 0) /* a given folder is the caller's */
            rmdir(path);
    }
    snprintf(path, PATH_LEN, "%s/adaptive.gidx", b->opt.dir);
    unlink(path);
}

static int run(bench_t *b) {
    b->group = group_of(b, b->rank);
    b->buf = malloc((size_t)b->opt.block);
    b->index = calloc((size_t)b->nranks, sizeof *b->index);
    int bsize = (2 * b->nranks + 8 * (int)b->opt.targets + 64) * (MSG_LEN * 8 + MPI_BSEND_OVERHEAD);
    b->bsend = malloc((size_t)bsize);
    b->suffix = calloc((size_t)b->nranks, sizeof *b->suffix);
    int status = b->buf && b->index && b->bsend && b->suffix ? 0 : EXIT_IO;
    if (status != 0)
        fprintf(stderr, "adaptive: rank %d: cannot allocate %" PRIu64 " bytes\n", b->rank,
                b->opt.block);
    status = agree(status);
    if (status != 0)
        return status;
    MPI_Buffer_attach(b->bsend, bsize);
    status = make_targets(b);
    if (status == 0)
        status = agree(place_files(b));
    if (status == 0) /* every rank's placement suffix, for the files it opens of others */
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->suffix, 1, MPI_INT, MPI_COMM_WORLD);
    if (status == 0)
        status = measure(b);
    void *attached;
    int size;
    MPI_Buffer_detach(&attached, &size); /* waits for the last buffered message */
    if (!b->opt.keep)
        remove_files(b);
    return status;
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
    free(b.index);
    free(b.bsend);
    free(b.suffix);
    MPI_Finalize();
    return status;
}
