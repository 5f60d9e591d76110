/* A program that closes fd 2 and opens its own data file there (test_failsafe.py::
 * test_warning_never_lands_in_program_data):
 *
 *   close(2); fd = open(DIR/data.txt, O_CREAT|O_WRONLY|O_TRUNC, 0644)  -> fd 2
 *   write(fd, "payload\n", 8); exit 0 (no close: the runtime's shutdown runs with fd 2 open)
 */
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char *path = path_in(dir, "data.txt");
    close(2);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd != 2)
        return 99;
    if (write(fd, "payload\n", 8) != 8)
        return 98;
    return 0;
}
