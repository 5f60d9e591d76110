/* DXT_POSIX and DXT_MPIIO: every read and write of a traced file as a segment (offset, length,
 * start and end time), per rank, in Darshan 3.5.0's format (reference §6.6: DXT_POSIX v1,
 * DXT_MPIIO v2). Off unless a job asks for it, as Darshan decides (config.c: DXT_ENABLE_IO_TRACE,
 * or MOD_ENABLE naming DXT_POSIX, DXT_MPIIO, or `*`); a file's trace is not made when the
 * configuration's NAME_EXCLUDE rules for that DXT module refuse the file's name.
 *
 * Memory is bounded as Darshan 3.5.0 bounds it: each module has 2 MiB (Darshan's
 * DXT_IO_TRACE_MEM_MAX), or n KiB with MAX_RECORDS n for it, as there; a file's record takes its
 * 104-byte head, and each direction's segments grow by 64 at first, then by doubling, the last
 * growth cut to what is left (in chunks that are never moved). A segment that finds no room is
 * dropped and the module's partial flag set. Traces are never reduced across ranks (Darshan has no
 * reduction for them either).
 *
 * Darshan 3.5.0's triggers: DARSHAN_DXT_SMALL_IO_TRIGGER=p keeps, at shutdown, the traces of the
 * files whose reads and writes under 10 KiB are at least the fraction p of this process's reads
 * and writes of the file (POSIX counters), DARSHAN_DXT_UNALIGNED_IO_TRIGGER=p those whose accesses
 * not aligned to the file system's block are; a file that fails one loses its DXT_POSIX and its
 * DXT_MPIIO trace. */
#include "posix.h"

#include <stdlib.h>
#include <unistd.h>

#define FIRST_SEGMENTS 64

int ios_dxt_flags;

static const int module_ids[IOS_DXT_NAPIS] = {IOS_MOD_DXT_POSIX, IOS_MOD_DXT_MPIIO};
static struct {
    size_t used;
    struct ios_dxt_trace *traces; /* every trace of the module, newest first */
} mods[IOS_DXT_NAPIS];

/* Room for size more bytes of api's module, or its partial flag set. */
static int take(int api, size_t size) {
    if (size > ios_config.dxt_mem[api] - mods[api].used) {
        ios_set_partial(module_ids[api]);
        return -1;
    }
    mods[api].used += size;
    return 0;
}

/* The trace of a file the configuration does not trace (NAME_EXCLUDE of a DXT module): its
 * segments find it full and go, and the rules are asked once per file, not per call. */
static struct ios_dxt_trace untraced = {.full = 3};

static struct ios_dxt_trace *new_trace(int api, uint64_t id) {
    if (ios_config_refuses(module_ids[api], ios_record_name(id)))
        return &untraced;
    if (take(api, sizeof(struct ios_dxt_record_head)) != 0)
        return NULL;
    struct ios_dxt_trace *t = calloc(1, sizeof *t);
    if (!t) {
        ios_set_partial(module_ids[api]);
        return NULL;
    }
    t->id = id;
    t->next = mods[api].traces;
    mods[api].traces = t;
    return t;
}

/* A new chunk for one direction: 64 segments, then as many as there are, the last one cut to
 * what is left. */
static int grow(int api, struct ios_dxt_trace *t, int dir) {
    int64_t more = t->count[dir] ? t->count[dir] : FIRST_SEGMENTS;
    size_t left = (ios_config.dxt_mem[api] - mods[api].used) / sizeof(struct ios_dxt_segment);
    if ((size_t)more > left)
        more = (int64_t)left;
    if (more == 0 || take(api, (size_t)more * sizeof(struct ios_dxt_segment)) != 0) {
        ios_set_partial(module_ids[api]);
        return -1;
    }
    struct ios_dxt_chunk *c = malloc(sizeof *c + (size_t)more * sizeof(struct ios_dxt_segment));
    if (!c) {
        ios_set_partial(module_ids[api]);
        return -1;
    }
    c->next = NULL;
    c->n = 0;
    c->cap = more;
    if (t->last[dir])
        t->last[dir]->next = c;
    else
        t->first[dir] = c;
    t->last[dir] = c;
    return 0;
}

void ios_dxt_add_slow(int api, struct ios_dxt_trace **trace, uint64_t id, int is_write,
                      int64_t offset, int64_t length, double t1, double t2) {
    struct ios_dxt_trace *t = *trace;
    if (!t && !(t = *trace = new_trace(api, id)))
        return;
    if (t->full & (1 << is_write))
        return;
    struct ios_dxt_chunk *c = t->last[is_write];
    if ((!c || c->n == c->cap) && grow(api, t, is_write) != 0) {
        t->full |= 1 << is_write;
        return;
    }
    c = t->last[is_write];
    c->seg[c->n++] = (struct ios_dxt_segment){offset, length, t1, t2};
    t->count[is_write]++;
}

