/* Internal interface shared by the runtime's parts (core, modules, log writer, MPI glue).
 * Every symbol the library defines for its own use starts with ios_. */
#ifndef IOS_IOSTUDY_H
#define IOS_IOSTUDY_H

#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "darshan_format.h"

#define IOS_VERSION "0.1.0"
#define IOS_HIDDEN __attribute__((visibility("hidden")))
/* The wrappers: the only symbols the library exports (CMake hides everything else). In the merge
 * tool, built from the same sources with IOS_TOOL, they stay inside the program. */
#ifdef IOS_TOOL
#define IOS_EXPORT IOS_HIDDEN
#else
#define IOS_EXPORT __attribute__((visibility("default")))
#endif
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

/* ---- runtime state ----------------------------------------------------------------------- */
enum ios_state {
    IOS_OFF = 0,  /* not started (waiting for MPI_Init), disabled, or failed */
    IOS_ON = 1,   /* recording */
    IOS_DONE = 2, /* log written or being written: wrappers pass through */
};
extern _Atomic int ios_state IOS_HIDDEN;

/* Per-thread re-entrancy guard: set while the runtime itself works (holding its lock, writing
 * the log), so that a signal handler or a libc-internal call into a wrapper passes straight
 * through instead of deadlocking or recording the runtime's own I/O. A signal handler reads it
 * on the thread it interrupted: volatile, and changed only through ios_guard, whose compiler
 * fences keep the store before the lock is taken and after it is released. */
extern __thread volatile int ios_in_runtime __attribute__((tls_model("initial-exec"))) IOS_HIDDEN;
static inline void ios_guard(int on) {
    atomic_signal_fence(memory_order_seq_cst);
    ios_in_runtime = on;
    atomic_signal_fence(memory_order_seq_cst);
}

static inline int ios_recording(void) {
    return IOS_LIKELY(atomic_load_explicit(&ios_state, memory_order_relaxed) == IOS_ON) &&
           !ios_in_runtime;
}

/* One lock for all records: the critical sections are a few dozen instructions long. */
extern atomic_flag ios_lock_flag IOS_HIDDEN;
static inline void ios_lock(void) {
    while (atomic_flag_test_and_set_explicit(&ios_lock_flag, memory_order_acquire))
        sched_yield();
}
static inline void ios_unlock(void) {
    atomic_flag_clear_explicit(&ios_lock_flag, memory_order_release);
}

/* The critical section around every record update: 1 with the lock held, or 0 (nothing held)
 * once shutdown has begun. A thread that looked its record up before then and was blocked in the
 * real call meanwhile must not touch it: the records live in the memory-mapped log, which
 * shutdown unmaps. Shutdown changes the state first, then takes the lock once, so a caller that
 * got 1 finishes before the log is written. Callers write `if (ios_enter()) {...}`. */
static inline int ios_enter(void) {
    ios_guard(1);
    ios_lock();
    if (IOS_LIKELY(atomic_load_explicit(&ios_state, memory_order_relaxed) == IOS_ON))
        return 1;
    ios_unlock();
    ios_guard(0);
    return 0;
}
static inline void ios_leave(void) {
    ios_unlock();
    ios_guard(0);
}

/* The wrappers of every module are built from one family:
 *   IOS_REAL(name) and IOS_CALL(name), ios_next_symbol(): the real function, resolved;
 *   ios_recording(), ios_enter() and ios_leave(): whether to record, and the guarded section;
 *   IOS_TIMED_CALL(type, ret, call): t1, the real call's result in ret, t2;
 *   IOS_KEEP_ERRNO(stmt): stmt (recording may allocate) with the program's errno kept.
 * The read and write wrappers skip the last: recording there makes no call that sets errno. */
#define IOS_TIMED_CALL(type, ret, call)                                                            \
    double t1 = ios_now();                                                                         \
    IOS_COMPUTED_NOW(t1);                                                                          \
    type ret = call;                                                                               \
    double t2 = ios_now();                                                                         \
    IOS_COMPUTED_NOW(t2)
/* t is computed here, not where it is used: else the compiler keeps the clock's timespec and
 * the origin alive across the calls and branches between (spills and reloads), not one double. */
#if defined(__SSE2__)
#define IOS_COMPUTED_NOW(t) __asm__ volatile("" : "+x"(t))
#else
#define IOS_COMPUTED_NOW(t) __asm__ volatile("" : "+g"(t))
#endif
#define IOS_KEEP_ERRNO(stmt)                                                                       \
    do {                                                                                           \
        int saved_errno_ = errno;                                                                  \
        stmt;                                                                                      \
        errno = saved_errno_;                                                                      \
    } while (0)

