// Scores raw text lines through a model file alone (wd_model_load,
// wd_model_spec, wd_parse_line, wd_predict): one %.9g probability per line,
// as `wd predict` prints them, to compare the two (bench/RESULTS.md, issue 20).
// Build: cc -std=c11 -O2 -DWD_USE_ONEDNN -I. -o build/raw_score bench/raw_score.c -lzstd -lz -lpthread -lm -ldnnl -lgomp
// Usage: raw_score MODEL.wdm TEXT [--header]   (--header: skip the first line, CSV)
#define WIDEDEEP_IMPLEMENTATION
#include "widedeep.h"
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s MODEL.wdm TEXT [--header]\n", argv[0]); return 2; }
    wd_model *m;
    wd_text_spec spec;
    if (wd_model_load(argv[1], &m)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    if (wd_model_spec(m, &spec)) { fprintf(stderr, "%s\n", wd_last_error()); wd_model_destroy(m); return 1; }
    FILE *f = fopen(argv[2], "r");
    if (!f) { perror(argv[2]); return 1; }
    wd_batch b;
    memset(&b, 0, sizeof b);
    if (wd_batch_init(&b, wd_model_schema(m), 1, 16)) return 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int first = argc > 3 && strcmp(argv[3], "--header") == 0, rc = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        if (first) { first = 0; continue; }
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        float p;
        b.n = 0;
        if (wd_parse_line(&spec, line, (size_t)n, &b) || wd_predict(m, &b, &p)) { fprintf(stderr, "%s\n", wd_last_error()); rc = 1; break; }
        printf("%.9g\n", (double)p);
    }
    free(line);
    fclose(f);
    wd_batch_free(&b);
    wd_text_spec_free(&spec);
    wd_model_destroy(m);
    return rc;
}
