/* DXT_POSIX and DXT_MPIIO: every read and write of a traced file as a segment (offset, length,
 * start and end time), per rank, in Darshan 3.5.0's format (reference §6.6: DXT_POSIX v1,
 * DXT_MPIIO v2). Off unless a job asks for it, as Darshan decides: DXT_ENABLE_IO_TRACE (both), or
 * DARSHAN_MOD_ENABLE naming DXT_POSIX, DXT_MPIIO, or `*`.
 *
 * The segments live in the module's region of the memory-mapped log (in the heap without one),
 * so that a killed process, or one that ends with _exit or exec, leaves them in a valid log. A
 * region only grows at its end: it holds runs, one record for each stretch of calls on one file,
 * writes then reads (a write after a read, or a call on another file, starts a record); the
 * shutdown and the merge gather them into one record per file (dxtlog.c). Memory is bounded as
 * in Darshan 3.5.0: each module has 2 MiB (DXT_IO_TRACE_MEM_MAX, changed there only when Darshan
 * is configured), records' heads included; a segment that finds no room is dropped and the
 * module's partial flag set. Traces are never reduced across ranks (Darshan has no reduction
 * for them either).
 *
 * Darshan 3.5.0's triggers: DARSHAN_DXT_SMALL_IO_TRIGGER=p keeps, at shutdown, the traces of the
 * files whose reads and writes under 10 KiB are at least the fraction p of this process's reads
 * and writes of the file (POSIX counters), DARSHAN_DXT_UNALIGNED_IO_TRIGGER=p those whose accesses
 * not aligned to the file system's block are; a file that fails one loses its DXT_POSIX and its
 * DXT_MPIIO trace. A log the memory-mapped one becomes (killed, _exit, exec) has no shutdown,
 * and keeps every trace. */
#include "posix.h"

#include <stdlib.h>
#include <unistd.h>

int ios_dxt_flags;
struct ios_dxt_log ios_dxt_logs[IOS_DXT_NAPIS];

/* The triggers' fractions (Darshan parses them as float); negative: not set. */
static double small_trigger = -1, unaligned_trigger = -1;

static double trigger(const char *name) {
    const char *v = getenv(name);
    char *end;
    if (!v)
        return -1;
    float p = strtof(v, &end);
    return end != v && *end == '\0' ? (double)p : -1;
}

static const int module_ids[IOS_DXT_NAPIS] = {IOS_MOD_DXT_POSIX, IOS_MOD_DXT_MPIIO};
/* Without a memory-mapped log: each module's region, and its length. */
static unsigned char *heap_region[IOS_DXT_NAPIS];
static uint64_t heap_len[IOS_DXT_NAPIS];
static char host[IOS_DXT_HOSTNAME_LEN];

