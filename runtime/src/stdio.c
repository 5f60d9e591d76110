/* STDIO module: wrappers of the buffered stream calls and Darshan's STDIO v2 record
 * (reference §6.3), including the <STDIN>, <STDOUT> and <STDERR> records. */
#include "wrap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct stdio_file { /* the record first: ios_file_by_name */
    struct ios_stdio_record *rec;
    int64_t offset;         /* bytes from the start, as the stream's calls moved it */
    struct ios_rw_ns rw[2]; /* of reads [0] and writes [1] */
    double last_meta_end;
};

static struct ios_map files_by_id; /* record id -> file */
static struct ios_map streams;     /* FILE* -> file */
static FILE *cached_stream;        /* last stream looked up; most programs use one at a time */
static struct stdio_file *cached_file;

static struct stdio_file *file_by_name(const char *name) {
    return ios_file_by_name(&files_by_id, IOS_MOD_STDIO, name, sizeof(struct stdio_file),
                            sizeof(struct ios_stdio_record), NULL);
}

static void map_stream(FILE *stream, struct stdio_file *f) {
    if (f)
        ios_map_put(&streams, (uint64_t)(uintptr_t)stream, f);
    else
        ios_map_del(&streams, (uint64_t)(uintptr_t)stream);
    cached_stream = NULL;
}

/* The standard streams get their records on first use (Darshan creates them at start-up and
 * drops the idle ones at shutdown: the same log). */
static struct stdio_file *stream_file(FILE *stream) {
    if (stream == cached_stream)
        return cached_file;
    struct stdio_file *f = ios_map_get(&streams, (uint64_t)(uintptr_t)stream);
    if (!f && stream && (stream == stdin || stream == stdout || stream == stderr)) {
        int saved = errno; /* allocation may set it */
        f = file_by_name(stream == stdin ? "<STDIN>" : stream == stdout ? "<STDOUT>" : "<STDERR>");
        if (f) {
            f->rec->counters[STDIO_OPENS] = 1; /* opened before main, as Darshan counts it */
            map_stream(stream, f);
        }
        errno = saved;
    }
    cached_stream = stream;
    cached_file = f;
    return f;
}

const char *ios_stdio_stream_name(FILE *stream) {
    struct stdio_file *f = stream_file(stream);
    return f ? ios_record_name(f->rec->base.id) : NULL;
}

/* Records a read or write of bytes from ns1 to ns2 (ios_now_ns; a flush: a zero-byte write
 * counted as a flush, as in Darshan). The hot path: no errno work, since nothing here makes a
 * system call. */
static inline __attribute__((always_inline)) void
count_rw_inline(FILE *stream, int is_write, int is_flush, int64_t bytes, int64_t ns1, int64_t ns2) {
    if (!ios_enter_unguarded()) /* STDIO_WRAP did not look at the guard */
        return;
    struct stdio_file *f = stream_file(stream);
    if (f) {
        int64_t *c = f->rec->counters;
        double *fc = f->rec->fcounters;
        int64_t max = f->offset + bytes - 1;
        f->offset += bytes;
        int max_byte = is_write ? STDIO_MAX_BYTE_WRITTEN : STDIO_MAX_BYTE_READ;
        if (c[max_byte] < max)
            c[max_byte] = max;
        c[is_write ? STDIO_BYTES_WRITTEN : STDIO_BYTES_READ] += bytes;
        c[!is_write ? STDIO_READS : is_flush ? STDIO_FLUSHES : STDIO_WRITES]++;
        int start = is_write ? STDIO_F_WRITE_START_TIMESTAMP : STDIO_F_READ_START_TIMESTAMP;
        ios_first_start_ns(&fc[start], &f->rw[is_write], ns1);
        fc[is_write ? STDIO_F_WRITE_END_TIMESTAMP : STDIO_F_READ_END_TIMESTAMP] = ios_seconds(ns2);
        ios_timer_add_ns(&fc[is_write ? STDIO_F_WRITE_TIME : STDIO_F_READ_TIME], ns1, ns2,
                         (double)(ns2 - ns1) * 1e-9, &f->rw[is_write]);
        ios_heatmap_add_ns(IOS_HEATMAP_STDIO, is_write, bytes, ns1, ns2);
    }
    ios_leave();
}
/* Inlined in every wrapper, where the kind's branches fold away (a call and its register
 * shuffle were a tenth of what a wrapper adds). */
