/* POSIX write pattern on DIR/write.dat (see test_posix.py::WRITE_EXPECTED for the derivation).
 *
 *  #  call                                   offset     size   notes
 *  1  open(O_CREAT|O_WRONLY|O_TRUNC, 0640)
 *  2  write                                  0          100
 *  3  write                                  100        1000   consecutive
 *  4  pwrite                                 8192       4096   stride 7092
 *  5  lseek(20000, SEEK_SET)
 *  6  writev {50,50,100}                     20000      200    stride 7712
 *  7  pwritev {2048,2048}                    40960      4096   stride 20760
 *  8  lseek(0, SEEK_SET)
 *  9  write                                  0          100
 * 10  write (buffer+1: unaligned)            100        100    consecutive
 * 11  pwrite                                 300        100    stride 100
 * 12  pwrite                                 500        100    stride 100
 * 13  lseek(1048576, SEEK_SET)
 * 14  write                                  1048576    2097152 stride 1047976
 * 15  pwrite                                 4194304    200000  stride 1048576
 * 16  fsync, 17 fdatasync, 18 close
 * 19  open(O_RDONLY); write -> EBADF (not counted); pwrite(offset -5) -> error; close
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char *path = path_in(dir, "write.dat");
    size_t big = 4u << 20;
    char *buf = aligned_alloc(4096, big);
    CHECK(buf != NULL, "aligned_alloc");
    memset(buf, 'w', big);

    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0640);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(write(fd, buf, 1000), 1000);
    EXPECT_RET(pwrite(fd, buf, 4096, 8192), 4096);
    EXPECT_RET(lseek(fd, 20000, SEEK_SET), 20000);

    struct iovec iov3[3] = {{buf, 50}, {buf + 64, 50}, {buf + 128, 100}};
    EXPECT_RET(writev(fd, iov3, 3), 200);
    struct iovec iov2[2] = {{buf, 2048}, {buf + 2048, 2048}};
    EXPECT_RET(pwritev(fd, iov2, 2, 40960), 4096);

    EXPECT_RET(lseek(fd, 0, SEEK_SET), 0);
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(write(fd, buf + 1, 100), 100);
    EXPECT_RET(pwrite(fd, buf, 100, 300), 100);
    EXPECT_RET(pwrite(fd, buf, 100, 500), 100);

    EXPECT_RET(lseek(fd, 1048576, SEEK_SET), 1048576);
    EXPECT_RET(write(fd, buf, 2097152), 2097152);
    EXPECT_RET(pwrite(fd, buf, 200000, 4194304), 200000);

    EXPECT_RET(fsync(fd), 0);
    EXPECT_RET(fdatasync(fd), 0);
    EXPECT_RET(close(fd), 0);

    /* failing calls on a tracked descriptor: must not be counted */
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open rdonly");
    EXPECT_RET(write(fd, buf, 10), -1);
    EXPECT_RET(pwrite(fd, buf, 10, -5), -1);
    EXPECT_RET(close(fd), 0);

    free(buf);
    free(path);
    return 0;
}
