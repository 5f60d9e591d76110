/* POSIX module: wrappers of the POSIX I/O calls and the per-file counters Darshan's POSIX v4
 * record holds (reference §6.1). Semantics follow darshan-runtime 3.5.0. */
#include "iostudy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <unistd.h>

enum { IO_NONE, IO_READ, IO_WRITE };

struct posix_file { /* the record first: ios_file_by_name */
    struct ios_posix_record *rec;
    int64_t offset;                            /* file offset for read/write without offset */
    int64_t last_byte_read, last_byte_written; /* reset at open and close */
    int last_io;                               /* IO_READ or IO_WRITE, for RW_SWITCHES */
    uint64_t align_mask;                       /* ios_align_mask of POSIX_FILE_ALIGNMENT */
    double last_read_end, last_write_end, last_meta_end;
    struct posix_sizes *sizes; /* made at the first read or write: most files see none */
};

/* The access sizes and strides of a file's reads and writes (1 KiB). */
struct posix_sizes {
    struct ios_value_counts access, stride;
};

static struct ios_map files_by_id;
/* fd -> file, read without the lock on the hot path: entries are pointer-sized stores, and a
 * file's state lives until the process ends. Sized once, backed lazily by the kernel; made under
 * the lock, and published after its size (release) so that a thread that sees the table sees
 * its size (acquire). */
static struct posix_file *_Atomic *_Atomic fd_table;
static int fd_table_size;

static int fd_table_init(void) {
    struct rlimit rl;
    rlim_t n = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > n)
        n = rl.rlim_max;
    if (n > (1u << 20))
        n = 1u << 20;
    void *table = IOS_CALL(mmap)(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED)
        return -1;
    fd_table_size = (int)n;
    atomic_store_explicit(&fd_table, table, memory_order_release);
    return 0;
}

/* The file of a tracked descriptor, or NULL. */
static inline struct posix_file *fd_lookup(int fd) {
    struct posix_file *_Atomic *table = atomic_load_explicit(&fd_table, memory_order_acquire);
    if (!table || (unsigned)fd >= (unsigned)fd_table_size)
        return NULL;
    return atomic_load_explicit(&table[fd], memory_order_relaxed);
}

/* The file of a tracked descriptor, unless the runtime itself is working on this thread. The
 * state is checked only inside the lock (ios_enter): a descriptor is tracked only while the
 * runtime records, and after shutdown a call on one is timed for nothing. A check more, before
 * the call, cost every read and write three instructions. */
static inline struct posix_file *fd_file(int fd) { return !ios_in_runtime ? fd_lookup(fd) : NULL; }

/* Call inside ios_enter(). */
static void map_fd(int fd, struct posix_file *f) {
    if (!atomic_load_explicit(&fd_table, memory_order_relaxed) && fd_table_init() != 0)
        return;
    struct posix_file *_Atomic *table = atomic_load_explicit(&fd_table, memory_order_relaxed);
    if ((unsigned)fd < (unsigned)fd_table_size)
        atomic_store_explicit(&table[fd], f, memory_order_relaxed);
}

/* fd no longer names f: the entry is cleared unless another thread has mapped the number since
 * (lock-free: each entry is atomic). */
static void fd_unmap(int fd, struct posix_file *f) {
    struct posix_file *_Atomic *table = atomic_load_explicit(&fd_table, memory_order_acquire);
    if (table && (unsigned)fd < (unsigned)fd_table_size)
        atomic_compare_exchange_strong_explicit(&table[fd], &f, NULL, memory_order_relaxed,
                                                memory_order_relaxed);
}

/* Finds or creates the record of a normalized name; call inside ios_enter()/ios_leave(). */
static struct posix_file *file_by_name(const char *name) {
    int created = 0;
    struct posix_file *f =
        ios_file_by_name(&files_by_id, IOS_MOD_POSIX, name, sizeof *f, sizeof *f->rec, &created);
    if (f && created) {
        f->rec->counters[POSIX_MEM_ALIGNMENT] = ios_config.mem_alignment;
        f->rec->counters[POSIX_FILE_ALIGNMENT] = ios_file_alignment(name);
        f->align_mask = ios_align_mask(f->rec->counters[POSIX_FILE_ALIGNMENT]);
    }
    return f;
}

static inline void meta_time(struct posix_file *f, double t1, double t2) {
    ios_timer_add(&f->rec->fcounters[POSIX_F_META_TIME], t1, t2, &f->last_meta_end);
}

/* An open, dup or fileno: counts the open and maps fd. reset: a real open restarts offsets. */
static void count_open(struct posix_file *f, int fd, int mode, int extra_counter, int reset,
                       double t1, double t2) {
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
    meta_time(f, t1, t2);
    map_fd(fd, f);
}

/* The file of an absolute path: remembered, or named (normalized, hashed) once; NULL when the
 * path is not recorded. Call inside ios_enter(). */
static struct ios_path_cache absolute_paths;

static struct posix_file *file_of_absolute(const char *path) {
    size_t len = strlen(path);
    uint64_t key = ios_path_key(path, len);
    void *known;
    if (ios_path_cache_get(&absolute_paths, path, len, key, &known))
        return known;
    char scratch[PATH_MAX];
    const char *name = ios_absolute_name(path, len, scratch, sizeof scratch);
    struct posix_file *f = name ? file_by_name(name) : NULL;
    ios_path_cache_put(&absolute_paths, path, len, key, f);
    return f;
}

