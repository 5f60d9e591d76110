/* iostudy-fswalk: the parallel walk behind `iostudy fsstats scan`
 * (analysis/src/iostudy/collect/fsstats.py, its only client, which turns the records into
 * histograms). It lists directories on one file system with several threads and never follows a
 * symbolic link: entries are lstat'ed (fstatat with AT_SYMLINK_NOFOLLOW), a directory is opened
 * with O_NOFOLLOW, and what was opened must be the inode its parent listed (or the walk would have
 * gone through a directory swapped for a symlink meanwhile). It keeps nothing per file: only the
 * directories still to list.
 *
 * Protocol:
 *   stdin          the directories to walk, each "<project>\0<inode>\0<path>\0" (inode 0: not
 *                  checked); a directory found inherits the project number of its parent.
 *   stdout         one struct fsw_record (native byte order) per entry that could be lstat'ed,
 *                  and one FSW_VISIT record per directory listed (its entry count).
 *   --errors FILE  "<op> <errno> <path>\0" per failure, and the walk goes on; op is open, stat,
 *                  read (readdir), or replaced (errno 0: not the directory its parent listed).
 *   --pending FILE when stopped early (--max-dirs, --max-ms, SIGINT, SIGTERM): the
 *                  directories found but not listed yet, in the stdin format, to walk later.
 *   --list FILE    per entry "<type>\t<size>\t<blocks>\t<mtime>\t<atime>\t<ctime>\t<nlink>\t
 *                  <inode>\t<path>\0" (type: f, d, l, o; d+ a mount point, not entered).
 *   --dev DEV      the file system (st_dev) to stay on; directories of others are not entered.
 * Exit status: 0 everything walked; 3 stopped early (the pending file has the rest, and the last
 * line of stderr says "stopped: <signal|max-dirs|max-ms>, ..."); 1 a failure
 * (out of memory, an output that cannot be written); 2 bad usage.
 */
#define _GNU_SOURCE /* O_NOATIME */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FSW_REG = 0, FSW_DIR = 1, FSW_LNK = 2, FSW_OTHER = 3, FSW_VISIT = 4 };
enum { FSW_MOUNT = 1 }; /* flags: a directory of another file system (not entered) */
enum { FSW_EXIT_STOPPED = 3 };

/* 64 bytes; fsstats.py's RECORD dtype mirrors it field by field. */
struct fsw_record {
    uint64_t size;
    uint64_t blocks; /* st_blocks: 512-byte units */
    int64_t mtime;
    int64_t atime;
    int64_t ctime;
    uint64_t ino;
    uint32_t nlink;
    uint32_t entries; /* FSW_VISIT: the directory's entries, without . and .. */
    uint32_t project;
    uint16_t namelen; /* bytes of the entry's name */
    uint8_t type;
    uint8_t flags;
};
_Static_assert(sizeof(struct fsw_record) == 64, "fsw_record must stay 64 bytes");

struct fsw_dir {
    char *path;
    uint32_t project;
    uint64_t ino;
};

#define FSW_RECORDS 4096       /* records per thread buffer (256 KiB) */
#define FSW_LIST_BUF 65536     /* bytes per thread listing buffer */
#define FSW_PUSH_BATCH 64      /* directories found before they are handed to the other threads */
#define FSW_POLL_NS 100000000L /* idle threads look at the stop flag this often */

struct fsw_worker {
    struct fsw_record recs[FSW_RECORDS];
    size_t nrecs;
    char list[FSW_LIST_BUF];
    size_t nlist;
    struct fsw_dir found[FSW_PUSH_BATCH];
    size_t nfound;
};

static dev_t fsw_dev;
static int fsw_dev_set;
static FILE *fsw_errors;
static int fsw_list_fd = -1;
static _Atomic int fsw_noatime =
    O_NOATIME; /* dropped after the first EPERM (not the owner, not root) */

static pthread_mutex_t fsw_lock = PTHREAD_MUTEX_INITIALIZER; /* the stack and the counters */
static pthread_cond_t fsw_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t fsw_out_lock = PTHREAD_MUTEX_INITIALIZER; /* stdout, errors, list */
static struct fsw_dir *fsw_stack;
static size_t fsw_depth, fsw_capacity;
static unsigned fsw_active;  /* threads listing a directory */
static const char *fsw_stop; /* under fsw_lock: why no more directories are handed out */
static volatile sig_atomic_t fsw_signalled;
static unsigned long long fsw_max_dirs, fsw_visited;
static struct timespec fsw_deadline; /* tv_sec 0: none; only once a directory was listed */

