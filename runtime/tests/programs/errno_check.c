/* Prints the return value and errno of failing (and some succeeding) calls, so that the
 * output with and without the runtime can be compared byte for byte.  DIR must exist and
 * contain a regular file "exists.dat". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static void report(const char *what, long long ret) {
    int e = errno;
    printf("%-28s ret=%lld errno=%d (%s)\n", what, ret, e, e ? strerror(e) : "-");
}

/* errno is set to `pre` just before the call is made */
#define TRY(pre, what, expr)                                                                       \
    do {                                                                                           \
        errno = (pre);                                                                             \
        report(what, (long long)(expr));                                                           \
    } while (0)

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char buf[64] = {0};
    struct stat st;
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    int ro = open(path_in(dir, "exists.dat"), O_RDONLY);
    CHECK(ro >= 0, "open exists.dat");
    int wo = open(path_in(dir, "wonly.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(wo >= 0, "open wonly.dat");

    TRY(0, "open missing", open(path_in(dir, "missing.dat"), O_RDONLY));
    TRY(0, "open dir for writing", open(dir, O_WRONLY));
    TRY(0, "open O_EXCL existing",
        open(path_in(dir, "exists.dat"), O_CREAT | O_EXCL | O_WRONLY, 0600));
    TRY(0, "read bad fd", read(-1, buf, 10));
    TRY(0, "write read-only fd", write(ro, buf, 10));
    TRY(0, "pread negative offset", pread(ro, buf, 10, -1));
    TRY(0, "lseek on pipe", lseek(p[0], 0, SEEK_SET));
    TRY(0, "lseek negative", lseek(ro, -100, SEEK_SET));
    TRY(0, "close bad fd", close(12345));
    TRY(0, "stat missing", stat(path_in(dir, "missing.dat"), &st));
    TRY(0, "fstat bad fd", fstat(-1, &st));
    TRY(0, "dup2 bad fd", dup2(-1, 40));
    TRY(0, "fsync bad fd", fsync(-1));
    TRY(0, "rename missing", rename(path_in(dir, "missing.dat"), path_in(dir, "x.dat")));
    TRY(0, "mmap write-only fd",
        (long long)(mmap(NULL, 4096, PROT_READ, MAP_SHARED, wo, 0) == MAP_FAILED ? -1 : 0));
    TRY(0, "fopen missing", (long long)(fopen(path_in(dir, "missing.dat"), "r") == NULL ? -1 : 0));
    FILE *f = fopen(path_in(dir, "exists.dat"), "r");
    CHECK(f != NULL, "fopen exists");
    TRY(0, "fseek negative", fseek(f, -100, SEEK_SET));
    TRY(0, "fwrite on read stream", (long long)fwrite(buf, 1, 10, f));

    /* successful calls must leave errno alone */
    TRY(4242, "write ok", write(wo, buf, 10));
    TRY(4242, "read ok", read(ro, buf, 10));
    TRY(4242, "lseek ok", lseek(ro, 0, SEEK_SET));
    TRY(4242, "stat ok", stat(path_in(dir, "exists.dat"), &st));
    char *exists = path_in(dir, "exists.dat");
    int fd;
    TRY(4242, "open ok", (fd = open(exists, O_RDONLY)) >= 0 ? 0 : -1);
    close(fd);
    TRY(4242, "fread ok", (long long)fread(buf, 1, 5, f));
    TRY(4242, "fclose ok", fclose(f));
    TRY(4242, "close ok", close(wo));
    return 0;
}
