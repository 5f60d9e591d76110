/* Darshan 3.5.0 quirk: pread/pwrite also move the offset Darshan tracks for later
 * read/write calls (it sets offset = this_offset + bytes for every access).
 * DIR/poff.dat: open(O_CREAT|O_WRONLY|O_TRUNC, 0644); write 100 (kernel offset 0);
 * pwrite 100 @1000; write 100 (kernel offset 100, Darshan-tracked offset 1100); close. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    static _Alignas(64) char buf[100];
    memset(buf, 'p', sizeof buf);
    int fd = open(path_in(dir, "poff.dat"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(pwrite(fd, buf, 100, 1000), 100);
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(lseek(fd, 0, SEEK_CUR), 200);
    EXPECT_RET(close(fd), 0);
    return 0;
}
