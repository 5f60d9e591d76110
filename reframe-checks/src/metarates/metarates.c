/* metarates: the metadata-rate benchmark of UCAR's metarates (2004), rewritten from its method
 * (the original's source is not public).
 *
 * Every process works in its own directory DIR/rank.<r> and runs the phases create (open with
 * O_CREAT|O_EXCL, close), stat, utime and remove (unlink) on N files of it, each phase between
 * MPI barriers; rank 0 prints one JSON line per phase with the aggregate rate. The CLI and the
 * output are documented in reframe-checks/README.md.
 *
 * Exit status: 0 success, 1 a failing system call (every rank stops), 2 bad parameters.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_args.h"
#include "bench_mpi.h"

enum { EXIT_SYSCALL = 1, EXIT_USAGE = 2 };

/* Room after DIR for "/rank.<r>/f.<i>" with 10-digit numbers. */
#define NAME_ROOM 64
/* Keeps procs * N (the ops field) far inside 64 bits for any MPI job size. */
#define MAX_FILES 1000000000L

/* The phases in the order they run, whatever the order of --phases. */
enum { PH_CREATE, PH_STAT, PH_UTIME, PH_REMOVE, NPHASES };
static const char *const PHASE_NAMES[NPHASES] = {"create", "stat", "utime", "remove"};

typedef struct {
    const char *dir;
    long files;
    const char *phases; /* NULL: the default list */
    bool keep, help;
} options_t;

typedef struct {
    options_t opt;
    int rank, nranks;
    bool run[NPHASES];
    char rdir[PATH_LEN]; /* DIR/rank.<r> */
    char path[PATH_LEN]; /* DIR/rank.<r>/f.<i>: the prefix is written once, the index per file */
    size_t prefix_len;   /* length of "DIR/rank.<r>/f." */
} bench_t;

static const char USAGE_LINE[] =
    "usage: metarates -d DIR [-n N] [-p create,stat,utime,remove] [-k] [-h]\n";

static const char USAGE[] =
    "usage: metarates -d DIR [-n N] [-p create,stat,utime,remove] [-k] [-h]\n"
    "Metadata rates in the manner of UCAR's metarates: each MPI process works on N files of\n"
    "its own directory DIR/rank.<r>, one phase after the other, with a barrier before each.\n"
    "\n"
    "  -d, --dir DIR             where the rank directories go (required; created by rank 0\n"
    "                            like mkdir -p)\n"
    "  -n, --files-per-proc N    files per process, > 0 (default 1000)\n"
    "  -p, --phases LIST         comma list of create, stat, utime, remove (default all four);\n"
    "                            they always run in that order. stat, utime and remove need the\n"
    "                            files of an earlier create (a run with --keep)\n"
    "  -k, --keep                leave the files: drops remove from the default phases\n"
    "  -h, --help                this text\n"
    "\n"
    "Phases: create = open(O_CREAT|O_EXCL|O_WRONLY, 0644) + close of DIR/rank.<r>/f.<i>;\n"
    "stat = stat(); utime = utimensat(now); remove = unlink, then rmdir of the rank directory.\n"
    "\n"
    "Rank 0 prints one JSON line per phase on stdout:\n"
    "  benchmark       \"metarates\"\n"
    "  phase           create, stat, utime or remove\n"
    "  procs           MPI processes (P)\n"
    "  files_per_proc  N\n"
    "  ops             P * N operations of the phase\n"
    "  seconds         latest end minus earliest start of a process's loop (MPI_Wtime),\n"
    "                  never less than max_proc_s\n"
    "  rate_ops_s      ops / seconds\n"
    "  min_proc_s      shortest loop time of one process\n"
    "  max_proc_s      longest loop time of one process\n"
    "Exit status: 0; 1 a system call failed (metarates: rank R: CALL PATH: reason); 2 bad\n"
    "parameters.\n";

/* Reports a failed system call; returns EXIT_SYSCALL for the caller to return. */
static int syscall_error(int rank, const char *call, const char *path) {
    fprintf(stderr, "metarates: rank %d: %s %s: %s\n", rank, call, path, strerror(errno));
    return EXIT_SYSCALL;
}

