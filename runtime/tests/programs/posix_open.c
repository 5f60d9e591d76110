/* Open variants and record-name normalization (see test_posix.py::test_open_variants).
 * DIR must be an absolute path without symlinks (the test passes a realpath).
 *
 *   open(DIR/o_open.dat, O_CREAT|O_WRONLY|O_TRUNC, 0600)        -> o_open.dat  mode 0600
 *   open64(DIR/o_open64.dat, O_CREAT|O_WRONLY, 0604)            -> o_open64.dat mode 0604
 *   creat(DIR/o_creat.dat, 0640)                                -> o_creat.dat mode 0640
 *   dfd = open(DIR, O_RDONLY|O_DIRECTORY)                       -> DIR itself
 *   openat(dfd, "o_openat.dat", O_CREAT|O_WRONLY, 0660)         -> DIR/o_openat.dat mode 0660
 *   openat(dfd, DIR/o_abs_at.dat (absolute), O_CREAT, 0606)     -> DIR/o_abs_at.dat mode 0606
 *   __open_2(DIR/o_open.dat, O_RDONLY)                          -> o_open.dat (2nd open)
 *   chdir(DIR); mkdir("sub")
 *   openat(AT_FDCWD, "rel_at.dat", O_CREAT|O_WRONLY, 0600)      -> DIR/rel_at.dat
 *   open("./sub//norm.dat", O_CREAT|O_WRONLY, 0600)             -> DIR/sub/norm.dat
 *   open("sub/./norm.dat", O_RDONLY)                            -> DIR/sub/norm.dat (2nd)
 *   open("DIR//sub/./norm.dat", O_RDONLY)                       -> DIR/sub/norm.dat (3rd)
 *   open("sub/../dotdot.dat", O_CREAT|O_WRONLY, 0600)           -> DIR/sub/../dotdot.dat
 *   open(DIR/missing/none.dat, O_RDONLY) fails                  -> no record
 *   open("/etc/passwd"), open("/dev/null"), open("/proc/self/stat") with I/O -> excluded
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

extern int __open_2(const char *path, int oflag);

static void close_ok(int fd) { EXPECT_RET(close(fd), 0); }

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    static _Alignas(64) char buf[256];
    int fd;

    fd = open(path_in(dir, "o_open.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    CHECK(fd >= 0, "open");
    close_ok(fd);
    fd = open64(path_in(dir, "o_open64.dat"), O_CREAT | O_WRONLY, 0604);
    CHECK(fd >= 0, "open64");
    close_ok(fd);
    fd = creat(path_in(dir, "o_creat.dat"), 0640);
    CHECK(fd >= 0, "creat");
    close_ok(fd);

    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK(dfd >= 0, "open dir");
    fd = openat(dfd, "o_openat.dat", O_CREAT | O_WRONLY, 0660);
    CHECK(fd >= 0, "openat");
    close_ok(fd);
    fd = openat(dfd, path_in(dir, "o_abs_at.dat"), O_CREAT | O_WRONLY, 0606);
    CHECK(fd >= 0, "openat abs");
    close_ok(fd);
    close_ok(dfd);

    fd = __open_2(path_in(dir, "o_open.dat"), O_RDONLY);
    CHECK(fd >= 0, "__open_2");
    close_ok(fd);

    CHECK(chdir(dir) == 0, "chdir");
    CHECK(mkdir("sub", 0755) == 0, "mkdir");
    fd = openat(AT_FDCWD, "rel_at.dat", O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0, "openat cwd");
    close_ok(fd);
    fd = open("./sub//norm.dat", O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0, "open ./sub//norm.dat");
    close_ok(fd);
    fd = open("sub/./norm.dat", O_RDONLY);
    CHECK(fd >= 0, "open sub/./norm.dat");
    close_ok(fd);
    snprintf(buf, sizeof buf, "%s//sub/./norm.dat", dir);
    fd = open(buf, O_RDONLY);
    CHECK(fd >= 0, "open DIR//sub/./norm.dat");
    close_ok(fd);
    fd = open("sub/../dotdot.dat", O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0, "open sub/../dotdot.dat");
    close_ok(fd);

    fd = open(path_in(dir, "missing/none.dat"), O_RDONLY);
    CHECK(fd == -1 && errno == ENOENT, "open missing");

    /* excluded prefixes: never recorded even with I/O on them */
    fd = open("/etc/passwd", O_RDONLY);
    CHECK(fd >= 0, "open /etc/passwd");
    CHECK(read(fd, buf, 16) > 0, "read /etc/passwd");
    close_ok(fd);
    fd = open("/dev/null", O_WRONLY);
    CHECK(fd >= 0, "open /dev/null");
    EXPECT_RET(write(fd, buf, 16), 16);
    close_ok(fd);
    fd = open("/proc/self/stat", O_RDONLY);
    CHECK(fd >= 0, "open /proc/self/stat");
    CHECK(read(fd, buf, 16) > 0, "read /proc/self/stat");
    close_ok(fd);
    return 0;
}
