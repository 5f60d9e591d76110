/* Descriptors made by fcntl and the mkstemp family, and copies inside the kernel
 * (see test_posix.py::test_fcntl_dup_*, test_mkstemp_family, test_kernel_copies).
 * DIR must hold src.dat (8192 bytes), written before the run.
 *
 *   fd = open(DIR/dupfd.dat, O_CREAT|O_WRONLY|O_TRUNC, 0644)
 *   d = fcntl(fd, F_DUPFD, 10); fp = fdopen(d, "w"); fwrite(5000 bytes); fclose(fp)
 *                                       -> numpy.save's way: STDIO 1 fdopen, 5000 bytes
 *   c = fcntl(fd, F_DUPFD_CLOEXEC, 0); fcntl(c, F_GETFD) (passes); write(c, 100); close(c)
 *   fcntl64(fd, F_DUPFD, 0) then close of it; close(fd)
 *                                       -> dupfd.dat: OPENS 4, DUPS 3, WRITES 1 (100 bytes)
 *   mkstemp(DIR/ms-XXXXXX)              write 10, close
 *   mkostemp(DIR/mos-XXXXXX, O_APPEND)  write 20, close
 *   mkstemps(DIR/mss-XXXXXX.dat, 4)     write 30, close
 *   mkostemps(DIR/moss-XXXXXX.dat, 4, O_CLOEXEC)  write 40, close
 *   mkstemp64(DIR/ms64-XXXXXX)          write 50, close
 *   src = open(DIR/src.dat, O_RDONLY); dst = open(DIR/cfr.dat, O_CREAT|O_WRONLY, 0644)
 *   copy_file_range(src, NULL, dst, NULL, 4096, 0)      = 4096  (src @0, dst @0)
 *   in = 4096, out = 8192: copy_file_range(src, &in, dst, &out, 1000, 0) = 1000
 *   sf = open(DIR/sf.dat, O_CREAT|O_WRONLY, 0644)
 *   off = 0: sendfile(sf, src, &off, 2000)            = 2000
 *   sendfile(sf, src, NULL, 500)                      = 500
 *   sf64 = open(DIR/sf64.dat, O_CREAT|O_WRONLY, 0644)
 *   off64 = 100: sendfile64(sf64, src, &off64, 50)    = 50
 *   close all
 */
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static void write_close(int fd, size_t n) {
    static char buf[64];
    CHECK(fd >= 0, "mkstemp family");
    EXPECT_RET(write(fd, buf, n), n);
    EXPECT_RET(close(fd), 0);
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    static char block[5000];

    int fd = open(path_in(dir, "dupfd.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open dupfd.dat");
    int d = fcntl(fd, F_DUPFD, 10);
    CHECK(d >= 10, "fcntl F_DUPFD");
    FILE *fp = fdopen(d, "w");
    CHECK(fp != NULL, "fdopen");
    EXPECT_RET(fwrite(block, 1, sizeof block, fp), sizeof block);
    EXPECT_RET(fclose(fp), 0);
    int c = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    CHECK(c >= 0, "fcntl F_DUPFD_CLOEXEC");
    EXPECT_RET(fcntl(c, F_GETFD), FD_CLOEXEC);
    EXPECT_RET(write(c, block, 100), 100);
    EXPECT_RET(close(c), 0);
    int e = fcntl64(fd, F_DUPFD, 0);
    CHECK(e >= 0, "fcntl64 F_DUPFD");
    EXPECT_RET(close(e), 0);
    EXPECT_RET(close(fd), 0);

    write_close(mkstemp(path_in(dir, "ms-XXXXXX")), 10);
    write_close(mkostemp(path_in(dir, "mos-XXXXXX"), O_APPEND), 20);
    write_close(mkstemps(path_in(dir, "mss-XXXXXX.dat"), 4), 30);
    write_close(mkostemps(path_in(dir, "moss-XXXXXX.dat"), 4, O_CLOEXEC), 40);
    write_close(mkstemp64(path_in(dir, "ms64-XXXXXX")), 50);

    int src = open(path_in(dir, "src.dat"), O_RDONLY);
    CHECK(src >= 0, "open src.dat");
    int dst = open(path_in(dir, "cfr.dat"), O_CREAT | O_WRONLY, 0644);
    CHECK(dst >= 0, "open cfr.dat");
    EXPECT_RET(copy_file_range(src, NULL, dst, NULL, 4096, 0), 4096);
    off64_t in = 4096, out = 8192;
    EXPECT_RET(copy_file_range(src, &in, dst, &out, 1000, 0), 1000);
    int sf = open(path_in(dir, "sf.dat"), O_CREAT | O_WRONLY, 0644);
    CHECK(sf >= 0, "open sf.dat");
    off_t off = 0;
    EXPECT_RET(sendfile(sf, src, &off, 2000), 2000);
    EXPECT_RET(sendfile(sf, src, NULL, 500), 500);
    int sf64 = open(path_in(dir, "sf64.dat"), O_CREAT | O_WRONLY, 0644);
    CHECK(sf64 >= 0, "open sf64.dat");
    off64_t off64 = 100;
    EXPECT_RET(sendfile64(sf64, src, &off64, 50), 50);
    EXPECT_RET(close(sf64), 0);
    EXPECT_RET(close(sf), 0);
    EXPECT_RET(close(dst), 0);
    EXPECT_RET(close(src), 0);
    return 0;
}
