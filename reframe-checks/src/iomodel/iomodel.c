/* iomodel: the I/O-model benchmark of seed 003 (Blue Waters I/O model classification).
 *
 * Given a total size S, a maximum process count M and P processes per node (N = M / P nodes),
 * it writes exactly S bytes once per I/O model (n, p, f, m): n nodes, p processes per node doing
 * I/O, f files per node, each file shared by m nodes (all powers of two). Writes are POSIX
 * pwrite calls synchronized by MPI barriers; rank 0 prints one JSON line per model. --sync says
 * what the time includes: none (the page cache may hold the data), fsync (each rank's fsync
 * before its close) or direct (O_DIRECT: no page cache). The definitions, the CLI and the
 * output are documented in reframe-checks/README.md.
 *
 * Exit status: 0 success, 1 an I/O error during a model, 2 bad parameters.
 */
#define _GNU_SOURCE /* O_DIRECT */
#define _FILE_OFFSET_BITS 64

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_args.h"
#include "bench_mpi.h"
#include "lustre.h"

enum { EXIT_IO = 1, EXIT_USAGE = 2 };

/* Above 2^30 ranks the power-of-two loops would overflow an int; no machine is near it. */
#define MAX_PROCS (1L << 30)
/* Large chunks go out in pieces of this size, so memory per rank stays bounded at any S. */
#define IO_PIECE ((uint64_t)16 << 20)
#define LUSTRE_MIN_STRIPE ((uint64_t)64 << 10)
/* Lustre keeps the stripe size in 32 bits: 2 GiB is the largest power of two that fits. */
#define LUSTRE_MAX_STRIPE ((uint64_t)2 << 30)
/* O_DIRECT: buffer, offsets and lengths multiples of the logical block; 4 KiB covers 512-byte
 * and 4 KiB devices and the page size. */
#define DIRECT_ALIGN ((uint64_t)4096)

/* What a phase's time includes beyond the system calls' return. */
typedef enum { SYNC_NONE, SYNC_FSYNC, SYNC_DIRECT } sync_t;
static const char *const SYNC_NAMES[] = {"none", "fsync", "direct"};

typedef struct {
    int n; /* nodes used */
    int p; /* processes per node doing I/O */
    int f; /* files per node */
    int m; /* nodes sharing each file */
} model_t;

typedef struct {
    uint64_t size;
    long max_procs, ppn;
    const char *dir;
    const char *models;
    sync_t sync;
    bool read_back, list, keep, help;
} options_t;

typedef struct {
    options_t opt;
    int rank, nranks;
    int nodes; /* N = M / P */
    model_t *models;
    int nmodels;
    bool *selected;
    char *buf;     /* this rank's pattern, written */
    char *readbuf; /* --read-back: the same size, read into */
    size_t buflen;
    llapi_file_create_fn lustre_create; /* NULL unless DIR is on Lustre with liblustreapi */
} bench_t;

static const char USAGE[] =
    "usage: iomodel --size S --max-procs M --procs-per-node P --dir DIR [--read-back]\n"
    "               [--sync none|fsync|direct] [--models all|serial,fpp,fpn,ssf,n:p:f:m,...]\n"
    "               [--list] [--keep]\n"
    "Writes exactly S bytes (suffix K, M or G: KiB, MiB, GiB) once per I/O model between\n"
    "serial and single shared file, and prints one JSON line per model. Run it with exactly\n"
    "M MPI ranks placed in blocks of P per node; --list prints the models without I/O.\n"
    "--sync: none (default; the page cache may hold the data), fsync (each rank fsyncs its\n"
    "file before closing it, inside the timed phase) or direct (O_DIRECT; S / M a multiple\n"
    "of 4096).\n";

static bool is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

