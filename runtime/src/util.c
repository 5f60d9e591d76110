/* Small building blocks: the record-id hash, the live common values, path names. */
#include "iostudy.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bob Jenkins' 64-bit lookup8 hash, as the Darshan format specifies for record ids (reference
 * §4.1); bytes are taken little-endian whatever the host order. It runs on every path a program
 * names, so mix() is his macro unrolled and words are loaded whole. */
#define MIX(a, b, c)                                                                               \
    do {                                                                                           \
        a -= b, a -= c, a ^= (c >> 43);                                                            \
        b -= c, b -= a, b ^= (a << 9);                                                             \
        c -= a, c -= b, c ^= (b >> 8);                                                             \
        a -= b, a -= c, a ^= (c >> 38);                                                            \
        b -= c, b -= a, b ^= (a << 23);                                                            \
        c -= a, c -= b, c ^= (b >> 5);                                                             \
        a -= b, a -= c, a ^= (c >> 35);                                                            \
        b -= c, b -= a, b ^= (a << 49);                                                            \
        c -= a, c -= b, c ^= (b >> 11);                                                            \
        a -= b, a -= c, a ^= (c >> 12);                                                            \
        b -= c, b -= a, b ^= (a << 18);                                                            \
        c -= a, c -= b, c ^= (b >> 22);                                                            \
    } while (0)

