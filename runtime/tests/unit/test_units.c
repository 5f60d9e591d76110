/* Unit tests of the runtime's building blocks (run by ctest): the record-id hash against the
 * format reference's vectors, common-value merging (values and PNETCDF_VAR's tuples), size bins,
 * timers, the u64 map, path normalization, the heatmap's bins, the record encoder and the stored
 * zlib streams. Expected values come from the reference, or from zlib's inflate, not from the
 * code under test. */
#include "iostudy.h"
#include "logwrite.h"

#include <zlib.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ios_config ios_config;
int64_t ios_origin_ns; /* the clock's start: 0 here, so nanoseconds count from 0 s */
static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* heatmap.c claims record memory from the core; here memory is unlimited. */
int ios_reserve_record(int mod, uint64_t id, const char *name, size_t size) { return 0; }

static void test_hash(void) {
    static const struct {
        const char *name;
        uint64_t id;
    } vectors[] = {
        {"", 10211412111675192767ULL},
        {"a", 2110215103713784748ULL},
        {"<STDIN>", 14734109647742566553ULL},
        {"<STDOUT>", 15920181672442173319ULL},
        {"<STDERR>", 7238257241479193519ULL},
        {"heatmap:POSIX", 16592106915301738621ULL},
        {"heatmap:STDIO", 3989511027826779520ULL},
        {"heatmap:MPIIO", 3668870418325792824ULL},
        {"/tmp/test.dat", 6177579218230713141ULL},
        {"abcdefghijklmnopqrstuvw", 15927770037946912996ULL},
        {"abcdefghijklmnopqrstuvwx", 12207599811442368889ULL},
        {"abcdefghijklmnopqrstuvwxy", 10295890364123953620ULL},
        {"/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat", 9347516096890457488ULL},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++)
        CHECK(ios_record_id(vectors[i].name) == vectors[i].id, "hash of '%s'", vectors[i].name);
}

