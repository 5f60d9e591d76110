/* Metadata operations (see test_posix.py for expected counters).
 *
 * A. stat family on DIR/stat.dat (1234-byte file created by the test; 8 stat calls):
 *    stat, lstat, __xstat(1,..), __lxstat(1,..), fstatat(AT_FDCWD,..), statx, then
 *    open(O_RDONLY), fstat, __fxstat(1,..), close.
 *    stat(DIR) (a directory) and stat(DIR/missing.dat) (ENOENT) are also called.
 * B. dup family on DIR/dup.dat: open(O_CREAT|O_WRONLY|O_TRUNC, 0644); dup; dup2(->50);
 *    dup3(->51, O_CLOEXEC); write 10 bytes through each of dup, 50, 51, original fd
 *    (offsets 0, 10, 20, 30); close all four.
 * C. fileno on DIR/fileno.dat: fopen("w"); fileno; write(fileno fd, 3 bytes); fclose.
 * All buffers are 64-byte aligned (MEM_NOT_ALIGNED stays 0).
 * D. rename: ren_a.dat created (open O_CREAT|O_WRONLY 0644, write 7, close);
 *    rename(ren_a -> ren_b); rename(ren_b -> ren_c); ren_a2.dat created (open, close);
 *    rename(ren_a2 -> ren_c); rename(untracked.dat -> untracked_target.dat) where
 *    untracked.dat was created by the test (never opened by this program).
 * E. mmap on DIR/mmap.dat: open(O_CREAT|O_RDWR|O_TRUNC, 0600); ftruncate 8192;
 *    mmap(4096, MAP_SHARED, off 0); mmap(4096, MAP_PRIVATE, off 4096);
 *    anonymous mmap (no fd); munmaps; close.
 * F. read/write switches on DIR/mix.dat:
 *    open(O_CREAT|O_RDWR|O_TRUNC, 0600); write 4096 @0; lseek 0; read 4096 @0;
 *    write 4096 @4096; lseek 4096; read 4096 @4096; lseek(-10) fails; close;
 *    open(O_RDWR); write 100 @0; fstat; close.
 * G. close resets the last byte: DIR/closereset.dat open(O_CREAT|O_WRONLY|O_TRUNC, 0644);
 *    fd2 = dup(fd); write 100 @0; close(fd2); write 100 @100 (after the close: sequential,
 *    not consecutive); close(fd).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* old glibc stat entry points: still exported by glibc 2.36 (default version), no longer
 * declared in <sys/stat.h> */
extern int __xstat(int ver, const char *path, struct stat *buf);
extern int __lxstat(int ver, const char *path, struct stat *buf);
extern int __fxstat(int ver, int fd, struct stat *buf);

/* The buffer of every write and read: 64-byte aligned. */
static _Alignas(64) char buf[8192];

/* A. stat family */
static void stat_family(const char *dir) {
    struct stat st;
    struct statx stx;
    char *sp = path_in(dir, "stat.dat");
    EXPECT_RET(stat(sp, &st), 0);
    CHECK(st.st_size == 1234, "stat size");
    EXPECT_RET(lstat(sp, &st), 0);
    EXPECT_RET(__xstat(1, sp, &st), 0);
    CHECK(st.st_size == 1234, "__xstat size");
    EXPECT_RET(__lxstat(1, sp, &st), 0);
    EXPECT_RET(fstatat(AT_FDCWD, sp, &st, 0), 0);
    EXPECT_RET(statx(AT_FDCWD, sp, 0, STATX_BASIC_STATS, &stx), 0);
    CHECK(stx.stx_size == 1234, "statx size");
    int fd = open(sp, O_RDONLY);
    CHECK(fd >= 0, "open stat.dat");
    EXPECT_RET(fstat(fd, &st), 0);
    EXPECT_RET(__fxstat(1, fd, &st), 0);
    CHECK(st.st_size == 1234, "__fxstat size");
    EXPECT_RET(close(fd), 0);
    EXPECT_RET(stat(dir, &st), 0);
    CHECK(S_ISDIR(st.st_mode), "dir");
    EXPECT_RET(stat(path_in(dir, "missing.dat"), &st), -1);
}