static const struct option LONG_OPTIONS[] = {
    {"dir", required_argument, NULL, 'd'},    {"files-per-proc", required_argument, NULL, 'n'},
    {"phases", required_argument, NULL, 'p'}, {"keep", no_argument, NULL, 'k'},
    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
};

/* One option; the value-taking ones are checked at once so that errors name the option. */
static int apply_option(void *opts, int c, const char *arg, char *err) {
    options_t *o = opts;
    switch (c) {
    case 'd':
        o->dir = arg;
        return 0;
    case 'n':
        return parse_count("--files-per-proc", arg, MAX_FILES, &o->files, err);
    case 'p':
        o->phases = arg;
        return 0;
    case 'k':
        o->keep = true;
        return 0;
    default:
        o->help = true;
        return 0;
    }
}

/* A comma-separated set of phase names; repeats are harmless, an empty list is not. */
static int select_phases(const char *list, bool run[NPHASES], char *err) {
    char *copy = strdup(list);
    if (copy == NULL)
        return fail(err, "out of memory");
    int status = 0, tokens = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && status == 0;
         tok = strtok_r(NULL, ",", &save), tokens++) {
        int k = 0;
        while (k < NPHASES && strcmp(tok, PHASE_NAMES[k]) != 0)
            k++;
        if (k < NPHASES)
            run[k] = true;
        else
            status = fail(
                err, "--phases: unknown phase '%s' (expected create, stat, utime or remove)", tok);
    }
    free(copy);
    if (status == 0 && tokens == 0)
        return fail(err, "--phases '%s' names no phase (expected create, stat, utime or remove)",
                    list);
    return status;
}

/* Everything a rank can check alone; all ranks see the same argv, so all reach the same
 * verdict and leave together without any communication. */
static int setup(bench_t *b, int argc, char **argv, char *err) {
    b->opt.files = 1000;
    if (parse_args(argc, argv, ":d:n:p:kh", LONG_OPTIONS, apply_option, &b->opt, err) != 0)
        return -1;
    if (b->opt.help)
        return 0;
    if (b->opt.dir == NULL || b->opt.dir[0] == '\0')
        return fail(err, "--dir is required");
    if (strlen(b->opt.dir) > PATH_LEN - NAME_ROOM)
        return fail(err, "--dir is longer than %d characters", PATH_LEN - NAME_ROOM);
    if (b->opt.phases != NULL)
        return select_phases(b->opt.phases, b->run, err);
    /* The default: all four, and with --keep all but remove. An explicit --phases remove wins
     * over --keep (the user asked for it by name). */
    for (int k = 0; k < NPHASES; k++)
        b->run[k] = !(k == PH_REMOVE && b->opt.keep);
    return 0;
}

/* mkdir -p on rank 0; a failure names the component that could not be made. */
static int make_top_dir(const bench_t *b) {
    char failed[PATH_LEN];
    errno = make_dirs(b->opt.dir, failed);
    return errno ? syscall_error(b->rank, "mkdir", failed) : 0;
}

/* Only the index changes from file to file, so the timed loops do not format the prefix. */
static const char *file_path(bench_t *b, long i) {
    snprintf(b->path + b->prefix_len, sizeof b->path - b->prefix_len, "%ld", i);
    return b->path;
}

/* The untimed set-up of a run that creates: DIR by rank 0 (the file system is shared, and
 * concurrent mkdir -p of the same path from every rank would only add noise), then each rank's
 * own directory once DIR exists. An existing rank directory is fine: create's O_EXCL still
 * refuses files left by an earlier --keep run. */
static int make_rank_dir(bench_t *b) {
    int status = agree(b->rank == 0 ? make_top_dir(b) : 0); /* also the barrier */
    if (status != 0)
        return status;
    if (mkdir(b->rdir, 0777) != 0 && errno != EEXIST)
        status = syscall_error(b->rank, "mkdir", b->rdir);
    return agree(status);
}