/* Whether a comma-separated list of Darshan module names names this one (`*` first: all). */
static int listed(const char *list, const char *name) {
    if (!list)
        return 0;
    size_t n = strlen(name);
    if (list[0] == '*' && (list[1] == ',' || list[1] == '\0'))
        return 1;
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

void ios_dxt_config(void) {
    /* DXT is disabled by default, and enabling wins over DARSHAN_MOD_DISABLE in Darshan. */
    const char *enable = getenv("DARSHAN_MOD_ENABLE");
    int all = getenv("DXT_ENABLE_IO_TRACE") != NULL;
    ios_dxt_flags = 0;
    if (all || listed(enable, "DXT_POSIX"))
        ios_dxt_flags |= 1 << IOS_DXT_POSIX;
    if (all || listed(enable, "DXT_MPIIO"))
        ios_dxt_flags |= 1 << IOS_DXT_MPIIO;
    small_trigger = trigger("DARSHAN_DXT_SMALL_IO_TRIGGER");
    unaligned_trigger = trigger("DARSHAN_DXT_UNALIGNED_IO_TRIGGER");
}

/* The region api's segments go to: the memory-mapped log's, or the heap's; 0, or -1. */
static int attach(int api) {
    struct ios_dxt_log *l = &ios_dxt_logs[api];
    uint64_t *len;
    unsigned char *region = ios_mmap_tail(module_ids[api], &len);
    if (!region) {
        if (!heap_region[api] && !(heap_region[api] = malloc(IOS_DXT_MEM)))
            return -1;
        region = heap_region[api];
        len = &heap_len[api];
    }
    if (!host[0])
        gethostname(host, sizeof host - 1);
    l->len = len;
    l->end = region + *len;
    l->limit = region + IOS_DXT_MEM;
    return 0;
}

#define HEAD (ptrdiff_t)sizeof(struct ios_dxt_record_head)
#define SEGMENT (ptrdiff_t)sizeof(struct ios_dxt_segment)

/* A record of the segment, placed whole and then counted in the region at once. */
static void start_record(struct ios_dxt_log *l, uint64_t id, int is_write,
                         struct ios_dxt_segment seg) {
    struct ios_dxt_record_head *head = (void *)l->end;
    *head = (struct ios_dxt_record_head){
        .base = {id, ios_mmap_rank()}, .write_count = is_write, .read_count = !is_write};
    memcpy(head->hostname, host, sizeof host);
    *(struct ios_dxt_segment *)(head + 1) = seg;
    atomic_signal_fence(memory_order_seq_cst);
    *l->len += HEAD + SEGMENT;
    l->end += HEAD + SEGMENT;
    l->open = head;
    l->open_id = id;
    l->open_dirs = is_write ? 3 : 1;
}

/* A segment the last record does not take: the first one of a new record; dropped when there is
 * no room left, the module marked partial. */
void ios_dxt_add_slow(int api, uint64_t id, int is_write, int64_t offset, int64_t length, double t1,
                      double t2) {
    struct ios_dxt_log *l = &ios_dxt_logs[api];
    int last_takes_it = (l->open_dirs & (1 << is_write)) && l->open_id == id; /* but no room */
    if ((!l->end && attach(api) != 0) || last_takes_it || l->limit - l->end < HEAD + SEGMENT) {
        ios_set_partial(module_ids[api]);
        return;
    }
    start_record(l, id, is_write, (struct ios_dxt_segment){offset, length, t1, t2});
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
    if (small_trigger >= 0 && !(small / (double)total >= small_trigger))
        return 0;
    return !(unaligned_trigger >= 0 && !(unaligned / (double)total >= unaligned_trigger));
}

/* The files whose DXT_POSIX trace the triggers left out: their DXT_MPIIO trace goes too. */
static struct ios_map dropped;

static int keep_posix(uint64_t id) {
    if (triggered(id))
        return 1;
    ios_map_put(&dropped, id, &dropped);
    return 0;
}

static int keep_mpiio(uint64_t id) { return ios_map_get(&dropped, id) == NULL; }

/* The traces of api's module, one record per file (rank filled in later); files without a
 * segment have none, as in Darshan. */
static void collect(int api, struct ios_record_set *set) {
    const struct ios_dxt_log *l = &ios_dxt_logs[api];
    int triggers = small_trigger >= 0 || unaligned_trigger >= 0;
    set->mod = module_ids[api];
    set->rec_size = 0;
    set->count = set->len = 0;
    set->buf = NULL;
    if (api == IOS_DXT_POSIX) /* before DXT_MPIIO's (the next module) */
        ios_map_free(&dropped);
    int (*keep)(uint64_t) = !triggers ? NULL : api == IOS_DXT_POSIX ? keep_posix : keep_mpiio;
    if (l->end)
        ios_dxt_gather(l->end - *l->len, *l->len, keep, set);
}

void ios_dxt_posix_collect(struct ios_record_set *set) { collect(IOS_DXT_POSIX, set); }
void ios_dxt_mpiio_collect(struct ios_record_set *set) { collect(IOS_DXT_MPIIO, set); }

/* A forked child starts its own traces, in its own log. */
static void reset(int api) {
    memset(&ios_dxt_logs[api], 0, sizeof ios_dxt_logs[api]);
    heap_len[api] = 0;
}

void ios_dxt_posix_reset(void) { reset(IOS_DXT_POSIX); }
void ios_dxt_mpiio_reset(void) { reset(IOS_DXT_MPIIO); }
