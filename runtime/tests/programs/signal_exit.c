/* A signal handler that does I/O and ends the process with _exit
 * (test_process_end.py, the _exit tests).
 *
 *   DIR/main.dat: open(O_CREAT|O_RDWR); 10000 x lseek(fd, 0, SEEK_SET), counted in done; then a
 *   SIGALRM in 1 ms, waited for with pause(). The handler: open, write 8 bytes, close
 *   DIR/handler.dat; stdout "<done>\n"; _exit(3)
 *
 * The test also sends the signal (strace) while the main thread holds the runtime's lock, inside
 * the open of main.dat (the first file of its file system: the runtime asks statfs for its block
 * size): _exit must neither wait for that lock nor write a log of records half updated.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"

static char *handler_path;
static volatile long done;

/* done in decimal, by hand: printf is not async-signal-safe. */
static void write_number(long n) {
    char buf[32];
    int i = sizeof buf;
    buf[--i] = '\n';
    do
        buf[--i] = (char)('0' + n % 10);
    while ((n /= 10) > 0);
    (void)!write(STDOUT_FILENO, buf + i, sizeof buf - (size_t)i);
}

static void on_alarm(int sig) {
    (void)sig;
    int fd = open(handler_path, O_CREAT | O_WRONLY | O_APPEND, 0644);
    (void)!write(fd, "handler\n", 8);
    close(fd);
    write_number(done);
    _exit(3);
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char *main_path = path_in(dir, "main.dat");
    handler_path = path_in(dir, "handler.dat");
    struct sigaction sa = {.sa_handler = on_alarm};
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
    int fd = open(main_path, O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "open");
    while (done < 10000) {
        EXPECT_RET(lseek(fd, 0, SEEK_SET), 0);
        done++;
    }
    struct itimerval once = {{0, 0}, {0, 1000}};
    CHECK(setitimer(ITIMER_REAL, &once, NULL) == 0, "setitimer");
    for (;;)
        pause();
}
