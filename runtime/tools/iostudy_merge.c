/* iostudy-merge: merges the memory-mapped per-process logs of one job (left by a job that was
 * killed, or whose processes ended without MPI_Finalize) into one compressed log, reducing
 * files every process opened as the normal shutdown does, with the shutdown's own code
 * (logwrite.h). Run it through `iostudy logs merge`, which also checks the result with
 * PyDarshan. It links the log writer (the library iostudy-logwriter), not the wrappers. */
#include "logwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct merge_input {
    const char *path;
    unsigned char *data;
    size_t len;
    const struct ios_log_header *header;
    const struct ios_log_job *job;
    int64_t start_ns, end_ns;
};

/* The records' names, from every input's name region: record id -> name. */
static struct ios_map names;

static const char *merged_name(uint64_t id) { return ios_map_get(&names, id); }

static int merge_error(const char *path, const char *what) {
    fprintf(stderr, "iostudy-merge: %s: %s\n", path, what);
    return 2;
}

static int region_ok(const struct merge_input *in, struct ios_log_map m) {
    return m.off <= in->len && m.len <= in->len - m.off;
}

/* Reads and checks one per-process log: an uncompressed Darshan 3.41 log. */
static int merge_read(struct merge_input *in) {
    int fd = IOS_CALL(open)(in->path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            IOS_CALL(close)(fd);
        return merge_error(in->path, strerror(e));
    }
    in->len = (size_t)st.st_size;
    in->data = malloc(in->len + 1);
    size_t got = 0;
    while (in->data && got < in->len) {
        ssize_t n = IOS_CALL(pread)(fd, in->data + got, in->len - got, (off_t)got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    IOS_CALL(close)(fd);
    if (!in->data || got != in->len)
        return merge_error(in->path, "cannot read it whole");
    const size_t job_end = sizeof(struct ios_log_header) + sizeof(struct ios_log_job);
    in->header = (const void *)in->data;
    if (in->len < sizeof(struct ios_log_header) || in->header->magic_nr != IOS_LOG_MAGIC ||
        memcmp(in->header->version_string, IOS_LOG_VERSION, sizeof IOS_LOG_VERSION) != 0)
        return merge_error(in->path, "not a Darshan 3.41 log");
    if (in->header->comp_type != IOS_COMP_NONE)
        return merge_error(in->path, "compressed: not a memory-mapped per-process log");
    if (in->len < job_end)
        return merge_error(in->path, "job region outside the file (truncated?)");
    if (!region_ok(in, in->header->name_map) || in->header->name_map.off < job_end)
        return merge_error(in->path, "name region outside the file (truncated?)");
    for (int m = 0; m < IOS_MAX_MODS; m++)
        if (in->header->mod_map[m].len && !region_ok(in, in->header->mod_map[m]))
            return merge_error(in->path, "module region outside the file (truncated?)");
    in->job = (const void *)(in->data + sizeof(struct ios_log_header));
    in->start_ns = in->job->start_time_sec * 1000000000 + in->job->start_time_nsec;
    in->end_ns = in->job->end_time_sec * 1000000000 + in->job->end_time_nsec;
    return 0;
}

static int append(struct ios_record_set *set, const void *rec, size_t size) {
    unsigned char *grown = realloc(set->buf, set->len + size + 1);
    if (!grown)
        return -1;
    set->buf = grown;
    memcpy(set->buf + set->len, rec, size);
    set->len += size;
    set->count++;
    return 0;
}

/* One input's DXT region m into set: its runs gathered into one record per file, as the
 * shutdown gathers them, timestamps moved by shift; *job_end moved past its last segment (a
 * killed process's job record ends at its last record made, not its last segment). */
static int merge_dxt(struct ios_record_set *set, const struct merge_input *in, struct ios_log_map m,
                     double shift, int64_t *job_end) {
    struct ios_record_set runs = {.mod = set->mod};
    if (ios_dxt_gather(in->data + m.off, m.len, NULL, &runs) != 0)
        return merge_error(in->path, "out of memory");
    ios_dxt_shift(&runs, shift);
    int64_t last = in->start_ns + (int64_t)((ios_dxt_last_end(&runs) - shift) * 1e9);
    *job_end = last > *job_end ? last : *job_end;
    unsigned char *grown = realloc(set->buf, set->len + runs.len + 1);
    if (grown) {
        memcpy(grown + set->len, runs.buf, runs.len);
        set->buf = grown;
        set->len += runs.len;
        set->count += runs.count;
    }
    free(runs.buf);
    return grown ? 0 : merge_error(in->path, "out of memory");
}

/* One input's names and records into c, its timestamps moved to the job's start. */
static int merge_add(struct log_content *c, const struct merge_input *in, int64_t job_start,
                     int64_t *job_end) {
    const unsigned char *p = in->data + in->header->name_map.off;
    const unsigned char *end = p + in->header->name_map.len;
    while (p + sizeof(uint64_t) < end) {
        uint64_t id;
        memcpy(&id, p, sizeof id);
        const unsigned char *name = p + sizeof id;
        const unsigned char *nul = memchr(name, '\0', (size_t)(end - name));
        if (!nul || (!ios_map_get(&names, id) && ios_map_put(&names, id, (void *)name) != 0))
            return merge_error(in->path, "damaged name region");
        p = nul + 1;
    }
    for (int r = R_MODULES; r < N_REGIONS; r++) {
        const struct ios_module *mod = module_of(r);
        struct ios_log_map m = in->header->mod_map[mod->id];
        if (!mod->in_mmap || m.len == 0)
            continue;
        if (in->header->mod_ver[mod->id] != (uint32_t)mod->version)
            return merge_error(in->path, "a module of another record version");
        double shift = (double)(in->start_ns - job_start) * 1e-9;
        if (ios_dxt_module(mod->id)) {
            if (merge_dxt(&c->sets[r], in, m, shift, job_end) != 0)
                return 2;
            continue;
        }
        struct ios_record_set one = {.mod = c->sets[r].mod, .rec_size = c->sets[r].rec_size};
        one.buf = in->data + m.off;
        for (size_t off = 0; off < m.len; one.count++) {
            size_t size = ios_record_size(&one, one.buf + off);
            if (size == 0 || off + size > m.len)
                return merge_error(in->path, "damaged module region");
            off += size;
        }
        one.len = m.len;
        if (mod->reducer)
            ios_shift_timestamps(&one, mod->reducer, shift);
        for (size_t off = 0, i = 0; i < one.count; i++) {
            size_t size = ios_record_size(&one, one.buf + off);
            if (append(&c->sets[r], one.buf + off, size) != 0)
                return merge_error(in->path, "out of memory");
            off += size;
        }
    }
    return 0;
}

/* Records every process has (nprocs of them) become one rank -1 record, as at shutdown. */
static void merge_reduce(struct ios_record_set *set, const struct ios_reducer *r, int64_t nprocs) {
    struct ios_map count = {0};
    for (size_t off = 0, i = 0; i < set->count; i++) {
        const struct ios_base_record *base = (const void *)(set->buf + off);
        ios_map_put(&count, base->id, (void *)((uintptr_t)ios_map_get(&count, base->id) + 1));
        off += ios_record_size(set, base);
    }
    unsigned char *out = malloc(set->len + 1);
    struct ios_map done = {0};
    size_t len = 0, n = 0;
    for (size_t off = 0, i = 0; out && i < set->count; i++) {
        struct ios_base_record *base = (void *)(set->buf + off);
        size_t size = ios_record_size(set, base);
        off += size;
        if ((int64_t)(uintptr_t)ios_map_get(&count, base->id) != nprocs) {
            memcpy(out + len, base, size); /* not on every process: stays per rank */
            len += size;
            n++;
            continue;
        }
        if (ios_map_get(&done, base->id))
            continue;
        ios_map_put(&done, base->id, base);
        struct ios_base_record *acc = (void *)(out + len);
        memcpy(acc, base, size);
        if (r) { /* combine every copy, in file order, with fastest/slowest and variances */
            struct variance vt = {0}, vb = {0};
            unsigned char *copy = malloc(size);
            for (size_t o2 = 0, j = 0; copy && j < set->count; j++) {
                struct ios_base_record *other = (void *)(set->buf + o2);
                o2 += ios_record_size(set, other);
                if (other->id != base->id)
                    continue;
                memcpy(copy, other, size);
                ios_seed_extremes(r, copy, (int)other->rank);
                if (ios_ranked(r)) {
                    struct variance t = {1, r->time(copy), 0};
                    struct variance b = {1, (double)r->bytes(copy), 0};
                    ios_variance_combine(&t, &vt);
                    ios_variance_combine(&b, &vb);
                }
                if (other == base)
                    memcpy(acc, copy, size);
                else
                    r->combine(copy, acc);
            }
            free(copy);
            double *fc = (double *)((char *)acc + r->fcounters_off);
            if (ios_ranked(r)) {
                fc[r->variance_time] = vt.n ? vt.m2 / vt.n : 0;
                fc[r->variance_bytes] = vb.n ? vb.m2 / vb.n : 0;
            }
        }
        acc->rank = -1;
        len += size;
        n++;
    }
    if (out) {
        free(set->buf);
        set->buf = out;
        set->len = len;
        set->count = n;
    }
    ios_map_free(&count);
    ios_map_free(&done);
}

static const char MERGE_USAGE[] =
    "usage: iostudy-merge --output LOG [--job-end-time SECONDS] [--no-shared-reduction] "
    "MMAP_LOG...\n";

int main(int argc, char **argv) {
    const char *output = NULL;
    int64_t end_override = 0, redux = 1;
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--output") == 0 && first + 1 < argc)
            output = argv[++first];
        else if (strcmp(argv[first], "--job-end-time") == 0 && first + 1 < argc)
            end_override = (int64_t)(atof(argv[++first]) * 1e9);
        else if (strcmp(argv[first], "--no-shared-reduction") == 0)
            redux = 0;
        else {
            fprintf(stderr, "iostudy-merge: unknown or incomplete option '%s'\n%s", argv[first],
                    MERGE_USAGE);
            return 2;
        }
    }
    if (!output || first >= argc) {
        fputs(MERGE_USAGE, stderr);
        return 2;
    }
    int n = argc - first;
    struct merge_input *in = calloc((size_t)n, sizeof *in);
    static struct log_content c;
    if (!in)
        return 1;
    int status = 0;
    int64_t job_start = INT64_MAX, job_end = end_override;
    for (int i = 0; i < n && !status; i++) {
        in[i].path = argv[first + i];
        status = merge_read(&in[i]);
        if (status)
            break;
        if (in[i].job->jobid != in[0].job->jobid || in[i].job->nprocs != in[0].job->nprocs)
            status = merge_error(in[i].path, "another job (job id or process count differs)");
        job_start = in[i].start_ns < job_start ? in[i].start_ns : job_start;
        job_end = in[i].end_ns > job_end ? in[i].end_ns : job_end;
    }
    for (int r = R_MODULES; r < N_REGIONS; r++)
        c.sets[r] =
            (struct ios_record_set){.mod = module_of(r)->id, .rec_size = module_of(r)->rec_size};
    for (int i = 0; i < n && !status; i++) {
        status = merge_add(&c, &in[i], job_start, &job_end);
        c.partial |= (int64_t)in[i].header->partial_flag;
    }
    if (!status) {
        int64_t nprocs = in[0].job->nprocs;
        for (int r = R_MODULES; redux && nprocs > 1 && r < N_REGIONS; r++)
            if (module_of(r)->in_mmap && !ios_dxt_module(module_of(r)->id)) /* per rank */
                merge_reduce(&c.sets[r], module_of(r)->reducer, nprocs);
        c.jr.job = *in[0].job;
        ios_set_job_span(&c.jr.job, job_start, job_end);
        size_t exe_room =
            in[0].header->name_map.off - sizeof(struct ios_log_header) - sizeof(struct ios_log_job);
        const char *exe = (const char *)(in[0].job + 1);
        snprintf(c.jr.exe, sizeof c.jr.exe, "%.*s", (int)strnlen(exe, exe_room), exe);
        snprintf(c.path, sizeof c.path, "%s", output);
        c.name_of = merged_name;
        if (ios_write_content(ios_local_comm(), &c) != 0) {
            fprintf(stderr, "iostudy-merge: %s: %s\n", output, c.why ? c.why : "out of memory");
            status = 1;
        } else
            ios_log_finish(c.path, sizeof c.path, c.stem, 0);
    }
    for (int i = 0; i < n; i++)
        free(in[i].data);
    free(in);
    return status;
}
