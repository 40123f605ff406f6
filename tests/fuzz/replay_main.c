// Replays inputs through a libFuzzer harness without libFuzzer. The Makefile
// links it with each tests/fuzz/fuzz_<name>.c into build/replay_<name> (gcc,
// ASan + UBSan, no recovery), so the regression inputs in
// tests/fuzz/regress/<name>/ and the seed corpus run on every `make test`,
// with or without clang's libFuzzer.
//   build/replay_<name> FILE|DIR...   (a directory: its files, by name; dotfiles skipped)
// Prints "replaying PATH" before each input (a sanitizer report that follows
// names the input that caused it) and "replayed N inputs" at the end; exits 1
// when an input cannot be read, and a sanitizer error ends the process.
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

// Runs one file of n bytes through the harness; 1 if it cannot be read.
static int replay_file(const char *path, size_t n) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = malloc(n ? n : 1);   // exactly n bytes: ASan sees a read past the input's end
    int ok = f && buf && fread(buf, 1, n, f) == n;
    if (f) fclose(f);
    if (!ok) { free(buf); fprintf(stderr, "replay: cannot read %s\n", path); return 1; }
    printf("replaying %s (%zu bytes)\n", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    int inputs = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]); errors++; continue; }
        if (!S_ISDIR(st.st_mode)) { errors += replay_file(argv[i], (size_t)st.st_size); inputs++; continue; }
        struct dirent **names;
        int k = scandir(argv[i], &names, NULL, alphasort);
        if (k < 0) { fprintf(stderr, "replay: cannot list %s\n", argv[i]); errors++; continue; }
        for (int j = 0; j < k; j++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[j]->d_name);
            if (names[j]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) { errors += replay_file(path, (size_t)st.st_size); inputs++; }
            free(names[j]);
        }
        free(names);
    }
    printf("replayed %d inputs, %d unreadable\n", inputs, errors);
    return errors ? 1 : 0;
}
