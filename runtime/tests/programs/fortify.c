/* _FORTIFY_SOURCE=2 entry points (compiled with -O2 -D_FORTIFY_SOURCE=2): the calls below
 * become __open_2, __read_chk, __pread_chk, __fread_chk, __fgets_chk, __fprintf_chk,
 * __vfprintf_chk and __printf_chk (what distributions' default build flags produce).  DIR holds
 * fort.dat (8192 bytes, created by the test) and fort.txt (a text file whose first line is 150
 * bytes incl. its newline). DIR/fort.dat   fd = open(path, flags) [__open_2]; read 1000
 * [__read_chk]; close DIR/fort_p.dat fd = open(path, flags) [__open_2]; pread 1000 @2000
 * [__pread_chk]; close DIR/fort.txt   fopen "r"; fread 100 [__fread_chk]; fgets [__fgets_chk] 50
 * bytes; fclose DIR/fort_out.txt fopen "w"; fprintf "%d\n" 12345 (6 bytes); vfprintf "%s" "ab" (2);
 * fclose stdout: printf "%s\n" "fortified" (10 bytes); vprintf "x=%d\n" 7 (4 bytes; glibc's
 *           fortified vprintf calls __vfprintf_chk on stdout)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>

#include "common.h"

static int my_vprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vprintf(fmt, ap);
    va_end(ap);
    return r;
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    static _Alignas(64) char buf[4096];
    /* not compile-time constants, so that the checking variants are called */
    int flags = argc > 100 ? O_RDWR : O_RDONLY;
    volatile size_t n1000 = 1000, n100 = 100;

    int fd = open(path_in(dir, "fort.dat"), flags);
    CHECK(fd >= 0, "open fort.dat");
    EXPECT_RET(read(fd, buf, n1000), 1000);
    EXPECT_RET(close(fd), 0);
    fd = open(path_in(dir, "fort_p.dat"), flags);
    CHECK(fd >= 0, "open fort_p.dat");
    EXPECT_RET(pread(fd, buf, n1000, 2000), 1000);
    EXPECT_RET(close(fd), 0);

    FILE *f = fopen(path_in(dir, "fort.txt"), "r");
    CHECK(f != NULL, "fopen fort.txt");
    EXPECT_RET(fread(buf, 1, n100, f), 100);
    CHECK(fgets(buf, (int)n1000, f) != NULL, "fgets");
    EXPECT_RET(strlen(buf), 50);
    EXPECT_RET(fclose(f), 0);

    FILE *o = fopen(path_in(dir, "fort_out.txt"), "w");
    CHECK(o != NULL, "fopen fort_out.txt");
    EXPECT_RET(fprintf(o, "%d\n", 12345), 6);
    EXPECT_RET(my_vfprintf(o, "%s", "ab"), 2);
    EXPECT_RET(fclose(o), 0);

    EXPECT_RET(printf("%s\n", "fortified"), 10);
    EXPECT_RET(my_vprintf("x=%d\n", 7), 4);
    return 0;
}
