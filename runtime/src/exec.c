/* exec: the process image ends (its log is written first) and, if the call fails, goes on
 * (core.c: ios_core_before_exec, ios_core_exec_failed). execl, execlp and execle gather their
 * arguments and call the execv form, as glibc does; glibc's own calls inside it are not seen. */
#include "wrap.h"

#include <errno.h>
#include <unistd.h>

/* Calls the real exec; on return (a failure) the image records again, with exec's errno. */
#define EXEC_WRAP(name, call)                                                                      \
    do {                                                                                           \
        IOS_REAL(name);                                                                            \
        if (!ios_real.name) {                                                                      \
            errno = ENOSYS;                                                                        \
            return -1;                                                                             \
        }                                                                                          \
        int stopped = ios_core_before_exec();                                                      \
        int ret = call;                                                                            \
        IOS_KEEP_ERRNO(ios_core_exec_failed(stopped));                                             \
        return ret;                                                                                \
    } while (0)

IOS_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    EXEC_WRAP(execve, ios_real.execve(path, argv, envp));
}

IOS_EXPORT int execv(const char *path, char *const argv[]) {
    EXEC_WRAP(execv, ios_real.execv(path, argv));
}

IOS_EXPORT int execvp(const char *file, char *const argv[]) {
    EXEC_WRAP(execvp, ios_real.execvp(file, argv));
}

IOS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    EXEC_WRAP(execvpe, ios_real.execvpe(file, argv, envp));
}

IOS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    EXEC_WRAP(fexecve, ios_real.fexecve(fd, argv, envp));
}

IOS_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags) {
    EXEC_WRAP(execveat, ios_real.execveat(dirfd, path, argv, envp, flags));
}

/* The arguments of an execl form up to its NULL: their count first, then the array, which
 * lives on the caller's stack (exec may be called in a signal handler: no allocation). */
static size_t count_args(const char *arg, va_list ap) {
    size_t n = 1;
    while (arg && va_arg(ap, const char *))
        n++;
    return arg ? n : 0;
}

static void fill_args(char **argv, size_t n, const char *arg, va_list ap) {
    argv[0] = (char *)arg;
    for (size_t i = 1; i < n; i++)
        argv[i] = va_arg(ap, char *);
    argv[n] = NULL;
}

#define EXEC_GATHER_ARGS(argv, arg)                                                                \
    va_list ap;                                                                                    \
    va_start(ap, arg);                                                                             \
    size_t n_args = count_args(arg, ap);                                                           \
    va_end(ap);                                                                                    \
    char *argv[n_args + 1];                                                                        \
    va_start(ap, arg);                                                                             \
    fill_args(argv, n_args, arg, ap)

IOS_EXPORT int execl(const char *path, const char *arg, ...) {
    EXEC_GATHER_ARGS(argv, arg);
    va_end(ap);
    return execv(path, argv);
}

IOS_EXPORT int execlp(const char *file, const char *arg, ...) {
    EXEC_GATHER_ARGS(argv, arg);
    va_end(ap);
    return execvp(file, argv);
}

IOS_EXPORT int execle(const char *path, const char *arg, ...) {
    EXEC_GATHER_ARGS(argv, arg);
    if (n_args) /* the NULL that ends the arguments */
        (void)va_arg(ap, char *);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}