/* Every wrapper reads the clock twice: through the GOT, not a PLT stub (a jump less each). Only
 * this function: -fno-plt for all would bind every libc function the library calls at load
 * time, 24,000 instructions more for every process. */
extern int clock_gettime(clockid_t clock, struct timespec *ts) __attribute__((noplt));

/* Seconds since the runtime started (CLOCK_MONOTONIC). */
extern int64_t ios_origin_ns IOS_HIDDEN; /* CLOCK_MONOTONIC at start, in nanoseconds */
static inline double ios_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* In integer nanoseconds first: one conversion, not two (every wrapper calls this twice). */
    return (double)(ts.tv_sec * 1000000000 + ts.tv_nsec - ios_origin_ns) * 1e-9;
}

struct ios_config {
    double modmem_mib;                /* DARSHAN_MODMEM: record memory, shared by all modules */
    double namemem_mib;               /* DARSHAN_NAMEMEM: record-name memory */
    int64_t mem_alignment;            /* DARSHAN_MEMALIGN */
    uint64_t mem_align_mask;          /* its ios_align_mask */
    int disable_shared_redux;         /* DARSHAN_DISABLE_SHARED_REDUCTION */
    char **exclude_dirs;              /* path prefixes never recorded (NULL-terminated) */
    uint64_t exclude_second_bytes[4]; /* the set of their second bytes (ios_set_excludes) */
};
extern struct ios_config ios_config IOS_HIDDEN;

/* ---- records and names ------------------------------------------------------------------ */
uint64_t ios_hash(const unsigned char *k, size_t length, uint64_t level) IOS_HIDDEN;
uint64_t ios_record_id(const char *name) IOS_HIDDEN;

/* Sets the path prefixes never recorded (NULL-terminated; NULL: none). */
void ios_set_excludes(char **dirs) IOS_HIDDEN;
/* Normalizes a path the way Darshan names records (absolute, // and /./ collapsed) into out;
 * returns 0, or -1 if the path must not be recorded (excluded prefix, too long). */
int ios_normalize_path(const char *path, int dirfd, char *out, size_t outlen) IOS_HIDDEN;
/* What an absolute path a program named came to (a module's file, or NULL: not recorded), so
 * that a path named again skips normalization and hashing (the two are nine tenths of a stat).
 * Normalizing an absolute path is a function of the string alone (no getcwd), so the answer
 * never changes while the records live. Direct-mapped, bounded; use under the lock. */
struct ios_path_cache_slot {
    uint64_t key;
    size_t len, room; /* of path (NUL not included), and of the copy's memory */
    char *path;
    void *val;
};
struct ios_path_cache {
    struct ios_path_cache_slot *slots; /* made at the first put */
};
uint64_t ios_path_key(const char *path, size_t len) IOS_HIDDEN;
/* 1 with *val when path (len bytes, key from ios_path_key) is remembered, else 0. */
int ios_path_cache_get(const struct ios_path_cache *c, const char *path, size_t len, uint64_t key,
                       void **val) IOS_HIDDEN;
void ios_path_cache_put(struct ios_path_cache *c, const char *path, size_t len, uint64_t key,
                        void *val) IOS_HIDDEN;
void ios_path_cache_clear(struct ios_path_cache *c) IOS_HIDDEN;

/* The record name of an absolute path of len bytes: the path itself when already normal (no copy),
 * else its normal form written into out; NULL when it must not be recorded. */
const char *ios_absolute_name(const char *path, size_t len, char *out, size_t outlen) IOS_HIDDEN;
/* A file name without ROMIO's file-system prefix ("ufs:", "lustre:"), as Darshan names the
 * records of MPI-IO, HDF5 and PnetCDF; a one-letter prefix is a drive and stays. */
const char *ios_strip_fs_prefix(const char *filename) IOS_HIDDEN;

/* Accounts size bytes of record memory to module mod and registers the record's name; returns
 * -1 after setting the module's partial flag when record or name memory is exhausted.
 * ios_register_record does the same and also allocates the zeroed record. */
