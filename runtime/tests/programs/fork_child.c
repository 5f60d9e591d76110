/* Parent writes DIR/parent_before.dat (100 bytes), forks; the child writes DIR/child.dat
 * (200 bytes) and exit(0)s; the parent waits, writes DIR/parent_after.dat (300 bytes) and
 * prints "parent=<pid> child=<pid> status=<child exit status>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static void write_file(const char *dir, const char *name, size_t n) {
    static _Alignas(64) char buf[512];
    memset(buf, 'f', sizeof buf);
    int fd = open(path_in(dir, name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, n), n);
    EXPECT_RET(close(fd), 0);
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    write_file(dir, "parent_before.dat", 100);
    pid_t child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) {
        write_file(dir, "child.dat", 200);
        exit(0);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child, "waitpid");
    write_file(dir, "parent_after.dat", 300);
    printf("parent=%d child=%d status=%d\n", (int)getpid(), (int)child,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