static const struct option LONG_OPTIONS[] = {
    {"size", required_argument, NULL, 's'},
    {"max-procs", required_argument, NULL, 'M'},
    {"procs-per-node", required_argument, NULL, 'P'},
    {"dir", required_argument, NULL, 'd'},
    {"models", required_argument, NULL, 'x'},
    {"read-back", no_argument, NULL, 'r'},
    {"sync", required_argument, NULL, 'y'},
    {"list", no_argument, NULL, 'l'},
    {"keep", no_argument, NULL, 'k'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One option; the optarg-taking ones are parsed at once so that errors name the option. */
static int apply_option(void *opts, int c, const char *arg, char *err) {
    options_t *o = opts;
    switch (c) {
    case 's':
        return parse_size("--size", arg, &o->size, err);
    case 'M':
        return parse_count("--max-procs", arg, MAX_PROCS, &o->max_procs, err);
    case 'P':
        return parse_count("--procs-per-node", arg, MAX_PROCS, &o->ppn, err);
    case 'd':
        o->dir = arg;
        return 0;
    case 'x':
        o->models = arg;
        return 0;
    case 'r':
        o->read_back = true;
        return 0;
    case 'y':
        for (int k = 0; k <= SYNC_DIRECT; k++)
            if (strcmp(arg, SYNC_NAMES[k]) == 0) {
                o->sync = (sync_t)k;
                return 0;
            }
        return fail(err, "--sync '%s': expected none, fsync or direct", arg);
    case 'l':
        o->list = true;
        return 0;
    case 'k':
        o->keep = true;
        return 0;
    default:
        o->help = true;
        return 0;
    }
}

/* Powers of two with P <= M imply that P divides M, so a separate divisibility check could never
 * fire; the power-of-two message of M says when M is not a multiple of P either. */
static int validate(const options_t *o, char *err) {
    if (o->size == 0)
        return fail(err, "--size is required");
    if (o->max_procs == 0)
        return fail(err, "--max-procs is required");
    if (o->ppn == 0)
        return fail(err, "--procs-per-node is required");
    if (!is_pow2(o->max_procs))
        return fail(err, "--max-procs %ld is not a power of two%s", o->max_procs,
                    o->max_procs % o->ppn ? " (nor a multiple of --procs-per-node)" : "");
    if (!is_pow2(o->ppn))
        return fail(err, "--procs-per-node %ld is not a power of two", o->ppn);
    if (o->ppn > o->max_procs)
        return fail(err, "--procs-per-node %ld is larger than --max-procs %ld", o->ppn,
                    o->max_procs);
    if (o->size < (uint64_t)o->max_procs)
        return fail(err, "--size %" PRIu64 " is smaller than --max-procs %ld (one byte each)",
                    o->size, o->max_procs);
    if (o->size % (uint64_t)o->max_procs != 0)
        return fail(err, "--size %" PRIu64 " is not divisible by --max-procs %ld", o->size,
                    o->max_procs);
    /* every chunk is (S / M) times a power of two, so S / M aligned aligns every offset */
    if (o->sync == SYNC_DIRECT && o->size / (uint64_t)o->max_procs % DIRECT_ALIGN != 0)
        return fail(err,
                    "--sync direct: --size / --max-procs (%" PRIu64
                    ") is not a multiple of 4096 (O_DIRECT's alignment)",
                    o->size / (uint64_t)o->max_procs);
    if (!o->list && o->dir == NULL)
        return fail(err, "--dir is required (except with --list)");
    return 0;
}

/* Number of pairs (a, b) of powers of two with b <= a <= limit. */
static int pow2_pairs(int limit) {
    int levels = 0;
    while ((1 << levels) <= limit)
        levels++;
    return levels * (levels + 1) / 2;
}

/* Every model, in the order they run: nodes, processes per node, files per node, sharing. */
static model_t *enumerate(int nodes, int ppn, int *count) {
    *count = pow2_pairs(nodes) * pow2_pairs(ppn);
    model_t *v = malloc(sizeof *v * (size_t)*count);
    int k = 0;
    for (int n = 1; v != NULL && n <= nodes; n *= 2)
        for (int p = 1; p <= ppn; p *= 2)
            for (int f = 1; f <= p; f *= 2)
                for (int m = 1; m <= n; m *= 2)
                    v[k++] = (model_t){n, p, f, m};
    return v;
}

static bool is_serial(const model_t *md, int nodes, int ppn) {
    return md->n == 1 && md->p == 1 && md->f == 1 && md->m == 1;
}

/* The whole job writes one file. */
static bool is_ssf(const model_t *md, int nodes, int ppn) {
    return md->n == nodes && md->p == ppn && md->f == 1 && md->m == md->n;
}

static bool is_fpp(const model_t *md, int nodes, int ppn) { return md->f == md->p && md->m == 1; }

static bool is_fpn(const model_t *md, int nodes, int ppn) { return md->f == 1 && md->m == 1; }

typedef bool (*model_pred)(const model_t *, int, int);

/* Named models; a name selects every model it describes. The label of a model is the first
 * matching name, so (1,1,1,1) is "serial" although it is also a file per process and node. */
static const struct {
    const char *short_name, *label;
    model_pred pred;
} NAMED[] = {{"serial", "serial", is_serial},
             {"ssf", "single-shared-file", is_ssf},
             {"fpp", "file-per-process", is_fpp},
             {"fpn", "file-per-node", is_fpn}};

#define NNAMED (sizeof NAMED / sizeof NAMED[0])

static const char *model_label(const model_t *md, int nodes, int ppn) {
    for (size_t i = 0; i < NNAMED; i++)
        if (NAMED[i].pred(md, nodes, ppn))
            return NAMED[i].label;
    return NULL;
}

static int select_named(bench_t *b, const char *tok) {
    for (size_t i = 0; i < NNAMED; i++) {
        if (strcmp(tok, NAMED[i].short_name) != 0 && strcmp(tok, NAMED[i].label) != 0)
            continue;
        for (int k = 0; k < b->nmodels; k++)
            b->selected[k] |= NAMED[i].pred(&b->models[k], b->nodes, (int)b->opt.ppn);
        return 0;
    }
    return -1;
}

static int select_explicit(bench_t *b, const char *tok, char *err) {
    model_t md;
    char extra;
    if (sscanf(tok, "%d:%d:%d:%d%c", &md.n, &md.p, &md.f, &md.m, &extra) != 4)
        return fail(err,
                    "--models: unknown model '%s' (expected all, serial, fpp, fpn, ssf or "
                    "n:p:f:m)",
                    tok);
    for (int k = 0; k < b->nmodels; k++) {
        const model_t *c = &b->models[k];
        if (c->n == md.n && c->p == md.p && c->f == md.f && c->m == md.m) {
            b->selected[k] = true;
            return 0;
        }
    }
    return fail(err, "--models: %s is not a model for --max-procs %ld --procs-per-node %ld", tok,
                b->opt.max_procs, b->opt.ppn);
}

static int select_token(bench_t *b, const char *tok, char *err) {
    if (strcmp(tok, "all") == 0) {
        for (int k = 0; k < b->nmodels; k++)
            b->selected[k] = true;
        return 0;
    }
    return select_named(b, tok) == 0 ? 0 : select_explicit(b, tok, err);
}

/* A comma-separated union of selections; the models still run in enumeration order. */
static int select_models(bench_t *b, char *err) {
    char *copy = strdup(b->opt.models);
    if (copy == NULL)
        return fail(err, "out of memory");
    int status = 0, tokens = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && status == 0;
         tok = strtok_r(NULL, ",", &save), tokens++)
        status = select_token(b, tok, err);
    free(copy);
    if (status == 0 && tokens == 0)
        return fail(err, "--models is empty (expected all, serial, fpp, fpn, ssf or n:p:f:m)");
    return status;
}

static int io_procs(const model_t *md) { return md->n * md->p; }
static int procs_per_file(const model_t *md) { return md->p / md->f * md->m; }
static int file_count(const model_t *md) { return md->n * md->f / md->m; }
static uint64_t chunk_bytes(const bench_t *b, const model_t *md) {
    return b->opt.size / (uint64_t)io_procs(md);
}

/* The keys shared by --list and run output, up to "sync". */
static void print_head(const bench_t *b, const model_t *md) {
    printf("{\"benchmark\":\"iomodel\",\"n\":%d,\"p\":%d,\"f\":%d,\"m\":%d,\"io_procs\":%d,"
           "\"procs_per_file\":%d,\"files\":%d,\"nodes\":%d,\"bytes\":%" PRIu64 ",\"sync\":\"%s\"",
           md->n, md->p, md->f, md->m, io_procs(md), procs_per_file(md), file_count(md), md->n,
           b->opt.size, SYNC_NAMES[b->opt.sync]);
}

static void print_tail(const bench_t *b, const model_t *md) {
    const char *label = model_label(md, b->nodes, (int)b->opt.ppn);
    if (label != NULL)
        printf(",\"model\":\"%s\"}\n", label);
    else
        printf(",\"model\":null}\n");
    fflush(stdout); /* a line per model as it ends: a killed job keeps its finished models */
}

/* seconds < 0 means the phase did not run: both keys are null. */
static void print_rate(const char *phase, double seconds, uint64_t bytes) {
    if (seconds < 0) {
        printf(",\"%s_seconds\":null,\"%s_mib_s\":null", phase, phase);
        return;
    }
    printf(",\"%s_seconds\":%.9g,\"%s_mib_s\":%.9g", phase, seconds, phase,
           (double)bytes / 1048576.0 / seconds);
}

static void list_models(const bench_t *b) {
    for (int k = 0; k < b->nmodels; k++) {
        if (!b->selected[k])
            continue;
        const model_t *md = &b->models[k];
        uint64_t chunk = chunk_bytes(b, md);
        print_head(b, md);
        printf(",\"bytes_per_proc\":%" PRIu64 ",\"file_bytes\":%" PRIu64, chunk,
               chunk * (uint64_t)procs_per_file(md));
        print_tail(b, md);
    }
}

/* Seed 003: "stripe alignment with the largest possible stripe size": the largest power of two
 * not above a process's chunk, within Lustre's limits (a multiple of 64 KiB, below 4 GiB). */
static uint64_t stripe_size(uint64_t chunk) {
    uint64_t s = LUSTRE_MIN_STRIPE;
    while (s * 2 <= chunk && s * 2 <= LUSTRE_MAX_STRIPE)
        s *= 2;
    return s;
}

/* On Lustre, creates path with the stripe size of a chunk (stripe offset and count: the file
 * system's defaults); elsewhere nothing. A failure leaves the default layout, with a warning. */
static void lustre_create_file(const bench_t *b, const char *path, uint64_t chunk) {
    if (b->lustre_create == NULL)
        return;
    int rc = b->lustre_create(path, stripe_size(chunk), -1, 0, 0);
    if (rc != 0)
        fprintf(stderr, "iomodel: warning: llapi_file_create %s: %s\n", path, strerror(-rc));
}

/* DIR/n<n>-p<p>-f<f>-m<m>: the model is readable from every file path of a log. The length of
 * DIR is checked in check_dir, so these paths fit in PATH_LEN. */
static void model_dir(const bench_t *b, const model_t *md, char *out) {
    snprintf(out, PATH_LEN, "%s/n%d-p%d-f%d-m%d", b->opt.dir, md->n, md->p, md->f, md->m);
}

static void file_path(const bench_t *b, const model_t *md, int k, char *out) {
    snprintf(out, PATH_LEN, "%s/n%d-p%d-f%d-m%d/file%d.dat", b->opt.dir, md->n, md->p, md->f, md->m,
             k);
}

/* Rank 0, untimed: the model directory exists, no file of an earlier --keep run is left (its
 * size could differ), and each file exists, empty: on Lustre created with its stripe size.
 * Made here, the ranks' timed opens find their file: ranks of several nodes that create one
 * file with O_CREAT race, and a FUSE client (GlusterFS) may answer the loser EEXIST. mknod, not
 * open, so that the logs hold only the timed opens. */
static int prepare_model(const bench_t *b, const model_t *md) {
    char path[PATH_LEN];
    model_dir(b, md, path);
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "iomodel: error: mkdir %s: %s\n", path, strerror(errno));
        return EXIT_IO;
    }
    for (int k = 0; k < file_count(md); k++) {
        file_path(b, md, k, path);
        if (unlink(path) != 0 && errno != ENOENT) {
            fprintf(stderr, "iomodel: error: unlink %s: %s\n", path, strerror(errno));
            return EXIT_IO;
        }
        lustre_create_file(b, path, chunk_bytes(b, md));
        if (mknod(path, S_IFREG | 0644, 0) != 0 && errno != EEXIST) {
            fprintf(stderr, "iomodel: error: mknod %s: %s\n", path, strerror(errno));
            return EXIT_IO;
        }
    }
    return 0;
}

