/* Traced I/O that ends without a shutdown (see test_dxt.py): DIR/a.dat and DIR/b.dat opened
 * (O_CREAT|O_RDWR, 0644), then, in this order,
 *   pwrite a 100 bytes at 0; pwrite b 200 at 0; pwrite a 100 at 100; pread a 50 at 0;
 *   pwrite a 100 at 200; pread b 10 at 5; then n (argv[3]) pwrites of b, 1 byte at 1000 + i
 * so that a's trace is writes (0, 100) (100, 100) (200, 100) and read (0, 50), b's writes
 * (0, 200), (1000 + i, 1) and read (5, 10). Then, by argv[2]:
 *   kill   "ready <pid>" on stdout, and a wait for a signal
 *   _exit  _exit(0)
 *   exec   execl(argv[4], argv[4], NULL) (a program that records nothing) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    CHECK(argc >= 4, "usage: dxt_killed DIR kill|_exit|exec N [PROGRAM]");
    static char buf[200];
    memset(buf, 'd', sizeof buf);
    int a = open(path_in(dir, "a.dat"), O_CREAT | O_RDWR, 0644);
    int b = open(path_in(dir, "b.dat"), O_CREAT | O_RDWR, 0644);
    CHECK(a >= 0 && b >= 0, "open");
    EXPECT_RET(pwrite(a, buf, 100, 0), 100);
    EXPECT_RET(pwrite(b, buf, 200, 0), 200);
    EXPECT_RET(pwrite(a, buf, 100, 100), 100);
    EXPECT_RET(pread(a, buf, 50, 0), 50);
    EXPECT_RET(pwrite(a, buf, 100, 200), 100);
    EXPECT_RET(pread(b, buf, 10, 5), 10);
    for (long i = 0, n = atol(argv[3]); i < n; i++)
        EXPECT_RET(pwrite(b, buf, 1, 1000 + i), 1);
    if (strcmp(argv[2], "_exit") == 0)
        _exit(0);
    if (strcmp(argv[2], "exec") == 0) {
        CHECK(argc == 5, "exec: the program to exec");
        execl(argv[4], argv[4], (char *)NULL);
        CHECK(0, "execl");
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
