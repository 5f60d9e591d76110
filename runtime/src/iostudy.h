/* The interposer's internal interface, shared by its parts (core, modules, shutdown, MPI glue);
 * it includes the log writer's (logwrite.h). Every symbol the library defines for its own use
 * starts with ios_. */
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

#include "logwrite.h"

#define IOS_VERSION "0.1.0"
/* The wrappers: the only symbols the library exports (CMake hides everything else). */
#define IOS_EXPORT __attribute__((visibility("default")))
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

static inline int ios_started(void) {
    return IOS_LIKELY(atomic_load_explicit(&ios_state, memory_order_relaxed) == IOS_ON);
}
static inline int ios_recording(void) { return ios_started() && !ios_in_runtime; }

/* One lock for all records: the critical sections are a few dozen instructions long. Its bit
 * 0 is set by a fetch-or, one instruction on x86 (lock bts) where atomic_flag took three. */
extern atomic_uint ios_lock_flag IOS_HIDDEN;
static inline void ios_lock(void) {
    while (atomic_fetch_or_explicit(&ios_lock_flag, 1, memory_order_acquire) & 1)
        sched_yield();
}
static inline void ios_unlock(void) {
    atomic_store_explicit(&ios_lock_flag, 0, memory_order_release);
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
/* ios_enter for a wrapper that made its call without looking at the guard (the read and write
 * wrappers, where the look cost a load more): 0 as well when the runtime is already working on
 * this thread (a signal handler's call, the runtime's own I/O), which then passes through
 * unrecorded, only timed. */
static inline int ios_enter_unguarded(void) {
    if (ios_in_runtime)
        return 0;
    return ios_enter();
}
static inline void ios_leave(void) {
    ios_unlock();
    ios_guard(0);
}

/* Every wrapper reads the clock twice: through the GOT, not a PLT stub (a jump less each). Only
 * this function: -fno-plt for all would bind every libc function the library calls at load
 * time, 24,000 instructions more for every process. */
extern int clock_gettime(clockid_t clock, struct timespec *ts) __attribute__((noplt));
/* So are those of the lookup of a path named before (stat, open), which every process calls
 * anyway: bound at load time, they spare the lazy binding's first call too. */
extern size_t strlen(const char *s) __attribute__((noplt));
extern int memcmp(const void *a, const void *b, size_t n) __attribute__((noplt));

/* CLOCK_MONOTONIC in nanoseconds: the read and write wrappers' times (IOS_TIMED_CALL_NS),
 * integers until a record takes them in seconds (a double made before the real call was kept on
 * the stack and read back at each use). */
static inline int64_t ios_ns_of(const struct timespec *ts) {
    return ts->tv_sec * 1000000000 + ts->tv_nsec;
}
static inline int64_t ios_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ios_ns_of(&ts);
}
/* Seconds since the runtime started of a time of ios_now_ns, as the records keep times. */
extern int64_t ios_origin_ns IOS_HIDDEN; /* CLOCK_MONOTONIC at start, in nanoseconds */
static inline double ios_seconds(int64_t ns) { return (double)(ns - ios_origin_ns) * 1e-9; }
static inline double ios_now(void) { return ios_seconds(ios_now_ns()); }

/* Darshan's settings (config.c reads them: its file, then its variables, which override). */
struct ios_config {
    double modmem_mib;                /* MODMEM: record memory, shared by all modules */
    double namemem_mib;               /* NAMEMEM: record-name memory */
    int64_t mem_alignment;            /* MEM_ALIGNMENT (DARSHAN_MEMALIGN) */
    uint64_t mem_align_mask;          /* its ios_align_mask */
    int disable_shared_redux;         /* DISABLE_SHARED_REDUCTION */
    char **exclude_dirs;              /* path prefixes never recorded (NULL-terminated) */
    uint64_t exclude_second_bytes[4]; /* the set of their second bytes (ios_set_excludes) */
    int exclude_dirs_default;         /* exclude_dirs are Darshan's defaults (not the variable) */
    int name_includes;                /* NAME_INCLUDE rules: an excluded directory's path may
                                         be recorded after all (ios_config_refuses decides) */
    uint64_t mod_disabled;            /* bit 1 << module id: records none (this rank's) */
    double dxt_small_trigger;         /* DXT_SMALL_IO_TRIGGER; negative: not set */
    double dxt_unaligned_trigger;     /* DXT_UNALIGNED_IO_TRIGGER; likewise */
    size_t dxt_mem[2];                /* bytes of each DXT module (IOS_DXT_<API>) */
    char *jobid_env;                  /* JOBID: the variable of the job id; NULL: SLURM_JOB_ID */
    char *log_path;                   /* LOGPATH; NULL: not set */
    char *mmap_log_path;              /* MMAP_LOGPATH; NULL: not set */
};
extern struct ios_config ios_config IOS_HIDDEN;

