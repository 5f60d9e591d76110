/* exec and the process image's log (test_failsafe.py, the exec tests).
 *
 *   exec_image DIR chain: DIR/before.dat: open(O_CREAT|O_WRONLY|O_TRUNC), write 100, close;
 *                         then execl(itself, DIR, "after")
 *   exec_image DIR after: DIR/after.dat: open, write 200, close; exit 0
 *   exec_image DIR fail:  DIR/fail.dat: open, write 100; execl(DIR/missing) fails: stdout
 *                         "errno=<errno>\n"; write 50; stdout "waiting\n"; read 1 byte from
 *                         stdin; close; exit 0
 */
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

static char buf[200];

static void write_file(const char *path, size_t n) {
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, n), n);
    EXPECT_RET(close(fd), 0);
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    CHECK(argc == 3, "usage: exec_image DIR chain|after|fail");
    memset(buf, 'x', sizeof buf);
    if (strcmp(argv[2], "chain") == 0) {
        write_file(path_in(dir, "before.dat"), 100);
        execl(argv[0], argv[0], dir, "after", (char *)NULL);
        CHECK(0, "execl");
    }
    if (strcmp(argv[2], "after") == 0) {
        write_file(path_in(dir, "after.dat"), 200);
        return 0;
    }
    int fd = open(path_in(dir, "fail.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, 100), 100);
    char *missing = path_in(dir, "missing");
    CHECK(execl(missing, missing, (char *)NULL) == -1, "execl of a missing program");
    printf("errno=%d\n", errno);
    EXPECT_RET(write(fd, buf, 50), 50);
    printf("waiting\n");
    fflush(stdout);
    char c;
    EXPECT_RET(read(STDIN_FILENO, &c, 1), 1);
    EXPECT_RET(close(fd), 0);
    return 0;
}