#define STDIO_COUNT_READ(bytes) count_rw_inline(target, 0, 0, bytes, ns1, ns2)
#define STDIO_COUNT_WRITE(bytes) count_rw_inline(target, 1, 0, bytes, ns1, ns2)

enum meta_op { META_SEEK, META_TELL };

/* Records a seek (offset: where the stream now is) or a position query. */
static void count_meta(FILE *stream, enum meta_op op, int64_t offset, double t1, double t2) {
    if (!ios_enter_unguarded()) /* STDIO_WRAP did not look at the guard */
        return;
    struct stdio_file *f = stream_file(stream);
    if (f) {
        if (op == META_SEEK) {
            f->offset = offset;
            f->rec->counters[STDIO_SEEKS]++;
        }
        ios_timer_add(&f->rec->fcounters[STDIO_F_META_TIME], t1, t2, &f->last_meta_end);
    }
    ios_leave();
}

/* The file of a stream about to be closed, taken out of the map before fclose frees the FILE:
 * another thread's fopen may get the same address at once, and its mapping must stay. */
static struct stdio_file *take_stream(FILE *stream) {
    struct stdio_file *f = NULL;
    int saved = errno;
    if (ios_enter()) {
        if ((f = stream_file(stream)) != NULL)
            map_stream(stream, NULL);
        ios_leave();
    }
    errno = saved;
    return f;
}

static void count_close(struct stdio_file *f, double t1, double t2) {
    if (!ios_enter())
        return;
    double *fc = f->rec->fcounters;
    ios_first_start(&fc[STDIO_F_CLOSE_START_TIMESTAMP], t1);
    fc[STDIO_F_CLOSE_END_TIMESTAMP] = t2;
    ios_timer_add(&fc[STDIO_F_META_TIME], t1, t2, &f->last_meta_end);
    ios_leave();
}

static void count_open(FILE *stream, const char *name, int fdopened, double t1, double t2) {
    struct stdio_file *f = file_by_name(name);
    if (!f)
        return;
    int64_t *c = f->rec->counters;
    double *fc = f->rec->fcounters;
    f->offset = 0;
    c[STDIO_OPENS]++;
    if (fdopened)
        c[STDIO_FDOPENS]++;
    ios_first_start(&fc[STDIO_F_OPEN_START_TIMESTAMP], t1);
    fc[STDIO_F_OPEN_END_TIMESTAMP] = t2;
    ios_timer_add(&fc[STDIO_F_META_TIME], t1, t2, &f->last_meta_end);
    map_stream(stream, f);
}

static void opened(FILE *stream, const char *path, double t1, double t2) {
    char name[PATH_MAX];
    int saved = errno;
    ios_guard(1);
    if (stream && path && ios_normalize_path(path, AT_FDCWD, name, sizeof name) == 0 &&
        ios_enter()) {
        count_open(stream, name, 0, t1, t2);
        ios_leave();
    }
    ios_guard(0);
    errno = saved;
}

/* ---- wrappers ------------------------------------------------------------------------------ */
#define STDIO_WRAP_OPEN(name, call, path)                                                          \
    IOS_WRAP_TIMED(name, FILE *, call);                                                            \
    opened(ret, path, t1, t2);                                                                     \
    return ret

