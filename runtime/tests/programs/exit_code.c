/* Writes 64 bytes to DIR/exit.dat, prints a line, then ends with status 3 by
 * argv[2] = "return" (default) | "exit" | "_exit". With argv[3] = "silent" it does no I/O at all:
 * a process that records nothing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    const char *how = argc > 2 ? argv[2] : "return";
    int silent = argc > 3 && strcmp(argv[3], "silent") == 0;
    if (!silent) {
        static _Alignas(64) char buf[64];
        memset(buf, 'e', sizeof buf);
        int fd = open(path_in(dir, "exit.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        CHECK(fd >= 0, "open");
        EXPECT_RET(write(fd, buf, 64), 64);
        EXPECT_RET(close(fd), 0);
        printf("exiting with 3 via %s\n", how);
        fflush(stdout);
    }
    if (strcmp(how, "exit") == 0)
        exit(3);
    if (strcmp(how, "_exit") == 0)
        _exit(3);
    return 3;
}