/* Reads the configuration (at start, before anything is recorded), with one warning line for
 * each setting it ignores. */
void ios_config_read(void) IOS_HIDDEN;
/* APP_EXCLUDE (and not APP_INCLUDE): the program app (argv[0]) is not instrumented at all. */
int ios_config_app_excluded(const char *app) IOS_HIDDEN;
/* The process's rank is known (0 without MPI): the rank rules apply, DUMP_CONFIG on rank 0. */
void ios_config_set_rank(int rank) IOS_HIDDEN;
/* Whether module mod may make a record named name (a record's creation asks, never a call on
 * a file): 0, or why not. Call under the lock; ios_config_count_record once it is made. */
enum { IOS_REFUSED_BY_RULE = 1, IOS_REFUSED_FULL = 2 /* MAX_RECORDS: the module is partial */ };
int ios_config_refuses(int mod, const char *name) IOS_HIDDEN;
void ios_config_count_record(int mod) IOS_HIDDEN;
void ios_config_forget_records(void) IOS_HIDDEN; /* a forked child's records start anew */

/* ---- records and names ------------------------------------------------------------------ */
uint64_t ios_hash(const unsigned char *k, size_t length, uint64_t level) IOS_HIDDEN;
uint64_t ios_record_id(const char *name) IOS_HIDDEN;

/* Sets the path prefixes never recorded (NULL-terminated; NULL: none). */
void ios_set_excludes(char **dirs) IOS_HIDDEN;
/* Whether path lies under an excluded directory (and not under a default inclusion). */
int ios_under_excluded_dir(const char *path) IOS_HIDDEN;
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
#define IOS_PATH_CACHE_SLOTS 1024 /* a power of two */
/* Inline, as the lookup below: a stat or an open of a path named before is mostly these two. */
static inline uint64_t ios_path_key(const char *path, size_t len) {
    const uint64_t m = 0x9e3779b97f4a7c15ULL;
    uint64_t h = (uint64_t)len * m, w;
    if (len >= 8) { /* a folder's files differ at the end: the last word always counts */
        memcpy(&w, path, sizeof w);
        h = (h ^ w) * m;
        memcpy(&w, path + len / 2 - 4, sizeof w);
        h = (h ^ w) * m;
        memcpy(&w, path + len - 8, sizeof w);
        h = (h ^ w) * m;
    } else {
        for (size_t i = 0; i < len; i++)
            h = (h ^ (unsigned char)path[i]) * m;
    }
    return h ^ (h >> 29);
}
/* 1 with *val when path (len bytes, key from ios_path_key) is remembered, else 0. */
static inline int ios_path_cache_get(const struct ios_path_cache *c, const char *path, size_t len,
                                     uint64_t key, void **val) {
    const struct ios_path_cache_slot *s;
    if (!c->slots)
        return 0;
    s = &c->slots[key & (IOS_PATH_CACHE_SLOTS - 1)];
    if (s->key != key || s->len != len || memcmp(s->path, path, len) != 0)
        return 0;
    *val = s->val;
    return 1;
}
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
/* Whether the record memory is spent for records of size bytes: it never comes back (until a
 * fork's reset), so a module then makes no record of that size again. */
int ios_record_memory_spent(size_t size) IOS_HIDDEN;
/* What ios_reserve_record does with a new name once the memory is spent (its rules, the partial
 * flag), without the name's record id: it refuses it. */
void ios_refuse_record(int mod, const char *name) IOS_HIDDEN;
const char *ios_record_name(uint64_t id) IOS_HIDDEN;
/* Darshan's FILE_ALIGNMENT: block size of the file system holding path. */
int64_t ios_file_alignment(const char *path) IOS_HIDDEN;

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
    double last = *last_end, from = t1 > last ? t1 : last;
    *timer += t2 - from;
    *last_end = t2 > last ? t2 : last;
}

/* The hot read and write paths keep a direction's times in nanoseconds (ios_now_ns) beside
 * the record's seconds: comparisons of integers in registers, and a time converted only when
 * the record takes it. */
