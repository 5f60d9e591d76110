/* POSIX module: the record bookkeeping. The files by record id and by descriptor, the paths
 * already named, and the records at shutdown. */
#include "posix.h"

#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

struct posix_file *_Atomic *_Atomic ios_posix_fd_table;
_Atomic unsigned ios_posix_fd_table_size;
static struct ios_map files_by_id;

int ios_posix_fd_table_init(void) {
    struct rlimit rl;
    rlim_t n = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > n)
        n = rl.rlim_max;
    if (n > (1u << 20))
        n = 1u << 20;
    void *table = IOS_CALL(mmap)(NULL, n * sizeof(void *), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED)
        return -1;
    atomic_store_explicit(&ios_posix_fd_table, table, memory_order_relaxed);
    atomic_store_explicit(&ios_posix_fd_table_size, (unsigned)n, memory_order_release);
    return 0;
}

/* Once the record memory is spent, the ios_path_key of every recorded name: a name whose key
 * is not among them is new, and is refused without its record id (a file-heavy program names
 * thousands of files after that; the lookup8 hash of each was most of their cost). Made then,
 * complete from then on: no record is made any more. */
static struct ios_map recorded_keys;
enum { KEYS_UNMADE, KEYS_MADE, KEYS_FAILED };
static int keys_state;

static int make_recorded_keys(void) {
    /* Room for twice as many: most lookups miss, and a miss probes until a free slot. */
    if (ios_map_reserve(&recorded_keys, 2 * files_by_id.count) != 0)
        return KEYS_FAILED;
    for (size_t i = 0; i < files_by_id.cap; i++) {
        const char *name = files_by_id.keys[i] ? ios_record_name(files_by_id.keys[i]) : NULL;
        if (name && ios_map_put(&recorded_keys, ios_path_key(name, strlen(name)) | 1,
                                files_by_id.vals[i]) != 0)
            return KEYS_FAILED; /* incomplete: of no use */
    }
    return KEYS_MADE;
}

/* Whether name surely has no record, and none can be made: refused then (flags set). key: its
 * ios_path_key when known, else NULL. */
static int refused_unhashed(const char *name, const uint64_t *key) {
    if (!ios_record_memory_spent(sizeof(struct ios_posix_record)))
        return 0;
    if (keys_state == KEYS_UNMADE)
        keys_state = make_recorded_keys();
    if (keys_state != KEYS_MADE ||
        ios_map_get(&recorded_keys, (key ? *key : ios_path_key(name, strlen(name))) | 1))
        return 0;
    ios_refuse_record(IOS_MOD_POSIX, name);
    return 1;
}

/* ios_posix_file_by_name, with the name's ios_path_key when known (else NULL). */
static struct posix_file *file_by_name_key(const char *name, const uint64_t *key) {
    if (refused_unhashed(name, key))
        return NULL;
    int created = 0;
    struct posix_file *f =
        ios_file_by_name(&files_by_id, IOS_MOD_POSIX, name, sizeof *f, sizeof *f->rec, &created);
    if (f && created) {
        f->id = f->rec->base.id;
        f->rec->counters[POSIX_MEM_ALIGNMENT] = ios_config.mem_alignment;
        f->rec->counters[POSIX_FILE_ALIGNMENT] = ios_file_alignment(name);
        f->align_mask = ios_align_mask(f->rec->counters[POSIX_FILE_ALIGNMENT]);
    }
    return f;
}

struct posix_file *ios_posix_file_by_name(const char *name) {
    return file_by_name_key(name, NULL);
}

/* What absolute paths came to (posix_enter_with_file looks them up). */
struct ios_path_cache ios_posix_absolute_paths;

struct posix_file *ios_posix_named_first(const char *path) {
    int saved = errno; /* naming may allocate and ask the file system */
    size_t len = strlen(path);
    uint64_t key = ios_path_key(path, len);
    char scratch[PATH_MAX];
    const char *name = ios_absolute_name(path, len, scratch, sizeof scratch);
    struct posix_file *f = !name ? NULL : file_by_name_key(name, name == path ? &key : NULL);
    ios_path_cache_put(&ios_posix_absolute_paths, path, len, key, f);
    errno = saved;
    return f;
}