/* Enters the runtime with the file of path (relative to dirfd), or NULL when it is not recorded;
 * 0 when the runtime is not entered. A relative path is made absolute first, outside the lock
 * (getcwd, readlink), and not remembered: the working directory may change. */
static int enter_with_file(int dirfd, const char *path, struct posix_file **f) {
    if (!path)
        return 0;
    if (path[0] == '/') {
        if (!ios_enter())
            return 0;
        *f = file_of_absolute(path);
        return 1;
    }
    char name[PATH_MAX];
    if (ios_normalize_path(path, dirfd, name, sizeof name) != 0 || !ios_enter())
        return 0;
    *f = file_by_name(name);
    return 1;
}

static void opened(int fd, int dirfd, const char *path, int mode, double t1, double t2) {
    int saved = errno;
    struct posix_file *f;
    ios_guard(1);
    if (enter_with_file(dirfd, path, &f)) {
        int first_open = f && f->rec->counters[POSIX_OPENS] == 0;
        if (f)
            count_open(f, fd, mode, -1, 1, t1, t2);
        const char *name = first_open ? ios_record_name(f->rec->base.id) : NULL;
        ios_leave();
        ios_guard(1);
        if (name) /* a file's Lustre layout is taken once, at its first open */
            ios_lustre_file_opened(f->rec->base.id, name, fd);
    }
    ios_guard(0);
    errno = saved;
}

/* A read or write of ret bytes at offset (-1: at the file offset), Darshan's POSIX semantics.
 * Inlined in every read and write wrapper, where the direction's branches fold away: a call
 * and its register shuffle were a tenth of what a wrapper adds. */
static inline __attribute__((always_inline)) void count_rw(struct posix_file *f, int is_write,
                                                           int64_t offset, int64_t ret,
                                                           int mem_aligned, double t1, double t2) {
    if (!ios_enter())
        return;
    int64_t *c = f->rec->counters;
    double *fc = f->rec->fcounters;
    /* The times first, while t1 and t2 are in registers: the calls of the slow paths below
     * would make the compiler save and reload them. */
    int start = is_write ? POSIX_F_WRITE_START_TIMESTAMP : POSIX_F_READ_START_TIMESTAMP;
    ios_first_start(&fc[start], t1);
    fc[is_write ? POSIX_F_WRITE_END_TIMESTAMP : POSIX_F_READ_END_TIMESTAMP] = t2;
    int max_time = is_write ? POSIX_F_MAX_WRITE_TIME : POSIX_F_MAX_READ_TIME;
    if (fc[max_time] < t2 - t1) {
        fc[max_time] = t2 - t1;
        c[is_write ? POSIX_MAX_WRITE_TIME_SIZE : POSIX_MAX_READ_TIME_SIZE] = ret;
    }
    if (is_write)
        ios_timer_add(&fc[POSIX_F_WRITE_TIME], t1, t2, &f->last_write_end);
    else
        ios_timer_add(&fc[POSIX_F_READ_TIME], t1, t2, &f->last_read_end);
    ios_heatmap_add(IOS_HEATMAP_POSIX, is_write, ret, t1, t2);
    int64_t this_offset = offset >= 0 ? offset : f->offset;
    int64_t *last_byte = is_write ? &f->last_byte_written : &f->last_byte_read;
    int64_t last = *last_byte, end = this_offset + ret - 1, stride = 0;
    if (this_offset > last) {
        c[is_write ? POSIX_SEQ_WRITES : POSIX_SEQ_READS]++;
        if (last != 0)
            stride = this_offset - last - 1;
    }
    if (this_offset == last + 1)
        c[is_write ? POSIX_CONSEC_WRITES : POSIX_CONSEC_READS]++;
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
    if (!mem_aligned)
        c[POSIX_MEM_NOT_ALIGNED]++;
    if (!ios_aligned((uint64_t)this_offset, f->align_mask, c[POSIX_FILE_ALIGNMENT]))
        c[POSIX_FILE_NOT_ALIGNED]++;
    if (f->last_io == (is_write ? IO_READ : IO_WRITE))
        c[POSIX_RW_SWITCHES]++;
    f->last_io = is_write ? IO_WRITE : IO_READ;
    ios_leave();
}

static inline int buf_aligned(const void *buf) {
    return ios_aligned((uintptr_t)buf, ios_config.mem_align_mask, ios_config.mem_alignment);
}

static int iov_aligned(const struct iovec *iov, int iovcnt) {
    for (int i = 0; i < iovcnt; i++)
        if (!buf_aligned(iov[i].iov_base))
            return 0;
    return 1;
}

/* ---- wrappers ----------------------------------------------------------------------------------
 */