int ios_reserve_record(int mod, uint64_t id, const char *name, size_t size) IOS_HIDDEN;
void *ios_register_record(int mod, uint64_t id, const char *name, size_t size) IOS_HIDDEN;
const char *ios_record_name(uint64_t id) IOS_HIDDEN;
/* Registers a record's name (no memory accounting: for names that come from other logs). */
int ios_name_record(uint64_t id, const char *name) IOS_HIDDEN;
/* Darshan's FILE_ALIGNMENT: block size of the file system holding path. */
int64_t ios_file_alignment(const char *path) IOS_HIDDEN;

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
/* The tracked file of a record name: files maps record id -> a module's file struct (file_size
 * bytes) whose first member points to its record (rec_size bytes). A new one is made zeroed,
 * with its record registered and *created set; NULL without memory. Call inside ios_enter(). */
void *ios_file_by_name(struct ios_map *files, int mod, const char *name, size_t file_size,
                       size_t rec_size, int *created) IOS_HIDDEN;

/* ---- counters shared by modules --------------------------------------------------------- */
static inline int ios_size_bin(int64_t size) {
    /* Small sizes at once; else each range [2^b, 2^(b+1)) holds at most one of the bins' upper
     * bounds (100, 1K, 10K, 100K, 1M, 4M, 10M, 100M, 1G): a size's bin is its range's first bin,
     * plus one above that bound. A walk through the bounds took up to 30 instructions. */
    if (IOS_LIKELY(size <= 100))
        return 0;
#define NO_BOUND INT64_MAX
    static const struct {
        int64_t bound, first;
    } ranges[64] = {{NO_BOUND, 0}, {NO_BOUND, 0}, {NO_BOUND, 0},   {NO_BOUND, 0},
                    {NO_BOUND, 0}, {NO_BOUND, 0}, {100, 0},        {NO_BOUND, 1},
                    {NO_BOUND, 1}, {NO_BOUND, 1}, {1024, 1},       {NO_BOUND, 2},
                    {NO_BOUND, 2}, {10240, 2},    {NO_BOUND, 3},   {NO_BOUND, 3},
                    {102400, 3},   {NO_BOUND, 4}, {NO_BOUND, 4},   {NO_BOUND, 4},
                    {1048576, 4},  {NO_BOUND, 5}, {4194304, 5},    {10485760, 6},
                    {NO_BOUND, 7}, {NO_BOUND, 7}, {104857600, 7},  {NO_BOUND, 8},
                    {NO_BOUND, 8}, {NO_BOUND, 8}, {1073741824, 8}, [31 ... 63] = {NO_BOUND, 9}};
#undef NO_BOUND
    size_t b = 63 ^ (size_t)__builtin_clzll((uint64_t)size);
    return (int)(ranges[b].first + (size > ranges[b].bound));
}

/* Whether v is a multiple of the alignment a, given a's mask: a - 1 for the usual power of two,
 * 0 for none (a <= 0: everything is aligned), IOS_ALIGN_DIVIDE for the rest (a division). */
#define IOS_ALIGN_DIVIDE UINT64_MAX
static inline uint64_t ios_align_mask(int64_t a) {
    return a <= 0 ? 0 : (a & (a - 1)) == 0 ? (uint64_t)a - 1 : IOS_ALIGN_DIVIDE;
}
static inline int ios_aligned(uint64_t v, uint64_t mask, int64_t a) {
    return IOS_LIKELY((v & mask) == 0) || (mask == IOS_ALIGN_DIVIDE && v % (uint64_t)a == 0);
}

/* Adds the part of [t1, t2] that does not overlap the previous operation to *timer. */
static inline void ios_timer_add(double *timer, double t1, double t2, double *last_end) {
    /* Written as two maxima (maxsd, no branch), *last_end read once (timer might alias it). */
    double last = *last_end;
    *timer += t2 - (last < t1 ? t1 : last);
    *last_end = t2 > last ? t2 : last;
}

/* Frequencies of up to 32 distinct non-zero values (access sizes or strides) per file; the four
 * most common are written at shutdown. Zero is never kept, so it is not counted either, and
 * does not take a slot (Darshan counts it in one of its 32, then drops it). */
#define IOS_CV_SLOTS 32
struct ios_value_counts {
    int64_t value[IOS_CV_SLOTS]; /* an unused slot holds 0 */
    int64_t count[IOS_CV_SLOTS];
    int n, last;
};
/* Counts v, and keeps the record's four most common values (vals, counts) current at every
 * moment, in the order ios_common_merge gives: a memory-mapped log's record is whole whenever
 * the process is killed (without one, shutdown recomputes them from vc all the same). Inline for
 * the usual case: the value counted last, the record's most common one. */
