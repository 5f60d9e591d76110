/* Writes 100 bytes to DIR/job.dat and prints "pid=<pid>" on stdout.  Extra arguments are
 * ignored (they only appear in the recorded command line). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    static _Alignas(64) char buf[100];
    memset(buf, 'j', sizeof buf);
    int fd = open(path_in(dir, "job.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(close(fd), 0);
    printf("pid=%d\n", (int)getpid());
    return 0;
}