/* B. dup family */
static void dup_family(const char *dir) {
    int fd = open(path_in(dir, "dup.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open dup.dat");
    int fd2 = dup(fd);
    CHECK(fd2 >= 0, "dup");
    EXPECT_RET(dup2(fd, 50), 50);
    EXPECT_RET(dup3(fd, 51, O_CLOEXEC), 51);
    EXPECT_RET(write(fd2, buf, 10), 10);
    EXPECT_RET(write(50, buf, 10), 10);
    EXPECT_RET(write(51, buf, 10), 10);
    EXPECT_RET(write(fd, buf, 10), 10);
    EXPECT_RET(close(fd2), 0);
    EXPECT_RET(close(50), 0);
    EXPECT_RET(close(51), 0);
    EXPECT_RET(close(fd), 0);
}

/* C. fileno */
static void stream_descriptor(const char *dir) {
    FILE *f = fopen(path_in(dir, "fileno.dat"), "w");
    CHECK(f != NULL, "fopen fileno.dat");
    int n = fileno(f);
    CHECK(n >= 0, "fileno");
    EXPECT_RET(write(n, buf, 3), 3);
    EXPECT_RET(fclose(f), 0);
}

/* D. rename */
static void renames(const char *dir) {
    int fd = open(path_in(dir, "ren_a.dat"), O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0, "open ren_a");
    EXPECT_RET(write(fd, buf, 7), 7);
    EXPECT_RET(close(fd), 0);
    EXPECT_RET(rename(path_in(dir, "ren_a.dat"), path_in(dir, "ren_b.dat")), 0);
    EXPECT_RET(rename(path_in(dir, "ren_b.dat"), path_in(dir, "ren_c.dat")), 0);
    fd = open(path_in(dir, "ren_a2.dat"), O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0, "open ren_a2");
    EXPECT_RET(close(fd), 0);
    EXPECT_RET(rename(path_in(dir, "ren_a2.dat"), path_in(dir, "ren_c.dat")), 0);
    EXPECT_RET(rename(path_in(dir, "untracked.dat"), path_in(dir, "untracked_target.dat")), 0);
}

/* E. mmap */
static void mappings(const char *dir) {
    int fd = open(path_in(dir, "mmap.dat"), O_CREAT | O_RDWR | O_TRUNC, 0600);
    CHECK(fd >= 0, "open mmap.dat");
    EXPECT_RET(ftruncate(fd, 8192), 0);
    void *p1 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(p1 != MAP_FAILED, "mmap shared");
    void *p2 = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 4096);
    CHECK(p2 != MAP_FAILED, "mmap private");
    void *p3 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p3 != MAP_FAILED, "mmap anon");
    ((char *)p1)[0] = 'x';
    EXPECT_RET(munmap(p1, 4096), 0);
    EXPECT_RET(munmap(p2, 4096), 0);
    EXPECT_RET(munmap(p3, 4096), 0);
    EXPECT_RET(close(fd), 0);
}

/* F. read/write switches */
static void switches(const char *dir) {
    struct stat st;
    char *mp = path_in(dir, "mix.dat");
    int fd = open(mp, O_CREAT | O_RDWR | O_TRUNC, 0600);
    CHECK(fd >= 0, "open mix.dat");
    EXPECT_RET(write(fd, buf, 4096), 4096);
    EXPECT_RET(lseek(fd, 0, SEEK_SET), 0);
    EXPECT_RET(read(fd, buf, 4096), 4096);
    EXPECT_RET(write(fd, buf, 4096), 4096);
    EXPECT_RET(lseek(fd, 4096, SEEK_SET), 4096);
    EXPECT_RET(read(fd, buf, 4096), 4096);
    EXPECT_RET(lseek(fd, -10, SEEK_SET), -1);
    EXPECT_RET(close(fd), 0);
    fd = open(mp, O_RDWR);
    CHECK(fd >= 0, "reopen mix.dat");
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(fstat(fd, &st), 0);
    EXPECT_RET(close(fd), 0);
}

/* G. close resets the last byte accessed */
static void close_resets(const char *dir) {
    int fd = open(path_in(dir, "closereset.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open closereset.dat");
    int fd2 = dup(fd);
    CHECK(fd2 >= 0, "dup");
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(close(fd2), 0);
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(close(fd), 0);
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    memset(buf, 'm', sizeof buf);
    stat_family(dir);
    dup_family(dir);
    stream_descriptor(dir);
    renames(dir);
    mappings(dir);
    switches(dir);
    close_resets(dir);
    return 0;
}
