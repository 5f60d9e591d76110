/* Lustre module (Darshan module id 8, record version 2, reference §6.4): for every file the
 * POSIX module opens on a Lustre file system, the layout: components (stripe size and count,
 * pattern, flags, extent, mirror, pool) and the OST index of every stripe, so that the analysis
 * can relate slow files to the storage targets that hold them (seed 002).
 *
 * The layout comes from liblustreapi, loaded with dlopen the first time a Lustre file is seen,
 * so that the runtime neither links against it nor needs it anywhere else. That lookup is the
 * module's seam: ios_lustre_query() fills a struct ios_lustre_layout. Without liblustreapi no
 * record is written (and one warning says so). */
#include "iostudy.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#define LLAPI_LAYOUT_MDT 2ULL /* a Data-on-MDT component: no OST stripes */
#define LLAPI_LAYOUT_COMP_USE_FIRST 1
#define LLAPI_LAYOUT_COMP_USE_NEXT 3
#define LCME_FL_INIT 0x10 /* a composite layout's component that has been instantiated */

/* liblustreapi's layout API (lustre/lustreapi.h), the calls the module makes. */
static struct {
    void *(*get_by_fd)(int fd, uint32_t flags);
    void (*free)(void *layout);
    int (*is_composite)(void *layout); /* returns bool */
    int (*comp_use)(void *layout, uint32_t pos);
    int (*stripe_size_get)(const void *layout, uint64_t *size);
    int (*stripe_count_get)(const void *layout, uint64_t *count);
    int (*pattern_get)(const void *layout, uint64_t *pattern);
    int (*comp_flags_get)(const void *layout, uint32_t *flags);
    int (*comp_extent_get)(const void *layout, uint64_t *start, uint64_t *end);
    int (*mirror_id_get)(const void *layout, uint32_t *id);
    int (*pool_name_get)(const void *layout, char *dest, size_t n);
    int (*ost_index_get)(const void *layout, uint64_t stripe, uint64_t *index);
} llapi;
static int llapi_state; /* 0 not tried, 1 loaded, -1 not available */

static int load_llapi(void) {
    static const char *const libs[] = {"liblustreapi.so.1", "liblustreapi.so"};
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof libs / sizeof *libs; i++)
        h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        ios_warn("files on Lustre but no liblustreapi: no Lustre layouts are recorded");
        return -1;
    }
#define FIND(field, name) ((*(void **)&llapi.field = dlsym(h, name)) != NULL)
    int ok = FIND(get_by_fd, "llapi_layout_get_by_fd") && FIND(free, "llapi_layout_free") &&
             FIND(is_composite, "llapi_layout_is_composite") &&
             FIND(comp_use, "llapi_layout_comp_use") &&
             FIND(stripe_size_get, "llapi_layout_stripe_size_get") &&
             FIND(stripe_count_get, "llapi_layout_stripe_count_get") &&
             FIND(pattern_get, "llapi_layout_pattern_get") &&
             FIND(comp_flags_get, "llapi_layout_comp_flags_get") &&
             FIND(comp_extent_get, "llapi_layout_comp_extent_get") &&
             FIND(mirror_id_get, "llapi_layout_mirror_id_get") &&
             FIND(pool_name_get, "llapi_layout_pool_name_get") &&
             FIND(ost_index_get, "llapi_layout_ost_index_get");
#undef FIND
    if (!ok) {
        ios_warn("liblustreapi lacks the layout API (Lustre < 2.10?): no Lustre layouts");
        return -1;
    }
    return 1;
}

/* One component into out, its OSTs at osts; returns the stripes stored, or -1 to skip it. */
static int query_component(void *layout, int composite, struct ios_lustre_component *out,
                           int64_t *osts, int room) {
    uint64_t size = 0, count = 0, pattern = 0, start = 0, end = (uint64_t)-1;
    uint32_t flags = 0, mirror = 0;
    if (llapi.stripe_size_get(layout, &size) || llapi.stripe_count_get(layout, &count) ||
        llapi.pattern_get(layout, &pattern))
        return -1;
    /* A plain layout has no extent, flags or mirror: the defaults above stand for it. */
    if (composite &&
        (llapi.comp_flags_get(layout, &flags) || llapi.comp_extent_get(layout, &start, &end) ||
         llapi.mirror_id_get(layout, &mirror)))
        return -1;
    if (composite && !(flags & LCME_FL_INIT))
        return -1; /* not instantiated yet: it holds no data of this file */
    if (pattern & LLAPI_LAYOUT_MDT)
        count = 0;
    if (count > (uint64_t)room)
        return -1;
    memset(out, 0, sizeof *out);
    out->counters[LUSTRE_COMP_STRIPE_SIZE] = (int64_t)size;
    out->counters[LUSTRE_COMP_STRIPE_COUNT] = (int64_t)count;
    out->counters[LUSTRE_COMP_STRIPE_PATTERN] = (int64_t)pattern;
    out->counters[LUSTRE_COMP_FLAGS] = flags;
    out->counters[LUSTRE_COMP_EXT_START] = (int64_t)start;
    out->counters[LUSTRE_COMP_EXT_END] = (int64_t)end;
    out->counters[LUSTRE_COMP_MIRROR_ID] = mirror;
    llapi.pool_name_get(layout, out->pool_name, sizeof out->pool_name - 1);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t ost;
        osts[i] = llapi.ost_index_get(layout, i, &ost) == 0 ? (int64_t)ost : -1;
    }
    return (int)count;
}

