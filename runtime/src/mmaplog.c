/* Robust logs (seed 002 §III-C, reference §10.4): while a process runs, its records live in a
 * memory-mapped file laid out as an uncompressed Darshan log (comp_type none) in a node-local
 * directory (DARSHAN_MMAP_LOGPATH, default /dev/shm, else /tmp), so that a job killed by SIGKILL, a
 * crash or the scheduler's time limit leaves one readable per-process log; `iostudy logs merge`
 * turns those into one job log (Darshan 3.5.0's reader reads only the first MiB of a region of an
 * uncompressed log: the file is whole for the merge). On normal exit the file is removed once the
 * normal log is written; at _exit and exec it is written out as the log, its regions stored in
 * zlib streams, which Darshan's reader reads whole.
 * The file is made at the first record or name (or when MPI gives the rank): a process that
 * records nothing, killed or not, leaves no file behind, and does not pay for one. Until then
 * the header and job region live in private memory, so that _exit and exec can still write them
 * as the image's log.
 *
 * File layout: header | job region (job record + command line and mounts, 4096 bytes) | name
 * region (DARSHAN_NAMEMEM bytes) | one region per module below, of DARSHAN_MODMEM bytes (a DXT
 * module's of its own bound, 2 MiB, whose records grow at the region's end: dxt.c). The file
 * is sparse: only pages holding records take space. The header's maps always describe what is
 * in the regions: a record is placed, then counted (region lengths only grow), and every store
 * reaches the page cache at once, so a kill at any instruction leaves a consistent log. */
#include "iostudy.h"

#include <errno.h> /* program_invocation_short_name */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define JOB_REGION 4096 /* Darshan's DARSHAN_JOB_RECORD_SIZE: job record and exe/mount string */

int ios_mmap_on;
static unsigned char *map; /* NULL until the file is made */
static size_t map_len, name_cap, mod_cap;

/* The modules whose records live in the file, one region each in the order of ios_modules
 * (heatmaps are rebinned at shutdown: not here): region_at[module index] is the region's place
 * after the name region, -1 for the others. */
static ptrdiff_t region_at[IOS_NMODULES];

static size_t region_cap(int m) {
    int id = ios_modules[m].id;
    if (!ios_dxt_module(id))
        return mod_cap;
    return ios_config.dxt_mem[id == IOS_MOD_DXT_POSIX ? IOS_DXT_POSIX : IOS_DXT_MPIIO];
}

/* Places the regions; their total size. */
static size_t place_regions(void) {
    size_t at = 0;
    for (int m = 0; m < IOS_NMODULES; m++) {
        region_at[m] = ios_modules[m].in_mmap ? (ptrdiff_t)at : -1;
        at += ios_modules[m].in_mmap ? region_cap(m) : 0;
    }
    return at;
}
static struct ios_log_header *header; /* in early, then at the start of the mapping */
static struct ios_log_job *job;
static int rank;
static char path[PATH_MAX];
static char dir[PATH_MAX]; /* where the file goes; its path is made with the file */
static int unlinked;       /* the file was removed before an exec; the mapping lives on */
/* The header and job region before the file exists. */
static _Alignas(64) unsigned char early[sizeof(struct ios_log_header) + JOB_REGION];

/* The module index of module id mod when its records live in the file, else -1. */
static int in_file(int mod) {
    for (int m = 0; m < IOS_NMODULES; m++)
        if (ios_modules[m].id == mod)
            return region_at[m] >= 0 ? m : -1;
    return -1;
}

/* <dir>/<user>_<exe>_id<jobid>_mmap-log-<host>-<pid>.darshan: one per process and node. */
static int make_path(void) {
    const char *user = getenv("LOGNAME");
    char uid[32], host[256] = "";
    if (!user || !*user || strchr(user, '/')) {
        snprintf(uid, sizeof uid, "%d", (int)geteuid());
        user = uid;
    }
    gethostname(host, sizeof host - 1);
    int n = snprintf(path, sizeof path, "%s/%s_%s_id%lld_mmap-log-%s-%d.darshan", dir, user,
                     program_invocation_short_name, (long long)ios_job_id(), host, (int)getpid());
    return n > 0 && (size_t)n < sizeof path ? 0 : -1;
}

