/* Unit tests of the runtime's building blocks (run by ctest): the record-id hash against the
 * format reference's vectors, common-value merging, size bins, timers, the u64 map, path
 * normalization and the heatmap's bins. Expected values come from the reference, not from
 * the code under test. */
#include "iostudy.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ios_config ios_config;
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

static void test_value_counts(void) {
    struct ios_value_counts vc = {0};
    for (int i = 0; i < 40; i++)
        ios_value_count(&vc, i); /* only the first 32 distinct values are tracked */
    ios_value_count(&vc, 5);
    CHECK(vc.n == IOS_CV_SLOTS, "tracked %d values", vc.n);
    CHECK(vc.count[5] == 2, "value 5 seen twice");
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

int main(void) {
    test_hash();
    test_size_bins();
    test_common_values();
    test_value_counts();
    test_timer();
    test_map();
    test_paths();
    test_path_cache();
    test_heatmap();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("runtime unit tests: all checks passed\n");
    return failures != 0;
}