int ios_posix_enter_with_relative(int dirfd, const char *path, struct posix_file **f) {
    char name[PATH_MAX];
    int saved = errno, entered = 0;
    ios_guard(1); /* the working directory is asked outside the lock */
    if (ios_normalize_path(path, dirfd, name, sizeof name) == 0 && ios_enter()) {
        *f = ios_posix_file_by_name(name);
        entered = 1;
    } else {
        ios_guard(0);
    }
    errno = saved;
    return entered;
}

struct posix_file *ios_posix_recorded(uint64_t id) {
    return ios_map_get(&files_by_id, id);
}

const char *ios_posix_fd_name(int fd) {
    struct posix_file *f = posix_fd_lookup(fd);
    return f ? ios_record_name(f->rec->base.id) : NULL;
}

/* ---- shutdown ------------------------------------------------------------------------------ */
/* The access and stride counters of r from the file's tracked values (exact whatever the live
 * slots of a memory-mapped log hold). */
static void exact_sizes(struct ios_posix_record *r, const struct posix_sizes *sz) {
    memset(&r->counters[POSIX_STRIDE1_STRIDE], 0,
           (POSIX_ACCESS4_COUNT - POSIX_STRIDE1_STRIDE + 1) * sizeof(int64_t));
    ios_common_merge(&r->counters[POSIX_ACCESS1_ACCESS], &r->counters[POSIX_ACCESS1_COUNT],
                     sz->access.value, sz->access.count, sz->access.n);
    ios_common_merge(&r->counters[POSIX_STRIDE1_STRIDE], &r->counters[POSIX_STRIDE1_COUNT],
                     sz->stride.value, sz->stride.count, sz->stride.n);
}

/* The records as they stand in the memory-mapped log, finished there: no copy of megabytes at
 * exit. Only when every record is there, each with its file. */
static int collect_in_place(struct ios_record_set *set) {
    size_t len;
    unsigned char *buf = ios_mmap_region(IOS_MOD_POSIX, &len);
    if (!buf || len != files_by_id.count * set->rec_size)
        return -1;
    for (size_t i = 0; i < files_by_id.cap; i++) {
        struct posix_file *f = files_by_id.keys[i] ? files_by_id.vals[i] : NULL;
        if (f && f->sizes)
            exact_sizes(f->rec, f->sizes);
    }
    set->buf = buf;
    set->len = len;
    set->count = files_by_id.count;
    set->borrowed = 1;
    return 0;
}

void ios_posix_collect(struct ios_record_set *set) {
    set->mod = IOS_MOD_POSIX;
    set->rec_size = sizeof(struct ios_posix_record);
    set->count = set->len = 0;
    if (set->in_place && collect_in_place(set) == 0)
        return;
    set->buf = malloc(files_by_id.count * set->rec_size + 1);
    if (!set->buf)
        return;
    for (size_t i = 0; i < files_by_id.cap; i++) {
        struct posix_file *f = files_by_id.keys[i] ? files_by_id.vals[i] : NULL;
        if (!f)
            continue;
        struct ios_posix_record *r = (void *)(set->buf + set->len);
        *r = *f->rec;
        if (f->sizes)
            exact_sizes(r, f->sizes);
        set->len += set->rec_size;
        set->count++;
    }
}

void ios_posix_reset(void) {
    ios_map_free(&files_by_id);
    ios_map_free(&recorded_keys);
    keys_state = KEYS_UNMADE;
    ios_posix_aio_reset();
    ios_path_cache_clear(&ios_posix_absolute_paths);
    void *table = atomic_load_explicit(&ios_posix_fd_table, memory_order_relaxed);
    if (table) /* zero pages again without touching (allocating) every one of them */
        madvise(table, (size_t)ios_posix_fd_table_size * sizeof(void *), MADV_DONTNEED);
}