#define OPEN_MODE(flags, mode)                                                                     \
    do {                                                                                           \
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {                               \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            mode = va_arg(ap, int);                                                                \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

/* Times the real call, then records the open of its result. */
#define WRAP_OPEN(name, call, dirfd, path, mode)                                                   \
    IOS_REAL(name);                                                                                \
    if (!ios_recording())                                                                          \
        return call;                                                                               \
    IOS_TIMED_CALL(int, ret, call);                                                                \
    if (ret >= 0)                                                                                  \
        opened(ret, dirfd, path, mode, t1, t2);                                                    \
    return ret

IOS_EXPORT int open(const char *path, int flags, ...) {
    int mode = 0;
    OPEN_MODE(flags, mode);
    WRAP_OPEN(open, ios_real.open(path, flags, mode), AT_FDCWD, path, mode);
}
IOS_EXPORT int open64(const char *path, int flags, ...) {
    int mode = 0;
    OPEN_MODE(flags, mode);
    WRAP_OPEN(open64, ios_real.open64(path, flags, mode), AT_FDCWD, path, mode);
}
IOS_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    int mode = 0;
    OPEN_MODE(flags, mode);
    WRAP_OPEN(openat, ios_real.openat(dirfd, path, flags, mode), dirfd, path, mode);
}
IOS_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    int mode = 0;
    OPEN_MODE(flags, mode);
    WRAP_OPEN(openat64, ios_real.openat64(dirfd, path, flags, mode), dirfd, path, mode);
}
IOS_EXPORT int __open_2(const char *path, int flags) {
    WRAP_OPEN(__open_2, ios_real.__open_2(path, flags), AT_FDCWD, path, 0);
}
IOS_EXPORT int __open64_2(const char *path, int flags) {
    WRAP_OPEN(__open64_2, ios_real.__open64_2(path, flags), AT_FDCWD, path, 0);
}
IOS_EXPORT int __openat_2(int dirfd, const char *path, int flags) {
    WRAP_OPEN(__openat_2, ios_real.__openat_2(dirfd, path, flags), dirfd, path, 0);
}
IOS_EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
    WRAP_OPEN(__openat64_2, ios_real.__openat64_2(dirfd, path, flags), dirfd, path, 0);
}
IOS_EXPORT int creat(const char *path, mode_t mode) {
    WRAP_OPEN(creat, ios_real.creat(path, mode), AT_FDCWD, path, (int)mode);
}
IOS_EXPORT int creat64(const char *path, mode_t mode) {
    WRAP_OPEN(creat64, ios_real.creat64(path, mode), AT_FDCWD, path, (int)mode);
}

/* Times the real call on a tracked fd and records its transfer. The hot path: no errno work,
 * since recording makes no system call. */
#define WRAP_RW(name, call, is_write, offset, aligned)                                             \
    IOS_REAL(name);                                                                                \
    struct posix_file *f = fd_file(fd);                                                            \
    if (!f)                                                                                        \
        return call;                                                                               \
    IOS_TIMED_CALL(ssize_t, ret, call);                                                            \
    if (ret >= 0)                                                                                  \
        count_rw(f, is_write, offset, ret, aligned, t1, t2);                                       \
    return ret