static void fill_job_region(void) {
    struct timespec start = ios_job_start();
    job->uid = (int64_t)getuid();
    job->start_time_sec = start.tv_sec;
    job->start_time_nsec = start.tv_nsec;
    job->end_time_sec = start.tv_sec; /* moved on as records appear (ios_mmap_alloc) */
    job->end_time_nsec = start.tv_nsec;
    job->nprocs = 1;
    job->jobid = ios_job_id();
    ios_job_metadata(job->metadata, sizeof job->metadata);
    ios_job_exe_mounts((char *)(job + 1), JOB_REGION - sizeof *job);
}

/* The header of a log of no record yet, in early: regions placed, all empty. */
static void fill_header(void) {
    memset(early, 0, sizeof early);
    header = (struct ios_log_header *)early;
    job = (struct ios_log_job *)(early + sizeof *header);
    fill_job_region();
    memcpy(header->version_string, IOS_LOG_VERSION, sizeof IOS_LOG_VERSION);
    header->magic_nr = IOS_LOG_MAGIC;
    header->comp_type = IOS_COMP_NONE;
    header->name_map.off = sizeof *header + JOB_REGION;
    for (int m = 0; m < IOS_NMODULES; m++) {
        const struct ios_module *mod = &ios_modules[m];
        if (region_at[m] < 0)
            continue;
        /* An empty region (length 0) reads as an absent module. */
        header->mod_map[mod->id].off = header->name_map.off + name_cap + (size_t)region_at[m];
        header->mod_ver[mod->id] = (uint32_t)mod->version;
    }
}

void ios_mmap_open(void) {
    const char *off = getenv("IOSTUDY_MMAP_LOGS");
    if (off && strcmp(off, "0") == 0)
        return;
    /* Node-local memory by default: on a disk file system every first write to a page of a
     * shared mapping allocates blocks, milliseconds per process. */
    const char *where = ios_config.mmap_log_path;
    if (!where || !*where)
        where = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    size_t dir_len = strnlen(where, sizeof dir);
    if (dir_len == sizeof dir) {
        ios_warn("cannot name a memory-mapped log in %s: logs of killed runs are lost", where);
        return;
    }
    memcpy(dir, where, dir_len + 1);
    long page = sysconf(_SC_PAGESIZE);
    name_cap = (size_t)(ios_config.namemem_mib * 1048576.0);
    mod_cap = (size_t)(ios_config.modmem_mib * 1048576.0);
    map_len = sizeof(struct ios_log_header) + JOB_REGION + name_cap + place_regions();
    map_len = (map_len + (size_t)page - 1) / (size_t)page * (size_t)page;
    map = NULL;
    fill_header();
    rank = 0;
    unlinked = 0;
    ios_mmap_on = 1;
}

/* Makes the file, with the header and job region so far; 0, or -1 with memory-mapped logs off
 * (the records then live in the heap, and the process ends through the normal shutdown). */
static int create(void) {
    if (make_path() != 0) { /* not before: a process that records nothing needs no name */
        ios_warn("cannot name a memory-mapped log in %s: logs of killed runs are lost", dir);
        ios_mmap_on = 0;
        return -1;
    }
    int fd = IOS_CALL(open)(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    void *m = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)map_len) == 0)
        m = IOS_CALL(mmap)(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0)
        IOS_CALL(close)(fd);
    if (m == MAP_FAILED) {
        if (fd >= 0)
            unlink(path);
        ios_warn("cannot create %s: logs of killed runs are lost", path);
        ios_mmap_on = 0;
        return -1;
    }
    memcpy(m, early, sizeof early);
    map = m;
    header = m;
    job = (struct ios_log_job *)(map + sizeof *header);
    return 0;
}

/* 1 when the file is there to take records (made now if need be). */
static int ready(void) { return ios_mmap_on && (map || create() == 0); }