int ios_lustre_query(int fd, struct ios_lustre_layout *out) {
    if (llapi_state == 0)
        llapi_state = load_llapi();
    if (llapi_state < 0)
        return -1;
    void *layout = llapi.get_by_fd(fd, 0);
    if (!layout)
        return -1;
    int composite = llapi.is_composite(layout) != 0;
    out->num_comps = out->num_stripes = 0;
    if (!composite || llapi.comp_use(layout, LLAPI_LAYOUT_COMP_USE_FIRST) == 0) {
        do {
            int n = query_component(layout, composite, &out->comps[out->num_comps],
                                    &out->osts[out->num_stripes],
                                    IOS_LUSTRE_MAX_STRIPES - out->num_stripes);
            if (n >= 0) {
                out->num_comps++;
                out->num_stripes += n;
            }
        } while (composite && out->num_comps < IOS_LUSTRE_MAX_COMPS &&
                 llapi.comp_use(layout, LLAPI_LAYOUT_COMP_USE_NEXT) == 0);
    }
    llapi.free(layout);
    return out->num_comps > 0 ? 0 : -1;
}

/* ---- records ----------------------------------------------------------------------------- */
static struct ios_map records; /* record id -> struct ios_lustre_record_head (+ its parts) */

/* Whether the folders files were opened in are on Lustre: asked of the kernel (fstatfs) once
 * per folder, not once per file (a system call more per new file was most of what creating
 * many files cost under the runtime). A folder's files are on its file system, but for a file
 * that is itself a mount point. */
static struct ios_path_cache folders;
static char on_lustre_mark; /* the cached answer "on Lustre"; NULL: not */

static int on_lustre(const char *name, int fd) {
    const char *slash = strrchr(name, '/');
    size_t len = slash ? (size_t)(slash - name) : 0;
    uint64_t key = ios_path_key(name, len);
    void *known;
    ios_lock();
    int hit = ios_path_cache_get(&folders, name, len, key, &known);
    ios_unlock();
    if (hit)
        return known != NULL;
    struct statfs sfs;
    int lustre = fstatfs(fd, &sfs) == 0 && (uint32_t)sfs.f_type == IOS_LUSTRE_MAGIC;
    ios_lock();
    ios_path_cache_put(&folders, name, len, key, lustre ? &on_lustre_mark : NULL);
    ios_unlock();
    return lustre;
}

void ios_lustre_file_opened(uint64_t id, const char *name, int fd) {
    if (!on_lustre(name, fd))
        return;
    static __thread struct ios_lustre_layout layout; /* tens of KiB: not on the stack */
    if (ios_lustre_query(fd, &layout) != 0)
        return;
    ios_lock();
    size_t size = ios_lustre_size(layout.num_comps, layout.num_stripes);
    struct ios_lustre_record_head *head =
        ios_map_get(&records, id) ? NULL : ios_register_record(IOS_MOD_LUSTRE, id, name, size);
    if (head && ios_map_put(&records, id, head) == 0) {
        head->base.id = id;
        head->num_comps = layout.num_comps;
        head->num_stripes = layout.num_stripes;
        memcpy(head + 1, layout.comps, (size_t)layout.num_comps * sizeof *layout.comps);
        memcpy((char *)(head + 1) + (size_t)layout.num_comps * sizeof *layout.comps, layout.osts,
               (size_t)layout.num_stripes * sizeof *layout.osts);
    }
    ios_unlock();
}

void ios_lustre_collect(struct ios_record_set *set) {
    set->mod = IOS_MOD_LUSTRE;
    set->rec_size = 0; /* variable: ios_lustre_record_size */
    set->count = set->len = 0;
    size_t total = 1;
    for (size_t i = 0; i < records.cap; i++)
        if (records.keys[i])
            total += ios_lustre_record_size(records.vals[i]);
    set->buf = malloc(total);
    if (!set->buf)
        return;
    for (size_t i = 0; i < records.cap; i++) {
        if (!records.keys[i])
            continue;
        size_t size = ios_lustre_record_size(records.vals[i]);
        memcpy(set->buf + set->len, records.vals[i], size);
        set->len += size;
        set->count++;
    }
}

void ios_lustre_reset(void) {
    ios_map_free(&records);
    ios_path_cache_clear(&folders);
}