IOS_EXPORT ssize_t read(int fd, void *buf, size_t count) {
    WRAP_RW(read, ios_real.read(fd, buf, count), 0, -1, buf_aligned(buf));
}
IOS_EXPORT ssize_t write(int fd, const void *buf, size_t count) {
    WRAP_RW(write, ios_real.write(fd, buf, count), 1, -1, buf_aligned(buf));
}
IOS_EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t off) {
    WRAP_RW(pread, ios_real.pread(fd, buf, count, off), 0, off, buf_aligned(buf));
}
IOS_EXPORT ssize_t pwrite(int fd, const void *buf, size_t count, off_t off) {
    WRAP_RW(pwrite, ios_real.pwrite(fd, buf, count, off), 1, off, buf_aligned(buf));
}
IOS_EXPORT ssize_t pread64(int fd, void *buf, size_t count, off64_t off) {
    WRAP_RW(pread64, ios_real.pread64(fd, buf, count, off), 0, off, buf_aligned(buf));
}
IOS_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t off) {
    WRAP_RW(pwrite64, ios_real.pwrite64(fd, buf, count, off), 1, off, buf_aligned(buf));
}
/* _FORTIFY_SOURCE forms: the real ones keep their buffer-overflow check. */
IOS_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen) {
    WRAP_RW(__read_chk, ios_real.__read_chk(fd, buf, count, buflen), 0, -1, buf_aligned(buf));
}
IOS_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen) {
    WRAP_RW(__pread_chk, ios_real.__pread_chk(fd, buf, count, off, buflen), 0, off,
            buf_aligned(buf));
}
IOS_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t off, size_t buflen) {
    WRAP_RW(__pread64_chk, ios_real.__pread64_chk(fd, buf, count, off, buflen), 0, off,
            buf_aligned(buf));
}
IOS_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n) {
    WRAP_RW(readv, ios_real.readv(fd, iov, n), 0, -1, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
    WRAP_RW(writev, ios_real.writev(fd, iov, n), 1, -1, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off) {
    WRAP_RW(preadv, ios_real.preadv(fd, iov, n, off), 0, off, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
    WRAP_RW(pwritev, ios_real.pwritev(fd, iov, n, off), 1, off, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off64_t off) {
    WRAP_RW(preadv64, ios_real.preadv64(fd, iov, n, off), 0, off, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off) {
    WRAP_RW(pwritev64, ios_real.pwritev64(fd, iov, n, off), 1, off, iov_aligned(iov, n));
}
/* offset -1 means "at the file offset" for the v2 calls, exactly as count_rw reads it */
IOS_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags) {
    WRAP_RW(preadv2, ios_real.preadv2(fd, iov, n, off, flags), 0, off, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags) {
    WRAP_RW(pwritev2, ios_real.pwritev2(fd, iov, n, off, flags), 1, off, iov_aligned(iov, n));
}

/* Times a call on a tracked fd and, if it succeeded, runs the statement on f inside the lock. */
#define WRAP_FD_META(name, type, call, ok, stmt)                                                   \
    IOS_REAL(name);                                                                                \
    struct posix_file *f = fd_file(fd);                                                            \
    if (!f)                                                                                        \
        return call;                                                                               \
    IOS_TIMED_CALL(type, ret, call);                                                               \
    if ((ok) && ios_enter()) {                                                                     \
        stmt;                                                                                      \
        ios_leave();                                                                               \
    }                                                                                              \
    return ret

IOS_EXPORT off_t lseek(int fd, off_t off, int whence) {
    WRAP_FD_META(lseek, off_t, ios_real.lseek(fd, off, whence), ret >= 0, {
        f->offset = ret;
        f->rec->counters[POSIX_SEEKS]++;
        meta_time(f, t1, t2);
    });
}
IOS_EXPORT off64_t lseek64(int fd, off64_t off, int whence) {
    WRAP_FD_META(lseek64, off64_t, ios_real.lseek64(fd, off, whence), ret >= 0, {
        f->offset = ret;
        f->rec->counters[POSIX_SEEKS]++;
        meta_time(f, t1, t2);
    });
}
/* Darshan counts sync time as write time. */
IOS_EXPORT int fsync(int fd) {
    WRAP_FD_META(fsync, int, ios_real.fsync(fd), ret == 0, {
        f->rec->counters[POSIX_FSYNCS]++;
        ios_timer_add(&f->rec->fcounters[POSIX_F_WRITE_TIME], t1, t2, &f->last_write_end);
    });
}
IOS_EXPORT int fdatasync(int fd) {
    WRAP_FD_META(fdatasync, int, ios_real.fdatasync(fd), ret == 0, {
        f->rec->counters[POSIX_FDSYNCS]++;
        ios_timer_add(&f->rec->fcounters[POSIX_F_WRITE_TIME], t1, t2, &f->last_write_end);
    });
}
IOS_EXPORT int close(int fd) {
    IOS_REAL(close);
    struct posix_file *f = fd_file(fd);
    if (!f)
        return ios_real.close(fd);
    /* Out of the table before the kernel frees the number: another thread's open may get it at
     * once, and the mapping it makes must stay. */
    fd_unmap(fd, f);
    IOS_TIMED_CALL(int, ret, ios_real.close(fd));
    if (ios_enter()) {
        double *fc = f->rec->fcounters;
        f->last_byte_read = f->last_byte_written = 0;
        ios_first_start(&fc[POSIX_F_CLOSE_START_TIMESTAMP], t1);
        fc[POSIX_F_CLOSE_END_TIMESTAMP] = t2;
        meta_time(f, t1, t2);
        ios_leave();
    }
    return ret;
}
/* A new descriptor for a tracked file: an open that keeps the offsets (Darshan's REFOPEN). */
#define WRAP_DUP(name, call)                                                                       \
    WRAP_FD_META(name, int, call, ret >= 0, count_open(f, ret, 0, POSIX_DUPS, 0, t1, t2))
IOS_EXPORT int dup(int fd) { WRAP_DUP(dup, ios_real.dup(fd)); }
/* dup2 and dup3 replace newfd in one step: newfd then names fd's file, or, fd untracked, none. */
#define WRAP_DUP_ONTO(name, call)                                                                  \
    IOS_REAL(name);                                                                                \
    struct posix_file *f = fd_file(fd), *replaced = fd_file(newfd);                                \
    if (!f && !replaced)                                                                           \
        return call;                                                                               \
    IOS_TIMED_CALL(int, ret, call);                                                                \
    if (ret >= 0 && !f)                                                                            \
        fd_unmap(newfd, replaced);                                                                 \
    if (ret >= 0 && f && ios_enter()) {                                                            \
        count_open(f, ret, 0, POSIX_DUPS, 0, t1, t2);                                              \
        ios_leave();                                                                               \
    }                                                                                              \
    return ret
IOS_EXPORT int dup2(int fd, int newfd) { WRAP_DUP_ONTO(dup2, ios_real.dup2(fd, newfd)); }
IOS_EXPORT int dup3(int fd, int newfd, int flags) {
    WRAP_DUP_ONTO(dup3, ios_real.dup3(fd, newfd, flags));
}
/* fcntl's F_DUPFD and F_DUPFD_CLOEXEC make a descriptor as dup does (numpy.save dups its file
 * so, then fdopens the copy); the other commands pass through. The third argument is an int, a
 * pointer or absent: it is read as a pointer and passed on as it came, as glibc's own fcntl
 * does (either travels in one register). */
#define WRAP_FCNTL(name)                                                                           \
    va_list ap;                                                                                    \
    va_start(ap, cmd);                                                                             \
    void *arg = va_arg(ap, void *);                                                                \
    va_end(ap);                                                                                    \
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) {                                                \
        IOS_REAL(name);                                                                            \
        return ios_real.name(fd, cmd, arg);                                                        \
    }                                                                                              \
    WRAP_DUP(name, ios_real.name(fd, cmd, arg))
IOS_EXPORT int fcntl(int fd, int cmd, ...) { WRAP_FCNTL(fcntl); }
IOS_EXPORT int fcntl64(int fd, int cmd, ...) { WRAP_FCNTL(fcntl64); }

/* The mkstemp family opens (creates, mode 0600) the file whose name it writes into tmpl. */
#define WRAP_MKSTEMP(name, ...) WRAP_OPEN(name, ios_real.name(__VA_ARGS__), AT_FDCWD, tmpl, 0600)
IOS_EXPORT int mkstemp(char *tmpl) { WRAP_MKSTEMP(mkstemp, tmpl); }
IOS_EXPORT int mkstemp64(char *tmpl) { WRAP_MKSTEMP(mkstemp64, tmpl); }
IOS_EXPORT int mkostemp(char *tmpl, int flags) { WRAP_MKSTEMP(mkostemp, tmpl, flags); }
IOS_EXPORT int mkostemp64(char *tmpl, int flags) { WRAP_MKSTEMP(mkostemp64, tmpl, flags); }
IOS_EXPORT int mkstemps(char *tmpl, int suffixlen) { WRAP_MKSTEMP(mkstemps, tmpl, suffixlen); }
IOS_EXPORT int mkstemps64(char *tmpl, int suffixlen) { WRAP_MKSTEMP(mkstemps64, tmpl, suffixlen); }
IOS_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags) {
    WRAP_MKSTEMP(mkostemps, tmpl, suffixlen, flags);
}
IOS_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags) {
    WRAP_MKSTEMP(mkostemps64, tmpl, suffixlen, flags);
}

/* A copy inside the kernel (copy_file_range, sendfile): its bytes are a read of the input's file
 * (at in_at; -1: at its file offset) and a write of the output's, each counted where the
 * descriptor is tracked, as one access of that size, with the call's time. No user buffer: the
 * accesses count as memory-aligned. */
#define WRAP_TRANSFER(name, type, call, in_fd, in_at, out_fd, out_at)                              \
    IOS_REAL(name);                                                                                \
    struct posix_file *in = fd_file(in_fd), *out = fd_file(out_fd);                                \
    if (!in && !out)                                                                               \
        return call;                                                                               \
    int64_t in_offset = in_at, out_offset = out_at; /* before the call moves them */               \
    IOS_TIMED_CALL(type, ret, call);                                                               \
    if (ret >= 0 && in)                                                                            \
        count_rw(in, 0, in_offset, ret, 1, t1, t2);                                                \
    if (ret >= 0 && out)                                                                           \
        count_rw(out, 1, out_offset, ret, 1, t1, t2);                                              \
    return ret

IOS_EXPORT ssize_t copy_file_range(int in_fd, off64_t *in_off, int out_fd, off64_t *out_off,
                                   size_t len, unsigned int flags) {
    WRAP_TRANSFER(copy_file_range, ssize_t,
                  ios_real.copy_file_range(in_fd, in_off, out_fd, out_off, len, flags), in_fd,
                  in_off ? *in_off : -1, out_fd, out_off ? *out_off : -1);
}
IOS_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
    WRAP_TRANSFER(sendfile, ssize_t, ios_real.sendfile(out_fd, in_fd, offset, count), in_fd,
                  offset ? *offset : -1, out_fd, -1);
}
IOS_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count) {
    WRAP_TRANSFER(sendfile64, ssize_t, ios_real.sendfile64(out_fd, in_fd, offset, count), in_fd,
                  offset ? *offset : -1, out_fd, -1);
}

