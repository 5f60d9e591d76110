/* GlusterFS file placement shared by iostudy's benchmarks (ioprobe), the counterpart of
 * lustre.h's llapi_file_create. A distributed GlusterFS volume places a whole file on the brick
 * its NAME hashes to, so a file is put on a brick by choosing its name: candidates STEM,
 * STEM.1, STEM.2, ... are created in turn until the file's trusted.glusterfs.pathinfo names the
 * brick wanted. The search is deterministic (the same names for the same volume layout), and
 * what pathinfo says is iostudy.collect.placement's to parse: here only "<POSIX(BRICK):" is
 * looked for. Header-only: each benchmark is one C file. */
#ifndef IOSTUDY_GLUSTER_H
#define IOSTUDY_GLUSTER_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define GLUSTER_PATHINFO "trusted.glusterfs.pathinfo"
/* Candidates per file: with K bricks a name misses its brick with odds (1 - 1/K) each. */
#define GLUSTER_MAX_TRIES 256

/* Whether the file at path lies on brick (pathinfo's "<POSIX(BRICK):"); -errno when pathinfo
 * cannot be read (ENODATA or ENOTSUP: not on GlusterFS). */
static inline int gluster_on_brick(const char *path, const char *brick) {
    char info[4096], want[4096 + 16];
    ssize_t n = getxattr(path, GLUSTER_PATHINFO, info, sizeof info - 1);
    if (n < 0)
        return -errno;
    info[n] = '\0';
    snprintf(want, sizeof want, "<POSIX(%s):", brick);
    return strstr(info, want) != NULL;
}

/* Creates (empty) the first of STEM, STEM.1, ... that lies on brick, writing its path to out
 * (out_len bytes) and the suffix used to *suffix (0: STEM itself); the candidates tried before
 * are removed. 0, or an errno (ENOSPC when no candidate of GLUSTER_MAX_TRIES lies on it); *call
 * names the failing call. */
static inline int gluster_place(const char *stem, const char *brick, char *out, size_t out_len,
                                int *suffix, const char **call) {
    for (int i = 0; i < GLUSTER_MAX_TRIES; i++) {
        int n =
            i == 0 ? snprintf(out, out_len, "%s", stem) : snprintf(out, out_len, "%s.%d", stem, i);
        *call = "naming";
        if (n < 0 || (size_t)n >= out_len)
            return ENAMETOOLONG;
        *call = "open";
        int fd = open(out, O_CREAT | O_WRONLY, 0644);
        if (fd < 0)
            return errno;
        close(fd);
        *call = "getxattr " GLUSTER_PATHINFO;
        int on = gluster_on_brick(out, brick);
        if (on < 0)
            return -on;
        if (on) {
            *suffix = i;
            return 0;
        }
        *call = "unlink";
        if (unlink(out) != 0)
            return errno;
    }
    *call = "placing on its brick";
    return ENOSPC;
}

#endif