/* Rank 0, after the model: its files and directory go unless --keep. */
static void remove_model(const bench_t *b, const model_t *md) {
    char path[PATH_LEN];
    for (int k = 0; k < file_count(md); k++) {
        file_path(b, md, k, path);
        if (unlink(path) != 0)
            fprintf(stderr, "iomodel: warning: unlink %s: %s\n", path, strerror(errno));
    }
    model_dir(b, md, path);
    if (rmdir(path) != 0)
        fprintf(stderr, "iomodel: warning: rmdir %s: %s\n", path, strerror(errno));
}

/* Block placement: rank r is local rank r % P on node r / P. The model uses nodes 0..n-1 and
 * local ranks 0..p-1 there; q = p / f processes of a node share each of its files, and m
 * consecutive nodes share the same files, so a file has m * q writers in slot order. */
static bool placement(const bench_t *b, const model_t *md, int *file, uint64_t *offset) {
    int node = b->rank / (int)b->opt.ppn, local = b->rank % (int)b->opt.ppn;
    if (node >= md->n || local >= md->p)
        return false;
    int q = md->p / md->f;
    int slot = (node % md->m) * q + local % q;
    *file = (node / md->m) * md->f + local / q;
    *offset = (uint64_t)slot * chunk_bytes(b, md);
    return true;
}

