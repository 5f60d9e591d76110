/* Writes 100 bytes to DIR/job.dat and prints "pid=<pid>" on stdout.  Extra arguments are
 * ignored (they only appear in the recorded command line). */
#define _GNU_SOURCE
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    write_filled(dir, "job.dat", 'j', 100);
    printf("pid=%d\n", (int)getpid());
    return 0;
}
