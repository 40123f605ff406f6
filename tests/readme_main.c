// Runs the README's serving blocks (build/readme_api.c: the ```c blocks of
// README.md's "Using the header", extracted by the Makefile) on a model:
// serve(), and with --lines serve_lines() on the unlabeled lines of standard
// input through the model's own spec; tests/run.sh compares what each prints
// with `wd predict`.
// Usage: readme_serve MODEL.wdm [--lines]
#include "readme_api.c"
static int lines(const char *path) {
    wd_model *m;
    if (wd_model_load(path, &m)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    wd_text_spec spec;
    int rc = 1;
    if (wd_model_spec(m, &spec)) fprintf(stderr, "%s\n", wd_last_error());
    else { rc = serve_lines(m, &spec, stdin); wd_text_spec_free(&spec); }
    wd_model_destroy(m);
    return rc;
}
int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[2], "--lines")) return lines(argv[1]);
    if (argc != 2) { fprintf(stderr, "usage: %s MODEL.wdm [--lines]\n", argv[0]); return 2; }
    return serve(argv[1]);
}
