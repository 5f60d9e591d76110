/* The log writer (the static library iostudy-logwriter, linked into libiostudy.so and into
 * iostudy-merge): a log's records, the rules that reduce shared records, compression and the
 * collective write. What it needs is declared here and nothing of the interposer's: its code
 * includes this header only, so the merge tool builds without the wrappers. The interposer's own
 * interface (iostudy.h) includes it. Every symbol starts with ios_ and is hidden. */
#ifndef IOS_LOGWRITE_H
#define IOS_LOGWRITE_H

#define _GNU_SOURCE
#include <aio.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "darshan_format.h"

#define IOS_HIDDEN __attribute__((visibility("hidden")))
#define IOS_LIKELY(x) __builtin_expect(!!(x), 1)
#define IOS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- the real libc functions ---------------------------------------------------------- */
struct ios_real_functions {
#define X(ret, name, params) ret(*name) params;
#include "real_symbols.def"
#undef X
};
extern struct ios_real_functions ios_real IOS_HIDDEN;
void ios_resolve_one(void **slot, const char *name) IOS_HIDDEN;
/* Resolves ios_real.name at its first use (a wrapper may run before the library's constructor:
 * another library's constructor doing I/O). IOS_CALL(name) is the real function, resolved. */
#define IOS_REAL(name)                                                                             \
    (IOS_LIKELY(ios_real.name != NULL) ? (void)0 : ios_resolve_one((void **)&ios_real.name, #name))
#define IOS_CALL(name) (IOS_REAL(name), ios_real.name)

/* u64 -> pointer map (open addressing) for record ids and stream pointers. */
struct ios_map {
    uint64_t *keys;
    void **vals;
    size_t cap, count;
};
void *ios_map_get(const struct ios_map *m, uint64_t key) IOS_HIDDEN;
int ios_map_put(struct ios_map *m, uint64_t key, void *val) IOS_HIDDEN;
void ios_map_del(struct ios_map *m, uint64_t key) IOS_HIDDEN;
/* Room for n keys without growing again (one allocation where puts would double many times). */
int ios_map_reserve(struct ios_map *m, size_t n) IOS_HIDDEN;
void ios_map_free(struct ios_map *m) IOS_HIDDEN;

/* Merges (value, count) pairs into the four slots vals[0..3] / counts[0..3]: equal values add,
 * order is count descending then value descending, zero values are never kept; n_in is at most
 * IOS_CV_SLOTS. */
#define IOS_CV_SLOTS 32
void ios_common_merge(int64_t *vals, int64_t *counts, const int64_t *in_vals,
                      const int64_t *in_counts, int n_in) IOS_HIDDEN;

/* memcpy for large copies of records, in 16-byte moves: glibc's copies them with `rep movsb`,
 * which callgrind counts a byte at a time (DXT's segments are copied twice at shutdown). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static inline void
ios_copy(void *dst, const void *src, size_t len) {
    struct pair {
        uint64_t a, b;
    };
    struct pair *d = dst;
    const struct pair *s = src;
    size_t n = len / sizeof *d;
    for (size_t i = 0; i < n; i++)
        memcpy(&d[i], &s[i], sizeof *d);
    memcpy(d + n, s + n, len % sizeof *d);
}

/* ---- records -------------------------------------------------------------------------------- */
/* A module's records, copied out at shutdown in on-disk form (rank filled in later). */
struct ios_record_set {
    int mod;
    size_t rec_size; /* fixed record size; 0 for variable-size records (heatmap) */
    unsigned char *buf;
    size_t len;   /* bytes used in buf */
    size_t count; /* records */
    int in_place; /* set by the caller: buf may be the memory-mapped log's own region */
    int borrowed; /* buf is that region: neither freed nor grown */
};
/* The size of one record of set: fixed, or given by the record for the variable ones. */
size_t ios_record_size(const struct ios_record_set *set, const void *rec) IOS_HIDDEN;
/* The variable records' sizes: a Lustre layout of comps components and stripes stripes, a
 * heatmap of nbins bins. */
size_t ios_lustre_size(int64_t comps, int64_t stripes) IOS_HIDDEN;
size_t ios_lustre_record_size(const void *rec) IOS_HIDDEN;
size_t ios_heatmap_record_size(int64_t nbins) IOS_HIDDEN;
size_t ios_dxt_record_size(const void *rec) IOS_HIDDEN; /* a DXT trace, segments included */
int ios_dxt_module(int mod) IOS_HIDDEN;                 /* DXT_POSIX or DXT_MPIIO */
/* DXT records as a region holds them while a process runs (dxtlog.c): runs of a file's calls,
 * several records per file, and perhaps a tail shorter than a head (a segment being added).
 * Appends to out one record per file, in the order of their first runs: the first run's head,
 * then every write, then every read, each in region order; a file keep(id) refuses is left out.
 * 0, or -1 without memory (out unchanged). */
int ios_dxt_gather(const unsigned char *region, size_t len, int (*keep)(uint64_t id),
                   struct ios_record_set *out) IOS_HIDDEN;
void ios_dxt_shift(struct ios_record_set *set, double by) IOS_HIDDEN; /* times from job start */
/* The latest end time of set's segments (0 without one). */
double ios_dxt_last_end(const struct ios_record_set *set) IOS_HIDDEN;

/* How a module's shared records (opened by every rank) are reduced to one rank -1 record. */
struct ios_reducer {
    size_t rec_size;
    /* Counter and fcounter indices of the fastest/slowest rank and the variances; -1 (and bytes,
     * time NULL) in modules without them (H5F, PNETCDF_FILE). */
    int fastest_rank, fastest_bytes, slowest_rank, slowest_bytes;  /* counter indices */
    int fastest_time, slowest_time, variance_time, variance_bytes; /* fcounter indices */
    int ts_first, ts_last; /* the fcounters that are timestamps */
    int64_t (*bytes)(const void *rec);
    double (*time)(const void *rec);
    void (*combine)(const void *in, void *inout); /* inout = in (+) inout */
    size_t counters_off, fcounters_off;
};
/* The reducer of a module whose counters follow Darshan's names, <P>_FASTEST_RANK, ... */
#define IOS_REDUCER(P, record, first_ts, last_ts, bytes_fn, time_fn, combine_fn)                   \
    {                                                                                              \
        .rec_size = sizeof(record), .fastest_rank = P##_FASTEST_RANK,                              \
        .fastest_bytes = P##_FASTEST_RANK_BYTES, .slowest_rank = P##_SLOWEST_RANK,                 \
        .slowest_bytes = P##_SLOWEST_RANK_BYTES, .fastest_time = P##_F_FASTEST_RANK_TIME,          \
        .slowest_time = P##_F_SLOWEST_RANK_TIME, .variance_time = P##_F_VARIANCE_RANK_TIME,        \
        .variance_bytes = P##_F_VARIANCE_RANK_BYTES, .ts_first = first_ts, .ts_last = last_ts,     \
        .bytes = bytes_fn, .time = time_fn, .combine = combine_fn,                                 \
        .counters_off = offsetof(record, counters), .fcounters_off = offsetof(record, fcounters),  \
    }
/* The reducer of a module without rank extremes or variances. */
#define IOS_REDUCER_PLAIN(record, first_ts, last_ts, combine_fn)                                   \
    {                                                                                              \
        .rec_size = sizeof(record), .fastest_rank = -1, .fastest_bytes = -1, .slowest_rank = -1,   \
        .slowest_bytes = -1, .fastest_time = -1, .slowest_time = -1, .variance_time = -1,          \
        .variance_bytes = -1, .ts_first = first_ts, .ts_last = last_ts, .combine = combine_fn,     \
        .counters_off = offsetof(record, counters), .fcounters_off = offsetof(record, fcounters),  \
    }
/* The part of every combine that is the same in all modules: the fastest and slowest rank with
 * their bytes and times (reduce.c). */
void ios_combine_rank_extremes(const struct ios_reducer *r, const void *in, void *inout) IOS_HIDDEN;
extern const struct ios_reducer ios_posix_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_mpiio_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_stdio_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_h5f_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_h5d_reducer IOS_HIDDEN;
/* An H5D access (IOS_H5D_ACCESS values, the size first) seen n times in all goes into the four
 * most common (slots, counts) where Darshan puts it; a zero size is never kept. */
void ios_h5d_common_insert(int64_t *slots, int64_t *counts, const int64_t *access,
                           int64_t n) IOS_HIDDEN;
extern const struct ios_reducer ios_pnetcdf_file_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_pnetcdf_var_reducer IOS_HIDDEN;
/* Darshan's update of four most common tuples of n values (vals: 4 x n, counts: 4): the tuple v
 * with its count total takes its rank (count, then first value, descending); v[0] == 0 is never
 * kept (reducers.c). */
void ios_common_tuple_insert(int64_t *vals, int64_t *counts, const int64_t *v, int n,
                             int64_t total) IOS_HIDDEN;

/* The modules (modules.def), indexed by IOS_M_<NAME>, in file order: what a log says of them.
 * The runtime's side of each (collect, reset) is ios_module_ops (iostudy.h). */
struct ios_module {
    const char *name;
    int id, version;
    size_t rec_size;                   /* 0: records of their own sizes (Lustre, heatmap) */
    const struct ios_reducer *reducer; /* shared records' reduction; NULL: none */
    int in_mmap;                       /* kept in the memory-mapped log */
};
enum ios_module_index {
#define X(NAME, ...) IOS_M_##NAME,
#include "modules.def"
#undef X
    IOS_NMODULES
};
extern const struct ios_module ios_modules[IOS_NMODULES] IOS_HIDDEN;

/* Timestamp rules shared by the modules: a first-start timestamp keeps the earliest time (0 is
 * unset), and in a reduction fcounters[first..last] keep the earliest non-zero start or the
 * latest end of in and inout. */
static inline void ios_first_start(double *ts, double t) {
    /* Times are never negative, and the bits of non-negative doubles order as the numbers do:
     * one unsigned comparison asks "unset (+0.0) or later than t". */
    uint64_t have, now;
    memcpy(&have, ts, sizeof have);
    memcpy(&now, &t, sizeof now);
    if (have - 1 >= now)
        *ts = t;
}
static inline void ios_reduce_starts(double *fc, const double *ifc, int first, int last) {
    for (int j = first; j <= last; j++)
        if (ifc[j] > 0)
            ios_first_start(&fc[j], ifc[j]);
}
static inline void ios_reduce_ends(double *fc, const double *ifc, int first, int last) {
    for (int j = first; j <= last; j++)
        if (ifc[j] > fc[j])
            fc[j] = ifc[j];
}

/* ---- collectives -------------------------------------------------------------------------- */
/* Collective operations the shutdown needs; provided by the MPI plugin of the program's MPI
 * flavour (mpi_plugin.c) or by the single-process implementation, ios_local_comm. */
struct ios_comm {
    int rank, size;
    int mpi; /* 1: an MPI job, whose shared records are reduced; 0: a single process */
    void (*bcast)(void *buf, size_t len);               /* from rank 0 */
    void (*allreduce_i64)(int64_t *buf, int n, int op); /* op: IOS_OP_* */
    void (*allreduce_f64)(double *buf, int n, int op);
    void (*exscan_sum_i64)(const int64_t *in, int64_t *out, int n);
    /* Reduces n elements of elem_size bytes into rank 0's buf, in rank order, with combine. */
    void (*reduce_elems)(void *buf, size_t n, size_t elem_size,
                         void (*combine)(const void *in, void *inout));
    /* What the MPI-IO wrappers need to know of MPI's handles, which mpiio.c passes as opaque
     * uintptr_t (an int in MPICH, a pointer in Open MPI). NULL without a plugin. */
    int64_t (*type_bytes)(uintptr_t datatype, int64_t count); /* count elements, in bytes */
    int (*comm_size)(uintptr_t comm);
    int (*info_is_null)(uintptr_t info);
    /* DXT's offsets: fh's individual position (etypes), and an offset of fh's view in bytes;
     * byte_offset NULL where Darshan writes -1 (Open MPI, whose byte offsets it avoids). */
    int64_t (*position)(void *fh);
    int64_t (*byte_offset)(void *fh, int64_t offset);
};
enum { IOS_OP_SUM, IOS_OP_MIN, IOS_OP_MAX, IOS_OP_BAND, IOS_OP_BOR };
typedef int (*ios_mpi_plugin_init_fn)(struct ios_comm *comm);

/* The communicator of a single process (a process outside MPI, the merge tool). */
const struct ios_comm *ios_local_comm(void) IOS_HIDDEN;

/* ---- writing --------------------------------------------------------------------------------- */
/* Regions after the job region, in file order: names, then the modules (ios_modules). */
enum { R_NAMES, R_MODULES, N_REGIONS = R_MODULES + IOS_NMODULES };
static inline const struct ios_module *module_of(int r) { return &ios_modules[r - R_MODULES]; }

/* What a log file is made of, whoever assembled it (a job's shutdown, `iostudy logs merge`):
 * every rank's records, and on rank 0 the job record and where the file goes. */
struct log_content {
    struct ios_record_set sets[N_REGIONS]; /* sets[R_NAMES] unused */
    int64_t partial;                       /* this rank's partial flags */
    struct {                               /* rank 0 */
        struct ios_log_job job;
        char exe[IOS_EXE_LEN]; /* command line and mount table */
    } jr;
    char path[PATH_MAX], stem[PATH_MAX]; /* rank 0; stem: renamed to <stem>_<secs>.darshan */
    const char *why;                     /* rank 0: why path is unusable (NULL: fine) */
    /* The records' names: name_of(id), or an id's entry in names_region (id, name, NUL entries:
     * the memory-mapped log's, used in place when it names just the records written). */
    const char *(*name_of)(uint64_t id);
    const unsigned char *names_region;
    size_t names_region_len;
};

/* Compresses every rank's part of each region and writes them, collectively, into one new file
 * (rank 0 removes it again if any part failed); returns non-zero when this rank's part could not
 * be written, and rank 0 sets c->why. */
int ios_write_content(const struct ios_comm *comm, struct log_content *c) IOS_HIDDEN;

/* Timestamps count from a process's start; the log counts them from the job's. */
void ios_shift_timestamps(struct ios_record_set *set, const struct ios_reducer *r,
                          double by) IOS_HIDDEN;
void ios_set_job_span(struct ios_log_job *job, int64_t start_ns, int64_t end_ns) IOS_HIDDEN;

/* Per-rank time or bytes, for the variance of a shared record (count, sum, sum of squared
 * deviations from the mean); ios_variance_combine adds in to inout. */
struct variance {
    double n, sum, m2;
};
void ios_variance_combine(const void *in, void *inout) IOS_HIDDEN;
/* Whether a module's records carry the fastest/slowest rank and the variances (not H5F's and
 * PNETCDF_FILE's). */
static inline int ios_ranked(const struct ios_reducer *r) { return r->fastest_rank >= 0; }
/* A record's fastest and slowest rank are its own rank, with its bytes and time. */
void ios_seed_extremes(const struct ios_reducer *r, void *rec, int rank) IOS_HIDDEN;

/* A region of records of record_size bytes (at most IOS_DEFLATE_RECORD_MAX: two records back
 * must lie within deflate's 32 KiB window) as a raw deflate stream (recdeflate.c) into out,
 * which holds cap >= ios_deflate_records_bound(len) bytes; its length, or 0 without memory. */
#define IOS_DEFLATE_RECORD_MAX 16384
size_t ios_deflate_records(const unsigned char *in, size_t len, size_t record_size,
                           unsigned char *out, size_t cap) IOS_HIDDEN;
/* A name region (entries of an 8-byte id, a name and its NUL) as a raw deflate stream by the
 * same encoder (recdeflate.c), each entry matched against the one before; out as above. */
size_t ios_deflate_names(const unsigned char *in, size_t len, unsigned char *out,
                         size_t cap) IOS_HIDDEN;
/* At most 9 bits a byte with the fixed codes (a block never takes more than with them), and
 * each block's 10 bits of header and end. */
static inline size_t ios_deflate_records_bound(size_t len) {
    return len + len / 8 + len / 1024 + 16;
}

/* Files every rank recorded become one rank -1 record on rank 0; other ranks drop theirs
 * (ios_reduce_shared with the module's reducer; ios_mark_shared for records with nothing to add
 * up, the Lustre layouts: rank 0 keeps one as rank -1). */
void ios_reduce_shared(const struct ios_comm *comm, struct ios_record_set *set,
                       const struct ios_reducer *r) IOS_HIDDEN;
void ios_mark_shared(const struct ios_comm *comm, struct ios_record_set *set) IOS_HIDDEN;
/* Writes len bytes of buf at off in fd, whatever the short writes and EINTR; 0, or -1 (errno). */
int ios_write_all(int fd, const void *buf, size_t len, uint64_t off) IOS_HIDDEN;
/* A region as a zlib stream of stored (uncompressed) deflate blocks, as Darshan's reader takes any
 * zlib region: ios_stored_len(len) bytes, written at off in fd straight from in, block headers
 * and the Adler-32 sum from a few bytes of stack; 0, or -1 (errno). Async-signal-safe (no
 * allocation, no lock, no stdio): _exit and exec write their logs with it. */
size_t ios_stored_len(size_t len) IOS_HIDDEN;
int ios_write_stored(int fd, const void *in, size_t len, uint64_t off) IOS_HIDDEN;
/* The log written at path gets its final name, <stem>_<secs>.darshan (Darshan's: secs is how long
 * the write took), when it has a stem, and is made read-only; path then names it. */
void ios_log_finish(char *path, size_t pathlen, const char *stem, int secs) IOS_HIDDEN;

#endif
