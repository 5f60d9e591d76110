/* POSIX module: data. The read and write family, POSIX AIO, mmap, and the copies inside the
 * kernel (copy_file_range, sendfile). */
#include "posix.h"

#include <sys/mman.h>
#include <sys/sendfile.h>

static int iov_aligned(const struct iovec *iov, int iovcnt) {
    for (int i = 0; i < iovcnt; i++)
        if (!posix_buf_aligned(iov[i].iov_base))
            return 0;
    return 1;
}

/* Times the real call on a tracked fd and records its transfer. The hot path: no errno work,
 * since recording makes no system call; the guard is looked at once the call is made
 * (posix_count_rw). */
#define POSIX_WRAP_RW(name, call, is_write, offset, buffer, aligned)                               \
    struct posix_file *f = posix_fd_lookup(fd);                                                    \
    if (!f) {                                                                                      \
        IOS_REAL(name);                                                                            \
        return call;                                                                               \
    }                                                                                              \
    IOS_REAL_RECORDING(name);                                                                      \
    IOS_TIMED_CALL_NS(ssize_t, ret, call);                                                         \
    if (ret >= 0)                                                                                  \
        posix_count_rw(f, is_write, offset, ret, buffer, aligned, ns1, ns2);                       \
    return ret

IOS_EXPORT ssize_t read(int fd, void *buf, size_t count) {
    POSIX_WRAP_RW(read, ios_real.read(fd, buf, count), 0, -1, buf, 1);
}
IOS_EXPORT ssize_t write(int fd, const void *buf, size_t count) {
    POSIX_WRAP_RW(write, ios_real.write(fd, buf, count), 1, -1, buf, 1);
}
IOS_EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t off) {
    POSIX_WRAP_RW(pread, ios_real.pread(fd, buf, count, off), 0, off, buf, 1);
}
IOS_EXPORT ssize_t pwrite(int fd, const void *buf, size_t count, off_t off) {
    POSIX_WRAP_RW(pwrite, ios_real.pwrite(fd, buf, count, off), 1, off, buf, 1);
}
IOS_EXPORT ssize_t pread64(int fd, void *buf, size_t count, off64_t off) {
    POSIX_WRAP_RW(pread64, ios_real.pread64(fd, buf, count, off), 0, off, buf, 1);
}
IOS_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t off) {
    POSIX_WRAP_RW(pwrite64, ios_real.pwrite64(fd, buf, count, off), 1, off, buf, 1);
}
/* _FORTIFY_SOURCE forms: the real ones keep their buffer-overflow check. */
IOS_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen) {
    POSIX_WRAP_RW(__read_chk, ios_real.__read_chk(fd, buf, count, buflen), 0, -1, buf, 1);
}
IOS_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen) {
    POSIX_WRAP_RW(__pread_chk, ios_real.__pread_chk(fd, buf, count, off, buflen), 0, off, buf, 1);
}
IOS_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t off, size_t buflen) {
    POSIX_WRAP_RW(__pread64_chk, ios_real.__pread64_chk(fd, buf, count, off, buflen), 0, off, buf,
                  1);
}
IOS_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n) {
    POSIX_WRAP_RW(readv, ios_real.readv(fd, iov, n), 0, -1, NULL, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
    POSIX_WRAP_RW(writev, ios_real.writev(fd, iov, n), 1, -1, NULL, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off) {
    POSIX_WRAP_RW(preadv, ios_real.preadv(fd, iov, n, off), 0, off, NULL, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
    POSIX_WRAP_RW(pwritev, ios_real.pwritev(fd, iov, n, off), 1, off, NULL, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off64_t off) {
    POSIX_WRAP_RW(preadv64, ios_real.preadv64(fd, iov, n, off), 0, off, NULL, iov_aligned(iov, n));
}
IOS_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off) {
    POSIX_WRAP_RW(pwritev64, ios_real.pwritev64(fd, iov, n, off), 1, off, NULL,
                  iov_aligned(iov, n));
}
/* offset -1 means "at the file offset" for the v2 calls, exactly as count_rw reads it */
IOS_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags) {
    POSIX_WRAP_RW(preadv2, ios_real.preadv2(fd, iov, n, off, flags), 0, off, NULL,
                  iov_aligned(iov, n));
}
IOS_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags) {
    POSIX_WRAP_RW(pwritev2, ios_real.pwritev2(fd, iov, n, off, flags), 1, off, NULL,
                  iov_aligned(iov, n));
}

/* A copy inside the kernel (copy_file_range, sendfile): its bytes are a read of the input's file
 * (at in_at; -1: at its file offset) and a write of the output's, each counted where the
 * descriptor is tracked, as one access of that size, with the call's time. No user buffer: the
 * accesses count as memory-aligned. */
#define POSIX_WRAP_TRANSFER(name, type, call, in_fd, in_at, out_fd, out_at)                        \
    IOS_REAL(name);                                                                                \
    struct posix_file *in = posix_fd_file(in_fd), *out = posix_fd_file(out_fd);                    \
    if (!in && !out)                                                                               \
        return call;                                                                               \
    int64_t in_offset = in_at, out_offset = out_at; /* before the call moves them */               \
    IOS_TIMED_CALL_NS(type, ret, call);                                                            \
    if (ret >= 0 && in)                                                                            \
        posix_count_rw(in, 0, in_offset, ret, NULL, 1, ns1, ns2);                                  \
    if (ret >= 0 && out)                                                                           \
        posix_count_rw(out, 1, out_offset, ret, NULL, 1, ns1, ns2);                                \
    return ret

IOS_EXPORT ssize_t copy_file_range(int in_fd, off64_t *in_off, int out_fd, off64_t *out_off,
                                   size_t len, unsigned int flags) {
    POSIX_WRAP_TRANSFER(copy_file_range, ssize_t,
                        ios_real.copy_file_range(in_fd, in_off, out_fd, out_off, len, flags), in_fd,
                        in_off ? *in_off : -1, out_fd, out_off ? *out_off : -1);
}
IOS_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
    POSIX_WRAP_TRANSFER(sendfile, ssize_t, ios_real.sendfile(out_fd, in_fd, offset, count), in_fd,
                        offset ? *offset : -1, out_fd, -1);
}
IOS_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count) {
    POSIX_WRAP_TRANSFER(sendfile64, ssize_t, ios_real.sendfile64(out_fd, in_fd, offset, count),
                        in_fd, offset ? *offset : -1, out_fd, -1);
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
    int64_t ns1; /* submitted (ios_now_ns) */
};
static struct ios_map aio_pending;