static void test_size_bins(void) {
    static const struct {
        int64_t size;
        int bin;
    } cases[] = {{0, 0},         {100, 0},       {101, 1},        {1024, 1},       {1025, 2},
                 {10240, 2},     {10241, 3},     {102400, 3},     {102401, 4},     {1048576, 4},
                 {1048577, 5},   {4194304, 5},   {4194305, 6},    {10485760, 6},   {10485761, 7},
                 {104857600, 7}, {104857601, 8}, {1073741824, 8}, {1073741825, 9}, {INT64_MAX, 9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(ios_size_bin(cases[i].size) == cases[i].bin, "bin of %lld", (long long)cases[i].size);
    /* Around every power of two, against the bins' definition: the first upper bound >= size. */
    static const int64_t upper[9] = {100,     1024,     10240,     102400,    1048576,
                                     4194304, 10485760, 104857600, 1073741824};
    for (int b = 0; b < 63; b++)
        for (int64_t d = -1; d <= 1; d++) {
            int64_t size = ((int64_t)1 << b) + d, bin = 0;
            while (bin < 9 && size > upper[bin])
                bin++;
            CHECK(ios_size_bin(size) == bin, "bin of %lld", (long long)size);
        }
}

static void test_common_values(void) {
    /* Order: count descending, then value descending; zero values never kept. */
    int64_t vals[4] = {0}, counts[4] = {0};
    int64_t in_v[] = {64, 0, 4096, 128, 512, 8};
    int64_t in_c[] = {3, 9, 3, 5, 1, 1};
    ios_common_merge(vals, counts, in_v, in_c, 6);
    int64_t want_v[4] = {128, 4096, 64, 512}, want_c[4] = {5, 3, 3, 1};
    for (int i = 0; i < 4; i++)
        CHECK(vals[i] == want_v[i] && counts[i] == want_c[i], "slot %d: %lld x %lld", i,
              (long long)vals[i], (long long)counts[i]);
    /* Merging another table adds equal values' counts. */
    int64_t more_v[] = {64, 8, 0, 0}, more_c[] = {4, 1, 0, 0};
    ios_common_merge(vals, counts, more_v, more_c, 4);
    CHECK(vals[0] == 64 && counts[0] == 7, "merged 64 first: %lld x %lld", (long long)vals[0],
          (long long)counts[0]);
    CHECK(vals[1] == 128 && counts[1] == 5, "then 128");
    CHECK(vals[2] == 4096 && counts[2] == 3, "then 4096");
    /* 8 was dropped by the first merge, so it comes back with 1 and loses the tie to 512. */
    CHECK(vals[3] == 512 && counts[3] == 1, "then 512, got %lld x %lld", (long long)vals[3],
          (long long)counts[3]);
}

/* Darshan's ranking of common tuples (PNETCDF_VAR's accesses): by count, then first value, a
 * newcomer above an equal one; a tuple of first value 0 is never kept. */
static void test_common_tuples(void) {
    int64_t v[12] = {0}, c[4] = {0};
    int64_t a[3] = {64, 1, 2}, b[3] = {128, 4, 0}, x[3] = {64, 9, 9}, z[3] = {0, 5, 5};
    ios_common_tuple_insert(v, c, a, 3, 1);
    ios_common_tuple_insert(v, c, b, 3, 1); /* tie: the larger first value above */
    CHECK(v[0] == 128 && c[0] == 1 && v[3] == 64 && c[1] == 1, "b then a");
    ios_common_tuple_insert(v, c, a, 3, 2);
    ios_common_tuple_insert(v, c, x, 3, 2); /* tie, equal first values: the newcomer above */
    ios_common_tuple_insert(v, c, z, 3, 9);
    int64_t want_v[12] = {64, 9, 9, 64, 1, 2, 128, 4, 0}, want_c[4] = {2, 2, 1, 0};
    CHECK(!memcmp(v, want_v, sizeof v) && !memcmp(c, want_c, sizeof c), "x, a, b: %lld %lld %lld",
          (long long)v[1], (long long)v[4], (long long)v[6]);

    /* The reduction: a tuple both records have is counted once with both counts. */
    static struct ios_pnetcdf_var_record in, io;
    in.counters[PNETCDF_VAR_ACCESS1_ACCESS] = io.counters[PNETCDF_VAR_ACCESS1_ACCESS] = 32;
    in.counters[PNETCDF_VAR_ACCESS1_COUNT] = 3;
    io.counters[PNETCDF_VAR_ACCESS1_COUNT] = 2;
    io.counters[PNETCDF_VAR_ACCESS2_ACCESS] = 16;
    io.counters[PNETCDF_VAR_ACCESS2_COUNT] = 4;
    in.counters[PNETCDF_VAR_OPENS] = io.counters[PNETCDF_VAR_OPENS] = 1;
    in.counters[PNETCDF_VAR_IS_RECORD_VAR] = 1;
    ios_pnetcdf_var_reducer.combine(&in, &io);
    int64_t *r = io.counters;
    CHECK(r[PNETCDF_VAR_ACCESS1_ACCESS] == 32 && r[PNETCDF_VAR_ACCESS1_COUNT] == 5, "32 x 5");
    CHECK(r[PNETCDF_VAR_ACCESS2_ACCESS] == 16 && r[PNETCDF_VAR_ACCESS2_COUNT] == 4, "16 x 4");
    CHECK(r[PNETCDF_VAR_ACCESS3_COUNT] == 0 && r[PNETCDF_VAR_OPENS] == 2, "no third; 2 opens");
    CHECK(r[PNETCDF_VAR_IS_RECORD_VAR] == 1, "a record variable");
}

static void test_value_counts(void) {
    struct ios_value_counts vc = {0};
    int64_t vals[4] = {0}, counts[4] = {0};
    for (int i = 0; i < 40; i++) /* zero is not counted; the first 32 others are */
        ios_value_count(&vc, i, vals, counts);
    ios_value_count(&vc, 5, vals, counts);
    ios_value_count(&vc, 0, vals, counts);
    CHECK(vc.n == IOS_CV_SLOTS, "tracked %d values", vc.n);
    CHECK(vc.value[4] == 5 && vc.count[4] == 2, "value 5 seen twice");
    CHECK(vc.value[31] == 32, "the 32nd value kept is 32, not %ld", (long)vc.value[31]);
    /* The live slots: 5 twice, then ties broken by the larger value. */
    CHECK(vals[0] == 5 && counts[0] == 2 && vals[1] == 32 && counts[1] == 1 && vals[3] == 30,
          "live slots %ld:%ld %ld:%ld %ld %ld", (long)vals[0], (long)counts[0], (long)vals[1],
          (long)counts[1], (long)vals[2], (long)vals[3]);
    for (int i = 0; i < 3; i++)
        ios_value_count(&vc, 7, vals, counts);
    CHECK(vals[0] == 7 && counts[0] == 4 && vals[1] == 5 && counts[1] == 2, "7 four times first");
    /* 5 overtakes 7 (five against four), then is counted as the first, then 7 again overtakes:
     * every count is what was counted, in the record and in vc. */
    for (int i = 0; i < 4; i++)
        ios_value_count(&vc, 5, vals, counts);
    CHECK(vals[0] == 5 && counts[0] == 6 && vals[1] == 7 && counts[1] == 4 && vc.count[4] == 6,
          "5 six times first: %ld:%ld %ld:%ld, vc %ld", (long)vals[0], (long)counts[0],
          (long)vals[1], (long)counts[1], (long)vc.count[4]);
    for (int i = 0; i < 3; i++)
        ios_value_count(&vc, 7, vals, counts);
    CHECK(vals[0] == 7 && counts[0] == 7 && vals[1] == 5 && counts[1] == 6 && vc.count[6] == 7,
          "7 seven times first: %ld:%ld %ld:%ld, vc %ld", (long)vals[0], (long)counts[0],
          (long)vals[1], (long)counts[1], (long)vc.count[7]);
}

static void test_timer(void) {
    double timer = 0, last = 0;
    ios_timer_add(&timer, 1.0, 2.0, &last);
    ios_timer_add(&timer, 1.5, 2.5, &last); /* overlaps the first by 0.5 s */
    ios_timer_add(&timer, 3.0, 3.25, &last);
    CHECK(timer == 1.75 && last == 3.25, "timer %g last %g", timer, last);
}

static void test_map(void) {
    struct ios_map m = {0};
    enum { N = 5000 };
    for (uint64_t k = 1; k <= N; k++)
        CHECK(ios_map_put(&m, k * 0x9e3779b97f4a7c15ULL, (void *)(uintptr_t)k) == 0, "put");
    for (uint64_t k = 1; k <= N; k += 2)
        ios_map_del(&m, k * 0x9e3779b97f4a7c15ULL);
    CHECK(m.count == N / 2, "count %zu", m.count);
    for (uint64_t k = 1; k <= N; k++) {
        void *v = ios_map_get(&m, k * 0x9e3779b97f4a7c15ULL);
        CHECK(v == (k % 2 ? NULL : (void *)(uintptr_t)k), "get %llu", (unsigned long long)k);
    }
    ios_map_free(&m);
    /* Reserved room takes N keys without another allocation, and keeps what it held. */
    CHECK(ios_map_put(&m, 7, &m) == 0 && ios_map_reserve(&m, N) == 0, "reserve");
    size_t cap = m.cap;
    CHECK(cap * 3 >= N * 4 && ios_map_get(&m, 7) == &m, "reserved cap %zu", cap);
    for (uint64_t k = 1; k < N; k++)
        CHECK(ios_map_put(&m, k * 0x9e3779b97f4a7c15ULL, &m) == 0, "put");
    CHECK(m.cap == cap && m.count == N, "cap %zu -> %zu, count %zu", cap, m.cap, m.count);
    ios_map_free(&m);
}

static void test_paths(void) {
    char out[4096], cwd[4096];
    char *excl[] = {"/etc/", NULL};
    ios_set_excludes(excl);
    CHECK(ios_normalize_path("/a//b/./c//d/./e", AT_FDCWD, out, sizeof out) == 0 &&
              strcmp(out, "/a/b/c/d/e") == 0,
          "collapsed: %s", out);
    CHECK(ios_normalize_path("/a/../b/", AT_FDCWD, out, sizeof out) == 0 &&
              strcmp(out, "/a/../b/") == 0,
          ".. and trailing slash kept: %s", out);
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    CHECK(ios_normalize_path("x.dat", AT_FDCWD, out, sizeof out) == 0 &&
              strncmp(out, cwd, strlen(cwd)) == 0 && strcmp(out + strlen(cwd), "/x.dat") == 0,
          "relative: %s", out);
    CHECK(ios_normalize_path("/etc/passwd", AT_FDCWD, out, sizeof out) != 0, "excluded");
    CHECK(ios_normalize_path("/etcetera", AT_FDCWD, out, sizeof out) == 0, "a prefix of a name");
    char *root[] = {"/", NULL}; /* one byte: every path is compared */
    ios_set_excludes(root);
    CHECK(ios_normalize_path("/home/x", AT_FDCWD, out, sizeof out) != 0, "all excluded");
    ios_set_excludes(NULL);
    CHECK(ios_normalize_path("/etc/passwd", AT_FDCWD, out, sizeof out) == 0, "none excluded");
    /* // and /./ at every offset of paths of every length up to 40 are found (collapsed in a
     * copy); a path of single slashes and dots comes back as it is. */
    for (size_t len = 3; len <= 40; len++)
        for (size_t at = 0; at + 3 <= len; at++)
            for (int dot = 0; dot < 2; dot++) {
                char path[48];
                for (size_t i = 0; i < len; i++)
                    path[i] = i % 3 == 0 ? '/' : i % 3 == 1 ? '.' : 'x';
                path[len] = '\0';
                const char *same = ios_absolute_name(path, len, out, sizeof out);
                CHECK(same == path, "%s: taken as it is", path);
                memcpy(path + at, dot ? "/./" : "//x", 3);
                const char *got = ios_absolute_name(path, len, out, sizeof out);
                CHECK(got == out && !strstr(got, "//") && !strstr(got, "/./"), "%s: %s", path,
                      got ? got : "(null)");
            }
}

/* The path cache answers only for the very path put, keeps the latest of two paths that share a
 * slot, and forgets paths longer than it keeps. */
static void test_path_cache(void) {
    struct ios_path_cache c = {0};
    const char *a = "/scratch/run1/out.dat", *b = "/scratch/run1/out.daT";
    int x, y;
    void *got = NULL;
    uint64_t ka = ios_path_key(a, strlen(a)), kb = ios_path_key(b, strlen(b));
    CHECK(ka != kb, "keys of paths differing in the last byte");
    CHECK(!ios_path_cache_get(&c, a, strlen(a), ka, &got), "an empty cache knows nothing");
    ios_path_cache_put(&c, a, strlen(a), ka, &x);
    CHECK(ios_path_cache_get(&c, a, strlen(a), ka, &got) && got == &x, "a path put is found");
    CHECK(!ios_path_cache_get(&c, b, strlen(b), kb, &got), "another path is not");
    ios_path_cache_put(&c, a, strlen(a), ka, NULL);
    CHECK(ios_path_cache_get(&c, a, strlen(a), ka, &got) && got == NULL, "not recorded: known");
    /* the same key (a forced collision): the slot holds the latest path only */
    ios_path_cache_put(&c, b, strlen(b), ka, &y);
    CHECK(!ios_path_cache_get(&c, a, strlen(a), ka, &got), "a path replaced in its slot");
    CHECK(ios_path_cache_get(&c, b, strlen(b), ka, &got) && got == &y, "the latest path");
    char long_path[400];
    memset(long_path, 'x', sizeof long_path - 1);
    long_path[0] = '/';
    long_path[sizeof long_path - 1] = '\0';
    uint64_t kl = ios_path_key(long_path, strlen(long_path));
    ios_path_cache_put(&c, long_path, strlen(long_path), kl, &x);
    CHECK(!ios_path_cache_get(&c, long_path, strlen(long_path), kl, &got), "too long to keep");
    ios_path_cache_clear(&c);
    CHECK(!ios_path_cache_get(&c, b, strlen(b), ka, &got), "cleared");
}

static void test_heatmap(void) {
    /* 1000 bytes over 0.05..0.25 s with 0.1 s bins: a quarter, a half, a quarter. */
    ios_heatmap_add(IOS_HEATMAP_POSIX, 1, 1000, 0.05, 0.25);
    ios_heatmap_add(IOS_HEATMAP_POSIX, 0, 7, 0.31, 0.32);
    struct ios_record_set set;
    ios_heatmap_collect(&set, 0.1, 4, 0.0);
    CHECK(set.count == 1, "one heatmap record, got %zu", set.count);
    const struct ios_heatmap_record_head *h = (const void *)set.buf;
    const int64_t *w = (const int64_t *)(h + 1), *r = w + 4;
    CHECK(h->nbins == 4 && h->bin_width_seconds == 0.1, "bins %lld width %g", (long long)h->nbins,
          h->bin_width_seconds);
    CHECK(w[0] == 250 && w[1] == 500 && w[2] == 250 && w[3] == 0, "write bins %lld %lld %lld",
          (long long)w[0], (long long)w[1], (long long)w[2]);
    CHECK(r[3] == 7, "read bin 3: %lld", (long long)r[3]);
    free(set.buf);
    /* Past 200 bins the width doubles and bytes are kept. */
    ios_heatmap_add(IOS_HEATMAP_POSIX, 1, 64, 25.0, 25.001);
    ios_heatmap_collect(&set, ios_heatmap_min_width(26.0), 130, 0.0);
    h = (const void *)set.buf;
    w = (const int64_t *)(h + 1);
    int64_t total = 0;
    for (int i = 0; i < 130; i++)
        total += w[i];
    CHECK(h->bin_width_seconds == 0.2 && total == 1064, "width %g total %lld", h->bin_width_seconds,
          (long long)total);
    free(set.buf);
}

/* The read and write wrappers' form, in nanoseconds: an operation in the bin the last one fell in
 * is added there; one that ends past the bin's end, by a nanosecond, is not (it is spread). */
static void test_heatmap_ns(void) {
    ios_heatmap_reset();
    ios_origin_ns = 1000;
    const int64_t ms = 1000000, o = ios_origin_ns;
    ios_heatmap_add_ns(IOS_HEATMAP_POSIX, 1, 100, o + 10 * ms, o + 20 * ms); /* bin 0 */
    ios_heatmap_add_ns(IOS_HEATMAP_POSIX, 1, 50, o + 30 * ms, o + 40 * ms);
    ios_heatmap_add_ns(IOS_HEATMAP_POSIX, 0, 8, o + 100 * ms - 1, o + 100 * ms + 1); /* across */
    ios_heatmap_add_ns(IOS_HEATMAP_POSIX, 1, 30, o + 150 * ms, o + 160 * ms);        /* bin 1 */
    ios_heatmap_add_ns(IOS_HEATMAP_POSIX, 1, 5, o + 170 * ms, o + 180 * ms);
    struct ios_record_set set;
    ios_heatmap_collect(&set, 0.1, 4, 0.0);
    const struct ios_heatmap_record_head *h = (const void *)set.buf;
    const int64_t *w = (const int64_t *)(h + 1), *r = w + 4;
    CHECK(w[0] == 150 && w[1] == 35 && w[2] == 0, "write bins %lld %lld %lld", (long long)w[0],
          (long long)w[1], (long long)w[2]);
    CHECK(r[0] + r[1] == 8 && r[1] > 0, "read bins %lld %lld", (long long)r[0], (long long)r[1]);
    free(set.buf);
    ios_heatmap_reset();
    ios_origin_ns = 0;
}

/* The record encoder's output (rec 0: its name mode's), inflated by zlib (the reader PyDarshan
 * and darshan-parser use), gives back its input exactly, within the bound. */
static void check_round_trip(const char *what, const unsigned char *in, size_t len, size_t rec) {
    size_t cap = ios_deflate_records_bound(len);
    unsigned char *z = malloc(cap), *back = malloc(len + 1);
    size_t zlen =
        rec ? ios_deflate_records(in, len, rec, z, cap) : ios_deflate_names(in, len, z, cap);
    CHECK(zlen > 0 && zlen <= cap, "%s: %zu bytes encoded of %zu allowed", what, zlen, cap);
    z_stream s = {
        .next_in = z, .avail_in = (uInt)zlen, .next_out = back, .avail_out = (uInt)len + 1};
    CHECK(inflateInit2(&s, -15) == Z_OK, "%s: inflateInit2", what);
    int rc = inflate(&s, Z_FINISH);
    CHECK(rc == Z_STREAM_END, "%s: inflate returned %d (%s)", what, rc, s.msg ? s.msg : "");
    CHECK(s.total_out == len && memcmp(back, in, len) == 0, "%s: %lu bytes back of %zu, differing",
          what, s.total_out, len);
    CHECK(s.avail_in == 0, "%s: %u bytes after the stream's end", what, s.avail_in);
    inflateEnd(&s);
    free(z);
    free(back);
}

/* Records as a log holds them: 8-byte counters, most equal to the record before's, a few
 * changing (ids, offsets, timestamps), runs of zeros. */
static void fill_records(unsigned char *buf, size_t len, size_t rec, unsigned seed) {
    uint64_t x = seed;
    for (size_t off = 0; off + 8 <= len; off += 8) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t field = (off % rec) / 8;
        int64_t v = field == 0       ? (int64_t)x
                    : field % 7 == 3 ? (int64_t)(x >> 40)
                    : field % 5 == 1 ? 1
                                     : 0;
        memcpy(buf + off, &v, 8);
    }
}

static void test_record_encoder(void) {
    enum { LEN = 1 << 20 };
    unsigned char *buf = malloc(LEN);
    size_t sizes[] = {1, 2, 3, 7, 8, 257, 258, 259, 4096, 100003, LEN};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char what[64];
        fill_records(buf, LEN, 704, (unsigned)i);
        snprintf(what, sizeof what, "records, %zu bytes", sizes[i]);
        check_round_trip(what, buf, sizes[i], 704);
        memset(buf, 0, LEN);
        snprintf(what, sizeof what, "zeros, %zu bytes", sizes[i]);
        check_round_trip(what, buf, sizes[i], 704);
        uint64_t x = i + 1;
        for (size_t b = 0; b < LEN; b++) /* incompressible: every block takes literals */
            buf[b] = (unsigned char)((x = x * 6364136223846793005ULL + 1) >> 56);
        snprintf(what, sizeof what, "random, %zu bytes", sizes[i]);
        check_round_trip(what, buf, sizes[i], 704);
    }
    size_t records[] = {8, 16, 24, 1000, IOS_DEFLATE_RECORD_MAX};
    for (size_t i = 0; i < sizeof records / sizeof *records; i++) {
        char what[64];
        fill_records(buf, LEN, records[i], 7);
        snprintf(what, sizeof what, "records of %zu bytes", records[i]);
        check_round_trip(what, buf, LEN, records[i]);
    }
    /* Byte k occurring about fib(k) times, shuffled, each followed by a counter byte (128 +
     * i % 127) that keeps any three bytes from recurring at the encoder's distances: the
     * literal code, unlimited, would be about 20 bits deep where deflate allows 15. */
    size_t n = 0;
    for (uint64_t k = 0, a = 1, b = 1; k < 21; k++, b = a + b, a = b - a)
        for (uint64_t j = 0; j < a; j++)
            buf[n++] = (unsigned char)k;
    uint64_t x = 99;
    for (size_t i = n - 1; i > 0; i--) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t j = (size_t)(x >> 33) % (i + 1);
        unsigned char t = buf[i];
        buf[i] = buf[j], buf[j] = t;
    }
    for (size_t i = n; i-- > 0;) {
        buf[2 * i] = buf[i];
        buf[2 * i + 1] = (unsigned char)(128 + i % 127);
    }
    check_round_trip("Fibonacci-skewed bytes", buf, 2 * n, 704);
    unsigned char z[64];
    CHECK(ios_deflate_records(buf, 16, IOS_DEFLATE_RECORD_MAX + 8, z, sizeof z) == 0,
          "a record beyond the window is refused");
    CHECK(ios_deflate_records(buf, 4096, 704, z, sizeof z) == 0, "a short output is refused");
    free(buf);
}

