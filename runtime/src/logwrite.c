/* Shutdown: collects every module's records, reduces files shared by all ranks to one rank -1
 * record (reference §7), compresses each rank's part of every region and writes one log per
 * job, each rank at the offsets an exclusive scan of the parts' sizes gives it (reference §2, §9).
 */
#include "logwrite.h"
#include "iostudy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef IOS_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif

/* The size of one record of set: fixed, or given by the record for the variable ones. */
size_t ios_record_size(const struct ios_record_set *set, const void *rec) {
    if (set->rec_size)
        return set->rec_size;
    if (set->mod == IOS_MOD_LUSTRE)
        return ios_lustre_record_size(rec);
    return ios_heatmap_record_size(((const struct ios_heatmap_record_head *)rec)->nbins);
}

static int64_t timespec_ns(struct timespec ts) {
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- shared-record reduction --------------------------------------------------------------- */
/* Chan et al.'s pairwise update: exact for any split of the ranks. */
void ios_variance_combine(const void *in_v, void *inout_v) {
    const struct variance *x = in_v;
    struct variance *y = inout_v;
    if (x->n == 0)
        return;
    if (y->n == 0) {
        *y = *x;
        return;
    }
    double n = x->n + y->n;
    double delta = y->sum / y->n - x->sum / x->n;
    y->m2 += x->m2 + delta * delta * x->n * y->n / n;
    y->sum += x->sum;
    y->n = n;
}

void ios_seed_extremes(const struct ios_reducer *r, void *rec, int rank) {
    if (!ios_ranked(r))
        return;
    int64_t *c = (int64_t *)((char *)rec + r->counters_off);
    double *fc = (double *)((char *)rec + r->fcounters_off);
    c[r->fastest_rank] = c[r->slowest_rank] = rank;
    c[r->fastest_bytes] = c[r->slowest_bytes] = r->bytes(rec);
    fc[r->fastest_time] = fc[r->slowest_time] = r->time(rec);
}

/* Which of rank 0's records every rank has: rank 0's ids (*ids, *n) and a flag per id; local
 * maps this rank's record ids to its records. NULL when nothing is shared or memory ran out
 * (the records then stay per rank). */
static int64_t *shared_flags(const struct ios_comm *comm, const struct ios_record_set *set,
                             struct ios_map *local, uint64_t **ids, int64_t *n) {
    *n = comm->rank == 0 ? (int64_t)set->count : 0;
    comm->bcast(n, sizeof *n);
    *ids = NULL;
    if (*n == 0)
        return NULL;
    *ids = calloc((size_t)*n, sizeof **ids);
    int64_t *shared = calloc((size_t)*n, sizeof *shared);
    for (size_t off = 0, i = 0; i < set->count; i++) {
        const struct ios_base_record *base = (const void *)(set->buf + off);
        if (comm->rank == 0 && *ids)
            (*ids)[i] = base->id;
        ios_map_put(local, base->id, set->buf + off);
        off += ios_record_size(set, base);
    }
    /* Every rank takes part in both collectives, whatever its allocations did. */
    int64_t failed = !*ids || !shared;
    comm->allreduce_i64(&failed, 1, IOS_OP_MAX);
    if (failed) {
        free(shared);
        free(*ids);
        *ids = NULL;
        return NULL;
    }
    comm->bcast(*ids, (size_t)*n * sizeof **ids);
    for (int64_t i = 0; i < *n; i++)
        shared[i] = ios_map_get(local, (*ids)[i]) != NULL;
    comm->allreduce_i64(shared, (int)*n, IOS_OP_MIN);
    return shared;
}

void ios_combine_rank_extremes(const struct ios_reducer *r, const void *in, void *inout) {
    const int64_t *ic = (const int64_t *)((const char *)in + r->counters_off);
    const double *ifc = (const double *)((const char *)in + r->fcounters_off);
    int64_t *c = (int64_t *)((char *)inout + r->counters_off);
    double *fc = (double *)((char *)inout + r->fcounters_off);
    if (ifc[r->fastest_time] < fc[r->fastest_time]) {
        fc[r->fastest_time] = ifc[r->fastest_time];
        c[r->fastest_rank] = ic[r->fastest_rank];
        c[r->fastest_bytes] = ic[r->fastest_bytes];
    }
    if (ifc[r->slowest_time] > fc[r->slowest_time]) {
        fc[r->slowest_time] = ifc[r->slowest_time];
        c[r->slowest_rank] = ic[r->slowest_rank];
        c[r->slowest_bytes] = ic[r->slowest_bytes];
    }
}

/* Files every rank recorded become one rank -1 record on rank 0; other ranks drop theirs. */
static void reduce_shared(const struct ios_comm *comm, struct ios_record_set *set,
                          const struct ios_reducer *r) {
    struct ios_map local = {0};
    uint64_t *ids;
    int64_t n;
    int64_t *shared = shared_flags(comm, set, &local, &ids, &n);
    unsigned char *reduced = shared ? calloc((size_t)n, r->rec_size) : NULL;
    struct variance *var = shared ? calloc(2 * (size_t)n, sizeof *var) : NULL;
    unsigned char *kept = malloc(set->len + 1);
    if (!shared || !reduced || !var || !kept)
        goto out; /* cannot fail in practice; the records stay per rank */

    size_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!shared[i])
            continue;
        void *rec = reduced + k * r->rec_size;
        memcpy(rec, ios_map_get(&local, ids[i]), r->rec_size);
        ios_seed_extremes(r, rec, comm->rank);
        if (ios_ranked(r)) {
            var[2 * k] = (struct variance){1, r->time(rec), 0};
            var[2 * k + 1] = (struct variance){1, (double)r->bytes(rec), 0};
        }
        ios_map_del(&local, ids[i]); /* what stays in local is this rank's own files */
        k++;
    }
    if (k == 0)
        goto out;
    comm->reduce_elems(reduced, k, r->rec_size, r->combine);
    if (ios_ranked(r))
        comm->reduce_elems(var, 2 * k, sizeof *var, ios_variance_combine);

    size_t len = 0;
    for (size_t i = 0; i < set->count; i++) {
        unsigned char *rec = set->buf + i * r->rec_size;
        if (ios_map_get(&local, ((struct ios_base_record *)rec)->id)) {
            memmove(kept + len, rec, r->rec_size);
            len += r->rec_size;
        }
    }
    size_t count = len / r->rec_size;
    if (comm->rank == 0) {
        unsigned char *grown = realloc(kept, len + k * r->rec_size + 1);
        if (!grown)
            goto out;
        kept = grown;
        for (size_t i = 0; i < k; i++) {
            unsigned char *rec = reduced + i * r->rec_size;
            double *fc = (double *)(rec + r->fcounters_off);
            ((struct ios_base_record *)rec)->rank = -1;
            if (ios_ranked(r)) {
                fc[r->variance_time] = var[2 * i].m2 / var[2 * i].n;
                fc[r->variance_bytes] = var[2 * i + 1].m2 / var[2 * i + 1].n;
            }
            memcpy(kept + len, rec, r->rec_size);
            len += r->rec_size;
            count++;
        }
    }
    free(set->buf);
    set->buf = kept;
    set->len = len;
    set->count = count;
    kept = NULL;