void ios_value_count_slow(struct ios_value_counts *vc, int64_t v, int64_t *vals,
                          int64_t *counts) IOS_HIDDEN;
/* Moves the value vc counted last into the record's four slots where it now ranks. */
void ios_common_live(int64_t *vals, int64_t *counts, const struct ios_value_counts *vc) IOS_HIDDEN;
static inline void ios_value_count(struct ios_value_counts *vc, int64_t v, int64_t *vals,
                                   int64_t *counts) {
    if (v == 0)
        return;
    int i = vc->last;
    if (IOS_UNLIKELY(vc->value[i] != v)) { /* v != 0: an unused slot never matches */
        ios_value_count_slow(vc, v, vals, counts);
        return;
    }
    int64_t n = ++vc->count[i];
    if (IOS_LIKELY(vals[0] == v))
        counts[0] = n;
    else
        ios_common_live(vals, counts, vc);
}
/* Merges (value, count) pairs into the four slots vals[0..3] / counts[0..3]: equal values add,
 * order is count descending then value descending, zero values are never kept. */
void ios_common_merge(int64_t *vals, int64_t *counts, const int64_t *in_vals,
                      const int64_t *in_counts, int n_in) IOS_HIDDEN;

/* ---- robust logs (mmaplog.c) -------------------------------------------------------------- */
/* The records live in this process's memory-mapped log, a file made at the first record. */
extern int ios_mmap_on IOS_HIDDEN;
void ios_mmap_open(void) IOS_HIDDEN;
/* Zeroed space for a record of module mod in the mapped log, counted in its region; NULL for a
 * module that is not kept there (or without a mapped log). */
void *ios_mmap_alloc(int mod, size_t size) IOS_HIDDEN;
void ios_mmap_add_name(uint64_t id, const char *name, size_t len) IOS_HIDDEN; /* len: strlen */
/* The bytes of mod's records (mod < 0: of the names) as they stand in the mapping; NULL while
 * there is none (no file made yet, or none at all). */
unsigned char *ios_mmap_region(int mod, size_t *len) IOS_HIDDEN;
void ios_mmap_set_partial(uint64_t flags) IOS_HIDDEN;
const char *ios_mmap_path(void) IOS_HIDDEN; /* NULL while no file is made */
/* An MPI job: this process's rank, the job's size and id, for its mapped log. */
void ios_mmap_set_rank(int rank, int nprocs, int64_t jobid) IOS_HIDDEN;
/* After the normal log: the mapped one is removed, or kept when the normal one failed. */
void ios_mmap_close(int keep) IOS_HIDDEN;
/* In a forked child: let go of the parent's mapped log without touching it. */
void ios_mmap_forget(void) IOS_HIDDEN;
/* The mapped log written as this process's log (uncompressed), named as ios_job_log_path names
 * logs, into out; 0, or -1 with a reason in *why. Safe in a signal handler: no allocation, no
 * stdio, no lock; call with the runtime's lock held. _exit and exec end a process image so. */
int ios_mmap_write_log(char *out, size_t outlen, const char **why) IOS_HIDDEN;
/* Before an exec: the file goes, its mapping stays. If the exec fails, ios_mmap_relink makes
 * the file again from the mapping and maps it in the mapping's place. */
void ios_mmap_unlink(void) IOS_HIDDEN;
/* Writes len bytes of buf at off in fd, whatever the short writes and EINTR; 0, or -1 (errno). */
int ios_write_all(int fd, const void *buf, size_t len, uint64_t off) IOS_HIDDEN;
void ios_mmap_relink(void) IOS_HIDDEN;

/* ---- heatmap ------------------------------------------------------------------------------ */
enum ios_heatmap_api { IOS_HEATMAP_POSIX, IOS_HEATMAP_MPIIO, IOS_HEATMAP_STDIO, IOS_HEATMAP_NAPIS };
#define IOS_HEATMAP_BINS 200
struct ios_heatmap {
    double width, end;                 /* end = width * BINS: bins collapse when time reaches it */
    int64_t bins[2][IOS_HEATMAP_BINS]; /* [0] read, [1] write: bytes per time slice */
    int state;                         /* 0 unused, 1 recording, -1 refused for lack of memory */
    /* The bin the last operation fell in whole, [from, to): the next one most often does too.
     * Empty (to <= from) until the heatmap records and whenever the bins collapse. */
    double from, to;
    int bin;
};
extern struct ios_heatmap ios_heatmaps[IOS_HEATMAP_NAPIS] IOS_HIDDEN;
void ios_heatmap_add_slow(int api, int is_write, int64_t bytes, double t1, double t2) IOS_HIDDEN;
/* Adds bytes moved during [t1, t2]; inline because it runs on every read and write. */
static inline void ios_heatmap_add(int api, int is_write, int64_t bytes, double t1, double t2) {
    struct ios_heatmap *h = &ios_heatmaps[api];
    /* Most operations start and end in the bin the last one fell in. */
    if (IOS_LIKELY(t1 >= h->from && t2 < h->to))
        h->bins[is_write][h->bin] += bytes;
    else
        ios_heatmap_add_slow(api, is_write, bytes, t1, t2);
}