IOS_EXPORT FILE *fopen(const char *path, const char *mode) {
    STDIO_WRAP_OPEN(fopen, ios_real.fopen(path, mode), path);
}
IOS_EXPORT FILE *fopen64(const char *path, const char *mode) {
    STDIO_WRAP_OPEN(fopen64, ios_real.fopen64(path, mode), path);
}
IOS_EXPORT FILE *freopen(const char *path, const char *mode, FILE *stream) {
    STDIO_WRAP_OPEN(freopen, ios_real.freopen(path, mode, stream), path);
}
IOS_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *stream) {
    STDIO_WRAP_OPEN(freopen64, ios_real.freopen64(path, mode, stream), path);
}
IOS_EXPORT FILE *fdopen(int fd, const char *mode) {
    IOS_WRAP_TIMED(fdopen, FILE *, ios_real.fdopen(fd, mode));
    int saved = errno;
    if (ret && ios_enter()) {
        /* The stream is named after the file the descriptor was opened as. */
        const char *name = ios_posix_fd_name(fd);
        if (name)
            count_open(ret, name, 1, t1, t2);
        ios_leave();
    }
    errno = saved;
    return ret;
}

/* Times the real call (ns1, ns2) and, when ok holds, runs record (STDIO_COUNT_READ,
 * STDIO_COUNT_WRITE or a count_*, which look at the guard: IOS_WRAP_TIMED_NS) on the stream,
 * target. */
#define STDIO_WRAP(name, type, call, stream, ok, record)                                           \
    IOS_WRAP_TIMED_NS(name, type, call);                                                           \
    FILE *target = stream;                                                                         \
    if (ok)                                                                                        \
        record;                                                                                    \
    return ret

IOS_EXPORT size_t fwrite(const void *ptr, size_t size, size_t n, FILE *stream) {
    STDIO_WRAP(fwrite, size_t, ios_real.fwrite(ptr, size, n, stream), stream, ret > 0,
               STDIO_COUNT_WRITE((int64_t)(size * ret)));
}
IOS_EXPORT size_t fread(void *ptr, size_t size, size_t n, FILE *stream) {
    STDIO_WRAP(fread, size_t, ios_real.fread(ptr, size, n, stream), stream, ret > 0,
               STDIO_COUNT_READ((int64_t)(size * ret)));
}
IOS_EXPORT int fputs(const char *s, FILE *stream) {
    STDIO_WRAP(fputs, int, ios_real.fputs(s, stream), stream, ret >= 0,
               STDIO_COUNT_WRITE((int64_t)strlen(s)));
}
IOS_EXPORT int puts(const char *s) {
    STDIO_WRAP(puts, int, ios_real.puts(s), stdout, ret >= 0,
               STDIO_COUNT_WRITE((int64_t)strlen(s) + 1));
}
IOS_EXPORT int fputc(int ch, FILE *stream) {
    STDIO_WRAP(fputc, int, ios_real.fputc(ch, stream), stream, ret != EOF, STDIO_COUNT_WRITE(1));
}
IOS_EXPORT int putc(int ch, FILE *stream) {
    STDIO_WRAP(putc, int, ios_real.putc(ch, stream), stream, ret != EOF, STDIO_COUNT_WRITE(1));
}
IOS_EXPORT int putchar(int ch) {
    STDIO_WRAP(putchar, int, ios_real.putchar(ch), stdout, ret != EOF, STDIO_COUNT_WRITE(1));
}
IOS_EXPORT int vfprintf(FILE *stream, const char *fmt, va_list ap) {
    STDIO_WRAP(vfprintf, int, ios_real.vfprintf(stream, fmt, ap), stream, ret > 0,
               STDIO_COUNT_WRITE(ret));
}
IOS_EXPORT int vprintf(const char *fmt, va_list ap) {
    STDIO_WRAP(vfprintf, int, ios_real.vfprintf(stdout, fmt, ap), stdout, ret > 0,
               STDIO_COUNT_WRITE(ret));
}
IOS_EXPORT int __vfprintf_chk(FILE *stream, int flag, const char *fmt, va_list ap) {
    STDIO_WRAP(__vfprintf_chk, int, ios_real.__vfprintf_chk(stream, flag, fmt, ap), stream, ret > 0,
               STDIO_COUNT_WRITE(ret));
}
IOS_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap) {
    STDIO_WRAP(__vfprintf_chk, int, ios_real.__vfprintf_chk(stdout, flag, fmt, ap), stdout, ret > 0,
               STDIO_COUNT_WRITE(ret));
}
/* The variadic forms go through the v* wrappers above. */
IOS_EXPORT int fprintf(FILE *stream, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = vfprintf(stream, fmt, ap);
    va_end(ap);
    return ret;
}
IOS_EXPORT int printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = vfprintf(stdout, fmt, ap);
    va_end(ap);
    return ret;
}
IOS_EXPORT int __fprintf_chk(FILE *stream, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = __vfprintf_chk(stream, flag, fmt, ap);
    va_end(ap);
    return ret;
}
IOS_EXPORT int __printf_chk(int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = __vfprintf_chk(stdout, flag, fmt, ap);
    va_end(ap);
    return ret;
}

