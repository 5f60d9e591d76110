/* POSIX module: metadata. Seeks and syncs of a tracked descriptor, the stat family (with
 * glibc's old __xstat symbols), and rename. */
#include "posix.h"

#include <limits.h>

/* ---- seeks and syncs --------------------------------------------------------------------- */
IOS_EXPORT off_t lseek(int fd, off_t off, int whence) {
    POSIX_WRAP_FD_META(lseek, off_t, ios_real.lseek(fd, off, whence), ret >= 0, {
        f->offset = ret;
        f->rec->counters[POSIX_SEEKS]++;
        posix_meta_time(f, t1, t2);
    });
}
IOS_EXPORT off64_t lseek64(int fd, off64_t off, int whence) {
    POSIX_WRAP_FD_META(lseek64, off64_t, ios_real.lseek64(fd, off, whence), ret >= 0, {
        f->offset = ret;
        f->rec->counters[POSIX_SEEKS]++;
        posix_meta_time(f, t1, t2);
    });
}
/* Darshan counts sync time as write time. */
IOS_EXPORT int fsync(int fd) {
    POSIX_WRAP_FD_META(fsync, int, ios_real.fsync(fd), ret == 0, {
        f->rec->counters[POSIX_FSYNCS]++;
        ios_timer_add_ns(&f->rec->fcounters[POSIX_F_WRITE_TIME], ns1, ns2, t2 - t1, &f->rw[1]);
    });
}
IOS_EXPORT int fdatasync(int fd) {
    POSIX_WRAP_FD_META(fdatasync, int, ios_real.fdatasync(fd), ret == 0, {
        f->rec->counters[POSIX_FDSYNCS]++;
        ios_timer_add_ns(&f->rec->fcounters[POSIX_F_WRITE_TIME], ns1, ns2, t2 - t1, &f->rw[1]);
    });
}
/* ---- stat family ------------------------------------------------------------------------- */
static void stat_path(int dirfd, const char *path, double t1, double t2) {
    struct posix_file *f;
    if (posix_enter_with_file(dirfd, path, &f)) {
        if (f) {
            f->rec->counters[POSIX_STATS]++;
            posix_meta_time(f, t1, t2);
        }
        ios_leave();
    }
}

static void stat_fd(int fd, double t1, double t2) {
    struct posix_file *f = posix_fd_file(fd);
    if (f && ios_enter()) {
        f->rec->counters[POSIX_STATS]++;
        posix_meta_time(f, t1, t2);
        ios_leave();
    }
}

/* Only regular files are recorded, as in Darshan. at_fd: fstatat(fd, "", AT_EMPTY_PATH). */
#define POSIX_WRAP_STAT(name, call, dirfd, path, flags, st_mode)                                   \
    IOS_WRAP_TIMED(name, int, call);                                                               \
    if (ret == 0 && S_ISREG(st_mode)) {                                                            \
        if (((flags)&AT_EMPTY_PATH) && path[0] == '\0')                                            \
            stat_fd(dirfd, t1, t2);                                                                \
        else                                                                                       \
            stat_path(dirfd, path, t1, t2);                                                        \
    }                                                                                              \
    return ret
#define POSIX_WRAP_FSTAT(name, call, st_mode)                                                      \
    if (!posix_fd_file(fd)) {                                                                      \
        IOS_REAL(name);                                                                            \
        return call;                                                                               \
    }                                                                                              \
    IOS_REAL_RECORDING(name);                                                                      \
    IOS_TIMED_CALL(int, ret, call);                                                                \
    if (ret == 0 && S_ISREG(st_mode))                                                              \
        stat_fd(fd, t1, t2);                                                                       \
    return ret

IOS_EXPORT int stat(const char *path, struct stat *st) {
    POSIX_WRAP_STAT(stat, ios_real.stat(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int stat64(const char *path, struct stat64 *st) {
    POSIX_WRAP_STAT(stat64, ios_real.stat64(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int lstat(const char *path, struct stat *st) {
    POSIX_WRAP_STAT(lstat, ios_real.lstat(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int lstat64(const char *path, struct stat64 *st) {
    POSIX_WRAP_STAT(lstat64, ios_real.lstat64(path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    POSIX_WRAP_STAT(fstatat, ios_real.fstatat(dirfd, path, st, flags), dirfd, path, flags,
                    st->st_mode);
}
IOS_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) {
    POSIX_WRAP_STAT(fstatat64, ios_real.fstatat64(dirfd, path, st, flags), dirfd, path, flags,
                    st->st_mode);
}
IOS_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx) {
    POSIX_WRAP_STAT(statx, ios_real.statx(dirfd, path, flags, mask, stx), dirfd, path, flags,
                    stx->stx_mode);
}
IOS_EXPORT int __xstat(int ver, const char *path, struct stat *st) {
    POSIX_WRAP_STAT(__xstat, ios_real.__xstat(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st) {
    POSIX_WRAP_STAT(__xstat64, ios_real.__xstat64(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __lxstat(int ver, const char *path, struct stat *st) {
    POSIX_WRAP_STAT(__lxstat, ios_real.__lxstat(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st) {
    POSIX_WRAP_STAT(__lxstat64, ios_real.__lxstat64(ver, path, st), AT_FDCWD, path, 0, st->st_mode);
}
IOS_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags) {
    POSIX_WRAP_STAT(__fxstatat, ios_real.__fxstatat(ver, dirfd, path, st, flags), dirfd, path,
                    flags, st->st_mode);
}
IOS_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags) {
    POSIX_WRAP_STAT(__fxstatat64, ios_real.__fxstatat64(ver, dirfd, path, st, flags), dirfd, path,
                    flags, st->st_mode);
}
IOS_EXPORT int fstat(int fd, struct stat *st) {
    POSIX_WRAP_FSTAT(fstat, ios_real.fstat(fd, st), st->st_mode);
}
IOS_EXPORT int fstat64(int fd, struct stat64 *st) {
    POSIX_WRAP_FSTAT(fstat64, ios_real.fstat64(fd, st), st->st_mode);
}
IOS_EXPORT int __fxstat(int ver, int fd, struct stat *st) {
    POSIX_WRAP_FSTAT(__fxstat, ios_real.__fxstat(ver, fd, st), st->st_mode);
}
IOS_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st) {
    POSIX_WRAP_FSTAT(__fxstat64, ios_real.__fxstat64(ver, fd, st), st->st_mode);
}

/* ---- rename ------------------------------------------------------------------- */
IOS_EXPORT int rename(const char *oldpath, const char *newpath) {
    IOS_WRAP_TIMED(rename, int, ios_real.rename(oldpath, newpath));
    char oldname[PATH_MAX], newname[PATH_MAX];
    int saved = errno;
    ios_guard(1);
    if (ret == 0 && ios_normalize_path(oldpath, AT_FDCWD, oldname, sizeof oldname) == 0 &&
        ios_enter()) {
        uint64_t old_id = ios_record_id(oldname);
        struct posix_file *src = ios_posix_recorded(old_id);
        /* Only a rename of a file already recorded is counted, as in Darshan. */
        if (src) {
            src->rec->counters[POSIX_RENAME_SOURCES]++;
            posix_meta_time(src, t1, t2);
            struct posix_file *dst =
                ios_normalize_path(newpath, AT_FDCWD, newname, sizeof newname) == 0
                    ? ios_posix_file_by_name(newname)
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
