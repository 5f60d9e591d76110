/* DXT_POSIX and DXT_MPIIO records in the log writer. While a process runs, a module's region
 * holds runs: a record for each stretch of calls on one file (its writes, then its reads), so
 * that the region is a valid log at every instruction (dxt.c). A job's log holds one record per
 * file and rank, as Darshan 3.5.0 writes it: the shutdown and the merge of killed processes'
 * logs gather the runs into it here. */
#include "logwrite.h"

#include <stdlib.h>
#include <string.h>

int ios_dxt_module(int mod) { return mod == IOS_MOD_DXT_POSIX || mod == IOS_MOD_DXT_MPIIO; }

/* One file's trace while its runs are gathered. */
struct gathered {
    const struct ios_dxt_record_head *first; /* its first run */
    int64_t writes, reads;
    int kept;
    struct ios_dxt_segment *w, *r; /* where its next write and read go */
};

/* The size of the whole record at off, or 0: the region ends there (nothing, or a tail shorter
 * than the record says, as a segment being added leaves it). */
static size_t run_size(const unsigned char *region, size_t len, size_t off) {
    const struct ios_dxt_record_head *h = (const void *)(region + off);
    if (len - off < sizeof *h || h->write_count < 0 || h->read_count < 0)
        return 0;
    size_t size = ios_dxt_record_size(h);
    return size <= len - off ? size : 0;
}

/* The files of the region's runs into *files, in the order of their first runs, with their
 * counts; index maps an id to 1 + its place. 0, or -1 without memory. */
static int index_runs(const unsigned char *region, size_t len, struct ios_map *index,
                      struct gathered **files, size_t *n) {
    size_t cap = 0;
    *files = NULL;
    *n = 0;
    for (size_t off = 0, size; (size = run_size(region, len, off)) != 0; off += size) {
        const struct ios_dxt_record_head *h = (const void *)(region + off);
        size_t i = (size_t)(uintptr_t)ios_map_get(index, h->base.id);
        if (!i) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 16;
                struct gathered *more = realloc(*files, cap * sizeof *more);
                if (!more)
                    return -1;
                *files = more;
            }
            (*files)[*n] = (struct gathered){.first = h};
            i = ++*n;
            if (ios_map_put(index, h->base.id, (void *)(uintptr_t)i) != 0)
                return -1;
        }
        (*files)[i - 1].writes += h->write_count;
        (*files)[i - 1].reads += h->read_count;
    }
    return 0;
}

/* Places each kept file's head in out (grown for them) and points its cursors after it. */
static int place_heads(struct gathered *files, size_t n, int (*keep)(uint64_t id),
                       struct ios_record_set *out) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        struct gathered *g = &files[i];
        g->kept = g->writes + g->reads > 0 && (!keep || keep(g->first->base.id));
        if (g->kept)
            total += sizeof *g->first + (size_t)(g->writes + g->reads) * sizeof *g->w;
    }
    unsigned char *buf = realloc(out->buf, out->len + total + 1);
    if (!buf)
        return -1;
    out->buf = buf;
    for (size_t i = 0; i < n; i++) {
        struct gathered *g = &files[i];
        if (!g->kept)
            continue;
        struct ios_dxt_record_head *head = (void *)(out->buf + out->len);
        *head = *g->first;
        head->write_count = g->writes;
        head->read_count = g->reads;
        g->w = (void *)(head + 1);
        g->r = g->w + g->writes;
        out->len += ios_dxt_record_size(head);
        out->count++;
    }
    return 0;
}

int ios_dxt_gather(const unsigned char *region, size_t len, int (*keep)(uint64_t id),
                   struct ios_record_set *out) {
    struct ios_map index = {0};
    struct gathered *files;
    size_t n;
    int err =
        index_runs(region, len, &index, &files, &n) != 0 || place_heads(files, n, keep, out) != 0
            ? -1
            : 0;
    for (size_t off = 0, size; !err && (size = run_size(region, len, off)) != 0; off += size) {
        const struct ios_dxt_record_head *h = (const void *)(region + off);
        struct gathered *g = &files[(size_t)(uintptr_t)ios_map_get(&index, h->base.id) - 1];
        const struct ios_dxt_segment *seg = (const void *)(h + 1);
        if (!g->kept)
            continue;
        ios_copy(g->w, seg, (size_t)h->write_count * sizeof *seg);
        ios_copy(g->r, seg + h->write_count, (size_t)h->read_count * sizeof *seg);
        g->w += h->write_count;
        g->r += h->read_count;
    }
    free(files);
    ios_map_free(&index);
    return err;
}

void ios_dxt_shift(struct ios_record_set *set, double by) {
    for (size_t off = 0, i = 0; i < set->count; i++) {
        struct ios_dxt_record_head *head = (void *)(set->buf + off);
        struct ios_dxt_segment *seg = (void *)(head + 1);
        for (int64_t k = 0; k < head->write_count + head->read_count; k++) {
            seg[k].start_time += by;
            seg[k].end_time += by;
        }
        off += ios_dxt_record_size(head);
    }
}

double ios_dxt_last_end(const struct ios_record_set *set) {
    double last = 0;
    for (size_t off = 0, i = 0; i < set->count; i++) {
        const struct ios_dxt_record_head *head = (const void *)(set->buf + off);
        const struct ios_dxt_segment *seg = (const void *)(head + 1);
        for (int64_t k = 0; k < head->write_count + head->read_count; k++)
            last = seg[k].end_time > last ? seg[k].end_time : last;
        off += ios_dxt_record_size(head);
    }
    return last;
}
