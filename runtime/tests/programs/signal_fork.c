/* fork from a signal handler while the main thread is in and out of wrapped calls
 * (test_failsafe.py, the fork tests).
 *
 *   signal_fork DIR N: SIGALRM every 200 us until N children were forked (N = 0: no timer, the
 *   signal comes from outside, and one child is forked). DIR/main.dat: open(O_CREAT|O_RDWR);
 *   lseek(fd, 0, SEEK_SET) at least 1000 times and until the children were forked, counted in
 *   done; every child is waited for; stdout: "<done>\n"; exit 0.
 *   The handler forks; child k: open(DIR/child<k>.dat, O_CREAT|O_WRONLY|O_TRUNC), write 10
 *   bytes, close, _exit(0).
 *
 * The test sends the signal (strace) while the main thread holds the runtime's lock, inside the
 * open of main.dat (the runtime asks statfs for the block size of its file system): the fork
 * must not wait for that lock (it is its own), and the child must not finish the interrupted
 * update in the parent's records.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define MAX_CHILDREN 1000
static char *child_path[MAX_CHILDREN];
static volatile long forked, wanted;

static void on_alarm(int sig) {
    (void)sig;
    if (forked >= wanted)
        return;
    int errno_saved = errno;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(child_path[forked], O_CREAT | O_WRONLY | O_TRUNC, 0644);
        int ok = fd >= 0 && write(fd, "child data", 10) == 10 && close(fd) == 0;
        _exit(ok ? 0 : 99);
    }
    if (pid > 0)
        forked++;
    errno = errno_saved;
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    CHECK(argc == 3, "usage: signal_fork DIR N");
    long timed = atol(argv[2]);
    CHECK(timed >= 0 && timed <= MAX_CHILDREN, "N");
    wanted = timed ? timed : 1;
    for (long k = 0; k < wanted; k++) {
        char name[32];
        snprintf(name, sizeof name, "child%ld.dat", k);
        child_path[k] = path_in(dir, name);
    }
    char *main_path = path_in(dir, "main.dat");
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0, "sigaction");
    struct itimerval every = {{0, 200}, {0, 200}};
    CHECK(!timed || setitimer(ITIMER_REAL, &every, NULL) == 0, "setitimer");
    int fd = open(main_path, O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "open");
    long done = 0;
    while (done < 1000 || forked < wanted) {
        EXPECT_RET(lseek(fd, 0, SEEK_SET), 0);
        done++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0, "setitimer");
    int status;
    for (long k = 0; k < wanted; k++)
        CHECK(wait(&status) > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child");
    printf("%ld\n", done);
    return 0;
}
