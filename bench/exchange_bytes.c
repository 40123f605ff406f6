// Bytes one data-parallel step exchanges on N GPUs (widedeep_cuda.cu's
// exchange), measured on the batches of a .wdr file at 1, 2, 4 and 8 ranks:
// the dense gradient (allreduced: unchanged) and the sparse rows, whose
// allgather sent each rank's whole capacity before (every occurrence's slot:
// B x S rows of 8 + 4(1 + E) bytes, then a sort of N x B x S keys, mostly the
// sentinel) and now a block of `cap` merged rows (the header's wd_xcap: a
// quarter of the occurrences at first, then 1.25 x the most merged rows of a
// rank; a step whose rows do not fit is done again with the whole capacity,
// its bytes counted here too). Every rank's distinct (slot, id) keys are
// counted as the GPU's merge counts them.
// Usage: exchange_bytes DATA.wdr [BATCH_PER_RANK] [E] [STEPS]
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>

static int cmp64(const void *a, const void *b) { uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b; return x < y ? -1 : x > y; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: exchange_bytes DATA.wdr [BATCH_PER_RANK] [E] [STEPS]\n"); return 2; }
    int B = argc > 2 ? atoi(argv[2]) : 16384, E = argc > 3 ? atoi(argv[3]) : 16, S_steps = argc > 4 ? atoi(argv[4]) : 200;
    wd_reader *r;
    if (wd_reader_open(argv[1], &r)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    const wd_schema *s = wd_reader_schema(r);
    for (int k = 0; k < s->nslots; k++)
        if (s->slot[k].kind == WD_MULTI_HOT) { fprintf(stderr, "slot %s is multi-hot: this count covers one-hot slots only\n", s->slot[k].name); return 1; }
    wd_model_desc d;
    memset(&d, 0, sizeof d);
    d.schema = s; d.embed_dim = E;
    wd_plan p;
    if (wd_plan_from_desc(&d, B, 1, &p)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
    int64_t P = p.e[0].bytes / 4 + WD_STEP_TAIL;   // the allreduced floats (the plan's entries are 256-byte multiples: within 64 floats)
    int R = 1 + E;
    int64_t rows = (int64_t)B * s->nslots;          // the capacity: every occurrence of a rank's batch
    double row_bytes = 8 + 4.0 * R;
    printf("model: E=%d, MLP 1024-512-256, dense gradient + tail %lld floats = %.2f MB per allreduce; batch %d per rank, %lld occurrences; %d steps per rank count\n",
           E, (long long)P, 4.0 * P / 1e6, B, (long long)rows, S_steps);
    printf("ranks | merged rows per rank (mean; most of a rank, max over steps) | sent per rank, before: block of %lld rows | now: mean over the steps (rows) | now: after the cap's first move (cap) | steps done again | received per rank, before -> now (after the first move) | keys sorted after the exchange, before -> now | dense ring allreduce sent per rank\n",
           (long long)rows);
    int ranks_list[4] = {1, 2, 4, 8};
    uint64_t *keys = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)rows);
    if (!keys) return 1;
    for (int qi = 0; qi < 4; qi++) {
        int ranks = ranks_list[qi];
        wd_loader_desc ld;
        memset(&ld, 0, sizeof ld);
        const char *files[1] = {argv[1]};
        ld.files = files; ld.nfiles = 1; ld.batch_size = B * ranks; ld.threads = 2; ld.shuffle = 1; ld.seed = 1;
        ld.remainder = WD_REMAINDER_DROP;
        wd_loader *l;
        if (wd_loader_open(&ld, &l)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
        wd_xcap x;
        wd_xcap_init(&x, rows, 0);
        double uniq_sum = 0, most_max = 0, sent_new = 0;
        int steps = 0, redone = 0;
        for (int epoch = 0; steps < S_steps; epoch++) {   // epochs reshuffle the blocks: other batches
            if (wd_loader_reset(l, epoch, 0)) { fprintf(stderr, "%s\n", wd_last_error()); return 1; }
            const wd_batch *b;
            int got = 0;
            while (steps < S_steps && !wd_loader_next(l, &b) && b) {
                int64_t most = 0;
                for (int q = 0; q < ranks; q++) {   // rank q's share: samples [q B, (q + 1) B)
                    int64_t n = 0;
                    for (int i = q * B; i < (q + 1) * B && i < b->n; i++)
                        for (int k = 0; k < s->nslots; k++) keys[n++] = ((uint64_t)k << 40) | b->ids[k][i];
                    qsort(keys, (size_t)n, 8, cmp64);
                    int64_t u = 0;
                    for (int64_t j = 0; j < n; j++) u += j == 0 || keys[j] != keys[j - 1];
                    uniq_sum += (double)u;
                    most = WD__MAX(most, u);
                }
                int64_t cap = x.cap;
                int over = wd_xcap_step(&x, most);
                sent_new += 16 + row_bytes * (double)cap + (over ? 16 + row_bytes * (double)rows : 0);
                redone += over;
                most_max = WD__MAX(most_max, (double)most);
                steps++; got++;
            }
            if (!got) { fprintf(stderr, "%s: no batch of %d samples\n", argv[1], B * ranks); return 1; }
        }
        wd_loader_close(l);
        double before = 16 + row_bytes * (double)rows, now = sent_new / steps, steady = 16 + row_bytes * (double)x.cap;
        double ring = ranks > 1 ? 2.0 * (ranks - 1) / ranks * 4.0 * (double)P : 0;
        printf("%d | %.0f; %.0f | %.2f MB | %.2f MB (%.0f) | %.2f MB (%lld) | %d of %d | %.2f -> %.2f MB | %lld -> %lld | %.2f MB\n", ranks,
               uniq_sum / steps / ranks, most_max, before / 1e6, now / 1e6, (now - 16) / row_bytes, steady / 1e6, (long long)x.cap, redone, steps,
               (ranks - 1) * before / 1e6, (ranks - 1) * steady / 1e6, (long long)rows * ranks, (long long)x.cap * ranks, ring / 1e6);
    }
    free(keys);
    wd_reader_close(r);
    return 0;
}
