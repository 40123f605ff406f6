// Runs the README's serving block (build/readme_api.c: the ```c blocks of
// README.md's "Using the header", extracted by the Makefile) on a model:
// tests/run.sh compares what it prints with `wd predict`.
// Usage: readme_serve MODEL.wdm
#include "readme_api.c"
int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s MODEL.wdm\n", argv[0]); return 2; }
    return serve(argv[1]);
}
