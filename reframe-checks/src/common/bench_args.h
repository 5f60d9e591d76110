/* What iostudy's benchmarks (iomodel, metarates, ioprobe) share: parameter errors, strict number
 * and size parsing, the getopt loop, mkdir -p and the check of an output directory. Header-only:
 * each benchmark is one C file.
 * Every rank parses the same arguments, so every rank reaches the same verdict. */
#ifndef IOSTUDY_BENCH_ARGS_H
#define IOSTUDY_BENCH_ARGS_H

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERR_LEN 512
#define PATH_LEN 4096

/* Formats a parameter error into err (ERR_LEN bytes); returns -1 for the caller to return. */
static inline int fail(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

static inline bool all_digits(const char *s) {
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* A count between 1 and max for option name; strtol alone would accept "-1", " 5" and "5x". */
static inline int parse_count(const char *name, const char *s, long max, long *out, char *err) {
    errno = 0;
    long v = all_digits(s) ? strtol(s, NULL, 10) : 0;
    if (v <= 0 || errno != 0)
        return fail(err, "%s '%s' is not a positive integer", name, s);
    if (v > max)
        return fail(err, "%s %ld is larger than %ld", name, v, max);
    *out = v;
    return 0;
}

/* Bytes for option name, with an optional binary suffix K, M or G (also KiB, MiB, GiB; either
 * case), larger than 0; strtoull alone would accept "-1" and " 5". */
static inline int parse_size(const char *name, const char *s, uint64_t *out, char *err) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = (*s >= '0' && *s <= '9') ? strtoull(s, &end, 10) : 0;
    if (end == NULL || errno != 0)
        return fail(err, "%s '%s' is not a size (bytes, or a number with K, M or G)", name, s);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    end += shift ? 1 : 0;
    if (shift && strcmp(end, "iB") == 0)
        end += 2;
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return fail(err, "%s '%s' is not a size (bytes, or a number with K, M or G)", name, s);
    if (v == 0)
        return fail(err, "%s must be larger than 0", name);
    *out = (uint64_t)v << shift;
    return 0;
}

/* The getopt_long loop: apply(opts, c, optarg, err) takes each option; the errors name the
 * option. getopt's own messages are off: they would come from every rank, not in our format. */
static inline int parse_args(int argc, char **argv, const char *short_opts,
                             const struct option *long_opts,
                             int (*apply)(void *opts, int c, const char *arg, char *err),
                             void *opts, char *err) {
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
        if (c == ':')
            return fail(err, "option '%s' needs a value", argv[optind - 1]);
        /* optopt names an unknown short option even inside a cluster such as -kx; for an
         * unknown long option it is 0 and the option is the argument just passed. */
        if (c == '?' && optopt != 0)
            return fail(err, "unknown option '-%c' (see --help)", optopt);
        if (c == '?')
            return fail(err, "unknown option '%s' (see --help)", argv[optind - 1]);
        if (apply(opts, c, optarg, err) != 0)
            return -1;
    }
    if (optind < argc)
        return fail(err, "unexpected argument '%s' (see --help)", argv[optind]);
    return 0;
}

/* mkdir -p. Returns 0, or errno with the component that could not be made in failed
 * (PATH_LEN bytes). */
static inline int make_dirs(const char *path, char *failed) {
    if (snprintf(failed, PATH_LEN, "%s", path) >= PATH_LEN)
        return ENAMETOOLONG;
    for (char *s = failed + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(failed, 0777) != 0 && errno != EEXIST)
            return errno;
        *s = '/';
    }
    return mkdir(failed, 0777) != 0 && errno != EEXIST ? errno : 0;
}

/* The --dir of a benchmark that writes files: created like mkdir -p, a directory, writable, and
 * short enough to leave room characters for the benchmark's own names below it. access() rather
 * than a probe file: a probe would show up in the job's I/O log; access() with W_OK fails on a
 * read-only file system even for root. */
static inline int check_dir(const char *dir, size_t room, char *err) {
    struct stat st;
    if (strlen(dir) > PATH_LEN - room)
        return fail(err, "--dir is longer than %zu characters", PATH_LEN - room);
    char failed[PATH_LEN];
    int e = make_dirs(dir, failed);
    if (e != 0)
        return fail(err, "--dir %s: cannot create %s: %s", dir, failed, strerror(e));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(err, "--dir %s: not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return fail(err, "--dir %s: not writable: %s", dir, strerror(errno));
    return 0;
}

#endif