/* ---- modules at shutdown ------------------------------------------------------------------ */
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
void ios_posix_collect(struct ios_record_set *set) IOS_HIDDEN;
/* Copies out, as they are, the records of files, a map of record id -> a module's file struct
 * whose first member points to its record. */
void ios_collect_records(struct ios_record_set *set, int mod, size_t rec_size,
                         const struct ios_map *files) IOS_HIDDEN;
void ios_mpiio_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_stdio_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_h5f_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_pnetcdf_file_collect(struct ios_record_set *set) IOS_HIDDEN;
/* Writes the heatmap records, rebinned to bin_width and nbins from the process's own time
 * origin, which lies shift seconds after the job's. */
void ios_heatmap_collect(struct ios_record_set *set, double bin_width, int64_t nbins,
                         double shift) IOS_HIDDEN;
double ios_heatmap_min_width(double end_time) IOS_HIDDEN;
/* The bins of width seconds that cover run_time (at least one), and a record's size with them. */
int64_t ios_heatmap_nbins(double run_time, double width) IOS_HIDDEN;
size_t ios_heatmap_record_size(int64_t nbins) IOS_HIDDEN;
/* One API's heatmap as a record of nbins bins of width seconds, its times moved on by shift,
 * into out (IOS_HEATMAP_RECORD_MAX bytes hold any); returns its size, 0 for an all-zero heatmap,
 * which is not written. No allocation: _exit's log uses it. */
#define IOS_HEATMAP_RECORD_MAX                                                                     \
    (sizeof(struct ios_heatmap_record_head) + 2 * IOS_HEATMAP_BINS * sizeof(int64_t))
size_t ios_heatmap_record(int api, double width, int64_t nbins, double shift, void *out) IOS_HIDDEN;
void ios_posix_reset(void) IOS_HIDDEN;
void ios_mpiio_reset(void) IOS_HIDDEN;
void ios_stdio_reset(void) IOS_HIDDEN;
void ios_h5f_reset(void) IOS_HIDDEN;
void ios_pnetcdf_file_reset(void) IOS_HIDDEN;
void ios_heatmap_reset(void) IOS_HIDDEN;

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
 * their bytes and times (logwrite.c). */
void ios_combine_rank_extremes(const struct ios_reducer *r, const void *in, void *inout) IOS_HIDDEN;
extern const struct ios_reducer ios_posix_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_mpiio_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_stdio_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_h5f_reducer IOS_HIDDEN;
extern const struct ios_reducer ios_pnetcdf_file_reducer IOS_HIDDEN;

