/* 16 threads started together while the runtime's descriptor table does not exist yet: half of
 * them write to an untracked descriptor (/dev/null, opened before the threads: every write looks
 * the table up) while the others make the first opens, which create the table.
 *
 *   thread t (0..15): if t is even, 2000 x write(null, 1 byte) first;
 *   then 500 x { open(DIR/t<t>.dat, O_CREAT|O_WRONLY|O_APPEND); write(100 bytes); close }
 *   then 500 x { fopen(DIR/t<t>.txt, "a"); fwrite(10 bytes); fclose }
 * A descriptor number (a FILE address) one thread's close frees is at once another's open.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "common.h"

#define THREADS 16
static const char *dir;
static int null_fd;
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    int t = (int)(long)arg;
    char name[32], buf[100];
    memset(buf, 'a' + t, sizeof buf);
    snprintf(name, sizeof name, "t%d.dat", t);
    char *path = path_in(dir, name);
    pthread_barrier_wait(&barrier);
    for (int i = 0; t % 2 == 0 && i < 2000; i++)
        EXPECT_RET(write(null_fd, buf, 1), 1);
    for (int i = 0; i < 500; i++) {
        int fd = open(path, O_CREAT | O_WRONLY | O_APPEND, 0644);
        CHECK(fd >= 0, "open");
        EXPECT_RET(write(fd, buf, sizeof buf), sizeof buf);
        EXPECT_RET(close(fd), 0);
    }
    snprintf(name, sizeof name, "t%d.txt", t);
    path = path_in(dir, name);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "a");
        CHECK(f != NULL, "fopen");
        EXPECT_RET(fwrite(buf, 1, 10, f), 10);
        EXPECT_RET(fclose(f), 0);
    }
    return NULL;
}

int main(int argc, char **argv) {
    dir = dir_arg(argc, argv);
    null_fd = open("/dev/null", O_WRONLY);
    CHECK(null_fd >= 0, "open /dev/null");
    pthread_t th[THREADS];
    CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0, "barrier");
    for (long t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(th[t], NULL) == 0, "pthread_join");
    return 0;
}
