/* POSIX read pattern on DIR/read.dat, a 65536-byte file created by the test beforehand
 * (see test_posix.py::READ_EXPECTED for the derivation).
 *
 *  #  call                                   offset  returns
 *  1  open(O_RDONLY)
 *  2  read 1000                              0       1000
 *  3  read 1000                              1000    1000   consecutive
 *  4  pread 4096 @8192                       8192    4096   stride 6192
 *  5  lseek(16384)
 *  6  readv {512,512}                        16384   1024   stride 4096
 *  7  preadv {2048,2049} @20000              20000   4097   stride 2592
 *  8  lseek(65436)
 *  9  read 1000                              65436   100    short read, stride 41339
 * 10  read 1000                              65536   0      EOF: counted, 0 bytes, consecutive
 * 11  lseek(101)
 * 12  read 10 into buffer+1 (unaligned)      101     10
 * 13  pread 10 @-1                                   -1     error, not counted
 * 14  close; 15 open(O_RDONLY)
 * 16  read 65536                             0       65536
 * 17  close
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char *path = path_in(dir, "read.dat");
    char *buf = aligned_alloc(4096, 1 << 20);
    CHECK(buf != NULL, "aligned_alloc");

    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open");
    EXPECT_RET(read(fd, buf, 1000), 1000);
    EXPECT_RET(read(fd, buf, 1000), 1000);
    EXPECT_RET(pread(fd, buf, 4096, 8192), 4096);
    EXPECT_RET(lseek(fd, 16384, SEEK_SET), 16384);
    struct iovec iov2[2] = {{buf, 512}, {buf + 512, 512}};
    EXPECT_RET(readv(fd, iov2, 2), 1024);
    struct iovec iovp[2] = {{buf, 2048}, {buf + 2048, 2049}};
    EXPECT_RET(preadv(fd, iovp, 2, 20000), 4097);
    EXPECT_RET(lseek(fd, 65436, SEEK_SET), 65436);
    EXPECT_RET(read(fd, buf, 1000), 100);
    EXPECT_RET(read(fd, buf, 1000), 0);
    EXPECT_RET(lseek(fd, 101, SEEK_SET), 101);
    EXPECT_RET(read(fd, buf + 1, 10), 10);
    EXPECT_RET(pread(fd, buf, 10, -1), -1);
    EXPECT_RET(close(fd), 0);

    fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "reopen");
    EXPECT_RET(read(fd, buf, 65536), 65536);
    EXPECT_RET(close(fd), 0);

    free(buf);
    free(path);
    return 0;
}