/* One phase's loop over this rank's files; it stops at the first failing call. */
static int phase_loop(bench_t *b, int phase) {
    struct stat st;
    for (long i = 0; i < b->opt.files; i++) {
        const char *path = file_path(b, i);
        switch (phase) {
        case PH_CREATE: {
            int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0)
                return syscall_error(b->rank, "open", path);
            if (close(fd) != 0)
                return syscall_error(b->rank, "close", path);
            break;
        }
        case PH_STAT:
            if (stat(path, &st) != 0)
                return syscall_error(b->rank, "stat", path);
            break;
        case PH_UTIME: /* times NULL: access and modification time = now, as utime(path, NULL) */
            if (utimensat(AT_FDCWD, path, NULL, 0) != 0)
                return syscall_error(b->rank, "utimensat", path);
            break;
        default:
            if (unlink(path) != 0)
                return syscall_error(b->rank, "unlink", path);
        }
    }
    /* The rank directory goes with its files: part of removing them, not counted as an op. */
    if (phase == PH_REMOVE && rmdir(b->rdir) != 0)
        return syscall_error(b->rank, "rmdir", b->rdir);
    return 0;
}

/* One timed phase: a barrier, then every rank's loop on its own clock. The phase time is the
 * latest end minus the earliest start: the interval in which the job did the operations, which
 * counts a straggler in full where the mean of the per-rank times would hide it. A phase in
 * which any rank failed prints nothing: its rate would count operations that did not happen. */
static int timed_phase(bench_t *b, int phase) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int status = phase_loop(b, phase);
    double t1 = MPI_Wtime();
    if (agree(status) != 0)
        return EXIT_SYSCALL;
    double own = t1 - t0;
    /* Negated start: one MPI_MAX reduction yields the latest end and the earliest start. */
    double mine_max[3] = {t1, -t0, own}, all_max[3];
    double all_min_own;
    MPI_Reduce(mine_max, all_max, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&own, &all_min_own, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    if (b->rank != 0)
        return 0;
    double max_own = all_max[2];
    double seconds = all_max[0] + all_max[1];
    /* Across nodes MPI_Wtime need not be one clock (MPI_WTIME_IS_GLOBAL): a skew could make the
     * interval shorter than one rank's own loop, which cannot be. */
    if (seconds < max_own)
        seconds = max_own;
    long long ops = (long long)b->nranks * b->opt.files;
    printf("{\"benchmark\":\"metarates\",\"phase\":\"%s\",\"procs\":%d,\"files_per_proc\":%ld,"
           "\"ops\":%lld,\"seconds\":%.9g,\"rate_ops_s\":%.9g,\"min_proc_s\":%.9g,"
           "\"max_proc_s\":%.9g}\n",
           PHASE_NAMES[phase], b->nranks, b->opt.files, ops, seconds, (double)ops / seconds,
           all_min_own, max_own);
    fflush(stdout); /* a line per phase as it ends: a failing later phase keeps the earlier ones */
    return 0;
}

static int run(bench_t *b) {
    snprintf(b->rdir, sizeof b->rdir, "%s/rank.%d", b->opt.dir, b->rank);
    b->prefix_len = (size_t)snprintf(b->path, sizeof b->path, "%s/f.", b->rdir);
    int status = b->run[PH_CREATE] ? make_rank_dir(b) : 0;
    /* Without create nothing is made: stat, utime or remove on a directory without the files
     * fails on the first missing path and names it. */
    for (int k = 0; k < NPHASES && status == 0; k++)
        if (b->run[k])
            status = timed_phase(b, k);
    return status;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    bench_t b = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    char err[ERR_LEN] = "";
    int status = setup(&b, argc, argv, err) != 0 ? EXIT_USAGE : 0;
    if (status != 0 && b.rank == 0)
        fprintf(stderr, "metarates: error: %s\n%s(see metarates --help)\n", err, USAGE_LINE);
    else if (status == 0 && b.opt.help && b.rank == 0)
        fputs(USAGE, stdout);
    else if (status == 0 && !b.opt.help)
        status = run(&b);
    MPI_Finalize();
    return status;
}
