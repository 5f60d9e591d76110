/* A stand-in for a Lustre file system, for test_lustre.py (there is no Lustre here): fstatfs()
 * reports Lustre's magic number for files below IOSTUDY_FAKE_LUSTRE_DIR. Preloaded before
 * libiostudy.so, so that the runtime's fstatfs() reaches it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

int fstatfs(int fd, struct statfs *buf) {
    int (*real)(int, struct statfs *) = dlsym(RTLD_NEXT, "fstatfs");
    int ret = real(fd, buf);
    const char *dir = getenv("IOSTUDY_FAKE_LUSTRE_DIR");
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (ret == 0 && dir && n > 0) {
        path[n] = '\0';
        if (strncmp(path, dir, strlen(dir)) == 0)
            buf->f_type = 0x0BD00BD0; /* LL_SUPER_MAGIC */
    }
    return ret;
}
