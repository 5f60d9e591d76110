/* STDIO pattern (see test_stdio.py for the expected counters).  stdin must be a regular file
 * containing "first line\nsecond 99\n".
 *
 * DIR/s.txt, fopen("w+"):
 *   fwrite(10 x 5)            50 bytes @0
 *   fprintf "%d-%s\n"         10 bytes @50   ("12345-abc\n")
 *   fputs "hello"              5 bytes @60
 *   fputc 'x'                  1 byte  @65
 *   putc 'y'                   1 byte  @66
 *   vfprintf "%s" "vv"         2 bytes @67
 *   fflush
 *   fseek(0, SEEK_SET)
 *   fread(1 x 20)             20 bytes @0
 *   fgets                     40 bytes @20   (30 x 'a' + "12345-abc\n")
 *   fgetc                      1 byte  @60   'h'
 *   getc                       1 byte  @61   'e'
 *   fscanf "%s"                7 bytes @62   ("lloxyvv", stops at EOF)
 *   rewind
 *   fwrite(1 x 3)              3 bytes @0
 *   fseeko(100, SEEK_SET)
 *   fwrite(1 x 1)              1 byte  @100
 *   fclose
 * DIR/s2.txt fopen64("w"), then freopen(DIR/s3.txt, "w") on that stream, fclose
 * DIR/s4.txt open(O_CREAT|O_WRONLY|O_TRUNC, 0644) + fdopen("w"); fwrite 8 bytes; fclose
 * stdout: printf "value=%d\n" (9 bytes), puts "line" (5 bytes), fputs "abc\n" (4 bytes),
 *         fflush(stdout)
 * stderr: fprintf "err %d\n" (6 bytes)
 * stdin:  fgets (11 bytes "first line\n"), vfscanf "%s %d" (9 bytes "second 99")
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>

#include "common.h"

static int my_vfscanf(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}

int main(int argc, char **argv) {
    const char *dir = dir_arg(argc, argv);
    char buf[256], line[256], word[64];
    int num;
    memset(buf, 'a', sizeof buf);

    FILE *f = fopen(path_in(dir, "s.txt"), "w+");
    CHECK(f != NULL, "fopen s.txt");
    EXPECT_RET(fwrite(buf, 10, 5, f), 5);
    EXPECT_RET(fprintf(f, "%d-%s\n", 12345, "abc"), 10);
    CHECK(fputs("hello", f) >= 0, "fputs");
    EXPECT_RET(fputc('x', f), 'x');
    EXPECT_RET(putc('y', f), 'y');
    EXPECT_RET(my_vfprintf(f, "%s", "vv"), 2);
    EXPECT_RET(fflush(f), 0);
    EXPECT_RET(fseek(f, 0, SEEK_SET), 0);
    EXPECT_RET(fread(buf, 1, 20, f), 20);
    CHECK(fgets(line, sizeof line, f) != NULL, "fgets");
    EXPECT_RET(strlen(line), 40);
    EXPECT_RET(fgetc(f), 'h');
    EXPECT_RET(getc(f), 'e');
    EXPECT_RET(fscanf(f, "%63s", word), 1);
    CHECK(strcmp(word, "lloxyvv") == 0, "fscanf word");
    rewind(f);
    EXPECT_RET(fwrite(buf, 1, 3, f), 3);
    EXPECT_RET(fseeko(f, 100, SEEK_SET), 0);
    EXPECT_RET(fwrite("z", 1, 1, f), 1);
    EXPECT_RET(fclose(f), 0);

    FILE *g = fopen64(path_in(dir, "s2.txt"), "w");
    CHECK(g != NULL, "fopen64 s2.txt");
    g = freopen(path_in(dir, "s3.txt"), "w", g);
    CHECK(g != NULL, "freopen s3.txt");
    EXPECT_RET(fclose(g), 0);

    int fd = open(path_in(dir, "s4.txt"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0, "open s4.txt");
    FILE *h = fdopen(fd, "w");
    CHECK(h != NULL, "fdopen");
    EXPECT_RET(fwrite("12345678", 1, 8, h), 8);
    EXPECT_RET(fclose(h), 0);

    EXPECT_RET(printf("value=%d\n", 42), 9);
    CHECK(puts("line") >= 0, "puts");
    CHECK(fputs("abc\n", stdout) >= 0, "fputs stdout");
    EXPECT_RET(fflush(stdout), 0);
    EXPECT_RET(fprintf(stderr, "err %d\n", 7), 6);

    CHECK(fgets(line, sizeof line, stdin) != NULL, "fgets stdin");
    CHECK(strcmp(line, "first line\n") == 0, "stdin line");
    EXPECT_RET(my_vfscanf(stdin, "%63s %d", word, &num), 2);
    CHECK(strcmp(word, "second") == 0 && num == 99, "stdin vfscanf");
    return 0;
}
