/* Makes N calls of one kind (pwrite, pread or fwrite, 64 bytes each) on a file in DIR, so that
 * instruction counts of runs with N and with 0 calls, with and without the runtime, isolate the
 * cost the runtime adds to one call. Usage: bench_calls pwrite|pread|fwrite N DIR */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s pwrite|pread|fwrite N DIR\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    char path[4096], buf[64];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/bench_calls.dat", argv[3]);
    if (strcmp(argv[1], "fwrite") == 0) {
        FILE *f = fopen(path, "w");
        if (!f)
            return 1;
        for (long i = 0; i < n; i++)
            fwrite(buf, 1, sizeof buf, f);
        return fclose(f) != 0;
    }
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || pwrite(fd, buf, sizeof buf, 0) != sizeof buf)
        return 1;
    int is_write = strcmp(argv[1], "pwrite") == 0;
    for (long i = 0; i < n; i++) {
        ssize_t rc =
            is_write ? pwrite(fd, buf, sizeof buf, (i % 1024) * 64) : pread(fd, buf, sizeof buf, 0);
        if (rc != sizeof buf)
            return 1;
    }
    return close(fd) != 0;
}