static inline uint64_t load_le64(const unsigned char *k) {
    uint64_t v;
    memcpy(&v, k, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The n < 8 bytes at k as a little-endian number. */
static inline uint64_t load_le_tail(const unsigned char *k, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)k[i] << (8 * i);
    return v;
}

uint64_t ios_hash(const unsigned char *k, size_t length, uint64_t level) {
    uint64_t a = level, b = level, c = 0x9e3779b97f4a7c13ULL;
    size_t len = length;
    for (; len >= 24; k += 24, len -= 24) {
        a += load_le64(k);
        b += load_le64(k + 8);
        c += load_le64(k + 16);
        MIX(a, b, c);
    }
    /* The last 0..23 bytes: 0..7 to a, 8..15 to b, 16..22 to c above its lowest byte, which
     * holds the length. */
    c += length;
    if (len >= 16) {
        a += load_le64(k);
        b += load_le64(k + 8);
        c += load_le_tail(k + 16, len - 16) << 8;
    } else if (len >= 8) {
        a += load_le64(k);
        b += load_le_tail(k + 8, len - 8);
    } else {
        a += load_le_tail(k, len);
    }
    MIX(a, b, c);
    return c;
}

uint64_t ios_record_id(const char *name) {
    return ios_hash((const unsigned char *)name, strlen(name), 0);
}

/* ---- common values --------------------------------------------------------------------------- */
void ios_common_live(int64_t *vals, int64_t *counts, struct ios_value_counts *vc) {
    int64_t v = vc->value[vc->last], c = vc->count[vc->last];
    int i = 0;
    while (i < 4 && !(vals[i] == v && counts[i] > 0))
        i++;
    if (i == 4) {
        /* Not among the four: it enters in the last slot if it now ranks above that one. */
        if (counts[3] > c || (counts[3] == c && vals[3] > v))
            return;
        i = 3;
        vals[i] = v;
    }
    counts[i] = c;
    for (; i > 0 &&
           (counts[i] > counts[i - 1] || (counts[i] == counts[i - 1] && vals[i] > vals[i - 1]));
         i--) {
        int64_t tv = vals[i], tc = counts[i];
        vals[i] = vals[i - 1];
        counts[i] = counts[i - 1];
        vals[i - 1] = tv;
        counts[i - 1] = tc;
    }
    if (i == 0)
        vc->top = vc->last;
}

/* v: a non-zero value other than the record's most common one. */
void ios_value_count_slow(struct ios_value_counts *vc, int64_t v, int64_t *vals, int64_t *counts) {
    int i = vc->last;
    if (vc->value[i] == v)
        goto count; /* a run of a value that is not (yet) the most common */
    i = 0;
    while (i < vc->n && vc->value[i] != v)
        i++;
    if (i == vc->n && vc->n == IOS_CV_SLOTS)
        return; /* a 33rd distinct value: not kept, as in Darshan */
    if (i == vc->n)
        vc->value[vc->n++] = v;
count:
    vc->count[i]++;
    vc->last = i;
    ios_common_live(vals, counts, vc);
}

/* ---- path names -------------------------------------------------------------------------------
 */
const char *ios_strip_fs_prefix(const char *filename) {
    const char *colon = strchr(filename, ':');
    return colon && colon > filename + 1 ? colon + 1 : filename;
}

/* Collapses // and /./ repeatedly; .. and symlinks are left alone, as Darshan does. */
static void collapse_separators(char *path) {
    char *r = path, *w = path;
    while (*r) {
        if (r[0] == '/' && r[1] == '/') {
            r++;
        } else if (r[0] == '/' && r[1] == '.' && r[2] == '/') {
            r += 2;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* Whether path holds // or /./ (libc's vectorized search: most paths have many slashes, a
 * redundant one rarely). */
static int has_redundant_separator(const char *path) {
    return strstr(path, "//") || strstr(path, "/./");
}

void ios_set_excludes(char **dirs) {
    ios_config.exclude_dirs = dirs;
    memset(ios_config.exclude_second_bytes, 0, sizeof ios_config.exclude_second_bytes);
    for (char **dir = dirs; dir && *dir; dir++) {
        unsigned char b = (unsigned char)(*dir)[0] ? (unsigned char)(*dir)[1] : 0;
        if (b == 0) /* a prefix of one byte or none: every path must be compared */
            memset(ios_config.exclude_second_bytes, 0xff, sizeof ios_config.exclude_second_bytes);
        ios_config.exclude_second_bytes[b >> 6] |= UINT64_C(1) << (b & 63);
    }
}

/* Darshan 3.5.0's default inclusion: recorded although under /var/, while the default
 * exclusions are in force (Cray DataWarp mounts). */
static const char default_inclusion[] = "/var/opt/cray/dws/mounts/";

/* Under a prefix never recorded (DARSHAN_EXCLUDE_DIRS). Most paths share no second byte with
 * any prefix: the set of those bytes settles them. */
int ios_under_excluded_dir(const char *path) {
    unsigned char b = (unsigned char)path[0] ? (unsigned char)path[1] : 0;
    if (!(ios_config.exclude_second_bytes[b >> 6] & (UINT64_C(1) << (b & 63))))
        return 0;
    for (char **dir = ios_config.exclude_dirs; dir && *dir; dir++)
        if (strncmp(path, *dir, strlen(*dir)) == 0)
            return !(ios_config.exclude_dirs_default &&
                     strncmp(path, default_inclusion, sizeof default_inclusion - 1) == 0);
    return 0;
}

/* Never recorded by any module: under an excluded directory, with no NAME_INCLUDE rule that
 * could bring it back (with one, each module's record asks: ios_config_refuses). */
static int excluded(const char *path) {
    return !ios_config.name_includes && ios_under_excluded_dir(path);
}

/* name, in writable memory, as a record is named: // and /./ collapsed (rare: looked for
 * before rewriting); 0, or -1 when it must not be recorded. */
static int settle_name(char *name) {
    if (has_redundant_separator(name))
        collapse_separators(name);
    return excluded(name) ? -1 : 0;
}

const char *ios_absolute_name(const char *path, size_t len, char *out, size_t outlen) {
    if (!has_redundant_separator(path)) /* as it is: no copy */
        return excluded(path) ? NULL : path;
    if (len + 1 > outlen)
        return NULL;
    memcpy(out, path, len + 1);
    return settle_name(out) == 0 ? out : NULL;
}

int ios_normalize_path(const char *path, int dirfd, char *out, size_t outlen) {
    size_t n = 0, plen = strlen(path);
    if (path[0] != '/') {
        /* Relative: prefix the working directory, or the directory dirfd names (openat). */
        ssize_t got;
        if (dirfd == AT_FDCWD) {
            if (!getcwd(out, outlen))
                return -1;
            got = (ssize_t)strlen(out);
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            got = readlink(link, out, outlen - 1);
            if (got < 0)
                return -1;
        }
        n = (size_t)got;
        if (n + 1 + plen + 1 > outlen)
            return -1;
        out[n++] = '/';
    } else if (plen + 1 > outlen) {
        return -1;
    }
    memcpy(out + n, path, plen + 1);
    return settle_name(out);
}

/* ---- what absolute paths came to ---------------------------------------------------------- */
#define PATH_CACHE_MAX 256 /* longer paths are not remembered: memory stays under 300 KiB */

void ios_path_cache_put(struct ios_path_cache *c, const char *path, size_t len, uint64_t key,
                        void *val) {
    if (len > PATH_CACHE_MAX ||
        (!c->slots && !(c->slots = calloc(IOS_PATH_CACHE_SLOTS, sizeof *c->slots))))
        return;
    struct ios_path_cache_slot *s = &c->slots[key & (IOS_PATH_CACHE_SLOTS - 1)];
    if (s->room < len) { /* a slot keeps its copy's memory for the paths that follow */
        size_t room = len > 64 ? len : 64;
        char *copy = malloc(room);
        if (!copy)
            return;
        free(s->path);
        s->path = copy;
        s->room = room;
    }
    memcpy(s->path, path, len);
    s->len = len;
    s->key = key;
    s->val = val;
}

void ios_path_cache_clear(struct ios_path_cache *c) {
    for (size_t i = 0; c->slots && i < IOS_PATH_CACHE_SLOTS; i++)
        free(c->slots[i].path);
    free(c->slots);
    c->slots = NULL;
}

void ios_collect_records(struct ios_record_set *set, int mod, size_t rec_size,
                         const struct ios_map *files) {
    set->mod = mod;
    set->rec_size = rec_size;
    set->count = set->len = 0;
    set->buf = malloc(files->count * rec_size + 1);
    if (!set->buf)
        return;
    for (size_t i = 0; i < files->cap; i++) {
        void *const *f = files->keys[i] ? files->vals[i] : NULL;
        if (!f)
            continue;
        memcpy(set->buf + set->len, *f, rec_size);
        set->len += rec_size;
        set->count++;
    }
}
