// One process per GPU (or per node), each training one rank of a job over
// NCCL, from a host program. Rank 0 makes the NCCL unique id and shares it
// through a file every rank can see (written to a temporary name, then
// renamed); with MPI the exchange is one call instead:
//     MPI_Bcast(id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
// Every rank creates the model with the same seed (identical replicas), reads
// its shard of the blocks, and rank 0 writes the checkpoint.
// Build: make build/multi_gpu (needs nvcc). Usage on each process:
//     multi_gpu RANK NRANKS BOOTSTRAP_FILE TRAIN.wdr OUT.wdm
#define WIDEDEEP_IMPLEMENTATION
#include "../widedeep.h"
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what) { fprintf(stderr, "%s: %s\n", what, wd_last_error()); return 1; }

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: %s RANK NRANKS BOOTSTRAP_FILE TRAIN.wdr OUT.wdm\n", argv[0]); return 2; }
    int rank = atoi(argv[1]), nranks = atoi(argv[2]);
    const char *boot = argv[3], *train = argv[4], *out = argv[5];
    char id[128];
    if (rank == 0) {
        if (wd_comm_nccl_unique_id(id, sizeof id)) return fail("unique id");
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", boot);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(id, 1, sizeof id, f) != sizeof id || fclose(f) != 0 || rename(tmp, boot) != 0) { perror(boot); return 1; }
    } else {
        FILE *f = NULL;
        for (int tries = 0; !f && tries < 600; tries++) { f = fopen(boot, "rb"); if (!f) sleep(1); }   // up to 10 minutes
        if (!f || fread(id, 1, sizeof id, f) != sizeof id) { fprintf(stderr, "%s: no bootstrap id from rank 0\n", boot); return 1; }
        fclose(f);
    }
    int ngpu = 0;
    if (wd_cuda_device_count(&ngpu)) return fail("GPUs");
    wd_comm *comm;
    if (wd_comm_nccl_init_rank(id, rank, nranks, rank % ngpu, &comm)) return fail("NCCL init");

    wd_reader *r;
    if (wd_reader_open(train, &r)) return fail(train);
    wd_model_desc md = {0};
    md.schema = wd_reader_schema(r);
    md.seed = 42;                        // the same on every rank: identical replicas
    wd_model *m;
    wd_status st = wd_model_create(&md, &m);
    wd_reader_close(r);
    if (st) return fail("model");

    const char *files[1] = {train};
    wd_train_desc td = {0};
    td.files = files; td.nfiles = 1;
    td.device = WD_DEVICE_CUDA;
    td.comm = comm; td.device_index = rank % ngpu;
    td.checkpoint_path = out;            // written by rank 0 only
    wd_train_report rep;
    st = wd_train(m, &td, &rep);
    if (st) { wd_comm_nccl_destroy(comm); wd_model_destroy(m); return fail("train"); }
    if (rank == 0) printf("trained %lld steps, %.0f samples/s over %d ranks; model in %s\n", (long long)rep.steps, rep.samples_per_s, nranks, out);
    wd_comm_nccl_destroy(comm);
    wd_model_destroy(m);
    return 0;
}