/* Appends a name entry (a hashed id, name, NUL) at buf + *len. */
static void put_name(unsigned char *buf, size_t *len, const char *name) {
    uint64_t id = ios_record_id(name);
    memcpy(buf + *len, &id, sizeof id);
    memcpy(buf + *len + sizeof id, name, strlen(name) + 1);
    *len += sizeof id + strlen(name) + 1;
}

static void test_name_encoder(void) {
    enum { LEN = 4 << 20, LONG = 40000 };
    unsigned char *buf = malloc(LEN);
    char *name = malloc(LONG + 1);
    size_t len = 0;
    for (int i = 0; i < 12000; i++) { /* a folder's files, names of growing length */
        snprintf(name, LONG, "/scratch/run/out/file.%d%s", i * 7, i % 3 ? ".h5" : "");
        put_name(buf, &len, name);
    }
    for (int i = 0; i < 1400; i++) { /* folders of every depth: every distance symbol */
        int depth = i / 2;
        memset(name, 'd', (size_t)depth * 4);
        snprintf(name + depth * 4, LONG - (size_t)depth * 4, "/f%d", i);
        put_name(buf, &len, name);
    }
    check_round_trip("13,400 names", buf, len, 0);
    size_t some = len;
    memset(name, 'a', LONG); /* longer than a block's tokens, than deflate's window */
    name[LONG] = '\0';
    put_name(buf, &len, name);
    name[LONG - 1] = 'b';
    put_name(buf, &len, name);
    put_name(buf, &len, "/short");
    check_round_trip("names longer than a block and the window", buf, len, 0);
    for (size_t cut = 1; cut < 12; cut++) /* a region ending inside an entry: any bytes go */
        check_round_trip("a cut entry", buf + some - cut - 20, cut + 20, 0);
    check_round_trip("no NUL", (const unsigned char *)name, LONG, 0);
    unsigned char z[64];
    CHECK(ios_deflate_names(buf, 4096, z, sizeof z) == 0, "a short output is refused");
    free(name);
    free(buf);
}

