/* POSIX module: what its parts share (posix_records.c: the files and descriptors; posix_open.c:
 * opens, closes, new descriptors; posix_data.c: reads, writes, AIO, mmap, copies in the kernel;
 * posix_meta.c: seeks, syncs, the stat family, rename). The counters are those of Darshan's
 * POSIX v4 record (reference §6.1), with darshan-runtime 3.5.0's semantics. */
#ifndef IOS_POSIX_H
#define IOS_POSIX_H

#include "wrap.h"

#include <fcntl.h>
#include <stdlib.h>

enum { IO_NONE, IO_READ, IO_WRITE };

struct posix_file { /* the record first: ios_file_by_name */
    struct ios_posix_record *rec;
    int64_t offset;                            /* file offset for read/write without offset */
    int64_t last_byte_read, last_byte_written; /* reset at open and close */
    int last_io;                               /* IO_READ or IO_WRITE, for RW_SWITCHES */
    uint64_t align_mask;                       /* ios_align_mask of POSIX_FILE_ALIGNMENT */
    struct ios_rw_ns rw[2];                    /* of reads [0] and writes [1] (fsync's too) */
    int64_t longest[2];                        /* ns of POSIX_F_MAX_READ_TIME, _WRITE_TIME */
    double last_meta_end;
    struct posix_sizes *sizes; /* made at the first read or write: most files see none */
    uint64_t id;               /* the record's, for DXT: one load less than through rec */
};

/* The access sizes and strides of a file's reads and writes (1 KiB). */
struct posix_sizes {
    struct ios_value_counts access, stride;
};

/* fd -> file, read without the lock on the hot path: entries are pointer-sized stores, and a
 * file's state lives until the process ends. Sized once, backed lazily by the kernel; made under
 * the lock, and its size (0 until then) published after it (release) so that a thread that sees
 * the size sees the table (acquire): one test, of the size, asks both. */
extern struct posix_file *_Atomic *_Atomic ios_posix_fd_table IOS_HIDDEN;
extern _Atomic unsigned ios_posix_fd_table_size IOS_HIDDEN;

/* The table's entry of fd, or NULL when it has none. */
static inline struct posix_file *_Atomic *posix_fd_slot(int fd) {
    if ((unsigned)fd >= atomic_load_explicit(&ios_posix_fd_table_size, memory_order_acquire))
        return NULL;
    return &atomic_load_explicit(&ios_posix_fd_table, memory_order_relaxed)[fd];
}

/* The file of a tracked descriptor, or NULL. */
static inline struct posix_file *posix_fd_lookup(int fd) {
    if ((unsigned)fd >= atomic_load_explicit(&ios_posix_fd_table_size, memory_order_acquire))
        return NULL;
    return atomic_load_explicit(
        &atomic_load_explicit(&ios_posix_fd_table, memory_order_relaxed)[fd], memory_order_relaxed);
}

/* The file of a tracked descriptor, unless the runtime itself is working on this thread. The
 * state is checked only inside the lock (ios_enter): a descriptor is tracked only while the
 * runtime records, and after shutdown a call on one is timed for nothing. A check more, before
 * the call, cost every read and write three instructions. */
static inline struct posix_file *posix_fd_file(int fd) {
    return !ios_in_runtime ? posix_fd_lookup(fd) : NULL;
}

/* Makes the table at the first descriptor mapped; 0, or -1 without memory. */
int ios_posix_fd_table_init(void) IOS_HIDDEN;

/* fd names f from now on; call inside ios_enter(). */
static inline void posix_map_fd(int fd, struct posix_file *f) {
    if (!atomic_load_explicit(&ios_posix_fd_table, memory_order_relaxed) &&
        ios_posix_fd_table_init() != 0)
        return;
    struct posix_file *_Atomic *table =
        atomic_load_explicit(&ios_posix_fd_table, memory_order_relaxed);
    if ((unsigned)fd < atomic_load_explicit(&ios_posix_fd_table_size, memory_order_relaxed))
        atomic_store_explicit(&table[fd], f, memory_order_relaxed);
}

/* fd no longer names f: the entry is cleared unless another thread has mapped the number since
 * (lock-free: each entry is atomic). */
