/* What the job record holds and where the log goes: command line, mount table, file-system
 * block sizes, job id, metadata tags, start time, and Darshan's log file naming. */
#include "iostudy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_MOUNTS 64

static int saved_argc;
static char **saved_argv;
static struct timespec start_real;
static struct tm start_local; /* the log's folder and name: taken at start, as localtime locks */
static pid_t fork_parent;

struct mount {
    char *type, *path;
    size_t path_len;
    int64_t block_size; /* 0 until statfs has been asked */
};
static struct mount mounts[MAX_MOUNTS];
static int n_mounts = -1; /* -1: not read yet */

void ios_job_save_args(int argc, char **argv) {
    saved_argc = argc;
    saved_argv = argv;
}

const char *ios_job_app_name(void) { return saved_argc > 0 && saved_argv ? saved_argv[0] : NULL; }

void ios_job_begin(void) {
    struct timespec origin;
    clock_gettime(CLOCK_MONOTONIC, &origin);
    ios_origin_ns = origin.tv_sec * 1000000000 + origin.tv_nsec;
    clock_gettime(CLOCK_REALTIME, &start_real);
    time_t t = start_real.tv_sec;
    localtime_r(&t, &start_local);
    fork_parent = 0;
}

void ios_job_set_fork_parent(pid_t parent) { fork_parent = parent; }

struct timespec ios_job_start(void) {
    return start_real;
}

int64_t ios_job_id(void) {
    const char *var = ios_config.jobid_env;
    const char *val = getenv(var && *var ? var : "SLURM_JOB_ID");
    char *end;
    if (val && *val) {
        long long id = strtoll(val, &end, 10);
        if (*end == '\0' && id >= 0)
            return id;
    }
    return getpid();
}

/* ---- mount table ---------------------------------------------------------------------------- */
static int skipped_fs_type(const char *type) {
    static const char *skip[] = {"tmpfs",      "proc",      "sysfs",      "devpts",  "binfmt_misc",
                                 "fusectl",    "debugfs",   "securityfs", "nfsd",    "none",
                                 "rpc_pipefs", "hugetlbfs", "cgroup",     "cgroup2", NULL};
    for (const char **s = skip; *s; s++)
        if ((*s)[0] == type[0] && strcmp(type, *s) == 0) /* the first byte settles most */
            return 1;
    return 0;
}

static int is_nfs(const char *type) { return strncmp(type, "nfs", 3) == 0; }