void *ios_mmap_alloc(int mod, size_t size) {
    int index = in_file(mod);
    if (index < 0 || !ready())
        return NULL;
    struct ios_log_map *m = &header->mod_map[mod];
    if (m->len + size > region_cap(index))
        return NULL;
    struct ios_base_record *rec = (void *)(map + m->off + m->len);
    rec->rank = rank;
    /* Placed, then counted: the record is zero (the file is sparse) until its module fills it. */
    atomic_signal_fence(memory_order_seq_cst);
    m->len += size;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    job->end_time_sec = now.tv_sec;
    job->end_time_nsec = now.tv_nsec;
    return rec;
}

void ios_mmap_add_name(uint64_t id, const char *name, size_t len) {
    if (!ready())
        return;
    size_t need = sizeof id + len + 1;
    if (header->name_map.len + need > name_cap)
        return; /* the caller's budget check makes this unreachable */
    unsigned char *at = map + header->name_map.off + header->name_map.len;
    memcpy(at, &id, sizeof id);
    memcpy(at + sizeof id, name, need - sizeof id);
    atomic_signal_fence(memory_order_seq_cst);
    header->name_map.len += need;
}

unsigned char *ios_mmap_region(int mod, size_t *len) {
    if (!map || (mod >= 0 && in_file(mod) < 0))
        return NULL;
    const struct ios_log_map *m = mod < 0 ? &header->name_map : &header->mod_map[mod];
    *len = m->len;
    return map + m->off;
}

unsigned char *ios_mmap_tail(int mod, uint64_t **len) {
    if (in_file(mod) < 0 || !ready())
        return NULL;
    *len = &header->mod_map[mod].len;
    return map + header->mod_map[mod].off;
}

int ios_mmap_rank(void) { return rank; }

const char *ios_mmap_path(void) { return map ? path : NULL; }

void ios_mmap_set_partial(uint64_t flags) {
    if (ios_mmap_on)
        header->partial_flag = flags;
}

void ios_mmap_set_rank(int r, int nprocs, int64_t jobid) {
    /* Made at once: a rank that ends without MPI_Finalize leaves its file for the merge. Under
     * the records' lock, as every other maker of the file: another thread's first record may
     * be making it now (one of two O_EXCL opens would fail and turn the logs off). */
    ios_lock();
    if (ready()) {
        rank = r;
        job->nprocs = nprocs;
        job->jobid = jobid;
    }
    ios_unlock();
}

/* Lets go of the file's mapping, leaving private zeroed memory at its address: a thread that
 * looked up its record before shutdown and writes it late writes there, never into an unmapped
 * page nor (in a forked child) into the parent's file. */
