/* Writes 64 bytes to DIR/exit.dat, prints a line, then ends with status 3 by
 * argv[2] = "return" (default) | "exit" | "_exit". With argv[3] = "silent" it does no I/O at all:
 * a process that records nothing. */
#define _GNU_SOURCE
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    const char *how = argc > 2 ? argv[2] : "return";
    int silent = argc > 3 && strcmp(argv[3], "silent") == 0;
    if (!silent) {
        write_filled(dir, "exit.dat", 'e', 64);
        printf("exiting with 3 via %s\n", how);
        fflush(stdout);
    }
    if (strcmp(how, "exit") == 0)
        exit(3);
    if (strcmp(how, "_exit") == 0)
        _exit(3);
    return 3;
}
