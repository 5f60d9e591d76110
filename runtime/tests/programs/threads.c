/* 4 threads started together; thread t (0..3):
 *   DIR/thread<t>.dat: open(O_CREAT|O_WRONLY|O_TRUNC, 0644); (t+1)*25 x write(1000); close
 *   DIR/thread<t>.txt: fopen("w"); (t+1)*10 x fwrite(100); fclose
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "common.h"

static const char *dir;
static pthread_barrier_t barrier;

static void *worker(void *arg) {
    int t = (int)(long)arg;
    char name[64];
    _Alignas(64) char buf[1000];
    memset(buf, 'a' + t, sizeof buf);
    pthread_barrier_wait(&barrier);
    snprintf(name, sizeof name, "thread%d.dat", t);
    int fd = open(path_in(dir, name), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    for (int i = 0; i < (t + 1) * 25; i++)
        EXPECT_RET(write(fd, buf, 1000), 1000);
    EXPECT_RET(close(fd), 0);
    snprintf(name, sizeof name, "thread%d.txt", t);
    FILE *f = fopen(path_in(dir, name), "w");
    CHECK(f != NULL, "fopen");
    for (int i = 0; i < (t + 1) * 10; i++)
        EXPECT_RET(fwrite(buf, 1, 100, f), 100);
    EXPECT_RET(fclose(f), 0);
    return NULL;
}

int main(int argc, char **argv) {
    dir = dir_arg(argc, argv);
    pthread_t th[4];
    pthread_barrier_init(&barrier, NULL, 4);
    for (long t = 0; t < 4; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0, "pthread_create");
    for (int t = 0; t < 4; t++)
        CHECK(pthread_join(th[t], NULL) == 0, "pthread_join");
    return 0;
}