out:
    ios_map_free(&local);
    free(ids);
    free(shared);
    free(reduced);
    free(var);
    free(kept);
}

/* Records with nothing to add up (Lustre layouts): rank 0 keeps a shared one as rank -1, the
 * other ranks drop theirs. */
static void mark_shared(const struct ios_comm *comm, struct ios_record_set *set) {
    struct ios_map local = {0};
    uint64_t *ids;
    int64_t n;
    int64_t *shared = shared_flags(comm, set, &local, &ids, &n);
    struct ios_map is_shared = {0};
    for (int64_t i = 0; shared && i < n; i++)
        if (shared[i])
            ios_map_put(&is_shared, ids[i], set->buf);
    size_t len = 0, count = 0;
    for (size_t off = 0, i = 0; shared && i < set->count; i++) {
        struct ios_base_record *base = (void *)(set->buf + off);
        size_t size = ios_record_size(set, base);
        int dup = ios_map_get(&is_shared, base->id) != NULL;
        if (dup && comm->rank == 0)
            base->rank = -1;
        if (!dup || comm->rank == 0) {
            memmove(set->buf + len, base, size);
            len += size;
            count++;
        }
        off += size;
    }
    if (shared) {
        set->len = len;
        set->count = count;
    }
    ios_map_free(&is_shared);
    ios_map_free(&local);
    free(ids);
    free(shared);
}

/* ---- serialization ------------------------------------------------------------------------- */
struct bytes {
    unsigned char *data;
    size_t len;
    int borrowed; /* data is the memory-mapped log's: not freed */
};