struct ios_rw_ns {
    int64_t first;    /* the earliest start; 0: none yet (the clock is never 0) */
    int64_t last_end; /* the latest end, for the timer's overlap */
};
/* ios_first_start in nanoseconds: *start (seconds) takes ns when it is the earliest. */
static inline void ios_first_start_ns(double *start, struct ios_rw_ns *rt, int64_t ns) {
    if ((uint64_t)rt->first - 1 >= (uint64_t)ns) {
        rt->first = ns;
        *start = ios_seconds(ns);
    }
}
/* ios_timer_add in nanoseconds; seconds: ns2 - ns1 in seconds, which the usual case adds (an
 * operation that starts after the last one ended; the caller has it for the longest time). */
static inline void ios_timer_add_ns(double *timer, int64_t ns1, int64_t ns2, double seconds,
                                    struct ios_rw_ns *rt) {
    int64_t last = rt->last_end;
    if (IOS_LIKELY(ns1 >= last)) {
        *timer += seconds;
        rt->last_end = ns2;
    } else {
        *timer += (double)(ns2 - last) * 1e-9;
        rt->last_end = ns2 > last ? ns2 : last;
    }
}

/* Frequencies of up to 32 distinct non-zero values (access sizes or strides) per file; the four
 * most common are written at shutdown. Zero is never kept, so it is not counted either, and
 * does not take a slot (Darshan counts it in one of its 32, then drops it). */
struct ios_value_counts {
    int64_t value[IOS_CV_SLOTS]; /* an unused slot holds 0 */
    int64_t count[IOS_CV_SLOTS];
    int n, last; /* last: the slot counted last, outside the inline path */
    int top;     /* the slot of the record's most common value (its vals[0]), once it has one */
};
/* Counts v, and keeps the record's four most common values (vals, counts) current at every
 * moment, in the order ios_common_merge gives: a memory-mapped log's record is whole whenever
 * the process is killed (without one, shutdown recomputes them from vc all the same). The
 * record's counts are its values' counts in vc. Inline for the usual case: v is the record's most
 * common value, which stays first with one more. */
void ios_value_count_slow(struct ios_value_counts *vc, int64_t v, int64_t *vals,
                          int64_t *counts) IOS_HIDDEN;
/* Moves the value vc counted last into the record's four slots where it now ranks. */
void ios_common_live(int64_t *vals, int64_t *counts, struct ios_value_counts *vc) IOS_HIDDEN;
static inline void ios_value_count(struct ios_value_counts *vc, int64_t v, int64_t *vals,
                                   int64_t *counts) {
    if (v == 0)
        return;
    if (IOS_LIKELY(vals[0] == v)) { /* v != 0: an unused slot never matches */
        counts[0]++;
        vc->count[vc->top]++;
    } else {
        ios_value_count_slow(vc, v, vals, counts);
    }
}
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
/* A module's region to be grown at its end (DXT's), made now if need be: its start, and in *len
 * the header's count of its bytes; NULL without a mapped log. */
unsigned char *ios_mmap_tail(int mod, uint64_t **len) IOS_HIDDEN;
int ios_mmap_rank(void) IOS_HIDDEN; /* the rank the mapped log's records are given */
void ios_mmap_set_partial(uint64_t flags) IOS_HIDDEN;
const char *ios_mmap_path(void) IOS_HIDDEN; /* NULL while no file is made */
/* An MPI job: this process's rank, the job's size and id, for its mapped log. */
void ios_mmap_set_rank(int rank, int nprocs, int64_t jobid) IOS_HIDDEN;
/* After the normal log: the mapped one is removed, or kept when the normal one failed. */
void ios_mmap_close(int keep) IOS_HIDDEN;
/* In a forked child: let go of the parent's mapped log without touching it. */
void ios_mmap_forget(void) IOS_HIDDEN;
/* The mapped log written as this process's log (its regions zlib streams of stored blocks), named
 * as ios_job_log_path names logs, into out; 0, or -1 with a reason in *why. Safe in a signal
 * handler: no allocation, no stdio, no lock; call with the runtime's lock held. _exit and exec end
 * a process image so. */
int ios_mmap_write_log(char *out, size_t outlen, const char **why) IOS_HIDDEN;
/* Before an exec: the file goes, its mapping stays. If the exec fails, ios_mmap_relink makes
 * the file again from the mapping and maps it in the mapping's place. */