/* pwrite/pread of len bytes at off, in pieces, resuming after short transfers; 0 or errno. */
static int transfer(int fd, bool write, char *buf, size_t buflen, uint64_t off, uint64_t len) {
    while (len > 0) {
        size_t want = len < buflen ? (size_t)len : buflen;
        ssize_t got = write ? pwrite(fd, buf, want, (off_t)off) : pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? errno : EIO; /* a read that ends early: the file is short */
        off += (uint64_t)got;
        len -= (uint64_t)got;
    }
    return 0;
}

/* --sync fsync: the chunk reaches the storage inside the timed write, and its now clean pages
 * are dropped, so that --read-back reads the storage too (dropping clean pages is cheap: no
 * I/O). 0 or errno. */
static int sync_and_drop(int fd, uint64_t off, uint64_t len) {
    if (fsync(fd) != 0)
        return errno;
    return posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
}

/* This rank's part of a phase: open, transfer its chunk, close. 0 or EXIT_IO (reported). */
static int rank_io(const bench_t *b, const model_t *md, bool write) {
    int file;
    uint64_t offset;
    if (!placement(b, md, &file, &offset))
        return 0;
    char path[PATH_LEN];
    file_path(b, md, file, path);
    int direct = b->opt.sync == SYNC_DIRECT ? O_DIRECT : 0;
    int fd = write ? open(path, O_CREAT | O_WRONLY | direct, 0644) : open(path, O_RDONLY | direct);
    char *buf = write ? b->buf : b->readbuf;
    int e = fd < 0 ? errno : transfer(fd, write, buf, b->buflen, offset, chunk_bytes(b, md));
    if (e == 0 && write && b->opt.sync == SYNC_FSYNC)
        e = sync_and_drop(fd, offset, chunk_bytes(b, md));
    if (fd >= 0 && close(fd) != 0 && e == 0)
        e = errno;
    if (e == 0)
        return 0;
    fprintf(stderr, "iomodel: error: rank %d: %s %s: %s\n", b->rank, write ? "write" : "read", path,
            strerror(e));
    return EXIT_IO;
}

