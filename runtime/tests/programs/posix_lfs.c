/* Large-file-API variants: compiled with -D_FILE_OFFSET_BITS=64 so that open, creat, openat,
 * pread, pwrite, preadv, pwritev, lseek, stat, lstat, fstat and mmap resolve to their *64
 * symbols.  Pattern on DIR/lfs.dat:
 *   open(O_CREAT|O_RDWR|O_TRUNC, 0644)
 *   pwrite 4096 @0; pwritev {1000,1000} @4096; lseek(6096); write 100 @6096
 *   pread 4096 @0; preadv {50,50} @100; lseek(0); read 10 @0
 *   stat, lstat, fstat; mmap(4096, MAP_SHARED, 0); munmap; close
 *   creat(DIR/lfs_creat.dat, 0600); close
 *   openat(AT_FDCWD, DIR/lfs_at.dat, O_CREAT|O_WRONLY, 0600); close
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char *p = path_in(dir, "lfs.dat");
    static _Alignas(64) char buf[8192];
    struct stat st;
    memset(buf, 'l', sizeof buf);
    int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(pwrite(fd, buf, 4096, 0), 4096);
    struct iovec w[2] = {{buf, 1000}, {buf + 1000, 1000}};
    EXPECT_RET(pwritev(fd, w, 2, 4096), 2000);
    EXPECT_RET(lseek(fd, 6096, SEEK_SET), 6096);
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(pread(fd, buf, 4096, 0), 4096);
    struct iovec r[2] = {{buf, 50}, {buf + 56, 50}};
    EXPECT_RET(preadv(fd, r, 2, 100), 100);
    EXPECT_RET(lseek(fd, 0, SEEK_SET), 0);
    EXPECT_RET(read(fd, buf, 10), 10);
    EXPECT_RET(stat(p, &st), 0);
    EXPECT_RET(lstat(p, &st), 0);
    EXPECT_RET(fstat(fd, &st), 0);
    CHECK(st.st_size == 6196, "size");
    void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED, "mmap");
    EXPECT_RET(munmap(m, 4096), 0);
    EXPECT_RET(close(fd), 0);
    fd = creat(path_in(dir, "lfs_creat.dat"), 0600);
    CHECK(fd >= 0, "creat");
    EXPECT_RET(close(fd), 0);
    fd = openat(AT_FDCWD, path_in(dir, "lfs_at.dat"), O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0, "openat");
    EXPECT_RET(close(fd), 0);
    return 0;
}
