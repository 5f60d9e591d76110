/* Creates argv[2] (default 500) files DIR/many_<i>.dat, each written with one 10-byte write,
 * then prints "done <n>" and ends by argv[3] (default return):
 *   return  returns 0 from main
 *   again   first opens each file once more through the path DIR//many_<i>.dat (the same
 *           file, named otherwise) and writes 10 bytes at offset 10 in one pwrite; then returns
 *   _exit   _exit(0) (stdout flushed first)
 *   exec    execl(argv[4], argv[4], NULL) (stdout flushed first; a program that records
 *           nothing)
 *   kill    "ready <pid>" on stdout, and a wait for a signal */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    int n = argc > 2 ? atoi(argv[2]) : 500;
    const char *end = argc > 3 ? argv[3] : "return";
    char name[64];
    static _Alignas(64) char data[10] = "0123456789";
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "many_%03d.dat", i);
        char *p = path_in(dir, name);
        int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        CHECK(fd >= 0, "open");
        EXPECT_RET(write(fd, data, 10), 10);
        EXPECT_RET(close(fd), 0);
        free(p);
    }
    for (int i = 0; strcmp(end, "again") == 0 && i < n; i++) {
        snprintf(name, sizeof name, "/many_%03d.dat", i);
        char *p = path_in(dir, name);
        int fd = open(p, O_WRONLY);
        CHECK(fd >= 0, "open");
        EXPECT_RET(pwrite(fd, data, 10, 10), 10);
        EXPECT_RET(close(fd), 0);
        free(p);
    }
    printf("done %d\n", n);
    fflush(stdout);
    if (strcmp(end, "_exit") == 0)
        _exit(0);
    if (strcmp(end, "exec") == 0) {
        CHECK(argc == 5, "exec: the program to exec");
        execl(argv[4], argv[4], (char *)NULL);
        CHECK(0, "execl");
    }
    if (strcmp(end, "kill") == 0) {
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        for (;;)
            pause();
    }
    return 0;
}
