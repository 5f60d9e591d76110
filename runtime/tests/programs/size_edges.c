/* One access of each size given, either way, to a file of its own: size_edges DIR SIZE...
 * For each SIZE (bytes, at most 2,147,479,552: Linux's largest single transfer):
 *
 *  1  open DIR/edge_<SIZE>.dat (O_CREAT | O_RDWR | O_TRUNC, 0644)
 *  2  write SIZE bytes                        returns SIZE
 *  3  pread SIZE bytes at offset 0            returns SIZE
 *  4  close, then unlink (so that the files never hold more than the largest SIZE at once)
 *
 * so each file's POSIX record holds one read and one write of SIZE bytes, in the size bin
 * Darshan gives SIZE (analysis/tests/test_size_bins.py runs it at every bin's edges). Prints
 * nothing; exits 0, or 99 when a call returns anything else.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

#define MAX_TRANSFER 2147479552LL

static long long size_arg(const char *text) {
    char *end = NULL;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    CHECK(errno == 0 && end != text && *end == '\0' && n > 0 && n <= MAX_TRANSFER, "SIZE");
    return n;
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    long long largest = 1;
    for (int i = 2; i < argc; i++) {
        long long n = size_arg(argv[i]);
        largest = n > largest ? n : largest;
    }
    char *buf = malloc((size_t)largest);
    CHECK(buf != NULL, "malloc");
    memset(buf, 'e', (size_t)largest);
    for (int i = 2; i < argc; i++) {
        long long n = size_arg(argv[i]);
        char name[64];
        snprintf(name, sizeof name, "edge_%lld.dat", n);
        char *path = path_in(dir, name);
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
        CHECK(fd >= 0, "open");
        EXPECT_RET(write(fd, buf, (size_t)n), n);
        EXPECT_RET(pread(fd, buf, (size_t)n, 0), n);
        EXPECT_RET(close(fd), 0);
        CHECK(unlink(path) == 0, "unlink");
        free(path);
    }
    free(buf);
    return 0;
}