/* Whether the triggers keep the file of record id (its POSIX counters in this process). */
static int triggered(uint64_t id) {
    struct posix_file *f = ios_posix_recorded(id);
    if (!f)
        return 1;
    const int64_t *c = f->rec->counters;
    int total = (int)(c[POSIX_WRITES] + c[POSIX_READS]);
    int small =
        (int)(c[POSIX_SIZE_WRITE_0_100] + c[POSIX_SIZE_WRITE_100_1K] + c[POSIX_SIZE_WRITE_1K_10K] +
              c[POSIX_SIZE_READ_0_100] + c[POSIX_SIZE_READ_100_1K] + c[POSIX_SIZE_READ_1K_10K]);
    int unaligned = (int)c[POSIX_FILE_NOT_ALIGNED];
    /* As Darshan compares: a file without reads or writes (0 / 0) fails. */
    double small_trigger = ios_config.dxt_small_trigger;
    double unaligned_trigger = ios_config.dxt_unaligned_trigger;
    if (small_trigger >= 0 && !(small / (double)total >= small_trigger))
        return 0;
    return !(unaligned_trigger >= 0 && !(unaligned / (double)total >= unaligned_trigger));
}

/* Marks the traces the triggers leave out: a POSIX trace's file, in both modules. */
static void apply_triggers(void) {
    if (ios_config.dxt_small_trigger < 0 && ios_config.dxt_unaligned_trigger < 0)
        return;
    for (struct ios_dxt_trace *t = mods[IOS_DXT_POSIX].traces; t; t = t->next) {
        if (t->dropped || triggered(t->id))
            continue;
        t->dropped = 1;
        for (struct ios_dxt_trace *m = mods[IOS_DXT_MPIIO].traces; m; m = m->next)
            m->dropped |= m->id == t->id;
    }
}

static size_t trace_size(const struct ios_dxt_trace *t) {
    int64_t n = t->dropped ? 0 : t->count[0] + t->count[1];
    return n ? sizeof(struct ios_dxt_record_head) + (size_t)n * sizeof(struct ios_dxt_segment) : 0;
}

/* One direction's segments copied to out; the next free segment after them. */
static struct ios_dxt_segment *copy_segments(const struct ios_dxt_chunk *c,
                                             struct ios_dxt_segment *out) {
    for (; c; c = c->next) {
        ios_copy(out, c->seg, (size_t)c->n * sizeof *out);
        out += c->n;
    }
    return out;
}

/* The traces of api's module as records (rank filled in later); files without a segment have
 * none, as in Darshan. */
static void collect(int api, struct ios_record_set *set) {
    set->mod = module_ids[api];
    set->rec_size = 0;
    set->count = set->len = 0;
    if (api == IOS_DXT_POSIX)
        apply_triggers(); /* before DXT_MPIIO's (the next module) */
    size_t total = 0;
    for (const struct ios_dxt_trace *t = mods[api].traces; t; t = t->next)
        total += trace_size(t);
    set->buf = malloc(total + 1);
    if (!set->buf)
        return;
    char host[IOS_DXT_HOSTNAME_LEN] = {0};
    gethostname(host, sizeof host - 1);
    for (const struct ios_dxt_trace *t = mods[api].traces; t; t = t->next) {
        if (!trace_size(t))
            continue;
        struct ios_dxt_record_head *head = (void *)(set->buf + set->len);
        memset(head, 0, sizeof *head);
        head->base.id = t->id;
        memcpy(head->hostname, host, sizeof host);
        head->write_count = t->count[1];
        head->read_count = t->count[0];
        /* Writes first, then reads. */
        copy_segments(t->first[0], copy_segments(t->first[1], (void *)(head + 1)));
        set->len += trace_size(t);
        set->count++;
    }
}

void ios_dxt_posix_collect(struct ios_record_set *set) { collect(IOS_DXT_POSIX, set); }
void ios_dxt_mpiio_collect(struct ios_record_set *set) { collect(IOS_DXT_MPIIO, set); }

int ios_dxt_module(int mod) { return mod == IOS_MOD_DXT_POSIX || mod == IOS_MOD_DXT_MPIIO; }

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

/* A forked child starts its own traces; the parent's are left behind (files may still point at
 * them, as records of the parent are left to other modules). */
void ios_dxt_posix_reset(void) { mods[IOS_DXT_POSIX].used = 0, mods[IOS_DXT_POSIX].traces = NULL; }
void ios_dxt_mpiio_reset(void) { mods[IOS_DXT_MPIIO].used = 0, mods[IOS_DXT_MPIIO].traces = NULL; }
