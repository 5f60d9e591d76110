/* Robust logs (seed 002 §III-C, reference §10.4): while a process runs, its records live in a
 * memory-mapped file laid out as an uncompressed Darshan log (comp_type none) in a node-local
 * directory (DARSHAN_MMAP_LOGPATH, default /dev/shm, else /tmp), so that a job killed by SIGKILL, a
 * crash or the scheduler's time limit leaves one readable per-process log; `iostudy logs merge`
 * turns those into one job log. On normal exit the file is removed once the normal log is written.
 *
 * File layout: header | job region (job record + command line and mounts, 4096 bytes) | name
 * region (DARSHAN_NAMEMEM bytes) | one region of DARSHAN_MODMEM bytes per module below. The file
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

/* The modules whose records live in the file (heatmaps are rebinned at shutdown: not here). */
static const struct {
    int mod, ver;
} modules[] = {{IOS_MOD_POSIX, IOS_POSIX_VER},   {IOS_MOD_MPIIO, IOS_MPIIO_VER},
               {IOS_MOD_H5F, IOS_H5F_VER},       {IOS_MOD_PNETCDF_FILE, IOS_PNETCDF_FILE_VER},
               {IOS_MOD_LUSTRE, IOS_LUSTRE_VER}, {IOS_MOD_STDIO, IOS_STDIO_VER}};
#define NMODULES (sizeof modules / sizeof *modules)

int ios_mmap_on;
static unsigned char *map;
static size_t map_len, name_cap, mod_cap;
static struct ios_log_header *header;
static struct ios_log_job *job;
static int rank;
static char path[PATH_MAX];

static int slot_of(int mod) {
    for (size_t i = 0; i < NMODULES; i++)
        if (modules[i].mod == mod)
            return (int)i;
    return -1;
}

/* <dir>/<user>_<exe>_id<jobid>_mmap-log-<host>-<pid>.darshan: one per process and node. */
static int make_path(const char *dir) {
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

void ios_mmap_open(void) {
    const char *off = getenv("IOSTUDY_MMAP_LOGS");
    if (off && strcmp(off, "0") == 0)
        return;
    /* Node-local memory by default: on a disk file system every first write to a page of a
     * shared mapping allocates blocks, milliseconds per process. */
    const char *dir = getenv("DARSHAN_MMAP_LOGPATH");
    if (!dir || !*dir)
        dir = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    long page = sysconf(_SC_PAGESIZE);
    name_cap = (size_t)(ios_config.namemem_mib * 1048576.0);
    mod_cap = (size_t)(ios_config.modmem_mib * 1048576.0);
    map_len = sizeof(struct ios_log_header) + JOB_REGION + name_cap + NMODULES * mod_cap;
    map_len = (map_len + (size_t)page - 1) / (size_t)page * (size_t)page;
    if (make_path(dir) != 0) {
        ios_warn("cannot name a memory-mapped log in %s: logs of killed runs are lost", dir);
        return;
    }
    int fd = ios_real.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)map_len) != 0) {
        ios_warn("cannot create %s: logs of killed runs are lost", path);
        if (fd >= 0) {
            ios_real.close(fd);
            unlink(path);
        }
        return;
    }
    void *m = ios_real.mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ios_real.close(fd);
    if (m == MAP_FAILED) {
        unlink(path);
        ios_warn("cannot map %s: logs of killed runs are lost", path);
        return;
    }
    map = m;
    header = m;
    job = (struct ios_log_job *)(map + sizeof *header);
    fill_job_region();
    memcpy(header->version_string, IOS_LOG_VERSION, sizeof IOS_LOG_VERSION);
    header->magic_nr = IOS_LOG_MAGIC;
    header->comp_type = IOS_COMP_NONE;
    header->name_map.off = sizeof *header + JOB_REGION;
    for (size_t i = 0; i < NMODULES; i++) {
        /* An empty region (length 0) reads as an absent module. */
        header->mod_map[modules[i].mod].off = header->name_map.off + name_cap + i * mod_cap;
        header->mod_ver[modules[i].mod] = (uint32_t)modules[i].ver;
    }
    rank = 0;
    ios_mmap_on = 1;
}

void *ios_mmap_alloc(int mod, size_t size) {
    int slot = slot_of(mod);
    if (slot < 0 || !ios_mmap_on)
        return NULL;
    struct ios_log_map *m = &header->mod_map[mod];
    if (m->len + size > mod_cap)
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

void ios_mmap_add_name(uint64_t id, const char *name) {
    if (!ios_mmap_on)
        return;
    size_t need = sizeof id + strlen(name) + 1;
    if (header->name_map.len + need > name_cap)
        return; /* the caller's budget check makes this unreachable */
    unsigned char *at = map + header->name_map.off + header->name_map.len;
    memcpy(at, &id, sizeof id);
    memcpy(at + sizeof id, name, need - sizeof id);
    atomic_signal_fence(memory_order_seq_cst);
    header->name_map.len += need;
}

const char *ios_mmap_path(void) { return ios_mmap_on ? path : NULL; }

void ios_mmap_set_partial(uint64_t flags) {
    if (ios_mmap_on)
        header->partial_flag = flags;
}

void ios_mmap_set_rank(int r, int nprocs, int64_t jobid) {
    if (!ios_mmap_on)
        return;
    rank = r;
    job->nprocs = nprocs;
    job->jobid = jobid;
}

void ios_mmap_close(int keep) {
    if (!ios_mmap_on)
        return;
    ios_mmap_on = 0;
    munmap(map, map_len);
    map = NULL;
    if (!keep)
        unlink(path);
}

void ios_mmap_forget(void) {
    if (!ios_mmap_on)
        return;
    ios_mmap_on = 0;
    munmap(map, map_len); /* the parent's file: it stays, the parent removes it */
    map = NULL;
}