/* Each region is its own complete zlib stream (reference §2.3). Regions under 4 KiB (the job
 * record; a few records) are stored, not compressed: a zlib header, stored blocks, the Adler-32
 * sum. Building a block's Huffman codes (and a compressor's tables) costs tens of thousands of
 * instructions whatever the input: most of what the runtime would add to a short process, for a
 * kilobyte or two of log. Larger regions of fixed-size records (the modules') go through the
 * record encoder (recdeflate.c): a third of libdeflate's instructions at its fastest level, a size
 * within a few percent. The rest (names, heatmaps) is compressed at level 1: what matters at
 * exit is time. With libdeflate (twice zlib's speed, and smaller output) one compressor serves
 * them; with zlib, one deflate state with the full 32 KiB window and hash, reset between regions
 * (a smaller hash makes zlib walk more collisions: twice as slow on records). */
#define STORED_BELOW 4096

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

#ifdef IOS_HAVE_LIBDEFLATE
static uint32_t adler32_of(const void *in, size_t len) { return libdeflate_adler32(1, in, len); }

static struct libdeflate_compressor *compressor;

static size_t deflate_region(const void *in, size_t len, unsigned char **out) {
    if (!compressor && !(compressor = libdeflate_alloc_compressor(1)))
        return 0;
    size_t bound = libdeflate_zlib_compress_bound(compressor, len);
    *out = malloc(bound);
    return *out ? libdeflate_zlib_compress(compressor, in, len, *out, bound) : 0;
}

static void end_compression(void) {
    libdeflate_free_compressor(compressor);
    compressor = NULL;
}
#else
static uint32_t adler32_of(const void *in, size_t len) {
    return (uint32_t)adler32(adler32(0, Z_NULL, 0), in, (uInt)len);
}

static z_stream deflater;
static int deflater_ready;

