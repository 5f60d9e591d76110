/* iostudy-merge: merges the memory-mapped per-process logs of one job (left by a job that was
 * killed) into one compressed log, reducing files every process opened as the normal shutdown
 * does. The work is in libiostudy.so (logwrite.c), which shares the shutdown's code with it; run
 * it through `iostudy logs merge`, which also checks the result with PyDarshan. */
int iostudy_merge_main(int argc, char **argv);

int main(int argc, char **argv) { return iostudy_merge_main(argc, argv); }