/* ---- POSIX AIO: a request is counted when the program collects it (aio_return), as Darshan
 * does: a read or write of the returned bytes at the request's offset, timed from submission to
 * collection. Open MPI's fbtl does every MPI_File_i* and split collective this way. */

/* The requests submitted on tracked descriptors and not yet collected, by aiocb address. One
 * whose entry cannot be made (no memory) goes uncounted, and the POSIX module says that records
 * are missing (partial). */
struct aio_pending {
    struct posix_file *f;
    int is_write;
    int64_t offset;
    double t1;
};
static struct ios_map aio_pending;

static void aio_submitted(const void *cb, int fd, int is_write, int64_t offset, double t1) {
    struct posix_file *f = fd_file(fd);
    if (!f || !ios_enter())
        return;
    uint64_t key = (uint64_t)(uintptr_t)cb;
    struct aio_pending *p = ios_map_get(&aio_pending, key);
    if (!p && (p = malloc(sizeof *p)) != NULL && ios_map_put(&aio_pending, key, p) != 0) {
        free(p);
        p = NULL;
    }
    if (p)
        *p = (struct aio_pending){f, is_write, offset, t1};
    else
        ios_set_partial(IOS_MOD_POSIX);
    ios_leave();
}

/* Takes cb's pending request out of the table (0: it has none). */
static int aio_taken(const void *cb, struct aio_pending *out) {
    if (!ios_recording() || !ios_enter())
        return 0;
    uint64_t key = (uint64_t)(uintptr_t)cb;
    struct aio_pending *p = ios_map_get(&aio_pending, key);
    if (p) {
        *out = *p;
        ios_map_del(&aio_pending, key);
        free(p);
    }
    ios_leave();
    return p != NULL;
}

#define WRAP_AIO_SUBMIT(name, is_write)                                                            \
    IOS_REAL(name);                                                                                \
    if (!ios_recording())                                                                          \
        return ios_real.name(cb);                                                                  \
    aio_submitted(cb, cb->aio_fildes, is_write, cb->aio_offset, ios_now());                        \
    int ret = ios_real.name(cb);                                                                   \
    if (ret != 0) { /* not queued: nothing to collect */                                           \
        struct aio_pending gone;                                                                   \
        aio_taken(cb, &gone);                                                                      \
    }                                                                                              \
    return ret

#define WRAP_AIO_RETURN(name)                                                                      \
    IOS_REAL(name);                                                                                \
    ssize_t ret = ios_real.name(cb);                                                               \
    struct aio_pending p;                                                                          \
    if (aio_taken(cb, &p) && ret >= 0)                                                             \
        count_rw(p.f, p.is_write, p.offset, ret, buf_aligned((const void *)cb->aio_buf), p.t1,     \
                 ios_now());                                                                       \
    return ret

/* Each read or write request of the list is submitted as aio_read/aio_write submit one; the
 * list's requests are collected one by one with aio_return. */