/* The modules (modules.def), indexed by IOS_M_<NAME>, in file order. */
struct ios_module {
    const char *name;
    int id, version;
    size_t rec_size; /* 0: records of their own sizes (Lustre, heatmap) */
    void (*collect)(struct ios_record_set *set); /* NULL: the heatmap (ios_heatmap_collect) */
    void (*reset)(void);
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

/* The name a file was recorded under: of a tracked descriptor (fdopen names its stream after
 * it), of a tracked stream (fileno gives its descriptor the stream's record). NULL if untracked. */
const char *ios_posix_fd_name(int fd) IOS_HIDDEN;
const char *ios_stdio_stream_name(FILE *stream) IOS_HIDDEN;

/* ---- Lustre layouts (lustre.c) ------------------------------------------------------------ */
#define IOS_LUSTRE_MAGIC 0x0BD00BD0 /* statfs's f_type of a Lustre file system (LL_SUPER_MAGIC) */
#define IOS_LUSTRE_MAX_COMPS 64
#define IOS_LUSTRE_MAX_STRIPES 4096 /* keeps a record below darshan-parser's 80 KiB buffer */
struct ios_lustre_layout {
    int num_comps, num_stripes;
    struct ios_lustre_component comps[IOS_LUSTRE_MAX_COMPS];
    int64_t osts[IOS_LUSTRE_MAX_STRIPES]; /* component by component; -1 when unknown */
};
/* The layout of the open file fd on Lustre: 0, or -1 when it cannot be had. The seam between
 * the module and liblustreapi. */
int ios_lustre_query(int fd, struct ios_lustre_layout *out) IOS_HIDDEN;
/* The POSIX module opened a file for the first time (call with ios_in_runtime set, no lock). */
void ios_lustre_file_opened(uint64_t id, const char *name, int fd) IOS_HIDDEN;
void ios_lustre_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_lustre_reset(void) IOS_HIDDEN;
size_t ios_lustre_record_size(const void *rec) IOS_HIDDEN;

/* ---- the job record (jobinfo.c) ---------------------------------------------------------- */
void ios_job_save_args(int argc, char **argv) IOS_HIDDEN;
void ios_job_begin(void) IOS_HIDDEN; /* start time and time origin: now */
void ios_job_set_fork_parent(pid_t parent) IOS_HIDDEN;
struct timespec ios_job_start(void) IOS_HIDDEN;
int64_t ios_job_id(void) IOS_HIDDEN;
void ios_job_exe_mounts(char *out, size_t outlen) IOS_HIDDEN;
void ios_job_metadata(char *out, size_t outlen) IOS_HIDDEN;
int ios_job_log_path(int64_t jobid, char *path, size_t pathlen, char *stem, size_t stemlen,
                     const char **why) IOS_HIDDEN;
/* The log written at path gets its final name, <stem>_<secs>.darshan (Darshan's: secs is how long
 * the write took), when it has a stem, and is made read-only; path then names it. */
void ios_job_log_finish(char *path, size_t pathlen, const char *stem, int secs) IOS_HIDDEN;
uint64_t ios_partial_flags(void) IOS_HIDDEN;
/* Records of the module are missing (memory ran out, or a request could not be tracked); call
 * inside ios_enter(). */
void ios_set_partial(int mod) IOS_HIDDEN;

/* ---- core, log writing, MPI glue ------------------------------------------------------ */
struct ios_comm;
void ios_core_start(void) IOS_HIDDEN;
void ios_core_shutdown(void) IOS_HIDDEN;
void ios_core_shutdown_mpi(const struct ios_comm *comm) IOS_HIDDEN;
/* Around the real exec (exec.c): returns what ios_core_exec_failed needs to know if it fails. */
int ios_core_before_exec(void) IOS_HIDDEN;
void ios_core_exec_failed(int stopped) IOS_HIDDEN;
/* 1 in an MPI process whose runtime MPI_Init started and MPI_Finalize has not stopped, with
 * its rank in *rank (mpi.c). */
int ios_mpi_unfinished(int *rank) IOS_HIDDEN;
void ios_warn(const char *fmt, ...) IOS_HIDDEN __attribute__((format(printf, 1, 2)));
/* The real function name of a wrapped library (MPI, HDF5, PnetCDF): it exists whenever the
 * program could call the wrapper, so without it the wrapper stops, saying why. */
void *ios_next_symbol(const char *name, const char *library) IOS_HIDDEN;
/* A stand-in for a missing real function (one warning): calling it fails with -1 and ENOSYS. */
void *ios_missing_symbol(const char *name, const char *library) IOS_HIDDEN;

/* Collective operations the shutdown needs; provided by the MPI plugin of the program's MPI
 * flavour (mpi_plugin.c) or by the single-process implementation in core.c. */
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
};
enum { IOS_OP_SUM, IOS_OP_MIN, IOS_OP_MAX, IOS_OP_BAND, IOS_OP_BOR };
typedef int (*ios_mpi_plugin_init_fn)(struct ios_comm *comm);

/* The communicator of a single process (core.c). */
const struct ios_comm *ios_local_comm(void) IOS_HIDDEN;
/* Writes the job's log; returns non-zero when this rank's part of it could not be written. */
int ios_write_log(const struct ios_comm *comm) IOS_HIDDEN;
/* Warns that the log path ("" if none was named) could not be written, why, and where the
 * records stay: in the memory-mapped log, or nowhere. */
void ios_warn_log_lost(const char *path, const char *why) IOS_HIDDEN;
/* Lets the MPI-IO wrappers record, with the plugin's knowledge of MPI's handles. */
void ios_mpiio_enable(const struct ios_comm *comm) IOS_HIDDEN;

#endif