void ios_mmap_unlink(void) IOS_HIDDEN;
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
    int64_t *bin; /* its read bin (bins[0][b]); its write bin is IOS_HEATMAP_BINS further */
    /* [from, to) in nanoseconds (ios_now_ns), a little inside: a time there is surely in it. */
    int64_t from_ns, to_ns;
};
extern struct ios_heatmap ios_heatmaps[IOS_HEATMAP_NAPIS] IOS_HIDDEN;
void ios_heatmap_add_slow(int api, int is_write, int64_t bytes, double t1, double t2) IOS_HIDDEN;
/* Adds bytes moved during [t1, t2]; inline because it runs on every read and write. */
static inline void ios_heatmap_add(int api, int is_write, int64_t bytes, double t1, double t2) {
    struct ios_heatmap *h = &ios_heatmaps[api];
    /* Most operations start and end in the bin the last one fell in. */
    if (IOS_LIKELY(t1 >= h->from && t2 < h->to))
        h->bin[is_write * IOS_HEATMAP_BINS] += bytes;
    else
        ios_heatmap_add_slow(api, is_write, bytes, t1, t2);
}

/* ios_heatmap_add of an operation from ns1 to ns2 (ios_now_ns), which the usual case compares
 * as integers: the read and write wrappers keep their times so. */
static inline void ios_heatmap_add_ns(int api, int is_write, int64_t bytes, int64_t ns1,
                                      int64_t ns2) {
    struct ios_heatmap *h = &ios_heatmaps[api];
    if (IOS_LIKELY(ns1 >= h->from_ns && ns2 < h->to_ns))
        h->bin[is_write * IOS_HEATMAP_BINS] += bytes;
    else
        ios_heatmap_add_slow(api, is_write, bytes, ios_seconds(ns1), ios_seconds(ns2));
}

/* ---- DXT traces (dxt.c) ------------------------------------------------------------------ */
enum { IOS_DXT_POSIX, IOS_DXT_MPIIO, IOS_DXT_NAPIS };
extern int ios_dxt_flags IOS_HIDDEN; /* bit 1 << IOS_DXT_<API>: traced; 0 (usual): no tracing */
/* A module's segments, in its region of the memory-mapped log (else in the heap, the same
 * layout), as records of Darshan's format that the log's readers read at every instruction:
 * each record holds one run of a file's calls, its writes then its reads, and only the last one
 * grows. A segment of the last record's file is placed after it, the region's length grows by
 * it (a tail shorter than a record's head, which the readers take for the region's end), then
 * the record counts it; any other segment starts a record (dxt.c). */
struct ios_dxt_log {
    struct ios_dxt_record_head *open; /* the last record */
    uint64_t open_id;
    int open_dirs;        /* bit 1 << is_write: the directions the last record takes; 0: none */
    unsigned char *end;   /* where the next segment goes: the region's end */
    unsigned char *limit; /* the last place a segment fits: appended up to here without a look */
    uint64_t *len;        /* the region's length, in the log's header */
};
extern struct ios_dxt_log ios_dxt_logs[IOS_DXT_NAPIS] IOS_HIDDEN;
void ios_dxt_add_slow(int api, uint64_t id, int is_write, int64_t offset, int64_t length, double t1,
                      double t2) IOS_HIDDEN;
/* seg added to the last record: placed, in the region, then counted. */
static inline void ios_dxt_append(struct ios_dxt_log *l, int is_write, struct ios_dxt_segment seg) {
    *(struct ios_dxt_segment *)l->end = seg;
    l->end += sizeof seg;
    atomic_signal_fence(memory_order_seq_cst);
    *l->len += sizeof seg;
    atomic_signal_fence(memory_order_seq_cst);
    if (is_write)
        l->open->write_count++;
    else {
        l->open->read_count++;
        l->open_dirs = 1; /* reads only, after the writes */
    }
}
/* A segment of the file of record id; inside ios_enter(). */
static inline void ios_dxt_add(int api, uint64_t id, int is_write, int64_t offset, int64_t length,
                               double t1, double t2) {
    struct ios_dxt_log *l = &ios_dxt_logs[api];
    if (IOS_UNLIKELY(!(l->open_dirs & (1 << is_write)) || l->open_id != id || l->end > l->limit))
        ios_dxt_add_slow(api, id, is_write, offset, length, t1, t2);
    else
        ios_dxt_append(l, is_write, (struct ios_dxt_segment){offset, length, t1, t2});
}
void ios_dxt_posix_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_dxt_mpiio_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_dxt_posix_reset(void) IOS_HIDDEN;
void ios_dxt_mpiio_reset(void) IOS_HIDDEN;
/* ---- modules at shutdown ------------------------------------------------------------------ */
void ios_posix_collect(struct ios_record_set *set) IOS_HIDDEN;
/* Copies out, as they are, the records of files, a map of record id -> a module's file struct
 * whose first member points to its record. */
