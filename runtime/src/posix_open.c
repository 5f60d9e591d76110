/* POSIX module: opens, closes and new descriptors of a tracked file (the open family, the
 * mkstemp family, close, dup, dup2, dup3, fcntl's F_DUPFD, fileno). */
#include "posix.h"

#include <stdarg.h>

/* A file's Lustre layout is taken once, at its first open, outside the lock. */
static void first_opened(struct posix_file *f, const char *name, int fd) {
    int saved = errno;
    ios_guard(1);
    ios_lustre_file_opened(f->rec->base.id, name, fd);
    ios_guard(0);
    errno = saved;
}

static inline __attribute__((always_inline)) void opened(int fd, int dirfd, const char *path,
                                                         int mode, double t1, double t2) {
    struct posix_file *f;
    if (!posix_enter_with_file(dirfd, path, &f))
        return;
    const char *name = NULL;
    if (f) {
        if (IOS_UNLIKELY(f->rec->counters[POSIX_OPENS] == 0))
            name = ios_record_name(f->rec->base.id);
        posix_count_open(f, fd, mode, -1, 1, t1, t2);
    }
    ios_leave();
    if (IOS_UNLIKELY(name != NULL))
        first_opened(f, name, fd);
}

/* ---- the open family --------------------------------------------------------------------- */
#define POSIX_OPEN_MODE(flags, mode)                                                               \
    do {                                                                                           \
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {                               \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            mode = va_arg(ap, int);                                                                \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

/* Times the real call, then records the open of its result. */
#define POSIX_WRAP_OPEN(name, call, dirfd, path, mode)                                             \
    IOS_WRAP_TIMED(name, int, call);                                                               \
    if (ret >= 0)                                                                                  \
        opened(ret, dirfd, path, mode, t1, t2);                                                    \
    return ret

IOS_EXPORT int open(const char *path, int flags, ...) {
    int mode = 0;
    POSIX_OPEN_MODE(flags, mode);
    POSIX_WRAP_OPEN(open, ios_real.open(path, flags, mode), AT_FDCWD, path, mode);
}
IOS_EXPORT int open64(const char *path, int flags, ...) {
    int mode = 0;
    POSIX_OPEN_MODE(flags, mode);
    POSIX_WRAP_OPEN(open64, ios_real.open64(path, flags, mode), AT_FDCWD, path, mode);
}
IOS_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    int mode = 0;
    POSIX_OPEN_MODE(flags, mode);
    POSIX_WRAP_OPEN(openat, ios_real.openat(dirfd, path, flags, mode), dirfd, path, mode);
}
IOS_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    int mode = 0;
    POSIX_OPEN_MODE(flags, mode);
    POSIX_WRAP_OPEN(openat64, ios_real.openat64(dirfd, path, flags, mode), dirfd, path, mode);
}
IOS_EXPORT int __open_2(const char *path, int flags) {
    POSIX_WRAP_OPEN(__open_2, ios_real.__open_2(path, flags), AT_FDCWD, path, 0);
}
IOS_EXPORT int __open64_2(const char *path, int flags) {
    POSIX_WRAP_OPEN(__open64_2, ios_real.__open64_2(path, flags), AT_FDCWD, path, 0);
}
IOS_EXPORT int __openat_2(int dirfd, const char *path, int flags) {
    POSIX_WRAP_OPEN(__openat_2, ios_real.__openat_2(dirfd, path, flags), dirfd, path, 0);
}
IOS_EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
    POSIX_WRAP_OPEN(__openat64_2, ios_real.__openat64_2(dirfd, path, flags), dirfd, path, 0);
}
IOS_EXPORT int creat(const char *path, mode_t mode) {
    POSIX_WRAP_OPEN(creat, ios_real.creat(path, mode), AT_FDCWD, path, (int)mode);
}
IOS_EXPORT int creat64(const char *path, mode_t mode) {
    POSIX_WRAP_OPEN(creat64, ios_real.creat64(path, mode), AT_FDCWD, path, (int)mode);
}

/* The mkstemp family opens (creates, mode 0600) the file whose name it writes into tmpl. */
#define POSIX_WRAP_MKSTEMP(name, ...)                                                              \
    POSIX_WRAP_OPEN(name, ios_real.name(__VA_ARGS__), AT_FDCWD, tmpl, 0600)
IOS_EXPORT int mkstemp(char *tmpl) { POSIX_WRAP_MKSTEMP(mkstemp, tmpl); }
IOS_EXPORT int mkstemp64(char *tmpl) { POSIX_WRAP_MKSTEMP(mkstemp64, tmpl); }
IOS_EXPORT int mkostemp(char *tmpl, int flags) { POSIX_WRAP_MKSTEMP(mkostemp, tmpl, flags); }
IOS_EXPORT int mkostemp64(char *tmpl, int flags) { POSIX_WRAP_MKSTEMP(mkostemp64, tmpl, flags); }
IOS_EXPORT int mkstemps(char *tmpl, int suffixlen) {
    POSIX_WRAP_MKSTEMP(mkstemps, tmpl, suffixlen);
}
IOS_EXPORT int mkstemps64(char *tmpl, int suffixlen) {
    POSIX_WRAP_MKSTEMP(mkstemps64, tmpl, suffixlen);
}
IOS_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags) {
    POSIX_WRAP_MKSTEMP(mkostemps, tmpl, suffixlen, flags);
}
IOS_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags) {
    POSIX_WRAP_MKSTEMP(mkostemps64, tmpl, suffixlen, flags);
}

