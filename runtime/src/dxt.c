/* DXT_POSIX and DXT_MPIIO: every read and write of a traced file as a segment (offset, length,
 * start and end time), per rank, in Darshan 3.5.0's format (reference §6.6: DXT_POSIX v1,
 * DXT_MPIIO v2). Off unless a job asks for it, as Darshan decides (config.c: DXT_ENABLE_IO_TRACE,
 * or MOD_ENABLE naming DXT_POSIX, DXT_MPIIO, or `*`); a file's segments are not kept when the
 * configuration's NAME_EXCLUDE rules for that DXT module refuse the file's name.
 *
 * The segments live in the module's region of the memory-mapped log (in the heap without one),
 * so that a killed process, or one that ends with _exit or exec, leaves them in a valid log. A
 * region only grows at its end: it holds runs, one record for each stretch of calls on one file,
 * writes then reads (a write after a read, or a call on another file, starts a record); the
 * shutdown and the merge gather them into one record per file (dxtlog.c). Memory is bounded as
 * in Darshan 3.5.0: each module has 2 MiB (DXT_IO_TRACE_MEM_MAX), or n KiB with MAX_RECORDS n
 * for it, as there (ios_config.dxt_mem), records' heads included; a segment that finds no room is
 * dropped and the module's partial flag set. Traces are never reduced across ranks (Darshan has no
 * reduction for them either).
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

static const int module_ids[IOS_DXT_NAPIS] = {IOS_MOD_DXT_POSIX, IOS_MOD_DXT_MPIIO};
/* Without a memory-mapped log: each module's region, and its length. */
static unsigned char *heap_region[IOS_DXT_NAPIS];
static uint64_t heap_len[IOS_DXT_NAPIS];
static char host[IOS_DXT_HOSTNAME_LEN];

#define HEAD (ptrdiff_t)sizeof(struct ios_dxt_record_head)
#define SEGMENT (ptrdiff_t)sizeof(struct ios_dxt_segment)

/* The region api's segments go to: the memory-mapped log's, or the heap's; 0, or -1. */
static int attach(int api) {
    struct ios_dxt_log *l = &ios_dxt_logs[api];
    uint64_t *len;
    unsigned char *region = ios_mmap_tail(module_ids[api], &len);
    if (!region) {
        if (!heap_region[api] && !(heap_region[api] = malloc(ios_config.dxt_mem[api])))
            return -1;
        region = heap_region[api];
        len = &heap_len[api];
    }
    if (!host[0])
        gethostname(host, sizeof host - 1);
    l->len = len;
    l->end = region + *len;
    l->limit = region + ios_config.dxt_mem[api] - SEGMENT;
    return 0;
}

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

/* The files whose segments the configuration refuses (NAME_EXCLUDE), per module: the rules are
 * asked once per file, not at every run of its calls. */
static struct ios_map refused[IOS_DXT_NAPIS];

static int refuses(int api, uint64_t id) {
    if (ios_map_get(&refused[api], id))
        return 1;
    if (!ios_config_refuses(module_ids[api], ios_record_name(id)))
        return 0;
    ios_map_put(&refused[api], id, &refused[api]);
    return 1;
}

/* A segment the last record does not take: the first one of a new record; dropped when the
 * configuration refuses its file, or when there is no room left, the module marked partial. */
void ios_dxt_add_slow(int api, uint64_t id, int is_write, int64_t offset, int64_t length, double t1,
                      double t2) {
    struct ios_dxt_log *l = &ios_dxt_logs[api];
    if (refuses(api, id))
        return;
    int last_takes_it = (l->open_dirs & (1 << is_write)) && l->open_id == id; /* but no room */
    if ((!l->end && attach(api) != 0) || last_takes_it || l->limit - l->end < HEAD) {
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
    double small_trigger = ios_config.dxt_small_trigger;
    double unaligned_trigger = ios_config.dxt_unaligned_trigger;
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
    int triggers = ios_config.dxt_small_trigger >= 0 || ios_config.dxt_unaligned_trigger >= 0;
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
    ios_map_free(&refused[api]);
    heap_len[api] = 0;
}

void ios_dxt_posix_reset(void) { reset(IOS_DXT_POSIX); }
void ios_dxt_mpiio_reset(void) { reset(IOS_DXT_MPIIO); }