static void fsw_fatal(const char *what) {
    fprintf(stderr, "iostudy-fswalk: %s: %s\n", what, strerror(errno));
    _exit(1);
}

static void *fsw_alloc(size_t n) {
    void *p = malloc(n);
    if (!p)
        fsw_fatal("out of memory");
    return p;
}

static void fsw_write_all(int fd, const void *buf, size_t n, const char *what) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            fsw_fatal(what);
        }
        p += w;
        n -= (size_t)w;
    }
}

static void fsw_flush(struct fsw_worker *w) {
    pthread_mutex_lock(&fsw_out_lock);
    if (w->nrecs)
        fsw_write_all(STDOUT_FILENO, w->recs, w->nrecs * sizeof w->recs[0], "writing records");
    if (w->nlist)
        fsw_write_all(fsw_list_fd, w->list, w->nlist, "writing the listing");
    pthread_mutex_unlock(&fsw_out_lock);
    w->nrecs = w->nlist = 0;
}

static void fsw_error(const char *op, int err, const char *dir, const char *name) {
    pthread_mutex_lock(&fsw_out_lock);
    if (name)
        fprintf(fsw_errors, "%s %d %s/%s%c", op, err, dir, name, 0);
    else
        fprintf(fsw_errors, "%s %d %s%c", op, err, dir, 0);
    pthread_mutex_unlock(&fsw_out_lock);
}

static void fsw_push(struct fsw_dir *dirs, size_t n) {
    pthread_mutex_lock(&fsw_lock);
    if (fsw_depth + n > fsw_capacity) {
        size_t cap = fsw_capacity ? fsw_capacity : 1024;
        while (cap < fsw_depth + n)
            cap *= 2;
        struct fsw_dir *grown = realloc(fsw_stack, cap * sizeof *grown);
        if (!grown)
            fsw_fatal("out of memory");
        fsw_stack = grown;
        fsw_capacity = cap;
    }
    memcpy(fsw_stack + fsw_depth, dirs, n * sizeof *dirs);
    fsw_depth += n;
    pthread_cond_broadcast(&fsw_cond);
    pthread_mutex_unlock(&fsw_lock);
}

static uint8_t fsw_type(mode_t mode) {
    if (S_ISREG(mode))
        return FSW_REG;
    if (S_ISDIR(mode))
        return FSW_DIR;
    if (S_ISLNK(mode))
        return FSW_LNK;
    return FSW_OTHER;
}

static struct fsw_record *fsw_record(struct fsw_worker *w) {
    if (w->nrecs == FSW_RECORDS)
        fsw_flush(w);
    return memset(&w->recs[w->nrecs++], 0, sizeof w->recs[0]);
}

static void fsw_list(struct fsw_worker *w, const struct fsw_record *r, const char *dir,
                     const char *name) {
    static const char types[] = "fdlo";
    char head[192];
    int n = snprintf(head, sizeof head,
                     "%c%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64
                     "\t%" PRIu32 "\t%" PRIu64 "\t",
                     types[r->type], (r->flags & FSW_MOUNT) ? "+" : "", r->size, r->blocks,
                     r->mtime, r->atime, r->ctime, r->nlink, r->ino);
    size_t ldir = strlen(dir), lname = strlen(name), need = (size_t)n + ldir + 1 + lname + 1;
    if (w->nlist + need > sizeof w->list)
        fsw_flush(w);
    if (need > sizeof w->list) { /* cannot happen with PATH_MAX paths; write it directly */
        pthread_mutex_lock(&fsw_out_lock);
        fsw_write_all(fsw_list_fd, head, (size_t)n, "writing the listing");
        fsw_write_all(fsw_list_fd, dir, ldir, "writing the listing");
        fsw_write_all(fsw_list_fd, "/", 1, "writing the listing");
        fsw_write_all(fsw_list_fd, name, lname + 1, "writing the listing");
        pthread_mutex_unlock(&fsw_out_lock);
        return;
    }
    char *p = w->list + w->nlist;
    memcpy(p, head, (size_t)n);
    memcpy(p + n, dir, ldir);
    p[n + ldir] = '/';
    memcpy(p + n + ldir + 1, name, lname + 1); /* with its NUL: the record's end */
    w->nlist += need;
}

static int fsw_open_dir(const char *path) {
    for (;;) {
        /* this attempt's flag: another thread may drop O_NOATIME meanwhile */
        int noatime = fsw_noatime;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | noatime);
        if (fd >= 0 || errno != EINTR) {
            if (fd < 0 && errno == EPERM && noatime) {
                fsw_noatime = 0; /* O_NOATIME needs ownership: plain opens from now on */
                continue;
            }
            return fd;
        }
    }
}

