/* Writes SIZE_MIB MiB to PATH in 1 MiB writes: one process of the wall-time overhead benchmark.
 * Usage: bench_write PATH SIZE_MIB */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PATH SIZE_MIB\n", argv[0]);
        return 2;
    }
    static char buf[1 << 20];
    memset(buf, 'y', sizeof buf);
    long mib = atol(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (long i = 0; i < mib; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
    return close(fd) != 0;
}
