/* Memory alignment pattern on DIR/align.dat (buffer is 64-byte aligned):
 *   write(buf,100) write(buf+8,100) write(buf+1,100) write(buf+4,100)
 *   writev{buf:50, buf+16:50}  writev{buf:50, buf+12:50}
 *   pread(buf+32, 100, 0)  pread(buf+24, 100, 0)
 * Unaligned with alignment 8:  buf+1, buf+4, writev#2                 -> 3
 * Unaligned with alignment 16: buf+8, buf+1, buf+4, writev#2, buf+24  -> 5
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char *buf = aligned_alloc(64, 4096);
    CHECK(buf != NULL, "aligned_alloc");
    memset(buf, 'q', 4096);
    int fd = open(path_in(dir, "align.dat"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0, "open");
    EXPECT_RET(write(fd, buf, 100), 100);
    EXPECT_RET(write(fd, buf + 8, 100), 100);
    EXPECT_RET(write(fd, buf + 1, 100), 100);
    EXPECT_RET(write(fd, buf + 4, 100), 100);
    struct iovec a[2] = {{buf, 50}, {buf + 16, 50}};
    EXPECT_RET(writev(fd, a, 2), 100);
    struct iovec b[2] = {{buf, 50}, {buf + 12, 50}};
    EXPECT_RET(writev(fd, b, 2), 100);
    EXPECT_RET(pread(fd, buf + 32, 100, 0), 100);
    EXPECT_RET(pread(fd, buf + 24, 100, 0), 100);
    EXPECT_RET(close(fd), 0);
    return 0;
}