void ios_collect_records(struct ios_record_set *set, int mod, size_t rec_size,
                         const struct ios_map *files) IOS_HIDDEN;
void ios_mpiio_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_stdio_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_h5f_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_h5d_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_pnetcdf_file_collect(struct ios_record_set *set) IOS_HIDDEN;
void ios_pnetcdf_var_collect(struct ios_record_set *set) IOS_HIDDEN;
/* Writes the heatmap records, rebinned to bin_width and nbins from the process's own time
 * origin, which lies shift seconds after the job's. */
void ios_heatmap_collect(struct ios_record_set *set, double bin_width, int64_t nbins,
                         double shift) IOS_HIDDEN;
double ios_heatmap_min_width(double end_time) IOS_HIDDEN;
/* The bins of width seconds that cover run_time (at least one), and a record's size with them. */
int64_t ios_heatmap_nbins(double run_time, double width) IOS_HIDDEN;
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
void ios_h5d_reset(void) IOS_HIDDEN;
void ios_pnetcdf_file_reset(void) IOS_HIDDEN;
void ios_pnetcdf_var_reset(void) IOS_HIDDEN;
void ios_heatmap_reset(void) IOS_HIDDEN;
/* The runtime's side of each module (modules.def): its records copied out at shutdown (NULL: the
 * heatmap, rebinned then, ios_heatmap_collect) and forgotten in a forked child. */
struct ios_module_ops {
    void (*collect)(struct ios_record_set *set);
    void (*reset)(void);
};
extern const struct ios_module_ops ios_module_ops[IOS_NMODULES] IOS_HIDDEN;

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

/* ---- the job record (jobinfo.c) ---------------------------------------------------------- */
void ios_job_save_args(int argc, char **argv) IOS_HIDDEN;
const char *ios_job_app_name(void) IOS_HIDDEN; /* argv[0], as APP_EXCLUDE sees it */
void ios_job_begin(void) IOS_HIDDEN;           /* start time and time origin: now */
void ios_job_set_fork_parent(pid_t parent) IOS_HIDDEN;
struct timespec ios_job_start(void) IOS_HIDDEN;
int64_t ios_job_id(void) IOS_HIDDEN;
void ios_job_exe_mounts(char *out, size_t outlen) IOS_HIDDEN;
void ios_job_metadata(char *out, size_t outlen) IOS_HIDDEN;
int ios_job_log_path(int64_t jobid, char *path, size_t pathlen, char *stem, size_t stemlen,
                     const char **why) IOS_HIDDEN;
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
/* A line of the configuration's (a setting ignored, DUMP_CONFIG): every one is written. */
void ios_warn_config(const char *fmt, ...) IOS_HIDDEN __attribute__((format(printf, 1, 2)));
/* The real function name of a wrapped library (MPI, HDF5, PnetCDF): it exists whenever the
 * program could call the wrapper, so without it the wrapper stops, saying why. */
void *ios_next_symbol(const char *name, const char *library) IOS_HIDDEN;
/* A stand-in for a missing real function (one warning): calling it fails with -1 and ENOSYS. */
void *ios_missing_symbol(const char *name, const char *library) IOS_HIDDEN;

/* Writes the job's log; returns non-zero when this rank's part of it could not be written. */
int ios_write_log(const struct ios_comm *comm) IOS_HIDDEN;
/* Warns that the log path ("" if none was named) could not be written, why, and where the
 * records stay: in the memory-mapped log, or nowhere. */
void ios_warn_log_lost(const char *path, const char *why) IOS_HIDDEN;
/* Lets the MPI-IO wrappers record, with the plugin's knowledge of MPI's handles. */
void ios_mpiio_enable(const struct ios_comm *comm) IOS_HIDDEN;
/* The size of an MPI datatype (0: MPI_DATATYPE_NULL, or no MPI plugin), for PnetCDF's vard. */
int64_t ios_mpi_type_bytes(uintptr_t datatype) IOS_HIDDEN;

#endif