#define WRAP_LIO_LISTIO(name)                                                                      \
    IOS_REAL(name);                                                                                \
    if (ios_recording()) {                                                                         \
        double t1 = ios_now();                                                                     \
        for (int i = 0; i < nent; i++)                                                             \
            if (list[i] &&                                                                         \
                (list[i]->aio_lio_opcode == LIO_READ || list[i]->aio_lio_opcode == LIO_WRITE))     \
                aio_submitted(list[i], list[i]->aio_fildes, list[i]->aio_lio_opcode == LIO_WRITE,  \
                              list[i]->aio_offset, t1);                                            \
    }                                                                                              \
    return ios_real.name(mode, list, nent, sig)

IOS_EXPORT int aio_read(struct aiocb *cb) { WRAP_AIO_SUBMIT(aio_read, 0); }
IOS_EXPORT int aio_write(struct aiocb *cb) { WRAP_AIO_SUBMIT(aio_write, 1); }
IOS_EXPORT ssize_t aio_return(struct aiocb *cb) { WRAP_AIO_RETURN(aio_return); }
IOS_EXPORT int lio_listio(int mode, struct aiocb *const list[], int nent, struct sigevent *sig) {
    WRAP_LIO_LISTIO(lio_listio);
}
IOS_EXPORT int aio_read64(struct aiocb64 *cb) { WRAP_AIO_SUBMIT(aio_read64, 0); }
IOS_EXPORT int aio_write64(struct aiocb64 *cb) { WRAP_AIO_SUBMIT(aio_write64, 1); }
IOS_EXPORT ssize_t aio_return64(struct aiocb64 *cb) { WRAP_AIO_RETURN(aio_return64); }
IOS_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int nent,
                            struct sigevent *sig) {
    WRAP_LIO_LISTIO(lio_listio64);
}

/* Counted for a file-backed mapping of a tracked fd; Darshan's LD_PRELOAD build leaves it -1. */
#define WRAP_MMAP(name, call)                                                                      \
    WRAP_FD_META(name, void *, call, ret != MAP_FAILED, {                                          \
        f->rec->counters[POSIX_MMAPS]++;                                                           \
        meta_time(f, t1, t2);                                                                      \
    })
IOS_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    WRAP_MMAP(mmap, ios_real.mmap(addr, len, prot, flags, fd, off));
}
IOS_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    WRAP_MMAP(mmap64, ios_real.mmap64(addr, len, prot, flags, fd, off));
}

/* ---- stat family ------------------------------------------------------------------------- */
static void stat_path(int dirfd, const char *path, double t1, double t2) {
    int saved = errno;
    struct posix_file *f;
    ios_guard(1);
    if (enter_with_file(dirfd, path, &f)) {
        if (f) {
            f->rec->counters[POSIX_STATS]++;
            meta_time(f, t1, t2);
        }
        ios_leave();
    }
    ios_guard(0);
    errno = saved;
}

static void stat_fd(int fd, double t1, double t2) {
    struct posix_file *f = fd_file(fd);
    if (f && ios_enter()) {
        f->rec->counters[POSIX_STATS]++;
        meta_time(f, t1, t2);
        ios_leave();
    }
}

/* Only regular files are recorded, as in Darshan. at_fd: fstatat(fd, "", AT_EMPTY_PATH). */
#define WRAP_STAT(name, call, dirfd, path, flags, st_mode)                                         \
    IOS_REAL(name);                                                                                \
    if (!ios_recording())                                                                          \
        return call;                                                                               \
    IOS_TIMED_CALL(int, ret, call);                                                                \
    if (ret == 0 && S_ISREG(st_mode)) {                                                            \
        if (((flags)&AT_EMPTY_PATH) && path[0] == '\0')                                            \
            stat_fd(dirfd, t1, t2);                                                                \
        else                                                                                       \
            stat_path(dirfd, path, t1, t2);                                                        \
    }                                                                                              \
    return ret
#define WRAP_FSTAT(name, call, st_mode)                                                            \
    IOS_REAL(name);                                                                                \
    if (!fd_file(fd))                                                                              \
        return call;                                                                               \
    IOS_TIMED_CALL(int, ret, call);                                                                \
    if (ret == 0 && S_ISREG(st_mode))                                                              \
        stat_fd(fd, t1, t2);                                                                       \
    return ret

