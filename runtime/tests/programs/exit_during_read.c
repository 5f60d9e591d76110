/* A thread blocked in a wrapped read while the process exits (test_failsafe.py::
 * test_a_read_that_returns_after_shutdown): under strace, its read returns only after the main
 * thread's exit has run the runtime's shutdown, which unmaps the records.
 *
 *   mkfifo(DIR/fifo); thread: fd = open(DIR/fifo, O_RDONLY); read(fd, 1 byte) (blocks)
 *   main: w = open(DIR/fifo, O_WRONLY); write(w, "x", 1); exit(0)
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static const char *fifo;

static void *reader(void *arg) {
    (void)arg;
    char c;
    int fd = open(fifo, O_RDONLY);
    if (fd >= 0)
        (void)!read(fd, &c, 1);
    return NULL;
}

int main(int argc, char **argv) {
    fifo = path_in(dir_arg(argc, argv), "fifo");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, reader, NULL) == 0, "pthread_create");
    int w = open(fifo, O_WRONLY);
    CHECK(w >= 0, "open fifo");
    EXPECT_RET(write(w, "x", 1), 1);
    exit(0);
}