static void fsw_visit(struct fsw_worker *w, struct fsw_dir *dir) {
    int fd = fsw_open_dir(dir->path);
    if (fd < 0) {
        fsw_error("open", errno, dir->path, NULL);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fsw_error("stat", errno, dir->path, NULL);
        close(fd);
        return;
    }
    if (st.st_dev != fsw_dev || (dir->ino && (uint64_t)st.st_ino != dir->ino)) {
        fsw_error("replaced", 0, dir->path, NULL);
        close(fd);
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        fsw_error("open", errno, dir->path, NULL);
        close(fd);
        return;
    }
    size_t ldir = strlen(dir->path);
    uint32_t entries = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                fsw_error("read", errno, dir->path, NULL);
            break;
        }
        const char *name = e->d_name;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))
            continue;
        entries++;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            fsw_error("stat", errno, dir->path, name);
            continue;
        }
        struct fsw_record *r = fsw_record(w);
        size_t lname = strlen(name);
        r->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
        r->blocks = st.st_blocks > 0 ? (uint64_t)st.st_blocks : 0;
        r->mtime = st.st_mtime;
        r->atime = st.st_atime;
        r->ctime = st.st_ctime;
        r->ino = st.st_ino;
        r->nlink = (uint32_t)st.st_nlink;
        r->project = dir->project;
        r->namelen = lname > UINT16_MAX ? UINT16_MAX : (uint16_t)lname;
        r->type = fsw_type(st.st_mode);
        if (r->type == FSW_DIR) {
            if (st.st_dev != fsw_dev) {
                r->flags |= FSW_MOUNT;
            } else {
                struct fsw_dir *child = &w->found[w->nfound++];
                child->path = fsw_alloc(ldir + 1 + lname + 1);
                memcpy(child->path, dir->path, ldir);
                child->path[ldir] = '/';
                memcpy(child->path + ldir + 1, name, lname + 1);
                child->project = dir->project;
                child->ino = st.st_ino;
                if (w->nfound == FSW_PUSH_BATCH) {
                    fsw_push(w->found, w->nfound);
                    w->nfound = 0;
                }
            }
        }
        if (fsw_list_fd >= 0)
            fsw_list(w, r, dir->path, name);
    }
    closedir(d);
    struct fsw_record *v = fsw_record(w);
    v->type = FSW_VISIT;
    v->entries = entries;
    v->project = dir->project;
    v->ino = dir->ino;
    if (w->nfound) {
        fsw_push(w->found, w->nfound);
        w->nfound = 0;
    }
}

static int fsw_should_stop(void) { /* under fsw_lock */
    if (fsw_stop)
        return 1;
    if (fsw_signalled)
        fsw_stop = "signal";
    else if (fsw_max_dirs && fsw_visited >= fsw_max_dirs)
        fsw_stop = "max-dirs";
    else if (fsw_deadline.tv_sec && fsw_visited) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > fsw_deadline.tv_sec ||
            (now.tv_sec == fsw_deadline.tv_sec && now.tv_nsec >= fsw_deadline.tv_nsec))
            fsw_stop = "max-ms";
    }
    return fsw_stop != NULL;
}

static void *fsw_thread(void *arg) {
    struct fsw_worker *w = fsw_alloc(sizeof *w);
    w->nrecs = w->nlist = w->nfound = 0;
    pthread_mutex_lock(&fsw_lock);
    for (;;) {
        if (fsw_should_stop() || (fsw_depth == 0 && fsw_active == 0))
            break;
        if (fsw_depth == 0) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += FSW_POLL_NS;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&fsw_cond, &fsw_lock, &until);
            continue;
        }
        struct fsw_dir dir = fsw_stack[--fsw_depth];
        fsw_active++;
        fsw_visited++;
        pthread_mutex_unlock(&fsw_lock);
        fsw_visit(w, &dir);
        free(dir.path);
        pthread_mutex_lock(&fsw_lock);
        fsw_active--;
        if (fsw_depth == 0 && fsw_active == 0)
            pthread_cond_broadcast(&fsw_cond);
    }
    pthread_cond_broadcast(&fsw_cond);
    pthread_mutex_unlock(&fsw_lock);
    fsw_flush(w);
    free(w);
    return NULL;
}

static void fsw_on_signal(int sig) { fsw_signalled = 1; }

static unsigned long long fsw_number(const char *text, const char *option) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-') {
        fprintf(stderr, "iostudy-fswalk: %s: not a number: %s\n", option, text);
        exit(2);
    }
    return v;
}

