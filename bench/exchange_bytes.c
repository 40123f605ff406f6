// Bytes one data-parallel step exchanges, for the multi-GPU plan: the dense
// gradient (allreduced) and the sparse rows (merged per rank, allgathered),
// measured on real batches of a .wdr file for 1, 2, 4 and 8 ranks.
// Usage: exchange_bytes DATA.wdr [BATCH_PER_RANK] [E] [HIDDEN...]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>

static int cmp64(const void *a, const void *b) { uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: exchange_bytes DATA.wdr [BATCH_PER_RANK] [E]\n"); return 2; }
    int B = argc > 2 ? atoi(argv[2]) : 16384, E = argc > 3 ? atoi(argv[3]) : 16;
    wd_reader *r;
    if (wd_reader_open(argv[1], &r)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    const wd_schema *s = wd_reader_schema(r);
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = s; d.embed_dim = E;
    wd_plan p;
    if (wd_plan_from_desc(&d, B, 1, &p)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    int64_t P = p.e[0].bytes / 4;
    int R = 1 + E;
    printf("model: E=%d, MLP 1024-512-256, dense gradient %lld floats = %.2f MB per allreduce\n", E, (long long)P, 4.0 * P / 1e6);
    int ranks_list[4] = {1, 2, 4, 8};
    for (int qi = 0; qi < 4; qi++) {
        int ranks = ranks_list[qi];
        int64_t need = (int64_t)B * ranks;
        wd_loader_desc ld;
        memset(&ld, 0, sizeof ld);
        const char *files[1] = {argv[1]};
        ld.files = files; ld.nfiles = 1; ld.batch_size = (int)need; ld.threads = 2; ld.shuffle = 1; ld.seed = 1;
        wd_loader *l;
        if (wd_loader_open(&ld, &l) || wd_loader_reset(l, 0, 0)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
        uint64_t *keys = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)B * (size_t)s->nslots);
        double uniq_sum = 0, steps = 0;
        const wd_batch *b;
        for (int step = 0; step < 20 && !wd_loader_next(l, &b) && b; step++) {
            for (int q = 0; q < ranks; q++) {   // rank q's share: samples [q*B, (q+1)*B)
                int64_t n = 0;
                for (int i = q * B; i < (q + 1) * B && i < b->n; i++)
                    for (int k = 0; k < s->nslots; k++) keys[n++] = ((uint64_t)k << 40) | b->ids[k][i];
                qsort(keys, (size_t)n, 8, cmp64);
                int64_t u = 0;
                for (int64_t j = 0; j < n; j++) u += j == 0 || keys[j] != keys[j - 1];
                uniq_sum += (double)u;
            }
            steps++;
        }
        double per_rank = uniq_sum / steps / ranks;            // unique rows one rank sends
        double sparse_bytes = per_rank * (8 + 4.0 * R);         // key + (wide, E) floats
        double ring = ranks > 1 ? 2.0 * (ranks - 1) / ranks * 4.0 * P : 0;   // ring allreduce bytes sent per rank
        double gather = ranks > 1 ? (ranks - 1) * sparse_bytes : 0;          // allgather bytes received per rank
        printf("ranks %d: unique rows per rank per step %.0f of %d occurrences; sparse rows sent per rank %.2f MB;"
               " per rank per step: ring allreduce %.2f MB + allgather %.2f MB = %.2f MB\n",
               ranks, per_rank, B * s->nslots, sparse_bytes / 1e6, ring / 1e6, gather / 1e6, (ring + gather) / 1e6);
        free(keys);
        wd_loader_close(l);
    }
    wd_reader_close(r);
    return 0;
}