IOS_EXPORT char *fgets(char *s, int size, FILE *stream) {
    STDIO_WRAP(fgets, char *, ios_real.fgets(s, size, stream), stream, ret != NULL,
               STDIO_COUNT_READ((int64_t)strlen(ret)));
}
IOS_EXPORT char *__fgets_chk(char *s, size_t buflen, int size, FILE *stream) {
    STDIO_WRAP(__fgets_chk, char *, ios_real.__fgets_chk(s, buflen, size, stream), stream,
               ret != NULL, STDIO_COUNT_READ((int64_t)strlen(ret)));
}
IOS_EXPORT size_t __fread_chk(void *ptr, size_t buflen, size_t size, size_t n, FILE *stream) {
    STDIO_WRAP(__fread_chk, size_t, ios_real.__fread_chk(ptr, buflen, size, n, stream), stream,
               ret > 0, STDIO_COUNT_READ((int64_t)(size * ret)));
}
IOS_EXPORT int fgetc(FILE *stream) {
    STDIO_WRAP(fgetc, int, ios_real.fgetc(stream), stream, ret != EOF, STDIO_COUNT_READ(1));
}
IOS_EXPORT int getc(FILE *stream) {
    STDIO_WRAP(getc, int, ios_real.getc(stream), stream, ret != EOF, STDIO_COUNT_READ(1));
}

/* The _unlocked forms (glibc, and what coreutils call: seq, sort, cut): the same operations
 * without the stream's lock. Called through the PLT they are wrapped like the locked ones; the
 * header's inline bodies of getc_unlocked and putc_unlocked (when a program is optimized)
 * reach libc only when the buffer is empty or full, and are not seen. (The parentheses keep
 * the header's macros of fwrite_unlocked and fread_unlocked out.) */
IOS_EXPORT size_t(fwrite_unlocked)(const void *ptr, size_t size, size_t n, FILE *stream) {
    STDIO_WRAP(fwrite_unlocked, size_t, (ios_real.fwrite_unlocked)(ptr, size, n, stream), stream,
               ret > 0, STDIO_COUNT_WRITE((int64_t)(size * ret)));
}
IOS_EXPORT size_t(fread_unlocked)(void *ptr, size_t size, size_t n, FILE *stream) {
    STDIO_WRAP(fread_unlocked, size_t, (ios_real.fread_unlocked)(ptr, size, n, stream), stream,
               ret > 0, STDIO_COUNT_READ((int64_t)(size * ret)));
}
IOS_EXPORT size_t __fread_unlocked_chk(void *ptr, size_t buflen, size_t size, size_t n,
                                       FILE *stream) {
    STDIO_WRAP(__fread_unlocked_chk, size_t,
               ios_real.__fread_unlocked_chk(ptr, buflen, size, n, stream), stream, ret > 0,
               STDIO_COUNT_READ((int64_t)(size * ret)));
}
IOS_EXPORT int fputs_unlocked(const char *s, FILE *stream) {
    STDIO_WRAP(fputs_unlocked, int, ios_real.fputs_unlocked(s, stream), stream, ret >= 0,
               STDIO_COUNT_WRITE((int64_t)strlen(s)));
}
IOS_EXPORT int fputc_unlocked(int ch, FILE *stream) {
    STDIO_WRAP(fputc_unlocked, int, ios_real.fputc_unlocked(ch, stream), stream, ret != EOF,
               STDIO_COUNT_WRITE(1));
}
IOS_EXPORT int putc_unlocked(int ch, FILE *stream) {
    STDIO_WRAP(putc_unlocked, int, ios_real.putc_unlocked(ch, stream), stream, ret != EOF,
               STDIO_COUNT_WRITE(1));
}
IOS_EXPORT int putchar_unlocked(int ch) {
    STDIO_WRAP(putchar_unlocked, int, ios_real.putchar_unlocked(ch), stdout, ret != EOF,
               STDIO_COUNT_WRITE(1));
}
IOS_EXPORT char *fgets_unlocked(char *s, int size, FILE *stream) {
    STDIO_WRAP(fgets_unlocked, char *, ios_real.fgets_unlocked(s, size, stream), stream,
               ret != NULL, STDIO_COUNT_READ((int64_t)strlen(ret)));
}
IOS_EXPORT int fgetc_unlocked(FILE *stream) {
    STDIO_WRAP(fgetc_unlocked, int, ios_real.fgetc_unlocked(stream), stream, ret != EOF,
               STDIO_COUNT_READ(1));
}
IOS_EXPORT int getc_unlocked(FILE *stream) {
    STDIO_WRAP(getc_unlocked, int, ios_real.getc_unlocked(stream), stream, ret != EOF,
               STDIO_COUNT_READ(1));
}

