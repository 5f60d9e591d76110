/* Does some I/O, says so, then waits to be killed (see test_killed.py): 5 write()s of 1000
 * bytes to DIR/killed.dat from offset 0, then a stat() of it; prints "ready <pid>" and blocks
 * until a signal ends it. Exit status 99 if a call misbehaves. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    static char buf[1000];
    memset(buf, 'k', sizeof buf);
    int fd = open(path_in(dir, "killed.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    for (int i = 0; i < 5; i++)
        EXPECT_RET(write(fd, buf, sizeof buf), sizeof buf);
    struct stat st;
    EXPECT_RET(stat(path_in(dir, "killed.dat"), &st), 0);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