/* H5D's shared-record rules, as darshan-runtime 3.5.0's hdf5_dataset_record_reduction_op has
 * them: an access both records have takes both counts, then in's four and inout's four are
 * ranked (count down, size down); sums, ORed flags, in's shape, first starts, slowest access. */
static void test_h5d_reduction(void) {
    static struct ios_h5d_record in, io;
    enum { W = IOS_H5D_ACCESS };
    int64_t a[W] = {512, 0, 0, 0, 16, 8, 0, 0, 0, 1, 1}, b[W] = {64}, c[W] = {1024}, d[W] = {8};
    int64_t *ic = in.counters, *oc = io.counters;
    memcpy(&ic[H5D_ACCESS1_ACCESS], a, sizeof a);
    memcpy(&ic[H5D_ACCESS2_ACCESS], b, sizeof b);
    ic[H5D_ACCESS1_COUNT] = 3, ic[H5D_ACCESS2_COUNT] = 1;
    memcpy(&oc[H5D_ACCESS1_ACCESS], c, sizeof c);
    memcpy(&oc[H5D_ACCESS2_ACCESS], a, sizeof a);
    memcpy(&oc[H5D_ACCESS3_ACCESS], d, sizeof d);
    oc[H5D_ACCESS1_COUNT] = 3, oc[H5D_ACCESS2_COUNT] = 2, oc[H5D_ACCESS3_COUNT] = 1;
    ic[H5D_OPENS] = 2, oc[H5D_OPENS] = 3;
    ic[H5D_DATASPACE_NDIMS] = 2, oc[H5D_DATASPACE_NDIMS] = 7;
    oc[H5D_USE_DEPRECATED] = 1;
    in.fcounters[H5D_F_OPEN_START_TIMESTAMP] = 2.0, io.fcounters[H5D_F_OPEN_START_TIMESTAMP] = 0;
    in.fcounters[H5D_F_MAX_WRITE_TIME] = 0.5, ic[H5D_MAX_WRITE_TIME_SIZE] = 512;
    io.fcounters[H5D_F_MAX_WRITE_TIME] = 0.25, oc[H5D_MAX_WRITE_TIME_SIZE] = 1024;
    in.file_rec_id = 42;
    ios_h5d_reducer.combine(&in, &io);
    const int64_t *want[4] = {a, c, b, d};
    const int64_t want_n[4] = {5, 3, 1, 1};
    for (int i = 0; i < 4; i++)
        CHECK(memcmp(&oc[H5D_ACCESS1_ACCESS + i * W], want[i], sizeof a) == 0 &&
                  oc[H5D_ACCESS1_COUNT + i] == want_n[i],
              "access %d: %lld x %lld", i + 1, (long long)oc[H5D_ACCESS1_ACCESS + i * W],
              (long long)oc[H5D_ACCESS1_COUNT + i]);
    CHECK(oc[H5D_OPENS] == 5 && oc[H5D_DATASPACE_NDIMS] == 2 && oc[H5D_USE_DEPRECATED] == 1,
          "sums, in's shape, flags");
    CHECK(io.fcounters[H5D_F_OPEN_START_TIMESTAMP] == 2.0, "first start: the non-zero one");
    CHECK(io.fcounters[H5D_F_MAX_WRITE_TIME] == 0.5 && oc[H5D_MAX_WRITE_TIME_SIZE] == 512,
          "slowest write and its size");
    CHECK(io.file_rec_id == 42, "file record id");
    /* At run time an access seen again moves up past those it now outnumbers. */
    int64_t slots[4 * W] = {0}, counts[4] = {0};
    ios_h5d_common_insert(slots, counts, c, 1);
    ios_h5d_common_insert(slots, counts, b, 1);
    ios_h5d_common_insert(slots, counts, b, 2);
    ios_h5d_common_insert(slots, counts, (int64_t[W]){0}, 5); /* size 0: never kept */
    CHECK(slots[0] == 64 && counts[0] == 2 && slots[W] == 1024 && counts[1] == 1 && counts[2] == 0,
          "live: %lld x %lld, %lld x %lld", (long long)slots[0], (long long)counts[0],
          (long long)slots[W], (long long)counts[1]);
}