/* getline and getdelim (sed, awk and most line readers; Darshan 3.5.0 wraps neither): one read
 * of the bytes of the line, its delimiter included. */
IOS_EXPORT ssize_t getline(char **line, size_t *n, FILE *stream) {
    STDIO_WRAP(getline, ssize_t, ios_real.getline(line, n, stream), stream, ret > 0,
               STDIO_COUNT_READ(ret));
}
IOS_EXPORT ssize_t getdelim(char **line, size_t *n, int delim, FILE *stream) {
    STDIO_WRAP(getdelim, ssize_t, ios_real.getdelim(line, n, delim, stream), stream, ret > 0,
               STDIO_COUNT_READ(ret));
}
IOS_EXPORT ssize_t __getdelim(char **line, size_t *n, int delim, FILE *stream) {
    STDIO_WRAP(__getdelim, ssize_t, ios_real.__getdelim(line, n, delim, stream), stream, ret > 0,
               STDIO_COUNT_READ(ret));
}

/* fscanf's byte count is how far it moved the stream. */
static int scan(int (*real)(FILE *, const char *, va_list), FILE *stream, const char *fmt,
                va_list ap) {
    IOS_REAL(ftell);
    if (!ios_recording())
        return real(stream, fmt, ap);
    int64_t ns1 = ios_now_ns();
    long before = ios_real.ftell(stream);
    int ret = real(stream, fmt, ap);
    long after = ios_real.ftell(stream);
    int64_t ns2 = ios_now_ns();
    if (ret != 0 && before >= 0 && after >= before)
        count_rw_inline(stream, 0, 0, after - before, ns1, ns2);
    return ret;
}
/* stdio.h renames fscanf and vfscanf to their __isoc99_ forms; the asm labels define the plain
 * symbols that older binaries still call. */
int ios_wrap_vfscanf(FILE *stream, const char *fmt, va_list ap) __asm__("vfscanf");
int ios_wrap_fscanf(FILE *stream, const char *fmt, ...) __asm__("fscanf");

IOS_EXPORT int ios_wrap_vfscanf(FILE *stream, const char *fmt, va_list ap) {
    IOS_REAL(vfscanf);
    return scan(ios_real.vfscanf, stream, fmt, ap);
}
IOS_EXPORT int __isoc99_vfscanf(FILE *stream, const char *fmt, va_list ap) {
    IOS_REAL(__isoc99_vfscanf);
    return scan(ios_real.__isoc99_vfscanf, stream, fmt, ap);
}
IOS_EXPORT int ios_wrap_fscanf(FILE *stream, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = __isoc99_vfscanf(stream, fmt, ap);
    va_end(ap);
    return ret;
}
IOS_EXPORT int __isoc99_fscanf(FILE *stream, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int ret = __isoc99_vfscanf(stream, fmt, ap);
    va_end(ap);
    return ret;
}