static inline void posix_unmap_slot(struct posix_file *_Atomic *slot, struct posix_file *f) {
    atomic_compare_exchange_strong_explicit(slot, &f, NULL, memory_order_relaxed,
                                            memory_order_relaxed);
}
static inline void posix_unmap_fd(int fd, struct posix_file *f) {
    struct posix_file *_Atomic *slot = posix_fd_slot(fd);
    if (slot)
        posix_unmap_slot(slot, f);
}
/* Finds or creates the record of a normalized name; call inside ios_enter()/ios_leave(). */
struct posix_file *ios_posix_file_by_name(const char *name) IOS_HIDDEN;
/* The file of a record already made, or NULL; call inside ios_enter(). */
struct posix_file *ios_posix_recorded(uint64_t id) IOS_HIDDEN;
/* The file of an absolute path not looked up before, now named (normalized, hashed) and
 * remembered, the program's errno kept; NULL when the path is not recorded. Call inside
 * ios_enter(). */
struct posix_file *ios_posix_named_first(const char *path) IOS_HIDDEN;
extern struct ios_path_cache ios_posix_absolute_paths IOS_HIDDEN;
/* posix_enter_with_file of a relative path, made absolute first, outside the lock (getcwd,
 * readlink), and not remembered: the working directory may change. */
int ios_posix_enter_with_relative(int dirfd, const char *path, struct posix_file **f) IOS_HIDDEN;
/* Enters the runtime with the file of path (relative to dirfd; not NULL: a call that succeeded
 * named it), or NULL when it is not recorded; 0 when the runtime is not entered. Leaves errno as
 * it was. Inline for an absolute path named before: the lookup of what it came to is most of a
 * stat. */
static inline __attribute__((always_inline)) int posix_enter_with_file(int dirfd, const char *path,
                                                                       struct posix_file **f) {
    if (path[0] != '/')
        return ios_posix_enter_with_relative(dirfd, path, f);
    if (!ios_enter())
        return 0;
    size_t len = strlen(path);
    uint64_t key = ios_path_key(path, len);
    void *known;
    *f = ios_path_cache_get(&ios_posix_absolute_paths, path, len, key, &known)
             ? known
             : ios_posix_named_first(path); /* its key again: one register less here */
    return 1;
}
/* Forgets the AIO requests in flight (a forked child's are not its own). */
void ios_posix_aio_reset(void) IOS_HIDDEN;

static inline void posix_meta_time(struct posix_file *f, double t1, double t2) {
    ios_timer_add(&f->rec->fcounters[POSIX_F_META_TIME], t1, t2, &f->last_meta_end);
}

/* An open, dup or fileno: counts the open and maps fd. reset: a real open restarts offsets.
 * Inline: an open's arguments are most of what a call would pass. */
static inline __attribute__((always_inline)) void posix_count_open(struct posix_file *f, int fd,
                                                                   int mode, int extra_counter,
                                                                   int reset, double t1,
                                                                   double t2) {
    int64_t *c = f->rec->counters;
    double *fc = f->rec->fcounters;
    if (mode)
        c[POSIX_MODE] = mode;
    if (reset)
        f->offset = f->last_byte_read = f->last_byte_written = 0;
    c[POSIX_OPENS]++;
    if (extra_counter >= 0)
        c[extra_counter]++;
    ios_first_start(&fc[POSIX_F_OPEN_START_TIMESTAMP], t1);
    fc[POSIX_F_OPEN_END_TIMESTAMP] = t2;
    posix_meta_time(f, t1, t2);
    posix_map_fd(fd, f);
}

static inline int posix_buf_aligned(const void *buf) {
    return ios_aligned((uintptr_t)buf, ios_config.mem_align_mask, ios_config.mem_alignment);
}

/* A read or write of ret bytes at offset (-1: at the file offset) from ns1 to ns2 (ios_now_ns),
 * Darshan's POSIX semantics; its memory is aligned when buf is (NULL: no buffer, or vectors)
 * and mem_aligned holds (the vectors'). buf is looked at here, inside the lock: a flag made
 * before the lock would live on the stack. Inlined in every read and write wrapper, where the
 * direction's branches fold away: a call and its register shuffle were a tenth of what a
 * wrapper adds. */