/* ---- close ----------------------------------------------------------------------------------- */
IOS_EXPORT int close(int fd) {
    struct posix_file *_Atomic *slot = !ios_in_runtime ? posix_fd_slot(fd) : NULL;
    struct posix_file *f = slot ? atomic_load_explicit(slot, memory_order_relaxed) : NULL;
    if (!f)
        return IOS_CALL(close)(fd);
    /* Out of the table before the kernel frees the number: another thread's open may get it at
     * once, and the mapping it makes must stay. */
    posix_unmap_slot(slot, f);
    IOS_TIMED_CALL(int, ret, ios_real.close(fd));
    if (ios_enter()) {
        double *fc = f->rec->fcounters;
        f->last_byte_read = f->last_byte_written = 0;
        ios_first_start(&fc[POSIX_F_CLOSE_START_TIMESTAMP], t1);
        fc[POSIX_F_CLOSE_END_TIMESTAMP] = t2;
        posix_meta_time(f, t1, t2);
        ios_leave();
    }
    return ret;
}

/* ---- new descriptors of a tracked file ------------------------------------------------------ */
/* A new descriptor for a tracked file: an open that keeps the offsets (Darshan's REFOPEN). */
#define POSIX_WRAP_DUP(name, call)                                                                 \
    POSIX_WRAP_FD_META(name, int, call, ret >= 0,                                                  \
                       posix_count_open(f, ret, 0, POSIX_DUPS, 0, t1, t2))
IOS_EXPORT int dup(int fd) { POSIX_WRAP_DUP(dup, ios_real.dup(fd)); }
/* dup2 and dup3 replace newfd in one step: newfd then names fd's file, or, fd untracked, none. */
#define POSIX_WRAP_DUP_ONTO(name, call)                                                            \
    IOS_REAL(name);                                                                                \
    struct posix_file *f = posix_fd_file(fd), *replaced = posix_fd_file(newfd);                    \
    if (!f && !replaced)                                                                           \
        return call;                                                                               \
    IOS_TIMED_CALL(int, ret, call);                                                                \
    if (ret >= 0 && !f)                                                                            \
        posix_unmap_fd(newfd, replaced);                                                           \
    if (ret >= 0 && f && ios_enter()) {                                                            \
        posix_count_open(f, ret, 0, POSIX_DUPS, 0, t1, t2);                                        \
        ios_leave();                                                                               \
    }                                                                                              \
    return ret
IOS_EXPORT int dup2(int fd, int newfd) { POSIX_WRAP_DUP_ONTO(dup2, ios_real.dup2(fd, newfd)); }
IOS_EXPORT int dup3(int fd, int newfd, int flags) {
    POSIX_WRAP_DUP_ONTO(dup3, ios_real.dup3(fd, newfd, flags));
}
/* fcntl's F_DUPFD and F_DUPFD_CLOEXEC make a descriptor as dup does (numpy.save dups its file
 * so, then fdopens the copy); the other commands pass through. The third argument is an int, a
 * pointer or absent: it is read as a pointer and passed on as it came, as glibc's own fcntl
 * does (either travels in one register). */
#define POSIX_WRAP_FCNTL(name)                                                                     \
    va_list ap;                                                                                    \
    va_start(ap, cmd);                                                                             \
    void *arg = va_arg(ap, void *);                                                                \
    va_end(ap);                                                                                    \
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) {                                                \
        IOS_REAL(name);                                                                            \
        return ios_real.name(fd, cmd, arg);                                                        \
    }                                                                                              \
    POSIX_WRAP_DUP(name, ios_real.name(fd, cmd, arg))
IOS_EXPORT int fcntl(int fd, int cmd, ...) { POSIX_WRAP_FCNTL(fcntl); }
IOS_EXPORT int fcntl64(int fd, int cmd, ...) { POSIX_WRAP_FCNTL(fcntl64); }

/* fileno() exposes a tracked stream's descriptor: POSIX calls on it count for the same file. */
IOS_EXPORT int fileno(FILE *stream) {
    IOS_WRAP_TIMED(fileno, int, ios_real.fileno(stream));
    int saved = errno;
    if (ret >= 0 && ios_enter()) {
        const char *name = ios_stdio_stream_name(stream);
        struct posix_file *f = name ? ios_posix_file_by_name(name) : NULL;
        if (f)
            posix_count_open(f, ret, 0, POSIX_FILENOS, 0, t1, t2);
        ios_leave();
    }
    errno = saved;
    return ret;
}
