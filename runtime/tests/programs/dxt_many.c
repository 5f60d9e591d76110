/* Writes DIR/many_writes.dat with argv[2] (default 70000) pwrites of 1 byte at offsets 0, 1, ...
 * (more segments than DXT's 2 MiB hold), then prints "done <n>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    long n = argc > 2 ? atol(argv[2]) : 70000;
    int fd = open(path_in(dir, "many_writes.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    for (long i = 0; i < n; i++)
        EXPECT_RET(pwrite(fd, "x", 1, i), 1);
    EXPECT_RET(close(fd), 0);
    printf("done %ld\n", n);
    return 0;
}