/* One timed phase, barrier to barrier, on rank 0's clock (opens and closes included: they are
 * part of the I/O the logs account for). agree is the closing barrier, and it keeps a failing
 * rank from leaving the others waiting in the next model's barrier. */
static int timed_phase(const bench_t *b, const model_t *md, bool write, double *seconds) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int status = agree(rank_io(b, md, write));
    *seconds = MPI_Wtime() - t0;
    return status;
}

static int run_model(const bench_t *b, const model_t *md) {
    double wsec = -1, rsec = -1;
    int status = agree(b->rank == 0 ? prepare_model(b, md) : 0);
    if (status == 0)
        status = timed_phase(b, md, true, &wsec);
    if (status == 0 && b->opt.read_back)
        status = timed_phase(b, md, false, &rsec);
    if (b->rank == 0 && status == 0) {
        print_head(b, md);
        print_rate("write", wsec, b->opt.size);
        print_rate("read", rsec, b->opt.size);
        print_tail(b, md);
    }
    if (b->rank == 0 && !b->opt.keep)
        remove_model(b, md);
    return status;
}

/* O_DIRECT's alignment for every buffer (free()d as malloc's); NULL when out of memory. */
static char *aligned_buffer(size_t len) {
    void *p = NULL;
    return posix_memalign(&p, (size_t)DIRECT_ALIGN, len) == 0 ? p : NULL;
}

