/* The wrapper dialect: the skeleton every module's wrappers share, so that a wrapper says only
 * what is its own (its real call, what succeeded means, what it records).
 *
 * Names: a macro that writes (part of) a module's wrappers is named after its module,
 * <MODULE>_WRAP[_<WHAT>] (POSIX_WRAP_OPEN, STDIO_WRAP_SEEK, H5F_WRAP_OPEN, MPIIO_WRAP, PNC_WRAP,
 * EXEC_WRAP); the skeleton they are built of is IOS_*, defined here once:
 *   IOS_REAL(name), IOS_CALL(name) (iostudy.h): the real libc function, resolved at first use;
 *   IOS_NEXT_REAL(type, params, symbol, library): `real`, the real function of a library found
 *     at the wrapper's first call (MPI, HDF5, PnetCDF; a missing one fails the call, ENOSYS);
 *   ios_recording(), ios_enter() and ios_leave() (iostudy.h): whether to record, and the
 *     guarded section around a record's update;
 *   IOS_TIMED_CALL(type, ret, call): t1, the real call's result in ret, t2;
 *   IOS_WRAP_TIMED(name, type, call): a libc wrapper's first half: straight through (return
 *     call) unless recording, else the call timed into ret, t1, t2;
 *   IOS_TIMED_CALL_NS, IOS_WRAP_TIMED_NS: the same with the times in nanoseconds, ns1, ns2
 *     (IOS_WRAP_TIMED_NS leaves the guard to ios_enter_unguarded, after the call);
 *   IOS_REAL_RECORDING(name): IOS_REAL where the runtime is known to have started;
 *   IOS_KEEP_ERRNO(stmt): stmt (recording may allocate) with the program's errno kept.
 * The read and write wrappers skip the last: recording there makes no call that sets errno. */
#ifndef IOS_WRAP_H
#define IOS_WRAP_H

#include "iostudy.h"

#define IOS_TIMED_CALL(type, ret, call)                                                            \
    double t1 = ios_now();                                                                         \
    IOS_COMPUTED_NOW(t1);                                                                          \
    type ret = call;                                                                               \
    double t2 = ios_now();                                                                         \
    IOS_COMPUTED_NOW(t2)
/* t is computed here, not where it is used: else the compiler keeps the clock's timespec and
 * the origin alive across the calls and branches between (spills and reloads), not one double. */
#if defined(__SSE2__)
#define IOS_COMPUTED_NOW(t) __asm__ volatile("" : "+x"(t))
#else
#define IOS_COMPUTED_NOW(t) __asm__ volatile("" : "+g"(t))
#endif
/* IOS_TIMED_CALL in nanoseconds, ns1 and ns2: the hot wrappers' form, which convert them to
 * seconds (ios_seconds) only once the real call has returned and succeeded. The clock's first
 * reading stays in its timespec, on the stack, until then: as an integer in a register it took
 * one more register to save, the arguments of the real call being held at that point too. */
#define IOS_TIMED_CALL_NS(type, ret, call)                                                         \
    struct timespec ios_ts1_, ios_ts2_;                                                            \
    clock_gettime(CLOCK_MONOTONIC, &ios_ts1_);                                                     \
    type ret = call;                                                                               \
    clock_gettime(CLOCK_MONOTONIC, &ios_ts2_);                                                     \
    int64_t ns1 = ios_ns_of(&ios_ts1_), ns2 = ios_ns_of(&ios_ts2_);                                \
    __asm__ volatile("" : "+r"(ns1), "+r"(ns2))

#define IOS_WRAP_TIMED(name, type, call)                                                           \
    if (!ios_recording()) {                                                                        \
        IOS_REAL(name);                                                                            \
        return call;                                                                               \
    }                                                                                              \
    IOS_REAL_RECORDING(name);                                                                      \
    IOS_TIMED_CALL(type, ret, call)
/* IOS_WRAP_TIMED with the times in nanoseconds, which looks at the state only: the record's
 * update must enter with ios_enter_unguarded, which looks at the guard (a load less). */
#define IOS_WRAP_TIMED_NS(name, type, call)                                                        \
    if (!ios_started()) {                                                                          \
        IOS_REAL(name);                                                                            \
        return call;                                                                               \
    }                                                                                              \
    IOS_REAL_RECORDING(name);                                                                      \
    IOS_TIMED_CALL_NS(type, ret, call)

/* The real functions the runtime resolves as it starts (core.c), before it records anything: a
 * signal handler may reach them first, and the runtime's own I/O uses them. A wrapper that
 * records (or found a tracked descriptor, mapped while recording) calls them unchecked, which
 * spares every read, write, open, close and stat a test. IOS_EARLY_<name> marks each one for
 * IOS_IS_EARLY (1 for a marked name, else 0); core.c checks that every listed one is marked. */
#define IOS_EARLY_REAL(X)                                                                          \
    X(open);                                                                                       \
    X(close);                                                                                      \
    X(read);                                                                                       \
    X(write);                                                                                      \
    X(pread);                                                                                      \
    X(pwrite);                                                                                     \
    X(lseek);                                                                                      \
    X(fstat);                                                                                      \
    X(stat);                                                                                       \
    X(mmap);                                                                                       \
    X(rename);                                                                                     \
    X(_exit);                                                                                      \
    X(execve);                                                                                     \
    X(execv);                                                                                      \
    X(execvp);                                                                                     \
    X(execvpe);                                                                                    \
    X(fexecve);                                                                                    \
    X(execveat);
#define IOS_EARLY_open ~, 1
#define IOS_EARLY_close ~, 1
#define IOS_EARLY_read ~, 1
#define IOS_EARLY_write ~, 1
#define IOS_EARLY_pread ~, 1
#define IOS_EARLY_pwrite ~, 1
#define IOS_EARLY_lseek ~, 1
#define IOS_EARLY_fstat ~, 1
#define IOS_EARLY_stat ~, 1
#define IOS_EARLY_mmap ~, 1
#define IOS_EARLY_rename ~, 1
#define IOS_EARLY__exit ~, 1
#define IOS_EARLY_execve ~, 1
#define IOS_EARLY_execv ~, 1
#define IOS_EARLY_execvp ~, 1
#define IOS_EARLY_execvpe ~, 1
#define IOS_EARLY_fexecve ~, 1
#define IOS_EARLY_execveat ~, 1
#define IOS_SECOND_(a, b, ...) b
#define IOS_PROBE_(...) IOS_SECOND_(__VA_ARGS__)
#define IOS_IS_EARLY(name) IOS_PROBE_(IOS_EARLY_##name, 0, )
/* IOS_REAL in a wrapper that records: nothing for an early function. */
#define IOS_REAL_RECORDING(name) (IOS_IS_EARLY(name) ? (void)0 : IOS_REAL(name))

#define IOS_NEXT_REAL(type, params, symbol, library)                                               \
    static type(*real) params;                                                                     \
    if (IOS_UNLIKELY(!real)) {                                                                     \
        real = ios_next_symbol(symbol, library);                                                   \
    }

#define IOS_KEEP_ERRNO(stmt)                                                                       \
    do {                                                                                           \
        int saved_errno_ = errno;                                                                  \
        stmt;                                                                                      \
        errno = saved_errno_;                                                                      \
    } while (0)

#endif