static inline __attribute__((always_inline)) void posix_count_rw(struct posix_file *f, int is_write,
                                                                 int64_t offset, int64_t ret,
                                                                 const void *buf, int mem_aligned,
                                                                 int64_t ns1, int64_t ns2) {
    if (!ios_enter_unguarded())
        return;
    int64_t *c = f->rec->counters;
    double *fc = f->rec->fcounters;
    /* The times in nanoseconds (integers that stay in registers), in seconds where the record
     * takes them; first, while they are in registers: the slow paths' calls below would make
     * the compiler save and reload them. */
    int start = is_write ? POSIX_F_WRITE_START_TIMESTAMP : POSIX_F_READ_START_TIMESTAMP;
    ios_first_start_ns(&fc[start], &f->rw[is_write], ns1);
    double t2 = ios_seconds(ns2);
    fc[is_write ? POSIX_F_WRITE_END_TIMESTAMP : POSIX_F_READ_END_TIMESTAMP] = t2;
    int64_t took = ns2 - ns1;
    double seconds = (double)took * 1e-9;
    if (f->longest[is_write] < took) {
        f->longest[is_write] = took;
        fc[is_write ? POSIX_F_MAX_WRITE_TIME : POSIX_F_MAX_READ_TIME] = seconds;
        c[is_write ? POSIX_MAX_WRITE_TIME_SIZE : POSIX_MAX_READ_TIME_SIZE] = ret;
    }
    ios_timer_add_ns(&fc[is_write ? POSIX_F_WRITE_TIME : POSIX_F_READ_TIME], ns1, ns2, seconds,
                     &f->rw[is_write]);
    ios_heatmap_add_ns(IOS_HEATMAP_POSIX, is_write, ret, ns1, ns2);
    int64_t this_offset = offset >= 0 ? offset : f->offset;
    if (IOS_UNLIKELY(ios_dxt_flags & (1 << IOS_DXT_POSIX)))
        ios_dxt_add(IOS_DXT_POSIX, f->id, is_write, this_offset, ret, ios_seconds(ns1), t2);
    int64_t *last_byte = is_write ? &f->last_byte_written : &f->last_byte_read;
    /* Darshan's tests folded into one difference: sequential when the access starts after the
     * last byte (gap >= 0), consecutive when right after it (gap 0, no stride then), a stride
     * counted only once a byte was accessed (last != 0). */
    int64_t last = *last_byte, end = this_offset + ret - 1, stride = 0;
    int64_t gap = this_offset - last - 1;
    if (gap >= 0) {
        c[is_write ? POSIX_SEQ_WRITES : POSIX_SEQ_READS]++;
        if (gap == 0)
            c[is_write ? POSIX_CONSEC_WRITES : POSIX_CONSEC_READS]++;
        else if (last != 0)
            stride = gap;
    }
    *last_byte = end;
    f->offset = end + 1;
    int max_byte = is_write ? POSIX_MAX_BYTE_WRITTEN : POSIX_MAX_BYTE_READ;
    if (c[max_byte] < end)
        c[max_byte] = end;
    c[is_write ? POSIX_BYTES_WRITTEN : POSIX_BYTES_READ] += ret;
    c[is_write ? POSIX_WRITES : POSIX_READS]++;
    c[(is_write ? POSIX_SIZE_WRITE_0_100 : POSIX_SIZE_READ_0_100) + ios_size_bin(ret)]++;
    struct posix_sizes *sizes = f->sizes;
    if (IOS_UNLIKELY(!sizes))
        sizes = f->sizes = calloc(1, sizeof *sizes); /* none: the four commonest go unkept */
    if (IOS_LIKELY(sizes != NULL)) {
        ios_value_count(&sizes->access, ret, &c[POSIX_ACCESS1_ACCESS], &c[POSIX_ACCESS1_COUNT]);
        ios_value_count(&sizes->stride, stride, &c[POSIX_STRIDE1_STRIDE], &c[POSIX_STRIDE1_COUNT]);
    }
    if (!posix_buf_aligned(buf) || !mem_aligned)
        c[POSIX_MEM_NOT_ALIGNED]++;
    if (!ios_aligned((uint64_t)this_offset, f->align_mask, c[POSIX_FILE_ALIGNMENT]))
        c[POSIX_FILE_NOT_ALIGNED]++;
    if (f->last_io != (is_write ? IO_WRITE : IO_READ)) { /* mostly the same as the last */
        if (f->last_io != IO_NONE)
            c[POSIX_RW_SWITCHES]++;
        f->last_io = is_write ? IO_WRITE : IO_READ;
    }
    ios_leave();
}

/* Times a call on a tracked fd and, if it succeeded, runs the statement on f inside the lock
 * (with the times in seconds, t1 and t2, and in nanoseconds, ns1 and ns2). */
#define POSIX_WRAP_FD_META(name, type, call, ok, stmt)                                             \
    struct posix_file *f = posix_fd_file(fd);                                                      \
    if (!f) {                                                                                      \
        IOS_REAL(name);                                                                            \
        return call;                                                                               \
    }                                                                                              \
    IOS_REAL_RECORDING(name);                                                                      \
    IOS_TIMED_CALL_NS(type, ret, call);                                                            \
    if ((ok) && ios_enter()) {                                                                     \
        __attribute__((unused)) double t1 = ios_seconds(ns1), t2 = ios_seconds(ns2);               \
        stmt;                                                                                      \
        ios_leave();                                                                               \
    }                                                                                              \
    return ret

#endif