/* ios_write_stored's stream (at an offset of a file), inflated by zlib with its header and
 * Adler-32 check (Darshan's reader of zlib regions), gives back its input, in ios_stored_len
 * bytes: around the 65,535-byte block's edges and over several blocks. */
static void test_stored_streams(void) {
    enum { OFF = 3, MAX = 200003 };
    size_t sizes[] = {0, 1, 65534, 65535, 65536, 3 * 65535, MAX};
    unsigned char *in = malloc(MAX), *z = malloc(MAX + 64), *back = malloc(MAX + 1);
    FILE *f = tmpfile();
    CHECK(in && z && back && f, "memory or a temporary file");
    if (!(in && z && back && f))
        return;
    uint64_t x = 5;
    for (size_t b = 0; b < MAX; b++)
        in[b] = (unsigned char)((x = x * 6364136223846793005ULL + 1) >> 56);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t len = sizes[i], zlen = ios_stored_len(len);
        CHECK(ftruncate(fileno(f), 0) == 0, "ftruncate");
        CHECK(ios_write_stored(fileno(f), in, len, OFF) == 0, "%zu bytes: written", len);
        CHECK(pread(fileno(f), z, zlen + 1, OFF) == (ssize_t)zlen, "%zu bytes: %zu in the file",
              len, zlen);
        z_stream s = {
            .next_in = z, .avail_in = (uInt)zlen, .next_out = back, .avail_out = (uInt)len + 1};
        CHECK(inflateInit(&s) == Z_OK, "inflateInit");
        int rc = inflate(&s, Z_FINISH);
        CHECK(rc == Z_STREAM_END, "%zu bytes: inflate returned %d (%s)", len, rc,
              s.msg ? s.msg : "");
        CHECK(s.total_out == len && memcmp(back, in, len) == 0 && s.avail_in == 0,
              "%zu bytes: %lu back, %u left over", len, s.total_out, s.avail_in);
        inflateEnd(&s);
    }
    fclose(f);
    free(in);
    free(z);
    free(back);
}

int main(void) {
    test_hash();
    test_size_bins();
    test_common_values();
    test_common_tuples();
    test_value_counts();
    test_timer();
    test_map();
    test_paths();
    test_path_cache();
    test_heatmap();
    test_heatmap_ns();
    test_record_encoder();
    test_stored_streams();
    test_name_encoder();
    test_h5d_reduction();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("runtime unit tests: all checks passed\n");
    return failures != 0;
}
