/* Makes N calls of one kind on files in DIR, so that instruction counts of runs with N and with 0
 * calls, with and without a runtime, isolate the cost the runtime adds to one call.
 * Usage: bench_calls OP N DIR, where OP is one of
 *   pwrite pread read write   64 bytes each, on one descriptor
 *   fwrite fread              64 bytes each, on one stream (opened beside the descriptor)
 *   lseek fstat               on one descriptor
 *   open                      open and close of one file (the pair is one call)
 *   stat                      stat of one file
 *   xstat fxstat              the same through glibc's __xstat/__fxstat, the only stat entries
 *                             Darshan 3.5.0 wraps (glibc >= 2.33 no longer calls them)
 *   create                    open(O_CREAT) + close, stat and unlink of a new name each time
 *   none                      nothing: the fixed cost of a process
 * The setup (one file opened, sized for the reads) does not depend on N beyond the file's size. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIZE 64

/* glibc's _STAT_VER for the __xstat family. */
#if defined(__x86_64__)
#define STAT_VER 1
#else
#define STAT_VER 0
#endif

static char path[4096];
static char buf[SIZE];

/* A descriptor on path, which holds at least (n + 1) * SIZE bytes, the first SIZE written. */
static int open_data(long n) {
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || pwrite(fd, buf, SIZE, 0) != SIZE || ftruncate(fd, (n + 1) * SIZE) != 0)
        return -1;
    return fd;
}

static int run_pwrite(long n, int fd) {
    for (long i = 0; i < n; i++)
        if (pwrite(fd, buf, SIZE, (i % 1024) * SIZE) != SIZE)
            return 1;
    return 0;
}

static int run_pread(long n, int fd) {
    for (long i = 0; i < n; i++)
        if (pread(fd, buf, SIZE, 0) != SIZE)
            return 1;
    return 0;
}

static int run_read(long n, int fd) {
    for (long i = 0; i < n; i++)
        if (read(fd, buf, SIZE) != SIZE)
            return 1;
    return 0;
}

static int run_write(long n, int fd) {
    for (long i = 0; i < n; i++)
        if (write(fd, buf, SIZE) != SIZE)
            return 1;
    return 0;
}

static int run_lseek(long n, int fd) {
    for (long i = 0; i < n; i++)
        if (lseek(fd, (i % 1024) * SIZE, SEEK_SET) < 0)
            return 1;
    return 0;
}

static int run_fstat(long n, int fd) {
    struct stat st;
    for (long i = 0; i < n; i++)
        if (fstat(fd, &st) != 0)
            return 1;
    return 0;
}

static int run_fxstat(long n, int fd) {
    int (*fxstat)(int, int, struct stat *) =
        (int (*)(int, int, struct stat *))dlsym(RTLD_DEFAULT, "__fxstat");
    struct stat st;
    if (!fxstat)
        return 3;
    for (long i = 0; i < n; i++)
        if (fxstat(STAT_VER, fd, &st) != 0)
            return 1;
    return 0;
}

static int run_open(long n, int fd) {
    (void)fd;
    for (long i = 0; i < n; i++) {
        int other = open(path, O_RDONLY);
        if (other < 0 || close(other) != 0)
            return 1;
    }
    return 0;
}

static int run_stat(long n, int fd) {
    struct stat st;
    (void)fd;
    for (long i = 0; i < n; i++)
        if (stat(path, &st) != 0)
            return 1;
    return 0;
}

static int run_xstat(long n, int fd) {
    int (*xstat)(int, const char *, struct stat *) =
        (int (*)(int, const char *, struct stat *))dlsym(RTLD_DEFAULT, "__xstat");
    struct stat st;
    (void)fd;
    if (!xstat)
        return 3;
    for (long i = 0; i < n; i++)
        if (xstat(STAT_VER, path, &st) != 0)
            return 1;
    return 0;
}

static int run_create(long n, int fd) {
    char name[sizeof path + 32];
    struct stat st;
    (void)fd;
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s.%ld", path, i);
        int created = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (created < 0 || close(created) != 0 || stat(name, &st) != 0 || unlink(name) != 0)
            return 1;
    }
    return 0;
}

static int run_fwrite(long n, int fd) {
    FILE *f = fopen(path, "r+");
    (void)fd;
    if (!f)
        return 1;
    for (long i = 0; i < n; i++)
        if (fwrite(buf, 1, SIZE, f) != SIZE)
            return 1;
    return fclose(f) != 0;
}

static int run_fread(long n, int fd) {
    FILE *f = fopen(path, "r");
    (void)fd;
    if (!f)
        return 1;
    for (long i = 0; i < n; i++)
        if (fread(buf, 1, SIZE, f) != SIZE)
            return 1;
    return fclose(f) != 0;
}

static const struct {
    const char *name;
    int (*calls)(long, int); /* n calls, the data file open as fd */
} ops[] = {
    {"pwrite", run_pwrite}, {"pread", run_pread}, {"read", run_read},   {"write", run_write},
    {"fwrite", run_fwrite}, {"fread", run_fread}, {"lseek", run_lseek}, {"fstat", run_fstat},
    {"fxstat", run_fxstat}, {"open", run_open},   {"stat", run_stat},   {"xstat", run_xstat},
    {"create", run_create},
};

static int run(const char *op, long n) {
    if (strcmp(op, "none") == 0)
        return 0;
    int fd = open_data(n);
    if (fd < 0)
        return 1;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].name) == 0) {
            int rc = ops[i].calls(n, fd);
            return rc ? rc : close(fd) != 0;
        }
    fprintf(stderr, "bench_calls: unknown call %s\n", op);
    return 2;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s OP N DIR (see the source for the OPs)\n", argv[0]);
        return 2;
    }
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/bench_calls.dat", argv[3]);
    return run(argv[1], atol(argv[2]));
}
