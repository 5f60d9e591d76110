/* Two bursts of I/O separated by a 0.45 s sleep (see test_heatmap.py):
 *   DIR/hm.dat  open(O_CREAT|O_WRONLY|O_TRUNC, 0644); write 1000; [sleep]; write 2000; close
 *   DIR/hm.txt  fopen("w"); fwrite 500; [sleep]; fwrite 700; fclose
 *   then DIR/hm.dat is reopened read-only and read back completely (3000 bytes, one read)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    static _Alignas(64) char buf[4096];
    memset(buf, 'h', sizeof buf);
    int fd = open(path_in(dir, "hm.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    FILE *f = fopen(path_in(dir, "hm.txt"), "w");
    CHECK(f != NULL, "fopen");
    EXPECT_RET(write(fd, buf, 1000), 1000);
    EXPECT_RET(fwrite(buf, 1, 500, f), 500);
    struct timespec ts = {0, 450000000L};
    CHECK(nanosleep(&ts, NULL) == 0, "nanosleep");
    EXPECT_RET(write(fd, buf, 2000), 2000);
    EXPECT_RET(fwrite(buf, 1, 700, f), 700);
    EXPECT_RET(close(fd), 0);
    EXPECT_RET(fclose(f), 0);
    fd = open(path_in(dir, "hm.dat"), O_RDONLY);
    CHECK(fd >= 0, "reopen");
    EXPECT_RET(read(fd, buf, sizeof buf), 3000);
    EXPECT_RET(close(fd), 0);
    return 0;
}
