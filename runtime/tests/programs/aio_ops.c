/* POSIX AIO (see test_posix.py::test_aio): requests counted when collected with aio_return.
 *
 *   fd = open(DIR/aio.dat, O_CREAT|O_RDWR|O_TRUNC, 0644)
 *   aio_write(4096 bytes @0) and aio_write(1000 @8192), both waited for, aio_return = 4096, 1000
 *   aio_read(2000 @100), waited for, aio_return = 2000
 *   lio_listio(LIO_WAIT, [write 500 @20000, read 300 @0, LIO_NOP]), aio_return = 500, 300
 *   aio_write64(64 @30000), waited for, aio_return64 = 64
 *   close(fd)
 */
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE
#include <aio.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static char buf[8192];

static void wait_for(const struct aiocb *cb) {
    const struct aiocb *list[1] = {cb};
    while (aio_error(cb) == EINPROGRESS)
        aio_suspend(list, 1, NULL);
    EXPECT_RET(aio_error(cb), 0);
}

static struct aiocb request(int fd, int opcode, size_t n, off_t at) {
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = buf;
    cb.aio_nbytes = n;
    cb.aio_offset = at;
    cb.aio_lio_opcode = opcode;
    return cb;
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    int fd = open(path_in(dir, "aio.dat"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0, "open aio.dat");

    struct aiocb a = request(fd, LIO_WRITE, 4096, 0), b = request(fd, LIO_WRITE, 1000, 8192);
    EXPECT_RET(aio_write(&a), 0);
    EXPECT_RET(aio_write(&b), 0);
    wait_for(&a);
    wait_for(&b);
    EXPECT_RET(aio_return(&a), 4096);
    EXPECT_RET(aio_return(&b), 1000);

    struct aiocb c = request(fd, LIO_READ, 2000, 100);
    EXPECT_RET(aio_read(&c), 0);
    wait_for(&c);
    EXPECT_RET(aio_return(&c), 2000);

    struct aiocb w = request(fd, LIO_WRITE, 500, 20000), r = request(fd, LIO_READ, 300, 0);
    struct aiocb nop = request(fd, LIO_NOP, 0, 0);
    struct aiocb *list[3] = {&w, &r, &nop};
    EXPECT_RET(lio_listio(LIO_WAIT, list, 3, NULL), 0);
    EXPECT_RET(aio_return(&w), 500);
    EXPECT_RET(aio_return(&r), 300);

    struct aiocb64 big;
    memset(&big, 0, sizeof big);
    big.aio_fildes = fd;
    big.aio_buf = buf;
    big.aio_nbytes = 64;
    big.aio_offset = 30000;
    EXPECT_RET(aio_write64(&big), 0);
    while (aio_error64(&big) == EINPROGRESS)
        usleep(1000);
    EXPECT_RET(aio_return64(&big), 64);

    EXPECT_RET(close(fd), 0);
    return 0;
}