static void retire_mapping(void) {
    if (map) {
        void *m = IOS_CALL(mmap)(map, map_len, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        (void)m; /* on failure the file's mapping stays, which is as safe */
    }
    map = NULL;
    ios_mmap_on = 0;
}

void ios_mmap_close(int keep) {
    if (map && !keep && !unlinked)
        unlink(path);
    retire_mapping();
}

void ios_mmap_forget(void) {
    if (ios_mmap_on)
        retire_mapping(); /* the parent's file: it stays, the parent removes it */
}

/* ---- _exit and exec -------------------------------------------------------------------------- */
/* The heatmaps of this process as HEATMAP records, in a static buffer (a signal handler's stack
 * may be small); its length in *len. */
static const unsigned char *heatmap_records(double run_time, size_t *len) {
    static unsigned char buf[IOS_HEATMAP_NAPIS * IOS_HEATMAP_RECORD_MAX];
    double width = ios_heatmap_min_width(run_time);
    int64_t nbins = ios_heatmap_nbins(run_time, width);
    *len = 0;
    for (int api = 0; api < IOS_HEATMAP_NAPIS; api++) {
        size_t n = ios_heatmap_record(api, width, nbins, 0.0, buf + *len);
        if (n)
            ((struct ios_base_record *)(buf + *len))->rank = rank;
        *len += n;
    }
    return buf;
}

/* One region of the log at *at as a zlib stream of stored blocks, *m its place (none when
 * empty); *at moves past it. */
static int write_region(int fd, const void *in, size_t len, struct ios_log_map *m, uint64_t *at) {
    *m = (struct ios_log_map){len ? *at : 0, len ? ios_stored_len(len) : 0};
    *at += m->len;
    return len ? ios_write_stored(fd, in, len, m->off) : 0;
}

/* Writes the log: every region, the mapped ones then the heatmaps, one after the other as
 * zlib streams of stored blocks (Darshan 3.5.0's reader of uncompressed logs reads only the
 * first MiB of a region; of zlib streams, any length), then the header that makes the file a
 * log. No compression: a copy of the records and their checksum, cheap at _exit. */
static int write_packed(int fd, struct ios_log_header *h, double run_time) {
    uint64_t at = sizeof *h;
    struct ios_log_map job_map;
    size_t exe_len = strnlen((const char *)(job + 1), JOB_REGION - sizeof *job - 1) + 1;
    int err = write_region(fd, job, sizeof *job + exe_len, &job_map, &at);
    h->comp_type = IOS_COMP_ZLIB;
    h->name_map.off = at;     /* where the job region ends, even with no names */
    if (header->name_map.len) /* a length, a file: regions fill only once it is made */
        err |=
            write_region(fd, map + header->name_map.off, header->name_map.len, &h->name_map, &at);
    for (int i = 0; i < IOS_NMODULES; i++) {
        struct ios_log_map *m = &h->mod_map[ios_modules[i].id];
        if (region_at[i] >= 0)
            err |= write_region(fd, map + m->off, m->len, m, &at);
    }
    size_t heat_len;
    const unsigned char *heat = heatmap_records(run_time, &heat_len);
    if (heat_len) {
        err |= write_region(fd, heat, heat_len, &h->mod_map[IOS_MOD_HEATMAP], &at);
        h->mod_ver[IOS_MOD_HEATMAP] = IOS_HEATMAP_VER;
    }
    return err | ios_write_all(fd, h, sizeof *h, 0);
}

int ios_mmap_write_log(char *out, size_t outlen, const char **why) {
    static char stem[PATH_MAX]; /* not on a signal handler's stack */
    if (!ios_mmap_on) {
        *why = "no memory-mapped log";
        return -1;
    }
    double run_time = ios_now();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    job->end_time_sec = now.tv_sec;
    job->end_time_nsec = now.tv_nsec;
    if (ios_job_log_path(job->jobid, out, outlen, stem, sizeof stem, why) != 0)
        return -1;
    int fd = IOS_CALL(open)(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    struct ios_log_header h = *header;
    int err = write_packed(fd, &h, run_time);
    *why = err ? strerror(errno) : NULL;
    IOS_CALL(close)(fd);
    if (err) {
        unlink(out);
        return -1;
    }
    ios_log_finish(out, outlen, stem, 1); /* written in under a second */
    return 0;
}

void ios_mmap_unlink(void) {
    if (map && !unlinked && unlink(path) == 0)
        unlinked = 1;
}

/* The used parts of the mapping, written into fd at their offsets. */
static int copy_used(int fd) {
    int err = ios_write_all(fd, map, sizeof *header + JOB_REGION, 0);
    err |=
        ios_write_all(fd, map + header->name_map.off, header->name_map.len, header->name_map.off);
    for (int i = 0; i < IOS_NMODULES; i++) {
        const struct ios_log_map *m = &header->mod_map[ios_modules[i].id];
        if (region_at[i] >= 0)
            err |= ios_write_all(fd, map + m->off, m->len, m->off);
    }
    return err;
}

void ios_mmap_relink(void) {
    if (!map || !unlinked)
        return;
    int fd = IOS_CALL(open)(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    void *m = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)map_len) == 0 && copy_used(fd) == 0)
        m = IOS_CALL(mmap)(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    /* The new file's mapping takes the old one's place in one step: nothing is unmapped if this
     * fails, and the records then stay in the old (unnamed) file, lost only if a kill comes. */
    if (m != MAP_FAILED && mremap(m, map_len, map_len, MREMAP_MAYMOVE | MREMAP_FIXED, map) == map)
        unlinked = 0;
    else if (m != MAP_FAILED)
        munmap(m, map_len);
    if (fd >= 0)
        IOS_CALL(close)(fd);
    if (unlinked) {
        if (fd >= 0)
            unlink(path);
        ios_warn("cannot make %s again after a failed exec: a kill would lose the records", path);
    }
}
