/* Touches the standard streams without moving a byte through them, reads nothing from an empty
 * file, and writes 5 bytes to another: a log whose names are exactly those of its records
 * (test_stdio.py). DIR/empty.dat must exist and be empty. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char buf[8];
    EXPECT_RET(fflush(stdout), 0);
    CHECK(fileno(stderr) == 2, "fileno stderr");
    int fd = open(path_in(dir, "empty.dat"), O_RDONLY);
    CHECK(fd >= 0, "open empty.dat");
    EXPECT_RET(read(fd, buf, sizeof buf), 0);
    EXPECT_RET(close(fd), 0);
    FILE *f = fopen(path_in(dir, "empty.dat"), "r");
    CHECK(f != NULL, "fopen empty.dat");
    EXPECT_RET(fread(buf, 1, sizeof buf, f), 0);
    EXPECT_RET(fclose(f), 0);
    fd = open(path_in(dir, "w.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open w.dat");
    EXPECT_RET(write(fd, "12345", 5), 5);
    EXPECT_RET(close(fd), 0);
    return 0;
}
