"""Darshan's access-size bins, defined once: the suffixes of their counters (POSIX_SIZE_READ_0_100
... _1G_PLUS, and MPI-IO's, HDF5's, PnetCDF's, DFS's and DAOS's), their edges in bytes, and the
label every table, caption and figure shows them by.

Darshan counts an access of n bytes in the first bin whose upper edge is at least n
(darshan-runtime/lib/darshan-common.h, DARSHAN_BUCKET_INC; iostudy's runtime the same,
runtime/src/iostudy.h's ios_size_bin): a bin holds the sizes over its lower edge up to and
including its upper one, and 1K is 1,024 bytes. The labels say so, each edge once as the end
of one bin ("to 1 MiB": 1,048,576 bytes included) and once as what the next bin is over
("over 1 MiB": from 1,048,577):

=========  ======================  =================================
suffix     label                   bytes
=========  ======================  =================================
0_100      0-100 B                 0 to 100
100_1K     over 100 B to 1 KiB     101 to 1,024
1K_10K     over 1 KiB to 10 KiB    1,025 to 10,240
10K_100K   over 10 KiB to 100 KiB  10,241 to 102,400
100K_1M    over 100 KiB to 1 MiB   102,401 to 1,048,576
1M_4M      over 1 MiB to 4 MiB     1,048,577 to 4,194,304
4M_10M     over 4 MiB to 10 MiB    4,194,305 to 10,485,760
10M_100M   over 10 MiB to 100 MiB  10,485,761 to 104,857,600
100M_1G    over 100 MiB to 1 GiB   104,857,601 to 1,073,741,824
1G_PLUS    over 1 GiB              1,073,741,825 and more
=========  ======================  =================================
"""

from __future__ import annotations

#: each bin's label, by its counter suffix, smallest first
LABELS = {
    "0_100": "0-100 B",
    "100_1K": "over 100 B to 1 KiB",
    "1K_10K": "over 1 KiB to 10 KiB",
    "10K_100K": "over 10 KiB to 100 KiB",
    "100K_1M": "over 100 KiB to 1 MiB",
    "1M_4M": "over 1 MiB to 4 MiB",
    "4M_10M": "over 4 MiB to 10 MiB",
    "10M_100M": "over 10 MiB to 100 MiB",
    "100M_1G": "over 100 MiB to 1 GiB",
    "1G_PLUS": "over 1 GiB",
}
#: the bins' counter suffixes, smallest first
NAMES = tuple(LABELS)
#: what a caption says of the labels, once
EDGES = (
    "each size bin holds its upper edge, as Darshan's do: 'over 100 KiB to 1 MiB' is 102,401 "
    "to 1,048,576 bytes"
)
