/* Helpers shared by the runtime test programs.
 *
 * Every program performs a fixed, documented I/O pattern; the expected Darshan counters are
 * derived by hand in the corresponding test_*.py.  Any call that does not return what the
 * pattern assumes makes the program exit with status 99 (so a test can never silently compare
 * against a different pattern).  Diagnostics go to stderr only on such failures.
 */
#ifndef IOSTUDY_TEST_COMMON_H
#define IOSTUDY_TEST_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAILED %s:%d: %s (errno %d: %s)\n", __FILE__, __LINE__, what, errno,  \
                    strerror(errno));                                                              \
            exit(99);                                                                              \
        }                                                                                          \
    } while (0)

/* expect a size-returning call to return exactly `want` */
#define EXPECT_RET(call, want)                                                                     \
    do {                                                                                           \
        long long r_ = (long long)(call);                                                          \
        if (r_ != (long long)(want)) {                                                             \
            fprintf(stderr, "FAILED %s:%d: %s returned %lld, expected %lld (errno %d)\n",          \
                    __FILE__, __LINE__, #call, r_, (long long)(want), errno);                      \
            exit(99);                                                                              \
        }                                                                                          \
    } while (0)

/* Calls vfprintf itself (printf-style callers reach it only through fprintf). */
static inline int my_vfprintf(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

static inline char *path_in(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    CHECK(p != NULL, "malloc");
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Creates (or truncates) dir/name, 0644, and writes n (<= 4096) bytes of c to it in one write()
 * from a 64-byte aligned buffer: open, write, close. */
static inline void write_filled(const char *dir, const char *name, char c, size_t n) {
    static _Alignas(64) char buf[4096];
    CHECK(n <= sizeof buf, "write_filled: n");
    memset(buf, c, n);
    int fd = open(path_in(dir, name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, n), n);
    EXPECT_RET(close(fd), 0);
}

static inline const char *dir_arg(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR ...\n", argv[0]);
        exit(2);
    }
    return argv[1];
}

#endif
