/* The table of modules (modules.def) that core, the log writer and the memory-mapped log go
 * through: one place says which modules there are, in which order, and what each can do. */
#include "iostudy.h"

const struct ios_module ios_modules[IOS_NMODULES] = {
#define X(NAME, id_, version_, rec_size_, collect_, reset_, reducer_, in_mmap_)                    \
    [IOS_M_##NAME] = {.name = #NAME,                                                               \
                      .id = id_,                                                                   \
                      .version = version_,                                                         \
                      .rec_size = rec_size_,                                                       \
                      .collect = collect_,                                                         \
                      .reset = reset_,                                                             \
                      .reducer = reducer_,                                                         \
                      .in_mmap = in_mmap_},
#include "modules.def"
#undef X
};