/* The whole of a small text file, NUL-terminated (malloc'd), or NULL. */
static char *read_text(const char *path, size_t limit) {
    int fd = IOS_CALL(open)(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0, cap = 16384;
    char *buf = fd >= 0 ? malloc(cap) : NULL;
    for (ssize_t n = 1; buf && n > 0 && len < limit;) {
        if (len + 1 == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
        }
        n = IOS_CALL(read)(fd, buf + len, cap - 1 - len);
        len += n > 0 ? (size_t)n : 0;
    }
    if (fd >= 0)
        IOS_CALL(close)(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The next space-separated field of a mount table line, its octal escapes (\040) decoded in
 * place, as getmntent decodes them; *p moves past it. Spans without a backslash are found by
 * strcspn, not byte by byte: the table is read by every process. */
static char *mount_field(char **p) {
    static const char stops[] = " \t\n\\";
    char *start = *p + strspn(*p, " \t"), *r = start + strcspn(start, stops), *w = r;
    while (*r == '\\') {
        if (r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
            r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
        size_t n = strcspn(r, stops);
        memmove(w, r, n);
        w += n;
        r += n;
    }
    *p = *r == '\n' || *r == '\0' ? r : r + 1;
    *w = '\0';
    return start;
}

static void add_mount(const char *type, const char *dir, struct mount *nfs, int *n_nfs) {
    if (!*type || !*dir || skipped_fs_type(type) || strpbrk(dir, " \t\n"))
        return;
    struct mount m = {strdup(type), strdup(dir), strlen(dir), 0};
    if (m.type && m.path && is_nfs(type) && *n_nfs < MAX_MOUNTS)
        nfs[(*n_nfs)++] = m;
    else if (m.type && m.path && !is_nfs(type) && n_mounts < MAX_MOUNTS)
        mounts[n_mounts++] = m;
    else {
        free(m.type);
        free(m.path);
    }
}

/* Reads the mount table once, non-NFS mounts first (Darshan's order), pseudo file systems out.
 * Parsed here rather than with getmntent, which costs a sscanf per line: a fifth of what the
 * runtime adds to a process that does no I/O. */
static void read_mounts(void) {
    if (n_mounts >= 0)
        return;
    n_mounts = 0;
    char *table = read_text("/proc/self/mounts", 1 << 20);
    if (!table)
        table = read_text("/etc/mtab", 1 << 20);
    if (!table)
        return;
    struct mount nfs[MAX_MOUNTS];
    int n_nfs = 0;
    for (char *line = table; *line;) {
        char *end = strchr(line, '\n'), *p = line;
        if (end)
            *end = '\0';
        mount_field(&p); /* the device */
        char *dir = mount_field(&p), *type = mount_field(&p);
        add_mount(type, dir, nfs, &n_nfs);
        line = end ? end + 1 : line + strlen(line);
    }
    free(table);
    for (int i = 0; i < n_nfs; i++) {
        if (n_mounts < MAX_MOUNTS) {
            mounts[n_mounts++] = nfs[i];
        } else {
            free(nfs[i].type);
            free(nfs[i].path);
        }
    }
}

int64_t ios_file_alignment(const char *path) {
    read_mounts();
    struct mount *best = NULL;
    for (int i = 0; i < n_mounts; i++) {
        struct mount *m = &mounts[i];
        int under = strncmp(path, m->path, m->path_len) == 0 &&
                    (m->path_len == 1 || path[m->path_len] == '/' || path[m->path_len] == '\0');
        if (under && (!best || m->path_len > best->path_len))
            best = m;
    }
    if (!best)
        return -1;
    if (best->block_size == 0) {
        struct statfs sfs;
        if (statfs(best->path, &sfs) != 0)
            best->block_size = 4096;
        else if ((uint32_t)sfs.f_type == IOS_LUSTRE_MAGIC)
            best->block_size = 1048576; /* Lustre reports a page; its stripes are 1 MiB */
        else
            best->block_size = sfs.f_bsize;
    }
    return best->block_size;
}

/* "<command line>(\n<type>\t<mount point>)*": the reader needs at least one mount entry. */
void ios_job_exe_mounts(char *out, size_t outlen) {
    static const char truncated[] = "<TRUNCATED>";
    size_t n = 0;
    out[0] = '\0';
    if (saved_argv) {
        for (int i = 0; i < saved_argc && saved_argv[i]; i++) {
            size_t len = strlen(saved_argv[i]);
            if (n + len + 2 + sizeof truncated > outlen / 2) {
                memcpy(out + n, truncated, sizeof truncated);
                n += sizeof truncated - 1;
                break;
            }
            if (i > 0)
                out[n++] = ' ';
            memcpy(out + n, saved_argv[i], len);
            n += len;
        }
    }
    out[n] = '\0';
    /* A newline in an argument would end the command line for the reader: it splits there. */
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    read_mounts();
    int written = 0;
    for (int i = 0; i < n_mounts; i++) { /* "\n<type>\t<path>", copied: no formatting */
        size_t type_len = strlen(mounts[i].type), need = 2 + type_len + mounts[i].path_len;
        if (n + need + 1 > outlen)
            break;
        out[n++] = '\n';
        memcpy(out + n, mounts[i].type, type_len);
        n += type_len;
        out[n++] = '\t';
        memcpy(out + n, mounts[i].path, mounts[i].path_len + 1);
        n += mounts[i].path_len;
        written++;
    }
    if (written == 0)
        snprintf(out + n, outlen - n, "\nunknown\t/");
}

/* lib_ver, fork_parent, then the harness's tags from IOSTUDY_LOG_TAGS ("k=v;k=v" or one per
 * line). PyDarshan rejects a metadata line without '=', so such tags are dropped. */
void ios_job_metadata(char *out, size_t outlen) {
    size_t n = (size_t)snprintf(out, outlen, "lib_ver=iostudy-%s\n", IOS_VERSION);
    if (fork_parent)
        n += (size_t)snprintf(out + n, outlen - n, "fork_parent=%d\n", (int)fork_parent);
    const char *tags = getenv("IOSTUDY_LOG_TAGS");
    if (!tags)
        return;
    char *copy = strdup(tags);
    if (!copy)
        return;
    for (char *save, *tag = strtok_r(copy, ";\n", &save); tag; tag = strtok_r(NULL, ";\n", &save)) {
        while (*tag == ' ')
            tag++;
        size_t len = strlen(tag);
        if (len == 0 || tag[0] == '=' || !strchr(tag, '=') || n + len + 2 > outlen)
            continue;
        memcpy(out + n, tag, len);
        n += len;
        out[n++] = '\n';
        out[n] = '\0';
    }
    free(copy);
}

/* ---- log file naming --------------------------------------------------------------------------
 */
/* Makes the folders of path below its first `from` characters (which exist). With shared_mode
 * (a site's log root), each new folder gets exactly that mode, whatever the program's umask: on
 * a root of mode 1777 the first user of the day makes Y/M/D and every other user writes there. */
static int make_dirs(char *path, size_t from, mode_t shared_mode) {
    mode_t mode = shared_mode ? shared_mode : 0755;
    for (char *p = path + from + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char end = *p;
        *p = '\0';
        int rc = mkdir(path, mode);
        if (rc == 0 && shared_mode)
            rc = chmod(path, shared_mode);
        *p = end;
        if (rc != 0 && errno != EEXIST)
            return -1;
        if (end == '\0')
            return 0;
    }
}

/* a then b into out, cut to outlen as snprintf cuts (outlen > 0): a copy, not formatting. */
static void join(char *out, size_t outlen, const char *a, const char *b) {
    size_t na = strnlen(a, outlen - 1), nb = strnlen(b, outlen - 1 - na);
    memcpy(out, a, na);
    memcpy(out + na, b, nb);
    out[na + nb] = '\0';
}

/* Fills the path the log is written to and the stem it is renamed from: Darshan's
 * <root>/<Y>/<M>/<D>/<user>_<exe>_id<jobid>-<pid>_<M>-<D>-<secs>-<logmod>.darshan_partial,
 * renamed to <stem>_<write seconds>.darshan; DARSHAN_LOGFILE is used as it is. Returns 0, or -1
 * with a reason in why. Safe in a signal handler (_exit and exec call it there): system calls
 * and formatting only, the start's local time taken at start. */
int ios_job_log_path(int64_t jobid, char *path, size_t pathlen, char *stem, size_t stemlen,
                     const char **why) {
    const char *logfile = getenv("DARSHAN_LOGFILE");
    if (logfile && *logfile) {
        join(path, pathlen, logfile, "");
        stem[0] = '\0';
        return 0;
    }
    char root[2048];
    size_t root_exists_len = 0;
    mode_t shared_mode = 0;
    const char *logpath = ios_config.log_path;
    if (logpath && *logpath) {
        join(root, sizeof root, logpath, "");
        root_exists_len = strlen(root); /* the site creates the root; we add the date folders */
        struct stat st;
        if (IOS_CALL(stat)(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
            *why = "the log root (DARSHAN_LOGPATH) is not a folder";
            snprintf(path, pathlen, "%s", root);
            return -1;
        }
        shared_mode = st.st_mode & 07777;
    } else {
        const char *state = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");
        if (state && *state)
            snprintf(root, sizeof root, "%s/iostudy/darshan-logs", state);
        else if (home && *home)
            snprintf(root, sizeof root, "%s/.local/state/iostudy/darshan-logs", home);
        else { /* no shared, predictable /tmp path: another user could plant a link there */
            *why = "no log folder: set DARSHAN_LOGPATH or DARSHAN_LOGFILE (HOME is unset)";
            snprintf(path, pathlen, "(none)");
            return -1;
        }
    }
    const struct tm tm = start_local;
    char dir[2200];
    snprintf(dir, sizeof dir, "%s/%d/%d/%d", root, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
    if (make_dirs(dir, root_exists_len, shared_mode) != 0) {
        *why = strerror(errno);
        snprintf(path, pathlen, "%s", dir);
        return -1;
    }
    const char *user = getenv("LOGNAME");
    char uid[32];
    if (!user || !*user || strchr(user, '/')) {
        snprintf(uid, sizeof uid, "%d", (int)geteuid());
        user = uid;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct timeval now;
    gettimeofday(&now, NULL);
    uint64_t logmod = ios_hash((const unsigned char *)host, strlen(host),
                               (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_usec);
    int secs = tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec;
    int n = snprintf(stem, stemlen, "%s/%s_%s_id%lld-%d_%d-%d-%d-%llu", dir, user,
                     program_invocation_short_name, (long long)jobid, (int)getpid(), tm.tm_mon + 1,
                     tm.tm_mday, secs, (unsigned long long)logmod);
    if (n < 0 || (size_t)n + 32 > stemlen || (size_t)n + 32 > pathlen) {
        /* Darshan's fallback for an over-long name */
        snprintf(stem, stemlen, "%s/id%lld", dir, (long long)jobid);
    }
    join(path, pathlen, stem, ".darshan_partial");
    return 0;
}
