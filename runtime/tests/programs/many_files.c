/* Creates argv[2] (default 500) files DIR/many_<i>.dat, each written with one 10-byte write;
 * then, when argv[3] is "again", opens each once more through the path DIR//many_<i>.dat (the
 * same file, named otherwise) and writes 10 bytes at offset 10 in one pwrite; then prints
 * "done <n>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    int n = argc > 2 ? atoi(argv[2]) : 500;
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
    for (int i = 0; argc > 3 && strcmp(argv[3], "again") == 0 && i < n; i++) {
        snprintf(name, sizeof name, "/many_%03d.dat", i);
        char *p = path_in(dir, name);
        int fd = open(p, O_WRONLY);
        CHECK(fd >= 0, "open");
        EXPECT_RET(pwrite(fd, data, 10, 10), 10);
        EXPECT_RET(close(fd), 0);
        free(p);
    }
    printf("done %d\n", n);
    return 0;
}
