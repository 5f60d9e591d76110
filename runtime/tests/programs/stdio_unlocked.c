/* The _unlocked STDIO forms (see test_stdio.py::test_unlocked_forms), each called through a
 * pointer so that the library's function runs, never a header's inline body:
 *   DIR/u.txt: fopen("w+"); fwrite_unlocked "0123456789" 10, fputs_unlocked "abcde" 5,
 *              fputc_unlocked 'X', putc_unlocked 'Y' (4 writes, 17 bytes, last byte @16);
 *              rewind; fread_unlocked 4 "0123", fgets_unlocked(size 6) "45678", fgetc_unlocked
 *              '9', getc_unlocked 'a', __fread_unlocked_chk 3 "bcd" (5 reads, 14 bytes, last
 *              byte @13); fclose.
 *   stdout:    putchar_unlocked 'u', putchar_unlocked '\n' (2 writes, 2 bytes).
 *   DIR/l.txt: fopen("w+"); fputs "ab\ncd\n" (1 write, 6 bytes); rewind; getline "ab\n" 3,
 *              getdelim('d') "cd" 2, __getdelim('\n') "\n" 1, getline at the end -1 (3 reads,
 *              6 bytes, last byte @5); fclose.
 * (The _unlocked forms and getline/getdelim: glibc's, which coreutils call.)
 */
#define _GNU_SOURCE
#include "common.h"

size_t __fread_unlocked_chk(void *, size_t, size_t, size_t, FILE *);
ssize_t __getdelim(char **, size_t *, int, FILE *);

int main(int argc, char **argv) {
    size_t (*volatile fwrite_u)(const void *, size_t, size_t, FILE *) = fwrite_unlocked;
    size_t (*volatile fread_u)(void *, size_t, size_t, FILE *) = fread_unlocked;
    size_t (*volatile fread_u_chk)(void *, size_t, size_t, size_t, FILE *) = __fread_unlocked_chk;
    int (*volatile fputs_u)(const char *, FILE *) = fputs_unlocked;
    int (*volatile fputc_u)(int, FILE *) = fputc_unlocked;
    int (*volatile putc_u)(int, FILE *) = putc_unlocked;
    int (*volatile putchar_u)(int) = putchar_unlocked;
    char *(*volatile fgets_u)(char *, int, FILE *) = fgets_unlocked;
    int (*volatile fgetc_u)(FILE *) = fgetc_unlocked;
    int (*volatile getc_u)(FILE *) = getc_unlocked;

    FILE *f = fopen(path_in(dir_arg(argc, argv), "u.txt"), "w+");
    CHECK(f != NULL, "fopen u.txt");
    EXPECT_RET(fwrite_u("0123456789", 1, 10, f), 10);
    CHECK(fputs_u("abcde", f) >= 0, "fputs_unlocked");
    EXPECT_RET(fputc_u('X', f), 'X');
    EXPECT_RET(putc_u('Y', f), 'Y');
    rewind(f);
    char buf[16] = {0};
    EXPECT_RET(fread_u(buf, 1, 4, f), 4);
    CHECK(fgets_u(buf, 6, f) != NULL && strcmp(buf, "45678") == 0, "fgets_unlocked");
    EXPECT_RET(fgetc_u(f), '9');
    EXPECT_RET(getc_u(f), 'a');
    EXPECT_RET(fread_u_chk(buf, sizeof buf, 1, 3, f), 3);
    CHECK(memcmp(buf, "bcd", 3) == 0, "__fread_unlocked_chk");
    EXPECT_RET(fclose(f), 0);
    EXPECT_RET(putchar_u('u'), 'u');
    EXPECT_RET(putchar_u('\n'), '\n');

    ssize_t (*volatile getdelim_i)(char **, size_t *, int, FILE *) = __getdelim;
    FILE *g = fopen(path_in(dir_arg(argc, argv), "l.txt"), "w+");
    CHECK(g != NULL, "fopen l.txt");
    CHECK(fputs("ab\ncd\n", g) >= 0, "fputs");
    rewind(g);
    char *line = NULL;
    size_t cap = 0;
    EXPECT_RET(getline(&line, &cap, g), 3);
    EXPECT_RET(getdelim(&line, &cap, 'd', g), 2);
    EXPECT_RET(getdelim_i(&line, &cap, '\n', g), 1);
    EXPECT_RET(getline(&line, &cap, g), -1);
    free(line);
    EXPECT_RET(fclose(g), 0);
    return 0;
}