static FILE *fsw_open_out(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) {
        fprintf(stderr, "iostudy-fswalk: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

static void fsw_read_starts(void) {
    char *field[3] = {NULL, NULL, NULL};
    size_t cap[3] = {0, 0, 0};
    for (;;) {
        int i;
        for (i = 0; i < 3; i++)
            if (getdelim(&field[i], &cap[i], '\0', stdin) < 0)
                break;
        if (i == 0)
            break;
        if (i < 3) {
            fprintf(stderr, "iostudy-fswalk: stdin: a start directory is cut short\n");
            exit(2);
        }
        struct fsw_dir dir = {strdup(field[2]), (uint32_t)fsw_number(field[0], "stdin project"),
                              fsw_number(field[1], "stdin inode")};
        if (!dir.path)
            fsw_fatal("out of memory");
        fsw_push(&dir, 1);
    }
    for (int i = 0; i < 3; i++)
        free(field[i]);
}

static void fsw_usage(void) {
    fprintf(stderr, "usage: iostudy-fswalk --dev DEV --errors FILE [--pending FILE] [--list FILE]"
                    " [--threads N] [--max-dirs N] [--max-ms MS] < starts > records\n"
                    "(a helper of `iostudy fsstats scan`; the protocol is in its source)\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *errors = NULL, *pending = NULL, *list = NULL;
    unsigned long long threads = 4, max_ms = 0;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc)
            fsw_usage();
        const char *val = argv[++i];
        if (!strcmp(opt, "--dev")) {
            fsw_dev = (dev_t)fsw_number(val, opt);
            fsw_dev_set = 1;
        } else if (!strcmp(opt, "--errors"))
            errors = val;
        else if (!strcmp(opt, "--pending"))
            pending = val;
        else if (!strcmp(opt, "--list"))
            list = val;
        else if (!strcmp(opt, "--threads"))
            threads = fsw_number(val, opt);
        else if (!strcmp(opt, "--max-dirs"))
            fsw_max_dirs = fsw_number(val, opt);
        else if (!strcmp(opt, "--max-ms"))
            max_ms = fsw_number(val, opt);
        else
            fsw_usage();
    }
    if (!fsw_dev_set || !errors || threads < 1 || threads > 1024)
        fsw_usage();

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fsw_on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* The caller starts us with both blocked, so that a stop it asks for while we start is
     * not lost (nor kills us before the handler is there): it arrives now. */
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_UNBLOCK, &stops, NULL);
    signal(SIGPIPE, SIG_IGN); /* a reader that went away: write fails with EPIPE, we exit 1 */

    fsw_errors = fsw_open_out(errors, "w");
    FILE *listing = list ? fsw_open_out(list, "a") : NULL; /* after the caller's own lines */
    if (listing)
        fsw_list_fd = fileno(listing);
    fsw_read_starts();
    if (max_ms) {
        clock_gettime(CLOCK_MONOTONIC, &fsw_deadline);
        fsw_deadline.tv_sec += (time_t)(max_ms / 1000);
        fsw_deadline.tv_nsec += (long)(max_ms % 1000) * 1000000L;
        if (fsw_deadline.tv_nsec >= 1000000000L) {
            fsw_deadline.tv_sec++;
            fsw_deadline.tv_nsec -= 1000000000L;
        }
    }

    pthread_t *ids = fsw_alloc(threads * sizeof *ids);
    for (unsigned long long t = 0; t < threads; t++) {
        errno = pthread_create(&ids[t], NULL, fsw_thread, NULL);
        if (errno)
            fsw_fatal("starting a thread");
    }
    for (unsigned long long t = 0; t < threads; t++)
        pthread_join(ids[t], NULL);
    free(ids);

    int status = 0;
    if (pending) {
        FILE *f = fsw_open_out(pending, "w");
        for (size_t i = 0; i < fsw_depth; i++)
            fprintf(f, "%" PRIu32 "%c%" PRIu64 "%c%s%c", fsw_stack[i].project, 0, fsw_stack[i].ino,
                    0, fsw_stack[i].path, 0);
        if (fclose(f) != 0)
            fsw_fatal(pending);
    }
    if (fsw_depth) {
        status = pending ? FSW_EXIT_STOPPED : 1;
        /* the last line of stderr: why (iostudy fsstats reads it) */
        fprintf(stderr, "stopped: %s, %llu directories listed, %zu to go\n", fsw_stop, fsw_visited,
                fsw_depth);
    }
    if (fclose(fsw_errors) != 0)
        fsw_fatal(errors);
    if (listing && fclose(listing) != 0)
        fsw_fatal(list);
    return status;
}