static void aio_submitted(const void *cb, int fd, int is_write, int64_t offset, int64_t ns1) {
    struct posix_file *f = posix_fd_file(fd);
    if (!f || !ios_enter())
        return;
    uint64_t key = (uint64_t)(uintptr_t)cb;
    struct aio_pending *p = ios_map_get(&aio_pending, key);
    if (!p && (p = malloc(sizeof *p)) != NULL && ios_map_put(&aio_pending, key, p) != 0) {
        free(p);
        p = NULL;
    }
    if (p)
        *p = (struct aio_pending){f, is_write, offset, ns1};
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

#define POSIX_WRAP_AIO_SUBMIT(name, is_write)                                                      \
    IOS_REAL(name);                                                                                \
    if (!ios_recording())                                                                          \
        return ios_real.name(cb);                                                                  \
    aio_submitted(cb, cb->aio_fildes, is_write, cb->aio_offset, ios_now_ns());                     \
    int ret = ios_real.name(cb);                                                                   \
    if (ret != 0) { /* not queued: nothing to collect */                                           \
        struct aio_pending gone;                                                                   \
        aio_taken(cb, &gone);                                                                      \
    }                                                                                              \
    return ret

#define POSIX_WRAP_AIO_RETURN(name)                                                                \
    IOS_REAL(name);                                                                                \
    ssize_t ret = ios_real.name(cb);                                                               \
    struct aio_pending p;                                                                          \
    if (aio_taken(cb, &p) && ret >= 0)                                                             \
        posix_count_rw(p.f, p.is_write, p.offset, ret, (const void *)cb->aio_buf, 1, p.ns1,        \
                       ios_now_ns());                                                              \
    return ret

/* Each read or write request of the list is submitted as aio_read/aio_write submit one; the
 * list's requests are collected one by one with aio_return. */
#define POSIX_WRAP_LIO_LISTIO(name)                                                                \
    IOS_REAL(name);                                                                                \
    if (ios_recording()) {                                                                         \
        int64_t ns1 = ios_now_ns();                                                                \
        for (int i = 0; i < nent; i++)                                                             \
            if (list[i] &&                                                                         \
                (list[i]->aio_lio_opcode == LIO_READ || list[i]->aio_lio_opcode == LIO_WRITE))     \
                aio_submitted(list[i], list[i]->aio_fildes, list[i]->aio_lio_opcode == LIO_WRITE,  \
                              list[i]->aio_offset, ns1);                                           \
    }                                                                                              \
    return ios_real.name(mode, list, nent, sig)

IOS_EXPORT int aio_read(struct aiocb *cb) { POSIX_WRAP_AIO_SUBMIT(aio_read, 0); }
IOS_EXPORT int aio_write(struct aiocb *cb) { POSIX_WRAP_AIO_SUBMIT(aio_write, 1); }
IOS_EXPORT ssize_t aio_return(struct aiocb *cb) { POSIX_WRAP_AIO_RETURN(aio_return); }
IOS_EXPORT int lio_listio(int mode, struct aiocb *const list[], int nent, struct sigevent *sig) {
    POSIX_WRAP_LIO_LISTIO(lio_listio);
}
IOS_EXPORT int aio_read64(struct aiocb64 *cb) { POSIX_WRAP_AIO_SUBMIT(aio_read64, 0); }
IOS_EXPORT int aio_write64(struct aiocb64 *cb) { POSIX_WRAP_AIO_SUBMIT(aio_write64, 1); }
IOS_EXPORT ssize_t aio_return64(struct aiocb64 *cb) { POSIX_WRAP_AIO_RETURN(aio_return64); }
IOS_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int nent,
                            struct sigevent *sig) {
    POSIX_WRAP_LIO_LISTIO(lio_listio64);
}

/* Counted for a file-backed mapping of a tracked fd; Darshan's LD_PRELOAD build leaves it -1. */
#define POSIX_WRAP_MMAP(name, call)                                                                \
    POSIX_WRAP_FD_META(name, void *, call, ret != MAP_FAILED, {                                    \
        f->rec->counters[POSIX_MMAPS]++;                                                           \
        posix_meta_time(f, t1, t2);                                                                \
    })
IOS_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    POSIX_WRAP_MMAP(mmap, ios_real.mmap(addr, len, prot, flags, fd, off));
}
IOS_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    POSIX_WRAP_MMAP(mmap64, ios_real.mmap64(addr, len, prot, flags, fd, off));
}

void ios_posix_aio_reset(void) {
    for (size_t i = 0; i < aio_pending.cap; i++) /* the parent's requests are not the child's */
        if (aio_pending.keys[i])
            free(aio_pending.vals[i]);
    ios_map_free(&aio_pending);
}