/* A seek sets the offset to where the stream now is. */
#define STDIO_WRAP_SEEK(name, call)                                                                \
    IOS_REAL(ftello64);                                                                            \
    IOS_WRAP_TIMED(name, int, call);                                                               \
    if (ret == 0)                                                                                  \
        count_meta(stream, META_SEEK, IOS_CALL(ftello64)(stream), t1, t2);                         \
    return ret

IOS_EXPORT int fseek(FILE *stream, long off, int whence) {
    STDIO_WRAP_SEEK(fseek, ios_real.fseek(stream, off, whence));
}
IOS_EXPORT int fseeko(FILE *stream, off_t off, int whence) {
    STDIO_WRAP_SEEK(fseeko, ios_real.fseeko(stream, off, whence));
}
IOS_EXPORT int fseeko64(FILE *stream, off64_t off, int whence) {
    STDIO_WRAP_SEEK(fseeko64, ios_real.fseeko64(stream, off, whence));
}
IOS_EXPORT void rewind(FILE *stream) {
    IOS_REAL(rewind);
    if (!ios_recording()) {
        ios_real.rewind(stream);
        return;
    }
    double t1 = ios_now();
    ios_real.rewind(stream);
    double t2 = ios_now();
    count_meta(stream, META_SEEK, 0, t1, t2);
}
/* Asking the position moves nothing: its time is metadata time, not a seek. */
IOS_EXPORT long ftell(FILE *stream) {
    STDIO_WRAP(ftell, long, ios_real.ftell(stream), stream, ret >= 0,
               count_meta(target, META_TELL, 0, ios_seconds(ns1), ios_seconds(ns2)));
}
IOS_EXPORT off_t ftello(FILE *stream) {
    STDIO_WRAP(ftello, off_t, ios_real.ftello(stream), stream, ret >= 0,
               count_meta(target, META_TELL, 0, ios_seconds(ns1), ios_seconds(ns2)));
}
IOS_EXPORT off64_t ftello64(FILE *stream) {
    STDIO_WRAP(ftello64, off64_t, ios_real.ftello64(stream), stream, ret >= 0,
               count_meta(target, META_TELL, 0, ios_seconds(ns1), ios_seconds(ns2)));
}
IOS_EXPORT int fflush(FILE *stream) {
    STDIO_WRAP(fflush, int, ios_real.fflush(stream), stream, ret == 0 && stream,
               count_rw_inline(target, 1, 1, 0, ns1, ns2));
}
IOS_EXPORT int fclose(FILE *stream) {
    IOS_REAL(fclose);
    if (!ios_recording())
        return ios_real.fclose(stream);
    struct stdio_file *f = take_stream(stream);
    IOS_TIMED_CALL(int, ret, ios_real.fclose(stream));
    if (f)
        count_close(f, t1, t2);
    return ret;
}

/* ---- shutdown ------------------------------------------------------------------------------ */
static int is_std_stream(const struct stdio_file *f) {
    const char *name = ios_record_name(f->rec->base.id);
    return name && name[0] == '<';
}

void ios_stdio_collect(struct ios_record_set *set) {
    set->mod = IOS_MOD_STDIO;
    set->rec_size = sizeof(struct ios_stdio_record);
    set->count = set->len = 0;
    set->buf = malloc(files_by_id.count * set->rec_size + 1);
    if (!set->buf)
        return;
    for (size_t i = 0; i < files_by_id.cap; i++) {
        struct stdio_file *f = files_by_id.keys[i] ? files_by_id.vals[i] : NULL;
        if (!f || (is_std_stream(f) && f->rec->counters[STDIO_READS] == 0 &&
                   f->rec->counters[STDIO_WRITES] == 0))
            continue; /* a standard stream only asked for its descriptor, as Darshan drops it */
        memcpy(set->buf + set->len, f->rec, set->rec_size);
        set->len += set->rec_size;
        set->count++;
    }
}

void ios_stdio_reset(void) {
    ios_map_free(&files_by_id);
    ios_map_free(&streams);
    cached_stream = NULL;
}