static int run_all(bench_t *b) {
    b->buflen = (size_t)(b->opt.size < IO_PIECE ? b->opt.size : IO_PIECE);
    b->buf = aligned_buffer(b->buflen);
    b->readbuf = b->opt.read_back ? aligned_buffer(b->buflen) : NULL;
    if (agree(b->buf == NULL || (b->opt.read_back && b->readbuf == NULL)) != 0) {
        if (b->rank == 0)
            fprintf(stderr, "iomodel: error: cannot allocate %zu bytes\n", b->buflen);
        return EXIT_IO;
    }
    memset(b->buf, fill_byte(b->rank), b->buflen);
    if (b->rank == 0)
        b->lustre_create = lustre_api("iomodel", b->opt.dir, "stripe size aligned per model");
    int status = 0;
    for (int k = 0; k < b->nmodels && status == 0; k++)
        if (b->selected[k])
            status = run_model(b, &b->models[k]);
    return status;
}

/* Parameters every rank can check alone (all ranks see the same argv and job size). */
static int setup_local(bench_t *b, int argc, char **argv, char *err) {
    b->opt.models = "all";
    if (parse_args(argc, argv, ":", LONG_OPTIONS, apply_option, &b->opt, err) != 0)
        return -1;
    if (b->opt.help)
        return 0;
    if (validate(&b->opt, err) != 0)
        return -1;
    b->nodes = (int)(b->opt.max_procs / b->opt.ppn);
    b->models = enumerate(b->nodes, (int)b->opt.ppn, &b->nmodels);
    b->selected = calloc((size_t)b->nmodels, sizeof *b->selected);
    if (b->models == NULL || b->selected == NULL)
        return fail(err, "out of memory");
    if (select_models(b, err) != 0)
        return -1;
    if (!b->opt.list && b->nranks != b->opt.max_procs)
        return fail(err, "--max-procs %ld needs exactly %ld MPI ranks, the job has %d",
                    b->opt.max_procs, b->opt.max_procs, b->nranks);
    return 0;
}

/* 0, or EXIT_USAGE after rank 0 printed the one-line error. DIR is checked on rank 0 only
 * (the file system is shared) and the verdict is broadcast. */
static int setup(bench_t *b, int argc, char **argv) {
    char err[ERR_LEN] = "";
    int bad = setup_local(b, argc, argv, err) != 0;
    /* 128: room for the model dirs and files below DIR */
    if (!bad && !b->opt.help && !b->opt.list)
        bad = check_dir_on_rank0(b->rank, b->opt.dir, 128, err) != 0;
    if (bad && b->rank == 0)
        fprintf(stderr, "iomodel: error: %s\n", err);
    return bad ? EXIT_USAGE : 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    bench_t b = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    int status = setup(&b, argc, argv);
    if (status == 0 && b.opt.help && b.rank == 0)
        fputs(USAGE, stdout);
    else if (status == 0 && b.opt.list && b.rank == 0)
        list_models(&b);
    else if (status == 0 && !b.opt.help && !b.opt.list)
        status = run_all(&b);
    free(b.buf);
    free(b.readbuf);
    free(b.selected);
    free(b.models);
    MPI_Finalize();
    return status;
}