IOS_EXPORT int stat(const char *path, struct stat *st) {
    WRAP_STAT(stat, ios_real.stat(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int stat64(const char *path, struct stat64 *st) {
    WRAP_STAT(stat64, ios_real.stat64(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int lstat(const char *path, struct stat *st) {
    WRAP_STAT(lstat, ios_real.lstat(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int lstat64(const char *path, struct stat64 *st) {
    WRAP_STAT(lstat64, ios_real.lstat64(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    WRAP_STAT(fstatat, ios_real.fstatat(dirfd, path, st, flags), dirfd, path, flags, st->st_mode);
}
IOS_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) {
    WRAP_STAT(fstatat64, ios_real.fstatat64(dirfd, path, st, flags), dirfd, path, flags,
              st->st_mode);
}
IOS_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx) {
    WRAP_STAT(statx, ios_real.statx(dirfd, path, flags, mask, stx), dirfd, path, flags,
              stx->stx_mode);
}
IOS_EXPORT int __xstat(int ver, const char *path, struct stat *st) {
    WRAP_STAT(__xstat, ios_real.__xstat(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st) {
    WRAP_STAT(__xstat64, ios_real.__xstat64(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __lxstat(int ver, const char *path, struct stat *st) {
    WRAP_STAT(__lxstat, ios_real.__lxstat(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st) {
    WRAP_STAT(__lxstat64, ios_real.__lxstat64(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags) {
    WRAP_STAT(__fxstatat, ios_real.__fxstatat(ver, dirfd, path, st, flags), dirfd, path, flags,
              st->st_mode);
}
IOS_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags) {
    WRAP_STAT(__fxstatat64, ios_real.__fxstatat64(ver, dirfd, path, st, flags), dirfd, path, flags,
              st->st_mode);
}
IOS_EXPORT int fstat(int fd, struct stat *st) {
    WRAP_FSTAT(fstat, ios_real.fstat(fd, st), st->st_mode);
}
IOS_EXPORT int fstat64(int fd, struct stat64 *st) {
    WRAP_FSTAT(fstat64, ios_real.fstat64(fd, st), st->st_mode);
}
IOS_EXPORT int __fxstat(int ver, int fd, struct stat *st) {
    WRAP_FSTAT(__fxstat, ios_real.__fxstat(ver, fd, st), st->st_mode);
}
IOS_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st) {
    WRAP_FSTAT(__fxstat64, ios_real.__fxstat64(ver, fd, st), st->st_mode);
}

/* ---- rename and fileno ------------------------------------------------------------------- */
IOS_EXPORT int rename(const char *oldpath, const char *newpath) {
    IOS_REAL(rename);
    if (!ios_recording())
        return ios_real.rename(oldpath, newpath);
    IOS_TIMED_CALL(int, ret, ios_real.rename(oldpath, newpath));
    char oldname[PATH_MAX], newname[PATH_MAX];
    int saved = errno;
    ios_guard(1);
    if (ret == 0 && ios_normalize_path(oldpath, AT_FDCWD, oldname, sizeof oldname) == 0 &&
        ios_enter()) {
        uint64_t old_id = ios_record_id(oldname);
        struct posix_file *src = ios_map_get(&files_by_id, old_id);
        /* Only a rename of a file already recorded is counted, as in Darshan. */
        if (src) {
            src->rec->counters[POSIX_RENAME_SOURCES]++;
            meta_time(src, t1, t2);
            struct posix_file *dst =
                ios_normalize_path(newpath, AT_FDCWD, newname, sizeof newname) == 0
                    ? file_by_name(newname)
                    : NULL;
            if (dst) {
                dst->rec->counters[POSIX_RENAME_TARGETS]++;
                if (dst->rec->counters[POSIX_RENAMED_FROM] == 0)
                    dst->rec->counters[POSIX_RENAMED_FROM] = (int64_t)old_id;
            }
        }
        ios_leave();
    }
    ios_guard(0);
    errno = saved;
    return ret;
}

const char *ios_posix_fd_name(int fd) {
    struct posix_file *f = fd_lookup(fd);
    return f ? ios_record_name(f->rec->base.id) : NULL;
}

/* fileno() exposes a tracked stream's descriptor: POSIX calls on it count for the same file. */
IOS_EXPORT int fileno(FILE *stream) {
    IOS_REAL(fileno);
    if (!ios_recording())
        return ios_real.fileno(stream);
    IOS_TIMED_CALL(int, ret, ios_real.fileno(stream));
    int saved = errno;
    if (ret >= 0 && ios_enter()) {
        const char *name = ios_stdio_stream_name(stream);
        struct posix_file *f = name ? file_by_name(name) : NULL;
        if (f)
            count_open(f, ret, 0, POSIX_FILENOS, 0, t1, t2);
        ios_leave();
    }
    errno = saved;
    return ret;
}

/* ---- shutdown ------------------------------------------------------------------------------ */
/* The access and stride counters of r from the file's tracked values (exact whatever the live
 * slots of a memory-mapped log hold). */
static void exact_sizes(struct ios_posix_record *r, const struct posix_sizes *sz) {
    memset(&r->counters[POSIX_STRIDE1_STRIDE], 0,
           (POSIX_ACCESS4_COUNT - POSIX_STRIDE1_STRIDE + 1) * sizeof(int64_t));
    ios_common_merge(&r->counters[POSIX_ACCESS1_ACCESS], &r->counters[POSIX_ACCESS1_COUNT],
                     sz->access.value, sz->access.count, sz->access.n);
    ios_common_merge(&r->counters[POSIX_STRIDE1_STRIDE], &r->counters[POSIX_STRIDE1_COUNT],
                     sz->stride.value, sz->stride.count, sz->stride.n);
}

/* The records as they stand in the memory-mapped log, finished there: no copy of megabytes at
 * exit. Only when every record is there, each with its file. */
static int collect_in_place(struct ios_record_set *set) {
    size_t len;
    unsigned char *buf = ios_mmap_region(IOS_MOD_POSIX, &len);
    if (!buf || len != files_by_id.count * set->rec_size)
        return -1;
    for (size_t i = 0; i < files_by_id.cap; i++) {
        struct posix_file *f = files_by_id.keys[i] ? files_by_id.vals[i] : NULL;
        if (f && f->sizes)
            exact_sizes(f->rec, f->sizes);
    }
    set->buf = buf;
    set->len = len;
    set->count = files_by_id.count;
    set->borrowed = 1;
    return 0;
}

void ios_posix_collect(struct ios_record_set *set) {
    set->mod = IOS_MOD_POSIX;
    set->rec_size = sizeof(struct ios_posix_record);
    set->count = set->len = 0;
    if (set->in_place && collect_in_place(set) == 0)
        return;
    set->buf = malloc(files_by_id.count * set->rec_size + 1);
    if (!set->buf)
        return;
    for (size_t i = 0; i < files_by_id.cap; i++) {
        struct posix_file *f = files_by_id.keys[i] ? files_by_id.vals[i] : NULL;
        if (!f)
            continue;
        struct ios_posix_record *r = (void *)(set->buf + set->len);
        *r = *f->rec;
        if (f->sizes)
            exact_sizes(r, f->sizes);
        set->len += set->rec_size;
        set->count++;
    }
}

void ios_posix_reset(void) {
    ios_map_free(&files_by_id);
    for (size_t i = 0; i < aio_pending.cap; i++) /* the parent's requests are not the child's */
        if (aio_pending.keys[i])
            free(aio_pending.vals[i]);
    ios_map_free(&aio_pending);
    ios_path_cache_clear(&absolute_paths);
    void *table = atomic_load_explicit(&fd_table, memory_order_relaxed);
    if (table) /* zero pages again without touching (allocating) every one of them */
        madvise(table, (size_t)fd_table_size * sizeof(void *), MADV_DONTNEED);
}

/* ---- reduction of shared records (reference §7) ---------------------------------------------- */
static int64_t posix_bytes(const void *rec) {
    const struct ios_posix_record *r = rec;
    return r->counters[POSIX_BYTES_READ] + r->counters[POSIX_BYTES_WRITTEN];
}

static double posix_time(const void *rec) {
    const struct ios_posix_record *r = rec;
    return r->fcounters[POSIX_F_READ_TIME] + r->fcounters[POSIX_F_WRITE_TIME] +
           r->fcounters[POSIX_F_META_TIME];
}

static void posix_combine(const void *in_v, void *inout_v) {
    const struct ios_posix_record *in = in_v;
    struct ios_posix_record *io = inout_v;
    int64_t *c = io->counters;
    const int64_t *ic = in->counters;
    for (int j = POSIX_OPENS; j <= POSIX_RENAME_TARGETS; j++) {
        c[j] += ic[j];
        if (c[j] < 0) /* counters "not monitored" stay exactly -1 */
            c[j] = -1;
    }
    c[POSIX_RENAMED_FROM] = ic[POSIX_RENAMED_FROM] ? ic[POSIX_RENAMED_FROM] : c[POSIX_RENAMED_FROM];
    c[POSIX_MODE] = ic[POSIX_MODE] ? ic[POSIX_MODE] : c[POSIX_MODE];
    c[POSIX_BYTES_READ] += ic[POSIX_BYTES_READ];
    c[POSIX_BYTES_WRITTEN] += ic[POSIX_BYTES_WRITTEN];
    for (int j = POSIX_MAX_BYTE_READ; j <= POSIX_MAX_BYTE_WRITTEN; j++)
        c[j] = ic[j] > c[j] ? ic[j] : c[j];
    for (int j = POSIX_CONSEC_READS; j <= POSIX_MEM_NOT_ALIGNED; j++)
        c[j] += ic[j];
    c[POSIX_FILE_NOT_ALIGNED] += ic[POSIX_FILE_NOT_ALIGNED];
    for (int j = POSIX_SIZE_READ_0_100; j <= POSIX_SIZE_WRITE_1G_PLUS; j++)
        c[j] += ic[j];
    ios_common_merge(&c[POSIX_STRIDE1_STRIDE], &c[POSIX_STRIDE1_COUNT], &ic[POSIX_STRIDE1_STRIDE],
                     &ic[POSIX_STRIDE1_COUNT], 4);
    ios_common_merge(&c[POSIX_ACCESS1_ACCESS], &c[POSIX_ACCESS1_COUNT], &ic[POSIX_ACCESS1_ACCESS],
                     &ic[POSIX_ACCESS1_COUNT], 4);

    double *fc = io->fcounters;
    const double *ifc = in->fcounters;
    ios_reduce_starts(fc, ifc, POSIX_F_OPEN_START_TIMESTAMP, POSIX_F_CLOSE_START_TIMESTAMP);
    ios_reduce_ends(fc, ifc, POSIX_F_OPEN_END_TIMESTAMP, POSIX_F_CLOSE_END_TIMESTAMP);
    for (int j = POSIX_F_READ_TIME; j <= POSIX_F_META_TIME; j++)
        fc[j] += ifc[j];
    if (ifc[POSIX_F_MAX_READ_TIME] > fc[POSIX_F_MAX_READ_TIME]) {
        fc[POSIX_F_MAX_READ_TIME] = ifc[POSIX_F_MAX_READ_TIME];
        c[POSIX_MAX_READ_TIME_SIZE] = ic[POSIX_MAX_READ_TIME_SIZE];
    }
    if (ifc[POSIX_F_MAX_WRITE_TIME] > fc[POSIX_F_MAX_WRITE_TIME]) {
        fc[POSIX_F_MAX_WRITE_TIME] = ifc[POSIX_F_MAX_WRITE_TIME];
        c[POSIX_MAX_WRITE_TIME_SIZE] = ic[POSIX_MAX_WRITE_TIME_SIZE];
    }
    ios_combine_rank_extremes(&ios_posix_reducer, in, io);
}

const struct ios_reducer ios_posix_reducer =
    IOS_REDUCER(POSIX, struct ios_posix_record, POSIX_F_OPEN_START_TIMESTAMP,
                POSIX_F_CLOSE_END_TIMESTAMP, posix_bytes, posix_time, posix_combine);