static size_t deflate_region(const void *in, size_t len, unsigned char **out) {
    if (deflater_ready ? deflateReset(&deflater) != Z_OK
                       : deflateInit2(&deflater, 1, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    deflater_ready = 1;
    uLong bound = deflateBound(&deflater, (uLong)len);
    if (!(*out = malloc(bound)))
        return 0;
    deflater.next_in = (Bytef *)in;
    deflater.avail_in = (uInt)len;
    deflater.next_out = *out;
    deflater.avail_out = (uInt)bound;
    return deflate(&deflater, Z_FINISH) == Z_STREAM_END ? bound - deflater.avail_out : 0;
}

static void end_compression(void) {
    if (deflater_ready)
        deflateEnd(&deflater);
    deflater_ready = 0;
}
#endif

/* zlib's two header bytes: deflate, 32 KiB window, no dictionary, fastest
 * ((0x78 << 8 | 0x01) % 31 == 0). The stream ends with the Adler-32 sum, big-endian. */
#define ZLIB_HEADER_LEN 2
#define ZLIB_TRAILER_LEN 4
static void zlib_header(unsigned char *z) {
    z[0] = 0x78;
    z[1] = 0x01;
}

/* A zlib stream of one stored block (len < 65536). */
static size_t store_region(const void *in, size_t len, unsigned char **out) {
    unsigned char *z = *out = malloc(ZLIB_HEADER_LEN + 5 + len + ZLIB_TRAILER_LEN);
    if (!z)
        return 0;
    zlib_header(z);
    z[2] = 0x01; /* the final block, stored */
    z[3] = (unsigned char)len;
    z[4] = (unsigned char)(len >> 8);
    z[5] = (unsigned char)~len;
    z[6] = (unsigned char)(~len >> 8);
    memcpy(z + 7, in, len);
    put_be32(z + 7 + len, adler32_of(in, len));
    return len + 11;
}

/* A zlib stream of fixed-size records, by the record-aware encoder (recdeflate.c). */
static size_t deflate_records(const void *in, size_t len, size_t record_size, unsigned char **out) {
    size_t cap = ios_deflate_records_bound(len);
    unsigned char *z = *out = malloc(ZLIB_HEADER_LEN + cap + ZLIB_TRAILER_LEN);
    if (!z)
        return 0;
    zlib_header(z);
    size_t body = ios_deflate_records(in, len, record_size, z + ZLIB_HEADER_LEN, cap);
    if (!body)
        return 0;
    put_be32(z + ZLIB_HEADER_LEN + body, adler32_of(in, len));
    return ZLIB_HEADER_LEN + body + ZLIB_TRAILER_LEN;
}

/* A region as one zlib stream: stored when small, records by their own encoder, the rest (the
 * names, the variable-size heatmap records) by the general compressor. */
static int compress_region(const void *in, size_t len, size_t record_size, struct bytes *out) {
    out->data = NULL;
    out->len = !len                 ? 0
               : len < STORED_BELOW ? store_region(in, len, &out->data)
               : record_size && record_size <= IOS_DEFLATE_RECORD_MAX
                   ? deflate_records(in, len, record_size, &out->data)
                   : deflate_region(in, len, &out->data);
    return len && !out->len ? -1 : 0;
}

/* The ids of every record of sets into used; -1 when memory ran out. */
static int record_ids(const struct ios_record_set *sets, int nsets, struct ios_map *used) {
    size_t n = 0;
    for (int s = 0; s < nsets; s++)
        n += sets[s].count;
    if (ios_map_reserve(used, n) != 0)
        return -1;
    for (int s = 0; s < nsets; s++)
        for (size_t off = 0, i = 0; i < sets[s].count; i++) {
            const struct ios_base_record *base = (const void *)(sets[s].buf + off);
            off += ios_record_size(&sets[s], base);
            if (base->id && ios_map_put(used, base->id, (void *)base) != 0)
                return -1;
        }
    return 0;
}

/* Walks the entries (id, name, NUL) of a name region; copies those naming a record of used to
 * out when out is not NULL. Returns the bytes of those entries; *found: how many. */
static size_t used_names(const unsigned char *region, size_t len, const struct ios_map *used,
                         unsigned char *out, size_t *found) {
    size_t kept = 0;
    *found = 0;
    for (const unsigned char *p = region, *end = region + len; p < end;) {
        uint64_t id;
        memcpy(&id, p, sizeof id);
        size_t entry = sizeof id + strlen((const char *)p + sizeof id) + 1;
        if (ios_map_get(used, id)) {
            if (out)
                memcpy(out + kept, p, entry);
            kept += entry;
            ++*found;
        }
        p += entry;
    }
    return kept;
}

/* The names of the memory-mapped log that name a record of used: the region itself when it
 * names just those (no copy at exit), else a copy of the entries that do. -1 when some record's
 * name is not in the region (or there is none). */
static int names_from_region(const struct ios_map *used, struct bytes *out) {
    size_t len, found;
    unsigned char *region = ios_mmap_region(-1, &len);
    if (!region)
        return -1;
    size_t kept = used_names(region, len, used, NULL, &found);
    if (found != used->count)
        return -1;
    out->len = kept;
    out->borrowed = kept == len;
    out->data = out->borrowed ? region : malloc(kept + 1);
    if (!out->data)
        return -1;
    if (!out->borrowed)
        used_names(region, len, used, out->data, &found);
    return 0;
}

/* The same entries, looked up record by record (no memory-mapped log, or a merge). */
static int names_by_record(const struct ios_map *used, struct bytes *out) {
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t i = 0; buf && i < used->cap; i++) {
        const char *name = used->keys[i] ? ios_record_name(used->keys[i]) : NULL;
        size_t need = name ? sizeof(uint64_t) + strlen(name) + 1 : 0;
        while (buf && len + need > cap) {
            unsigned char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
        if (name && buf) {
            memcpy(buf + len, &used->keys[i], sizeof(uint64_t));
            memcpy(buf + len + sizeof(uint64_t), name, need - sizeof(uint64_t));
            len += need;
        }
    }
    out->data = buf;
    out->len = len;
    return buf ? 0 : -1;
}

/* The names of the records this rank writes, each once: id, name, NUL. */
static int serialize_names(const struct ios_record_set *sets, int nsets, struct bytes *out) {
    struct ios_map used = {0};
    int err = record_ids(sets, nsets, &used);
    if (!err && names_from_region(&used, out) != 0)
        err = names_by_record(&used, out);
    ios_map_free(&used);
    return err;
}

static void set_ranks(struct ios_record_set *set, int rank) {
    for (size_t off = 0, i = 0; i < set->count; i++) {
        struct ios_base_record *base = (void *)(set->buf + off);
        base->rank = rank;
        off += ios_record_size(set, base);
    }
}

/* Timestamps count from this process's start; the log counts them from the job's. */
void ios_shift_timestamps(struct ios_record_set *set, const struct ios_reducer *r, double by) {
    for (size_t i = 0; by != 0 && i < set->count; i++) {
        double *fc = (double *)(set->buf + i * set->rec_size + r->fcounters_off);
        for (int j = r->ts_first; j <= r->ts_last; j++)
            if (fc[j] != 0)
                fc[j] += by;
    }
}

/* ---- the whole shutdown ------------------------------------------------------------------------
 */
void ios_set_job_span(struct ios_log_job *job, int64_t start_ns, int64_t end_ns) {
    job->start_time_sec = start_ns / 1000000000;
    job->start_time_nsec = start_ns % 1000000000;
    job->end_time_sec = end_ns / 1000000000;
    job->end_time_nsec = end_ns % 1000000000;
}

/* Compresses every rank's part of each region and writes them, collectively, into one new file;
 * returns non-zero when this rank's part could not be written (rank 0 warns). */
int ios_write_content(const struct ios_comm *comm, struct log_content *c, double write_start) {
    struct bytes job = {0}, parts[N_REGIONS] = {{0}};
    struct ios_record_set *sets = c->sets;
    struct bytes raw = {0};
    int failed = serialize_names(sets + R_MODULES, IOS_NMODULES, &raw) != 0;
    failed |= compress_region(raw.data, raw.len, 0, &parts[R_NAMES]) != 0;
    if (!raw.borrowed)
        free(raw.data);
    for (int r = R_MODULES; r < N_REGIONS; r++)
        failed |= compress_region(sets[r].buf, sets[r].len, sets[r].rec_size, &parts[r]) != 0;

    char *path = c->path, *stem = c->stem;
    const char *why = c->why;
    if (comm->rank == 0) {
        failed |= compress_region(&c->jr, sizeof c->jr.job + strlen(c->jr.exe) + 1, 0, &job) != 0;
        failed |= why != NULL;
    }
    /* Where each region starts, and where this rank's part of it goes. */
    int64_t lens[N_REGIONS + 2], offsets[N_REGIONS + 2];
    for (int r = 0; r < N_REGIONS; r++)
        lens[r] = (int64_t)parts[r].len;
    lens[N_REGIONS] = (int64_t)job.len;
    lens[N_REGIONS + 1] = c->partial;
    comm->exscan_sum_i64(lens, offsets, N_REGIONS);
    int64_t partial = lens[N_REGIONS + 1];
    comm->allreduce_i64(&partial, 1, IOS_OP_BOR);
    comm->allreduce_i64(lens, N_REGIONS + 1, IOS_OP_SUM);
    int64_t region_start[N_REGIONS];
    int64_t pos = (int64_t)sizeof(struct ios_log_header) + lens[N_REGIONS];
    for (int r = 0; r < N_REGIONS; r++) {
        region_start[r] = pos;
        pos += lens[r];
    }

    /* Rank 0 creates the file (never overwriting one), then every rank writes its parts. */
    int fd = -1, err = 0;
    if (comm->rank == 0 && !failed) {
        fd = IOS_CALL(open)(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            why = strerror(errno);
    }
    int64_t opened = comm->rank == 0 ? fd >= 0 : 0;
    comm->bcast(&opened, sizeof opened);
    if (opened) {
        comm->bcast(path, sizeof c->path);
        if (comm->rank != 0)
            fd = IOS_CALL(open)(path, O_WRONLY);
        err = fd < 0;
        for (int r = 0; r < N_REGIONS && !err; r++)
            err = parts[r].len &&
                  ios_write_all(fd, parts[r].data, parts[r].len, region_start[r] + offsets[r]) != 0;
        if (!err && comm->rank == 0 && job.len)
            err = ios_write_all(fd, job.data, job.len, sizeof(struct ios_log_header)) != 0;
        if (err && !why)
            why = strerror(errno);
        int64_t any_err = err || failed;
        comm->allreduce_i64(&any_err, 1, IOS_OP_MAX);
        if (comm->rank == 0 && !any_err) {
            struct ios_log_header h;
            memset(&h, 0, sizeof h);
            memcpy(h.version_string, IOS_LOG_VERSION, sizeof IOS_LOG_VERSION);
            h.magic_nr = IOS_LOG_MAGIC;
            h.comp_type = IOS_COMP_ZLIB;
            h.partial_flag = (uint64_t)partial;
            h.name_map =
                (struct ios_log_map){(uint64_t)region_start[R_NAMES], (uint64_t)lens[R_NAMES]};
            for (int r = R_MODULES; r < N_REGIONS; r++) {
                if (lens[r] == 0)
                    continue;
                h.mod_map[module_of(r)->id] =
                    (struct ios_log_map){(uint64_t)region_start[r], (uint64_t)lens[r]};
                h.mod_ver[module_of(r)->id] = (uint32_t)module_of(r)->version;
            }
            any_err = ios_write_all(fd, &h, sizeof h, 0) != 0;
            if (any_err)
                why = strerror(errno);
        }
        if (fd >= 0)
            IOS_CALL(close)(fd);
        if (comm->rank == 0) {
            if (any_err) {
                unlink(path);
            } else {
                ios_job_log_finish(path, sizeof c->path, stem, (int)(ios_now() - write_start + 1));
            }
            failed |= any_err != 0;
        }
    } else {
        failed = 1;
    }
    if (comm->rank == 0 && failed)
        ios_warn_log_lost(path, why ? why : "out of memory");

    end_compression();
    free(job.data);
    for (int r = 0; r < N_REGIONS; r++) {
        free(parts[r].data);
        if (!sets[r].borrowed)
            free(sets[r].buf);
    }
    return failed;
}

void ios_warn_log_lost(const char *path, const char *why) {
    const char *mapped = ios_mmap_path(); /* NULL: no file was made, or none at all */
    ios_warn("cannot write the log %s: %s; %s%s", path[0] ? path : "(none)", why,
             mapped ? "its records stay in " : "this run leaves no log", mapped ? mapped : "");
}

int ios_write_log(const struct ios_comm *comm) {
    static struct log_content c; /* large: not on the stack of a program's last moments */
    double write_start = ios_now();
    memset(&c, 0, sizeof c);
    struct ios_record_set *sets = c.sets;
    for (int r = R_MODULES; r < N_REGIONS; r++) {
        /* A process alone writes its records where they stand; an MPI rank's are shifted and
         * reduced, which must not reach the memory-mapped log a kill would leave. */
        sets[r].in_place = !comm->mpi;
        if (module_of(r)->collect)
            module_of(r)->collect(&sets[r]);
    }

    /* Job start is the earliest process start, end the latest shutdown. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t own_start = timespec_ns(ios_job_start());
    int64_t span[2] = {-own_start, timespec_ns(now)};
    comm->allreduce_i64(span, 2, IOS_OP_MAX);
    int64_t job_start = -span[0], job_end = span[1];
    double shift = (double)(own_start - job_start) * 1e-9;

    for (int r = R_MODULES; r < N_REGIONS; r++) {
        const struct ios_reducer *reducer = module_of(r)->reducer;
        if (!module_of(r)->collect)
            continue;
        if (reducer)
            ios_shift_timestamps(&sets[r], reducer, shift);
        set_ranks(&sets[r], comm->rank);
        if (comm->mpi && !ios_config.disable_shared_redux) {
            if (reducer)
                reduce_shared(comm, &sets[r], reducer);
            else
                mark_shared(comm, &sets[r]);
        }
    }

    /* Every heatmap record of a log must have the same bins (PyDarshan requires it). */
    double run_time = (double)(job_end - job_start) * 1e-9;
    double width = ios_heatmap_min_width(run_time);
    comm->allreduce_f64(&width, 1, IOS_OP_MAX);
    struct ios_record_set *heatmaps = &sets[R_MODULES + IOS_M_HEATMAP];
    ios_heatmap_collect(heatmaps, width, ios_heatmap_nbins(run_time, width), shift);
    set_ranks(heatmaps, comm->rank);

    c.partial = (int64_t)ios_partial_flags();
    if (comm->rank == 0) {
        /* The job record: fixed part, then command line and mount table. */
        c.jr.job.uid = getuid();
        ios_set_job_span(&c.jr.job, job_start, job_end);
        c.jr.job.nprocs = comm->size;
        c.jr.job.jobid = ios_job_id();
        ios_job_metadata(c.jr.job.metadata, sizeof c.jr.job.metadata);
        ios_job_exe_mounts(c.jr.exe, sizeof c.jr.exe);
        if (ios_job_log_path(c.jr.job.jobid, c.path, sizeof c.path, c.stem, sizeof c.stem,
                             &c.why) != 0 &&
            !c.why)
            c.why = "no log path";
    }
    return ios_write_content(comm, &c, write_start);
}
