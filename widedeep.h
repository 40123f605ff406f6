/* widedeep.h - an embeddable training runtime for Wide&Deep CTR models.
   version 0.1.0 - MIT licence (see end of file and LICENSE).

   Do this:
       #define WIDEDEEP_IMPLEMENTATION
   before you include this file in *one* C or C++ file to create the
   implementation. Link with -lzstd -lz -lpthread -lm (and the GEMM engine:
   see GEMM ENGINE below; WD_NO_ZLIB drops -lz and gzip input).

   ---------------------------------------------------------------------------
   TABLE OF CONTENTS (search for the "// ---- N." rules; tiers: "// ==== tier N")
   The declarations come in three tiers, the calls most programs need first;
   sections keep their numbers (and the implementation their order):
     1. Options        compile-time switches (WDDEF, WD_STATIC, WD_MAX_SLOTS, ...)
     2. Status         wd_status codes, wd_status_string(), wd_last_error()
                       (a call's first error), wd_set_last_error()
   tier 1: the calls a user needs
     4. Schema         dense column count; per slot name, buckets, one/multi-hot
    13. Model          wd_model_*: the Wide&Deep model, its optimizers;
                       wd_cross_hash(): the cross rule
    15. Training       wd_train() (failing fast; the processes' settings check),
                       wd_evaluate(), wd_predict(); wd_predictor_*:
                       a serving thread's reusable prediction context; streams
                       (desc.source, wd_trainer_push; raw lines growing
                       the vocabulary: wd_trainer_push_lines), online
                       learning (publish_every, wd_model_publish); hot swap
                       (wd_model_swap); wd_cuda_desc: the CUDA device's
                       settings, their environment overrides in one table
    16. Checkpoints    wd_model_save(), wd_model_load(): the .wdm format;
                       wd_model_load_weights(): for serving, no optimizer
                       state; wd_model_get_info(): what a model holds (a
                       report's); wd_model_spec(): the model's own input format
     9. Convert        wd_convert(): text files -> .wdr on T threads
   tier 2: data formats and building blocks
     3. Allocator      wd_set_allocator(): hooks for every allocation
     5. Batch          decoded samples in memory (label, weight, dense, ids)
     6. Hashing        wd_hash_bytes(), wd_hash_bucket(): categorical strings
     7. Records        the .wdr file format, wd_writer_*, wd_reader_*
     8. Text parsers   Criteo TSV, LibSVM, CSV lines -> one sample (labeled or
                       not); wd_batch_add: a request's raw values (sized,
                       the dense rule applied) -> one sample;
                       wd_text_spec_compare: the one comparison of input
                       contracts (files, models, requests)
    10. Synthetic      wd_gen(): Criteo-shaped data from a planted model
    11. Metrics        wd_auc(): exact sort-based AUC, ties counted half
    12. Loader         wd_loader_*: batch-then-map pipeline with budgets
    14. Communicator   wd_comm: allreduce/allgather/barrier/abort between ranks
                       (threads; MPI processes with WD_USE_MPI; NCCL with WD_HAVE_CUDA)
    18. ONNX export    wd_model_export_onnx(): the model as an ONNX graph;
                       _values(): raw strings mapped in it (LabelEncoder)
    19. TensorBoard    wd_tb_*: scalars in TensorBoard event files
    20. Arrow streams  the Arrow C Data/Stream structs; wd_text_spec_arrow,
                       wd_convert from a stream, wd_arrow_reader_* (a
                       training source): columns mapped as CSV's
   tier 3: internal, declared only where WIDEDEEP_IMPLEMENTATION or
   WIDEDEEP_INTERNAL is defined (widedeep_cuda.cu, tools/wd.c, the backends' tests)
     2. Status         wd_error_hold: clean-up keeps the first error
    13. Model          wd_opt*: the per-coordinate update rules; wd_bf16_bits
    17. Device         wd_model_view, wd_backend_ops, wd_device_ops, wd_plan,
                       wd_xcap, wd_cuda_desc_resolve, wd_comm_timeout,
                       wd_test_fail_parse, wd_rank_failure: what
                       widedeep_cuda.cu builds on
   (the implementation follows in numeric order, 1 to 20, under
   WIDEDEEP_IMPLEMENTATION, with these subsections, found by their "// ---- name" rules:)
     7.  little-endian helpers, CRC32C; reader
     8.  ordered parallel block pipeline (convert's and gen's threads)
     13. CPU kernels: GEMM engines (oneDNN, CBLAS, portable loops), bf16
         conversion, forward, backward, sparse row merging, optimizers
     15. a team (persistent worker threads); the CPU backend; a device's
         backend (CUDA found at link time); the input contract; evaluation;
         a training run; the processes' settings check; the training loop
         (one per rank, the same for every backend); the failure policy:
         fail fast; wd_train; online learning: published snapshots; hot
         swap; a trainer (pushing batches); prediction (wd_predictor)
     18. protobuf encoder (also section 19's); the ONNX graph

   QUICK START (README.md's "Using the header" is the whole example, with
   error handling and serving; examples/ holds a C trainer, a C++ server):
       wd_reader *r;  wd_reader_open("day1.wdr", &r);    // from `wd convert`
       wd_model_desc md;  memset(&md, 0, sizeof md);    // 0: defaults
       md.schema = wd_reader_schema(r);
       wd_model *m;   wd_model_create(&md, &m);  wd_reader_close(r);
       wd_train_desc td;  memset(&td, 0, sizeof td);
       const char *files[] = {"day1.wdr"};  td.files = files;  td.nfiles = 1;
       wd_train(m, &td, NULL);                          // every call: wd_status
       wd_model_save(m, "ctr.wdm");                     // serving: wd_model_load, wd_model_spec,
                                                        // wd_parse_line, wd_predict (section 16)

   ---------------------------------------------------------------------------
   SIZE LETTERS used in shape comments:
     B batch (samples)   S slots   E embedding dim   D dense features
     H hidden width      N ids (multi-hot, total in a batch)

   ---------------------------------------------------------------------------
   ERRORS. Every call that can fail returns a wd_status (WD_OK = 0) and
   hands objects back through out-pointers. wd_last_error() returns a
   per-thread message naming the file, block or line that failed. The
   first error of a call wins: the clean-up after it (closes, frees,
   destroys, rollbacks) and the release calls that return void never
   rewrite the message (wd_error_hold, internal). The library never prints, never
   calls exit() or abort(); all its resources are released on every error
   path. The threads it starts block asynchronous signals (SIGINT, SIGTERM,
   SIGPIPE, ...): a signal sent to the process runs the application's
   handler on one of the application's threads.

   DENSE FEATURE RULE (convert, gen). Integer counts x become
       f(x) = log1p(x)      for x >= 0
       f(x) = -log1p(-x)    for x <  0    (Criteo's I2 holds negatives)
       f(missing) = 0
   so no input can produce NaN or Inf. A .wdr file can never hold a
   non-finite dense value or label: the writer rejects them and the reader
   verifies every block it decodes.

   CATEGORICAL RULE. A categorical string s of slot k becomes the id
   wd_hash_bytes(s, len, k) % buckets[k]. An empty field (missing) hashes
   like the empty string: all missing values of a slot share one bucket.

   GEMM ENGINE. The MLP's matrix products use a portable C loop nest by
   default. Define WD_USE_ONEDNN (link -ldnnl -lgomp) for oneDNN, which
   dispatches on the CPU's instruction set and computes BF16; or
   WD_USE_CBLAS (link a CBLAS; with OpenBLAS also WD_USE_OPENBLAS). The
   Makefile picks oneDNN when libdnnl-dev is installed, else OpenBLAS, else
   the loops; reports name the engine, instruction set and precision.

   RESOURCE LIMITS. Nothing recurses. Every size read from a file (block
   counts, sample counts, byte counts, slot counts, bucket counts, model
   table sizes) is checked against the file's size and the WD_MAX_* limits
   before any allocation is made from it: a corrupt header cannot make the
   library allocate more than the file could hold. Readers stream: a block
   at a time (at most WD_MAX_BLOCK_BYTES raw), so files larger than memory
   are read in constant memory; the loader holds at most its ram_bytes
   budget of decoded data. Reading a file needs at most twice its largest
   block's decompressed bytes per decoding thread (a block and the batch it
   fills; wd_reader_* use one thread, the loader is bounded by its budget),
   whatever the file's sample count. Allocations that grow (batches,
   buffers) grow geometrically from sizes the data has proved. Models,
   batches and blocks of 64 MiB or more are compared with the memory the
   process can still get (MemAvailable, ulimit -v, the cgroup limit,
   WD_MEMORY_LIMIT) first: too much is WD_ERR_NOMEM naming both sizes, not
   the OOM killer. Every allocation goes through wd_set_allocator's hooks
   and every failure returns WD_ERR_NOMEM with nothing leaked
   (tests/test_faults.c fails each in turn).

   HISTORY
     0.1.0  .wdr format v1, writer, reader, convert, gen, AUC; the model,
            its CPU trainer and the CUDA backend; .wdm checkpoints v1.
     0.1.x  (unreleased), one change a line:
            - one training loop for every backend (wd_backend_ops)
            - the CUDA backend found at link time (a weak reference); WD_STATIC
            - oneDNN GEMMs and bf16 precision
            - the backward's elementwise work in one pass per layer; bf16 activations written by the products
            - early stop and keep best (early_stop, keep_best)
            - .wdm v2: the training files' fingerprint (v1 loads)
            - .wdr v2: vocabularies (v1 reads)
            - gzip, zstd, stdin and CSV input; tables sized from the data
            - memory checked before large allocations (MemAvailable, ulimit -v, the cgroup, WD_MEMORY_LIMIT)
            - the model is the contract: .wdr v3 records the input format (v1, v2 read); wd_model_spec
            - .wdm v3: the training files' input format and vocabularies (v1, v2 load)
            - specs own their vocabulary (wd_text_spec_free)
            - vocabulary fingerprints checked wherever files meet a model
            - one comparison of the whole input contract where a file or a request meets a model (wd_text_spec_compare)
            - no slot derived from the label
            - wd gen's files record the Criteo format
            - ids files bound to their data (wd_ids_check)
            - vocabularies that grow: vocab_capacity, extend_vocab (wd convert --vocab-capacity, --extend-vocab)
            - a model records a training file's longer vocabulary
            - wd_oov: convert, train and evaluate report the out-of-vocabulary share
            - wd_batch_add: a request's raw values, sized (counts checked, the dense rule applied; wd_batch_add_n in it)
            - wd_parse_unlabeled, wd_batch_clear
            - training from a batch source (desc.source) through the same loop
            - training from pushed batches (wd_trainer_*) through the same loop
            - wd_trainer_push_lines: raw lines that grow the vocabulary in memory, as convert --extend-vocab does
            - snapshots published for predictions during training (publish_every, wd_model_publish)
            - wd_model_swap: hot swap under live predictors
            - wd_predictor: serving with no allocation per call, the engine's threads per call
            - wd_model_load_weights: a served model without optimizer state
            - a checkpoint written after an error holds the last finished step, marked so (wd_model_after_error)
            - ONNX export (wd_model_export_onnx; _values: raw strings mapped in the graph)
            - TensorBoard event files (wd_tb_*)
            - progress with stage times
            - a validation a tenth into the second epoch
            - MPI processes (WD_USE_MPI: wd_comm_mpi_create, wd_comm_nccl_init_mpi)
            - MPI calls in chunks of at most 1 GiB per rank (WD_MPI_CHUNK_BYTES): any size gathers
            - validation split across the ranks, the scores gathered in file order (exact AUC)
            - the multi-GPU exchange in blocks of a cap that follows the merged rows (wd_xcap); a step over it is redone
            - the CUDA backend: precision bf16
            - the CUDA backend: cuBLASLt's ReLU-mask epilogues (WD_CUDA_EPILOGUE)
            - fail fast: any rank's error aborts the communicator; every rank ends naming the failed rank and why
            - the processes' settings checked once before training (a difference refused naming rank and setting)
            - removed: the failure votes, wd_backend_ops.reach and submit_failure, wd_train_fail (abort the comm)
            - wd_backend_ops arithmetic only, designated initialisers; wd_device_ops: GPUs counted, their comms
            - test hooks (WD_CPU_TEST_FAIL, WD_CUDA_TEST_FAIL) compiled only under WD_TESTING
            - one WD_COMM_TIMEOUT rule (wd_comm_timeout, 600 s by default) for every communicator, the CPU workers' too
            - wd_rank_failure: the one wording of "rank R failed (status): reason"
            - MPI after an abort: wd_comm_mpi_destroy keeps an aborted communicator (MPI must not be finalized)
            - wd_cuda_desc (wd_train_desc.cuda, wd_eval_desc.cuda): the CUDA settings; WD_CUDA_* are overrides
            - a failed GPU step whose updates ran leaves the replica unsafe: no download, save or publish of it
            - Arrow C streams: wd_text_spec_arrow, wd_convert from a stream, wd_arrow_reader_* (a training source)
            - an Arrow reader decodes ahead within the budgets of its desc (wd_arrow_reader_desc: threads, ram_bytes)
            - an Arrow reader's read-ahead: 1 thread by default, also as a GPU run's source (was cores / ranks)
            - removed: wd_env_number (wd_comm_timeout, internal, reads WD_COMM_TIMEOUT)
            - the Python package (python/): the header through a CPython extension
            - the first error of a call wins: clean-up never rewrites wd_last_error() (wd_error_hold)
            - the library's threads block asynchronous signals: a process's signals run the application's handlers only
            - wd_gemm_engine_name, wd_memory_available, wd_temp_name, wd_same_file: the CLI uses public calls only
            - status: a caller's label outside [0,1] or id outside its slot: WD_ERR_INVALID_ARG (was NUMERIC / CORRUPT)
            - status: such a label in a file: WD_ERR_CORRUPT (was NUMERIC); NaN and Inf stay WD_ERR_NUMERIC
            - the declarations in three tiers: the calls a user needs, data formats, internal (WIDEDEEP_INTERNAL)
            - wd_model_get_info, WD_WDM_MAGIC: the CLI compiles against the declarations, the implementation at its end
*/
#ifndef WIDEDEEP_H
#define WIDEDEEP_H

// The implementation uses POSIX (pread, O_CLOEXEC, clock_gettime): it asks
// libc for them with _GNU_SOURCE, and where a libc header came first under
// -std=c11 (too late for that; this header's own, where a file included it
// for its declarations before defining WIDEDEEP_IMPLEMENTATION and including
// it again) it declares the few it needs itself.
#if defined(WIDEDEEP_IMPLEMENTATION) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#ifdef WD_USE_MPI                  // section 14's MPI communicator: MPI's C API (not its C++ bindings)
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <sched.h>
#endif

// ---- 1. Options -------------------------------------------------------------
// WD_STATIC: every function static to the file that defines
// WIDEDEEP_IMPLEMENTATION (and none of them an unused-function warning), so
// that two libraries of one program can each embed their own copy (own
// allocator hooks, own errors); that file is then the only one that can
// call them, and the CUDA backend, which links against the extern
// functions, is not available.
#ifdef WD_STATIC
#define WD__DECLS_STATIC        // the declarations were made static (checked again by the implementation)
#if defined(__GNUC__) || defined(__clang__)
#define WDDEF static __attribute__((unused))
#else
#define WDDEF static
#endif
#endif
#ifndef WDDEF
#define WDDEF extern
#endif
#ifndef WD_MAX_SLOTS            // slots per schema (Criteo 26, Avazu 22)
#define WD_MAX_SLOTS 128
#endif
#define WD_NAME_MAX 32          // slot name bytes, NUL included
#ifndef WD_MAX_WEIGHT           // largest sample weight a batch may hold (a million unweighted samples)
#define WD_MAX_WEIGHT 1e6f
#endif
#ifndef WD_MAX_SKIPPED          // a stream's batches in a row whose steps are not finite (skipped) before training ends
#define WD_MAX_SKIPPED 8
#endif
#ifndef WD_MAX_BLOCK_SAMPLES    // largest block a reader accepts
#define WD_MAX_BLOCK_SAMPLES (1 << 22)
#endif
#ifndef WD_MAX_DENSE            // dense columns per schema
#define WD_MAX_DENSE 1024
#endif
#ifndef WD_MAX_BLOCK_BYTES      // largest raw or compressed block payload
#define WD_MAX_BLOCK_BYTES ((uint32_t)1 << 31)
#endif
#define WD_DEFAULT_BLOCK_SAMPLES 4096
#define WD_DEFAULT_BUCKETS (1u << 20)
#define WD_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

// ---- 2. Status --------------------------------------------------------------
typedef enum wd_status {
    WD_OK = 0,
    WD_ERR_INVALID_ARG,     // a NULL, out-of-range or inconsistent argument
    WD_ERR_NOMEM,           // an allocation failed (or the hook refused it)
    WD_ERR_IO,              // open/read/write/rename/fsync failed
    WD_ERR_FORMAT,          // not a file of this kind, or an unknown version
    WD_ERR_CORRUPT,         // checksum, size or structure check failed
    WD_ERR_SCHEMA,          // schemas that must match do not
    WD_ERR_PARSE,           // a text line could not be parsed
    WD_ERR_LIMIT,           // a size exceeds a WD_MAX_* limit
    WD_ERR_NUMERIC,         // NaN or Inf where a finite number is required
    WD_ERR_ABORTED,         // cancelled by a callback or another rank
    WD_ERR_UNSUPPORTED,     // not built in, or no such device
    WD_ERR_DEVICE,          // a CUDA, cuBLAS or NCCL call failed (the message names it)
    WD_ERR_INTERNAL,        // a library bug: please report
    WD_STATUS_COUNT
} wd_status;

WDDEF const char *wd_status_string(wd_status s);
// This thread's message of the last failure. The first error of a call wins: the clean-up that follows a
// failure (closing, freeing, destroying, aborting, rolling back) never rewrites it, and neither do the
// release calls (wd_*_free, wd_*_destroy, wd_*_close that return void, wd_writer_abort) made after it.
WDDEF const char *wd_last_error(void);
// Sets this thread's detail message (for backends and callbacks returning a status).
WDDEF void wd_set_last_error(const char *msg);

// wd_error_hold (clean-up keeps the first error): internal, tier 3.

// ==== tier 1: the calls a user needs ===================================================================
// Sections 4 (the schema), 13 (the model), 15 (training, evaluation, wd_predict and the predictor,
// streams and trainers, publish and swap, the CUDA device's settings), 16 (checkpoints, the model's spec)
// and 9 (convert). Types of tier 2 they hold by pointer are declared first; wd_oov (section 8) and
// wd_map_fn (section 12), held by value, are defined here.
typedef struct wd_batch wd_batch;             // section 5
typedef struct wd_text_spec wd_text_spec;     // section 8
typedef struct wd_comm wd_comm;               // section 14
/* Out-of-vocabulary share. In a slot with a vocabulary, a value without an
   id of its own gets id 0; wd_oov counts those against every categorical
   value (all slots: hashed slots have no out-of-vocabulary id), overall and
   per slot. wd_convert, wd_train and wd_evaluate report it (the CLI prints
   the share and the worst slots): a share that climbs day after day says
   the vocabulary is stale (see wd_convert_desc.extend_vocab). */
typedef struct wd_oov {
    int64_t values, oov;            // categorical values, those with the out-of-vocabulary id
    int64_t slot_values[WD_MAX_SLOTS], slot_oov[WD_MAX_SLOTS];
} wd_oov;
// Called on each decoded block, on a loader thread; may change values in
// place (labels, weights, dense values, ids; not the sample count). What it
// leaves is checked like a decoded block (labels in [0,1], weights in
// [0, WD_MAX_WEIGHT], finite dense values, ids inside their buckets). A
// non-OK status stops the epoch with it.
typedef wd_status (*wd_map_fn)(void *user, wd_batch *block, int worker);

// ---- 4. Schema ----------------------------------------------------------------
typedef enum wd_slot_kind { WD_ONE_HOT = 0, WD_MULTI_HOT = 1 } wd_slot_kind;
typedef struct wd_slot {
    char name[WD_NAME_MAX];
    uint32_t buckets;       // ids are in [0, buckets)
    int kind;               // wd_slot_kind
} wd_slot;
typedef struct wd_schema {
    int ndense;             // D
    int nslots;             // S
    wd_slot slot[WD_MAX_SLOTS];
} wd_schema;

WDDEF wd_status wd_schema_check(const wd_schema *s);
WDDEF int wd_schema_equal(const wd_schema *a, const wd_schema *b);
// Criteo layout: 13 dense I1..I13, 26 one-hot slots C1..C26 with `buckets` each.
WDDEF void wd_schema_criteo(wd_schema *s, uint32_t buckets);

// ---- 13. Model -------------------------------------------------------------------------------
/* Wide part: one FTRL-Proximal weight per id of every slot, per bucket of
   every crossed slot pair (id pair hashed into cross_buckets), per dense
   feature, and a bias. Deep part: an embedding table (rows = buckets, E
   columns) per slot, pooled (sum or mean) over a multi-hot slot's ids,
   concatenated after the dense features into x = [dense (D) | emb_0 (E) | ...
   | emb_{S-1} (E)]; ReLU layers of `hidden` widths; one linear output.
   logit = wide + deep; p = sigmoid(logit); loss = weighted mean log loss.

   Initialisation (deterministic from seed): embedding values uniform in
   [-emb_init, emb_init]; layer weights uniform in +-sqrt(6/fan_in) (He) for
   ReLU layers and +-sqrt(6/(fan_in+1)) for the output; biases, wide weights
   and FTRL state 0; Adagrad accumulators adagrad_init (default 0).

   Optimizers. Deep (embeddings and MLP), Adagrad: acc += g^2,
   w -= lr_deep * g / (sqrt(acc) + 1e-10) (PyTorch's form). Adam: m = b1 m + (1-b1) g,
   v = b2 v + (1-b2) g^2, w -= lr_deep * mhat / (sqrt(vhat) + eps) with
   bias correction by the global step; embedding rows are updated lazily
   (only rows seen in the batch). Wide, FTRL-Proximal per coordinate with
   alpha = lr_wide: sigma = (sqrt(n + g^2) - sqrt(n)) / alpha;
   z += g - sigma w; n += g^2; w = 0 if |z| <= l1 or n = 0 else
   -(z - sign(z) l1) / ((beta + sqrt(n)) / alpha + l2).
   Both adapt per coordinate, so with beta = 0 and a zero initial Adagrad
   accumulator (the defaults) an update does not shrink with the batch size:
   batch-mean gradients of rare ids are tiny, and a beta of 1 or an
   accumulator of 0.1 (per-sample-gradient habits) would all but freeze them.
   The gradient of a batch is the weighted mean over its samples; ids
   repeated within a batch are merged (summed) before one update per row,
   and only rows seen in the batch are touched.

   Crosses. Crossed pair c (0-based) of one-hot slots (p, q) with ids a, b
   lands in row cross_bucket(a, b, c) = mix64((a << 32 | b) ^ ((c + 1) *
   0x9E3779B97F4A7C15)) % cross_buckets of its wide table, where mix64 is
   the splitmix64 finalizer: x ^= x >> 30; x *= 0xbf58476d1ce4e5b9;
   x ^= x >> 27; x *= 0x94d049bb133111eb; x ^= x >> 31 (64-bit, wrapping).
   Multi-hot slots (pooling). The deep input of a multi-hot slot is the sum
   (or, with mean pooling, the mean) of its ids' embedding rows, zeros when
   it has none; its wide term is the sum (mean) of its ids' wide weights. */
#define WD_MAX_LAYERS 8
#define WD_MAX_CROSSES 32
typedef enum wd_optimizer { WD_ADAGRAD = 0, WD_ADAM = 1 } wd_optimizer;
typedef enum wd_pooling { WD_POOL_SUM = 0, WD_POOL_MEAN = 1 } wd_pooling;
// BF16: the MLP's matrix products take bf16 inputs (weights, activations,
// gradients rounded to nearest even, subnormals to zero, as AVX512-BF16's
// VCVTNEPS2BF16) and accumulate in fp32; a hidden layer's product writes its
// activations as bf16 directly (ReLU' reads them); parameters, the logit,
// optimizer state and checkpoints stay fp32. The CPU needs AVX512-BF16 or
// AMX-BF16 and the oneDNN engine; elsewhere training and prediction refuse
// it with a message naming what is missing. The CUDA backend computes it
// too, rounding the same tensors at the same points (wd_bf16_bits; its
// products accumulate in fp32 in cuBLASLt's order, not oneDNN's:
// widedeep_cuda.cu's Precision note). Everything else stays fp32.
typedef enum wd_precision { WD_PRECISION_FP32 = 0, WD_PRECISION_BF16 = 1 } wd_precision;
// The CPU GEMM engine this build uses: "onednn", "openblas", "cblas" or "portable".
WDDEF const char *wd_gemm_engine_name(void);
typedef struct wd_model_desc {
    const wd_schema *schema;        // required (copied)
    int embed_dim;                  // E (0: 16)
    int hidden[WD_MAX_LAYERS];      // widths; all 0: 1024, 512, 256
    int optimizer;                  // wd_optimizer for the deep part (0: Adagrad)
    float lr_deep;                  // (0: 0.01 Adagrad, 0.001 Adam)
    float lr_wide;                  // FTRL alpha (0: 0.05)
    float ftrl_beta, ftrl_l1, ftrl_l2;   // (0: 0, 0, 0)
    float adagrad_init;             // initial accumulator (0: 0)
    float adam_beta1, adam_beta2, adam_eps;   // (0: 0.9, 0.999, 1e-8)
    float emb_init;                 // (0: 0.05)
    int pooling;                    // wd_pooling for multi-hot slots (0: sum)
    int ncross;
    int cross[WD_MAX_CROSSES][2];   // pairs of one-hot slot indexes
    uint32_t cross_buckets;         // (0: 1<<20)
    int no_wide, no_deep;           // 1 switches a part off (no_deep: logistic regression)
    uint64_t seed;
    int precision;                  // wd_precision of the MLP's matrix products (0: fp32)
} wd_model_desc;

typedef struct wd_model wd_model;
WDDEF wd_status wd_model_create(const wd_model_desc *d, wd_model **out);
WDDEF void wd_model_destroy(wd_model *m);
// The description with every default filled in.
WDDEF const wd_model_desc *wd_model_description(const wd_model *m);
WDDEF const wd_schema *wd_model_schema(const wd_model *m);
// Bytes of parameters and optimizer state.
WDDEF int64_t wd_model_bytes(const wd_model *m);
// Where training stopped: epoch, batches done in it, global step. wd_train
// continues from there; it reuses the stored batch size when the train desc
// gives none, and refuses a different one in the middle of an epoch.
WDDEF void wd_model_position(const wd_model *m, int64_t *epoch, int64_t *batch, int64_t *step);
// Warm start: keeps the weights, optimizer state and step count, and starts a
// new pass over new data (epoch 0, batch 0, any batch size). wd_train
// refuses to resume a checkpoint over other files than it was written for
// (it would train nothing, or the wrong part); call this first to continue
// training on new data (the CLI's --init-from).
WDDEF void wd_model_new_run(wd_model *m);
// 1 if the model was saved by wd_train after an error (a training file that
// went bad, a failed validation, a non-finite step...): it holds the state
// after the last step that finished before the error, at the position
// wd_model_position gives, and resumes from there. wd_train and
// wd_model_new_run clear it.
WDDEF int wd_model_after_error(const wd_model *m);

/* The id hashes and (tier 3's section 13) the per-coordinate update rules, written
   once: every backend calls these (nvcc compiles them for the device too), so
   a hash's or an optimizer's math lives in one place. */
#if defined(__CUDACC__)
#define WD_HD __host__ __device__
#else
#define WD_HD
#endif
// splitmix64's finalizer (section 13's cross rule, and the id hash's mixer).
static inline WD_HD uint64_t wd_mix64(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}
static inline WD_HD uint32_t wd_cross_hash(uint32_t a, uint32_t b, int c, uint32_t buckets) {
    return buckets
        ? (uint32_t)(wd_mix64(((uint64_t)a << 32 | b)
                              ^ ((uint64_t)(c + 1) * UINT64_C(0x9E3779B97F4A7C15))) % buckets) : 0;
}

// ---- 15. Training, evaluation, prediction ------------------------------------------------------
/* One training loop drives every device: per rank (one per GPU; the CPU is
   one rank whose `threads` workers split each batch) it pulls batches from
   its loader shard, runs the device's step (section 17's wd_backend_ops),
   and on rank 0 counts samples, reports progress and saves checkpoints.
   Validation is every rank's: each scores its share of the validation
   blocks (block j on rank j % ranks) and the scores are gathered back in
   file order, so the AUC and log loss are exact over every sample, the
   same on every rank (early stop judges alike) and, where the predictions
   are, bit for bit those of one rank scoring them all. Every option means
   the same on every device.

   Stopping early: the progress callback returns nonzero to stop at the next
   step boundary; wd_train then saves the checkpoint (checkpoint_path), sets
   report.stopped and returns WD_ERR_ABORTED; the model holds the last
   finished step and its position, so training can resume from it. Over
   several processes one process's callback stops every process at the same
   step; the others return WD_OK with report.stopped 3 (early stopping is
   decided alike on every process: 2 everywhere). The library installs no
   signal handlers: a program turns SIGINT into such a stop (tools/wd.c
   shows how).

   Training from the application's data (a stream). Instead of files, the
   desc's `source` hands the same loop one batch per step (impressions and
   clicks in memory, a message queue); wd_trainer_* below push batches from
   the application's own thread through it. Each batch holds 1..batch_size
   samples of the model's schema (checked like a decoded block: labels in
   [0,1], weights in [0, WD_MAX_WEIGHT], finite dense values, ids inside
   their buckets, CSR offsets); a shorter one is padded to batch_size with
   weight-0 samples, as the loader pads an epoch's last batch, so a stream of the samples of a
   .wdr in file order, batch_size at a time, trains the bit-identical model
   of wd_train over the file with no_shuffle. Validation (eval_every, and
   once at the end of the stream), checkpoints, max_steps, the progress
   callback's stop and publishing work as with files. A stream has no
   epochs (`epochs` must be 0): the position's step advances, epoch and
   batch stay 0 and no training files are recorded, so a saved model
   resumes a stream from its step count (Adam's bias correction included);
   which samples come next is the application's to know (the batches of
   its steps since the stream's first step were consumed, and the skipped
   ones below: report.skipped). A model in the
   middle of a run over files is refused: call wd_model_new_run first. One
   rank only (CPU, or one GPU). A stream's step that is not finite (a
   non-finite loss, or gradients beyond 1e15: dense values near 1e30, say)
   is skipped and training goes on: a step is applied whole or not at all
   (the gradient is checked before any parameter is written), the batch is
   not trained and does not count as a step (max_steps counts trained
   steps); the progress callback gets a call of its own with
   wd_progress.warning naming the batch (the source's count from 0; a
   trainer's: its pushes') and the step, and the report counts it (skipped,
   warning). Each skip makes the backend again from the model (with a GPU:
   the model's download and upload). A checkpoint of checkpoint_every that
   cannot be written (WD_ERR_IO: a full disk) is reported the same way
   (checkpoints_failed; the one before it stays on disk) and the next one
   tries again. Training still ends at an update that left the model
   unsound (naming the batch), at the WD_MAX_SKIPPED-th (8) batch in a row
   skipped (a diverged model; WD_ERR_NUMERIC naming the batch), at a device
   error, the source's error (naming the batch), and a checkpoint that
   fails otherwise (the model unsound); the final checkpoint, written at
   the end (a trainer's close), fails as with files.

   Online learning (publish_every). wd_predict and wd_predictor_run
   normally read the model's parameters in place, so they must not run
   during wd_train. After wd_model_publish(m), they read the latest
   published snapshot instead: a copy of the parameters (no optimizer
   state) taken between steps, so a prediction sees the model after some
   whole step, never a half-applied one, and the same snapshot for its
   whole batch (a predictor's call allocates nothing for it). wd_train
   with publish_every = K publishes when it starts, after every K-th step
   and when it ends (also when stopped; after an error predictions keep the
   last snapshot); predictions lag training by at most K steps. Cost: one
   snapshot's memory (4 bytes per parameter: dense, wide and embedding
   tables; no optimizer state), and per publish one copy of every parameter
   on the training thread (with a GPU backend, also the download of the
   model), plus two waits of at most one call each: for calls still reading
   the snapshot (calls that start meanwhile read the model in place, which no
   step changes during a publish), then for those calls (bench/online_bench.c).
   The snapshot stays in use until the model is destroyed or swapped: a later
   wd_train without publish_every publishes when it ends, also after an
   error (the steps it finished are valid). A trainer (below) publishes when
   it opens, if the model has no snapshot, so predictions never read the
   parameters it writes. */
typedef enum wd_device { WD_DEVICE_CPU = 0, WD_DEVICE_CUDA = 1 } wd_device;
#define WD_ALL_GPUS (-1)
// Where the time of the training loop goes (wd_train_report.stage_s, rank 0);
// the stages add up to train_s. The backends' stages differ at the edges: the
// GPU's sparse sort includes making the keys, its rows with one rank the
// checks before the updates, and with several ranks the second sort, the
// segments and the merge fall into comm. SORT and ROWS were inserted before
// COMM (issue 22): COMM, OPTIMIZER and OTHER are 2 higher than in earlier
// builds (rebuild against this header), and the CPU's OPTIMIZER no longer
// includes the workers' merge (earlier logs' figures are not comparable).
typedef enum wd_stage {
    WD_STAGE_DATA,                  // waiting for the loader's next batch
    WD_STAGE_H2D,                   // copying the batch to the device (GPU)
    WD_STAGE_EMBED,                 // embedding gather and pooling
    WD_STAGE_MLP_FWD,               // MLP forward
    WD_STAGE_WIDE,                  // wide logit and loss; wide and sparse gradient rows
    WD_STAGE_MLP_BWD,               // MLP backward
    WD_STAGE_SORT,                  // sparse keys sorted into runs of equal ids (CPU: inside each worker's merge)
    WD_STAGE_ROWS,                  // each run's gradient row summed (one rank's rows; the GPU's checks with one rank)
    WD_STAGE_COMM,                  // combining gradients between workers or ranks
    WD_STAGE_OPTIMIZER,             // the rows owned merged and checked (CPU), applying every update
    WD_STAGE_OTHER,                 // validation, checkpoints, progress and the rest
    WD_STAGE_COUNT
} wd_stage;
WDDEF const char *wd_stage_name(int stage);
typedef struct wd_progress {
    int64_t step, samples, epoch;
    double loss;                    // mean loss of the last step
    double samples_per_s, elapsed_s, eta_s;
    double valid_auc, valid_logloss;   // NaN unless this call follows an evaluation
    double stage_s[WD_STAGE_COUNT]; // rank 0's seconds per wd_stage so far (as wd_train_report.stage_s;
                                    // other: the rest of elapsed_s); stage_s[WD_STAGE_DATA] / elapsed_s
                                    // is the share of the time spent waiting for data
    double epoch_f;                 // epochs done, fractional: epoch + batches done in it / its batches
    const char *warning;            // a stream only: non-NULL in a call of its own when a batch was not
                                    // trained (a non-finite step, skipped) or a checkpoint not written;
                                    // the message names the batch and step; training goes on
} wd_progress;
// Called after every step and every validation on the thread of this
// process's first rank (rank 0 of a single-process run; each process of a
// job has its own), and (a stream) once per warning, with the step and loss
// of the last finished step; return nonzero to stop training at the next
// step boundary.
typedef int (*wd_progress_fn)(void *user, const wd_progress *p);
/* The CUDA backend's settings: wd_train_desc.cuda, and wd_eval_desc.cuda for
   evaluation (which reads fp32, no_epilogue, bf16_direct, no_overlap and
   max_bytes). Every field's 0 is the default, so a desc set to 0 with memset
   trains as before; the CPU device reads none of them. A value out of range
   is refused with WD_ERR_INVALID_ARG naming the field. The ranks of a job
   must agree on exchange_cap, exchange_full, check_tables and sparse (wd_train
   compares them before the first step, naming the rank and the setting).
   Environment overrides, for benchmarks and tests only (bench/gpu_run.sh
   times the paths side by side with them): a variable set and not empty
   replaces its field in wd_train and wd_evaluate on the CUDA device
   (section 17's wd_cuda_desc_resolve, the one reader of these variables;
   numbers as atof reads them); a value it cannot take is refused naming the
   variable.
     variable                  field            0: the default         the other values
     WD_CUDA_FP32=1            fp32             TF32 tensor cores      the MLP's GEMMs in full fp32 (fp32 models)
     WD_CUDA_EPILOGUE=0        no_epilogue      cuBLASLt's ReLU-mask   ReLU' by relu_grad, the bias gradients by column
                                                epilogues where it     sums (no RELU_AUX_BIAS, DRELU_BGRAD); the engine
                                                has an algorithm       line's mlp= says which layers fused
     WD_CUDA_BF16_DIRECT=1     bf16_direct      fp32 outputs, then     precision bf16: the epilogues offered a bf16
                                                rounded                output first
     WD_CUDA_GRAPH=0           no_graph         one rank: a graph      every step launched kernel by kernel
     WD_CUDA_OVERLAP=0         no_overlap       the sort on a branch   the step on one stream, the gather and the wide
                                                beside the MLP         logit apart (the same bits)
     WD_CUDA_SIDE_PRIORITY=1   side_priority    default priority       that branch at the device's greatest priority
     WD_CUDA_TIMING=1          timing           untimed                stages timed by events (no graph, no overlap)
     WD_CUDA_SPARSE=fused      sparse           _SEGMENTED: segment    WD_CUDA_SPARSE_FUSED: each run's row summed
       (or segmented)                           lists                  from dlogit and dx (engine line: sparse=)
     WD_EXCHANGE_CAP=N         exchange_cap     a quarter of the rows  several ranks: the exchange's first cap (rows a
                                                                       rank; then it follows the counts: wd_xcap)
     WD_EXCHANGE_FULL=1        exchange_full    the cap                several ranks: every exchange at the whole
                                                                       capacity, as before the cap
     WD_CHECK_TABLES=K         check_tables     never                  several ranks: the replicas' table checksums
                                                                       compared every K steps
     WD_CUDA_MAX_BYTES=N       max_bytes        the GPU's free memory  the plan may take at most N bytes of it
     WD_CUDA_FUSED_GRID=N      fused_grid       the blocks resident    tests only: sparse fused's grid-stride grids
                                                at once                at most N blocks (1..1048576; the same bits)
     WD_CUDA_OVERLAP_DELAY_US  overlap_delay_us no delay               tests only: the sort's branch starts U
       =U                                                              microseconds late
     WD_CUDA_TEST_FAIL=R:S     (none)           off                    tests only: rank R's S-th step fails
                                                                       (wd_test_fail_parse)
     WD_CUDA_TEST_READ_UNSAFE  (none)           off                    tests only: a download reads an unsafe
                                                                       replica (a failed step's) anyway
     WD_COMM_TIMEOUT=S         (none)           600 s                  the communicators' timeout, per process:
                                                                       the CPU device's workers, MPI, NCCL
                                                                       (wd_comm_timeout; 0, negative or not a
                                                                       number: 600 s)
     WD_NCCL_LIB=PATH          (none)           libnccl.so.2           the NCCL library loaded
   The rows without a field are read where they act (the failure hook, the
   communicators). fused_grid and overlap_delay_us are fields, not variables
   only, so that a test sets them per call (no setenv while ranks run). */
enum { WD_CUDA_SPARSE_SEGMENTED = 0, WD_CUDA_SPARSE_FUSED = 1 };
typedef struct wd_cuda_desc {
    int fp32, no_epilogue, bf16_direct;   // the MLP's products (0, 0, 0: TF32, epilogues, rounded after)
    int no_graph, no_overlap, side_priority, timing;   // how a step runs (0: graph, overlap, default, untimed)
    int sparse;                     // WD_CUDA_SPARSE_SEGMENTED (0) or WD_CUDA_SPARSE_FUSED
    int exchange_full;              // several ranks: 1 every exchange at the whole capacity
    int64_t exchange_cap;           // several ranks: the exchange's first cap (0: a quarter of the rows)
    int64_t check_tables;           // several ranks: steps between table checksums (0: never)
    int64_t max_bytes;              // device memory the plan may take (0: the GPU's free memory)
    int fused_grid;                 // tests only: 1..1048576 (0: the blocks resident at once)
    double overlap_delay_us;        // tests only: >= 0
} wd_cuda_desc;
typedef struct wd_train_desc {
    const char *const *files;
    int nfiles;
    const char *const *valid_files; // optional: evaluated after each epoch, every eval_every steps,
                                    // and a tenth into the second epoch (where deep CTR models start
                                    // to overfit: the one-epoch phenomenon)
    int nvalid;
    int epochs;                     // (0: 1)
    int batch_size;                 // global batch, split over the ranks (0: the checkpoint's,
                                    // else 4096, halved down to 32 until an epoch has >= 100 steps)
    int threads;                    // CPU device: worker threads (0: online cores)
    // The files' loaders (training; validation: threads only); a source decodes within its own budgets
    // (an Arrow reader: wd_arrow_reader_desc's threads and ram_bytes).
    int loader_threads;             // per rank (0: 1 on the CPU device, cores / ranks on GPUs)
    size_t loader_ram;              // per rank (0: loader default)
    int device;                     // wd_device
    int devices;                    // GPUs of this process, one rank each (0: 1; WD_ALL_GPUS)
    const int *device_ids;          // optional: the GPU of each rank (default 0, 1, ...); the
                                    // same GPU for several ranks simulates them (tests)
    // One process per GPU or per node: the communicator from
    // wd_comm_nccl_init_rank (or wd_comm_mpi_create: the CPU device); this
    // process trains rank comm->rank of comm->size on GPU device_index
    // (devices is then ignored). Before the first step the processes
    // compare the settings that must be equal on every rank (device, the
    // model's description, precision, vocabularies and parameters, its
    // training position, batch_size, epochs, max_steps, eval_every (with
    // validation files), checkpoint_every, publish_every, early_stop,
    // no_shuffle, the training and validation files' contents, and on the
    // CUDA device cuda's exchange_cap, exchange_full, check_tables and
    // sparse, after the environment's overrides: wd_cuda_desc_resolve): a difference fails
    // every rank with WD_ERR_INVALID_ARG naming the rank and the setting.
    // May differ: threads, loader threads and RAM, file paths, map,
    // progress, keep_best. Rank 0 alone writes checkpoints: every rank gives
    // checkpoint_every (every rank waits for its steps at those steps), rank
    // 0 alone needs checkpoint_path.
    // Failing fast (as NCCL and DDP jobs do): a rank that fails, at any
    // point, aborts the communicator; every other rank's wd_train then ends
    // with WD_ERR_ABORTED "rank R failed (status): reason" (over NCCL between
    // processes, where an abort reaches nobody: within WD_COMM_TIMEOUT), and
    // rank 0 says which checkpoint holds the last finished step
    // (wd_train_report.error_saved). Recovery is resuming from it, which is
    // bit-identical to a run that never failed. A rank that fails before it
    // can call wd_train aborts the communicator itself (comm->ops->abort):
    // the others' wd_train end at once naming it.
    wd_comm *comm;
    int device_index;
    int64_t max_steps;              // stop after this global step (0: no limit)
    const char *checkpoint_path;    // saved every checkpoint_every steps, at the end and on a stop;
                                    // after an error that follows finished steps, the state before
                                    // it (wd_train_report.error_saved, wd_model_after_error)
    int64_t checkpoint_every;
    int64_t eval_every;             // steps between validation runs (0: epoch ends only)
    // With validation files: stop after this many validations in a row
    // without a better AUC (0: never; a validation whose AUC is undefined,
    // labels of one class, does not count); keep_best: checkpoint_path holds the
    // model of the best validation AUC (saved when it improves, not at the end).
    int early_stop;
    int keep_best;
    int no_shuffle;
    // Optional, on loader threads: called on every decoded block of the
    // training and validation files (a feature transform, or sample weights,
    // e.g. for negative downsampling); see wd_map_fn.
    wd_map_fn map;
    void *map_user;
    wd_progress_fn progress;        // optional
    void *user;
    // Optional, instead of files (a stream, see above): called on the
    // training thread for each step's batch; sets *out to a batch (valid
    // until the next call) or NULL at the end of the stream. A non-OK status
    // stops training with it (wd_last_error() names why).
    wd_status (*source)(void *user, const wd_batch **out);
    void *source_user;
    int64_t publish_every;          // online learning: publish a snapshot every K steps (0: never)
    wd_cuda_desc cuda;              // the CUDA device's settings (0: the defaults; wd_cuda_desc above)
} wd_train_desc;
typedef struct wd_train_report {
    int64_t steps, samples;         // steps done by this call; samples of weight != 0 in them
    double seconds;                 // the whole call (device set-up and the final copy included)
    double train_s;                 // the step loop alone
    double samples_per_s;           // samples / train_s
    double last_loss, valid_auc, valid_logloss;
    int stopped;                    // 1: the progress callback stopped training; 2: early stop;
                                    // 3: another process's progress callback did (this process
                                    // returns WD_OK; rank 0 saves the checkpoint)
    // 1: wd_train failed after finishing steps, and checkpoint_path holds the
    // state after the last of them (wd_model_after_error; the error message
    // names the step). Not with keep_best once a best model is saved there.
    int error_saved;
    double best_auc;                // the best validation AUC (NaN without validation)
    int64_t best_step;              // and the step it came at
    double best_epoch;              // and the epochs done then (fractional; NaN without validation)
    double stage_s[WD_STAGE_COUNT]; // seconds per wd_stage on rank 0 (GPU: device stages with
                                    // cuda.timing, else the device time counts as other)
    char engine[256];               // what ran, e.g. "cpu threads=2 gemm=openblas" (see backends; the CUDA
                                    // backend's ends with device_ms=, a step's device time after 4 steps)
    wd_oov oov;                     // out-of-vocabulary values of the batches submitted to steps (this
                                    // process's ranks; a stream's skipped batches too)
    // a stream only (training goes on after each; wd_progress.warning reports each one):
    int64_t skipped;                // batches not trained: their step was not finite, and not applied
    int64_t checkpoints_failed;     // checkpoint_every's checkpoints not written (the one before stays)
    char warning[256];              // the last of those messages ("" if none), cut to 255 bytes
                                    // (wd_progress.warning has it whole)
} wd_train_report;
WDDEF wd_status wd_train(wd_model *m, const wd_train_desc *d, wd_train_report *rep);
/* Pushing batches: wd_train over a stream on a thread of its own, fed by
   wd_trainer_push from any one thread at a time. open takes the desc's
   settings (files and source must be unset) and refuses a model that a
   trainer or wd_train trains already (wd_train is refused likewise: one
   training per model); unless m has a published snapshot, it publishes one
   (the model as it is: wd_predict and predictors read it, not the training
   thread's parameters; it costs a copy of the parameters, no optimizer
   state) after waiting for predictions that read m in place. push checks
   the batch (its errors name the push, numbered from 0 among accepted
   pushes; training goes on: a label outside [0,1] or an id outside its slot
   is WD_ERR_INVALID_ARG; a NaN or infinite label or dense value, or a
   weight outside [0, WD_MAX_WEIGHT], WD_ERR_NUMERIC),
   copies it into one of two
   buffers and returns while the step runs (it waits when both are full), or
   returns the training's error once it failed or stopped (progress stop,
   max_steps: a batch still queued then is not trained; report.steps counts
   what was); close ends the stream, waits for the last step, fills rep and
   returns wd_train's status; push and close after close are refused; free
   closes if needed and releases the trainer. The desc is copied; what it
   points to (paths, validation files, callbacks' user data) must live
   until close. A skipped step or unwritten checkpoint does not end
   training (Streams, above): it reaches the progress callback and the
   report. The model must not be used meanwhile except through wd_predict
   and predictors (which read the published snapshot). */
typedef struct wd_trainer wd_trainer;
WDDEF wd_status wd_trainer_open(wd_model *m, const wd_train_desc *d, wd_trainer **out);
WDDEF wd_status wd_trainer_push(wd_trainer *t, const wd_batch *b);
/* Raw lines, and vocabularies that grow in memory: text holds up to
   batch_size lines (as wd_parse_line takes them, '\n'-separated; a CSV
   header line is skipped) in the model's input format (wd_model_spec: the
   model was trained on files converted with an input format). Values a
   slot's vocabulary lacks get the next ids, by falling count in these lines
   then by hash, while the slot's table has rows (vocab_capacity), exactly
   as wd_convert with extend_vocab (`wd convert --schema-from --extend-vocab`)
   converts these lines; the others take the out-of-vocabulary id. The lines
   are then one pushed batch (wd_trainer_push). The model takes the longer
   vocabulary between steps, with the batch that needs it: wd_model_save
   (checkpoints) writes it, and a publish copies it into the snapshot when
   it grew, so wd_model_spec (the published snapshot's while one is
   published) maps raw requests with the ids its tables were trained with.
   A bad line refuses the whole push (naming the batch and the line), the
   vocabulary unchanged. Cost: a push that adds values copies the
   vocabulary twice (the trainer's and the model's), and a publish after it
   once (the snapshot's). */
WDDEF wd_status wd_trainer_push_lines(wd_trainer *t, const char *text, size_t len);
WDDEF wd_status wd_trainer_close(wd_trainer *t, wd_train_report *rep);
WDDEF void wd_trainer_free(wd_trainer *t);
// Publishes a snapshot of m's parameters for wd_predict (online learning,
// above); call it before predicting threads start while wd_train runs.
WDDEF wd_status wd_model_publish(wd_model *m);
/* Hot swap: replaces the model that m's predictors (and wd_predict on m)
   read by next, under load: a call that starts before the swap reads the old
   model whole, one that starts after it the new one whole; none fails or
   waits. wd_model_swap returns once the calls on the old model ended, with
   m holding next's parameters, description, position and input contract
   (wd_model_spec, wd_model_save), and next destroyed (on an error both
   models are unchanged). The old parameters and m's published snapshot are
   freed before it returns; the
   new model is read in place, not copied (memory: the two models' weights
   while the last old calls end, then next's alone). next must predict with
   m's predictors: the same MLP, precision and schema (slot names, kinds and
   buckets; else WD_ERR_SCHEMA naming the difference), and no predictor
   or published snapshot of its own (wd_predict on it before is fine). A
   swap while a wd_train or trainer runs on m or next is refused
   (WD_ERR_INVALID_ARG), as is a training that starts on either during a
   swap: swap between online-learning runs (a run with publish_every
   publishes again when it starts). Swaps and publishes of one model are
   serialised. */
WDDEF wd_status wd_model_swap(wd_model *m, wd_model *next);

typedef struct wd_eval_desc {
    const char *const *files;
    int nfiles;
    int threads;                    // CPU workers (0: online cores)
    int batch_size;                 // (0: 4096)
    int device;                     // wd_device (GPU: device_index)
    int device_index;
    float *predictions;             // optional, caller-owned: one per sample in file order
    int64_t predictions_cap;
    wd_map_fn map;                  // optional: called on every decoded block (see wd_map_fn)
    void *map_user;
    wd_cuda_desc cuda;              // the CUDA device's settings that predicting reads (0: the defaults)
} wd_eval_desc;
typedef struct wd_metrics {
    double auc, logloss, mean_pred, ctr;
    int64_t samples;
    wd_oov oov;                     // out-of-vocabulary values of the files (by the model's vocabularies)
} wd_metrics;
WDDEF wd_status wd_evaluate(wd_model *m, const wd_eval_desc *d, wd_metrics *out);
// Probabilities for the b->n samples of a batch (any size), on the calling
// thread: the simple form of a predictor (below), made for the call and
// destroyed at its end (so it allocates; a server keeps a predictor per
// thread instead). Reads m only: safe from several threads at once on one
// model (while no wd_train runs on it, or, once the model has a published
// snapshot, while one does: it then reads the latest snapshot; see Online
// learning above; a trainer publishes one when it opens). Labels and
// weights are not read.
WDDEF wd_status wd_predict(const wd_model *m, const wd_batch *b, float *probs);

/* Serving: a predictor is one thread's reusable prediction context for a
   model. It holds the scratch for max_batch samples and the GEMM engine's
   state, so that a call allocates nothing: wd_predictor_run computes a batch
   in pieces of at most max_batch samples; with oneDNN a piece's rows are
   rounded up to the next of 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (each a power
   of two or 1.5 times one; the extra rows are computed and dropped), so
   that a predictor meets a bounded set of product shapes whatever its batch
   sizes, and makes each once, at its first use. After that first call at
   each shape the library allocates nothing in a call (tests/test_engine.c
   counts through wd_set_allocator); oneDNN's execute call still makes small
   allocations of its own, its argument map (bench/predict_bench.c counts
   every malloc of the process: 0 per call with the portable loops, about
   27 with oneDNN's four products). Results are those of wd_predict, bit for
   bit, at the same threads.
   threads: the GEMM engine's threads inside each call, 0 or 1: the calling
   thread alone (the default: a server's concurrency is its callers; with
   OpenMP's default team every call would take every core). The setting is
   scoped to the call (omp_set_num_threads on the calling thread, restored
   on return); training's threading is its own (wd_train_desc.threads).
   Only oneDNN has threads of its own; the portable loops and OpenBLAS run
   on the caller (Debian's serial OpenBLAS serialises concurrent callers).
   A predictor belongs to one thread at a time; any number of predictors
   may share one model. m must outlive it. Each call reads what wd_predict
   reads: m's parameters in place (no wd_train may run on m meanwhile), or,
   once m has a published snapshot, the latest snapshot, taken at the call's
   start and held for its whole batch (online learning: wd_train may run;
   the snapshot's reference costs no allocation). Create fails for a bf16
   model on a CPU or engine without bf16. */
typedef struct wd_predictor wd_predictor;
typedef struct wd_predictor_desc {
    int max_batch;                  // samples computed at once (0: 256); larger batches run in pieces
    int threads;                    // the GEMM engine's threads in each call (0: 1)
} wd_predictor_desc;
WDDEF wd_status wd_predictor_create(const wd_model *m, const wd_predictor_desc *d, wd_predictor **out);
// Probabilities of b's samples; the checks and errors of wd_predict.
WDDEF wd_status wd_predictor_run(wd_predictor *p, const wd_batch *b, float *probs);
WDDEF void wd_predictor_destroy(wd_predictor *p);

// ---- 16. Checkpoints ---------------------------------------------------------------------------
/* .wdm: magic "\x89WDM\r\n\x1a\n", u32 version (3; versions 1 and 2 load),
   then sections, each {u32 tag, u32 0, u64 bytes, payload, u32
   crc32c(payload), u32 0}: 'DESC' model description + schema (flags: bit 0
   no_wide, bit 1 no_deep, bits 2.. precision), 'POS ' training position
   (u64 epoch, batch in epoch, global step, batch size; version 2 adds the
   training files' fingerprint and a u64 of flags: bit 0, saved by wd_train
   after an error, see wd_model_after_error; version 3 adds bit 1, weights
   only (wd_model_export); other bits refused), version 3: 'INPT' the
   input contract {u32 flags (bit 0: recorded, bit 1: an input format
   follows), u32 nslots, per slot i64 n (-1: no vocabulary) then n u64 value
   hashes in id order, [u32 bytes, the text spec as in a .wdr header],
   zero padding to 4 bytes}, 'DENS' dense parameters
   and their optimizer state, 'WIDE' wide tables (w, z, n), 'EMBD'
   embedding tables and their optimizer state, 'END '.
   Written to a temporary file, fsynced and renamed: a crash leaves the
   previous file intact. Every length is checked against the description
   before anything is allocated; a loaded model holds no NaN, no Inf and no
   negative accumulator (save refuses such a model too), and its counters
   are at most 2^53. */
#define WD_WDM_MAGIC "\x89WDM\r\n\x1a\n"   // a .wdm file's first 8 bytes (a model, not records: `wd inspect`)
WDDEF wd_status wd_model_save(const wd_model *m, const char *path);
WDDEF wd_status wd_model_load(const char *path, wd_model **out);
// For serving: writes the parameters, the position and the input contract
// without optimizer state ('POS ' flags bit 1; DENS, WIDE and EMBD then hold
// the weights alone: about half the checkpoint with Adagrad, a third with
// Adam). wd_model_load loads it for wd_predict, wd_evaluate and
// wd_model_spec, with no optimizer state in memory either (its memory is its
// weights); wd_train refuses it (that state is gone; train the checkpoint),
// and wd_model_save writes it weights-only again.
WDDEF wd_status wd_model_export(const wd_model *m, const char *path);
// Loads any .wdm (a checkpoint or an export) for serving: as an export
// loads, whatever the file holds (its optimizer state is read, checksummed
// and dropped through a 64 KiB buffer), so the model's memory is its weights.
WDDEF wd_status wd_model_load_weights(const char *path, wd_model **out);
// What a loaded model holds beyond its description, position and wd_model_after_error: for a report (`wd
// inspect M.wdm` prints it). wd_model_get_info fills *out; it cannot fail.
typedef struct wd_model_info {
    int weights_only;               // an export, or loaded by wd_model_load_weights: no optimizer state, cannot train
    int contract;                   // 1: its training files' input contract is recorded (wd_model_spec gives its
                                    // input format; WD_ERR_UNSUPPORTED where the files carried none)
    const struct wd_vocab *vocab;   // the recorded vocabularies (NULL: none; see wd_vocab_size), valid until the
                                    // model is trained, swapped or destroyed; not while it trains (wd_model_spec
                                    // then gives the published snapshot's)
    int64_t batch_size;             // of the run that reached its position (0: never trained)
    uint64_t data_fp;               // that run's training files' fingerprint (0: none recorded)
    // bytes of floats as the model holds them: the wide part's tables, dense weights and bias; the embedding
    // tables; the MLP; the optimizer state of all three (FTRL z and n; Adagrad's or Adam's; 0 in an export)
    int64_t wide_bytes, embedding_bytes, mlp_bytes, state_bytes;
} wd_model_info;
WDDEF void wd_model_get_info(const wd_model *m, wd_model_info *out);

/* The model is the contract. wd_train records, from its training files, how
   raw input became ids and features: the input format and column mapping
   that wd_convert parsed with (Criteo TSV; CSV with its derived slots and
   dense rule; LibSVM ranges), the bucket counts and every slot's vocabulary
   (the first training file's; training and validation files must give
   every value the same id, section 7). A model records them on its first
   wd_train over files, and records a training file's longer vocabulary
   when the file extends it (wd_convert's extend_vocab; a model refuses
   files whose contract differs, also on resume and warm start: the one
   comparison, wd_text_spec_compare in section 8); .wdm version 3
   stores them ('INPT' section). wd_model_spec then gives a spec that maps
   raw strings exactly as wd_convert mapped the training data: a service
   needs the .wdm file and nothing else:
       wd_model_load("ctr.wdm", &m);  wd_model_spec(m, &spec);
       wd_parse_line(&spec, line, len, batch) or wd_batch_add(&spec, batch, ...);
       wd_predict(m, batch, probs);   ...   wd_text_spec_free(&spec);
   *out owns a copy of the vocabulary (wd_text_spec_free). It fails, saying
   what the model lacks, with WD_ERR_UNSUPPORTED when the model has no input
   format: a checkpoint saved before .wdm version 3 (it loads, trains and
   predicts as before; its files are checked by schema alone until a
   wd_train records their fingerprints), a model never trained on files, or
   one trained on files that carry none (written by wd_writer, or converted
   before .wdr version 3). */
WDDEF wd_status wd_model_spec(const wd_model *m, wd_text_spec *out);
// A spec a service built itself (not wd_model_spec's) against the model's
// recorded contract: wd_text_spec_compare(t, the model's, -1). Call it once
// before serving requests built with t (wd_batch_add, wd_parse_line).
WDDEF wd_status wd_model_check_spec(const wd_model *m, const wd_text_spec *t);

// ---- 9. Convert ----------------------------------------------------------------------
struct ArrowArrayStream;   // section 20
/* Inputs are text files, gzip- or zstd-compressed text (told by their first
   bytes), or "-" for standard input. Slots with 0 buckets are sized from
   the data: a first pass counts each slot's distinct values d. A slot of
   d <= 4096 values gets an id per value (a vocabulary stored in the file,
   as with min_count 1: d + 1 rows, no two values share one; 8 bytes a value
   in the header); a larger one min(max(16 d, 4096), WD_DEFAULT_BUCKETS)
   hashed buckets (about 3% of values then share a bucket). min_count builds
   a vocabulary for every slot. Both need a first pass, so standard input
   then needs explicit buckets. The output also holds the spec's input
   format (format, column mapping, derived slots, dense rule: .wdr version
   3), which a model trained on it keeps (wd_model_spec). */
typedef struct wd_convert_desc {
    const wd_text_spec *spec;
    const char *const *inputs;      // text files ("-": standard input)
    int ninputs;
    const char *output;             // .wdr path (never one of the inputs)
    int threads;                    // parser threads (0: 1)
    int block_samples;              // (0: 4096)
    int level;                      // zstd level (0: 3)
    int skip_bad_lines;             // 0: stop at the first bad line, no output file
    int min_count;                  // > 0: build a vocabulary (see wd_vocab) of values seen this often
    // A new vocabulary's table capacity: each slot that gets one has
    // max(values, vocab_capacity) + 1 rows, room for later extend_vocab days
    // (0: no room). Not with a spec that holds a vocabulary (its rows stay).
    // A slot given its buckets hashes into them and gets no vocabulary, so
    // no room: the capacity applies to the slots sized from the data.
    uint32_t vocab_capacity;
    // 1: with a spec that holds a vocabulary (--schema-from), values it lacks
    // seen at least max(min_count, 1) times in the inputs get the next ids
    // (n + 1, n + 2, ... by falling count, then hash), as long as the slot's
    // table has rows left; every old value keeps its id. Values that find
    // no room take the out-of-vocabulary id 0 (report: vocab_no_room).
    int extend_vocab;
    // Optional: the spec's id column, one line per converted row, then a line
    // binding the file to the output: "#wd-ids rows=N data=F ids=G" (F: a
    // digest of the output's blocks, G: of the id lines in order; wd_ids_check).
    const char *ids_output;
    // progress: called from the calling thread, about 10 times a second at
    // most; nonzero stops the conversion (WD_ERR_ABORTED, no output file)
    int (*progress)(void *user, int64_t bytes_done, int64_t bytes_total, int64_t rows);
    void *user;
    // Instead of inputs (section 20): Arrow C streams, with a CSV spec. Called
    // once per pass (two when tables are sized from the data or a vocabulary
    // is built or extended), it fills *out with a fresh stream of the same
    // rows (the converter releases it); nonzero: failed (wd_last_error() or
    // the return names why). Progress then counts rows (bytes 0).
    int (*arrow)(void *arrow_user, struct ArrowArrayStream *out);
    void *arrow_user;
} wd_convert_desc;
typedef struct wd_convert_report {
    int64_t rows, bad_rows, bytes_in, bytes_out, blocks;   // bytes_in: text read (decompressed)
    uint32_t buckets[WD_MAX_SLOTS]; // each slot's bucket count in the output
    int64_t vocab_size[WD_MAX_SLOTS];     // each slot's vocabulary in the output (-1: hashed)
    int64_t vocab_added[WD_MAX_SLOTS];    // extend_vocab: ids given to new values
    int64_t vocab_no_room[WD_MAX_SLOTS];  // extend_vocab: distinct new values left out of vocabulary (table full)
    wd_oov oov;                     // out-of-vocabulary values of the output
    double seconds;
    int nbad_shown;                 // first bad lines (skip mode)
    char bad_where[8][400];         // "file:line: reason" (a long path keeps its end)
} wd_convert_report;
WDDEF wd_status wd_convert(const wd_convert_desc *d, wd_convert_report *rep);
// WD_OK when ids_path is the ids file wd_convert wrote beside data_path (its
// binding line names data_path's blocks, and its ids are the rows' count, in
// the order written); WD_ERR_SCHEMA for another file's ids or ids edited,
// cut or reordered since; WD_ERR_FORMAT for a file without the binding line
// (written before ids were bound to their data: convert again). A program
// pairing ids with rows (wd predict) checks first, and reads the ids lines,
// the binding line last and not an id.
WDDEF wd_status wd_ids_check(const char *ids_path, const char *data_path);
// 1 when paths a and b name one file, as wd_convert and wd_gen check that no output is an input or
// another output: the same inode when either exists (links, "./x", "d/../x" count), else the same
// name in the same directory; "-" (standard input or output) is no file.
WDDEF int wd_same_file(const char *a, const char *b);

// ==== tier 2: data formats and building blocks =========================================================
// Sections 3 (allocator), 5 (batch), 6 (hashing), 7 (records), 8 (text parsers), 10 (synthetic data),
// 11 (metrics), 12 (loader), 14 (communicators: threads, MPI, NCCL), 18 (ONNX), 19 (TensorBoard), 20 (Arrow).

// ---- 3. Allocator -------------------------------------------------------------
// All library allocations go through these hooks (default: malloc/free).
// alloc may return NULL; the library then fails cleanly with WD_ERR_NOMEM.
typedef struct wd_allocator {
    void *(*alloc)(size_t bytes, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} wd_allocator;
WDDEF void wd_set_allocator(const wd_allocator *a);   // NULL restores malloc/free
// Memory from the hooks (backends and tools allocate through these too).
WDDEF void *wd_alloc(size_t bytes);
WDDEF void wd_free(void *p);
// Bytes this process can still get (the least of MemAvailable, what ulimit -v and the cgroup limit leave,
// and WD_MEMORY_LIMIT); a bad WD_MEMORY_LIMIT is WD_ERR_INVALID_ARG naming it, as every large allocation
// would refuse it.
WDDEF wd_status wd_memory_available(uint64_t *bytes);

// ---- 5. Batch -------------------------------------------------------------------
// Decoded samples. One allocation (`mem`) holds every array.
struct wd_batch {   // (the typedef: tier 1)
    int n;                          // samples held
    int cap;                        // sample capacity
    int ndense, nslots;
    int64_t nnz_cap;                // id capacity of each multi-hot slot
    float *label;                   // (cap) 0..1
    float *weight;                  // (cap) 1 for real samples, 0 for padding
    float *dense;                   // (cap, D) row-major
    uint32_t *ids[WD_MAX_SLOTS];    // one-hot: (cap); multi-hot: (nnz_cap)
    uint32_t *offs[WD_MAX_SLOTS];   // multi-hot: (cap+1) CSR offsets; one-hot: NULL
    int kind[WD_MAX_SLOTS];
    void *mem;
    size_t mem_bytes;
    const wd_allocator *alloc;      // NULL: the global hooks; set before the first reserve
};

WDDEF wd_status wd_batch_init(wd_batch *b, const wd_schema *s, int cap, int64_t nnz_cap);
// The same, with memory from `a` (e.g. pinned host memory for device copies).
WDDEF wd_status wd_batch_init_with(wd_batch *b, const wd_schema *s, int cap, int64_t nnz_cap, const wd_allocator *a);
// Grows capacity keeping the first b->n samples; never shrinks.
WDDEF wd_status wd_batch_reserve(wd_batch *b, int cap, int64_t nnz_cap);
WDDEF void wd_batch_free(wd_batch *b);
// Empties b (n = 0), keeping its memory: a serving loop refills one batch
// without allocating.
WDDEF void wd_batch_clear(wd_batch *b);
// Appends samples [from, from+count) of src to dst (schemas must match).
WDDEF wd_status wd_batch_append(wd_batch *dst, const wd_batch *src, int from, int count);
// Ids of sample i in slot k: *count ids starting at the returned pointer.
WDDEF const uint32_t *wd_batch_sample_ids(const wd_batch *b, int k, int i, int *count);

// ---- 6. Hashing -------------------------------------------------------------------
WDDEF uint64_t wd_hash_bytes(const void *p, size_t n, uint64_t seed);
WDDEF uint32_t wd_hash_bucket(const char *s, size_t n, int slot, uint32_t buckets);
WDDEF float wd_count_feature(int64_t x);    // the dense feature rule above

// ---- 7. Records (.wdr) ------------------------------------------------------------
/* File layout, little-endian, version 1:
     file header   magic "\x89WDR\r\n\x1a\n", u32 version, u32 header_bytes,
                   u32 ndense, u32 nslots, u32 flags, u32 reserved,
                   char created[64], nslots x {char name[32], u32 buckets,
                   u32 kind, u64 reserved}, u32 crc32c(all before)
     blocks        32-byte header {u32 'WDBK', u32 nsamples, u32 comp_bytes,
                   u32 raw_bytes, u32 nnz, u32 reserved, u32 payload_crc32c,
                   u32 header_crc32c} then one zstd frame of comp_bytes
     footer        u32 'WDFT', u32 reserved, u64 nblocks, u64 nsamples,
                   nblocks x {u64 offset, u32 nsamples, u32 block_bytes},
                   u32 crc32c(footer before it), u32 0
     trailer       u64 footer_offset, u64 footer_bytes, u32 crc32c(16 bytes
                   before), u32 'WDND'   (the last 24 bytes of the file)
   Raw payload of a block of n samples, columns one after another, each
   4-byte column byte-shuffled (all byte 0s, then all byte 1s, ...):
     f32 label[n]; for each dense column f32 value[n]; for each slot:
     one-hot u32 id[n] | multi-hot u32 count[n] then u32 id[sum of counts].
   Version 2 adds flags bit 0: a vocabulary after the slot entries (see
   wd_vocab). Version 3 adds flags bit 1: the input format after it, u32
   bytes then the text spec that wd_convert parsed with (format, column
   mapping, derived slots, dense rule; see section 8), so that a model
   trained from the file can map raw input as the file was mapped. Files are
   written with the lowest version that holds what they carry (wd_writer: 1,
   wd_convert: 3); versions 1 and 2 read as before.
   Vocabulary fingerprints: each slot's ids are fixed by its vocabulary (the
   values in id order) or, without one, by its bucket count (hashing, or ids
   the writer's caller chose). wd_vocab_fingerprint is that vocabulary's
   64-bit digest (0: none), computed from the header when a file opens, so
   files of every version have one. Wherever a file meets a model, every
   value both vocabularies hold must have the same id: one list a prefix of
   the other. Training (also --init-from/resume) accepts a file that extends
   the model's list (a day converted with extend_vocab, section 9) and the
   model records the longer one; validation, evaluation and prediction
   accept the model's list or a prefix of it (a file of an earlier day),
   never a longer one (ids the model never trained). Anything else is
   refused naming the slot (two files converted separately get their ids
   by each one's own value counts: permuted, with equal bucket counts). A
   slot's table may have rows past its vocabulary (vocab_capacity): room
   for the values later days bring. */
typedef struct wd_writer wd_writer;
typedef struct wd_writer_desc {
    int block_samples;      // m, samples per block (0: 4096)
    int level;              // zstd level (0: 3)
    const char *created;    // free text stored in the header (0: "widedeep")
} wd_writer_desc;

// Writes to "<path>.tmp-<pid>" (a name within 12 bytes of NAME_MAX: cut, with
// a hash of it) and renames to path on close (after fsync).
WDDEF wd_status wd_writer_open(const char *path, const wd_schema *s,
                               const wd_writer_desc *d, wd_writer **out);
// That temporary name of path, into buf (strlen(path) + 32 bytes; less cuts it): a program removing
// unfinished outputs when it is killed (a signal handler) removes this name.
WDDEF void wd_temp_name(char *buf, size_t n, const char *path);
// Appends all b->n samples; validates ids, labels and dense values: a label
// outside [0,1] or an id outside its slot is WD_ERR_INVALID_ARG; a NaN or
// infinite label, weight or dense value, or a negative weight, WD_ERR_NUMERIC.
WDDEF wd_status wd_writer_append(wd_writer *w, const wd_batch *b);
WDDEF wd_status wd_writer_close(wd_writer *w);   // always frees w
WDDEF void wd_writer_abort(wd_writer *w);        // removes the temporary file, frees w
WDDEF int64_t wd_writer_samples(const wd_writer *w);

typedef struct wd_reader wd_reader;
typedef struct wd_decoder wd_decoder;   // per-thread decompression context

WDDEF wd_status wd_reader_open(const char *path, wd_reader **out);
WDDEF void wd_reader_close(wd_reader *r);
WDDEF const wd_schema *wd_reader_schema(const wd_reader *r);
WDDEF const char *wd_reader_path(const wd_reader *r);
WDDEF const char *wd_reader_created(const wd_reader *r);
WDDEF int64_t wd_reader_nblocks(const wd_reader *r);
WDDEF int64_t wd_reader_nsamples(const wd_reader *r);
WDDEF int wd_reader_block_samples(const wd_reader *r, int64_t i);
WDDEF int64_t wd_reader_file_bytes(const wd_reader *r);
// The file's vocabulary (see wd_vocab; valid while r is open), or NULL.
WDDEF const struct wd_vocab *wd_reader_vocab(const wd_reader *r);
// The input format the file was converted with, as a spec that converts
// (and maps raw input) as it did: its bucket counts and a copy of its
// vocabulary (*out owns it: wd_text_spec_free). WD_ERR_UNSUPPORTED for a
// file that records none (written by wd_writer, or converted before .wdr
// version 3). wd_model_spec is the same for a model.
struct wd_text_spec;
WDDEF wd_status wd_reader_spec(const wd_reader *r, struct wd_text_spec *out);
// The digest of slot `slot`'s vocabulary: its values in id order (0 when the
// slot has none: hashed ids, or ids its writer chose). Equal fingerprints,
// equal ids for every value.
WDDEF uint64_t wd_vocab_fingerprint(const struct wd_vocab *v, int slot);
// Block i into a caller-owned batch (grown as needed; n is overwritten).
WDDEF wd_status wd_reader_read_block(wd_reader *r, int64_t i, wd_batch *dst);
// Block i into a library-owned batch, valid until the next call on r.
WDDEF wd_status wd_reader_block(wd_reader *r, int64_t i, const wd_batch **out);
// Decompresses and checks every block; *bad_block = first bad one or -1.
WDDEF wd_status wd_reader_verify(wd_reader *r, int64_t *bad_block);

// Split path for loaders; both are thread-safe on one reader.
WDDEF size_t wd_reader_block_bytes(const wd_reader *r, int64_t i);
WDDEF wd_status wd_reader_fetch(const wd_reader *r, int64_t i, void *buf, size_t cap);
WDDEF wd_status wd_decoder_create(wd_decoder **out);
WDDEF void wd_decoder_destroy(wd_decoder *d);
// Decodes the fetched bytes of block i, appending its samples to dst
// (dst->n grows by the block's sample count).
WDDEF wd_status wd_decode_block(wd_decoder *d, const wd_reader *r, int64_t i,
                                const void *bytes, size_t len, wd_batch *dst);
// Seconds a decoder spent per stage, summed over its calls.
typedef struct wd_decode_stats {
    int64_t blocks, samples, bytes_in, bytes_raw;
    double crc_s, zstd_s, unpack_s, check_s;
} wd_decode_stats;
WDDEF void wd_decoder_stats(const wd_decoder *d, wd_decode_stats *out);

// ---- 8. Text parsers -----------------------------------------------------------------
typedef enum wd_text_format { WD_FMT_CRITEO = 0, WD_FMT_LIBSVM, WD_FMT_CSV } wd_text_format;
typedef struct wd_range_map { uint32_t lo, hi; int slot; } wd_range_map;   // [lo, hi]
struct wd_text_spec {   // (the typedef: tier 1)
    int format;                     // wd_text_format
    wd_schema schema;               // output schema (filled by wd_text_spec_* helpers)
    // LibSVM: feature index ranges; index idx in a slot range becomes id idx-lo
    // of that (multi-hot) slot, in the dense range it is column idx-dense_lo
    // with the feature's value; indexes in no range are an error.
    wd_range_map ranges[WD_MAX_SLOTS];
    int nranges;
    int64_t dense_lo, dense_hi;     // -1,-1: no dense range
    // CSV: column roles by position, from the header (or `columns`).
    int ncols;                      // columns per line
    int label_col;
    int col_role[WD_MAX_SLOTS + WD_MAX_DENSE + 64];  // 0 ignore, 1 label, 2 dense, 3 slot
    int col_index[WD_MAX_SLOTS + WD_MAX_DENSE + 64]; // dense column or slot number
    char header[4096];              // header line to skip when a file repeats it
    int dense_raw;                  // CSV: 1 = dense values as-is (finite floats), 0 = count rule
    char delimiter;                 // CSV: field separator (',' unless set)
    int id_col;                     // CSV: column written to wd_convert_desc.ids_output (-1: none)
    int nderived;                   // CSV: derived slots (wd_csv_desc.derive), the schema's last ones
    struct { int col, from, to, weekday; } derived[WD_MAX_SLOTS];
    const struct wd_vocab *vocab;   // optional, owned: categorical values -> dense ids (wd_text_spec_vocab)
};
/* A spec owns what it holds: wd_text_spec_vocab and wd_model_spec give it a
   copy of a vocabulary, released by wd_text_spec_free (a spec without one
   needs no freeing; freeing twice, or a zeroed spec, is harmless). The
   wd_text_spec_criteo/_csv/_libsvm initialisers treat *t as uninitialised:
   free a spec that holds a vocabulary before setting it up again, and do
   not copy such a spec by value (both copies would own one vocabulary). A
   spec is read-only while parsing: any number of threads may use one. */
WDDEF void wd_text_spec_free(wd_text_spec *t);

/* CSV per RFC 4180: fields may be quoted ("a,b"; "" inside quotes is one
   quote); a UTF-8 byte-order mark before the first header is ignored; lines
   end in LF or CRLF (a quoted field cannot hold a line break). */
typedef struct wd_csv_desc {
    const char *header;             // column names, separated by the delimiter (a file's first line)
    char delimiter;                 // (0: ',')
    const char *label;              // the 0/1 label column (required)
    const char *dense, *cat;        // comma-separated lists of column names (either may be NULL)
    const char *id;                 // optional: a column copied to wd_convert_desc.ids_output
    // Derived categorical slots, comma-separated: "NAME=COL[a:b]" takes bytes
    // a..b-1 of column COL (e.g. the hour of day of Avazu's YYMMDDHH:
    // "hour_of_day=hour[6:8]"); "NAME=weekday(COL[a:b])" the day of the week
    // (0 = Monday .. 6) of the YYMMDD or YYYYMMDD date in those bytes.
    const char *derive;
    uint32_t buckets;               // per slot (0: sized from the data by wd_convert)
    int dense_raw;                  // 1: dense values are finite floats taken as they are
} wd_csv_desc;
WDDEF wd_status wd_text_spec_csv_desc(wd_text_spec *t, const wd_csv_desc *d);

// Criteo TSV: label, 13 integers, 26 categorical; `buckets` per slot (0:
// sized from the data by wd_convert).
WDDEF void wd_text_spec_criteo(wd_text_spec *t, uint32_t buckets);
// CSV (comma-separated, the simple form of wd_text_spec_csv_desc): names of
// label, dense and categorical columns in `header`; `dense`/`cat` are
// comma-separated lists.
WDDEF wd_status wd_text_spec_csv(wd_text_spec *t, const char *header, const char *label,
                                 const char *dense, const char *cat, uint32_t buckets);
// LibSVM: "name=lo-hi,..." slot ranges, optional "lo-hi" dense range.
WDDEF wd_status wd_text_spec_libsvm(wd_text_spec *t, const char *slots, const char *dense,
                                    uint32_t buckets);
/* The one comparison of input contracts, made wherever a file or a request
   meets a model or another file (training, validation, evaluation,
   prediction, warm start and resume compare each file with the model;
   wd convert --schema-from compares its spec with the file's or model's;
   wd_model_check_spec a serving spec with the model): WD_OK when `have`
   maps raw input to the ids and features `want` does, else WD_ERR_SCHEMA
   naming the first difference and the fix, compared in this order: the
   format; the dense columns (count, rule: counts through log1p or values as
   they are, and each one's source column, in order); the label's column;
   the slots (count, names, kinds, each one's source column or LibSVM range,
   a derived slot's column, bytes and weekday rule); bucket counts; each
   slot's vocabulary (hashed against a vocabulary is a difference).
   extend: 0 the vocabularies must be equal; 1 either may extend the other
   (a training day converted with extend_vocab); -1 have's may be a prefix
   of want's (an earlier day's file). A CSV file's column positions,
   delimiter, unused and id columns are its layout, not its contract:
   columns are compared by name (a file with its columns in another order
   maps the same). A side that records no input format (wd_writer's files,
   files and models from before .wdr / .wdm version 3) cannot be compared
   with one that does, and is refused; two such sides compare schema and
   vocabularies; a model that records no contract at all (never trained on
   files: created, or trained from a stream; .wdm before version 3) is
   compared by its schema alone, until a wd_train over files records one. */
WDDEF wd_status wd_text_spec_compare(const wd_text_spec *have, const wd_text_spec *want, int extend);
// Sets the bucket count of a named slot ("C3=100000,C4=50").
WDDEF wd_status wd_text_spec_buckets(wd_text_spec *t, const char *overrides);
// Takes every slot's bucket count from `s` (e.g. a training file's schema, so
// a test set converts into the same id space); slots must match by name. On
// failure t is unchanged.
WDDEF wd_status wd_text_spec_match(wd_text_spec *t, const wd_schema *s);

/* Vocabularies. wd_convert with min_count K gives each categorical value
   seen at least K times in the inputs an id of its own (1, 2, ... by
   falling frequency) and every other value the slot's out-of-vocabulary id
   0; the slot's table is then (distinct values kept + 1) rows, or
   vocab_capacity + 1 when that is larger. The
   vocabulary is stored in the .wdr file (format version 2) so that
   validation and test files convert with the same ids: wd_reader_vocab,
   then wd_text_spec_vocab (the CLI's --schema-from does both). Values are
   kept as their 64-bit wd_hash_bytes(value, len, slot). A model keeps the
   vocabulary and the input format of the files it was trained on (section
   16: wd_model_spec).

   Vocabularies that grow (daily files). A day converted with the previous
   day's spec and extend_vocab (`wd convert --schema-from day1.wdr
   --extend-vocab`) appends the values that spec lacks after its ids, in
   the rows its tables have left: every old value keeps its id, a new value
   gets a row of its own instead of the out-of-vocabulary id, and wd_train
   --init-from the previous model trains those rows and records the longer
   vocabulary (so wd_model_spec maps the new values too). The table sizes
   are fixed on day 1 (vocab_capacity): the model's shape never changes, so
   checkpoints, optimizer state, the device backends and data-parallel
   ranks need nothing new, and the rows a value claims later are still as
   the model's seed initialised them (no update touches a row before a
   value has it). Growing the model's tables on --init-from instead would
   change every table offset and optimizer array of every backend, and
   still leave the ids of files converted before. When a slot's table is
   full, the rest of its new values take the out-of-vocabulary id, counted
   per slot (wd_convert_report.vocab_no_room; the CLI warns naming the
   slot). Held-out files convert --schema-from the last training day
   without extend_vocab: their unseen values are out of vocabulary, as the
   model knows them. */
typedef struct wd_vocab wd_vocab;
WDDEF int64_t wd_vocab_size(const wd_vocab *v, int slot);   // values with an id of their own
// Gives t a copy of v (t owns it: wd_text_spec_free; a vocabulary t held
// before is freed) for every slot v covers: ids from it, buckets = the rows
// of its table (size + 1, or more with wd_convert_desc.vocab_capacity).
// Slots must match. v may be released right after (e.g. its reader closed).
WDDEF wd_status wd_text_spec_vocab(wd_text_spec *t, const wd_vocab *v);

// wd_oov, the out-of-vocabulary share: in tier 1 (reports hold it by value).
// Adds the samples of b with a nonzero weight: ids 0 count in slots where v
// has a vocabulary (v NULL: none; every value still counts).
WDDEF void wd_oov_count(const wd_vocab *v, const wd_batch *b, wd_oov *o);
// The slots with the highest out-of-vocabulary share (ties: the lower slot),
// those with any, into slots[0 .. n-1]; returns how many.
WDDEF int wd_oov_worst(const wd_oov *o, int nslots, int *slots, int n);

// Parses one line (no newline; a trailing '\r' is ignored) and appends the
// sample to b. On failure returns WD_ERR_PARSE with a reason in
// wd_last_error() and leaves b unchanged.
WDDEF wd_status wd_parse_line(const wd_text_spec *t, const char *line, size_t len, wd_batch *b);
// Appends one sample made from a request's raw values to b, mapped exactly
// as wd_convert maps a line with t (Criteo or CSV specs), so that a serving
// program scores what training saw. Every array comes with its count,
// checked against t's schema (a request for another model is refused, never
// read short or past its end): dense holds the ndense raw values as they
// arrive and the library applies t's dense rule itself (counts: integers
// within +-2^63, exact to 2^53, through wd_count_feature; a value that is not
// such an integer, 1e30 say, is refused as convert refuses its text; CSV
// --dense-raw: finite values taken as they are); NAN is a missing value
// (convert's empty field: 0). cat holds ncat values, one per slot in schema
// order (NULL, or a NULL entry: missing, hashed like ""; derived slots take
// the derived value, e.g. the hour's two digits); cat_len NULL: NUL-terminated
// strings, else value k is the cat_len[k] bytes at cat[k] (a
// std::string_view's data() and size()). label in [0, 1] (0 when serving).
// t must have its buckets or vocabulary from the training data:
// wd_model_spec (the model's own, the serving path; a spec built otherwise:
// wd_model_check_spec), or wd_text_spec_match / wd_text_spec_vocab from the
// training file. On failure b is unchanged. wd_parse_line does the same from
// a whole text line.
WDDEF wd_status wd_batch_add(const wd_text_spec *t, wd_batch *b, float label, const double *dense, int ndense,
                             const char *const *cat, const size_t *cat_len, int ncat);
// A serving line, which has no label: wd_parse_line's format less the label
// field (Criteo: 39 fields, the 13 integers and 26 categorical; CSV: the
// header's columns but the label's, in their order; LibSVM: the features
// alone). The sample's label is 0. Errors as wd_parse_line's.
WDDEF wd_status wd_parse_unlabeled(const wd_text_spec *t, const char *line, size_t len, wd_batch *b);

// ---- 10. Synthetic data ------------------------------------------------------------------
typedef struct wd_gen_desc {
    const char *output;             // .wdr
    const char *tsv;                // optional Criteo TSV of the same rows
    const char *prob;               // optional text file, true p per line (0: output+".prob")
    int64_t rows;
    int64_t first_row;              // rows first_row.. of the stream: held-out data of the same model
    uint64_t seed;                  // fixes the planted model and the row stream
    uint32_t buckets;               // per slot cap (0: 1<<20); buckets = min(16 x cardinality, this)
    uint32_t max_card;              // per slot cardinality cap (0: 1<<20)
    double zipf;                    // id exponent (0: 1.1)
    int threads;                    // (0: 1)
    int block_samples;              // (0: 4096)
} wd_gen_desc;
typedef struct wd_gen_report { int64_t rows; double ctr, oracle_auc, oracle_logloss, seconds; } wd_gen_report;
// The output records the Criteo TSV input format (.wdr version 3): its rows
// are what wd_convert makes of its tsv with a Criteo spec of its buckets.
WDDEF wd_status wd_gen(const wd_gen_desc *d, wd_gen_report *rep);
// The Criteo Kaggle per-slot cardinalities (26 values).
WDDEF const uint32_t *wd_criteo_cardinalities(void);

// ---- 11. Metrics -----------------------------------------------------------------------------
// Exact AUC by sorting scores; tied scores count half. NaN if one class is absent.
WDDEF wd_status wd_auc(const float *score, const float *label, const float *weight,
                       int64_t n, double *auc);
WDDEF double wd_logloss(const float *p, const float *label, const float *weight, int64_t n);

// ---- 12. Loader ------------------------------------------------------------------------------
/* A batch-then-map pipeline per device. `threads` workers read whole
   compressed blocks, decode them (and run the map callback on each decoded
   block), and one of them at a time assembles batches into a bounded queue.

   Per epoch: the list of every block of every file is shuffled by
   (seed, epoch) when shuffle is on, and block j goes to shard j % shard_count.
   Samples are mixed inside windows of `shuffle_blocks` consecutive blocks of
   a shard. Everything is a function of (seed, epoch, shard): the thread count
   never changes the batches.

   Every shard yields the same number of batches per epoch, computed from all
   shards' block lists (each loader can see them):
     WD_REMAINDER_PAD   ceil(max shard samples / batch); shards that run out
                        fill with padding samples of weight 0 (ids 0, zero
                        features, label 0). Every sample is delivered exactly
                        once per epoch across the shards.
     WD_REMAINDER_DROP  floor(min shard samples / batch); the rest of each
                        shard is not delivered this epoch.
   A corrupt block under WD_CORRUPT_FAIL makes wd_loader_next return the error
   (naming file and block) in its place in the sequence; under
   WD_CORRUPT_SKIP it counts as empty (stats.skipped_blocks) and the epoch
   is padded so the batch count holds.

   Budgets: at most `threads` threads (default: online cores / devices) and
   at most `ram_bytes` of decoded data in flight (default: a quarter of the
   available memory / devices): the shuffle window, the decode-ahead blocks
   and the ready batches are sized from it, and opening fails (WD_ERR_LIMIT)
   if not even one window of one block and two batches fit. Buffers are
   allocated once and reused. (Multi-hot blocks with more ids than the
   estimate of 8 per slot and sample may exceed the budget by that excess.) */
typedef enum wd_remainder { WD_REMAINDER_PAD = 0, WD_REMAINDER_DROP = 1 } wd_remainder;
typedef enum wd_corrupt_policy { WD_CORRUPT_FAIL = 0, WD_CORRUPT_SKIP = 1 } wd_corrupt_policy;
// wd_map_fn, the callback on each decoded block: in tier 1 (descs hold it by value).

typedef struct wd_loader wd_loader;
typedef struct wd_loader_desc {
    const char *const *files;
    int nfiles;
    int batch_size;                 // samples per batch on this shard (required)
    int shard_index, shard_count;   // (0, 0): one shard
    int threads;                    // thread budget (0: cores / devices)
    int devices;                    // for the defaults (0: 1)
    size_t ram_bytes;               // decoded-bytes budget (0: available / 4 / devices)
    int shuffle;                    // reshuffle blocks each epoch and mix samples in windows
    int shuffle_blocks;             // window, in blocks (0: 8; shrunk to fit ram_bytes)
    uint64_t seed;
    int remainder;                  // wd_remainder
    int corrupt;                    // wd_corrupt_policy
    wd_map_fn map;
    void *map_user;
    const wd_allocator *batch_alloc;   // memory for the output batches (e.g. pinned), NULL: global
} wd_loader_desc;

typedef struct wd_loader_stats {
    int threads, window_blocks, ahead_blocks, queue_batches;
    size_t ram_budget, peak_bytes;
    int64_t batches, samples, padded, blocks, skipped_blocks;
    double read_s, decompress_s, decode_s, map_s, assemble_s, wait_s;   // summed over threads
} wd_loader_stats;

WDDEF wd_status wd_loader_open(const wd_loader_desc *d, wd_loader **out);
WDDEF void wd_loader_close(wd_loader *l);           // stops and joins every thread
WDDEF const wd_schema *wd_loader_schema(const wd_loader *l);
// Starts `epoch` (from 0) and skips its first `skip` batches without
// decoding the windows they lie in (for resuming from a checkpoint).
WDDEF wd_status wd_loader_reset(wd_loader *l, int64_t epoch, int64_t skip);
WDDEF int64_t wd_loader_batches(const wd_loader *l);  // batches in the current epoch
// The next batch (valid until the next call), or *out = NULL at the end of the epoch.
WDDEF wd_status wd_loader_next(wd_loader *l, const wd_batch **out);
WDDEF void wd_loader_stats_get(const wd_loader *l, wd_loader_stats *s);

// ---- 14. Communicator ---------------------------------------------------------------------------
/* How data-parallel ranks combine gradients. The CPU trainer's workers use
   the in-process communicator below; the CUDA backend implements the same
   operations with NCCL. Every rank calls every collective in the same order.
   Failing fast: a failing rank calls abort, and every rank's pending and
   later collectives return WD_ERR_ABORTED with "rank R failed (status):
   reason"; a collective that waits longer than the timeout aborts everyone
   the same way (never a hang). Where an abort cannot reach the other ranks
   (NCCL between processes), they end at the timeout (WD_COMM_TIMEOUT). */
typedef struct wd_comm_ops {
    // in-place sum of n floats over all ranks
    wd_status (*allreduce_sum)(wd_comm *c, float *buf, size_t n);
    // every rank's `bytes` bytes; views valid until the caller's next
    // collective, and `mine` must stay unchanged until that one returns
    // (`mine` and the views are host memory, device communicators' too)
    wd_status (*allgather)(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes);
    wd_status (*barrier)(wd_comm *c);
    void (*abort)(wd_comm *c, wd_status st, const char *why);
    // Device communicators only (NULL for host ones): enqueue on a CUDA
    // stream (a cudaStream_t) without waiting for the result: an in-place sum
    // of n floats; every rank's `bytes` bytes of send into recv (rank r's at
    // r * bytes).
    wd_status (*stream_allreduce_sum)(wd_comm *c, float *buf, size_t n, void *stream);
    wd_status (*stream_allgather)(wd_comm *c, const void *send, void *recv, size_t bytes, void *stream);
    // Device communicators: WD_OK, or the failure of a collective enqueued so
    // far (another rank aborted, a timeout) as WD_ERR_ABORTED; called while a
    // rank waits for its step, so that no rank waits forever.
    wd_status (*poll)(wd_comm *c, double waited_s);
} wd_comm_ops;
struct wd_comm { const wd_comm_ops *ops; int rank, size; void *impl; };

// nranks communicators sharing memory (one per thread); timeout_s 0: WD_COMM_TIMEOUT (600 s by default).
// The dense allreduce is a ring: reduce-scatter then allgather in 2(n-1) steps.
WDDEF wd_status wd_comm_local_create(int nranks, double timeout_s, wd_comm **ranks);
WDDEF void wd_comm_local_destroy(wd_comm **ranks, int nranks);
#ifdef WD_USE_MPI
/* One rank per MPI process of `comm` (MPI_COMM_WORLD or a split of it; link
   the MPI library, e.g. build with mpicc). The sum is MPI_Allreduce, the
   allgather (the sparse rows, the validation's scores) an MPI_Allgather of
   the byte counts then MPI_Allgatherv (beyond one chunk in all: each rank's
   bytes broadcast from it, MPI_Bcast, in rounds of a chunk), the
   barrier MPI_Barrier. No call moves more than 1 GiB per rank (MPI counts
   are ints): larger data goes in chunks, the same bytes and sums, so any
   size works (WD_MPI_CHUNK_BYTES sets the chunk, for tests; it must be
   equal on every rank and is compared when the communicator is made).
   Each call is started nonblocking and polled, so that a
   rank whose peer called abort (the reason arrives as a message) or that
   waited longer than the timeout (WD_COMM_TIMEOUT seconds, default 600)
   returns WD_ERR_ABORTED naming the rank and the reason instead of waiting
   forever; at the timeout it calls the roll (a message every rank polling a
   collective answers at once) and names the ranks that did not answer
   within 2 s (stopped, hung, or busy outside the collectives longer than
   the timeout: WD_COMM_TIMEOUT must exceed the longest work a rank does
   between two collectives, a checkpoint write included), and sends that as
   its abort. A collective that a rank left waiting when it returned
   WD_ERR_ABORTED stays pending in MPI (MPI can neither finish nor cancel
   it); its buffers are the communicator's own (each sum is staged in one
   as large as the sum, at most one chunk), so the caller's are free.
   wd_comm_mpi_destroy frees a communicator that never aborted (WD_OK). One
   of 2 ranks or more that aborted (itself or by a peer's notice) it
   deliberately never frees:
   MPI may still read its notices and write its pending collective until the
   job ends; it returns WD_ERR_ABORTED: MPI must not be finalized. Since
   that may hold on one rank alone, the ranks agree before they end (as
   tools/wd.c's end does: an MPI_Iallreduce of "destroy said no" with MPI_MAX
   on a communicator of the application's own): all call MPI_Finalize, or
   one calls MPI_Abort (the library never calls it) and the others wait
   for it (Open MPI 4.1's mpirun may hang when one rank finalizes while
   another aborts). A rank that the others do not meet in time should end
   the job with MPI_Abort too. A process killed outright is the launcher's
   to report: mpirun ends the whole job. Every MPI call is made on the
   thread that calls the collectives (with wd_train: the thread that calls
   wd_train; its worker threads make none): initialize MPI with at least
   MPI_THREAD_FUNNELED. The CPU device then trains with `threads`
   workers in each process; results are bit-identical run to run for a
   given layout (processes x threads) as long as MPI's reduction order is. */
WDDEF wd_status wd_comm_mpi_create(MPI_Comm comm, wd_comm **out);
WDDEF wd_status wd_comm_mpi_destroy(wd_comm *c);
#endif

#ifdef WD_HAVE_CUDA
// In widedeep_cuda.cu (link widedeep_cuda.o); errors come back through
// wd_last_error() like every other call's.
WDDEF wd_status wd_cuda_device_count(int *n);
// NCCL communicators: every GPU of this process, or one rank of a job whose
// unique id (from wd_comm_nccl_unique_id on one rank) the host program shares.
// libnccl.so.2 is loaded by the first of these calls (WD_NCCL_LIB names
// another path); without it they fail with WD_ERR_UNSUPPORTED saying so.
// Making one ends with a warm-up collective: every rank there, every
// connection made, within WD_COMM_TIMEOUT seconds (default 600), as every
// later wait, teardown included.
WDDEF wd_status wd_comm_nccl_create_all(int ndev, const int *devices, wd_comm **ranks);
WDDEF wd_status wd_comm_nccl_unique_id(void *id, size_t bytes);
WDDEF wd_status wd_comm_nccl_init_rank(const void *id, int rank, int nranks, int device, wd_comm **out);
WDDEF void wd_comm_nccl_destroy(wd_comm *c);
#ifdef WD_USE_MPI
// One rank of an NCCL job per process of `comm` on GPU `device`: rank 0's
// unique id reaches every process by MPI_Bcast, then wd_comm_nccl_init_rank.
WDDEF wd_status wd_comm_nccl_init_mpi(MPI_Comm comm, int device, wd_comm **out);
#endif
#endif

// ---- 18. ONNX export ----------------------------------------------------------------------------
/* wd_model_export_onnx writes the model as an ONNX graph (opset 17, IR
   version 8) that ONNX Runtime, Triton or TensorRT serve: the same
   probabilities as wd_predict (fp32 throughout; within 1e-6, tested against
   ONNX Runtime). The library encodes the protobuf itself (section 18's
   encoder, also used by section 19); no protobuf library is needed.
   Inputs (names and shapes also in the graph's doc strings; N samples):
     dense            float [N, D]   the dense features as a .wdr holds them
                                     (after the dense feature rule); absent when D = 0
     ids.<slot>       int64 [N]      one-hot slot: the id of each sample, in
                                     [0, buckets) as wd convert assigns them
     ids.<slot>       int64 [T]      multi-hot slot: every sample's ids, one after
     offsets.<slot>   int64 [N]      another, and where each sample's start (as
                                     PyTorch's EmbeddingBag: offsets[0] = 0, non-
                                     decreasing, at most T; a sample may have none).
                                     Pooled by the model's sum or mean (section 13).
     cross<c>         int64 [N]      crossed pair c (0-based, of slots p, q): the
                                     host computes wd_cross_hash(id_p, id_q, c,
                                     cross_buckets) (section 13's rule; 10 lines
                                     in any language, README); wide part only
   Output: probability float [N]. The mapping from raw values to ids (hashing,
   vocabularies, derived slots) stays in widedeep: a service feeds ids (but
   see wd_model_export_onnx_values below: vocabularies in the graph). Ids
   outside their slot's buckets are an error in ONNX Runtime's Gather (a
   negative one would count from the end: pass none).
   Refused, with the reason: precision bf16 models (their MLP would not be
   the one exported), slot names that are empty or repeated (inputs are named
   by slot), and a model past 2 GiB (ONNX's one-protobuf limit). The file is
   written under a temporary name and renamed when complete. */
WDDEF wd_status wd_model_export_onnx(const wd_model *m, const char *path);
/* The same graph taking raw values where ONNX can map them: each one-hot slot
   with a vocabulary becomes input values.<slot> string [N] (the value
   wd_batch_add takes: a derived slot's derived value, a missing one ""; its
   doc string says where it lies in a training line: field F, or bytes
   [a, b) of it, or their day of the week),
   mapped to its id inside the graph by ai.onnx.ml LabelEncoder (domain
   version 2; a value outside the vocabulary gets id 0, as wd_convert gives
   it), so ONNX Runtime scores from raw strings (tested against wd_predict).
   A vocabulary keeps its values' 64-bit hashes, not the values: they are
   read back from `files`, text in the model's input format (wd_model_spec;
   the files the vocabulary was built from, or any holding all its values;
   gzip and zstd too; lines that do not parse are passed over). A value
   found in no file is refused, naming the slot and how many are missing.
   Crosses are computed in the graph from the slots' ids (section 13's rule
   in uint64 operators: BitShift, BitwiseOr/Xor, Mul, Mod; opset 18): no
   cross<c> input. What stays outside the graph, as ids: hashed slots
   (ids.<slot>: wd_hash_bucket; ONNX has no operator that reads a string's
   bytes, so no hash of one can be written in it) and the dense features
   (the count rule refuses a malformed count, " 5" or "5.0": no operator
   can refuse one, so a graph would score what widedeep refuses).
   Refused: a model with no input format, a LibSVM one (indexes, not
   values), one with no vocabulary slot (use the above). */
WDDEF wd_status wd_model_export_onnx_values(const wd_model *m, const char *path, const char *const *files, int nfiles);

// ---- 19. TensorBoard event files ------------------------------------------------------------------
/* Scalars for TensorBoard: an events.out.tfevents.* file in a directory,
   TFRecord framing (u64 length, masked CRC32C of it, an Event protobuf,
   its masked CRC32C) around Event{wall_time, step, Summary{tag,
   simple_value}} messages, written with section 18's protobuf encoder.
   TensorBoard's own reader reads them back (tested). `wd train
   --tensorboard DIR` writes the progress callback's numbers with it. */
typedef struct wd_tb wd_tb;
// Creates dir (and its parents) if needed, and a new event file in it
// ("events.out.tfevents.<seconds>.<host>.<pid>.<n>.widedeep"; n counts the
// files this process opened); a failure leaves no file.
WDDEF wd_status wd_tb_open(const char *dir, wd_tb **out);
// One scalar at a training step, stamped with the wall-clock time.
WDDEF wd_status wd_tb_scalar(wd_tb *t, const char *tag, int64_t step, double value);
// Writes what is buffered (TensorBoard reads a file as it grows).
WDDEF wd_status wd_tb_flush(wd_tb *t);
// Flushes and closes; the first write error of the file's life, if any.
WDDEF wd_status wd_tb_close(wd_tb *t);
WDDEF const char *wd_tb_path(const wd_tb *t);

// ---- 20. Arrow streams ---------------------------------------------------------------------------
/* Input from the Arrow C Data and C Stream interfaces (the ABI that pyarrow,
   DuckDB, Polars, ADBC drivers and Arrow C++ produce; no Arrow library is
   needed). The structs below are the specification's, word for word, behind
   its own guards: a program that includes Arrow's abi.h first keeps its
   definition.

   Columns are mapped by name through a CSV text spec (section 8), so that a
   stream and a CSV file of the same rows convert to the same .wdr (the spec,
   its buckets, vocabularies and extend_vocab are the CSV's, and a model
   trained from either keeps that input format). A row is mapped as the CSV
   line of its values would be (wd_parse_line's rules: the label 0 or 1, the
   dense rule or dense_raw, hashing or the vocabulary, derived slots, the id
   column): a string or binary value is hashed from the producer's buffer
   (no copy); a number is mapped from its decimal text (integers exactly,
   uint64 from its unsigned value; floats with 17 significant digits,
   printf's %.17g, which give back the same double: a dense value or label
   equals the CSV's, but a derived slot on a float column hashes that text,
   "0.10000000000000001" where a CSV writer may have written "0.1"). A
   null is a missing value (an empty field), except in the label column.
   A list column feeds its own slot only: a derived slot or the id column
   on it is refused (they read a field's text). An unlabeled reader
   (predictions) does not read the label column, present or not.
   Column types (format strings):
     label       b (boolean), c C s S i I l L (integers), f g (floats)
     dense       the label's types
     categorical u U (utf8), z Z (binary), vu vz (views), the integers, and
                 a dictionary (integer indices) of any of these
     multi-hot   +l +L (lists) of the categorical types but dictionaries: a
                 list column's slot is multi-hot (wd_text_spec_arrow), its
                 ids those of its values (a null list or value: none). A
                 CSV line has no lists: wd_parse_line refuses such a spec.
   Refused with WD_ERR_UNSUPPORTED naming the column and its format: any
   other type. Refused with WD_ERR_CORRUPT naming the batch, column and row:
   an array whose structure does not fit the schema (a batch with another
   number of columns, a column with another number of buffers or children,
   or a dictionary where the schema has none or none where it has one; a
   producer that changes a column's type within the same layout, i to f or
   u to U, breaks the interface and is not detected: its buffers are read
   as the schema's type), lengths or offsets out of range (negative,
   decreasing, past a child's or dictionary's length, or a view past its
   data buffer), a missing buffer; with
   WD_ERR_PARSE: a null or other than 0/1 label, a value the CSV rules
   refuse; with WD_ERR_IO: a producer's error, with its get_last_error(),
   and a source whose second pass (tables sized from the data) gives another
   number of rows than its first.
   The interface carries no buffer sizes: a producer whose string data
   buffer is shorter than its last offset breaks the interface's contract,
   which no consumer can see.
   Notes. The spec's header holds every column's name (4095 bytes at most).
   wd_convert cuts a stream into blocks of block_samples rows; a CSV file
   cuts blocks of lines, its header line one of the first block's, so the
   file equal to a stream's is the CSV text converted with the header given
   (wd convert --columns) and no header line.
   Read-ahead. A reader decodes ahead of its caller on threads of its own
   (section 8's ordered pipeline, as wd_convert's: the loader's plan needs
   every block's size before the epoch, a stream's length is unknown),
   within the budgets it is opened with, as a loader is (wd_arrow_reader_desc's
   threads and ram_bytes: wd_loader_desc's names); wd_arrow_reader_open
   starts them, and refuses with WD_ERR_LIMIT a RAM budget that two batches
   do not fit. As wd_train's source a reader keeps its own budgets (the train
   desc's loader_threads and loader_ram budget its files' loaders): open it
   with those the loader would get (the Python package's train() does). The
   batches and every refusal are the same, in the same order, whatever the
   threads; a refusal is given at its place in the sequence (what was read
   ahead of it is not given). The producer's callbacks (get_next, releases)
   are made from those threads, one at a time; close waits for a get_next in
   progress. (The producer's record batches held by batches in flight are
   the producer's memory, outside the budget.) */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
    // Array type description
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    // Release callback
    void (*release)(struct ArrowSchema *);
    // Opaque producer-specific data
    void *private_data;
};
struct ArrowArray {
    // Array data description
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    // Release callback
    void (*release)(struct ArrowArray *);
    // Opaque producer-specific data
    void *private_data;
};
#endif // ARROW_C_DATA_INTERFACE
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
    // Callbacks providing stream functionality
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    // Release callback
    void (*release)(struct ArrowArrayStream *);
    // Opaque producer-specific data
    void *private_data;
};
#endif // ARROW_C_STREAM_INTERFACE

// A CSV spec (section 8) for a stream's columns: d's header is ignored, the
// schema's field names (a struct schema, one child per column) make it,
// joined by d->delimiter (',' unless set); the mapped columns' types are
// checked. Then wd_convert (wd_convert_desc.arrow) or wd_arrow_reader_open.
WDDEF wd_status wd_text_spec_arrow(wd_text_spec *t, const struct ArrowSchema *schema, const wd_csv_desc *d);
/* Reading a stream into batches (decoded ahead: see Read-ahead above): with a CSV spec
   (wd_text_spec_arrow, a .wdr's or a model's: wd_model_spec), each column
   the spec maps found by name in the stream's schema. The reader takes the
   stream (moved: *s is marked released, also on failure) and releases it
   on close. The spec must have its buckets or vocabulary (as
   wd_batch_add's); r keeps a copy of it but not of its vocabulary: the
   spec must outlive r. */
typedef struct wd_arrow_reader_desc {
    const wd_text_spec *spec;       // required
    int batch_size;                 // rows a batch (required: 1..WD_MAX_BLOCK_SAMPLES)
    int unlabeled;                  // 1: the label column may be absent (prediction; labels 0)
    int threads;                    // read-ahead threads, 0..256 (0: 1; a GPU rank's loader takes cores/ranks)
    size_t ram_bytes;               // decoded batches' budget, at least 2 batches (0: available memory / 4)
} wd_arrow_reader_desc;
typedef struct wd_arrow_reader wd_arrow_reader;
WDDEF wd_status wd_arrow_reader_open(const wd_arrow_reader_desc *d, struct ArrowArrayStream *s,
                                     wd_arrow_reader **out);
// The next batch_size samples (fewer at the end) into a batch owned by r,
// valid until the next call; *out = NULL at the end of the stream. This is
// a wd_train_desc.source: wd_arrow_source with source_user = r trains from
// the stream (the batches of a .wdr's samples in file order, so the model
// of wd_train over the file converted from the same stream with no_shuffle
// and the same batch_size, bit for bit).
WDDEF wd_status wd_arrow_reader_next(wd_arrow_reader *r, const wd_batch **out);
WDDEF wd_status wd_arrow_source(void *reader, const wd_batch **out);
WDDEF int64_t wd_arrow_reader_rows(const wd_arrow_reader *r);   // rows given so far (not those read ahead)
WDDEF void wd_arrow_reader_close(wd_arrow_reader *r);

#ifdef __cplusplus
}
#endif
#endif // WIDEDEEP_H

// ==== tier 3: internal ==================================================================================
// What the library's own files build on: the device contract of widedeep_cuda.cu (section 17), the
// per-coordinate update rules its kernels share with the CPU's (section 13) and wd_error_hold (section 2).
// Declared only where WIDEDEEP_IMPLEMENTATION or WIDEDEEP_INTERNAL is defined (widedeep_cuda.cu and the
// tests of the backends, and tools/wd.c for the device plan `wd train --plan` prints and wd_comm_timeout,
// define WIDEDEEP_INTERNAL before the include): a program's files never see these
// names, which may change in any release (tests/public_tu.c, a user's file, declares them as its own).
// A guard of its own: a file that included the header for its declarations and defines
// WIDEDEEP_IMPLEMENTATION before including it again (the stb pattern: tools/wd.c) gets them then.
#if (defined(WIDEDEEP_IMPLEMENTATION) || defined(WIDEDEEP_INTERNAL)) && !defined(WIDEDEEP_TIER3_H)
#define WIDEDEEP_TIER3_H
#ifdef __cplusplus
extern "C" {
#endif
// ---- 2. Status, internal ------------------------------------------------------------------------------
// Clean-up keeps the first error: between wd_error_hold(1) and wd_error_hold(0) (nested; per thread)
// failures return their status but leave wd_last_error() as it is, wd_set_last_error's too. The
// library's clean-up runs so where it calls code that can fail; a backend's destroy does the same.
WDDEF void wd_error_hold(int hold);

// ---- 13. Model, internal: the per-coordinate update rules; bf16 rounding ---------------------------
typedef struct wd_opt {
    int optimizer;                  // wd_optimizer of the deep part
    float lr_deep, lr_wide;         // Adagrad / Adam rate; FTRL alpha
    float beta, l1, l2;             // FTRL
    float b1, b2, eps;              // Adam
    float c1, c2;                   // Adam bias corrections 1 - b1^t, 1 - b2^t (wd_opt_at_step)
} wd_opt;
static inline WD_HD void wd_opt_at_step(wd_opt *o, int64_t step) {   // before step `step` (from 0)
    double t = (double)(step + 1);
    o->c1 = (float)(1.0 - pow((double)o->b1, t));
    o->c2 = (float)(1.0 - pow((double)o->b2, t));
}
static inline WD_HD void wd_opt_adagrad(float *w, float *acc, float g, float lr) {
    *acc += g * g;
    *w -= lr * g / (sqrtf(*acc) + 1e-10f);
}
static inline WD_HD void wd_opt_adam(float *w, float *mo, float *v, float g, const wd_opt *o) {
    *mo = o->b1 * *mo + (1.0f - o->b1) * g;
    *v = o->b2 * *v + (1.0f - o->b2) * g * g;
    *w -= o->lr_deep * (*mo / o->c1) / (sqrtf(*v / o->c2) + o->eps);
}
// FTRL-Proximal with alpha = lr_wide; z and n are its state.
static inline WD_HD void wd_opt_ftrl(float *w, float *z, float *n, float g, const wd_opt *o) {
    float nn = *n + g * g;
    float sigma = (sqrtf(nn) - sqrtf(*n)) / o->lr_wide;
    *z += g - sigma * *w;
    *n = nn;
    float zz = *z;
    *w = (fabsf(zz) <= o->l1 || nn == 0.0f) ? 0.0f
        : -(zz - copysignf(o->l1, zz)) / ((o->beta + sqrtf(nn)) / o->lr_wide + o->l2);
}
// The deep part's rule (embeddings and MLP): s1, s2 its state arrays.
static inline WD_HD void wd_opt_deep(const wd_opt *o, float *w, float *s1, float *s2, float g) {
    if (o->optimizer == WD_ADAM) wd_opt_adam(w, s1, s2, g, o);
    else wd_opt_adagrad(w, s1, g, o->lr_deep);
}
// State arrays per parameter of the deep part's optimizer.
static inline WD_HD int wd_opt_states(int optimizer) { return optimizer == WD_ADAM ? 2 : 1; }

// f32 (its bits) -> bf16 (its bits) as AVX512-BF16's VCVTNEPS2BF16 rounds, the
// rule of every bf16 value of precision bf16 on either backend: to nearest
// even, a NaN stays a (quiet) NaN, a subnormal becomes a zero of its sign.
static inline WD_HD uint16_t wd_bf16_bits(uint32_t u) {
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);
    return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40)
        : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

// ---- 17. Device interface ----------------------------------------------------------------------
/* What a device backend (widedeep_cuda.cu) needs of a model, without seeing
   its internals: sizes, offsets and the host arrays it uploads from and
   downloads back into (the same layout as the CPU reference, so a model
   trained anywhere saves and loads everywhere).
   Layout. dense = [MLP | wide dense weights (D) | wide bias]; in the MLP,
   layer l's weights (out, in) row-major at layer_w[l] (W[o * in + j] takes
   input j to output o), then its biases at layer_b[l], layers from the
   input up. State: dense_s1, emb_s1 = the Adagrad accumulator or Adam's m,
   dense_s2, emb_s2 = Adam's v; for the wide dense weights and bias (FTRL,
   like the wide tables) dense_s1 = z, dense_s2 = n. Tables: rows of table t
   (slots, then crosses) from table_off[t]; emb holds the slot tables' rows. */
typedef struct wd_model_view {
    const wd_model_desc *desc;      // defaults filled in
    const wd_schema *schema;
    int E, D, S, IN, R;             // IN = D + S*E; R = 1 + (deep ? E : 0)
    int nlayers;                    // hidden layers + output (0 without the deep part)
    int layer_in[WD_MAX_LAYERS + 1], layer_out[WD_MAX_LAYERS + 1];
    int64_t layer_w[WD_MAX_LAYERS + 1], layer_b[WD_MAX_LAYERS + 1];   // offsets in dense
    int64_t P_mlp, P;               // dense buffer: MLP | wide dense (D) | wide bias
    int ntables;                    // slots, then crosses
    const int64_t *table_off;       // (ntables + 1) first row of each table
    int64_t wide_rows, emb_rows;
    float *dense, *dense_s1, *dense_s2;        // (P)
    float *wide, *wide_z, *wide_n;             // (wide_rows)
    float *emb, *emb_s1, *emb_s2;              // (emb_rows, E); emb_s2 NULL unless Adam
    int64_t *epoch, *batch, *step, *batch_size;   // training position, read and written
} wd_model_view;
WDDEF void wd_model_view_get(wd_model *m, wd_model_view *v);
// The bucket of crossed slot pair c for ids a and b (section 13's cross rule).
WDDEF uint32_t wd_cross_bucket(uint32_t a, uint32_t b, int c, uint32_t buckets);

/* A backend: one rank's arithmetic on one device, behind a table of
   functions (as wd_comm_ops is for collectives). wd_train's one loop drives
   every backend the same way; evaluation and validation predict through it.
   The CPU backend is below; the CUDA backend is in widedeep_cuda.cu. */
typedef struct wd_backend wd_backend;
typedef struct wd_backend_desc {
    wd_model *model;                // parameters come from and go back to this host model
    int batch;                      // most samples of one step or prediction on this rank
    int rank, ranks;                // this rank of `ranks` training together
    int device;                     // GPU index (CUDA)
    int threads;                    // worker threads (CPU; 0: online cores)
    wd_comm *comm;                  // between the ranks (NULL: one rank)
    wd_cuda_desc cuda;              // CUDA: its settings as wd_cuda_desc_resolve gives them (0: the defaults)
} wd_backend_desc;
typedef struct wd_step_result {
    double loss, weight, samples;   // over all ranks: sum of w * loss, sum of w, samples with w != 0
    int stopped;                    // a rank asked to stop: this step changed nothing anywhere
} wd_step_result;
/* The tail of a step's dense gradient: WD_STEP_TAIL floats summed over the
   ranks with it, so that every rank reads the same at the same step: [0] loss
   sum, [1] weight sum, [2] samples, [3] stops (a rank asked to stop: the step
   changes nothing anywhere). A non-finite loss or gradient read from the sums
   fails every rank alike (numeric halting); any other failure aborts the
   communicator (wd_train's failure policy). */
#define WD_STEP_TAIL 4
typedef struct wd_backend_ops {
    const char *name;               // "cpu", "cuda"
    const wd_allocator *batch_alloc;   // host memory for input batches (pinned), NULL: default
    // Makes one rank's backend, its parameters copied from d->model. With
    // d->comm every rank of the job calls it at once (the communicator is
    // the caller's: a backend never makes or frees it).
    wd_status (*create)(const wd_backend_desc *d, wd_backend **out);
    void (*destroy)(wd_backend *be);
    // Starts a training step on this rank's samples b (b may be reused once
    // it returns); stop = 1 asks every rank to end training, and that step
    // then changes nothing anywhere. At most two steps are in flight.
    wd_status (*submit)(wd_backend *be, const wd_batch *b, int stop);
    // Waits for the oldest submitted step and gives its results. A failed
    // step (a non-finite loss, a device error) changed nothing, and neither
    // does any later step.
    wd_status (*complete)(wd_backend *be, wd_step_result *out);
    // Probabilities of b's samples (no step in flight).
    wd_status (*predict)(wd_backend *be, const wd_batch *b, float *probs);
    // Parameters, optimizer state and position into the host model (no step in flight).
    wd_status (*download)(wd_backend *be);
    // Adds this rank's seconds per wd_stage since create.
    void (*times)(const wd_backend *be, double *stage_s);
    // What runs, for reports ("cpu threads=2 gemm=openblas fp32").
    void (*describe)(const wd_backend *be, char *buf, size_t n);
} wd_backend_ops;
/* A device kind's set-up for wd_train, beside its arithmetic (a table of
   its own: the CPU trains as one rank per process and has none): how many
   devices are present, and the communicators between `nranks` ranks of this
   process on GPUs devices[r]. */
typedef struct wd_device_ops {
    wd_status (*count)(int *n);
    wd_status (*comm_create)(int nranks, const int *devices, wd_comm **ranks);
    void (*comm_destroy)(wd_comm **ranks, int nranks);
} wd_device_ops;
WDDEF const wd_backend_ops *wd_backend_cpu(void);
#ifdef WD_HAVE_CUDA
// In widedeep_cuda.cu: the backend's tables, and communicators for tests (its public calls: section 14).
WDDEF const wd_backend_ops *wd_backend_cuda(void);
WDDEF const wd_device_ops *wd_devices_cuda(void);
// Several ranks on one GPU (tests of the multi-GPU logic on one device).
WDDEF wd_status wd_comm_cuda_local_create(int nranks, int device, wd_comm **ranks);
WDDEF void wd_comm_cuda_local_destroy(wd_comm **ranks, int nranks);
#endif

/* The device plan: every buffer the CUDA backend allocates to train model m
   with batches of `batch` samples on each of `ranks` devices, in bytes, in
   allocation order. The backend allocates exactly these (one cudaMalloc,
   carved) and refuses to start when the device has less free memory.
   `wd train --plan` prints it without touching a device. Buffers are named
   by wd_buf (activations: one entry per layer, index = layer). */
typedef enum wd_buf {
    WD_BUF_DENSE, WD_BUF_DENSE_S1, WD_BUF_DENSE_S2,   // (Pd) parameters, optimizer state; Pd: P with
                                                      // layer 0's rows padded to INp
    WD_BUF_WIDE, WD_BUF_WIDE_Z, WD_BUF_WIDE_N,       // (wide_rows)
    WD_BUF_EMB, WD_BUF_EMB_S1, WD_BUF_EMB_S2,        // (emb_rows, E)
    WD_BUF_BATCH,                   // two input batches laid out like a host wd_batch (index 0, 1)
    WD_BUF_X,                       // (B, INp) MLP input, INp = IN rounded up to a multiple of 16
    WD_BUF_ACT,                     // (B, H_l) one per layer (index = layer)
    WD_BUF_GRAD,                    // two (B, max(INp, H)) gradient buffers (index 0, 1)
    WD_BUF_LOGITS,                  // (5, B) probabilities, dlogit, wide logits, spare (the loss kernel's block sums)
    WD_BUF_DENSE_GRAD,              // (Pd + WD_STEP_TAIL) dense gradient; loss, weight, samples, stops
    WD_BUF_PARTIAL,                 // (B / 256 + 1, max(H, D + 1)) column-sum partials
    WD_BUF_KEYS, WD_BUF_KEYS_ALT,   // (N) sparse row keys and a sort's second buffer; N: rows of
    WD_BUF_OCC, WD_BUF_OCC_ALT,     //     every rank (B x (one-hot slots + crosses + 8 per multi-hot slot))
    WD_BUF_UKEYS, WD_BUF_RUN_COUNT, WD_BUF_RUN_OFF,  // (N + 1) runs of equal keys
    WD_BUF_SEG_COUNT, WD_BUF_SEG_FIRST,              // (N + 1) segments of <= 32 rows per run
    WD_BUF_SEG_RUN,                 // (N + N / 32 + 2) the run of each segment
    WD_BUF_SEG_ROWS,                // (N + N / 32, R) per-segment sums
    WD_BUF_ROWS,                    // (N, R) merged rows
    WD_BUF_EXCHANGE,                // sparse rows sent to every rank and received (several ranks)
    WD_BUF_SORT_SCRATCH,            // CUB temporary storage (bound; checked against CUB at start)
    WD_BUF_GEMM_WS,                 // cuBLASLt workspace
    WD_BUF_STATE,                   // step counter, flags, results (device side)
    WD_BUF_RELU_MASK,               // (B, ceil(H_l / 128) x 16 bytes) one per hidden layer (index = layer):
                                    // the ReLU bit mask cuBLASLt's RELU_AUX_BIAS epilogue writes, DRELU_BGRAD reads
    WD_BUF_DENSE_LP,                // precision bf16 only: (Pd MLP part) the MLP's
                                    // weights rounded to bf16 (2 bytes each)
    WD_BUF_X_LP,                    // precision bf16: (B, INp) the MLP input rounded to bf16
    WD_BUF_GRAD_LP,                 // precision bf16: two (B, max H) bf16 gradients, the hidden layers' dz (index 0, 1)
    WD_BUF_COUNT
} wd_buf;
WDDEF const char *wd_buf_name(int buf);
// Ids per sample the device plan reserves for each multi-hot slot (a batch
// with more is refused with a message naming the slot).
#ifndef WD_PLAN_MULTI_HOT_IDS
#define WD_PLAN_MULTI_HOT_IDS 8
#endif
#define WD_PLAN_MAX (WD_BUF_COUNT + 2 * WD_MAX_LAYERS + 4)
// WD_PLAN_REDZONE=N (test builds only; tests/cudacpu's emulated build): each entry's bytes are its own,
// not rounded up, and at least N bytes lie between one buffer and the next (widedeep_cuda.cu poisons them)
typedef struct wd_plan_entry { int buf, index; int64_t bytes, offset; } wd_plan_entry;
typedef struct wd_plan { int n; wd_plan_entry e[WD_PLAN_MAX]; int64_t total; } wd_plan;
WDDEF wd_status wd_plan_make(const wd_model *m, int batch, int ranks, wd_plan *out);
// The same from a description alone: nothing is allocated (`wd train --plan`).
WDDEF wd_status wd_plan_from_desc(const wd_model_desc *d, int batch, int ranks, wd_plan *out);
// Offset of buffer (buf, index); WD_ERR_INTERNAL naming it when the plan has none.
WDDEF wd_status wd_plan_find(const wd_plan *p, int buf, int index, int64_t *offset, int64_t *bytes);
/* The multi-GPU exchange's cap: every rank sends a block of `cap` merged
   (key, row) pairs per step, a fixed size (no wait for counts; a CUDA graph
   can hold it), its header counting the rows it has. When some rank has
   more, every rank sees it in the gathered headers, the step changes
   nothing and is done again at once with every rank's whole capacity
   (`rows`: every occurrence; the plan's WD_BUF_EXCHANGE), and the cap grows
   to 1.25 x the most rows (whole 256-row units, at most `rows`); every 64
   steps it shrinks the same way to 1.25 x their most rows when that is
   less. A function of the gathered counts alone, so every rank keeps the
   same cap. The first: cap0 (WD_EXCHANGE_CAP) or a quarter of `rows`. */
typedef struct wd_xcap { int64_t cap, rows, win; int steps; } wd_xcap;
WDDEF void wd_xcap_init(wd_xcap *x, int64_t rows, int64_t cap0);
// After a step whose ranks had at most `most` merged rows (sent with x->cap):
// 1 if they did not fit (the step is to be done again), 0 if they did.
WDDEF int wd_xcap_step(wd_xcap *x, int64_t most);
// out = in (wd_cuda_desc, section 15) with the environment's overrides (its
// table) applied, every field checked; WD_ERR_INVALID_ARG names the field or
// the variable. wd_train and wd_evaluate call it on the CUDA device, and the
// backend takes what it gives (wd_backend_desc.cuda).
WDDEF wd_status wd_cuda_desc_resolve(const wd_cuda_desc *in, wd_cuda_desc *out);
// The seconds every communicator waits for its peers (the CPU device's workers, MPI, NCCL, wd-mpi's end):
// WD_COMM_TIMEOUT, a number (atof) above 0, at most 1e9 (a larger one, inf too, is 1e9); unset, empty, 0,
// negative or not a number: WD_COMM_TIMEOUT_DEFAULT.
WDDEF double wd_comm_timeout(void);
#define WD_COMM_TIMEOUT_DEFAULT 600.0
#ifdef WD_TESTING
/* Test builds only (-DWD_TESTING: the Makefile's test flags, never a user's
   build): the backends' failure hooks, WD_CPU_TEST_FAIL and
   WD_CUDA_TEST_FAIL (`name`), in one format: "R:S", rank R's S-th step of
   the run (from 1, whatever the model's step) fails right after
   its collectives went out, before its update; where pre_ok, "R:S:pre" right
   before them (*pre = 1); "R:create", rank R's backend fails at the end of
   its creation (*create = 1, *step = 0). Unset or empty: *step = 0 and
   *create = 0 (off); anything else is WD_ERR_INVALID_ARG naming the variable. */
WDDEF wd_status wd_test_fail_parse(const char *name, int pre_ok, int *rank, long long *step, int *pre, int *create);
#endif
// "rank R failed (status): reason" into buf (cut to n bytes): the one wording
// of a rank's failure, every communicator's abort reason and wd_train's.
WDDEF void wd_rank_failure(char *buf, size_t n, int rank, wd_status st, const char *why);

#ifdef __cplusplus
}
#endif
#endif // WIDEDEEP_IMPLEMENTATION || WIDEDEEP_INTERNAL (tier 3)

// =============================================================================
// IMPLEMENTATION
// =============================================================================
#ifdef WIDEDEEP_IMPLEMENTATION
#ifndef WIDEDEEP_IMPLEMENTATION_DONE
#define WIDEDEEP_IMPLEMENTATION_DONE
#if defined(WD_STATIC) && defined(WD_HAVE_CUDA)
#error "widedeep.h: WD_STATIC and WD_HAVE_CUDA: the CUDA backend links against the extern implementation"
#endif
#if defined(WD_STATIC) != defined(WD__DECLS_STATIC)
#error "widedeep.h: WD_STATIC must be defined (or not) before the first include of the header, as here"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K8) && !defined(__cplusplus)
// A file that included a libc header before this one under -std=c11 (the
// feature macros are read once, by the first): libc then hides the few
// POSIX-2008 names this implementation uses, so they are declared here.
#ifndef O_CLOEXEC
#define O_CLOEXEC __O_CLOEXEC
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY __O_DIRECTORY
#endif
#ifndef CLOCK_MONOTONIC
#define CLOCK_REALTIME 0            // Linux's clock ids, the same on every architecture
#define CLOCK_MONOTONIC 1
#endif
extern ssize_t pread(int fd, void *buf, size_t n, off_t at);
extern size_t strnlen(const char *s, size_t n);
extern int clock_gettime(__clockid_t clock, struct timespec *ts);
extern int nanosleep(const struct timespec *want, struct timespec *left);
extern int sched_yield(void);
extern int gethostname(char *name, size_t len);
#ifndef SIG_BLOCK                   // <signal.h> without POSIX: Linux's generic values (not alpha's, mips's, sparc's)
#define SIG_BLOCK 0
#define SIG_SETMASK 2
typedef __sigset_t sigset_t;
extern int sigfillset(sigset_t *set);
extern int sigdelset(sigset_t *set, int sig);
#endif
extern int pthread_sigmask(int how, const __sigset_t *set, __sigset_t *old);
#endif

#ifdef __cplusplus
#define WD__TLS thread_local
#define WD__CAST(T, x) ((T)(x))
#else
#define WD__TLS _Thread_local
#define WD__CAST(T, x) (x)
#endif
#define WD__MIN(a, b) ((a) < (b) ? (a) : (b))
#define WD__MAX(a, b) ((a) > (b) ? (a) : (b))

// ---- 2. Status ---------------------------------------------------------------
// The first error of a call wins, by one rule: clean-up never writes the
// message. Most clean-up cannot fail (frees, joins, an abort's flag); where
// it calls code that can (a close that joins a thread that failed, a
// backend's drain that polls an aborted group), it runs under wd_error_hold,
// a per-thread depth that wd__fail and wd_set_last_error respect. (Not a
// latch that the first failure shuts and each public call's entry opens:
// that needs an entry hook in every call, and a failure the library
// tolerates (a skipped line, a failed checkpoint training outlives) would
// leave it shut, so the next real error would carry the tolerated one's
// text. A hold is only ever raised in clean-up.)
#define WD__ERR_MAX 1024             // bytes of an error message
static WD__TLS char wd__errbuf[WD__ERR_MAX];
static WD__TLS int wd__err_hold;     // > 0: in a clean-up; failures keep the message (wd_error_hold)

WDDEF const char *wd_status_string(wd_status s) {
    static const char *names[WD_STATUS_COUNT] = {
        "ok", "invalid argument", "out of memory", "I/O error", "bad format",
        "corrupt data", "schema mismatch", "parse error", "limit exceeded",
        "non-finite number", "aborted", "unsupported", "device error", "internal error"};
    return (s >= 0 && s < WD_STATUS_COUNT) ? names[s] : "unknown status";
}
WDDEF const char *wd_last_error(void) { return wd__errbuf; }
WDDEF void wd_set_last_error(const char *msg) {
    if (!wd__err_hold) snprintf(wd__errbuf, sizeof wd__errbuf, "%s", msg ? msg : "");
}
WDDEF void wd_error_hold(int hold) { wd__err_hold += hold ? 1 : wd__err_hold > 0 ? -1 : 0; }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static wd_status wd__fail(wd_status s, const char *fmt, ...) {
    if (wd__err_hold) return s;    // a clean-up's failure: the first error's message stays
    char tmp[sizeof wd__errbuf];   // arguments may point into wd__errbuf itself
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(wd__errbuf, tmp, sizeof tmp);
    return s;
}
// The last `keep` bytes of a path, for bounded messages: the file name at its
// end survives however long the directories before it are.
static const char *wd__tail(const char *p, size_t keep) {
    size_t n = strlen(p);
    return n > keep ? p + (n - keep) : p;
}
#define WD__TRY(expr) do { wd_status wd__st = (expr); if (wd__st != WD_OK) return wd__st; } while (0)

// ---- 3. Allocator --------------------------------------------------------------
static void *wd__default_alloc(size_t n, void *u) { (void)u; return malloc(n); }
static void wd__default_free(void *p, void *u) { (void)u; free(p); }
static wd_allocator wd__alloc_hooks = {wd__default_alloc, wd__default_free, NULL};

WDDEF void wd_set_allocator(const wd_allocator *a) {
    if (a && a->alloc && a->free) wd__alloc_hooks = *a;
    else { wd__alloc_hooks.alloc = wd__default_alloc; wd__alloc_hooks.free = wd__default_free;
        wd__alloc_hooks.user = NULL; }
}
static void *wd__malloc(size_t n) { return wd__alloc_hooks.alloc(n ? n : 1, wd__alloc_hooks.user); }
WDDEF void *wd_alloc(size_t bytes) { return wd__malloc(bytes); }
static void *wd__calloc(size_t n) { void *p = wd__malloc(n); if (p) memset(p, 0, n ? n : 1); return p; }
static void wd__free(void *p) { if (p) wd__alloc_hooks.free(p, wd__alloc_hooks.user); }
WDDEF void wd_free(void *p) { wd__free(p); }
#define WD__NEW(T) ((T *)wd__calloc(sizeof(T)))

// Bytes this process can still get: the least of the memory the kernel calls
// available (MemAvailable), what the address-space limit leaves (ulimit -v),
// what the cgroup (container) limit leaves and the environment variable
// WD_MEMORY_LIMIT (bytes, with an optional K, M, G or T suffix, x 1024^n, as
// the CLI's size options; anything else is refused, naming the variable).
// Large allocations are compared with it first, so that the answer is an
// error naming the sizes, not the OOM killer.
static uint64_t wd__read_u64(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return UINT64_MAX;
    char line[256];
    uint64_t v = UINT64_MAX;
    while (fgets(line, sizeof line, f)) {
        if (key && strncmp(line, key, strlen(key)) != 0) continue;
        unsigned long long x;
        if (sscanf(key ? line + strlen(key) : line, " %llu", &x) == 1) v = (uint64_t)x * (key ? 1024u : 1u);
        break;
    }
    fclose(f);
    return v;
}
// WD_MEMORY_LIMIT's bytes (UINT64_MAX: unset or empty).
static wd_status wd__memory_limit_env(uint64_t *out) {
    *out = UINT64_MAX;
    const char *s = getenv("WD_MEMORY_LIMIT"), *p = s;
    if (!s || !*s) return WD_OK;
    uint64_t v = 0;
    int shift = 0, range = 0;
    if (*p < '0' || *p > '9') goto bad;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) range = 1;
        else v = v * 10 + (uint64_t)(*p - '0');
    }
    if (*p) {
        const char *u = "KMGT", *q = strchr(u, *p >= 'a' ? *p - 32 : *p);
        if (!q) goto bad;
        shift = 10 * (int)(q - u + 1);
        p++;
        if (*p == 'B' || *p == 'b') p++;   // "8GB"
        if (*p) goto bad;
    }
    if (range || v > (UINT64_MAX >> shift))
        return wd__fail(WD_ERR_INVALID_ARG, "WD_MEMORY_LIMIT '%.40s' is out of range", s);
    if (v == 0)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "WD_MEMORY_LIMIT '%.40s': a memory limit of 0 bytes (unset it for no limit)", s);
    *out = v << shift;
    return WD_OK;
bad:
    return wd__fail(WD_ERR_INVALID_ARG,
                    "WD_MEMORY_LIMIT '%.40s' is not a size (bytes, with an optional K, M, G or T suffix)", s);
}
static wd_status wd__memory_left(uint64_t *out) {
    uint64_t cap;
    WD__TRY(wd__memory_limit_env(&cap));   // pretend the machine has no more
    uint64_t left = wd__read_u64("/proc/meminfo", "MemAvailable:");
    left = WD__MIN(left, cap);
    if (left == UINT64_MAX) {
        long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        left = (pages > 0 && psz > 0) ? (uint64_t)pages * (uint64_t)psz : (uint64_t)1 << 30;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        uint64_t used = wd__read_u64("/proc/self/statm", NULL)
            * (uint64_t)sysconf(_SC_PAGESIZE);   // pages of address space
        if (used != UINT64_MAX) left = WD__MIN(left, (uint64_t)rl.rlim_cur > used ? (uint64_t)rl.rlim_cur - used : 0);
    }
    uint64_t cg = wd__read_u64("/sys/fs/cgroup/memory.max", NULL),
        cur = wd__read_u64("/sys/fs/cgroup/memory.current", NULL);
    if (cg != UINT64_MAX && cur != UINT64_MAX) left = WD__MIN(left, cg > cur ? cg - cur : 0);
    *out = left;
    return WD_OK;
}
WDDEF wd_status wd_memory_available(uint64_t *bytes) {
    if (!bytes) return wd__fail(WD_ERR_INVALID_ARG, "wd_memory_available: bytes is NULL");
    return wd__memory_left(bytes);
}
// WD_ERR_NOMEM naming `what` when `bytes` exceed what is left (checked for
// allocations from 64 MiB on: smaller ones simply try).
static wd_status wd__memory_check(uint64_t bytes, const char *what) {
    uint64_t left, cap;
    WD__TRY(wd__memory_limit_env(&cap));   // a bad WD_MEMORY_LIMIT is refused whatever the size
    if (bytes < ((uint64_t)64 << 20)) return WD_OK;
    WD__TRY(wd__memory_left(&left));
    if (bytes > left)
        return wd__fail(WD_ERR_NOMEM, "%s needs %.2f GiB, this machine has %.2f GiB available%s", what,
                        (double)bytes / 1073741824.0, (double)left / 1073741824.0,
                        left == cap ? " (WD_MEMORY_LIMIT)" : "");
    return WD_OK;
}

// A growable byte buffer.
typedef struct wd__buf { uint8_t *p; size_t len, cap; } wd__buf;
static wd_status wd__buf_reserve(wd__buf *b, size_t cap) {
    if (cap <= b->cap) return WD_OK;
    size_t nc = WD__MAX(cap, b->cap + b->cap / 2);
    uint8_t *np = (uint8_t *)wd__malloc(nc);
    if (!np) return wd__fail(WD_ERR_NOMEM, "out of memory (%zu bytes)", nc);
    if (b->len) memcpy(np, b->p, b->len);
    wd__free(b->p);
    b->p = np; b->cap = nc;
    return WD_OK;
}
static wd_status wd__buf_put(wd__buf *b, const void *p, size_t n) {
    WD__TRY(wd__buf_reserve(b, b->len + n));
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return WD_OK;
}
static void wd__buf_free(wd__buf *b) { wd__free(b->p); b->p = NULL; b->len = b->cap = 0; }

static char *wd__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = (char *)wd__malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

// ---- little-endian helpers, CRC32C ------------------------------------------------
static void wd__put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24); }
static void wd__put64(uint8_t *p, uint64_t v) { wd__put32(p, (uint32_t)v); wd__put32(p + 4, (uint32_t)(v >> 32)); }
static uint32_t wd__get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t wd__get64(const uint8_t *p) { return (uint64_t)wd__get32(p) | (uint64_t)wd__get32(p + 4) << 32; }

static uint32_t wd__crc_table[8][256];
static pthread_once_t wd__crc_once = PTHREAD_ONCE_INIT;
static void wd__crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        wd__crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            wd__crc_table[t][i] = (wd__crc_table[t - 1][i] >> 8) ^ wd__crc_table[0][wd__crc_table[t - 1][i] & 0xff];
}
// CRC32C (Castagnoli): the SSE4.2 instruction where the CPU has it, else
// slicing-by-8 tables. Both give the same value (tested).
// wd__crc32c_*(crc, p, n) extends crc (the CRC of earlier bytes, 0 at the start).
static uint32_t wd__crc32c_sw(uint32_t crc, const void *data, size_t n) {
    pthread_once(&wd__crc_once, wd__crc_init);
    const uint8_t *p = (const uint8_t *)data;
    uint32_t c = ~crc;
    while (n >= 8) {
        uint32_t lo = wd__get32(p) ^ c, hi = wd__get32(p + 4);
        c = wd__crc_table[7][lo & 0xff] ^ wd__crc_table[6][(lo >> 8) & 0xff] ^
            wd__crc_table[5][(lo >> 16) & 0xff] ^ wd__crc_table[4][lo >> 24] ^
            wd__crc_table[3][hi & 0xff] ^ wd__crc_table[2][(hi >> 8) & 0xff] ^
            wd__crc_table[1][(hi >> 16) & 0xff] ^ wd__crc_table[0][hi >> 24];
        p += 8; n -= 8;
    }
    while (n--) c = (c >> 8) ^ wd__crc_table[0][(c ^ *p++) & 0xff];
    return c ^ 0xFFFFFFFFu;
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
__attribute__((target("sse4.2"))) static uint32_t wd__crc32c_hw(uint32_t crc, const void *data, size_t n) {
    const uint8_t *p = (const uint8_t *)data;
    uint64_t c = ~crc;
    while (n >= 8) { uint64_t v; memcpy(&v, p, 8); c = _mm_crc32_u64(c, v); p += 8; n -= 8; }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
static int wd__crc_hw;
static pthread_once_t wd__crc_hw_once = PTHREAD_ONCE_INIT;
static void wd__crc_hw_init(void) { wd__crc_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0; }
static int wd__crc_hw_ok(void) { pthread_once(&wd__crc_hw_once, wd__crc_hw_init); return wd__crc_hw; }
static uint32_t wd__crc32c_ext(uint32_t crc, const void *data, size_t n) {
    return wd__crc_hw_ok() ? wd__crc32c_hw(crc, data, n) : wd__crc32c_sw(crc, data, n); }
#else
static uint32_t wd__crc32c_ext(uint32_t crc, const void *data, size_t n) { return wd__crc32c_sw(crc, data, n); }
#endif
static uint32_t wd__crc32c(const void *data, size_t n) { return wd__crc32c_ext(0, data, n); }

static double wd__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Every thread the library starts is started here, with the asynchronous
// signals blocked in it (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1, SIGALRM,
// SIGCHLD, ...: all but the faults a thread raises itself, SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGTRAP, SIGSYS, and SIGPROF, which profilers send to
// every thread), so that a signal sent to the process runs the
// application's handler on one of its own threads, never on the library's.
// The caller's mask is left as it was. Returns pthread_create's result.
static int wd__thread_start(pthread_t *th, void *(*fn)(void *), void *arg) {
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGPROF};
    sigset_t block, old;
    sigfillset(&block);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&block, faults[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int e = pthread_create(th, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return e;
}

// ---- 4. Schema -----------------------------------------------------------------------
WDDEF wd_status wd_schema_check(const wd_schema *s) {
    if (!s) return wd__fail(WD_ERR_INVALID_ARG, "schema is NULL");
    if (s->ndense < 0 || s->ndense > WD_MAX_DENSE)
        return wd__fail(WD_ERR_LIMIT, "schema: %d dense columns (limit %d)", s->ndense, WD_MAX_DENSE);
    if (s->nslots < 0 || s->nslots > WD_MAX_SLOTS)
        return wd__fail(WD_ERR_LIMIT, "schema: %d slots (limit %d)", s->nslots, WD_MAX_SLOTS);
    if (s->ndense + s->nslots == 0) return wd__fail(WD_ERR_INVALID_ARG, "schema has no features");
    for (int k = 0; k < s->nslots; k++) {
        if (s->slot[k].buckets == 0)
            return wd__fail(WD_ERR_INVALID_ARG, "schema: slot %d (%.31s) has 0 buckets", k, s->slot[k].name);
        if (s->slot[k].kind != WD_ONE_HOT && s->slot[k].kind != WD_MULTI_HOT)
            return wd__fail(WD_ERR_INVALID_ARG, "schema: slot %d has kind %d", k, s->slot[k].kind);
        if (memchr(s->slot[k].name, 0, WD_NAME_MAX) == NULL)
            return wd__fail(WD_ERR_INVALID_ARG, "schema: slot %d name is not NUL-terminated", k);
    }
    return WD_OK;
}
WDDEF int wd_schema_equal(const wd_schema *a, const wd_schema *b) {
    if (a->ndense != b->ndense || a->nslots != b->nslots) return 0;
    for (int k = 0; k < a->nslots; k++)
        if (a->slot[k].buckets != b->slot[k].buckets || a->slot[k].kind != b->slot[k].kind ||
            strncmp(a->slot[k].name, b->slot[k].name, WD_NAME_MAX) != 0) return 0;
    return 1;
}
WDDEF void wd_schema_criteo(wd_schema *s, uint32_t buckets) {
    memset(s, 0, sizeof *s);
    s->ndense = 13;
    s->nslots = 26;
    for (int k = 0; k < 26; k++) {
        snprintf(s->slot[k].name, WD_NAME_MAX, "C%d", k + 1);
        s->slot[k].buckets = buckets ? buckets : WD_DEFAULT_BUCKETS;
        s->slot[k].kind = WD_ONE_HOT;
    }
}

// ---- 5. Batch --------------------------------------------------------------------------
static size_t wd__align64(size_t x) { return (x + 63) & ~(size_t)63; }

// Lays out every array of a batch in mem (NULL: only computes the size).
static size_t wd__batch_carve(wd_batch *b, uint8_t *mem, int cap, int64_t nnz_cap) {
    size_t off = 0;
#define WD__CARVE(field, T, count) do { if (mem) field = (T *)(mem + off); \
    off += wd__align64(sizeof(T) * (size_t)(count)); } while (0)
    WD__CARVE(b->label, float, cap);
    WD__CARVE(b->weight, float, cap);
    WD__CARVE(b->dense, float, (size_t)cap * (size_t)b->ndense);
    for (int k = 0; k < b->nslots; k++) {
        if (b->kind[k] == WD_MULTI_HOT) {
            WD__CARVE(b->offs[k], uint32_t, (size_t)cap + 1);
            WD__CARVE(b->ids[k], uint32_t, nnz_cap);
        } else {
            if (mem) b->offs[k] = NULL;
            WD__CARVE(b->ids[k], uint32_t, cap);
        }
    }
#undef WD__CARVE
    return off;
}

WDDEF wd_status wd_batch_init(wd_batch *b, const wd_schema *s, int cap, int64_t nnz_cap) {
    return wd_batch_init_with(b, s, cap, nnz_cap, NULL);
}
WDDEF wd_status wd_batch_init_with(wd_batch *b, const wd_schema *s, int cap, int64_t nnz_cap, const wd_allocator *a) {
    if (!b || !s) return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_init: %s is NULL", b ? "the schema" : "the batch");
    if (cap < 0 || nnz_cap < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_init: capacity %d / %lld ids is negative", cap,
                        (long long)nnz_cap);
    if (s->ndense < 0 || s->ndense > WD_MAX_DENSE || s->nslots < 0 || s->nslots > WD_MAX_SLOTS)
        return wd__fail(WD_ERR_LIMIT, "wd_batch_init: %d dense/%d slots (limits %d/%d)", s->ndense, s->nslots,
                        WD_MAX_DENSE, WD_MAX_SLOTS);
    for (int k = 0; k < s->nslots; k++)
        if (s->slot[k].kind != WD_ONE_HOT && s->slot[k].kind != WD_MULTI_HOT)
            return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_init: slot %d has kind %d", k, s->slot[k].kind);
    memset(b, 0, sizeof *b);
    b->alloc = a;
    b->ndense = s->ndense;
    b->nslots = s->nslots;
    for (int k = 0; k < s->nslots; k++) b->kind[k] = s->slot[k].kind;
    return wd_batch_reserve(b, cap, nnz_cap);
}

WDDEF wd_status wd_batch_reserve(wd_batch *b, int cap, int64_t nnz_cap) {
    if (!b) return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_reserve: NULL batch");
    if (cap < 0 || nnz_cap < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_reserve: capacity %d / %lld ids is negative", cap,
                        (long long)nnz_cap);
    if (b->mem && cap <= b->cap && nnz_cap <= b->nnz_cap) return WD_OK;
    cap = WD__MAX(cap, b->cap);
    nnz_cap = WD__MAX(nnz_cap, b->nnz_cap);
    if (b->mem) {   // grow by at least half so repeated appends stay linear
        if (cap > b->cap) cap = WD__MAX(cap, b->cap + b->cap / 2);
        if (nnz_cap > b->nnz_cap) nnz_cap = WD__MAX(nnz_cap, b->nnz_cap + b->nnz_cap / 2);
    }
    wd_batch nb = *b;
    size_t bytes = wd__batch_carve(&nb, NULL, cap, nnz_cap);
    char what[96];
    snprintf(what, sizeof what, "a batch of %d samples", cap);
    WD__TRY(wd__memory_check(bytes, what));
    uint8_t *mem = (uint8_t *)(b->alloc ? b->alloc->alloc(bytes, b->alloc->user) : wd__malloc(bytes));
    if (!mem) return wd__fail(WD_ERR_NOMEM, "out of memory for a batch of %d samples (%zu bytes)", cap, bytes);
    wd__batch_carve(&nb, mem, cap, nnz_cap);
    nb.mem = mem; nb.mem_bytes = bytes; nb.cap = cap; nb.nnz_cap = nnz_cap;
    if (b->mem) {   // the whole old capacity: a sample being assembled survives growth
        size_t n = (size_t)b->cap;
        memcpy(nb.label, b->label, n * sizeof(float));
        memcpy(nb.weight, b->weight, n * sizeof(float));
        memcpy(nb.dense, b->dense, n * (size_t)b->ndense * sizeof(float));
        for (int k = 0; k < b->nslots; k++) {
            if (b->kind[k] == WD_MULTI_HOT) {
                memcpy(nb.offs[k], b->offs[k], (n + 1) * sizeof(uint32_t));
                memcpy(nb.ids[k], b->ids[k], (size_t)b->nnz_cap * sizeof(uint32_t));
            } else memcpy(nb.ids[k], b->ids[k], n * sizeof(uint32_t));
        }
    } else {
        nb.n = 0;
        for (int k = 0; k < nb.nslots; k++) if (nb.offs[k]) nb.offs[k][0] = 0;
    }
    if (b->mem) { if (b->alloc) b->alloc->free(b->mem, b->alloc->user); else wd__free(b->mem); }
    *b = nb;
    return WD_OK;
}

WDDEF void wd_batch_free(wd_batch *b) {
    if (!b) return;
    if (b->mem) { if (b->alloc) b->alloc->free(b->mem, b->alloc->user); else wd__free(b->mem); }
    memset(b, 0, sizeof *b);
}
WDDEF void wd_batch_clear(wd_batch *b) {
    if (!b) return;
    b->n = 0;
    for (int k = 0; k < b->nslots && k < WD_MAX_SLOTS; k++) if (b->offs[k]) b->offs[k][0] = 0;
}

// Whether b is laid out as schema s says (dense and slot counts, each slot's
// kind): `who` names the call, or the file of block blk (blk >= 0), and
// `whose` what s belongs to, in the message.
static wd_status wd__batch_layout(const wd_batch *b, const wd_schema *s, const char *who, long long blk,
                                  const char *whose) {
    char at[40] = "";
    if (b->ndense != s->ndense || b->nslots != s->nslots) {
        if (blk >= 0) snprintf(at, sizeof at, ": block %lld", blk);
        return wd__fail(WD_ERR_SCHEMA, "%s%s: the batch has %d dense/%d slots, the %s %d/%d", who, at, b->ndense,
                        b->nslots, whose, s->ndense, s->nslots);
    }
    for (int k = 0; k < s->nslots; k++)
        if (b->kind[k] != s->slot[k].kind) {
            if (blk >= 0) snprintf(at, sizeof at, ": block %lld", blk);
            return wd__fail(WD_ERR_SCHEMA, "%s%s: slot %d (%.31s) is %s in the batch, %s in the %s", who, at, k,
                            s->slot[k].name, b->kind[k] == WD_MULTI_HOT ? "multi-hot" : "one-hot",
                            s->slot[k].kind == WD_MULTI_HOT ? "multi-hot" : "one-hot", whose);
        }
    return WD_OK;
}

WDDEF const uint32_t *wd_batch_sample_ids(const wd_batch *b, int k, int i, int *count) {
    if (b->kind[k] == WD_MULTI_HOT) {
        *count = (int)(b->offs[k][i + 1] - b->offs[k][i]);
        return b->ids[k] + b->offs[k][i];
    }
    *count = 1;
    return b->ids[k] + i;
}

WDDEF wd_status wd_batch_append(wd_batch *dst, const wd_batch *src, int from, int count) {
    if (!dst || !src) return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_append: %s is NULL", dst ? "src" : "dst");
    if (from < 0 || count < 0 || (int64_t)from + count > src->n)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_append: samples [%d, %lld) of a batch of %d", from,
                        (long long)from + count, src->n);
    if (dst->ndense != src->ndense || dst->nslots != src->nslots)
        return wd__fail(WD_ERR_SCHEMA, "wd_batch_append: %d dense/%d slots into %d/%d", src->ndense, src->nslots,
                        dst->ndense, dst->nslots);
    int64_t need_nnz = 0;
    for (int k = 0; k < src->nslots; k++) {
        if (src->kind[k] != dst->kind[k]) return wd__fail(WD_ERR_SCHEMA, "wd_batch_append: slot kinds differ");
        if (src->kind[k] == WD_MULTI_HOT) {
            int64_t have = dst->n ? dst->offs[k][dst->n] : 0;
            need_nnz = WD__MAX(need_nnz, have + (int64_t)(src->offs[k][from + count] - src->offs[k][from]));
        }
    }
    WD__TRY(wd_batch_reserve(dst, dst->n + count, need_nnz));
    size_t n0 = (size_t)dst->n, c = (size_t)count, D = (size_t)src->ndense;
    memcpy(dst->label + n0, src->label + from, c * sizeof(float));
    memcpy(dst->weight + n0, src->weight + from, c * sizeof(float));
    memcpy(dst->dense + n0 * D, src->dense + (size_t)from * D, c * D * sizeof(float));
    for (int k = 0; k < src->nslots; k++) {
        if (src->kind[k] == WD_MULTI_HOT) {
            uint32_t base = dst->offs[k][n0], s0 = src->offs[k][from];
            for (size_t i = 0; i < c; i++) dst->offs[k][n0 + i + 1] = base + (src->offs[k][from + i + 1] - s0);
            memcpy(dst->ids[k] + base, src->ids[k] + s0, (size_t)(src->offs[k][from + count] - s0) * sizeof(uint32_t));
        } else memcpy(dst->ids[k] + n0, src->ids[k] + from, c * sizeof(uint32_t));
    }
    dst->n += count;
    return WD_OK;
}

// ---- 6. Hashing ------------------------------------------------------------------------
WDDEF uint64_t wd_hash_bytes(const void *data, size_t n, uint64_t seed) {
    const uint8_t *p = (const uint8_t *)data;
    uint64_t h = wd_mix64(seed ^ 0x9e3779b97f4a7c15ULL) ^ (uint64_t)n * 0xff51afd7ed558ccdULL;
    while (n >= 8) {
        h = wd_mix64(h ^ wd__get64(p)) * 0x9e3779b97f4a7c15ULL;
        p += 8; n -= 8;
    }
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++) t |= (uint64_t)p[i] << (8 * i);
    return wd_mix64(h ^ t ^ 0x5851f42d4c957f2dULL);
}
WDDEF uint32_t wd_hash_bucket(const char *s, size_t n, int slot, uint32_t buckets) {
    if (!buckets || (!s && n)) return 0;   // no buckets, no bytes: nothing to choose
    return (uint32_t)(wd_hash_bytes(s, n, (uint64_t)slot) % buckets);
}
WDDEF float wd_count_feature(int64_t x) {
    return x >= 0 ? (float)log1p((double)x) : -(float)log1p(-(double)x);
}

// ---- 7. Records --------------------------------------------------------------------------
#define WD__MAGIC "\x89WDR\r\n\x1a\n"
#define WD__VERSION 3u   // the newest version read; a file is written as the lowest that holds it
#define WD__HDR_FIXED 96u
#define WD__SLOT_BYTES 48u
#define WD__BLK_HDR 32u
#define WD__BLK_MAGIC 0x4B424457u   // "WDBK"
#define WD__FTR_MAGIC 0x54464457u   // "WDFT"
#define WD__END_MAGIC 0x444E4457u   // "WDND"
#define WD__TRAILER 24u

// Byte shuffle of n 4-byte values: dst[p*n + i] = byte p of src[i].
static void wd__shuffle4(uint8_t *dst, const void *srcv, size_t n) {
    const uint8_t *src = (const uint8_t *)srcv;
    uint8_t *d0 = dst, *d1 = dst + n, *d2 = dst + 2 * n, *d3 = dst + 3 * n;
    for (size_t i = 0; i < n; i++) {
        d0[i] = src[4 * i]; d1[i] = src[4 * i + 1]; d2[i] = src[4 * i + 2]; d3[i] = src[4 * i + 3];
    }
}
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
// The inverse: 4-byte element i*stride of out gathered from the planes of
// src. Returns the largest value seen; *nonfinite gets 1 if any value, read
// as a float, is NaN or Inf. (Validation rides along with the copy.)
static uint32_t wd__unshuffle4(void *outv, size_t stride, const uint8_t *src, size_t n, uint32_t *nonfinite) {
    const uint8_t *s0 = src, *s1 = src + n, *s2 = src + 2 * n, *s3 = src + 3 * n;
    uint8_t *out = (uint8_t *)outv;
    uint32_t mx = 0, nf = 0;
    size_t i = 0;
#if defined(__SSE2__)
    if (stride == 1 && n >= 16) {   // 16 values per step: interleave the planes with unpacks
        const __m128i bias = _mm_set1_epi32((int)0x80000000u), em = _mm_set1_epi32(0x7f800000);
        __m128i vmax = bias, vnf = _mm_setzero_si128();   // max kept biased (signed compare)
        for (; i + 16 <= n; i += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s0 + i)), b = _mm_loadu_si128((const __m128i *)(s1 + i));
            __m128i c = _mm_loadu_si128((const __m128i *)(s2 + i)), d = _mm_loadu_si128((const __m128i *)(s3 + i));
            __m128i ablo = _mm_unpacklo_epi8(a, b), abhi = _mm_unpackhi_epi8(a, b);
            __m128i cdlo = _mm_unpacklo_epi8(c, d), cdhi = _mm_unpackhi_epi8(c, d);
            __m128i v[4] = {_mm_unpacklo_epi16(ablo, cdlo), _mm_unpackhi_epi16(ablo, cdlo),
                            _mm_unpacklo_epi16(abhi, cdhi), _mm_unpackhi_epi16(abhi, cdhi)};
            for (int q = 0; q < 4; q++) {
                _mm_storeu_si128((__m128i *)(out + 4 * (i + 4 * (size_t)q)), v[q]);
                __m128i vb = _mm_xor_si128(v[q], bias), gt = _mm_cmpgt_epi32(vb, vmax);
                vmax = _mm_or_si128(_mm_and_si128(gt, vb), _mm_andnot_si128(gt, vmax));
                vnf = _mm_or_si128(vnf, _mm_cmpeq_epi32(_mm_and_si128(v[q], em), em));
            }
        }
        uint32_t lanes[4], flags[4];
        _mm_storeu_si128((__m128i *)lanes, _mm_xor_si128(vmax, bias));
        _mm_storeu_si128((__m128i *)flags, vnf);
        for (int q = 0; q < 4; q++) { mx = lanes[q] > mx ? lanes[q] : mx; nf |= flags[q] != 0; }
    }
#endif
    for (; i < n; i++) {
        uint32_t v = (uint32_t)s0[i] | (uint32_t)s1[i] << 8 | (uint32_t)s2[i] << 16 | (uint32_t)s3[i] << 24;
        memcpy(out + 4 * i * stride, &v, 4);
        mx = v > mx ? v : mx;
        nf |= (v & 0x7f800000u) == 0x7f800000u;
    }
    *nonfinite |= nf;
    return mx;
}

// Checks the values of samples [from, from+n) of b against the schema. A
// label outside [0, 1] or an id outside its slot is `bad`: WD_ERR_CORRUPT
// in data read from a file, WD_ERR_INVALID_ARG in a caller's batch (as
// wd_predict's); a NaN or infinity is WD_ERR_NUMERIC.
static wd_status wd__check_values(const wd_schema *s, const wd_batch *b, int from, int n, const char *where,
                                  wd_status bad) {
    int badlw = 0;   // branch-free scan first; locate only on failure
    for (int i = from; i < from + n; i++)
        badlw |= !(b->label[i] >= 0.0f) | !(b->label[i] <= 1.0f) | !(b->weight[i] >= 0.0f) |
                 !(b->weight[i] <= WD_MAX_WEIGHT);
    for (int i = from; badlw && i < from + n; i++) {
        float y = b->label[i];
        if (!(y >= 0.0f && y <= 1.0f))
            return wd__fail(!isfinite(y) ? WD_ERR_NUMERIC : bad, "%s: sample %d: label %g is not in [0,1]", where, i,
                            (double)y);
        if (!(b->weight[i] >= 0.0f && b->weight[i] <= WD_MAX_WEIGHT))
            return wd__fail(WD_ERR_NUMERIC, "%s: sample %d: weight %g is outside [0, %g] (WD_MAX_WEIGHT)", where, i,
                            (double)b->weight[i], (double)WD_MAX_WEIGHT);
    }
    const float *dv = b->dense + (size_t)from * (size_t)s->ndense;
    size_t nd = (size_t)n * (size_t)s->ndense;
    uint32_t nonfinite = 0;   // branch-free scan (vectorises); locate only on failure
    for (size_t j = 0; j < nd; j++) { uint32_t u; memcpy(&u, &dv[j], 4);
        nonfinite |= (u & 0x7f800000u) == 0x7f800000u; }
    for (size_t j = 0; nonfinite && j < nd; j++)
        if (!isfinite(dv[j]))
            return wd__fail(WD_ERR_NUMERIC, "%s: sample %d: dense column %d is %g", where,
                            from + (int)(j / (size_t)s->ndense), (int)(j % (size_t)s->ndense), (double)dv[j]);
    for (int k = 0; k < s->nslots; k++) {
        const uint32_t *ids; size_t cnt;
        if (s->slot[k].kind == WD_MULTI_HOT) { ids = b->ids[k] + b->offs[k][from];
            cnt = b->offs[k][from + n] - b->offs[k][from]; }
        else { ids = b->ids[k] + from; cnt = (size_t)n; }
        uint32_t mx = 0;
        for (size_t j = 0; j < cnt; j++) mx = ids[j] > mx ? ids[j] : mx;
        if (cnt && mx >= s->slot[k].buckets) {   // rare: find the sample to name it
            int i = from;
            for (i = from; i < from + n; i++) {
                int c;
                const uint32_t *q = wd_batch_sample_ids(b, k, i, &c);
                int hit = 0;
                for (int j = 0; j < c; j++) hit |= q[j] >= s->slot[k].buckets;
                if (hit) break;
            }
            return wd__fail(bad, "%s: sample %d: slot %d (%s): id %u is outside its %u buckets", where, i, k,
                            s->slot[k].name, mx, s->slot[k].buckets);
        }
    }
    return WD_OK;
}

// Encodes samples [from, from+n) of b as one block (header + zstd frame) into out.
static wd_status wd__block_encode(const wd_schema *s, const wd_batch *b, int from, int n,
                                  ZSTD_CCtx *cc, int level, wd__buf *raw, wd__buf *out) {
    size_t N = (size_t)n, raw_bytes = 4 * N * (1 + (size_t)s->ndense);
    uint32_t nnz = 0;
    for (int k = 0; k < s->nslots; k++) {
        if (s->slot[k].kind == WD_MULTI_HOT) {
            size_t c = b->offs[k][from + n] - b->offs[k][from];
            if ((uint64_t)nnz + c > 0xFFFFFFFFu) return wd__fail(WD_ERR_LIMIT, "block holds over 2^32 multi-hot ids");
            nnz += (uint32_t)c;
            raw_bytes += 4 * (N + c);
        } else raw_bytes += 4 * N;
    }
    if (raw_bytes > WD_MAX_BLOCK_BYTES)
        return wd__fail(WD_ERR_LIMIT, "block of %zu raw bytes exceeds the limit", raw_bytes);
    raw->len = 0;
    WD__TRY(wd__buf_reserve(raw, raw_bytes + 16 * N));
    uint8_t *p = raw->p;
    wd__shuffle4(p, b->label + from, N); p += 4 * N;
    // dense is row-major in memory, columnar on disk: gather each column first
    uint32_t *col = (uint32_t *)(raw->p + raw_bytes);   // scratch after the payload (16*N spare)
    for (int d = 0; d < s->ndense; d++) {
        const float *src = b->dense + (size_t)from * (size_t)s->ndense + (size_t)d;
        for (size_t i = 0; i < N; i++) memcpy(&col[i], &src[i * (size_t)s->ndense], 4);
        wd__shuffle4(p, col, N); p += 4 * N;
    }
    for (int k = 0; k < s->nslots; k++) {
        if (s->slot[k].kind == WD_MULTI_HOT) {
            const uint32_t *o = b->offs[k] + from;
            for (size_t i = 0; i < N; i++) col[i] = o[i + 1] - o[i];
            wd__shuffle4(p, col, N); p += 4 * N;
            size_t c = o[N] - o[0];
            // ids may be many: shuffle straight from the batch
            wd__shuffle4(p, b->ids[k] + o[0], c); p += 4 * c;
        } else { wd__shuffle4(p, b->ids[k] + from, N); p += 4 * N; }
    }
    size_t bound = ZSTD_compressBound(raw_bytes);
    out->len = 0;
    WD__TRY(wd__buf_reserve(out, WD__BLK_HDR + bound));
    size_t comp = ZSTD_compressCCtx(cc, out->p + WD__BLK_HDR, bound, raw->p, raw_bytes, level);
    if (ZSTD_isError(comp)) return wd__fail(WD_ERR_INTERNAL, "zstd compression failed: %s", ZSTD_getErrorName(comp));
    uint8_t *h = out->p;
    wd__put32(h, WD__BLK_MAGIC);
    wd__put32(h + 4, (uint32_t)n);
    wd__put32(h + 8, (uint32_t)comp);
    wd__put32(h + 12, (uint32_t)raw_bytes);
    wd__put32(h + 16, nnz);
    wd__put32(h + 20, 0);
    wd__put32(h + 24, wd__crc32c(out->p + WD__BLK_HDR, comp));
    wd__put32(h + 28, wd__crc32c(h, 28));
    out->len = WD__BLK_HDR + comp;
    return WD_OK;
}

static wd_status wd__write_all(int fd, const void *p, size_t n, const char *path) {
    const uint8_t *c = (const uint8_t *)p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return wd__fail(WD_ERR_IO, "%s: write failed: %s", path, strerror(errno)); }
        c += w; n -= (size_t)w;
    }
    return WD_OK;
}
static wd_status wd__pread_all(int fd, void *p, size_t n, int64_t off, const char *path) {
    uint8_t *c = (uint8_t *)p;
    while (n) {
        ssize_t r = pread(fd, c, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return wd__fail(WD_ERR_IO, "%s: read failed at offset %lld: %s", path, (long long)off, strerror(errno)); }
        if (r == 0) return wd__fail(WD_ERR_CORRUPT, "%s: unexpected end of file at offset %lld", path, (long long)off);
        c += r; n -= (size_t)r; off += r;
    }
    return WD_OK;
}

// Temporary-file-then-rename output shared by the writers of this library.
typedef struct wd__outfile { int fd; char *path, *tmp; int64_t bytes; } wd__outfile;
#ifdef NAME_MAX
#define WD__NAME_MAX NAME_MAX
#else
#define WD__NAME_MAX 255
#endif
// The name `path` is written under until it is complete: "<path>.tmp-<pid>",
// or, where that last component would pass NAME_MAX (an output name within
// 12 bytes of it), the name cut, with a hash of the whole name to keep two
// long names apart: "<cut>~<16 hex digits>.tmp-<pid>". buf: strlen(path) + 32
// bytes (less cuts it).
static void wd__temp_name(char *buf, size_t n, const char *path) {
    char suffix[32];
    size_t k = (size_t)snprintf(suffix, sizeof suffix, ".tmp-%ld", (long)getpid());
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t bl = strlen(base);
    if (bl + k <= WD__NAME_MAX) { snprintf(buf, n, "%s%s", path, suffix); return; }
    snprintf(buf, n, "%.*s%.*s~%016llx%s", (int)(base - path), path, (int)(WD__NAME_MAX - k - 17), base,
             (unsigned long long)wd_hash_bytes(base, bl, 0x7e3b), suffix);
}
WDDEF void wd_temp_name(char *buf, size_t n, const char *path) {
    if (buf && n && !path) *buf = 0;
    if (buf && n && path) wd__temp_name(buf, n, path);
}
static wd_status wd__out_open(wd__outfile *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->fd = -1;
    size_t n = strlen(path) + 32;
    o->path = wd__strdup(path);
    o->tmp = (char *)wd__malloc(n);
    if (!o->path || !o->tmp) { wd__free(o->path); wd__free(o->tmp); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    wd__temp_name(o->tmp, n, path);
    o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->fd < 0) {
        wd_status st = wd__fail(WD_ERR_IO, "%s: cannot create: %s", path, strerror(errno));   // the name as written
        wd__free(o->path); wd__free(o->tmp);
        return st;
    }
    return WD_OK;
}
static wd_status wd__out_write(wd__outfile *o, const void *p, size_t n) {
    WD__TRY(wd__write_all(o->fd, p, n, o->path));
    o->bytes += (int64_t)n;
    return WD_OK;
}
static void wd__out_abort(wd__outfile *o) {
    if (o->fd >= 0) close(o->fd);
    if (o->tmp) unlink(o->tmp);
    wd__free(o->path); wd__free(o->tmp);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}
// fsync, close, rename onto the final name, fsync the directory.
static wd_status wd__out_commit(wd__outfile *o) {
    if (fsync(o->fd) != 0) {
        wd_status st = wd__fail(WD_ERR_IO, "%s: fsync failed: %s", o->path, strerror(errno));
        wd__out_abort(o);
        return st;
    }
    int rc = close(o->fd);
    o->fd = -1;
    if (rc != 0 || rename(o->tmp, o->path) != 0) {
        wd_status st = wd__fail(WD_ERR_IO, "%s: cannot finish writing: %s", o->path, strerror(errno));
        wd__out_abort(o);
        return st;
    }
    char *slash = strrchr(o->path, '/');
    if (slash) *slash = 0;
    int dfd = open(slash ? (o->path[0] ? o->path : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    wd__free(o->path); wd__free(o->tmp);
    memset(o, 0, sizeof *o);
    o->fd = -1;
    return WD_OK;
}

// A vocabulary (see wd_vocab): stored in a version-2 file header, after the
// slot entries: per slot an i64 count n (-1: the slot hashes) then n u64
// value hashes in id order.
struct wd_vocab {
    int nslots;
    int64_t n[WD_MAX_SLOTS];        // values with an id of their own (-1: the slot hashes)
    uint32_t rows[WD_MAX_SLOTS];    // the slot's table: ids 0 .. rows - 1 (n + 1 <= rows; ids past n unused yet)
    uint64_t *hash[WD_MAX_SLOTS];   // (n) their hashes in id order: hash[i] has id i + 1
    uint64_t *key[WD_MAX_SLOTS];    // lookup, open addressing: key[j] has id val[j] (val 0: empty)
    uint32_t *val[WD_MAX_SLOTS];
    uint64_t mask[WD_MAX_SLOTS];
    uint64_t salt;                  // the tables' secret key (wd__table_salt)
};
static void wd__vocab_free(wd_vocab *v) {
    if (!v) return;
    for (int k = 0; k < WD_MAX_SLOTS; k++) { wd__free(v->hash[k]); wd__free(v->key[k]); wd__free(v->val[k]); }
    wd__free(v);
}
// Hash tables whose keys come from a file or from input text (a stored
// vocabulary, the values counted by wd_convert) place a key by a hash keyed
// with a secret: with the bare wd_mix64(h), which is invertible, a file could
// list values that all land in one slot and make opening it quadratic (320k
// values: 39 s to open, 0.03 s keyed). The secret is drawn per table from the clock, an address
// and a counter, so whoever wrote the file cannot aim at it; with it,
// probe sequences stay short whatever the values, and opening takes time
// proportional to the file. The tables only place keys: every id, count and
// output is the same whatever the secret, so runs stay deterministic. (A
// sorted array with binary search would need no secret but costs log n
// cache misses per value looked up, on the conversion's hot path.)
static uint64_t wd__table_salt(const void *table) {
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    return wd_mix64(wd_mix64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)(uintptr_t)table)
                    ^ c * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&counter);
}
static inline uint64_t wd__table_slot(uint64_t h, uint64_t salt) { return wd_mix64(wd_mix64(h ^ salt) + salt); }
// The lookup tables of every slot with a vocabulary (hash[] filled).
static wd_status wd__vocab_index(wd_vocab *v) {
    v->salt = wd__table_salt(v);
    for (int k = 0; k < v->nslots; k++) {
        if (v->n[k] < 0) continue;
        uint64_t cap = 16;
        while (cap < 2 * (uint64_t)v->n[k] + 2) cap *= 2;
        v->key[k] = (uint64_t *)wd__calloc(sizeof(uint64_t) * cap);
        v->val[k] = (uint32_t *)wd__calloc(sizeof(uint32_t) * cap);
        if (!v->key[k] || !v->val[k])
            return wd__fail(WD_ERR_NOMEM, "out of memory for a vocabulary of %lld values", (long long)v->n[k]);
        v->mask[k] = cap - 1;
        for (int64_t i = 0; i < v->n[k]; i++) {
            uint64_t j = wd__table_slot(v->hash[k][i], v->salt) & v->mask[k];
            while (v->val[k][j]) {
                if (v->key[k][j] == v->hash[k][i])
                    return wd__fail(WD_ERR_CORRUPT, "vocabulary of slot %d lists a value twice", k);
                j = (j + 1) & v->mask[k];
            }
            v->key[k][j] = v->hash[k][i];
            v->val[k][j] = (uint32_t)(i + 1);
        }
    }
    return WD_OK;
}
static uint32_t wd__vocab_id(const wd_vocab *v, int k, uint64_t h) {
    uint64_t j = wd__table_slot(h, v->salt) & v->mask[k];
    while (v->val[k][j]) { if (v->key[k][j] == h) return v->val[k][j]; j = (j + 1) & v->mask[k]; }
    return 0;   // out of vocabulary
}
static uint64_t wd__vocab_bytes(const wd_vocab *v) {
    if (!v) return 0;
    uint64_t b = 8 * (uint64_t)v->nslots;
    for (int k = 0; k < v->nslots; k++) if (v->n[k] > 0) b += 8 * (uint64_t)v->n[k];
    return b;
}
WDDEF uint64_t wd_vocab_fingerprint(const wd_vocab *v, int k) {
    if (!v || k < 0 || k >= v->nslots || v->n[k] < 0) return 0;
    uint64_t h = wd_mix64(0x70CAB0F1A9E5ull ^ (uint64_t)v->n[k]);   // the values in id order
    for (int64_t i = 0; i < v->n[k]; i++) h = wd_mix64(h ^ v->hash[k][i]) + (uint64_t)i;
    return h ? h : 1;
}
// A copy of v (with its lookup tables), or NULL for NULL.
static wd_status wd__vocab_copy(const wd_vocab *v, wd_vocab **out) {
    *out = NULL;
    if (!v) return WD_OK;
    wd_vocab *c = WD__NEW(wd_vocab);
    if (!c) return wd__fail(WD_ERR_NOMEM, "out of memory");
    c->nslots = v->nslots;
    for (int k = 0; k < WD_MAX_SLOTS; k++) { c->n[k] = k < v->nslots ? v->n[k] : -1; c->rows[k] = v->rows[k]; }
    for (int k = 0; k < v->nslots; k++)
        if (v->n[k] > 0) {
            if (!(c->hash[k] = (uint64_t *)wd__malloc(8 * (size_t)v->n[k]))) {
                wd__vocab_free(c); return wd__fail(WD_ERR_NOMEM, "out of memory for a copy of a vocabulary"); }
            memcpy(c->hash[k], v->hash[k], 8 * (size_t)v->n[k]);
        }
    wd_status st = wd__vocab_index(c);
    if (st) { wd__vocab_free(c); return st; }
    *out = c;
    return WD_OK;
}
// The input format of section 8 as bytes (wd__spec_encode) and back, checked
// against the schema it maps to (wd__spec_decode; defined there).
static wd_status wd__spec_encode(const wd_text_spec *t, wd__buf *out);
static wd_status wd__spec_decode(const uint8_t *p, size_t n, const wd_schema *s, const char *where, wd_text_spec **out);
static uint64_t wd__header_bytes(int nslots, const wd_vocab *v, size_t spec_bytes) {
    return WD__HDR_FIXED + WD__SLOT_BYTES * (uint64_t)nslots + wd__vocab_bytes(v)
        + (spec_bytes ? 4 + (uint64_t)spec_bytes : 0) + 4;
}
// spec: the encoded input format (NULL: none).
static void wd__header_encode(uint8_t *h, const wd_schema *s, const char *created, const wd_vocab *v,
                              const wd__buf *spec) {
    size_t sb = spec ? spec->len : 0, n = (size_t)wd__header_bytes(s->nslots, v, sb);
    memset(h, 0, n);
    memcpy(h, WD__MAGIC, 8);
    wd__put32(h + 8, sb ? 3u : v ? 2u : 1u);   // the lowest version that holds what follows the slots
    wd__put32(h + 12, (uint32_t)n);
    wd__put32(h + 16, (uint32_t)s->ndense);
    wd__put32(h + 20, (uint32_t)s->nslots);
    wd__put32(h + 24, (v ? 1u : 0u) | (sb ? 2u : 0u));   // flags: bit 0 a vocabulary, bit 1 an input format
    snprintf((char *)h + 32, 64, "%s", created ? created : "widedeep");
    for (int k = 0; k < s->nslots; k++) {
        uint8_t *e = h + WD__HDR_FIXED + WD__SLOT_BYTES * (size_t)k;
        memcpy(e, s->slot[k].name, WD_NAME_MAX);
        wd__put32(e + 32, s->slot[k].buckets);
        wd__put32(e + 36, (uint32_t)s->slot[k].kind);
    }
    uint8_t *q = h + WD__HDR_FIXED + WD__SLOT_BYTES * (size_t)s->nslots;
    for (int k = 0; v && k < s->nslots; k++) {
        wd__put64(q, (uint64_t)v->n[k]); q += 8;
        for (int64_t i = 0; i < v->n[k]; i++, q += 8) wd__put64(q, v->hash[k][i]);
    }
    if (sb) { wd__put32(q, (uint32_t)sb); memcpy(q + 4, spec->p, sb); }
    wd__put32(h + n - 4, wd__crc32c(h, n - 4));
}

typedef struct wd__index_entry { int64_t offset; uint32_t nsamples, bytes; } wd__index_entry;

// Footer + trailer for an index of nblocks entries; appended to out.
static wd_status wd__footer_encode(wd__buf *out, const wd__index_entry *idx, int64_t nblocks, int64_t nsamples,
                                   int64_t footer_offset) {
    size_t fbytes = 24 + 16 * (size_t)nblocks + 8;
    out->len = 0;
    WD__TRY(wd__buf_reserve(out, fbytes + WD__TRAILER));
    uint8_t *f = out->p;
    wd__put32(f, WD__FTR_MAGIC); wd__put32(f + 4, 0);
    wd__put64(f + 8, (uint64_t)nblocks); wd__put64(f + 16, (uint64_t)nsamples);
    for (int64_t i = 0; i < nblocks; i++) {
        uint8_t *e = f + 24 + 16 * i;
        wd__put64(e, (uint64_t)idx[i].offset); wd__put32(e + 8, idx[i].nsamples); wd__put32(e + 12, idx[i].bytes);
    }
    wd__put32(f + fbytes - 8, wd__crc32c(f, fbytes - 8));
    wd__put32(f + fbytes - 4, 0);
    uint8_t *t = f + fbytes;
    wd__put64(t, (uint64_t)footer_offset); wd__put64(t + 8, (uint64_t)fbytes);
    wd__put32(t + 16, wd__crc32c(t, 16)); wd__put32(t + 20, WD__END_MAGIC);
    out->len = fbytes + WD__TRAILER;
    return WD_OK;
}

// The block-level writer underneath wd_writer and the parallel converter.
typedef struct wd__blockfile {
    wd__outfile out;
    wd_schema schema;
    wd__index_entry *index;
    int64_t nblocks, index_cap, nsamples;
} wd__blockfile;

// t: the input format to store (NULL: none; its vocabulary is not looked at).
static wd_status wd__bf_open(wd__blockfile *f, const char *path, const wd_schema *s, const char *created,
                             const wd_vocab *v, const wd_text_spec *t) {
    memset(f, 0, sizeof *f);
    f->out.fd = -1;
    WD__TRY(wd_schema_check(s));
    f->schema = *s;
    wd__buf spec = {0, 0, 0};
    if (t) WD__TRY(wd__spec_encode(t, &spec));
    uint64_t hb = wd__header_bytes(s->nslots, v, spec.len);
    if (hb > 0xFFFFFFF0u) { wd__buf_free(&spec);
        return wd__fail(WD_ERR_LIMIT, "%s: a vocabulary of %llu bytes does not fit a file header", path,
                        (unsigned long long)hb); }
    uint8_t *hdr = (uint8_t *)wd__malloc((size_t)hb);
    if (!hdr) { wd__buf_free(&spec); return wd__fail(WD_ERR_NOMEM, "out of memory for a file header of %llu bytes",
                                                     (unsigned long long)hb); }
    wd__header_encode(hdr, s, created, v, t ? &spec : NULL);
    wd__buf_free(&spec);
    wd_status st = wd__out_open(&f->out, path);
    if (!st) { st = wd__out_write(&f->out, hdr, (size_t)hb); if (st) wd__out_abort(&f->out); }
    wd__free(hdr);
    return st;
}
static wd_status wd__bf_put(wd__blockfile *f, const uint8_t *block, size_t len) {
    if (f->nblocks == f->index_cap) {
        int64_t nc = f->index_cap ? f->index_cap * 2 : 64;
        wd__index_entry *ni = (wd__index_entry *)wd__malloc((size_t)nc * sizeof *ni);
        if (!ni) return wd__fail(WD_ERR_NOMEM, "out of memory for the block index");
        if (f->nblocks) memcpy(ni, f->index, (size_t)f->nblocks * sizeof *ni);
        wd__free(f->index);
        f->index = ni; f->index_cap = nc;
    }
    wd__index_entry *e = &f->index[f->nblocks];
    e->offset = f->out.bytes;
    e->nsamples = wd__get32(block + 4);
    e->bytes = (uint32_t)len;
    WD__TRY(wd__out_write(&f->out, block, len));
    f->nblocks++;
    f->nsamples += e->nsamples;
    return WD_OK;
}
static void wd__bf_abort(wd__blockfile *f) { wd__out_abort(&f->out); wd__free(f->index); f->index = NULL; }
static wd_status wd__bf_close(wd__blockfile *f) {
    wd__buf ft = {0, 0, 0};
    wd_status st = wd__footer_encode(&ft, f->index, f->nblocks, f->nsamples, f->out.bytes);
    if (!st) st = wd__out_write(&f->out, ft.p, ft.len);
    wd__buf_free(&ft);
    if (!st) st = wd__out_commit(&f->out);
    else wd__out_abort(&f->out);
    wd__free(f->index); f->index = NULL;
    return st;
}

struct wd_writer {
    wd__blockfile file;
    wd_batch pending;       // samples waiting for a full block
    int block_samples, level;
    ZSTD_CCtx *cc;
    wd__buf raw, blk;
    wd_status failed;       // sticky: after a failure only close/abort work
};

WDDEF wd_status wd_writer_open(const char *path, const wd_schema *s, const wd_writer_desc *d, wd_writer **out) {
    if (!path || !s || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_writer_open: NULL argument");
    *out = NULL;
    WD__TRY(wd_schema_check(s));
    wd_writer *w = WD__NEW(wd_writer);
    if (!w) return wd__fail(WD_ERR_NOMEM, "out of memory");
    w->block_samples = (d && d->block_samples > 0) ? d->block_samples : WD_DEFAULT_BLOCK_SAMPLES;
    w->level = (d && d->level) ? d->level : 3;
    if (w->block_samples > WD_MAX_BLOCK_SAMPLES) { wd__free(w);
        return wd__fail(WD_ERR_LIMIT, "block_samples %d exceeds %d", d->block_samples, WD_MAX_BLOCK_SAMPLES); }
    wd_status st = wd_batch_init(&w->pending, s, w->block_samples, 0);
    if (st) { wd__free(w); return st; }
    w->cc = ZSTD_createCCtx();
    if (!w->cc) { wd_batch_free(&w->pending); wd__free(w);
        return wd__fail(WD_ERR_NOMEM, "zstd: cannot create a compression context"); }
    st = wd__bf_open(&w->file, path, s, d && d->created ? d->created : "widedeep " WD_VERSION_STRING, NULL, NULL);
    if (st) { ZSTD_freeCCtx(w->cc); wd_batch_free(&w->pending); wd__free(w); return st; }
    *out = w;
    return WD_OK;
}

static wd_status wd__writer_flush(wd_writer *w) {
    if (w->pending.n == 0) return WD_OK;
    WD__TRY(wd__block_encode(&w->file.schema, &w->pending, 0, w->pending.n, w->cc, w->level, &w->raw, &w->blk));
    WD__TRY(wd__bf_put(&w->file, w->blk.p, w->blk.len));
    w->pending.n = 0;
    return WD_OK;
}

WDDEF wd_status wd_writer_append(wd_writer *w, const wd_batch *b) {
    if (!w || !b) return wd__fail(WD_ERR_INVALID_ARG, "wd_writer_append: NULL argument");
    if (w->failed) return wd__fail(w->failed, "%s: writer failed earlier", w->file.out.path);
    if (b->ndense != w->file.schema.ndense || b->nslots != w->file.schema.nslots)
        return wd__fail(WD_ERR_SCHEMA, "%s: appended batch has %d dense/%d slots, file has %d/%d", w->file.out.path,
                        b->ndense, b->nslots, w->file.schema.ndense, w->file.schema.nslots);
    for (int k = 0; k < b->nslots; k++)
        if (b->kind[k] != w->file.schema.slot[k].kind)
            return wd__fail(WD_ERR_SCHEMA, "%s: slot %d kind differs", w->file.out.path, k);
    WD__TRY(wd__check_values(&w->file.schema, b, 0, b->n, w->file.out.path, WD_ERR_INVALID_ARG));
    for (int at = 0; at < b->n;) {
        int take = WD__MIN(b->n - at, w->block_samples - w->pending.n);
        wd_status st = wd_batch_append(&w->pending, b, at, take);
        if (!st && w->pending.n == w->block_samples) st = wd__writer_flush(w);
        if (st) { w->failed = st; return st; }
        at += take;
    }
    return WD_OK;
}
WDDEF int64_t wd_writer_samples(const wd_writer *w) { return w->file.nsamples + w->pending.n; }

static void wd__writer_free(wd_writer *w) {
    ZSTD_freeCCtx(w->cc);
    wd_batch_free(&w->pending);
    wd__buf_free(&w->raw); wd__buf_free(&w->blk);
    wd__free(w);
}
WDDEF void wd_writer_abort(wd_writer *w) {
    if (!w) return;
    wd__bf_abort(&w->file);
    wd__writer_free(w);
}
WDDEF wd_status wd_writer_close(wd_writer *w) {
    if (!w) return wd__fail(WD_ERR_INVALID_ARG, "wd_writer_close: NULL writer");
    wd_status st = w->failed;
    if (!st) st = wd__writer_flush(w);
    if (!st) st = wd__bf_close(&w->file);
    else wd__bf_abort(&w->file);
    wd__writer_free(w);
    return st;
}

// ---- reader ----
struct wd_reader {
    int fd;
    char *path;
    int64_t file_bytes, nblocks, nsamples;
    wd__index_entry *index;
    wd_schema schema;
    char created[64];
    wd_decoder *dec;        // for the single-threaded convenience calls
    wd__buf fetch;
    wd_batch own;
    wd_vocab *vocab;        // version 2 files may hold one
    wd_text_spec *spec;     // version 3: the input format it was converted with (vocab not set)
};
struct wd_decoder { ZSTD_DCtx *dc; wd__buf raw; wd_decode_stats st; };
WDDEF void wd_decoder_stats(const wd_decoder *d, wd_decode_stats *out) { *out = d->st; }

WDDEF wd_status wd_decoder_create(wd_decoder **out) {
    if (!out) return wd__fail(WD_ERR_INVALID_ARG, "wd_decoder_create: out is NULL");
    *out = NULL;
    wd_decoder *d = WD__NEW(wd_decoder);
    if (!d) return wd__fail(WD_ERR_NOMEM, "out of memory");
    d->dc = ZSTD_createDCtx();
    if (!d->dc) { wd__free(d); return wd__fail(WD_ERR_NOMEM, "zstd: cannot create a decompression context"); }
    *out = d;
    return WD_OK;
}
WDDEF void wd_decoder_destroy(wd_decoder *d) {
    if (!d) return;
    ZSTD_freeDCtx(d->dc);
    wd__buf_free(&d->raw);
    wd__free(d);
}

WDDEF void wd_reader_close(wd_reader *r) {
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    wd_decoder_destroy(r->dec);
    wd__buf_free(&r->fetch);
    wd_batch_free(&r->own);
    wd__free(r->index);
    wd__free(r->path);
    wd__vocab_free(r->vocab);
    wd__free(r->spec);
    wd__free(r);
}
WDDEF const wd_vocab *wd_reader_vocab(const wd_reader *r) { return r ? r->vocab : NULL; }

// The vocabulary at *qp (advanced past it) of a record ending at end, for
// schema sc; where: "FILE: file header" for messages.
static wd_status wd__vocab_decode(const char *where, const wd_schema *sc, const uint8_t **qp, const uint8_t *end,
                                  wd_vocab **out) {
    uint32_t nslots = (uint32_t)sc->nslots;
    const uint8_t *q = *qp;
    *out = NULL;
    wd_vocab *v = WD__NEW(wd_vocab);
    if (!v) return wd__fail(WD_ERR_NOMEM, "out of memory");
    v->nslots = (int)nslots;
    for (int k = 0; k < WD_MAX_SLOTS; k++) v->n[k] = -1;
    wd_status st = WD_OK;
    for (uint32_t k = 0; !st && k < nslots; k++) {
        if (end - q < 8) { st = wd__fail(WD_ERR_CORRUPT, "%s: the vocabulary ends early", where); break; }
        int64_t n = (int64_t)wd__get64(q);
        q += 8;
        if (n < -1 || (n >= 0 && (uint64_t)(end - q) / 8 < (uint64_t)n)) {
            st = wd__fail(WD_ERR_CORRUPT, "%s: slot %u's vocabulary claims %lld values", where, k,
                          (long long)n); break; }
        if (n >= 0 && (uint64_t)n + 1 > sc->slot[k].buckets) {
            st = wd__fail(WD_ERR_CORRUPT, "%s: slot %u has %u buckets but a vocabulary of %lld values", where, k,
                          sc->slot[k].buckets, (long long)n); break; }
        v->n[k] = n;
        v->rows[k] = sc->slot[k].buckets;
        if (n > 0) {
            if (!(v->hash[k] = (uint64_t *)wd__malloc(8 * (size_t)n))) {
                st = wd__fail(WD_ERR_NOMEM, "out of memory for a vocabulary"); break; }
            for (int64_t i = 0; i < n; i++, q += 8) v->hash[k][i] = wd__get64(q);
        }
    }
    if (!st && (st = wd__vocab_index(v)) != WD_OK && st != WD_ERR_NOMEM)
        st = wd__fail(WD_ERR_CORRUPT, "%s: %s", where, wd_last_error());
    if (st) { wd__vocab_free(v); return st; }
    *qp = q;
    *out = v;
    return WD_OK;
}
// The schema, created string and vocabulary of a checksummed header.
static wd_status wd__header_decode(wd_reader *r, const uint8_t *h, uint32_t hbytes, uint32_t ndense, uint32_t nslots,
                                   int has_vocab, int has_spec) {
    const char *path = r->path;
    memset(&r->schema, 0, sizeof r->schema);
    r->schema.ndense = (int)ndense;
    r->schema.nslots = (int)nslots;
    memcpy(r->created, h + 32, 63);
    r->created[63] = 0;
    for (uint32_t k = 0; k < nslots; k++) {
        const uint8_t *e = h + WD__HDR_FIXED + WD__SLOT_BYTES * k;
        memcpy(r->schema.slot[k].name, e, WD_NAME_MAX);
        r->schema.slot[k].buckets = wd__get32(e + 32);
        r->schema.slot[k].kind = (int)wd__get32(e + 36);
    }
    if (wd_schema_check(&r->schema)) return wd__fail(WD_ERR_CORRUPT, "%s: file header: %s", path, wd_last_error());
    const uint8_t *q = h + WD__HDR_FIXED + WD__SLOT_BYTES * (size_t)nslots, *end = h + hbytes - 4;
    wd_vocab *v = NULL;
    wd_status st = WD_OK;
    char where[WD__ERR_MAX / 2];
    snprintf(where, sizeof where, "%s: file header", wd__tail(path, 300));
    if (has_vocab) st = wd__vocab_decode(where, &r->schema, &q, end, &v);
    if (!st && has_spec) {   // u32 bytes, then the input format
        uint32_t sn = end - q >= 4 ? wd__get32(q) : 0;
        if (end - q < 4 || (uint64_t)(end - q - 4) < sn)
            st = wd__fail(WD_ERR_CORRUPT, "%s: the input format ends early", where);
        else { st = wd__spec_decode(q + 4, sn, &r->schema, where, &r->spec); q += 4 + (size_t)sn; }
    }
    if (!st && q != end)
        st = wd__fail(WD_ERR_CORRUPT, "%s: %lld bytes after the %s", where, (long long)(end - q),
                      has_spec ? "input format" : "vocabulary");
    if (st) { wd__vocab_free(v); return st; }
    r->vocab = v;
    return WD_OK;
}
static wd_status wd__reader_load(wd_reader *r) {
    const char *path = r->path;
    struct stat sb;
    if (fstat(r->fd, &sb) != 0) return wd__fail(WD_ERR_IO, "%s: stat failed: %s", path, strerror(errno));
    r->file_bytes = (int64_t)sb.st_size;
    if (r->file_bytes == 0) return wd__fail(WD_ERR_FORMAT, "%s: empty file (0 bytes), not a .wdr file", path);
    uint8_t fixed[WD__HDR_FIXED];
    if (r->file_bytes < (int64_t)WD__HDR_FIXED) {
        uint8_t m[8] = {0};
        size_t n = (size_t)WD__MIN(r->file_bytes, 8);
        WD__TRY(wd__pread_all(r->fd, m, n, 0, path));
        if (n < 8 || memcmp(m, WD__MAGIC, 8) != 0)
            return wd__fail(WD_ERR_FORMAT, "%s: not a .wdr file (bad magic)", path);
        return wd__fail(WD_ERR_CORRUPT, "%s: truncated file header (%lld bytes)", path, (long long)r->file_bytes);
    }
    WD__TRY(wd__pread_all(r->fd, fixed, WD__HDR_FIXED, 0, path));
    if (memcmp(fixed, WD__MAGIC, 8) != 0) return wd__fail(WD_ERR_FORMAT, "%s: not a .wdr file (bad magic)", path);
    uint32_t ver = wd__get32(fixed + 8), hbytes = wd__get32(fixed + 12);
    uint32_t ndense = wd__get32(fixed + 16), nslots = wd__get32(fixed + 20), flags = wd__get32(fixed + 24);
    if (ver < 1 || ver > WD__VERSION)
        return wd__fail(WD_ERR_FORMAT, "%s: .wdr version %u, this build reads versions 1 to %u", path, ver,
                        WD__VERSION);
    if (nslots > WD_MAX_SLOTS || ndense > WD_MAX_DENSE)
        return wd__fail(WD_ERR_CORRUPT, "%s: file header: %u slots / %u dense columns exceed the limits (%d/%d)", path,
                        nslots, ndense, WD_MAX_SLOTS, WD_MAX_DENSE);
    int has_vocab = ver >= 2 && (flags & 1), has_spec = ver >= 3 && (flags & 2);
    uint32_t known = ver >= 3 ? 3u : ver == 2 ? 1u : 0u;   // the flags each version defines
    if (flags & ~known) return wd__fail(WD_ERR_CORRUPT, "%s: file header: unknown flags %#x", path, flags);
    uint64_t least = wd__header_bytes((int)nslots, NULL, 0) + (has_vocab ? 8 * (uint64_t)nslots : 0)
        + (has_spec ? 4 : 0);
    if ((has_vocab || has_spec) ? hbytes < least : hbytes != least)
        return wd__fail(WD_ERR_CORRUPT, "%s: file header: size %u does not match %u slots", path, hbytes, nslots);
    if ((int64_t)hbytes + (int64_t)WD__TRAILER > r->file_bytes)
        return wd__fail(WD_ERR_CORRUPT, "%s: truncated (%lld bytes, header alone needs %u)", path,
                        (long long)r->file_bytes, hbytes);
    uint8_t *h = (uint8_t *)wd__malloc(hbytes);
    if (!h) return wd__fail(WD_ERR_NOMEM, "%s: out of memory for a file header of %u bytes", path, hbytes);
    wd_status st = wd__pread_all(r->fd, h, hbytes, 0, path);
    if (!st && wd__get32(h + hbytes - 4) != wd__crc32c(h, hbytes - 4))
        st = wd__fail(WD_ERR_CORRUPT, "%s: file header checksum mismatch", path);
    if (!st) st = wd__header_decode(r, h, hbytes, ndense, nslots, has_vocab, has_spec);
    wd__free(h);
    if (st) return st;
    // trailer and footer
    uint8_t t[WD__TRAILER];
    WD__TRY(wd__pread_all(r->fd, t, WD__TRAILER, r->file_bytes - WD__TRAILER, path));
    if (wd__get32(t + 20) != WD__END_MAGIC || wd__get32(t + 16) != wd__crc32c(t, 16))
        return wd__fail(WD_ERR_CORRUPT, "%s: no valid trailer at the end of the file (truncated or not closed)", path);
    uint64_t foff = wd__get64(t), fbytes = wd__get64(t + 8);
    if (foff < hbytes || fbytes < 32 || foff + fbytes + WD__TRAILER != (uint64_t)r->file_bytes
        || (fbytes - 32) % 16 != 0)
        return wd__fail(WD_ERR_CORRUPT, "%s: footer at offset %llu size %llu lies outside the file (%lld bytes)", path,
                        (unsigned long long)foff, (unsigned long long)fbytes, (long long)r->file_bytes);
    uint8_t *f = (uint8_t *)wd__malloc((size_t)fbytes);
    if (!f) return wd__fail(WD_ERR_NOMEM, "%s: out of memory for a %llu-byte footer", path, (unsigned long long)fbytes);
    st = wd__pread_all(r->fd, f, (size_t)fbytes, (int64_t)foff, path);
    if (!st && (wd__get32(f) != WD__FTR_MAGIC || wd__get32(f + fbytes - 8) != wd__crc32c(f, (size_t)fbytes - 8)
                || wd__get32(f + fbytes - 4) != 0))
        st = wd__fail(WD_ERR_CORRUPT, "%s: footer checksum mismatch", path);
    uint64_t nblocks = st ? 0 : wd__get64(f + 8), nsamples = st ? 0 : wd__get64(f + 16);
    if (!st && nblocks != (fbytes - 32) / 16)
        st = wd__fail(WD_ERR_CORRUPT, "%s: footer lists %llu blocks but has room for %llu", path,
                      (unsigned long long)nblocks, (unsigned long long)((fbytes - 32) / 16));
    if (!st) {
        r->index = (wd__index_entry *)wd__malloc((size_t)WD__MAX(nblocks, 1) * sizeof *r->index);
        if (!r->index)
            st = wd__fail(WD_ERR_NOMEM, "%s: out of memory for the index of %llu blocks", path,
                          (unsigned long long)nblocks);
    }
    uint64_t expect = hbytes, total = 0;
    for (uint64_t i = 0; !st && i < nblocks; i++) {
        const uint8_t *e = f + 24 + 16 * i;
        wd__index_entry *x = &r->index[i];
        x->offset = (int64_t)wd__get64(e); x->nsamples = wd__get32(e + 8); x->bytes = wd__get32(e + 12);
        if ((uint64_t)x->offset != expect || x->bytes < WD__BLK_HDR || (uint64_t)x->offset + x->bytes > foff)
            st = wd__fail(WD_ERR_CORRUPT, "%s: footer: block %llu at offset %lld (%u bytes) is outside the data area",
                          path, (unsigned long long)i, (long long)x->offset, x->bytes);
        else if (x->nsamples == 0 || x->nsamples > WD_MAX_BLOCK_SAMPLES)
            st = wd__fail(WD_ERR_CORRUPT, "%s: footer: block %llu claims %u samples", path, (unsigned long long)i,
                          x->nsamples);
        expect = (uint64_t)x->offset + x->bytes;
        total += x->nsamples;
    }
    if (!st && expect != foff)
        st = wd__fail(WD_ERR_CORRUPT, "%s: footer: blocks end at %llu but the footer starts at %llu", path,
                      (unsigned long long)expect, (unsigned long long)foff);
    if (!st && total != nsamples)
        st = wd__fail(WD_ERR_CORRUPT, "%s: footer: blocks hold %llu samples, footer says %llu", path,
                      (unsigned long long)total, (unsigned long long)nsamples);
    wd__free(f);
    r->nblocks = (int64_t)nblocks;
    r->nsamples = (int64_t)nsamples;
    return st;
}

WDDEF wd_status wd_reader_open(const char *path, wd_reader **out) {
    if (!path || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_reader_open: NULL argument");
    *out = NULL;
    wd_reader *r = WD__NEW(wd_reader);
    if (!r) return wd__fail(WD_ERR_NOMEM, "out of memory");
    r->fd = -1;
    r->path = wd__strdup(path);
    if (!r->path) { wd_reader_close(r); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) { wd_status st = wd__fail(WD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        wd_reader_close(r); return st; }
    wd_status st = wd__reader_load(r);
    if (st) { wd_reader_close(r); return st; }
    *out = r;
    return WD_OK;
}

WDDEF const wd_schema *wd_reader_schema(const wd_reader *r) { return &r->schema; }
WDDEF const char *wd_reader_path(const wd_reader *r) { return r->path; }
WDDEF const char *wd_reader_created(const wd_reader *r) { return r->created; }
WDDEF int64_t wd_reader_nblocks(const wd_reader *r) { return r->nblocks; }
WDDEF int64_t wd_reader_nsamples(const wd_reader *r) { return r->nsamples; }
WDDEF int64_t wd_reader_file_bytes(const wd_reader *r) { return r->file_bytes; }
WDDEF int wd_reader_block_samples(const wd_reader *r, int64_t i) {
    return (i >= 0 && i < r->nblocks) ? (int)r->index[i].nsamples : 0; }
WDDEF size_t wd_reader_block_bytes(const wd_reader *r, int64_t i) {
    return (i >= 0 && i < r->nblocks) ? r->index[i].bytes : 0; }

WDDEF wd_status wd_reader_fetch(const wd_reader *r, int64_t i, void *buf, size_t cap) {
    if (!r || !buf) return wd__fail(WD_ERR_INVALID_ARG, "wd_reader_fetch: %s is NULL", r ? "buf" : "the reader");
    if (i < 0 || i >= r->nblocks)
        return wd__fail(WD_ERR_INVALID_ARG, "%s: block %lld does not exist (%lld blocks)", r->path, (long long)i,
                        (long long)r->nblocks);
    if (cap < r->index[i].bytes)
        return wd__fail(WD_ERR_INVALID_ARG, "%s: block %lld needs %u bytes, buffer has %zu", r->path, (long long)i,
                        r->index[i].bytes, cap);
    wd_status st = wd__pread_all(r->fd, buf, r->index[i].bytes, r->index[i].offset, r->path);
    if (st) return wd__fail(st, "%s (block %lld)", wd_last_error(), (long long)i);
    return WD_OK;
}

WDDEF wd_status wd_decode_block(wd_decoder *d, const wd_reader *r, int64_t bi, const void *bytes, size_t len,
                                wd_batch *dst) {
    if (!d || !r || !bytes || !dst || bi < 0 || bi >= r->nblocks)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_decode_block: bad arguments");
    const wd_schema *s = &r->schema;
    const char *path = r->path;
    long long blk = (long long)bi;
    WD__TRY(wd__batch_layout(dst, s, path, blk, "file"));
    if (dst->n < 0 || dst->n > dst->cap || (dst->cap > 0 && !dst->mem))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_decode_block: the batch holds %d of %d samples", dst->n, dst->cap);
    for (int k = 0; dst->mem && k < s->nslots; k++)   // arrays as wd_batch_init laid them out for these kinds
        if (!dst->ids[k] || (dst->kind[k] == WD_MULTI_HOT) != (dst->offs[k] != NULL))
            return wd__fail(WD_ERR_INVALID_ARG,
                            "wd_decode_block: slot %d's arrays do not match its kind (set kinds before wd_batch_init)", k);
    const uint8_t *h = (const uint8_t *)bytes;
    if (len != r->index[bi].bytes)
        return wd__fail(WD_ERR_INVALID_ARG, "%s: block %lld: %zu bytes given, index says %u", path, blk, len,
                        r->index[bi].bytes);
    if (wd__get32(h) != WD__BLK_MAGIC || wd__get32(h + 28) != wd__crc32c(h, 28))
        return wd__fail(WD_ERR_CORRUPT, "%s: block %lld: bad block header (magic or checksum)", path, blk);
    uint32_t n = wd__get32(h + 4), comp = wd__get32(h + 8), raw_bytes = wd__get32(h + 12), nnz = wd__get32(h + 16);
    if (n != r->index[bi].nsamples || (size_t)comp + WD__BLK_HDR != len)
        return wd__fail(WD_ERR_CORRUPT, "%s: block %lld: header (%u samples, %u bytes) disagrees with the footer", path,
                        blk, n, comp);
    // label + dense columns + one column per slot (ids, or counts) + multi-hot ids
    uint64_t fixed = 4ull * n * (1ull + (uint64_t)s->ndense + (uint64_t)s->nslots);
    if ((uint64_t)raw_bytes != fixed + 4ull * nnz || raw_bytes > WD_MAX_BLOCK_BYTES)
        return wd__fail(WD_ERR_CORRUPT, "%s: block %lld: raw size %u does not match %u samples and %u ids", path, blk,
                        raw_bytes, n, nnz);
    double t0 = wd__now();
    if (wd__crc32c(h + WD__BLK_HDR, comp) != wd__get32(h + 24))
        return wd__fail(WD_ERR_CORRUPT, "%s: block %lld: payload checksum mismatch", path, blk);
    if (raw_bytes > d->raw.cap) {
        char what[WD__ERR_MAX / 2];
        snprintf(what, sizeof what, "%s: block %lld (%u samples, %u bytes decompressed)", wd__tail(path, 300), blk,
                 n, raw_bytes);
        WD__TRY(wd__memory_check(2 * (uint64_t)raw_bytes, what));   // the decompressed block and the batch it fills
    }
    WD__TRY(wd__buf_reserve(&d->raw, raw_bytes));
    double t1 = wd__now();
    size_t got = ZSTD_decompressDCtx(d->dc, d->raw.p, raw_bytes, h + WD__BLK_HDR, comp);
    double t2 = wd__now();
    if (ZSTD_isError(got) || got != raw_bytes)
        return wd__fail(WD_ERR_CORRUPT, "%s: block %lld: decompression failed (%s)", path, blk,
                        ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size");
    // multi-hot needs: total ids appended per slot
    int at = dst->n;
    int64_t need = 0;
    {
        const uint8_t *p = d->raw.p + 4ull * n * (1ull + (uint64_t)s->ndense);
        uint64_t seen = 0;
        for (int k = 0; k < s->nslots; k++) {
            if (s->slot[k].kind == WD_MULTI_HOT) {
                uint64_t c = 0;
                for (uint32_t i = 0; i < n; i++)
                    c += (uint32_t)p[i] | (uint32_t)p[n + i] << 8 | (uint32_t)p[2 * n + i] << 16
                        | (uint32_t)p[3 * n + i] << 24;
                if (seen + c > nnz)
                    return wd__fail(WD_ERR_CORRUPT, "%s: block %lld: slot %d: id counts exceed the block's %u ids",
                                    path, blk, k, nnz);
                int64_t have = at ? dst->offs[k][at] : 0;
                need = WD__MAX(need, have + (int64_t)c);
                seen += c;
                p += 4ull * (n + c);
            } else p += 4ull * n;
        }
        if (seen != nnz)
            return wd__fail(WD_ERR_CORRUPT, "%s: block %lld: id counts sum to %llu, header says %u", path, blk,
                            (unsigned long long)seen, nnz);
    }
    if (at + (int64_t)n > INT32_MAX) return wd__fail(WD_ERR_LIMIT, "batch would exceed 2^31 samples");
    WD__TRY(wd_batch_reserve(dst, at + (int)n, need));
    const uint8_t *p = d->raw.p;
    size_t D = (size_t)s->ndense;
    uint32_t nonfinite = 0, junk = 0, suspect = 0;
    wd__unshuffle4(dst->label + at, 1, p, n, &junk); p += 4ull * n;
    for (uint32_t i = 0; i < n; i++) suspect |= !(dst->label[at + (int)i] >= 0.0f) | !(dst->label[at + (int)i] <= 1.0f);
    for (size_t j = 0; j < D; j++) { wd__unshuffle4(dst->dense + (size_t)at * D + j, D, p, n, &nonfinite);
        p += 4ull * n; }
    for (int k = 0; k < s->nslots; k++) {
        uint32_t mx = 0;
        if (s->slot[k].kind == WD_MULTI_HOT) {
            uint32_t *o = dst->offs[k] + at;
            uint32_t base = at ? o[0] : 0;
            if (!at) o[0] = 0;
            wd__unshuffle4(o + 1, 1, p, n, &junk); p += 4ull * n;
            for (uint32_t i = 0; i < n; i++) o[i + 1] += o[i];   // counts -> offsets
            uint32_t c = o[n] - base;
            mx = c ? wd__unshuffle4(dst->ids[k] + base, 1, p, c, &junk) : 0; p += 4ull * c;
        } else { mx = wd__unshuffle4(dst->ids[k] + at, 1, p, n, &junk); p += 4ull * n; }
        suspect |= mx >= s->slot[k].buckets;
    }
    for (uint32_t i = 0; i < n; i++) dst->weight[at + (int)i] = 1.0f;
    double t3 = wd__now();
    if (suspect | nonfinite) {   // find and name the offending sample
        char where[300];
        snprintf(where, sizeof where, "%s: block %lld", path, blk);
        wd_status st = wd__check_values(s, dst, at, (int)n, where, WD_ERR_CORRUPT);
        if (st) return st;   // dst->n unchanged: the bad samples are not exposed
    }
    dst->n = at + (int)n;
    d->st.blocks++; d->st.samples += n; d->st.bytes_in += (int64_t)len; d->st.bytes_raw += raw_bytes;
    d->st.crc_s += t1 - t0; d->st.zstd_s += t2 - t1; d->st.unpack_s += t3 - t2; d->st.check_s += wd__now() - t3;
    return WD_OK;
}

static wd_status wd__reader_own(wd_reader *r) {
    if (!r->dec) WD__TRY(wd_decoder_create(&r->dec));
    if (!r->own.mem) WD__TRY(wd_batch_init(&r->own, &r->schema, 0, 0));
    return WD_OK;
}
WDDEF wd_status wd_reader_read_block(wd_reader *r, int64_t i, wd_batch *dst) {
    if (!r || !dst) return wd__fail(WD_ERR_INVALID_ARG, "wd_reader_read_block: NULL argument");
    if (i < 0 || i >= r->nblocks)
        return wd__fail(WD_ERR_INVALID_ARG, "%s: block %lld does not exist (%lld blocks)", r->path, (long long)i,
                        (long long)r->nblocks);
    WD__TRY(wd__reader_own(r));
    WD__TRY(wd__buf_reserve(&r->fetch, r->index[i].bytes));
    WD__TRY(wd_reader_fetch(r, i, r->fetch.p, r->fetch.cap));
    dst->n = 0;
    return wd_decode_block(r->dec, r, i, r->fetch.p, r->index[i].bytes, dst);
}
WDDEF wd_status wd_reader_block(wd_reader *r, int64_t i, const wd_batch **out) {
    if (!r || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_reader_block: NULL argument");
    *out = NULL;
    WD__TRY(wd__reader_own(r));
    WD__TRY(wd_reader_read_block(r, i, &r->own));
    *out = &r->own;
    return WD_OK;
}
WDDEF wd_status wd_reader_verify(wd_reader *r, int64_t *bad_block) {
    if (bad_block) *bad_block = -1;
    if (!r) return wd__fail(WD_ERR_INVALID_ARG, "wd_reader_verify: reader is NULL");
    WD__TRY(wd__reader_own(r));
    for (int64_t i = 0; i < r->nblocks; i++) {
        wd_status st = wd_reader_read_block(r, i, &r->own);
        if (st) { if (bad_block) *bad_block = i; return st; }
    }
    return WD_OK;
}

// ---- 8. Text parsers -------------------------------------------------------------------
// Parses a decimal integer in [s, e): an optional sign, then digits;
// rejects empty fields, other characters and values outside int64
// (INT64_MIN included).
static int wd__parse_i64(const char *s, const char *e, int64_t *out) {
    int neg = 0;
    if (s < e && (*s == '-' || *s == '+')) { neg = *s == '-'; s++; }
    if (s == e) return -1;
    uint64_t v = 0, lim = neg ? UINT64_C(9223372036854775808) : UINT64_C(9223372036854775807);
    for (; s < e; s++) {
        unsigned c = (unsigned)(*s - '0');
        if (c > 9) return -1;
        if (v > (lim - c) / 10) return -2;
        v = v * 10 + c;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}
// Parses a finite decimal number in [s, e) that fits a float: blanks around
// it are ignored; hexadecimal, "inf" and "nan" are refused; values below the
// smallest normal float become 0 or a subnormal, not an error.
static int wd__parse_f64(const char *s, const char *e, double *out) {
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
    char tmp[64];
    size_t n = (size_t)(e - s);
    if (n == 0 || n >= sizeof tmp) return -1;
    for (size_t i = 0; i < n; i++)   // decimal only: digits, sign, point, exponent
        if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '+' || s[i] == '.' || s[i] == 'e'
              || s[i] == 'E')) return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (end != tmp + n || !isfinite(v) || (errno == ERANGE && fabs(v) > 1.0)
        || fabs(v) > 3.4028234663852886e38) return -1;
    *out = v;
    return 0;
}

WDDEF void wd_text_spec_criteo(wd_text_spec *t, uint32_t buckets) {
    memset(t, 0, sizeof *t);
    t->format = WD_FMT_CRITEO;
    wd_schema_criteo(&t->schema, 1);
    for (int k = 0; k < 26; k++) t->schema.slot[k].buckets = buckets;   // 0: sized by wd_convert
    t->dense_lo = t->dense_hi = -1;
    t->id_col = -1;
}

// Calls fn(name, len, user) for each comma-separated item of list.
static wd_status wd__each_item(const char *list, wd_status (*fn)(const char *, size_t, void *), void *user) {
    if (!list) return WD_OK;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n) WD__TRY(fn(p, n, user));
        if (!e) break;
        p = e + 1;
    }
    return WD_OK;
}

#define WD__CSV_MAXCOLS (WD_MAX_SLOTS + WD_MAX_DENSE + 64)
// Splits one CSV line (RFC 4180) into at most max fields: spans into the
// line, or into *scratch (caller frees) for quoted fields holding "" escapes.
// Returns the field count, or -1 (too many fields) / -2 (a stray quote) /
// -4 (a quote the line does not close) / -3 (out of memory);
// *scratch is set (and the caller frees it) whatever the result.
static int wd__csv_split(const char *line, size_t len, char delim, const char **fs, size_t *fl, int max,
                         char **scratch) {
    const char *p = line, *end = line + len;
    char *out = NULL;
    *scratch = NULL;
    size_t used = 0;
    int n = 0;
    for (;;) {
        if (n == max) return -1;
        if (p < end && *p == '"') {   // quoted: up to the closing quote, "" is a quote
            const char *q = p + 1, *start = q;
            int esc = 0;
            for (;; q++) {
                if (q >= end) return -4;
                if (*q == '"') { if (q + 1 < end && q[1] == '"') { esc = 1; q++; continue; } break; }
            }
            if (!esc) { fs[n] = start; fl[n] = (size_t)(q - start); }
            else {
                if (!out && !(*scratch = out = (char *)wd__malloc(len + 1))) return -3;
                char *o = out + used;
                for (const char *c = start; c < q; c++) { *o++ = *c; if (*c == '"') c++; }
                fs[n] = out + used; fl[n] = (size_t)(o - (out + used)); used = (size_t)(o - out);
            }
            n++;
            p = q + 1;
            if (p == end) break;
            if (*p != delim) return -2;
            p++;
            continue;
        }
        const char *c = (const char *)memchr(p, delim, (size_t)(end - p));
        const char *fe = c ? c : end;
        if (memchr(p, '"', (size_t)(fe - p))) return -2;
        fs[n] = p; fl[n] = (size_t)(fe - p); n++;
        if (!c) break;
        p = c + 1;
    }
    return n;
}
// The header's column names ("\xEF\xBB\xBF" before the first ignored).
typedef struct wd__csv_ctx { wd_text_spec *t; const char *cols[WD__CSV_MAXCOLS]; size_t lens[WD__CSV_MAXCOLS];
    int role; } wd__csv_ctx;
// The column called name: its index, -1 if none, or -2 (the error set) when
// two columns have that name (a name an option gives must mean one column;
// a repeated name no option gives is left alone, as any unused column).
static int wd__csv_col(const wd__csv_ctx *c, const char *name, size_t n) {
    int at = -1;
    for (int i = 0; i < c->t->ncols; i++)
        if (c->lens[i] == n && memcmp(c->cols[i], name, n) == 0) {
            if (at < 0) { at = i; continue; }
            (void)wd__fail(WD_ERR_INVALID_ARG, "csv: columns %d and %d of the header are both named '%.*s': "
                           "a column an option names must be named once", at + 1, i + 1, (int)WD__MIN(n, 100), name);
            return -2;
        }
    return at;
}
static wd_status wd__csv_add_slot(wd_text_spec *t, const char *name, size_t n, int *k) {
    if (t->schema.nslots >= WD_MAX_SLOTS)
        return wd__fail(WD_ERR_LIMIT, "csv: too many categorical slots (limit %d)", WD_MAX_SLOTS);
    for (int q = 0; q < t->schema.nslots; q++)
        if (strlen(t->schema.slot[q].name) == WD__MIN(n, (size_t)WD_NAME_MAX - 1)
            && memcmp(t->schema.slot[q].name, name, strlen(t->schema.slot[q].name)) == 0)
            return wd__fail(WD_ERR_INVALID_ARG, "csv: slot '%.*s' is named twice", (int)n, name);
    wd_slot *sl = &t->schema.slot[t->schema.nslots];
    snprintf(sl->name, WD_NAME_MAX, "%.*s", (int)WD__MIN(n, WD_NAME_MAX - 1), name);
    sl->kind = WD_ONE_HOT;
    *k = t->schema.nslots++;
    return WD_OK;
}
static wd_status wd__csv_assign(const char *name, size_t n, void *u) {
    wd__csv_ctx *c = (wd__csv_ctx *)u;
    wd_text_spec *t = c->t;
    int i = wd__csv_col(c, name, n);
    if (i == -2) return WD_ERR_INVALID_ARG;
    if (i < 0) return wd__fail(WD_ERR_INVALID_ARG, "csv: column '%.*s' is not in the header", (int)n, name);
    if (c->role == 4) { t->id_col = i; return WD_OK; }
    if (t->col_role[i]) return wd__fail(WD_ERR_INVALID_ARG, "csv: column '%.*s' is named twice", (int)n, name);
    t->col_role[i] = c->role;
    if (c->role == 1) t->label_col = i;
    else if (c->role == 2) {
        if (t->schema.ndense >= WD_MAX_DENSE) return wd__fail(WD_ERR_LIMIT, "csv: too many dense columns");
        t->col_index[i] = t->schema.ndense++;
    } else return wd__csv_add_slot(t, name, n, &t->col_index[i]);
    return WD_OK;
}
// "NAME=COL[a:b]" or "NAME=weekday(COL[a:b])": a derived slot.
static wd_status wd__csv_derive(const char *item, size_t n, void *u) {
    wd__csv_ctx *c = (wd__csv_ctx *)u;
    wd_text_spec *t = c->t;
    char tmp[256];
    if (n >= sizeof tmp) return wd__fail(WD_ERR_INVALID_ARG, "csv: derived slot '%.40s...' is too long", item);
    memcpy(tmp, item, n); tmp[n] = 0;
    char *eq = strchr(tmp, '=');
    if (!eq || eq == tmp)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "csv: derived slot '%s' is not NAME=COL[a:b] or NAME=weekday(COL[a:b])", tmp);
    *eq = 0;
    char *expr = eq + 1, *col = expr;
    int weekday = 0;
    size_t el = strlen(expr);
    if (strncmp(expr, "weekday(", 8) == 0 && el > 9 && expr[el - 1] == ')') { weekday = 1; col = expr + 8;
        expr[el - 1] = 0; }
    char *br = strchr(col, '['), *colon = br ? strchr(br, ':') : NULL, *close = colon ? strchr(colon, ']') : NULL;
    int64_t from, to;
    if (!br || !colon || !close || close[1] || wd__parse_i64(br + 1, colon, &from)
        || wd__parse_i64(colon + 1, close, &to) || from < 0 || to <= from || to > 4096)
        return wd__fail(WD_ERR_INVALID_ARG, "csv: derived slot '%.*s': '%s' is not COL[a:b] with 0 <= a < b",
                        (int)n, item, col);
    int i = wd__csv_col(c, col, (size_t)(br - col));
    if (i == -2) return WD_ERR_INVALID_ARG;
    if (i < 0) return wd__fail(WD_ERR_INVALID_ARG, "csv: derived slot '%s': column '%.*s' is not in the header", tmp,
                               (int)(br - col), col);
    if (t->col_role[i] == 1)   // serving lines have no label: the slot would be derived from "0"
        return wd__fail(WD_ERR_INVALID_ARG, "csv: derived slot '%s': column '%.*s' is the label; a slot derived "
                        "from it would show the model the answer (and a request, which has no label, another "
                        "value): derive from another column", tmp, (int)(br - col), col);
    if (weekday && to - from != 6 && to - from != 8)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "csv: derived slot '%s': weekday() takes 6 (YYMMDD) or 8 (YYYYMMDD) bytes", tmp);
    int k;
    WD__TRY(wd__csv_add_slot(t, tmp, strlen(tmp), &k));
    t->derived[t->nderived].col = i; t->derived[t->nderived].from = (int)from; t->derived[t->nderived].to = (int)to;
    t->derived[t->nderived].weekday = weekday;
    t->nderived++;
    return WD_OK;
}
WDDEF wd_status wd_text_spec_csv_desc(wd_text_spec *t, const wd_csv_desc *d) {
    if (!t || !d) return wd__fail(WD_ERR_INVALID_ARG, "wd_text_spec_csv_desc: NULL argument");
    if (!d->header) return wd__fail(WD_ERR_INVALID_ARG, "csv: a header (the column names) is required");
    if (!d->label) return wd__fail(WD_ERR_INVALID_ARG, "csv: a label column is required");
    char delim = d->delimiter ? d->delimiter : ',';
    if (delim == '"' || delim == '\n' || delim == '\r')
        return wd__fail(WD_ERR_INVALID_ARG, "csv: delimiter %d cannot separate fields", delim);
    memset(t, 0, sizeof *t);
    t->format = WD_FMT_CSV;
    t->dense_lo = t->dense_hi = -1;
    t->delimiter = delim;
    t->id_col = -1;
    t->dense_raw = d->dense_raw;
    const char *h = d->header;
    if ((unsigned char)h[0] == 0xEF && (unsigned char)h[1] == 0xBB
        && (unsigned char)h[2] == 0xBF) h += 3;   // UTF-8 byte-order mark
    size_t hl = strcspn(h, "\r\n");
    if (hl >= sizeof t->header)
        return wd__fail(WD_ERR_LIMIT, "csv: header line of %zu bytes, longer than %zu", hl, sizeof t->header - 1);
    memcpy(t->header, h, hl);
    t->header[hl] = 0;
    wd__csv_ctx *c = (wd__csv_ctx *)wd__calloc(sizeof *c);
    if (!c) return wd__fail(WD_ERR_NOMEM, "out of memory");
    c->t = t;
    char *scratch = NULL;
    int nc = wd__csv_split(t->header, hl, delim, c->cols, c->lens, WD__CSV_MAXCOLS, &scratch);
    wd_status st = WD_OK;
    if (nc == -1) st = wd__fail(WD_ERR_LIMIT, "csv: more than %d columns", WD__CSV_MAXCOLS);
    else if (nc == -3) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    else if (nc < 0)
        st = wd__fail(WD_ERR_INVALID_ARG, "csv: the header is not valid CSV (%s)",
                      nc == -4 ? "an unterminated quote" : "a stray quote");
    else t->ncols = nc;
    if (!st) { c->role = 1; st = wd__csv_assign(d->label, strlen(d->label), c); }
    if (!st) { c->role = 2; st = wd__each_item(d->dense, wd__csv_assign, c); }
    if (!st) { c->role = 3; st = wd__each_item(d->cat, wd__csv_assign, c); }
    if (!st && d->id) { c->role = 4; st = wd__csv_assign(d->id, strlen(d->id), c); }
    if (!st) st = wd__each_item(d->derive, wd__csv_derive, c);
    wd__free(scratch);
    wd__free(c);
    if (st) return st;
    for (int k = 0; k < t->schema.nslots; k++) t->schema.slot[k].buckets = d->buckets;
    return WD_OK;
}
WDDEF wd_status wd_text_spec_csv(wd_text_spec *t, const char *header, const char *label, const char *dense,
                                 const char *cat, uint32_t buckets) {
    wd_csv_desc d;
    memset(&d, 0, sizeof d);
    d.header = header; d.label = label; d.dense = dense; d.cat = cat; d.buckets = buckets;
    return wd_text_spec_csv_desc(t, &d);
}

static int wd__parse_range(const char *s, size_t n, uint64_t *lo, uint64_t *hi) {
    char tmp[64];
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, s, n); tmp[n] = 0;
    char *dash = strchr(tmp, '-');
    if (!dash) return -1;
    *dash = 0;
    int64_t a, b;
    if (wd__parse_i64(tmp, dash, &a) || wd__parse_i64(dash + 1, tmp + n, &b) || a < 0 || b < a
        || b > 0xFFFFFFFFll) return -1;
    *lo = (uint64_t)a; *hi = (uint64_t)b;
    return 0;
}
static wd_status wd__libsvm_slot(const char *item, size_t n, void *u) {
    wd_text_spec *t = (wd_text_spec *)u;
    const char *eq = (const char *)memchr(item, '=', n);
    uint64_t lo, hi;
    if (!eq || eq == item || wd__parse_range(eq + 1, (size_t)(item + n - eq - 1), &lo, &hi))
        return wd__fail(WD_ERR_INVALID_ARG, "libsvm: slot '%.*s' is not NAME=LO-HI", (int)n, item);
    if (t->schema.nslots >= WD_MAX_SLOTS) return wd__fail(WD_ERR_LIMIT, "libsvm: too many slots");
    for (int i = 0; i < t->nranges; i++)
        if (!(hi < t->ranges[i].lo || lo > t->ranges[i].hi))
            return wd__fail(WD_ERR_INVALID_ARG, "libsvm: range '%.*s' overlaps another", (int)n, item);
    int k = t->schema.nslots++;
    wd_slot *sl = &t->schema.slot[k];
    snprintf(sl->name, WD_NAME_MAX, "%.*s", (int)WD__MIN((size_t)(eq - item), WD_NAME_MAX - 1), item);
    sl->kind = WD_MULTI_HOT;
    sl->buckets = (uint32_t)WD__MIN(hi - lo + 1, 0xFFFFFFFFull);
    t->ranges[t->nranges].lo = (uint32_t)lo;
    t->ranges[t->nranges].hi = (uint32_t)hi;
    t->ranges[t->nranges].slot = k;
    t->nranges++;
    return WD_OK;
}
WDDEF wd_status wd_text_spec_libsvm(wd_text_spec *t, const char *slots, const char *dense, uint32_t buckets) {
    (void)buckets;
    if (!t) return wd__fail(WD_ERR_INVALID_ARG, "wd_text_spec_libsvm: NULL spec");
    memset(t, 0, sizeof *t);
    t->format = WD_FMT_LIBSVM;
    t->id_col = -1;
    t->dense_lo = t->dense_hi = -1;
    WD__TRY(wd__each_item(slots, wd__libsvm_slot, t));
    if (dense && *dense) {
        uint64_t lo, hi;
        if (wd__parse_range(dense, strlen(dense), &lo, &hi) || hi - lo + 1 > WD_MAX_DENSE)
            return wd__fail(WD_ERR_INVALID_ARG, "libsvm: dense range '%s' is not LO-HI (at most %d columns)", dense,
                            WD_MAX_DENSE);
        for (int i = 0; i < t->nranges; i++)
            if (!(hi < t->ranges[i].lo || lo > t->ranges[i].hi))
                return wd__fail(WD_ERR_INVALID_ARG, "libsvm: dense range overlaps a slot range");
        t->dense_lo = (int64_t)lo; t->dense_hi = (int64_t)hi;
        t->schema.ndense = (int)(hi - lo + 1);
    }
    return wd_schema_check(&t->schema);
}

static wd_status wd__bucket_override(const char *item, size_t n, void *u) {
    wd_text_spec *t = (wd_text_spec *)u;
    const char *eq = (const char *)memchr(item, '=', n);
    int64_t v;
    if (!eq || wd__parse_i64(eq + 1, item + n, &v) || v <= 0 || v > 0xFFFFFFFFll)
        return wd__fail(WD_ERR_INVALID_ARG, "buckets: '%.*s' is not NAME=COUNT", (int)n, item);
    for (int k = 0; k < t->schema.nslots; k++)
        if (strlen(t->schema.slot[k].name) == (size_t)(eq - item)
            && memcmp(t->schema.slot[k].name, item, (size_t)(eq - item)) == 0) {
            if (t->format == WD_FMT_LIBSVM)
                return wd__fail(WD_ERR_INVALID_ARG, "buckets: libsvm slots take their size from their range");
            t->schema.slot[k].buckets = (uint32_t)v;
            return WD_OK;
        }
    return wd__fail(WD_ERR_INVALID_ARG, "buckets: no slot named '%.*s'", (int)(eq - item), item);
}
WDDEF wd_status wd_text_spec_buckets(wd_text_spec *t, const char *overrides) {
    if (!t) return wd__fail(WD_ERR_INVALID_ARG, "wd_text_spec_buckets: spec is NULL");
    return wd__each_item(overrides, wd__bucket_override, t);
}
WDDEF wd_status wd_text_spec_match(wd_text_spec *t, const wd_schema *s) {
    if (!t || !s) return wd__fail(WD_ERR_INVALID_ARG, "wd_text_spec_match: %s is NULL", t ? "the schema" : "the spec");
    if (s->nslots != t->schema.nslots || s->ndense != t->schema.ndense)
        return wd__fail(WD_ERR_SCHEMA, "schema has %d dense/%d slots, the text format gives %d/%d", s->ndense,
                        s->nslots, t->schema.ndense, t->schema.nslots);
    for (int k = 0; k < s->nslots; k++) {
        if (strncmp(s->slot[k].name, t->schema.slot[k].name, WD_NAME_MAX) != 0
            || s->slot[k].kind != t->schema.slot[k].kind)
            return wd__fail(WD_ERR_SCHEMA, "slot %d is '%.31s' in the schema but '%.31s' in the text format", k,
                            s->slot[k].name, t->schema.slot[k].name);
        if (t->format == WD_FMT_LIBSVM && s->slot[k].buckets != t->schema.slot[k].buckets)
            return wd__fail(WD_ERR_SCHEMA, "slot %s: libsvm range size differs from the schema", s->slot[k].name);
    }
    for (int k = 0; k < s->nslots; k++) t->schema.slot[k].buckets = s->slot[k].buckets;   // all checked: t changes
                                                                                          // whole or not at all
    return WD_OK;
}

WDDEF int64_t wd_vocab_size(const wd_vocab *v, int slot) {
    return (v && slot >= 0 && slot < v->nslots) ? v->n[slot] : -1; }
// Points t at v for every slot v covers (buckets = its table's rows); t does not own it.
static wd_status wd__spec_use_vocab(wd_text_spec *t, const wd_vocab *v) {
    if (v->nslots != t->schema.nslots)
        return wd__fail(WD_ERR_SCHEMA, "the vocabulary covers %d slots, the text format has %d", v->nslots,
                        t->schema.nslots);
    if (t->format == WD_FMT_LIBSVM)
        return wd__fail(WD_ERR_INVALID_ARG, "libsvm slots hold indexes, not values: no vocabulary");
    for (int k = 0; k < v->nslots; k++) if (v->n[k] >= 0) t->schema.slot[k].buckets = v->rows[k];
    t->vocab = v;
    return WD_OK;
}
WDDEF void wd_text_spec_free(wd_text_spec *t) {
    if (!t) return;
    wd__vocab_free((wd_vocab *)(uintptr_t)t->vocab);
    t->vocab = NULL;
}
WDDEF wd_status wd_text_spec_vocab(wd_text_spec *t, const wd_vocab *v) {
    if (!t || !v) return wd__fail(WD_ERR_INVALID_ARG, "wd_text_spec_vocab: NULL argument");
    if (v == t->vocab) return WD_OK;   // already its own
    wd_text_spec probe = *t;           // checked before anything changes
    probe.vocab = NULL;
    WD__TRY(wd__spec_use_vocab(&probe, v));
    wd_vocab *c;
    WD__TRY(wd__vocab_copy(v, &c));
    wd_text_spec_free(t);
    for (int k = 0; k < v->nslots; k++) t->schema.slot[k].buckets = probe.schema.slot[k].buckets;
    t->vocab = c;
    return WD_OK;
}

/* The input format as bytes (a .wdr v3 header, a .wdm v3 'INPT' section),
   little-endian: u32 format, u32 flags (bit 0 dense_raw), u32 delimiter,
   u32 ncols, i32 label_col, u32 nderived, u32 nranges, u32 header bytes,
   i64 dense_lo, i64 dense_hi, nderived x {u32 col, from, to, weekday},
   nranges x {u32 lo, hi, slot}, ncols x {u32 role, index}, the header line.
   The schema (names, kinds, buckets) and the vocabulary are stored beside it,
   not in it. */
#define WD__SPEC_FIXED 48u
static wd_status wd__spec_encode(const wd_text_spec *t, wd__buf *out) {
    size_t hl = strnlen(t->header, sizeof t->header - 1);
    int ncols = t->format == WD_FMT_CSV ? t->ncols : 0, nder = t->format == WD_FMT_CSV ? t->nderived : 0,
        nr = t->format == WD_FMT_LIBSVM ? t->nranges : 0;
    if (t->format != WD_FMT_CSV) hl = 0;
    size_t n = WD__SPEC_FIXED + 16 * (size_t)nder + 12 * (size_t)nr + 8 * (size_t)ncols + hl;
    out->len = 0;
    WD__TRY(wd__buf_reserve(out, n));
    uint8_t *p = out->p;
    memset(p, 0, n);
    int csv = t->format == WD_FMT_CSV;
    wd__put32(p, (uint32_t)t->format); wd__put32(p + 4, csv && t->dense_raw ? 1u : 0u);
    wd__put32(p + 8, csv ? (uint32_t)(unsigned char)(t->delimiter ? t->delimiter : ',') : 0u);
    wd__put32(p + 12, (uint32_t)ncols); wd__put32(p + 16, (uint32_t)(t->format == WD_FMT_CSV ? t->label_col : -1));
    wd__put32(p + 20, (uint32_t)nder); wd__put32(p + 24, (uint32_t)nr); wd__put32(p + 28, (uint32_t)hl);
    wd__put64(p + 32, (uint64_t)(t->format == WD_FMT_LIBSVM ? t->dense_lo : -1));
    wd__put64(p + 40, (uint64_t)(t->format == WD_FMT_LIBSVM ? t->dense_hi : -1));
    uint8_t *q = p + WD__SPEC_FIXED;
    for (int i = 0; i < nder; i++, q += 16) {
        wd__put32(q, (uint32_t)t->derived[i].col); wd__put32(q + 4, (uint32_t)t->derived[i].from);
        wd__put32(q + 8, (uint32_t)t->derived[i].to); wd__put32(q + 12, (uint32_t)t->derived[i].weekday);
    }
    for (int i = 0; i < nr; i++, q += 12) { wd__put32(q, t->ranges[i].lo); wd__put32(q + 4, t->ranges[i].hi);
        wd__put32(q + 8, (uint32_t)t->ranges[i].slot); }
    for (int i = 0; i < ncols; i++, q += 8) { wd__put32(q, (uint32_t)t->col_role[i]);
        wd__put32(q + 4, (uint32_t)t->col_index[i]); }
    memcpy(q, t->header, hl);
    out->len = n;
    return WD_OK;
}
// Decodes and checks an input format against the schema s it maps to: every
// column, range and derived slot inside its bounds, every dense column and
// slot filled exactly once (a spec that passed its checksum but not these
// could read or leave unset memory when parsing).
static wd_status wd__spec_decode(const uint8_t *p, size_t n, const wd_schema *s, const char *where,
                                 wd_text_spec **out) {
    *out = NULL;
    if (n < WD__SPEC_FIXED)
        return wd__fail(WD_ERR_CORRUPT, "%s: the input format holds %zu bytes, at least %u are needed", where, n,
                        WD__SPEC_FIXED);
    uint32_t format = wd__get32(p), flags = wd__get32(p + 4), delim = wd__get32(p + 8), ncols = wd__get32(p + 12);
    int32_t label_col = (int32_t)wd__get32(p + 16);
    uint32_t nder = wd__get32(p + 20), nr = wd__get32(p + 24), hl = wd__get32(p + 28);
    int64_t dlo = (int64_t)wd__get64(p + 32), dhi = (int64_t)wd__get64(p + 40);
    if (format > WD_FMT_CSV || flags > 1 || ncols > WD__CSV_MAXCOLS || nder > (uint32_t)s->nslots || nr > WD_MAX_SLOTS
        || hl >= sizeof(((wd_text_spec *)0)->header))
        return wd__fail(WD_ERR_CORRUPT,
                        "%s: the input format is not one this build knows (format %u, %u columns, %u derived slots, %u ranges)",
                        where, format, ncols, nder, nr);
    if ((uint64_t)n != WD__SPEC_FIXED + 16ull * nder + 12ull * nr + 8ull * ncols + hl)
        return wd__fail(WD_ERR_CORRUPT, "%s: the input format holds %zu bytes, its counts make %llu", where, n,
                        (unsigned long long)(WD__SPEC_FIXED + 16ull * nder + 12ull * nr + 8ull * ncols + hl));
    wd_text_spec *t = (wd_text_spec *)wd__calloc(sizeof *t);
    if (!t) return wd__fail(WD_ERR_NOMEM, "out of memory");
    t->format = (int)format; t->dense_raw = (int)flags; t->delimiter = (char)delim;
    t->schema = *s; t->id_col = -1; t->dense_lo = dlo; t->dense_hi = dhi;
    t->ncols = (int)ncols; t->label_col = label_col; t->nderived = (int)nder; t->nranges = (int)nr;
    const uint8_t *q = p + WD__SPEC_FIXED;
    for (uint32_t i = 0; i < nder; i++, q += 16) {
        t->derived[i].col = (int)wd__get32(q); t->derived[i].from = (int)wd__get32(q + 4);
        t->derived[i].to = (int)wd__get32(q + 8); t->derived[i].weekday = (int)wd__get32(q + 12);
    }
    for (uint32_t i = 0; i < nr; i++, q += 12) { t->ranges[i].lo = wd__get32(q); t->ranges[i].hi = wd__get32(q + 4);
        t->ranges[i].slot = (int)wd__get32(q + 8); }
    for (uint32_t i = 0; i < ncols; i++, q += 8) { t->col_role[i] = (int)wd__get32(q);
        t->col_index[i] = (int)wd__get32(q + 4); }
    memcpy(t->header, q, hl);
    t->header[hl] = 0;
    const char *bad = NULL;
    int S = s->nslots, D = s->ndense;
    unsigned char seen[WD_MAX_SLOTS + WD_MAX_DENSE];
    memset(seen, 0, sizeof seen);
    for (int k = 0; !bad && k < S; k++)
        if (format == WD_FMT_CSV
                        ? k >= S - (int)nder && s->slot[k].kind != WD_ONE_HOT   // CSV: multi-hot from Arrow lists
                        : s->slot[k].kind != (format == WD_FMT_LIBSVM ? WD_MULTI_HOT : WD_ONE_HOT))
            bad = "a slot's kind does not fit the format";
    if (bad) {
    } else if (format == WD_FMT_CRITEO) {
        wd_schema c;
        wd_schema_criteo(&c, 1);
        if (D != 13 || S != 26 || ncols || nder || nr || hl || flags || delim || label_col != -1 || dlo != -1
            || dhi != -1) bad = "a Criteo format with other fields set";
        for (int k = 0; !bad && k < S; k++)
            if (strcmp(s->slot[k].name, c.slot[k].name) != 0) bad = "a Criteo format whose slots are not C1..C26";
    } else if (format == WD_FMT_CSV) {
        if (!ncols || label_col < 0 || (uint32_t)label_col >= ncols || t->col_role[label_col] != 1 || nr || dlo != -1
            || dhi != -1 || !delim || delim > 255 || delim == '"' || delim == '\n' || delim == '\r')
            bad = "a CSV format without its columns, label or delimiter";
        int fixed = S - (int)nder, labels = 0;
        for (uint32_t i = 0; !bad && i < ncols; i++) {
            int role = t->col_role[i], ix = t->col_index[i];
            labels += role == 1;
            if (role < 0 || role > 3) bad = "a column of unknown role";
            else if (role == 2 && (ix < 0 || ix >= D || seen[WD_MAX_SLOTS + ix]++))
                bad = "a dense column outside the schema, or named twice";
            else if (role == 3 && (ix < 0 || ix >= fixed || seen[ix]++))
                bad = "a categorical column outside the schema, or named twice";
        }
        if (!bad && labels != 1) bad = "a CSV format with other than one label column";
        for (int k = 0; !bad && k < fixed; k++) if (!seen[k]) bad = "a slot that no column fills";
        for (int j = 0; !bad && j < D; j++) if (!seen[WD_MAX_SLOTS + j]) bad = "a dense column that no column fills";
        for (uint32_t i = 0; !bad && i < nder; i++) {
            int c = t->derived[i].col, a = t->derived[i].from, b = t->derived[i].to, w = t->derived[i].weekday;
            if (c < 0 || (uint32_t)c >= ncols || a < 0 || b <= a || b > 4096 || w < 0 || w > 1
                || (w && b - a != 6 && b - a != 8)) bad = "a derived slot outside its column";
            else if (c == label_col) bad = "a slot derived from the label column";
        }
    } else {   // libsvm
        if (ncols || nder || hl || flags || delim || label_col != -1 || nr != (uint32_t)S)
            bad = "a LibSVM format with other fields set, or not a range per slot";
        for (uint32_t i = 0; !bad && i < nr; i++) {
            const wd_range_map *r = &t->ranges[i];
            if (r->lo > r->hi || r->slot < 0 || r->slot >= S || seen[r->slot]++
                || (uint64_t)r->hi - r->lo + 1 != (uint64_t)s->slot[r->slot].buckets)
                bad = "a LibSVM range that does not match its slot";
            for (uint32_t j = 0; !bad && j < i; j++)
                if (!(r->hi < t->ranges[j].lo || r->lo > t->ranges[j].hi)) bad = "LibSVM ranges that overlap";
            if (!bad && dlo >= 0 && !((int64_t)r->hi < dlo || (int64_t)r->lo > dhi))
                bad = "a LibSVM range that overlaps the dense range";
        }
        if (!bad && !(D == 0 ? dlo == -1 && dhi == -1 : dlo >= 0 && dhi >= dlo && dhi <= 0xFFFFFFFFll
                      && dhi - dlo + 1 == D)) bad = "a LibSVM dense range that does not match the dense columns";
    }
    if (bad) { wd__free(t); return wd__fail(WD_ERR_CORRUPT, "%s: the input format is inconsistent: %s", where, bad); }
    *out = t;
    return WD_OK;
}

// The first pass of wd_convert watches every categorical value (by hash):
// exact counts (for a vocabulary), or a distinct-count estimate (HyperLogLog,
// 2^14 registers: about 1% error) per slot plus the exact values of slots
// that hold at most WD__EXACT_MAX of them (those get ids of their own).
#define WD__HLL_BITS 14
#define WD__EXACT_MAX 4096
typedef struct wd__cmap { uint64_t *key; uint32_t *cnt; uint64_t n, cap, salt; } wd__cmap;   // cnt 0: empty; salt:
                                                                                             // wd__table_salt
typedef struct wd__sink {
    int counting;
    int extend;                     // counting the values a spec's vocabulary lacks (extend_vocab)
    int nslots;
    wd__cmap map[WD_MAX_SLOTS];
    uint8_t *hll[WD_MAX_SLOTS];
    uint8_t over[WD_MAX_SLOTS];     // not counting: the slot has more than WD__EXACT_MAX values
    wd_status failed;
} wd__sink;
static WD__TLS wd__sink *wd__cat_sink;   // set on a thread running the first pass
static WD__TLS wd__buf *wd__id_sink;     // set on a thread collecting id columns
static void wd__sink_free(wd__sink *s) {
    if (!s) return;
    for (int k = 0; k < WD_MAX_SLOTS; k++) { wd__free(s->map[k].key); wd__free(s->map[k].cnt); wd__free(s->hll[k]); }
    wd__free(s);
}
static wd_status wd__cmap_add(wd__cmap *m, uint64_t h, uint32_t c) {
    if (2 * (m->n + 1) > m->cap) {
        uint64_t nc = m->cap ? 2 * m->cap : 1024;
        if (!m->cap) m->salt = wd__table_salt(m);
        uint64_t *nk = (uint64_t *)wd__calloc(sizeof(uint64_t) * nc);
        uint32_t *nv = (uint32_t *)wd__calloc(sizeof(uint32_t) * nc);
        if (!nk || !nv) { wd__free(nk); wd__free(nv);
            return wd__fail(WD_ERR_NOMEM, "out of memory counting categorical values (%llu distinct)",
                            (unsigned long long)m->n); }
        for (uint64_t i = 0; i < m->cap; i++)
            if (m->cnt[i]) {
                uint64_t j = wd__table_slot(m->key[i], m->salt) & (nc - 1);
                while (nv[j]) j = (j + 1) & (nc - 1);
                nk[j] = m->key[i]; nv[j] = m->cnt[i];
            }
        wd__free(m->key); wd__free(m->cnt);
        m->key = nk; m->cnt = nv; m->cap = nc;
    }
    uint64_t j = wd__table_slot(h, m->salt) & (m->cap - 1);
    while (m->cnt[j] && m->key[j] != h) j = (j + 1) & (m->cap - 1);
    if (!m->cnt[j]) { m->key[j] = h; m->n++; }
    m->cnt[j] = m->cnt[j] > UINT32_MAX - c ? UINT32_MAX : m->cnt[j] + c;   // saturate
    return WD_OK;
}
// Slot k has too many values for ids of their own: it hashes.
static void wd__sink_drop(wd__sink *s, int k) {
    wd__free(s->map[k].key); wd__free(s->map[k].cnt);
    memset(&s->map[k], 0, sizeof s->map[k]);
    s->over[k] = 1;
}
// Counts c more of value h in slot k: every value when counting (a
// vocabulary), else while the slot has at most WD__EXACT_MAX values (past
// that its map is dropped: the slot hashes).
static void wd__sink_count(wd__sink *s, int k, uint64_t h, uint32_t c) {
    if (s->over[k] || (s->failed = wd__cmap_add(&s->map[k], h, c)) != WD_OK) return;
    if (!s->counting && s->map[k].n > WD__EXACT_MAX) wd__sink_drop(s, k);
}
static void wd__sink_add(wd__sink *s, int k, uint64_t h) {
    if (s->failed) return;
    wd__sink_count(s, k, h, 1);
    if (s->counting) return;
    if (!s->hll[k] && !(s->hll[k] = (uint8_t *)wd__calloc((size_t)1 << WD__HLL_BITS))) {
        s->failed = wd__fail(WD_ERR_NOMEM, "out of memory"); return; }
    uint64_t x = wd_mix64(h);
    uint32_t j = (uint32_t)(x >> (64 - WD__HLL_BITS));
    uint64_t w = (x << WD__HLL_BITS) | ((uint64_t)1 << (WD__HLL_BITS - 1));
    uint8_t rank = (uint8_t)(__builtin_clzll(w) + 1);
    if (rank > s->hll[k][j]) s->hll[k][j] = rank;
}
// Adds sink `from` into `into` (counts summed, registers maxed).
static wd_status wd__sink_merge(wd__sink *into, const wd__sink *from) {
    if (from->failed) return from->failed;
    for (int k = 0; k < from->nslots; k++) {
        const wd__cmap *m = &from->map[k];
        if (from->over[k] && !into->over[k]) wd__sink_drop(into, k);
        for (uint64_t i = 0; i < m->cap && !into->over[k] && !into->failed; i++)
            if (m->cnt[i]) wd__sink_count(into, k, m->key[i], m->cnt[i]);
        WD__TRY(into->failed);
        if (from->hll[k]) {
            if (!into->hll[k] && !(into->hll[k] = (uint8_t *)wd__calloc((size_t)1 << WD__HLL_BITS)))
                return wd__fail(WD_ERR_NOMEM, "out of memory");
            for (int j = 0; j < 1 << WD__HLL_BITS; j++)
                if (from->hll[k][j] > into->hll[k][j]) into->hll[k][j] = from->hll[k][j];
        }
    }
    return WD_OK;
}
static double wd__hll_estimate(const uint8_t *r) {
    if (!r) return 0;
    const double m = (double)(1 << WD__HLL_BITS), alpha = 0.7213 / (1.0 + 1.079 / m);
    double sum = 0;
    int zeros = 0;
    for (int j = 0; j < 1 << WD__HLL_BITS; j++) { sum += ldexp(1.0, -r[j]); zeros += r[j] == 0; }
    double e = alpha * m * m / sum;
    if (e <= 2.5 * m && zeros) e = m * log(m / zeros);   // linear counting for small sets
    return e;
}
typedef struct wd__vc { uint64_t h; uint32_t c; } wd__vc;
static int wd__vc_cmp(const void *a, const void *b) {   // by falling count, then hash
    const wd__vc *x = (const wd__vc *)a, *y = (const wd__vc *)b;
    if (x->c != y->c) return x->c > y->c ? -1 : 1;
    return x->h < y->h ? -1 : x->h > y->h;
}
// The vocabulary of the values counted at least min_count times, per slot
// (only: the slots to cover, NULL for all; the others hash: n = -1), each
// slot's table max(values, capacity) + 1 rows.
static wd_status wd__vocab_from(const wd__sink *s, int min_count, uint32_t capacity, const int *only, wd_vocab **out) {
    *out = NULL;
    wd_vocab *v = WD__NEW(wd_vocab);
    if (!v) return wd__fail(WD_ERR_NOMEM, "out of memory");
    v->nslots = s->nslots;
    wd_status st = WD_OK;
    for (int k = 0; !st && k < s->nslots; k++) {
        if (only && !only[k]) { v->n[k] = -1; continue; }
        const wd__cmap *m = &s->map[k];
        uint64_t kept = 0;
        for (uint64_t i = 0; i < m->cap; i++) kept += m->cnt[i] >= (uint32_t)min_count;
        if (kept >= 0xFFFFFFFFu) {
            st = wd__fail(WD_ERR_LIMIT, "slot %d: %llu values seen %d times or more: more than 2^32 - 1", k,
                          (unsigned long long)kept, min_count); break; }
        wd__vc *e = (wd__vc *)wd__malloc(sizeof(wd__vc) * (size_t)WD__MAX(kept, 1));
        v->hash[k] = (uint64_t *)wd__malloc(sizeof(uint64_t) * (size_t)WD__MAX(kept, 1));
        if (!e || !v->hash[k]) { wd__free(e); st = wd__fail(WD_ERR_NOMEM, "out of memory for a vocabulary"); break; }
        uint64_t q = 0;
        for (uint64_t i = 0; i < m->cap; i++)
            if (m->cnt[i] >= (uint32_t)min_count) { e[q].h = m->key[i]; e[q].c = m->cnt[i]; q++; }
        qsort(e, (size_t)kept, sizeof *e, wd__vc_cmp);
        for (uint64_t i = 0; i < kept; i++) v->hash[k][i] = e[i].h;
        v->n[k] = (int64_t)kept;
        v->rows[k] = (uint32_t)WD__MAX(kept, (uint64_t)capacity) + 1;
        wd__free(e);
    }
    for (int k = s->nslots; k < WD_MAX_SLOTS; k++) v->n[k] = -1;
    if (!st) st = wd__vocab_index(v);
    if (st) { wd__vocab_free(v); return st; }
    *out = v;
    return WD_OK;
}
// old extended by the values counted in s (those old lacks) at least
// min_count times: appended after old's ids by falling count, then hash,
// while the slot's table has rows; added[k] / no_room[k] count those given
// ids and those left out.
static wd_status wd__vocab_extend(const wd_vocab *old, const wd__sink *s, int min_count, wd_vocab **out, int64_t *added,
                                  int64_t *no_room) {
    wd_vocab *v;
    *out = NULL;
    WD__TRY(wd__vocab_copy(old, &v));
    wd_status st = WD_OK;
    for (int k = 0; !st && k < v->nslots; k++) {
        if (v->n[k] < 0) continue;
        const wd__cmap *m = &s->map[k];
        uint64_t kept = 0, room = (uint64_t)v->rows[k] - 1 - (uint64_t)v->n[k], q = 0;
        for (uint64_t i = 0; i < m->cap; i++) kept += m->cnt[i] >= (uint32_t)min_count;
        if (!kept) continue;
        uint64_t take = WD__MIN(kept, room);
        wd__vc *e = (wd__vc *)wd__malloc(sizeof(wd__vc) * (size_t)kept);
        uint64_t *h = (uint64_t *)wd__malloc(8 * (size_t)(v->n[k] + (int64_t)take + 1));
        if (!e || !h) { wd__free(e); wd__free(h);
            st = wd__fail(WD_ERR_NOMEM, "out of memory extending a vocabulary"); break; }
        for (uint64_t i = 0; i < m->cap; i++)
            if (m->cnt[i] >= (uint32_t)min_count) { e[q].h = m->key[i]; e[q].c = m->cnt[i]; q++; }
        qsort(e, (size_t)kept, sizeof *e, wd__vc_cmp);
        if (v->n[k] > 0) memcpy(h, v->hash[k], 8 * (size_t)v->n[k]);
        for (uint64_t i = 0; i < take; i++) h[v->n[k] + (int64_t)i] = e[i].h;
        wd__free(e);
        wd__free(v->hash[k]);
        v->hash[k] = h;
        v->n[k] += (int64_t)take;
        added[k] = (int64_t)take;
        no_room[k] = (int64_t)(kept - take);
    }
    for (int k = 0; !st && k < v->nslots; k++) {   // the lookup tables again, for the longer lists
        wd__free(v->key[k]); wd__free(v->val[k]);
        v->key[k] = NULL; v->val[k] = NULL;
    }
    if (!st) st = wd__vocab_index(v);
    if (st) { wd__vocab_free(v); return st; }
    *out = v;
    return WD_OK;
}
// Runs on a training rank's thread once a batch, between its steps: a
// one-hot slot's values are the batch's weighted samples, counted once, and
// its ids are read only where a vocabulary makes id 0 out of vocabulary
// (the per-slot loop over every sample cost 0.58 ms a batch of 16384 with 26
// slots, a ceiling of 28M samples/s for the rank thread: bench/host_feed.c).
WDDEF void wd_oov_count(const wd_vocab *v, const wd_batch *b, wd_oov *o) {
    if (!b || !o) return;
    int64_t live = 0;   // samples that count (padding has weight 0)
    if (b->weight) for (int i = 0; i < b->n; i++) live += b->weight[i] != 0;
    else live = b->n;
    for (int k = 0; k < b->nslots && k < WD_MAX_SLOTS; k++) {
        int voc = v && k < v->nslots && v->n[k] >= 0;
        int64_t vals = 0, oov = 0;
        if (!b->offs[k]) {   // one-hot
            const uint32_t *id = b->ids[k];
            vals = live;
            if (voc && b->weight) for (int i = 0; i < b->n; i++) oov += (id[i] == 0) & (b->weight[i] != 0);
            else if (voc) for (int i = 0; i < b->n; i++) oov += id[i] == 0;
        } else for (int i = 0; i < b->n; i++) {   // multi-hot
            if (b->weight && b->weight[i] == 0) continue;
            uint32_t a = b->offs[k][i], z = b->offs[k][i + 1];
            vals += z - a;
            for (uint32_t j = a; voc && j < z; j++) oov += b->ids[k][j] == 0;
        }
        o->slot_values[k] += vals; o->slot_oov[k] += oov;
        o->values += vals; o->oov += oov;
    }
}
WDDEF int wd_oov_worst(const wd_oov *o, int nslots, int *slots, int n) {
    int got = 0;
    for (int k = 0; o && k < nslots && k < WD_MAX_SLOTS; k++) {
        if (!o->slot_oov[k]) continue;
        double sk = (double)o->slot_oov[k] / (double)o->slot_values[k];
        int at = got < n ? got++ : n;   // insertion into the top n, by falling share
        while (at > 0 && (double)o->slot_oov[slots[at - 1]] / (double)o->slot_values[slots[at - 1]] < sk) {
            if (at < n) slots[at] = slots[at - 1];
            at--;
        }
        if (at < n) slots[at] = k;
    }
    return got;
}
// The raw values behind a vocabulary's ids (a vocabulary keeps hashes only),
// recovered from text for an ONNX graph that maps strings (section 18): while
// set on a thread, wd__cat_id notes the bytes of each id's value the first
// time the id is seen, in the slots that have at[k].
typedef struct wd__names {
    const wd_text_spec *spec;       // the format the values were read in (Criteo or CSV)
    wd__buf text;                   // the values' bytes, one after another
    int64_t *at[WD_MAX_SLOTS];      // (vocabulary size + 1) where id i's value starts in text (-1: not seen)
    uint32_t *len[WD_MAX_SLOTS];
    wd_status failed;
} wd__names;
static WD__TLS wd__names *wd__name_sink;
static void wd__names_note(wd__names *nm, int k, uint32_t id, const char *s, size_t n) {
    if (nm->failed || !nm->at[k] || !id) return;
    if (nm->at[k][id] < 0) {
        nm->at[k][id] = (int64_t)nm->text.len;
        nm->len[k][id] = (uint32_t)n;
        nm->failed = wd__buf_put(&nm->text, s, n);
    } else if (nm->len[k][id] != n || memcmp(nm->text.p + nm->at[k][id], s, n) != 0) {   // (odds ~ values^2 / 2^65)
        nm->failed = wd__fail(WD_ERR_UNSUPPORTED, "slot %d: the values '%.*s' and '%.*s' have one 64-bit hash, "
                              "so one id in the model: a map of strings cannot give both that id", k,
                              (int)WD__MIN(n, 60), s, (int)WD__MIN(nm->len[k][id], 60),
                              (const char *)nm->text.p + nm->at[k][id]);
    }
}
// The id of categorical value s of slot k (or, in the first pass of
// wd_convert, a note of it).
static uint32_t wd__cat_id(const wd_text_spec *t, int k, const char *s, size_t n) {
    uint64_t h = wd_hash_bytes(s, n, (uint64_t)k);
    if (wd__cat_sink) {   // extending: only the values the vocabulary lacks
        if (!wd__cat_sink->extend || (t->vocab && t->vocab->n[k] >= 0 && !wd__vocab_id(t->vocab, k, h)))
            wd__sink_add(wd__cat_sink, k, h);
        return 0;
    }
    if (t->vocab && t->vocab->n[k] >= 0) {
        uint32_t id = wd__vocab_id(t->vocab, k, h);
        if (wd__name_sink) wd__names_note(wd__name_sink, k, id, s, n);
        return id;
    }
    return (uint32_t)(h % t->schema.slot[k].buckets);
}
// Day of the week (0 = Monday) of YYMMDD (20YY) or YYYYMMDD; -1 if not a date.
static int wd__weekday(const char *s, size_t n) {
    int64_t v;
    if ((n != 6 && n != 8) || wd__parse_i64(s, s + n, &v) || v < 0) return -1;
    int y = (int)(v / 10000), m = (int)(v / 100 % 100), d = (int)(v % 100);
    if (n == 6) y += 2000;
    if (m < 1 || m > 12 || d < 1 || d > 31) return -1;
    static const int off[12] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};   // Sakamoto's method (0 = Sunday)
    if (m < 3) y--;
    int dow = (y + y / 4 - y / 100 + y / 400 + off[m - 1] + d) % 7;
    return (dow + 6) % 7;
}

// Appends one sample: its dense row and one-hot ids are filled by the caller
// through the returned pointers (multi-hot ids are pushed with wd__push_id).
static wd_status wd__begin_sample(wd_batch *b) {
    if (b->n == b->cap) WD__TRY(wd_batch_reserve(b, b->n + 1, b->nnz_cap));
    return WD_OK;
}
static wd_status wd__push_id(wd_batch *b, int k, uint32_t id, uint32_t *cursor) {
    if ((int64_t)*cursor >= b->nnz_cap) WD__TRY(wd_batch_reserve(b, b->cap, (int64_t)*cursor + 1));
    b->ids[k][(*cursor)++] = id;
    return WD_OK;
}

// Slot k of t has neither buckets nor a vocabulary yet (wd_convert sizes it).
static int wd__slot_unsized(const wd_text_spec *t, int k) { return t->schema.slot[k].buckets == 0
    && !(t->vocab && t->vocab->n[k] >= 0); }

// Raw dense value x of column j through t's dense rule (wd_batch_add): *v,
// or WD_ERR_NUMERIC naming the column when the rule does not take x.
static wd_status wd__dense_raw_value(const wd_text_spec *t, int j, double x, float *v) {
    if (isnan(x)) { *v = 0.0f; return WD_OK; }   // missing, as an empty field
    if (t->format == WD_FMT_CSV && t->dense_raw) {
        *v = (float)x;
        if (isfinite(*v)) return WD_OK;
        return wd__fail(WD_ERR_NUMERIC, "wd_batch_add: dense value %d is %g, not a finite float (the spec takes "
                        "dense values as they are)", j, x);
    }
    if (x == floor(x) && x >= -9223372036854775808.0 && x < 9223372036854775808.0) {
        *v = wd_count_feature((int64_t)x);
        return WD_OK;
    }
    return wd__fail(WD_ERR_NUMERIC, "wd_batch_add: dense value %d is %g, not a count: the spec's dense rule takes "
                    "integers within +-2^63 (log1p of the count; pass the raw count, not a transformed value)", j, x);
}
WDDEF wd_status wd_batch_add(const wd_text_spec *t, wd_batch *b, float label, const double *dense, int ndense,
                             const char *const *cat, const size_t *cat_len, int ncat) {
    if (!t || !b) return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_add: %s is NULL", !t ? "the text spec" : "the batch");
    const wd_schema *s = &t->schema;
    if (t->format == WD_FMT_LIBSVM)
        return wd__fail(WD_ERR_UNSUPPORTED, "wd_batch_add: a libsvm spec maps feature indices, not strings: set the "
                        "batch's ids directly");
    if (ndense != s->ndense || ncat != s->nslots || (ndense && !dense))
        return wd__fail(WD_ERR_SCHEMA, "wd_batch_add: a request of %d dense and %d categorical values%s; the spec "
                        "takes %d dense and %d categorical (a request for another model?)", ndense, ncat,
                        ndense && !dense ? " (dense NULL)" : "", s->ndense, s->nslots);
    WD__TRY(wd__batch_layout(b, s, "wd_batch_add", -1, "spec"));
    if (!(label >= 0.0f && label <= 1.0f))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_batch_add: label %g is outside [0, 1]", (double)label);
    for (int k = 0; k < s->nslots; k++) {
        if (s->slot[k].kind != WD_ONE_HOT)
            return wd__fail(WD_ERR_SCHEMA, "wd_batch_add: slot %d (%.31s) is not one-hot", k, s->slot[k].name);
        if (wd__slot_unsized(t, k))
            return wd__fail(WD_ERR_INVALID_ARG,
                            "wd_batch_add: slot %d (%.31s) has no buckets yet: take them from the training file (wd_text_spec_match or wd_text_spec_vocab)",
                            k, s->slot[k].name);
    }
    float v = 0.0f;
    for (int j = 0; j < s->ndense; j++) WD__TRY(wd__dense_raw_value(t, j, dense[j], &v));   // before b changes
    WD__TRY(wd__begin_sample(b));
    int i = b->n;
    b->label[i] = label; b->weight[i] = 1.0f;
    float *row = b->dense + (size_t)i * (size_t)s->ndense;
    for (int j = 0; j < s->ndense; j++) (void)wd__dense_raw_value(t, j, dense[j], &row[j]);
    for (int k = 0; k < s->nslots; k++) {
        const char *c = cat && cat[k] ? cat[k] : "";
        b->ids[k][i] = wd__cat_id(t, k, c, cat && cat[k] ? (cat_len ? cat_len[k] : strlen(c)) : 0);
    }
    b->n++;
    return WD_OK;
}

// nolabel: a line without the label field (wd_parse_unlabeled)
static wd_status wd__parse_criteo(const wd_text_spec *t, const char *line, size_t len, wd_batch *b, int nolabel) {
    const char *f[40], *e[40];
    const char *p = line, *end = line + len;
    static const char zero[] = "0";
    int nf = nolabel;   // without a label, fields from 1 and the label "0"
    f[0] = zero; e[0] = zero + 1;
    for (;;) {
        const char *tab = (const char *)memchr(p, '\t', (size_t)(end - p));
        if (nf == 40) return wd__fail(WD_ERR_PARSE, "too many fields (more than %d)", 40 - nolabel);
        f[nf] = p; e[nf] = tab ? tab : end; nf++;
        if (!tab) break;
        p = tab + 1;
    }
    if (nf != 40)
        return wd__fail(WD_ERR_PARSE,
                        nolabel ? "%d fields, unlabeled Criteo lines have 39 (13 integers, 26 categorical)"
                        : "%d fields, Criteo lines have 40 (label, 13 integers, 26 categorical)", nf - nolabel);
    if (e[0] - f[0] != 1 || (f[0][0] != '0' && f[0][0] != '1'))
        return wd__fail(WD_ERR_PARSE, "label '%.*s' is not 0 or 1", (int)WD__MIN(e[0] - f[0], 20), f[0]);
    WD__TRY(wd__begin_sample(b));
    int i = b->n;
    b->label[i] = (float)(f[0][0] - '0');
    b->weight[i] = 1.0f;
    float *dv = b->dense + (size_t)i * 13;
    for (int j = 0; j < 13; j++) {
        int64_t v = 0;
        if (f[1 + j] != e[1 + j]) {
            int rc = wd__parse_i64(f[1 + j], e[1 + j], &v);
            if (rc) return wd__fail(WD_ERR_PARSE, "I%d: '%.*s' is %s", j + 1, (int)WD__MIN(e[1 + j] - f[1 + j], 30),
                                    f[1 + j], rc == -2 ? "too large for a 64-bit integer" : "not an integer");
            dv[j] = wd_count_feature(v);
        } else dv[j] = 0.0f;
    }
    for (int k = 0; k < 26; k++)
        b->ids[k][i] = wd__cat_id(t, k, f[14 + k], (size_t)(e[14 + k] - f[14 + k]));
    b->n++;
    return WD_OK;
}

static wd_status wd__csv_fields(const wd_text_spec *t, const char *const *fs, const size_t *fl, wd_batch *b);
static wd_status wd__parse_csv(const wd_text_spec *t, const char *line, size_t len, wd_batch *b, int nolabel) {
    for (int k = 0; k < t->schema.nslots; k++)
        if (t->schema.slot[k].kind != WD_ONE_HOT)
            return wd__fail(WD_ERR_UNSUPPORTED,
                    "slot %s is multi-hot (an Arrow stream's list column): a CSV line has no lists; "
                    "read such data as a stream (wd_arrow_reader)",
                    t->schema.slot[k].name);
    const char *fs[WD__CSV_MAXCOLS];
    size_t fl[WD__CSV_MAXCOLS];
    char *scratch = NULL;
    int lc = -1;   // without a label: its column is left out of the line
    for (int col = 0; nolabel && lc < 0 && col < t->ncols; col++) if (t->col_role[col] == 1) lc = col;
    int want = t->ncols - (lc >= 0);
    int nf = wd__csv_split(line, len, t->delimiter ? t->delimiter : ',', fs, fl, want, &scratch);
    wd_status st = WD_OK;
    if (nf == -1) st = wd__fail(WD_ERR_PARSE, "more than %d fields", want);
    else if (nf == -2)
        st = wd__fail(WD_ERR_PARSE,
                      "a quote in the middle of a field (quoted fields are \"...\", with \"\" for a quote)");
    else if (nf == -4)
        st = wd__fail(WD_ERR_PARSE, "an unterminated quote: a quoted field the line does not close "
                      "(a quoted field cannot hold a line break)");
    else if (nf < 0) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    if (st) { wd__free(scratch); return st; }
    if (nf != want)
        st = wd__fail(WD_ERR_PARSE,
                      lc >= 0 ? "%d fields, the header has %d besides the label"
                      : "%d fields, the header has %d", nf, want);
    if (!st && lc >= 0) {   // the label's column back in its place, as 0
        memmove(fs + lc + 1, fs + lc, sizeof fs[0] * (size_t)(nf - lc));
        memmove(fl + lc + 1, fl + lc, sizeof fl[0] * (size_t)(nf - lc));
        fs[lc] = "0"; fl[lc] = 1; nf++;
    }
    if (!st) st = wd__csv_fields(t, fs, fl, b);
    wd__free(scratch);
    return st;
}
// Appends the sample of one row's fields (t->ncols of them, fs[c] of fl[c]
// bytes: CSV lines, and section 20's Arrow rows through the same mapping).
static wd_status wd__csv_fields(const wd_text_spec *t, const char *const *fs, const size_t *fl, wd_batch *b) {
    int nf = t->ncols;
    wd_status st = wd__begin_sample(b);
    int i = b->n;
    float *dv = st ? NULL : b->dense + (size_t)i * (size_t)t->schema.ndense;
    for (int col = 0; !st && col < nf; col++) {
        const char *p = fs[col], *fe = fs[col] + fl[col];
        int role = t->col_role[col];
        if (role == 1) {
            double y;
            if (wd__parse_f64(p, fe, &y) || (y != 0.0 && y != 1.0))
                st = wd__fail(WD_ERR_PARSE, "label '%.*s' is not 0 or 1", (int)WD__MIN(fe - p, 20), p);
            else b->label[i] = (float)y;
        } else if (role == 2) {
            float v = 0.0f;
            if (fe != p) {
                if (t->dense_raw) {
                    double x;
                    if (wd__parse_f64(p, fe, &x))
                        st = wd__fail(WD_ERR_PARSE, "column %d: '%.*s' is not a finite number", col + 1,
                                      (int)WD__MIN(fe - p, 30), p);
                    v = (float)x;
                } else {
                    int64_t x = 0;
                    int rc = wd__parse_i64(p, fe, &x);
                    if (rc) st = wd__fail(WD_ERR_PARSE, "column %d: '%.*s' is %s", col + 1, (int)WD__MIN(fe - p, 30), p,
                                          rc == -2 ? "too large for a 64-bit integer" : "not an integer");
                    v = wd_count_feature(x);
                }
            }
            if (!st) dv[t->col_index[col]] = v;
        } else if (role == 3) {
            int k = t->col_index[col];
            if (b->kind[k] == WD_MULTI_HOT)
                b->offs[k][i + 1] = b->offs[k][i];   // a stream's list column fills it (section 20)
            else b->ids[k][i] = wd__cat_id(t, k, p, (size_t)(fe - p));
        }
    }
    int base = t->schema.nslots - t->nderived;
    for (int q = 0; !st && q < t->nderived; q++) {   // derived slots: part of a column
        size_t n = fl[t->derived[q].col], a = WD__MIN((size_t)t->derived[q].from, n),
            e = WD__MIN((size_t)t->derived[q].to, n);
        const char *p = fs[t->derived[q].col] + a;
        char day[2];
        size_t dl = e - a;
        if (t->derived[q].weekday) { int w = wd__weekday(p, dl); day[0] = (char)('0' + w); p = day;
            dl = w < 0 ? 0 : 1; }
        b->ids[base + q][i] = wd__cat_id(t, base + q, p, dl);
    }
    if (!st && t->id_col >= 0 && wd__id_sink) {   // the row's id, for wd_convert_desc.ids_output
        st = wd__buf_put(wd__id_sink, fs[t->id_col], fl[t->id_col]);
        if (!st) st = wd__buf_put(wd__id_sink, "\n", 1);
    }
    if (st) return st;
    b->weight[i] = 1.0f;
    b->n++;
    return WD_OK;
}

static wd_status wd__parse_libsvm(const wd_text_spec *t, const char *line, size_t len, wd_batch *b, int nolabel) {
    WD__TRY(wd__begin_sample(b));
    int i = b->n, S = t->schema.nslots;
    const char *p = line, *end = line + len;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    const char *le = p;
    while (!nolabel && le < end && *le != ' ' && *le != '\t') le++;
    double y = 0.0;
    if (!nolabel && (wd__parse_f64(p, le, &y) || (y != 0.0 && y != 1.0 && y != -1.0)))
        return wd__fail(WD_ERR_PARSE, "label '%.*s' is not 0, 1, -1 or +1", (int)WD__MIN(le - p, 20), p);
    b->label[i] = y > 0 ? 1.0f : 0.0f;
    size_t D = (size_t)t->schema.ndense;   // b may move as ids grow: index, don't hold pointers
    for (size_t j = 0; j < D; j++) b->dense[(size_t)i * D + j] = 0.0f;
    uint32_t cur[WD_MAX_SLOTS];
    for (int k = 0; k < S; k++) cur[k] = b->offs[k][i];
    p = le;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p >= end) break;
        const char *fe = p;
        while (fe < end && *fe != ' ' && *fe != '\t') fe++;
        const char *colon = (const char *)memchr(p, ':', (size_t)(fe - p));
        int64_t idx;
        double v;
        if (!colon || wd__parse_i64(p, colon, &idx) || idx < 0 || wd__parse_f64(colon + 1, fe, &v))
            return wd__fail(WD_ERR_PARSE, "feature '%.*s' is not INDEX:VALUE", (int)WD__MIN(fe - p, 40), p);
        if (t->dense_lo >= 0 && idx >= t->dense_lo && idx <= t->dense_hi) {
            b->dense[(size_t)i * D + (size_t)(idx - t->dense_lo)] = (float)v;
        } else {
            int r = 0;
            while (r < t->nranges && !((uint64_t)idx >= t->ranges[r].lo && (uint64_t)idx <= t->ranges[r].hi)) r++;
            if (r == t->nranges)
                return wd__fail(WD_ERR_PARSE, "feature index %lld is in no slot range", (long long)idx);
            int k = t->ranges[r].slot;
            WD__TRY(wd__push_id(b, k, (uint32_t)(idx - t->ranges[r].lo), &cur[k]));
        }
        p = fe;
    }
    for (int k = 0; k < S; k++) b->offs[k][i + 1] = cur[k];
    b->weight[i] = 1.0f;
    b->n++;
    return WD_OK;
}

static wd_status wd__parse(const wd_text_spec *t, const char *line, size_t len, wd_batch *b, int nolabel,
                           const char *who) {
    if (!t || !line || !b)
        return wd__fail(WD_ERR_INVALID_ARG, "%s: %s is NULL", who, !t ? "the spec" : !line ? "the line" : "the batch");
    WD__TRY(wd__batch_layout(b, &t->schema, who, -1, "text format"));
    for (int k = 0; k < t->schema.nslots; k++) {
        if (!wd__cat_sink && t->format != WD_FMT_LIBSVM && wd__slot_unsized(t, k))
            return wd__fail(WD_ERR_INVALID_ARG,
                            "%s: slot %s has 0 buckets (wd_convert sizes them from the data; set them to parse lines yourself)",
                            who, t->schema.slot[k].name);
    }
    if (len && line[len - 1] == '\r') len--;
    switch (t->format) {
    case WD_FMT_CRITEO: return wd__parse_criteo(t, line, len, b, nolabel);
    case WD_FMT_CSV: return wd__parse_csv(t, line, len, b, nolabel);
    case WD_FMT_LIBSVM: return wd__parse_libsvm(t, line, len, b, nolabel);
    default: return wd__fail(WD_ERR_INVALID_ARG, "unknown text format %d", t->format);
    }
}
WDDEF wd_status wd_parse_line(const wd_text_spec *t, const char *line, size_t len, wd_batch *b) {
    return wd__parse(t, line, len, b, 0, "wd_parse_line");
}
WDDEF wd_status wd_parse_unlabeled(const wd_text_spec *t, const char *line, size_t len, wd_batch *b) {
    return wd__parse(t, line, len, b, 1, "wd_parse_unlabeled");
}

// ---- ordered parallel block pipeline ------------------------------------------
// Jobs are produced in order by the calling thread, run by T workers, and
// consumed (written) in order by the calling thread. Convert and gen use it.
typedef struct wd__job {
    int64_t seq;
    int state;              // 0 free, 1 queued, 2 running, 3 done
    wd_status status;
    char err[WD__ERR_MAX];
    // input (convert: text lines; gen: a row range)
    wd__buf text;
    int file;
    int64_t first_line, nlines, row0, nrows;
    // output
    wd__buf block, raw, side1, side2;    // compressed block; scratch; text side outputs
    wd_batch batch;
    int64_t rows, bad;
    int nbad_shown;
    char bad_where[8][400];
    float *prob;                          // gen: true probabilities (nrows)
    wd__sink *sink;                       // convert's first pass: the values this job saw
    wd__buf segs;                         // convert from an Arrow stream: the job's rows (section 20)
    ZSTD_CCtx *cc;
} wd__job;

typedef struct wd__pipe {
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    wd__job *jobs;
    int njobs, nthreads, stop;
    void (*run)(struct wd__pipe *, wd__job *);
    void *ctx;
    pthread_t threads[256];
    int started;
} wd__pipe;

static void *wd__pipe_worker(void *arg) {
    wd__pipe *p = (wd__pipe *)arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        wd__job *j = NULL;
        while (!p->stop) {
            for (int i = 0; i < p->njobs; i++)
                if (p->jobs[i].state == 1 && (!j || p->jobs[i].seq < j->seq)) j = &p->jobs[i];
            if (j) break;
            pthread_cond_wait(&p->cv_work, &p->mu);
        }
        if (p->stop) break;
        j->state = 2;
        pthread_mutex_unlock(&p->mu);
        p->run(p, j);
        pthread_mutex_lock(&p->mu);
        j->state = 3;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void wd__pipe_free_jobs(wd__pipe *p) {
    for (int i = 0; p->jobs && i < p->njobs; i++) {
        wd__job *j = &p->jobs[i];
        wd__buf_free(&j->text); wd__buf_free(&j->block); wd__buf_free(&j->raw);
        wd__buf_free(&j->side1); wd__buf_free(&j->side2); wd__buf_free(&j->segs);
        wd_batch_free(&j->batch);
        wd__free(j->prob);
        wd__sink_free(j->sink);
        ZSTD_freeCCtx(j->cc);
    }
    wd__free(p->jobs);
    p->jobs = NULL;
}
static void wd__pipe_stop(wd__pipe *p) {
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
    p->started = 0;
    wd__pipe_free_jobs(p);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_work);
    pthread_cond_destroy(&p->cv_done);
}
static wd_status wd__pipe_start(wd__pipe *p, int nthreads, const wd_schema *s, void (*run)(wd__pipe *, wd__job *),
                                void *ctx) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    p->nthreads = WD__MAX(1, WD__MIN(nthreads, 256));
    p->njobs = 2 * p->nthreads + 2;
    p->run = run;
    p->ctx = ctx;
    p->jobs = (wd__job *)wd__calloc(sizeof(wd__job) * (size_t)p->njobs);
    if (!p->jobs) { wd__pipe_stop(p); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    for (int i = 0; i < p->njobs; i++) {
        wd__job *j = &p->jobs[i];
        j->cc = ZSTD_createCCtx();
        wd_status st = j->cc ? wd_batch_init(&j->batch, s, 0, 0)
            : wd__fail(WD_ERR_NOMEM, "zstd: cannot create a compression context");
        if (st) { wd__pipe_stop(p); return st; }
    }
    for (int i = 0; i < p->nthreads; i++) {
        if (wd__thread_start(&p->threads[i], wd__pipe_worker, p) != 0) {
            wd__pipe_stop(p);
            return wd__fail(WD_ERR_NOMEM, "cannot start thread %d", i);
        }
        p->started++;
    }
    return WD_OK;
}
// A free job slot (blocks until one is free). Caller fills it, then submits.
static wd__job *wd__pipe_free_slot(wd__pipe *p) {
    wd__job *j = NULL;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->njobs && !j; i++) if (p->jobs[i].state == 0) j = &p->jobs[i];
    pthread_mutex_unlock(&p->mu);
    return j;
}
static void wd__pipe_submit(wd__pipe *p, wd__job *j, int64_t seq) {
    pthread_mutex_lock(&p->mu);
    j->seq = seq;
    j->status = WD_OK;
    j->state = 1;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}
// Waits for job seq to finish and returns it (state stays 3 until released).
static wd__job *wd__pipe_wait(wd__pipe *p, int64_t seq) {
    pthread_mutex_lock(&p->mu);
    wd__job *j = NULL;
    for (;;) {
        for (int i = 0; i < p->njobs; i++) if (p->jobs[i].state == 3 && p->jobs[i].seq == seq) j = &p->jobs[i];
        if (j) break;
        pthread_cond_wait(&p->cv_done, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return j;
}
static void wd__pipe_release(wd__pipe *p, wd__job *j) {
    pthread_mutex_lock(&p->mu);
    j->state = 0;
    pthread_mutex_unlock(&p->mu);
}

// ---- 9. Convert --------------------------------------------------------------------------
#ifndef WD_NO_ZLIB
#include <zlib.h>
#endif
// An input: a text file, gzip or zstd (told by the first bytes), or standard input ("-").
typedef struct wd__in {
    const char *path;
    int fd, own;                    // own: close at the end (not standard input)
    int kind;                       // 0 text, 1 gzip, 2 zstd
    uint8_t *cb;                    // bytes read from the file and not yet consumed: cb[cpos, clen)
    size_t cpos, clen, ccap;
    int eof;                        // the file is exhausted
    int64_t raw;                    // bytes read from the file
#ifndef WD_NO_ZLIB
    z_stream z;
    int zopen, zend;                // zend: the current gzip member ended
#endif
    ZSTD_DStream *zs;
    int zframe;                     // 1 inside a zstd frame
} wd__in;
static void wd__in_close(wd__in *in) {
    if (in->own && in->fd >= 0) close(in->fd);
#ifndef WD_NO_ZLIB
    if (in->zopen) inflateEnd(&in->z);
#endif
    if (in->zs) ZSTD_freeDStream(in->zs);
    wd__free(in->cb);
    memset(in, 0, sizeof *in);
    in->fd = -1;
}
// Refills cb (cpos..clen) from the file when it is empty.
static wd_status wd__in_fill(wd__in *in) {
    if (in->cpos < in->clen || in->eof) return WD_OK;
    in->cpos = in->clen = 0;
    for (;;) {
        ssize_t got = read(in->fd, in->cb, in->ccap);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return wd__fail(WD_ERR_IO, "%s: read failed: %s", in->path, strerror(errno));
        if (got == 0) in->eof = 1;
        in->clen = (size_t)got;
        in->raw += got;
        return WD_OK;
    }
}
static wd_status wd__in_open(wd__in *in, const char *path) {
    memset(in, 0, sizeof *in);
    in->path = path;
    in->fd = -1;
    if (strcmp(path, "-") == 0) { in->fd = 0; in->path = "(standard input)"; }
    else {
        in->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (in->fd < 0) return wd__fail(WD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        in->own = 1;
    }
    in->ccap = (size_t)1 << 20;
    if (!(in->cb = (uint8_t *)wd__malloc(in->ccap))) {
        wd__in_close(in); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    // the first bytes tell the kind (a pipe may give them in pieces)
    while (!in->eof && in->clen < 4) {
        ssize_t got = read(in->fd, in->cb + in->clen, in->ccap - in->clen);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { wd_status st = wd__fail(WD_ERR_IO, "%s: read failed: %s", in->path, strerror(errno));
            wd__in_close(in); return st; }
        if (got == 0) in->eof = 1;
        in->clen += (size_t)got;
        in->raw += got;
    }
    const uint8_t *m = in->cb;
    if (in->clen >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
#ifdef WD_NO_ZLIB
        wd__in_close(in);
        return wd__fail(WD_ERR_UNSUPPORTED, "%s: gzip input, but this build has no zlib (built with WD_NO_ZLIB)", path);
#else
        in->kind = 1;
        if (inflateInit2(&in->z, 15 + 32) != Z_OK) {
            wd__in_close(in); return wd__fail(WD_ERR_NOMEM, "zlib: cannot start a gzip stream"); }
        in->zopen = 1;
#endif
    } else if (in->clen >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
        in->kind = 2;
        if (!(in->zs = ZSTD_createDStream())) {
            wd__in_close(in); return wd__fail(WD_ERR_NOMEM, "zstd: cannot start a stream"); }
        ZSTD_initDStream(in->zs);
    }
    return WD_OK;
}
// Up to cap bytes of text into buf (*got = 0 at the end of the input).
static wd_status wd__in_read(wd__in *in, uint8_t *buf, size_t cap, size_t *got) {
    *got = 0;
    while (*got == 0) {
        WD__TRY(wd__in_fill(in));
        size_t avail = in->clen - in->cpos;
        if (in->kind == 0) {
            if (!avail) return WD_OK;
            size_t n = WD__MIN(avail, cap);
            memcpy(buf, in->cb + in->cpos, n);
            in->cpos += n;
            *got = n;
            continue;
        }
        if (in->kind == 2) {
            if (!avail) {
                if (in->zframe)
                    return wd__fail(WD_ERR_CORRUPT,
                                    "%s: truncated zstd data (the input ends inside a frame)", in->path);
                return WD_OK;
            }
            ZSTD_inBuffer ib = {in->cb + in->cpos, avail, 0};
            ZSTD_outBuffer ob = {buf, cap, 0};
            size_t r = ZSTD_decompressStream(in->zs, &ob, &ib);
            if (ZSTD_isError(r))
                return wd__fail(WD_ERR_CORRUPT, "%s: not valid zstd data near byte %lld: %s", in->path,
                                (long long)(in->raw - (int64_t)(in->clen - in->cpos)), ZSTD_getErrorName(r));
            in->cpos += ib.pos;
            in->zframe = r != 0;   // 0: a frame ended (another may follow)
            *got = ob.pos;
            continue;
        }
#ifndef WD_NO_ZLIB
        if (!avail) {
            if (!in->zend)
                return wd__fail(WD_ERR_CORRUPT, "%s: truncated gzip data (the input ends inside a member)", in->path);
            return WD_OK;
        }
        if (in->zend) { inflateReset(&in->z); in->zend = 0; }   // another member follows (concatenated gzip)
        in->z.next_in = in->cb + in->cpos;
        in->z.avail_in = (uInt)WD__MIN(avail, (size_t)UINT32_MAX);
        in->z.next_out = buf;
        in->z.avail_out = (uInt)WD__MIN(cap, (size_t)UINT32_MAX);
        int r = inflate(&in->z, Z_NO_FLUSH);
        if (r != Z_OK && r != Z_STREAM_END && !(r == Z_BUF_ERROR && in->z.avail_out))
            return wd__fail(WD_ERR_CORRUPT, "%s: not valid gzip data near byte %lld: %s", in->path,
                            (long long)(in->raw - (int64_t)in->z.avail_in), in->z.msg ? in->z.msg : "inflate failed");
        in->cpos = in->clen - in->z.avail_in;
        if (r == Z_STREAM_END) in->zend = 1;
        *got = (size_t)(in->z.next_out - buf);
#endif
    }
    return WD_OK;
}

typedef struct wd__conv {
    const wd_convert_desc *d;
    const wd_text_spec *spec;       // the spec this pass parses with (sizes and vocabulary filled in the second)
    int level;
    int count_pass;                 // 1: the first pass (watching values), 0: converting
    int counting;                   // first pass: exact counts (a vocabulary) rather than estimates
    int extend;                     // first pass: counting the values the spec's vocabulary lacks
    wd__sink *sink;                 // first pass: every job's values, merged in order
    wd__blockfile *bf;              // second pass: the output
    wd__outfile *ids;               // second pass: the ids side file (or NULL)
    uint64_t ids_digest;            // second pass: its lines so far (wd__ids_digest)
    wd_convert_report *rep;
    void *arrow;                    // from an Arrow stream: the pass's columns (section 20)
    int64_t arrow_rows;             // from an Arrow stream: the first pass's rows + 1 (0: no first pass yet)
} wd__conv;
static void wd__arrow_job(wd__conv *c, wd__job *j);          // section 20: a job's rows of a stream,
static void wd__arrow_job_done(wd__job *j);                  // its batches released,
static wd_status wd__arrow_pass(wd__conv *c, int threads, int m);   // a pass over a stream

// The digest of an ids file's lines (each line's bytes, newline excluded), in
// order: h = mix(h ^ wd__id_line(line)) from 0; continued from h over the
// whole lines at p (n bytes).
static uint64_t wd__id_line(const void *p, size_t n) { return wd_hash_bytes(p, n, 0x1D5D16E57ull); }
static uint64_t wd__ids_digest(uint64_t h, const char *p, size_t n) {
    for (const char *e = p + n; p < e;) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(e - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
        h = wd_mix64(h ^ wd__id_line(p, len));
        p += len + (nl != NULL);
    }
    return h;
}
// The digest of a .wdr file's blocks (each block's header, which holds its
// payload's CRC32C, in order) and sample count: what an ids file is bound to.
static wd_status wd__data_digest(const wd_reader *r, uint64_t *out) {
    uint64_t h = wd_mix64(0xDA7AD16E57ull ^ (uint64_t)r->nsamples);
    for (int64_t i = 0; i < r->nblocks; i++) {
        uint8_t bh[32];
        WD__TRY(wd__pread_all(r->fd, bh, sizeof bh, r->index[i].offset, r->path));
        h = wd_mix64(h ^ wd_hash_bytes(bh, sizeof bh, (uint64_t)i));
    }
    *out = h;
    return WD_OK;
}
#define WD__IDS_BIND "#wd-ids rows=%lld data=%016llx ids=%016llx"
// Ends ids (the ids of `rows` rows, digest h) with the line binding it to the .wdr at data.
static wd_status wd__ids_bind(wd__outfile *ids, const char *data, int64_t rows, uint64_t h) {
    wd_reader *r;
    WD__TRY(wd_reader_open(data, &r));
    uint64_t fp = 0;
    wd_status st = wd__data_digest(r, &fp);
    wd_reader_close(r);
    char line[120];
    int n = snprintf(line, sizeof line, WD__IDS_BIND "\n", (long long)rows, (unsigned long long)fp,
                     (unsigned long long)h);
    return st ? st : wd__out_write(ids, line, (size_t)n);
}
WDDEF wd_status wd_ids_check(const char *ids_path, const char *data_path) {
    if (!ids_path || !data_path) return wd__fail(WD_ERR_INVALID_ARG, "wd_ids_check: a NULL path");
    wd_reader *r;
    WD__TRY(wd_reader_open(data_path, &r));
    uint64_t fp = 0;
    wd_status st = wd__data_digest(r, &fp);
    int64_t rows = r->nsamples;
    wd_reader_close(r);
    if (st) return st;
    const char *ip = wd__tail(ids_path, 300);
    int fd = open(ids_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return wd__fail(WD_ERR_IO, "%s: cannot open: %s", ip, strerror(errno));
    // Line by line: h covers every line but the latest, whose digest waits in
    // `pending` and whose first bytes in `last` (the binding, if it is the end).
    wd__buf b = {0, 0, 0};
    char last[120] = "";
    uint64_t h = 0, pending = 0;
    int64_t lines = 0;
    size_t ll = 0;
    for (int eof = 0; !st && !eof;) {
        b.len = ll;   // the line begun, kept if b grows
        st = wd__buf_reserve(&b, ll + 65536);
        ssize_t got = st ? 0 : read(fd, b.p + ll, 65536);
        if (got < 0) { st = wd__fail(WD_ERR_IO, "%s: read failed: %s", ip, strerror(errno)); break; }
        eof = got == 0;
        size_t have = ll + (size_t)got, at = 0;
        for (;;) {
            const char *nl = (const char *)memchr(b.p + at, '\n', have - at);
            if (!nl && !(eof && at < have)) break;   // a last line without its newline counts at the end
            size_t len = nl ? (size_t)(nl - (const char *)b.p) - at : have - at;
            if (lines++) h = wd_mix64(h ^ pending);
            pending = wd__id_line(b.p + at, len);
            snprintf(last, sizeof last, "%.*s", (int)WD__MIN(len, sizeof last - 1), (const char *)b.p + at);
            at += len + (nl != NULL);
        }
        memmove(b.p, b.p + at, have - at);
        ll = have - at;
    }
    close(fd);
    wd__buf_free(&b);
    if (st) return st;
    long long n = -1;
    unsigned long long dfp = 0, ifp = 0;
    char tail;
    const char *dp = wd__tail(data_path, 300);
    if (sscanf(last, "#wd-ids rows=%lld data=%16llx ids=%16llx%c", &n, &dfp, &ifp, &tail) != 3)
        return wd__fail(WD_ERR_FORMAT, "%s: no line binding it to its data file at its end (an ids file from before "
                        "ids were bound, or not one wd convert --id-column wrote): convert the data again to pair its "
                        "ids with its rows", ip);
    if ((uint64_t)dfp != fp)
        return wd__fail(WD_ERR_SCHEMA, "%s: these are the ids of another data file (data fingerprint %016llx; %s's "
                        "is %016llx): give the ids file its conversion wrote beside it", ip, dfp, dp,
                        (unsigned long long)fp);
    if (n != rows || lines - 1 != rows || ifp != h)
        return wd__fail(WD_ERR_SCHEMA, "%s: %lld ids (its binding line says %lld) for the %lld rows of %s%s: the file "
                        "was edited, cut or reordered after wd convert wrote it; convert the data again", ip,
                        (long long)(lines - 1), n, (long long)rows, dp,
                        n == rows && lines - 1 == rows ? ", in another order or with other values" : "");
    return WD_OK;
}

// A job: parse its lines (first pass: note the values; second: encode a block).
static void wd__conv_run(wd__pipe *p, wd__job *j) {
    wd__conv *c = (wd__conv *)p->ctx;
    const wd_text_spec *t = c->spec;
    const char *s = (const char *)j->text.p, *end = j->text.len ? s + j->text.len : s;   // Arrow jobs: no text
    j->batch.n = 0;
    j->rows = j->bad = 0;
    j->nbad_shown = 0;
    j->block.len = 0;
    j->side1.len = 0;
    if (c->count_pass) {
        if (!j->sink && !(j->sink = WD__NEW(wd__sink))) { j->status = WD_ERR_NOMEM;
            snprintf(j->err, sizeof j->err, "out of memory"); return; }
        j->sink->counting = c->counting;
        j->sink->extend = c->extend;
        j->sink->nslots = t->schema.nslots;
        wd__cat_sink = j->sink;
    } else wd__id_sink = c->ids ? &j->side1 : NULL;
    int64_t line = j->first_line;
    size_t hlen = strlen(t->header);
    if (c->arrow) wd__arrow_job(c, j);
    else while (s < end) {
        const char *nl = (const char *)memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        size_t len = (size_t)(le - s);
        int is_header = t->format == WD_FMT_CSV && hlen && len - (len && s[len - 1] == '\r') == hlen
            && memcmp(s, t->header, hlen) == 0;
        if (!is_header) {
            const char *name = c->d->inputs[j->file];
            size_t ids0 = j->side1.len;
            wd_status st = (len == 0 || (len == 1 && s[0] == '\r')) ? wd__fail(WD_ERR_PARSE, "empty line")
                : wd_parse_line(t, s, len, &j->batch);
            if (st) j->side1.len = ids0;   // no id for a line that was not converted
            j->bad += st == WD_ERR_PARSE;
            if (st && (st != WD_ERR_PARSE || !c->d->skip_bad_lines)) {   // stop at file:line
                j->status = st;
                snprintf(j->err, sizeof j->err, "%.600s:%lld: %.380s",
                         wd__tail(strcmp(name, "-") ? name : "(standard input)", 600), (long long)line,
                         wd_last_error());
                break;
            }
            if (st && j->nbad_shown < 8)
                snprintf(j->bad_where[j->nbad_shown++], sizeof j->bad_where[0], "%.200s:%lld: %.170s",
                         wd__tail(name, 200), (long long)line, wd_last_error());
            j->rows += !st;
        }
        line++;
        s = le + 1;
    }
    wd__cat_sink = NULL;
    wd__id_sink = NULL;
    if (!j->status && c->count_pass && j->sink->failed) { j->status = j->sink->failed;
        snprintf(j->err, sizeof j->err, "%s", wd_last_error()); }
    if (!j->status && !c->count_pass && j->batch.n) {
        wd_status st = wd__block_encode(&t->schema, &j->batch, 0, j->batch.n, j->cc, c->level, &j->raw, &j->block);
        if (st) { j->status = st; snprintf(j->err, sizeof j->err, "%s", wd_last_error()); }
    }
}

// Takes finished job `seq` in order: the first pass merges what it saw; the
// second adds its counts to the report, its block to the file, its ids to
// the side file. After a failure (*st set) jobs are only released.
static void wd__conv_collect(wd__pipe *p, int64_t seq, wd_status *st) {
    wd__conv *c = (wd__conv *)p->ctx;
    wd__job *w = wd__pipe_wait(p, seq);
    if (!*st && w->status) *st = wd__fail(w->status, "%s", w->err);
    if (!*st && c->count_pass) {
        *st = wd__sink_merge(c->sink, w->sink);
        for (int k = 0; k < WD_MAX_SLOTS; k++) {   // the job starts afresh
            wd__free(w->sink->map[k].key); wd__free(w->sink->map[k].cnt); wd__free(w->sink->hll[k]);
            memset(&w->sink->map[k], 0, sizeof w->sink->map[k]); w->sink->hll[k] = NULL;
        }
    } else if (!*st) {
        wd_convert_report *rep = c->rep;
        rep->rows += w->rows;
        rep->bad_rows += w->bad;
        wd_oov_count(c->spec->vocab, &w->batch, &rep->oov);
        for (int b = 0; b < w->nbad_shown && rep->nbad_shown < 8; b++)
            memcpy(rep->bad_where[rep->nbad_shown++], w->bad_where[b], sizeof rep->bad_where[0]);
        if (w->block.len) *st = wd__bf_put(c->bf, w->block.p, w->block.len);
        if (!*st && c->ids && w->side1.len) {
            *st = wd__out_write(c->ids, w->side1.p, w->side1.len);
            c->ids_digest = wd__ids_digest(c->ids_digest, (const char *)w->side1.p, w->side1.len);
        }
    }
    if (c->arrow) wd__arrow_job_done(w);
    wd__pipe_release(p, w);
}

// One pass over every input: the calling thread reads, cuts chunks of at
// most m lines (each byte scanned once: a pipe delivering 64 KB at a time
// costs no more than a file), and the pipeline's workers parse them.
static wd_status wd__conv_pass(wd__conv *c, int threads, int m, int64_t total, int64_t *text_bytes) {
    const wd_convert_desc *d = c->d;
    *text_bytes = 0;
    if (d->arrow) return wd__arrow_pass(c, threads, m);
    wd__pipe pipe;
    WD__TRY(wd__pipe_start(&pipe, threads, &c->spec->schema, wd__conv_run, c));
    int64_t submitted = 0, written = 0, done_raw = 0;
    double last_progress = 0;
    wd__buf rd = {0, 0, 0};
    wd_status st = wd__buf_reserve(&rd, (size_t)1 << 22);
    for (int fi = 0; !st && fi < d->ninputs; fi++) {
        wd__in in;
        if ((st = wd__in_open(&in, d->inputs[fi])) != WD_OK) break;
        int64_t line = 1;
        size_t start = 0, have = 0, scan = 0;   // rd.p[start, have): text not handed out; newlines counted up to scan
        int64_t nl = 0;
        int eof = 0, first = 1;
        while (!st) {
            while (nl < m && scan < have) {
                const uint8_t *q = (const uint8_t *)memchr(rd.p + scan, '\n', have - scan);
                if (!q) { scan = have; break; }
                scan = (size_t)(q - rd.p) + 1;
                nl++;
            }
            if (nl < m && !eof) {   // not a full chunk yet: read more
                if (rd.cap - have < ((size_t)1 << 20)) {   // make room: move the rest down, or grow
                    if (start > 0) { memmove(rd.p, rd.p + start, have - start); have -= start; scan -= start;
                        start = 0; }
                    if (rd.cap - have < ((size_t)1 << 20)) {
                        rd.len = have; if ((st = wd__buf_reserve(&rd, rd.cap * 2)) != WD_OK) break; }
                }
                size_t got = 0;
                if ((st = wd__in_read(&in, rd.p + have, rd.cap - have, &got)) != WD_OK) break;
                if (!got) eof = 1;
                if (first && have + got >= 3 && rd.p[0] == 0xEF && rd.p[1] == 0xBB && rd.p[2] == 0xBF) {
                    start = scan = 3; }   // a UTF-8 byte-order mark
                first = first && have + got < 3;
                have += got;
                *text_bytes += (int64_t)got;
                continue;
            }
            size_t cut = scan;
            if (nl < m && cut < have) { cut = have; nl++; }   // at the end: the last line without '\n'
            if (cut == start) break;   // this input is done
            wd__job *j = NULL;   // a free job, writing finished ones in order while none is free
            while (!st && (!(j = wd__pipe_free_slot(&pipe)) || submitted - written >= pipe.njobs))
                wd__conv_collect(&pipe, written++, &st);
            if (st) break;
            j->text.len = 0;
            if ((st = wd__buf_put(&j->text, rd.p + start, cut - start)) != WD_OK) break;
            j->file = fi;
            j->first_line = line;
            line += nl;
            start = scan = cut;
            nl = 0;
            wd__pipe_submit(&pipe, j, submitted++);
            if (d->progress) {
                double now = wd__now();
                if (now - last_progress > 0.1) {
                    last_progress = now;
                    if (d->progress(d->user, done_raw + in.raw, total, c->rep->rows))
                        st = wd__fail(WD_ERR_ABORTED, "conversion stopped by the progress callback; no output written");
                }
            }
        }
        done_raw += in.raw;
        wd__in_close(&in);
    }
    while (written < submitted) wd__conv_collect(&pipe, written++, &st);   // drain, also after an error
    wd__buf_free(&rd);
    wd__pipe_stop(&pipe);
    return st;
}

// The directory of path p, whose last '/' is at slash (NULL: none), into dir.
static int wd__dir_of(const char *p, const char *slash, char *dir, size_t cap) {
    size_t n = !slash ? 0 : slash == p ? 1 : (size_t)(slash - p);   // "/name": the root
    if (n >= cap) return 0;
    if (n) memcpy(dir, p, n);
    else dir[n++] = '.';
    dir[n] = 0;
    return 1;
}
// Whether two paths name one file (an output must never be an input): the
// same inode when either exists (links, "./x", "d/../x" all count), else the
// same name in the same directory (two outputs not written yet). "-"
// (standard input or output) is no file.
WDDEF int wd_same_file(const char *a, const char *b) {
    if (!a || !b || strcmp(a, "-") == 0 || strcmp(b, "-") == 0) return 0;
    struct stat x, y;
    int ea = stat(a, &x) == 0, eb = stat(b, &y) == 0;
    if (ea || eb) return ea && eb && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    if (strcmp(sa ? sa + 1 : a, sb ? sb + 1 : b) != 0) return 0;   // the last components
    char da[4096], db[4096];
    return wd__dir_of(a, sa, da, sizeof da) && wd__dir_of(b, sb, db, sizeof db) && stat(da, &x) == 0
        && stat(db, &y) == 0 &&
           x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

WDDEF wd_status wd_convert(const wd_convert_desc *d, wd_convert_report *rep) {
    if (!d) return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: desc is NULL");
    if (!d->spec) return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: spec is NULL");
    if (!d->output) return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: output is NULL");
    if (d->arrow ? d->inputs || d->ninputs : !d->inputs || d->ninputs <= 0)
        return wd__fail(WD_ERR_INVALID_ARG,
                d->arrow ? "wd_convert: arrow and inputs: choose one"
                         : "wd_convert: inputs and ninputs > 0 are required");
    if (d->threads < 0 || d->threads > 256)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: threads %d is outside 0..256", d->threads);
    if (d->min_count < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: min_count %d is negative", d->min_count);
    if (d->block_samples < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: block_samples %d is negative", d->block_samples);
    if (d->ids_output && d->spec->id_col < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: ids_output needs a spec with an id column (wd_csv_desc.id)");
    if (d->min_count > 0 && d->spec->format == WD_FMT_LIBSVM)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_convert: min_count: libsvm slots hold indexes, not values: no vocabulary");
    if (d->extend_vocab && !d->spec->vocab)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_convert: extend_vocab needs a spec that holds a vocabulary (wd_text_spec_vocab; the CLI's --schema-from a file that has one)");
    if (d->vocab_capacity && d->spec->vocab)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_convert: vocab_capacity sizes a new vocabulary's tables; the spec's vocabulary keeps its own (%s)",
                        d->extend_vocab ? "extend_vocab fills them" : "use extend_vocab to fill them");
    if (d->vocab_capacity >= 0xFFFFFFFFu)
        return wd__fail(WD_ERR_LIMIT,
                        "wd_convert: vocab_capacity %u leaves no id for out-of-vocabulary values (at most 2^32 - 2)",
                        d->vocab_capacity);
    wd_convert_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    double t0 = wd__now();
    int m = d->block_samples > 0 ? d->block_samples : WD_DEFAULT_BLOCK_SAMPLES;
    if (m > WD_MAX_BLOCK_SAMPLES) return wd__fail(WD_ERR_LIMIT, "block size %d exceeds %d", m, WD_MAX_BLOCK_SAMPLES);
    const wd_text_spec *t = d->spec;
    int sized = d->min_count > 0 || d->extend_vocab, stdin_used = 0;   // a first pass is needed for a vocabulary,
                                                                       // its extension or 0-bucket slots
    const char *once = NULL;   // an input that can be read once only (standard input, a pipe)
    for (int k = 0; k < t->schema.nslots; k++) sized |= t->format != WD_FMT_LIBSVM && wd__slot_unsized(t, k);
    int64_t total = 0;
    for (int i = 0; i < d->ninputs; i++) {
        if (!d->inputs[i]) return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: input %d is NULL", i);
        if (strcmp(d->inputs[i], "-") == 0) {
            if (stdin_used++) return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: standard input (\"-\") is named twice");
            once = "standard input"; continue; }
        struct stat sb;
        if (stat(d->inputs[i], &sb) != 0)
            return wd__fail(WD_ERR_IO, "%s: cannot open: %s", d->inputs[i], strerror(errno));
        if (!S_ISREG(sb.st_mode) && !once) once = d->inputs[i];
        total += (int64_t)sb.st_size;
        if (wd_same_file(d->inputs[i], d->output) || (d->ids_output && wd_same_file(d->inputs[i], d->ids_output)))
            return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: the output %s is input %d: it would be destroyed",
                            wd_same_file(d->inputs[i], d->output) ? d->output : d->ids_output, i + 1);
    }
    if (d->ids_output && wd_same_file(d->ids_output, d->output))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: ids_output and output are the same file");
    if (d->vocab_capacity && !sized)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_convert: vocab_capacity sizes a new vocabulary's tables, and here "
                        "every slot hashes into the buckets given (no vocabulary is made): set min_count for one "
                        "(the CLI: --min-count K), or leave the buckets to be sized from the data");
    if (sized && once)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_convert: %s can be read once only, and %s needs a first pass: give every slot its buckets (or a vocabulary from --schema-from)",
                        wd__tail(once, 600), d->extend_vocab ? "extend_vocab (counting new values)" : d->min_count > 0
                        ? "min_count (a vocabulary)" : "sizing the tables from the data");
    wd_text_spec *spec = (wd_text_spec *)wd__malloc(sizeof *spec);
    if (!spec) return wd__fail(WD_ERR_NOMEM, "out of memory");
    *spec = *t;
    wd__conv c;
    memset(&c, 0, sizeof c);
    c.d = d; c.spec = spec; c.level = d->level ? d->level : 3; c.rep = rep;
    int threads = d->threads > 0 ? d->threads : 1;
    wd_vocab *vocab = NULL;
    wd_status st = WD_OK;
    int64_t text = 0;
    if (sized) {   // first pass: what values each slot holds
        c.count_pass = 1; c.counting = d->min_count > 0 || d->extend_vocab; c.extend = d->extend_vocab;
        c.sink = WD__NEW(wd__sink);
        if (!c.sink) st = wd__fail(WD_ERR_NOMEM, "out of memory");
        else { c.sink->counting = c.counting; c.sink->nslots = spec->schema.nslots; }
        if (!st) st = wd__conv_pass(&c, threads, m, total, &text);
        if (!st && c.extend) {
            st = wd__vocab_extend(spec->vocab, c.sink, WD__MAX(d->min_count, 1), &vocab, rep->vocab_added,
                                  rep->vocab_no_room);
            if (!st) st = wd__spec_use_vocab(spec, vocab);
        } else if (!st && c.counting) {
            st = wd__vocab_from(c.sink, d->min_count, d->vocab_capacity, NULL, &vocab);
            if (!st) st = wd__spec_use_vocab(spec, vocab);
        } else if (!st) {
            // slots of at most WD__EXACT_MAX values: an id per value (no
            // collisions, d + 1 rows), unless a vocabulary came with the spec
            int exact[WD_MAX_SLOTS] = {0}, nexact = 0;
            for (int k = 0; !st && !spec->vocab && k < spec->schema.nslots; k++)
                if (!spec->schema.slot[k].buckets && !c.sink->over[k]) { exact[k] = 1; nexact++; }
                else if (!spec->schema.slot[k].buckets && d->vocab_capacity)   // it hashes: no room to grow into
                    st = wd__fail(WD_ERR_INVALID_ARG, "wd_convert: slot %s has more than %d distinct values, "
                                  "so it hashes and vocab_capacity cannot give it room to grow: set min_count "
                                  "for a vocabulary of every slot (the CLI: --min-count K)",
                                  spec->schema.slot[k].name, WD__EXACT_MAX);
            if (nexact && !st) st = wd__vocab_from(c.sink, 1, d->vocab_capacity, exact, &vocab);
            if (nexact && !st) st = wd__spec_use_vocab(spec, vocab);
            for (int k = 0; !st && k < spec->schema.nslots; k++) {
                if (spec->schema.slot[k].buckets) continue;
                // more than WD__EXACT_MAX values: 16 buckets per distinct
                // value (~3% of values then share a bucket)
                double n = WD__MAX(16.0 * wd__hll_estimate(c.sink->hll[k]), (double)WD__EXACT_MAX);
                spec->schema.slot[k].buckets = (uint32_t)WD__MIN(ceil(n), (double)WD_DEFAULT_BUCKETS);
            }
        }
        wd__sink_free(c.sink);
        c.sink = NULL;
        c.count_pass = 0;
        int64_t added[WD_MAX_SLOTS], no_room[WD_MAX_SLOTS];
        memcpy(added, rep->vocab_added, sizeof added); memcpy(no_room, rep->vocab_no_room, sizeof no_room);
        memset(rep, 0, sizeof *rep);
        memcpy(rep->vocab_added, added, sizeof added); memcpy(rep->vocab_no_room, no_room, sizeof no_room);
    }
    if (!st) st = wd_schema_check(&spec->schema);
    wd__blockfile bf;
    wd__outfile ids;
    int bf_open = 0, ids_open = 0;
    if (!st) { st = wd__bf_open(&bf, d->output, &spec->schema, "wd convert " WD_VERSION_STRING, spec->vocab, spec);
        bf_open = !st; }
    if (!st && d->ids_output) { st = wd__out_open(&ids, d->ids_output); ids_open = !st; }
    c.bf = bf_open ? &bf : NULL;
    c.ids = ids_open ? &ids : NULL;
    if (!st) st = wd__conv_pass(&c, threads, m, total, &text);   // second pass: the records
    if (!st && bf.nsamples == 0)
        st = wd__fail(WD_ERR_PARSE, "no valid rows in the input (%lld bad)", (long long)rep->bad_rows);
    if (!st) {
        rep->blocks = bf.nblocks;
        for (int k = 0; k < spec->schema.nslots; k++) { rep->buckets[k] = spec->schema.slot[k].buckets;
            rep->vocab_size[k] = wd_vocab_size(spec->vocab, k); }
        st = wd__bf_close(&bf);
        bf_open = 0;
        if (!st && ids_open) st = wd__ids_bind(&ids, d->output, rep->rows, c.ids_digest);
        if (!st && ids_open) { st = wd__out_commit(&ids); ids_open = 0; }
        if (st) unlink(d->output);   // both files or neither
    }
    if (bf_open) wd__bf_abort(&bf);
    if (ids_open) wd__out_abort(&ids);
    wd__vocab_free(vocab);
    wd__free(spec);
    if (st) return st;
    struct stat sb;
    rep->bytes_out = stat(d->output, &sb) == 0 ? (int64_t)sb.st_size : 0;
    rep->bytes_in = text;
    rep->seconds = wd__now() - t0;
    if (d->progress) d->progress(d->user, total, total, rep->rows);
    return WD_OK;
}

// ---- 10. Synthetic data -------------------------------------------------------------------
WDDEF const uint32_t *wd_criteo_cardinalities(void) {
    static const uint32_t card[26] = {1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3,
                                      93145, 5683, 8351593, 3194, 27, 14992, 5461306, 10, 5652,
                                      2173, 4, 7046547, 18, 15, 286181, 105, 142572};
    return card;
}

// splitmix64 stream: deterministic per (seed, row).
typedef struct wd__rng { uint64_t s; } wd__rng;
static uint64_t wd__rng_next(wd__rng *r) { r->s += 0x9e3779b97f4a7c15ULL; return wd_mix64(r->s); }
static double wd__rng_uniform(wd__rng *r) { return (double)(wd__rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static double wd__rng_normal(wd__rng *r) {
    double u = wd__rng_uniform(r), v = wd__rng_uniform(r);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}
// Deterministic N(0,1) from a hash key.
static double wd__hash_normal(uint64_t key) {
    wd__rng r = {key};
    return wd__rng_normal(&r);
}

// Zipf(s) on {1..n} by rejection-inversion (Hormann & Derflinger 1996).
typedef struct wd__zipf { double s, n, hx1, hn, sv; } wd__zipf;
static double wd__zipf_helper1(double x) {
    return fabs(x) > 1e-8 ? log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x)); }
static double wd__zipf_helper2(double x) {
    return fabs(x) > 1e-8 ? expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x)); }
static double wd__zipf_H(const wd__zipf *z, double x) {
    double lx = log(x); return wd__zipf_helper2((1.0 - z->s) * lx) * lx; }
static double wd__zipf_h(const wd__zipf *z, double x) { return exp(-z->s * log(x)); }
static double wd__zipf_Hinv(const wd__zipf *z, double x) {
    double t = x * (1.0 - z->s);
    if (t < -1.0) t = -1.0;
    return exp(wd__zipf_helper1(t) * x);
}
static void wd__zipf_init(wd__zipf *z, double s, uint32_t n) {
    z->s = s; z->n = (double)n;
    z->hx1 = wd__zipf_H(z, 1.5) - 1.0;
    z->hn = wd__zipf_H(z, z->n + 0.5);
    z->sv = 2.0 - wd__zipf_Hinv(z, wd__zipf_H(z, 2.5) - wd__zipf_h(z, 2.0));
}
static uint32_t wd__zipf_draw(const wd__zipf *z, wd__rng *r) {   // 0-based
    for (;;) {
        double u = z->hn + wd__rng_uniform(r) * (z->hx1 - z->hn);
        double x = wd__zipf_Hinv(z, u);
        double k = floor(x + 0.5);
        if (k < 1) k = 1;
        if (k > z->n) k = z->n;
        if (k - x <= z->sv || u >= wd__zipf_H(z, k + 0.5) - wd__zipf_h(z, k)) return (uint32_t)k - 1;
    }
}

/* The planted model (documented for users of wd gen):
     dense  I_j: count = floor(exp(mu_j + sigma_j * N(0,1))) - (j==1 ? 3 : 0),
            missing with probability miss_j; feature x_j = wd_count_feature(count)
     ids    c_k ~ Zipf(zipf) over min(card_k, max_card) values, ranked id r is
            mapped to raw value hash(k, r); the TSV holds it as 8 hex digits
     logit  = b0 + sum_k w_k(c_k)                      wide: per-id weights
            + 0.6 * sum_{(a,b) in P} <v_a(c_a), v_b(c_b)>   deep: interactions
            + 0.8 * tanh(x_1 * x_5 - 1) + 0.4 * sin(1.5 * x_3) - 0.3 * relu(x_7 - 2)
     where w_k(c) ~ N(0, 0.35^2) and v_k(c) ~ N(0, 0.45^2 I_4) are fixed by
     hashing (seed, k, c), P is 8 fixed slot pairs and b0 = -1.55 (the CTR
     lands between about 0.15 and 0.35 depending on the seed).
     label ~ Bernoulli(sigmoid(logit)); the .prob side file holds sigmoid(logit). */
typedef struct wd__gen {
    const wd_gen_desc *d;
    wd_schema schema;
    wd__zipf zipf[26];
    uint32_t card[26];
    int want_tsv;
    wd_text_spec format;            // Criteo TSV: the rows' ids and features are its TSV's, converted
} wd__gen;

static const int wd__gen_pairs[8][2] = {{0, 1}, {2, 3}, {4, 9}, {5, 10}, {6, 12}, {7, 13}, {14, 15}, {16, 23}};

static void wd__gen_run(wd__pipe *p, wd__job *j) {
    wd__gen *g = (wd__gen *)p->ctx;
    const wd_gen_desc *d = g->d;
    static const double mu[13] = {0.8, 3.0, 2.0, 1.7, 7.5, 3.5, 1.6, 2.5, 3.8, 0.3, 1.0, 0.2, 2.0};
    static const double sg[13] = {1.2, 1.5, 1.4, 1.0, 2.0, 1.6, 1.4, 1.0, 1.3, 0.6, 0.9, 0.7, 1.1};
    static const double miss[13] = {0.45, 0.0, 0.2, 0.2, 0.05, 0.25, 0.05, 0.0, 0.05, 0.45, 0.05, 0.75, 0.2};
    j->batch.n = 0;
    j->side1.len = j->side2.len = 0;
    j->block.len = 0;
    wd_status st = wd_batch_reserve(&j->batch, (int)j->nrows, 0);
    if (st) { j->status = st; snprintf(j->err, sizeof j->err, "%s", wd_last_error()); return; }
    char line[1024];
    for (int64_t r = 0; r < j->nrows; r++) {
        int64_t row = d->first_row + j->row0 + r;
        wd__rng rng = {wd_mix64(d->seed * 0x2545F4914F6CDD1DULL + (uint64_t)row)};
        int i = j->batch.n;
        float *x = j->batch.dense + (size_t)i * 13;
        int64_t cnt[13];
        int present[13];
        for (int c = 0; c < 13; c++) {
            double u = wd__rng_uniform(&rng);
            double z = wd__rng_normal(&rng);
            present[c] = u >= miss[c];
            cnt[c] = present[c] ? (int64_t)floor(exp(mu[c] + sg[c] * z)) - (c == 1 ? 3 : 0) : 0;
            if (cnt[c] > 100000000) cnt[c] = 100000000;
            x[c] = present[c] ? wd_count_feature(cnt[c]) : 0.0f;
        }
        uint64_t raw[26];
        double logit = -1.55;
        for (int k = 0; k < 26; k++) {
            uint32_t rank = wd__zipf_draw(&g->zipf[k], &rng);
            raw[k] = wd_mix64(((uint64_t)k << 40) ^ rank ^ (d->seed << 48)) & 0xFFFFFFFFull;
            logit += 0.35 * wd__hash_normal(wd_mix64(d->seed ^ 0x1111) ^ ((uint64_t)k << 32) ^ raw[k]);
        }
        double inter = 0;
        for (int q = 0; q < 8; q++) {
            int a = wd__gen_pairs[q][0], b = wd__gen_pairs[q][1];
            for (int e = 0; e < 4; e++)
                inter += 0.45 * wd__hash_normal(wd_mix64(d->seed ^ 0x2222 ^ ((uint64_t)(a * 4 + e) << 32)) ^ raw[a]) *
                         0.45 * wd__hash_normal(wd_mix64(d->seed ^ 0x2222 ^ ((uint64_t)(b * 4 + e) << 32)) ^ raw[b]);
        }
        logit += 0.6 * inter;
        logit += 0.8 * tanh((double)x[0] * (double)x[4] - 1.0) + 0.4 * sin(1.5 * (double)x[2]) - 0.3 * fmax(0.0,
                (double)x[6] - 2.0);
        double prob = 1.0 / (1.0 + exp(-logit));
        float y = wd__rng_uniform(&rng) < prob ? 1.0f : 0.0f;
        j->batch.label[i] = y;
        j->batch.weight[i] = 1.0f;
        j->prob[r] = (float)prob;
        char hex[26][9];
        for (int k = 0; k < 26; k++) {
            snprintf(hex[k], sizeof hex[k], "%08x", (unsigned)raw[k]);
            j->batch.ids[k][i] = wd_hash_bucket(hex[k], 8, k, g->schema.slot[k].buckets);
        }
        j->batch.n++;
        if (g->want_tsv) {
            int n = snprintf(line, sizeof line, "%d", (int)y);
            for (int c = 0; c < 13; c++)
                n += present[c] ? snprintf(line + n, sizeof line - (size_t)n, "\t%lld", (long long)cnt[c])
                    : snprintf(line + n, sizeof line - (size_t)n, "\t");
            for (int k = 0; k < 26; k++) n += snprintf(line + n, sizeof line - (size_t)n, "\t%s", hex[k]);
            line[n++] = '\n';
            if ((st = wd__buf_put(&j->side1, line, (size_t)n))) break;
        }
        int n = snprintf(line, sizeof line, "%.7f\n", prob);
        if ((st = wd__buf_put(&j->side2, line, (size_t)n))) break;
    }
    if (!st) st = wd__block_encode(&g->schema, &j->batch, 0, j->batch.n, j->cc, 3, &j->raw, &j->block);
    if (st) { j->status = st; snprintf(j->err, sizeof j->err, "%s", wd_last_error()); }
}

WDDEF wd_status wd_gen(const wd_gen_desc *d, wd_gen_report *rep) {
    if (!d || !d->output) return wd__fail(WD_ERR_INVALID_ARG, "wd_gen: %s is NULL", d ? "output" : "the desc");
    if (d->rows <= 0 || d->rows > ((int64_t)1 << 40))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_gen: rows %lld is outside 1..2^40", (long long)d->rows);
    if (d->first_row < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_gen: first_row %lld is negative", (long long)d->first_row);
    if (d->threads < 0 || d->threads > 256)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_gen: threads %d is outside 0..256", d->threads);
    if (d->block_samples < 0 || d->block_samples > WD_MAX_BLOCK_SAMPLES)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_gen: block_samples %d is outside 0..%d", d->block_samples,
                        WD_MAX_BLOCK_SAMPLES);
    if (!(d->zipf >= 0 && d->zipf < 10))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_gen: zipf %g is outside [0, 10)", d->zipf);
    wd_gen_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    double t0 = wd__now();
    wd__gen *g = WD__NEW(wd__gen);
    if (!g) return wd__fail(WD_ERR_NOMEM, "out of memory");
    g->d = d;
    g->want_tsv = d->tsv != NULL;
    uint32_t maxc = d->max_card ? d->max_card : (1u << 20), bk = d->buckets ? d->buckets : WD_DEFAULT_BUCKETS;
    wd_schema_criteo(&g->schema, bk);
    for (int k = 0; k < 26; k++) {
        g->card[k] = WD__MIN(wd_criteo_cardinalities()[k], maxc);
        // room for hashing: 16 buckets per value keeps collisions near 3%
        g->schema.slot[k].buckets = (uint32_t)WD__MIN((uint64_t)g->card[k] * 16, (uint64_t)bk);
        wd__zipf_init(&g->zipf[k], d->zipf > 0 ? d->zipf : 1.1, g->card[k]);
    }
    int m = d->block_samples > 0 ? d->block_samples : WD_DEFAULT_BLOCK_SAMPLES;
    float *allp = (float *)wd__malloc(sizeof(float) * (size_t)d->rows);
    float *ally = (float *)wd__malloc(sizeof(float) * (size_t)d->rows);
    char probpath[4096];
    snprintf(probpath, sizeof probpath, d->prob ? "%s" : "%s.prob", d->prob ? d->prob : d->output);
    const char *outs[3] = {d->output, d->tsv, probpath};
    for (int a = 0; a < 3; a++)   // three different files, or the temporary names collide
        for (int b = 0; b < a; b++)
            if (wd_same_file(outs[a], outs[b])) {
                wd__free(g); wd__free(allp); wd__free(ally);
                return wd__fail(WD_ERR_INVALID_ARG, "wd_gen: %s is named as two outputs", outs[a]);
            }
    wd__blockfile bf;
    wd__outfile tsv, prob;
    memset(&tsv, 0, sizeof tsv); tsv.fd = -1;
    memset(&prob, 0, sizeof prob); prob.fd = -1;
    wd__pipe pipe;
    int piped = 0, bfo = 0;
    wd_status st = (allp && ally) ? WD_OK : wd__fail(WD_ERR_NOMEM, "out of memory for %lld probabilities",
                                                     (long long)d->rows);
    wd_text_spec_criteo(&g->format, 0);
    if (!st) { st = wd__bf_open(&bf, d->output, &g->schema, "wd gen " WD_VERSION_STRING, NULL, &g->format); bfo = !st; }
    if (!st && d->tsv) st = wd__out_open(&tsv, d->tsv);
    if (!st) st = wd__out_open(&prob, probpath);
    if (!st) { st = wd__pipe_start(&pipe, d->threads > 0 ? d->threads : 1, &g->schema, wd__gen_run, g); piped = !st; }
    for (int i = 0; !st && piped && i < pipe.njobs; i++) {
        pipe.jobs[i].prob = (float *)wd__malloc(sizeof(float) * (size_t)m);
        if (!pipe.jobs[i].prob) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    }
    int64_t nblocks = (d->rows + m - 1) / m, submitted = 0, written = 0;
    while (!st && written < nblocks) {
        wd__job *j;
        while (submitted < nblocks && submitted - written < pipe.njobs && (j = wd__pipe_free_slot(&pipe))) {
            j->row0 = submitted * m;
            j->nrows = WD__MIN((int64_t)m, d->rows - j->row0);
            wd__pipe_submit(&pipe, j, submitted++);
        }
        wd__job *w = wd__pipe_wait(&pipe, written);
        if (w->status) st = wd__fail(w->status, "%s", w->err);
        if (!st) st = wd__bf_put(&bf, w->block.p, w->block.len);
        if (!st && d->tsv) st = wd__out_write(&tsv, w->side1.p, w->side1.len);
        if (!st) st = wd__out_write(&prob, w->side2.p, w->side2.len);
        if (!st) {
            memcpy(allp + w->row0, w->prob, sizeof(float) * (size_t)w->nrows);
            memcpy(ally + w->row0, w->batch.label, sizeof(float) * (size_t)w->nrows);
        }
        wd__pipe_release(&pipe, w);
        written++;
    }
    if (piped) {
        while (written < submitted) { wd__pipe_release(&pipe, wd__pipe_wait(&pipe, written)); written++; }
        wd__pipe_stop(&pipe);
    }
    if (!st) st = wd__bf_close(&bf);
    else if (bfo) wd__bf_abort(&bf);
    if (!st && d->tsv) st = wd__out_commit(&tsv);
    else if (d->tsv) wd__out_abort(&tsv);
    if (!st) st = wd__out_commit(&prob);
    else wd__out_abort(&prob);
    if (!st) {
        double ctr = 0;
        for (int64_t i = 0; i < d->rows; i++) ctr += ally[i];
        rep->rows = d->rows;
        rep->ctr = ctr / (double)d->rows;
        st = wd_auc(allp, ally, NULL, d->rows, &rep->oracle_auc);
        rep->oracle_logloss = wd_logloss(allp, ally, NULL, d->rows);
        rep->seconds = wd__now() - t0;
    }
    wd__free(allp); wd__free(ally); wd__free(g);
    return st;
}

// ---- 11. Metrics -----------------------------------------------------------------------------
// Sorts (score, label, weight) triples by score with an LSD radix sort on the
// order-preserving bit pattern of the float.
typedef struct wd__sw { uint32_t key; float pos, neg; } wd__sw;
static uint32_t wd__float_key(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (f == 0.0f) u = 0;   // -0 == +0
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
WDDEF wd_status wd_auc(const float *score, const float *label, const float *weight, int64_t n, double *auc) {
    if (!score || !label || !auc || n < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_auc: bad arguments");
    *auc = NAN;
    if (n == 0) return WD_OK;
    wd__sw *a = (wd__sw *)wd__malloc(sizeof(wd__sw) * (size_t)n);
    wd__sw *b = (wd__sw *)wd__malloc(sizeof(wd__sw) * (size_t)n);
    if (!a || !b) { wd__free(a); wd__free(b); return wd__fail(WD_ERR_NOMEM, "wd_auc: out of memory for %lld scores",
                                                              (long long)n); }
    for (int64_t i = 0; i < n; i++) {
        if (isnan(score[i])) { wd__free(a); wd__free(b); return wd__fail(WD_ERR_NUMERIC, "wd_auc: score %lld is NaN",
                                                                         (long long)i); }
        if (!(label[i] >= 0.0f && label[i] <= 1.0f) || (weight && !(weight[i] >= 0.0f && weight[i] < INFINITY))) {
            wd__free(a); wd__free(b);
            return wd__fail(WD_ERR_NUMERIC,
                            "wd_auc: sample %lld: label %g / weight %g (labels in [0, 1], weights finite and >= 0)",
                            (long long)i, (double)label[i], weight ? (double)weight[i] : 1.0);
        }
        float w = weight ? weight[i] : 1.0f;
        a[i].key = wd__float_key(score[i]);
        a[i].pos = label[i] * w;
        a[i].neg = (1.0f - label[i]) * w;
    }
    for (int pass = 0; pass < 4; pass++) {
        size_t cnt[257] = {0};
        int sh = pass * 8;
        for (int64_t i = 0; i < n; i++) cnt[((a[i].key >> sh) & 0xff) + 1]++;
        for (int k = 0; k < 256; k++) cnt[k + 1] += cnt[k];
        for (int64_t i = 0; i < n; i++) b[cnt[(a[i].key >> sh) & 0xff]++] = a[i];
        wd__sw *t = a; a = b; b = t;
    }
    double neg_below = 0, num = 0, P = 0, N = 0;
    for (int64_t i = 0; i < n;) {
        double gp = 0, gn = 0;
        int64_t j = i;
        while (j < n && a[j].key == a[i].key) { gp += a[j].pos; gn += a[j].neg; j++; }
        num += gp * neg_below + 0.5 * gp * gn;
        neg_below += gn;
        P += gp; N += gn;
        i = j;
    }
    wd__free(a); wd__free(b);
    *auc = (P > 0 && N > 0) ? num / (P * N) : NAN;
    return WD_OK;
}
WDDEF double wd_logloss(const float *p, const float *label, const float *weight, int64_t n) {
    double s = 0, ws = 0;
    for (int64_t i = 0; i < n; i++) {
        double q = WD__MIN(WD__MAX((double)p[i], 1e-7), 1.0 - 1e-7), w = weight ? weight[i] : 1.0;
        s -= w * (label[i] * log(q) + (1.0 - label[i]) * log(1.0 - q));
        ws += w;
    }
    return ws > 0 ? s / ws : NAN;
}

// ---- 12. Loader ------------------------------------------------------------------------------
typedef struct wd__lplan { int file; int n; int64_t block; } wd__lplan;
typedef struct wd__lslot {
    int state;              // 0 empty, 1 decoding, 2 ready, 3 failed
    int corrupt;            // failed because the block is bad (vs. map callback / memory)
    wd_status st;
    char err[WD__ERR_MAX];
    wd_batch b;
} wd__lslot;
typedef struct wd__lout {
    int state;              // 0 free, 1 ready, 2 held by the consumer
    int64_t seq;
    wd_status st;
    char err[WD__ERR_MAX];
    wd_batch b;
} wd__lout;
typedef struct wd__lworker { wd_loader *l; int index; wd_decoder *dec; wd__buf fetch; } wd__lworker;
// A piece of an output batch being gathered, shared out by column: column 0
// is labels, weights and dense values, column 1 + k slot k's ids (one-hot;
// the assembler gathers multi-hot slots itself first: they may grow the
// batch). The assembler publishes it and takes columns; idle threads take
// the rest (wd__loader_thread); it is done when every column is.
typedef struct wd__lgather {
    wd_batch *dst;
    const int32_t *ps;
    const uint32_t *pi;
    int o, n;               // samples [o, o + n) of dst
    int next, ncols, done;  // columns handed out, in all, finished
    int active;
} wd__lgather;

struct wd_loader {
    wd_loader_desc d;
    wd_reader **readers;
    int nfiles;
    wd_schema schema;
    // B: samples per batch (this rank); K: blocks in a shuffle window; A:
    // decode slots ahead of the window; C = K + A decode slots in all; Q:
    // output batches; m_max: samples in the largest block. RAM budget =
    // Q batches + C blocks (wd_loader_open sizes them).
    int B, nthreads, K, A, C, Q, m_max;
    size_t ram, bytes;
    // epoch plan (this shard)
    int64_t epoch, nplan, nbatches;
    wd__lplan *plan, *all;
    int64_t nall;
    // shared state, under mu
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, running, assembling;
    pthread_t *th;
    wd__lworker *workers;
    wd__lslot *slots;       // C decode slots: plan index j lives in slots[j % C]
    int64_t next_fetch, win_base;
    wd__lout *outs;         // Q output batches: batch seq lives in outs[seq % Q]
    int64_t next_assemble, next_consume;
    wd__lgather job;        // the assembler's current piece (job.active), shared by column
    wd__lout *held;
    wd_status fatal;
    // assembler-only state
    int64_t ws, we, win_n, win_pos, skip_in_window;
    int32_t *perm_slot;
    uint32_t *perm_idx;
    int64_t perm_cap;
    wd_loader_stats stats;
};

static void wd__lworker_fail(wd__lslot *s, wd_status st, int corrupt) {
    s->st = st;
    s->corrupt = corrupt;
    snprintf(s->err, sizeof s->err, "%s", wd_last_error());
    s->state = 3;
}

// Decodes plan entry j into its slot (called without the lock).
static void wd__loader_decode(wd_loader *l, wd__lworker *w, int64_t j) {
    wd__lslot *s = &l->slots[j % l->C];
    const wd__lplan *p = &l->plan[j];
    wd_reader *r = l->readers[p->file];
    double t0 = wd__now();
    size_t n = wd_reader_block_bytes(r, p->block);
    wd_status st = wd__buf_reserve(&w->fetch, n);
    if (!st) st = wd_reader_fetch(r, p->block, w->fetch.p, w->fetch.cap);
    double t1 = wd__now();
    wd_decode_stats before;
    wd_decoder_stats(w->dec, &before);
    size_t bytes0 = s->b.mem_bytes;
    s->b.n = 0;
    if (!st) st = wd_decode_block(w->dec, r, p->block, w->fetch.p, n, &s->b);
    double t2 = wd__now();
    int corrupt = st == WD_ERR_CORRUPT || st == WD_ERR_IO || st == WD_ERR_NUMERIC;
    if (!st && l->d.map) {
        st = l->d.map(l->d.map_user, &s->b, w->index);
        if (st) { wd__fail(st, "%s: block %lld: map callback failed: %s", wd_reader_path(r), (long long)p->block,
                           wd_last_error()); corrupt = 0; }
        if (!st && s->b.n != p->n) {
            st = wd__fail(WD_ERR_INVALID_ARG, "map callback changed the sample count of block %lld",
                          (long long)p->block); corrupt = 0; }
        if (!st) {
            char where[WD__ERR_MAX / 2];
            snprintf(where, sizeof where, "%s: block %lld after the map callback", wd__tail(wd_reader_path(r), 300),
                     (long long)p->block);
            if ((st = wd__check_values(&l->schema, &s->b, 0, s->b.n, where, WD_ERR_INVALID_ARG)) != WD_OK) corrupt = 0;
        }
    }
    double t3 = wd__now();
    wd_decode_stats after;
    wd_decoder_stats(w->dec, &after);
    pthread_mutex_lock(&l->mu);
    l->stats.read_s += t1 - t0;
    l->stats.decompress_s += (after.zstd_s - before.zstd_s) + (after.crc_s - before.crc_s);
    l->stats.decode_s += (t2 - t1) - ((after.zstd_s - before.zstd_s) + (after.crc_s - before.crc_s));
    l->stats.map_s += t3 - t2;
    l->stats.blocks++;
    if (st) wd__lworker_fail(s, st, corrupt);
    else s->state = 2;
    l->bytes += s->b.mem_bytes - bytes0;   // growth beyond the planned size (multi-hot)
    l->stats.peak_bytes = WD__MAX(l->stats.peak_bytes, l->bytes);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

// Copies column col (wd__lgather's numbering) of samples (slot ps[i],
// sample pi[i]) into positions o.. of dst: one tight loop per column
// instead of a branchy copy per sample. Multi-hot slots: wd__gather_mh.
static void wd__gather_col(wd_batch *dst, const wd__lslot *slots, const int32_t *ps, const uint32_t *pi, int o,
                           int n, int col) {
    if (col == 0) {
        size_t D = (size_t)dst->ndense;
        for (int i = 0; i < n; i++) {
            const wd_batch *src = &slots[ps[i]].b;
            dst->label[o + i] = src->label[pi[i]];
            dst->weight[o + i] = src->weight[pi[i]];
            memcpy(dst->dense + (size_t)(o + i) * D, src->dense + (size_t)pi[i] * D, D * sizeof(float));
        }
        return;
    }
    int k = col - 1;
    if (dst->kind[k] == WD_MULTI_HOT) return;
    uint32_t *d = dst->ids[k] + o;
    for (int i = 0; i < n; i++) d[i] = slots[ps[i]].b.ids[k][pi[i]];
}
// The multi-hot slots of the same samples (the batch's id arrays may grow).
static wd_status wd__gather_mh(wd_batch *dst, const wd__lslot *slots, const int32_t *ps, const uint32_t *pi,
                               int o, int n) {
    for (int k = 0; k < dst->nslots; k++) {
        if (dst->kind[k] != WD_MULTI_HOT) continue;
        for (int i = 0; i < n; i++) {
            const wd_batch *src = &slots[ps[i]].b;
            uint32_t a = src->offs[k][pi[i]], c = src->offs[k][pi[i] + 1] - a, base = dst->offs[k][o + i];
            if ((int64_t)base + c > dst->nnz_cap) WD__TRY(wd_batch_reserve(dst, dst->cap, (int64_t)base + c));
            memcpy(dst->ids[k] + base, src->ids[k] + a, c * sizeof(uint32_t));
            dst->offs[k][o + i + 1] = base + c;
        }
    }
    return WD_OK;
}
// Takes one column of the current piece and gathers it (lock held on entry and exit).
static void wd__loader_gather_one(wd_loader *l) {
    wd__lgather *j = &l->job;
    int col = j->next++;
    pthread_mutex_unlock(&l->mu);
    wd__gather_col(j->dst, l->slots, j->ps, j->pi, j->o, j->n, col);
    pthread_mutex_lock(&l->mu);
    if (++j->done == j->ncols) pthread_cond_broadcast(&l->cv);
}
// Appends n samples to dst, the assembler and idle threads sharing the
// columns (lock held on entry and exit; released while copying). The
// window's slots stay ready meanwhile: only the assembler closes a window.
static wd_status wd__loader_gather(wd_loader *l, wd_batch *dst, const int32_t *ps, const uint32_t *pi, int n) {
    int o = dst->n;
    if (o + n > dst->cap) return wd__fail(WD_ERR_INTERNAL, "loader: output batch overflow");
    pthread_mutex_unlock(&l->mu);
    wd_status st = wd__gather_mh(dst, l->slots, ps, pi, o, n);
    pthread_mutex_lock(&l->mu);
    if (st) return st;
    wd__lgather *j = &l->job;
    j->dst = dst; j->ps = ps; j->pi = pi; j->o = o; j->n = n;
    j->next = 0; j->ncols = 1 + dst->nslots; j->done = 0; j->active = 1;
    pthread_cond_broadcast(&l->cv);
    while (j->next < j->ncols) wd__loader_gather_one(l);
    while (j->done < j->ncols) pthread_cond_wait(&l->cv, &l->mu);
    j->active = 0;
    dst->n = o + n;
    return WD_OK;
}

static void wd__pad_sample(wd_batch *dst) {
    int o = dst->n;
    size_t D = (size_t)dst->ndense;
    dst->label[o] = 0.0f;
    dst->weight[o] = 0.0f;
    memset(dst->dense + (size_t)o * D, 0, D * sizeof(float));
    for (int k = 0; k < dst->nslots; k++) {
        if (dst->kind[k] == WD_MULTI_HOT) dst->offs[k][o + 1] = dst->offs[k][o];
        else dst->ids[k][o] = 0;
    }
    dst->n++;
}

// Waits (lock held) until plan entry j is decoded, decoding it (and any
// unclaimed entries before it) on this thread when nobody has claimed them.
static void wd__loader_need(wd_loader *l, wd__lworker *w, int64_t j) {
    while (l->next_fetch <= j && !l->stop) {
        int64_t k = l->next_fetch++;
        l->slots[k % l->C].state = 1;
        pthread_mutex_unlock(&l->mu);
        wd__loader_decode(l, w, k);
        pthread_mutex_lock(&l->mu);
    }
    while (l->slots[j % l->C].state == 1 && !l->stop) pthread_cond_wait(&l->cv, &l->mu);
}

// Opens the next window (lock held): releases the old window's slots, waits
// for the new blocks, builds the sample permutation. Returns non-OK on a fatal block.
static wd_status wd__loader_next_window(wd_loader *l, wd__lworker *w, int *end) {
    for (int64_t j = l->ws; j < l->we; j++) l->slots[j % l->C].state = 0;
    l->ws = l->we;
    l->win_base = l->ws;
    pthread_cond_broadcast(&l->cv);
    if (l->ws >= l->nplan) { *end = 1; return WD_OK; }
    l->we = WD__MIN(l->ws + l->K, l->nplan);
    l->win_n = 0;
    for (int64_t j = l->ws; j < l->we && !l->stop; j++) {
        wd__loader_need(l, w, j);
        wd__lslot *s = &l->slots[j % l->C];
        if (s->state == 3) {
            if (s->corrupt && l->d.corrupt == WD_CORRUPT_SKIP) { l->stats.skipped_blocks++; s->b.n = 0; }
            else return wd__fail(s->st, "%s", s->err);
        }
        l->win_n += s->state == 2 ? s->b.n : 0;
    }
    if (l->stop) return wd__fail(WD_ERR_ABORTED, "loader stopped");
    if (l->win_n > l->perm_cap) {
        wd__free(l->perm_slot); wd__free(l->perm_idx);
        l->perm_slot = (int32_t *)wd__malloc(sizeof(int32_t) * (size_t)l->win_n);
        l->perm_idx = (uint32_t *)wd__malloc(sizeof(uint32_t) * (size_t)l->win_n);
        l->perm_cap = (l->perm_slot && l->perm_idx) ? l->win_n : 0;
        if (!l->perm_cap)
            return wd__fail(WD_ERR_NOMEM, "loader: out of memory for a window of %lld samples", (long long)l->win_n);
    }
    int64_t q = 0;
    for (int64_t j = l->ws; j < l->we; j++) {
        wd__lslot *s = &l->slots[j % l->C];
        if (s->state != 2) continue;
        for (int i = 0; i < s->b.n; i++) { l->perm_slot[q] = (int32_t)(j % l->C); l->perm_idx[q] = (uint32_t)i; q++; }
    }
    if (l->d.shuffle) {
        uint64_t win = (uint64_t)(l->ws / l->K);
        wd__rng r = {wd_mix64(l->d.seed ^ wd_mix64((uint64_t)l->epoch * 0x9E37u + ((uint64_t)l->d.shard_index << 20)
                                                   + (win << 40) + 0x51ED))};
        for (int64_t i = q - 1; i > 0; i--) {
            int64_t k = (int64_t)(wd__rng_next(&r) % (uint64_t)(i + 1));
            int32_t ts = l->perm_slot[i]; l->perm_slot[i] = l->perm_slot[k]; l->perm_slot[k] = ts;
            uint32_t ti = l->perm_idx[i]; l->perm_idx[i] = l->perm_idx[k]; l->perm_idx[k] = ti;
        }
    }
    l->win_pos = WD__MIN(l->skip_in_window, l->win_n);
    l->skip_in_window = 0;
    return WD_OK;
}

// Fills output batch seq (lock held on entry and exit; released while copying).
static void wd__loader_assemble(wd_loader *l, wd__lworker *w, int64_t seq) {
    wd__lout *o = &l->outs[seq % l->Q];
    size_t bytes0 = o->b.mem_bytes;
    o->b.n = 0;
    for (int k = 0; k < o->b.nslots; k++) if (o->b.offs[k]) o->b.offs[k][0] = 0;
    wd_status st = WD_OK;
    int end = 0;
    double t0 = wd__now();
    while (o->b.n < l->B && !st && !l->stop) {
        if (l->win_pos >= l->win_n && !end) {
            st = wd__loader_next_window(l, w, &end);
            continue;
        }
        if (end) {
            l->stats.padded += l->B - o->b.n;
            while (o->b.n < l->B) wd__pad_sample(&o->b);
            break;
        }
        int64_t take = WD__MIN((int64_t)(l->B - o->b.n), l->win_n - l->win_pos), p0 = l->win_pos;
        l->win_pos += take;
        st = wd__loader_gather(l, &o->b, l->perm_slot + p0, l->perm_idx + p0, (int)take);
    }
    l->bytes += o->b.mem_bytes - bytes0;
    l->stats.peak_bytes = WD__MAX(l->stats.peak_bytes, l->bytes);
    l->stats.assemble_s += wd__now() - t0;
    o->seq = seq;
    o->st = st;
    if (st) { snprintf(o->err, sizeof o->err, "%s", wd_last_error()); l->fatal = st; }
    o->state = 1;
}

static void *wd__loader_thread(void *arg) {
    wd__lworker *w = (wd__lworker *)arg;
    wd_loader *l = w->l;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        if (l->job.active && l->job.next < l->job.ncols) {   // the assembler's columns first: it waits for them
            wd__loader_gather_one(l);
            continue;
        }
        if (!l->assembling && !l->fatal && l->next_assemble < l->nbatches
            && l->outs[l->next_assemble % l->Q].state == 0) {
            l->assembling = 1;
            int64_t seq = l->next_assemble++;
            wd__loader_assemble(l, w, seq);
            l->assembling = 0;
            pthread_cond_broadcast(&l->cv);
            continue;
        }
        if (!l->fatal && l->next_fetch < l->nplan && l->next_fetch < l->win_base + l->C) {
            int64_t j = l->next_fetch++;
            l->slots[j % l->C].state = 1;
            pthread_mutex_unlock(&l->mu);
            wd__loader_decode(l, w, j);
            pthread_mutex_lock(&l->mu);
            continue;
        }
        pthread_cond_wait(&l->cv, &l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static void wd__loader_stop(wd_loader *l) {
    if (!l->running) return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->nthreads; i++) pthread_join(l->th[i], NULL);
    l->running = 0;
    l->stop = 0;
}

WDDEF void wd_loader_close(wd_loader *l) {
    if (!l) return;
    wd__loader_stop(l);
    for (int i = 0; l->slots && i < l->C; i++) wd_batch_free(&l->slots[i].b);
    for (int i = 0; l->outs && i < l->Q; i++) wd_batch_free(&l->outs[i].b);
    for (int i = 0; l->workers && i < l->nthreads; i++) { wd_decoder_destroy(l->workers[i].dec);
        wd__buf_free(&l->workers[i].fetch); }
    for (int f = 0; l->readers && f < l->nfiles; f++) wd_reader_close(l->readers[f]);
    wd__free(l->readers); wd__free(l->slots); wd__free(l->outs); wd__free(l->workers); wd__free(l->th);
    wd__free(l->plan); wd__free(l->all); wd__free(l->perm_slot); wd__free(l->perm_idx);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    wd__free(l);
}

static int wd__online_cores(void) { long n = sysconf(_SC_NPROCESSORS_ONLN); return n > 0 ? (int)n : 1; }
static size_t wd__batch_bytes(const wd_schema *s, int cap) {
    wd_batch b;
    memset(&b, 0, sizeof b);
    b.ndense = s->ndense; b.nslots = s->nslots;
    for (int k = 0; k < s->nslots; k++) b.kind[k] = s->slot[k].kind;
    return wd__batch_carve(&b, NULL, cap, (int64_t)cap * 8);
}

WDDEF wd_status wd_loader_open(const wd_loader_desc *d, wd_loader **out) {
    if (!d || !out || !d->files || d->nfiles <= 0 || d->batch_size <= 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_loader_open: files and batch_size > 0 are required");
    *out = NULL;
    int sc = d->shard_count > 0 ? d->shard_count : 1;
    if (d->shard_index < 0 || d->shard_index >= sc)
        return wd__fail(WD_ERR_INVALID_ARG, "loader: shard %d of %d", d->shard_index, sc);
    wd_loader *l = WD__NEW(wd_loader);
    if (!l) return wd__fail(WD_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->d = *d;
    l->d.shard_count = sc;
    l->B = d->batch_size;
    int devices = d->devices > 0 ? d->devices : 1;
    l->nthreads = d->threads > 0 ? d->threads : WD__MAX(1, wd__online_cores() / devices);
    uint64_t avail = 0;
    wd_status st = d->ram_bytes > 0 ? WD_OK : wd__memory_left(&avail);
    l->ram = d->ram_bytes > 0 ? d->ram_bytes : (size_t)avail / 4 / (size_t)devices;
    l->nfiles = d->nfiles;
    l->readers = (wd_reader **)wd__calloc(sizeof(wd_reader *) * (size_t)d->nfiles);
    if (!st && !l->readers) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    for (int f = 0; !st && f < d->nfiles; f++) {
        st = wd_reader_open(d->files[f], &l->readers[f]);
        if (!st && f == 0) l->schema = *wd_reader_schema(l->readers[0]);
        if (!st && f > 0 && !wd_schema_equal(&l->schema, wd_reader_schema(l->readers[f])))
            st = wd__fail(WD_ERR_SCHEMA, "%s: schema differs from %s (dense columns, slot names, buckets or kinds)",
                          d->files[f], d->files[0]);
        if (!st) {
            l->nall += wd_reader_nblocks(l->readers[f]);
            for (int64_t i = 0; i < wd_reader_nblocks(l->readers[f]); i++)
                l->m_max = WD__MAX(l->m_max, wd_reader_block_samples(l->readers[f], i));
        }
    }
    if (st) { wd_loader_close(l); return st; }
    // budgets: Q output batches, then C = K + A decode slots from what is left
    size_t blk = wd__batch_bytes(&l->schema, WD__MAX(l->m_max, 1)), bat = wd__batch_bytes(&l->schema, l->B);
    l->Q = l->ram >= 4 * bat + blk ? 4 : l->ram >= 3 * bat + blk ? 3 : 2;
    if (l->ram < (size_t)l->Q * bat + blk) {
        st = wd__fail(WD_ERR_LIMIT,
                      "loader: RAM budget %zu bytes is below the %zu needed for 2 batches of %d and one block of %d samples",
                      l->ram, 2 * bat + blk, d->batch_size, l->m_max);
        wd_loader_close(l);
        return st;
    }
    int64_t cmax = (int64_t)((l->ram - (size_t)l->Q * bat) / blk);
    int want_k = d->shuffle ? (d->shuffle_blocks > 0 ? d->shuffle_blocks : 8) : 1;
    l->K = (int)WD__MAX(1, WD__MIN((int64_t)want_k, d->shuffle ? cmax / 2 : 1));
    l->K = (int)WD__MIN((int64_t)l->K, cmax);
    l->A = (int)WD__MIN(cmax - l->K, (int64_t)WD__MAX(l->K, 2 * l->nthreads));
    l->C = l->K + l->A;
    l->slots = (wd__lslot *)wd__calloc(sizeof(wd__lslot) * (size_t)l->C);
    l->outs = (wd__lout *)wd__calloc(sizeof(wd__lout) * (size_t)l->Q);
    l->workers = (wd__lworker *)wd__calloc(sizeof(wd__lworker) * (size_t)l->nthreads);
    l->th = (pthread_t *)wd__calloc(sizeof(pthread_t) * (size_t)l->nthreads);
    l->all = (wd__lplan *)wd__malloc(sizeof(wd__lplan) * (size_t)WD__MAX(l->nall, 1));
    l->plan = (wd__lplan *)wd__malloc(sizeof(wd__lplan) * (size_t)WD__MAX(l->nall, 1));
    if (!l->slots || !l->outs || !l->workers || !l->th || !l->all || !l->plan)
        st = wd__fail(WD_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < l->C; i++) st = wd_batch_init(&l->slots[i].b, &l->schema, l->m_max, 0);
    for (int i = 0; !st && i < l->Q; i++) st = wd_batch_init_with(&l->outs[i].b, &l->schema, l->B, 0, d->batch_alloc);
    for (int i = 0; !st && i < l->nthreads; i++) { l->workers[i].l = l; l->workers[i].index = i;
        st = wd_decoder_create(&l->workers[i].dec); }
    if (st) { wd_loader_close(l); return st; }
    int64_t q = 0;
    for (int f = 0; f < l->nfiles; f++)
        for (int64_t i = 0; i < wd_reader_nblocks(l->readers[f]); i++) { l->all[q].file = f; l->all[q].block = i;
            l->all[q].n = wd_reader_block_samples(l->readers[f], i); q++; }
    l->stats.threads = l->nthreads;
    l->stats.window_blocks = l->K;
    l->stats.ahead_blocks = l->A;
    l->stats.queue_batches = l->Q;
    l->stats.ram_budget = l->ram;
    for (int i = 0; i < l->C; i++) l->bytes += l->slots[i].b.mem_bytes;
    for (int i = 0; i < l->Q; i++) l->bytes += l->outs[i].b.mem_bytes;
    l->stats.peak_bytes = l->bytes;
    l->epoch = -1;
    *out = l;
    return WD_OK;
}

WDDEF const wd_schema *wd_loader_schema(const wd_loader *l) { return &l->schema; }
WDDEF int64_t wd_loader_batches(const wd_loader *l) { return l->nbatches; }

WDDEF wd_status wd_loader_reset(wd_loader *l, int64_t epoch, int64_t skip) {
    if (!l || epoch < 0 || skip < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_loader_reset: bad arguments");
    wd__loader_stop(l);
    // the global block order of this epoch, then this shard's part
    wd__lplan *g = (wd__lplan *)wd__malloc(sizeof(wd__lplan) * (size_t)WD__MAX(l->nall, 1));
    if (!g) return wd__fail(WD_ERR_NOMEM, "out of memory");
    memcpy(g, l->all, sizeof(wd__lplan) * (size_t)l->nall);
    if (l->d.shuffle) {
        wd__rng r = {wd_mix64(l->d.seed * 0x2545F4914F6CDD1DULL + (uint64_t)epoch + 0xB10C)};
        for (int64_t i = l->nall - 1; i > 0; i--) {
            int64_t k = (int64_t)(wd__rng_next(&r) % (uint64_t)(i + 1));
            wd__lplan t = g[i]; g[i] = g[k]; g[k] = t;
        }
    }
    int sc = l->d.shard_count;
    int64_t mn = INT64_MAX, mx = 0;
    for (int s = 0; s < sc; s++) {
        int64_t tot = 0;
        for (int64_t j = s; j < l->nall; j += sc) tot += g[j].n;
        mn = WD__MIN(mn, tot); mx = WD__MAX(mx, tot);
    }
    l->nplan = 0;
    for (int64_t j = l->d.shard_index; j < l->nall; j += sc) l->plan[l->nplan++] = g[j];
    wd__free(g);
    l->nbatches = l->d.remainder == WD_REMAINDER_DROP ? mn / l->B : (mx + l->B - 1) / l->B;
    l->epoch = epoch;
    skip = WD__MIN(skip, l->nbatches);
    // skip whole windows: find the window holding sample skip*B of this shard
    int64_t pos = skip * (int64_t)l->B, w0 = 0, before = 0;
    while (w0 < l->nplan) {
        int64_t n = 0, e = WD__MIN(w0 + l->K, l->nplan);
        for (int64_t j = w0; j < e; j++) n += l->plan[j].n;
        if (before + n > pos) break;
        before += n;
        w0 = e;
    }
    l->ws = l->we = w0;
    l->win_base = w0;
    l->next_fetch = w0;
    l->win_n = l->win_pos = 0;
    l->skip_in_window = pos - before;
    l->next_assemble = l->next_consume = skip;
    l->held = NULL;
    l->fatal = WD_OK;
    l->assembling = 0;
    l->job.active = 0;
    for (int i = 0; i < l->C; i++) l->slots[i].state = 0;
    for (int i = 0; i < l->Q; i++) l->outs[i].state = 0;
    for (int i = 0; i < l->nthreads; i++) {
        if (wd__thread_start(&l->th[i], wd__loader_thread, &l->workers[i]) != 0) {
            l->nthreads = i;   // join the ones started
            l->running = 1;
            wd__loader_stop(l);
            return wd__fail(WD_ERR_NOMEM, "loader: cannot start thread %d", i);
        }
    }
    l->running = 1;
    return WD_OK;
}

WDDEF wd_status wd_loader_next(wd_loader *l, const wd_batch **out) {
    if (!l || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_loader_next: NULL argument");
    *out = NULL;
    if (l->epoch < 0 || !l->running) return wd__fail(WD_ERR_INVALID_ARG, "wd_loader_next: call wd_loader_reset first");
    double t0 = wd__now();
    pthread_mutex_lock(&l->mu);
    if (l->held) { l->held->state = 0; l->held = NULL; pthread_cond_broadcast(&l->cv); }
    if (l->next_consume >= l->nbatches) { pthread_mutex_unlock(&l->mu); return WD_OK; }
    wd__lout *o = &l->outs[l->next_consume % l->Q];
    while (!(o->state == 1 && o->seq == l->next_consume)) pthread_cond_wait(&l->cv, &l->mu);
    l->stats.wait_s += wd__now() - t0;
    wd_status st = o->st;
    if (st) {
        wd__fail(st, "%s", o->err);
        pthread_mutex_unlock(&l->mu);
        return st;
    }
    o->state = 2;
    l->held = o;
    l->next_consume++;
    l->stats.batches++;
    l->stats.samples += o->b.n;
    pthread_mutex_unlock(&l->mu);
    *out = &o->b;
    return WD_OK;
}

WDDEF void wd_loader_stats_get(const wd_loader *l, wd_loader_stats *s) {
    pthread_mutex_lock((pthread_mutex_t *)&l->mu);
    *s = l->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&l->mu);
}

// ---- 13. Model -------------------------------------------------------------------------------
#ifdef WD_USE_CBLAS
#include <cblas.h>
#endif

typedef struct wd__layer { int in, out; int64_t w, b; } wd__layer;   // offsets into the dense buffer

// How raw input became the ids and features of a model's training files
// (section 16, "The model is the contract").
typedef struct wd__contract {
    int known;                      // 1: recorded (from training files, or a .wdm v3)
    wd_vocab *vocab;                // NULL: no slot has a vocabulary
    wd_text_spec *spec;             // NULL: the files carried no input format (its vocab stays NULL)
} wd__contract;
static void wd__contract_free(wd__contract *c) {
    wd__vocab_free(c->vocab);
    wd__free(c->spec);
    memset(c, 0, sizeof *c);
}
// The contract of an open file (copies).
static wd_status wd__contract_of(const wd_reader *r, wd__contract *out) {
    memset(out, 0, sizeof *out);
    WD__TRY(wd__vocab_copy(r->vocab, &out->vocab));
    if (r->spec) {
        if (!(out->spec = (wd_text_spec *)wd__malloc(sizeof *out->spec))) {
            wd__contract_free(out); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
        *out->spec = *r->spec;
        out->spec->vocab = NULL;
    }
    out->known = 1;
    return WD_OK;
}

// A copy of c (what it points to copied too).
static wd_status wd__contract_copy(const wd__contract *c, wd__contract *out) {
    memset(out, 0, sizeof *out);
    WD__TRY(wd__vocab_copy(c->vocab, &out->vocab));
    if (c->spec) {
        if (!(out->spec = (wd_text_spec *)wd__malloc(sizeof *out->spec))) {
            wd__contract_free(out);
            return wd__fail(WD_ERR_NOMEM, "out of memory");
        }
        *out->spec = *c->spec;
    }
    out->known = c->known;
    return WD_OK;
}

struct wd_model {
    wd_model_desc d;
    wd_schema schema;
    int E, D, S, IN, R;                // R = 1 + (deep ? E : 0): floats per sparse gradient row
    int nlayers;                    // hidden layers + the output layer
    wd__layer layer[WD_MAX_LAYERS + 1];
    int64_t P_mlp, P;               // dense buffer: MLP | wide dense weights (D) | wide bias
    float *dense, *dense_s1, *dense_s2;   // (P) params; Adagrad acc or Adam m; Adam v (FTRL z, n for the wide part)
    int ntables;                    // S slot tables then the cross tables
    int64_t table_off[WD_MAX_SLOTS + WD_MAX_CROSSES + 1];
    int64_t wide_rows, emb_rows;    // emb rows = rows of the slot tables (same offsets)
    float *wide, *wide_z, *wide_n;  // (wide_rows)
    float *emb, *emb_s1, *emb_s2;   // (emb_rows, E); s2 only with Adam
    int64_t epoch, batch, step;     // training position
    int64_t batch_size;             // of the run that reached it (0: never trained)
    uint64_t data_fp;               // the training files of that run (wd__files_fingerprint; 0: none)
    int after_error;                // saved by wd_train after an error (wd_model_after_error)
    wd__contract in;                // the input contract of its training files (wd_model_spec)
    int weights_only;               // loaded from wd_model_export: no optimizer state, cannot train
    int64_t in_gen;                 // counts the vocabularies a trainer's raw lines grew (wd_trainer_push_lines)
    // precision bf16: the MLP weights rounded to bf16 for the GEMMs; kept
    // current by the CPU trainer's updates, rebuilt (under lp_mu) when stale
    uint16_t *dense_lp;             // (P_mlp)
    int lp_fresh;
    pthread_mutex_t lp_mu;          // wd_model_swap exchanges the fields above this one
    int lp_mu_made;
    struct wd__pub *pub;            // published snapshots (online learning; NULL: none)
    int training;                   // a wd_train, trainer or swap runs on it (atomic: wd__train_claim)
};

static int wd__deep(const wd_model *m) { return !m->d.no_deep; }
static int wd__wide(const wd_model *m) { return !m->d.no_wide; }

WDDEF const wd_model_desc *wd_model_description(const wd_model *m) { return &m->d; }
WDDEF const wd_schema *wd_model_schema(const wd_model *m) { return &m->schema; }
WDDEF void wd_model_position(const wd_model *m, int64_t *epoch, int64_t *batch, int64_t *step) {
    if (epoch) *epoch = m->epoch;
    if (batch) *batch = m->batch;
    if (step) *step = m->step;
}
WDDEF void wd_model_new_run(wd_model *m) {
    if (!m) return;
    m->epoch = 0; m->batch = 0; m->batch_size = 0; m->data_fp = 0; m->after_error = 0;
}
WDDEF int wd_model_after_error(const wd_model *m) { return m ? m->after_error : 0; }
WDDEF int64_t wd_model_bytes(const wd_model *m) {   // from the plan: valid before the tensors exist
    int64_t ne = wd__deep(m) ? m->emb_rows * m->E : 0;
    return 4 * (3 * m->P + 3 * m->wide_rows + (1 + wd_opt_states(m->d.optimizer)) * ne);
}

static void wd__pub_free(struct wd__pub *p);
static void wd__free_model(wd_model *m) {
    if (!m) return;
    wd__pub_free(m->pub);
    if (m->lp_mu_made) pthread_mutex_destroy(&m->lp_mu);
    wd__free(m->dense_lp);
    wd__free(m->dense); wd__free(m->dense_s1); wd__free(m->dense_s2);
    wd__free(m->wide); wd__free(m->wide_z); wd__free(m->wide_n);
    wd__free(m->emb); wd__free(m->emb_s1); wd__free(m->emb_s2);
    wd__contract_free(&m->in);
    wd__free(m);
}
WDDEF void wd_model_destroy(wd_model *m) { wd__free_model(m); }
static wd_status wd__model_spec(const wd_model *m, wd_text_spec *out);
struct wd__snap;
static struct wd__snap *wd__spec_source(const wd_model *m, const wd_model **src);
static void wd__spec_source_end(const wd_model *m, struct wd__snap *q);
// With a published snapshot: the snapshot's input contract, which grows with
// its tables (wd_trainer_push_lines); else the model's.
WDDEF wd_status wd_model_spec(const wd_model *m, wd_text_spec *out) {
    if (!m || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_spec: %s is NULL", m ? "out" : "the model");
    const wd_model *src;
    struct wd__snap *q = wd__spec_source(m, &src);
    wd_status st = wd__model_spec(src, out);
    wd__spec_source_end(m, q);
    return st;
}
static wd_status wd__model_spec(const wd_model *m, wd_text_spec *out) {
    memset(out, 0, sizeof *out);
    if (!m->in.known)
        return wd__fail(WD_ERR_UNSUPPORTED,
                        "the model carries no input format and no vocabularies: it was saved before .wdm version 3, or never trained on files. "
                        "Train it again on its files (the CLI's --init-from) to record them, or map raw input with its training file's spec (wd_text_spec_match, wd_text_spec_vocab)");
    if (!m->in.spec)
        return wd__fail(WD_ERR_UNSUPPORTED, "the model's training files carry no input format (written by wd_writer, "
                        "or converted before .wdr version 3): build its batches as those files were built, or convert "
                        "the text again and train on that");
    *out = *m->in.spec;
    out->schema = m->schema;
    out->vocab = NULL;
    wd_vocab *v;
    WD__TRY(wd__vocab_copy(m->in.vocab, &v));
    out->vocab = v;
    return WD_OK;
}

// Fills defaults and checks a description; sizes the model (no allocation).
static wd_status wd__model_plan(wd_model *m, const wd_model_desc *in) {
    if (!in || !in->schema) return wd__fail(WD_ERR_INVALID_ARG, "model: a schema is required");
    WD__TRY(wd_schema_check(in->schema));
    m->d = *in;
    m->schema = *in->schema;
    m->d.schema = &m->schema;
    wd_model_desc *d = &m->d;
    if (d->embed_dim == 0) d->embed_dim = 16;
    if (d->embed_dim < 1 || d->embed_dim > 1024)
        return wd__fail(WD_ERR_INVALID_ARG, "model: embed_dim %d is outside 1..1024", d->embed_dim);
    int nh = 0, any = 0;
    for (int l = 0; l < WD_MAX_LAYERS; l++) any |= d->hidden[l] != 0;
    if (!any) { d->hidden[0] = 1024; d->hidden[1] = 512; d->hidden[2] = 256; }
    while (nh < WD_MAX_LAYERS && d->hidden[nh] > 0) nh++;
    for (int l = nh; l < WD_MAX_LAYERS; l++)
        if (d->hidden[l] != 0)
            return wd__fail(WD_ERR_INVALID_ARG, "model: hidden[%d] = %d after the first 0 or negative width", l,
                            d->hidden[l]);
    for (int l = 0; l < nh; l++)
        if (d->hidden[l] > 65536)
            return wd__fail(WD_ERR_INVALID_ARG, "model: hidden[%d] = %d is above 65536", l, d->hidden[l]);
    if (d->optimizer != WD_ADAGRAD && d->optimizer != WD_ADAM)
        return wd__fail(WD_ERR_INVALID_ARG, "model: optimizer %d is neither WD_ADAGRAD nor WD_ADAM", d->optimizer);
    if (d->lr_deep == 0) d->lr_deep = d->optimizer == WD_ADAM ? 0.001f : 0.01f;
    if (d->lr_wide == 0) d->lr_wide = 0.05f;
    if (d->adam_beta1 == 0) d->adam_beta1 = 0.9f;
    if (d->adam_beta2 == 0) d->adam_beta2 = 0.999f;
    if (d->adam_eps == 0) d->adam_eps = 1e-8f;
    if (d->emb_init == 0) d->emb_init = 0.05f;
    if (d->cross_buckets == 0) d->cross_buckets = 1u << 20;
    // one rule per setting (NaN fails every comparison; 1e30 is a practical infinity)
    if (!(d->lr_deep > 0 && d->lr_deep < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: lr_deep %g must be positive and finite", (double)d->lr_deep);
    if (!(d->lr_wide > 0 && d->lr_wide < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: lr_wide (FTRL alpha) %g must be positive and finite",
                        (double)d->lr_wide);
    if (!(d->ftrl_beta >= 0 && d->ftrl_beta < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: ftrl_beta %g must be >= 0 and finite", (double)d->ftrl_beta);
    if (!(d->ftrl_l1 >= 0 && d->ftrl_l1 < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: ftrl_l1 %g must be >= 0 and finite", (double)d->ftrl_l1);
    if (!(d->ftrl_l2 >= 0 && d->ftrl_l2 < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: ftrl_l2 %g must be >= 0 and finite", (double)d->ftrl_l2);
    if (!(d->adagrad_init >= 0 && d->adagrad_init < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: adagrad_init %g must be >= 0 and finite", (double)d->adagrad_init);
    if (!(d->adam_beta1 > 0 && d->adam_beta1 < 1))
        return wd__fail(WD_ERR_INVALID_ARG, "model: adam_beta1 %g must be in (0, 1)", (double)d->adam_beta1);
    if (!(d->adam_beta2 > 0 && d->adam_beta2 < 1))
        return wd__fail(WD_ERR_INVALID_ARG, "model: adam_beta2 %g must be in (0, 1)", (double)d->adam_beta2);
    if (!(d->adam_eps > 0 && d->adam_eps < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: adam_eps %g must be positive and finite", (double)d->adam_eps);
    if (!(d->emb_init > 0 && d->emb_init < 1e30f))
        return wd__fail(WD_ERR_INVALID_ARG, "model: emb_init %g must be positive and finite", (double)d->emb_init);
    if (d->pooling != WD_POOL_SUM && d->pooling != WD_POOL_MEAN)
        return wd__fail(WD_ERR_INVALID_ARG, "model: unknown pooling %d", d->pooling);
    if (d->precision != WD_PRECISION_FP32 && d->precision != WD_PRECISION_BF16)
        return wd__fail(WD_ERR_INVALID_ARG, "model: precision %d is neither WD_PRECISION_FP32 nor WD_PRECISION_BF16",
                        d->precision);
    if (d->no_wide != 0 && d->no_wide != 1)
        return wd__fail(WD_ERR_INVALID_ARG, "model: no_wide %d is not 0 or 1", d->no_wide);
    if (d->no_deep != 0 && d->no_deep != 1)
        return wd__fail(WD_ERR_INVALID_ARG, "model: no_deep %d is not 0 or 1", d->no_deep);
    if (d->no_wide && d->no_deep)
        return wd__fail(WD_ERR_INVALID_ARG, "model: no_wide and no_deep switch both parts off");
    if (d->ncross < 0 || d->ncross > WD_MAX_CROSSES)
        return wd__fail(WD_ERR_LIMIT, "model: %d crosses (limit %d)", d->ncross, WD_MAX_CROSSES);
    for (int c = 0; c < d->ncross; c++)
        for (int e = 0; e < 2; e++) {
            int k = d->cross[c][e];
            if (k < 0 || k >= m->schema.nslots)
                return wd__fail(WD_ERR_INVALID_ARG, "model: cross %d names slot %d, the schema has %d", c, k,
                                m->schema.nslots);
            if (m->schema.slot[k].kind != WD_ONE_HOT)
                return wd__fail(WD_ERR_INVALID_ARG,
                                "model: cross %d uses multi-hot slot %s (crosses take one-hot slots)", c,
                                m->schema.slot[k].name);
        }
    m->E = d->embed_dim;
    m->D = m->schema.ndense;
    m->S = m->schema.nslots;
    m->IN = m->D + m->S * m->E;
    m->R = 1 + (d->no_deep ? 0 : m->E);
    m->nlayers = d->no_deep ? 0 : nh + 1;
    int64_t off = 0;
    int width = m->IN;
    for (int l = 0; l < m->nlayers; l++) {
        int out = l < nh ? d->hidden[l] : 1;
        m->layer[l].in = width; m->layer[l].out = out;
        m->layer[l].w = off; off += (int64_t)width * out;
        m->layer[l].b = off; off += out;
        width = out;
    }
    m->P_mlp = off;
    m->P = off + m->D + 1;
    m->ntables = m->S + d->ncross;
    int64_t rows = 0;
    for (int t = 0; t < m->ntables; t++) {
        m->table_off[t] = rows;
        rows += t < m->S ? (int64_t)m->schema.slot[t].buckets : (int64_t)d->cross_buckets;
    }
    m->table_off[m->ntables] = rows;
    m->wide_rows = rows;
    m->emb_rows = m->table_off[m->S];
    return WD_OK;
}

static float *wd__alloc_floats(int64_t n, const char *what, wd_status *st) {
    if (*st) return NULL;
    if (n < 0 || (uint64_t)n > (SIZE_MAX / 4)) {
        *st = wd__fail(WD_ERR_LIMIT, "model: %s of %lld floats is too large", what, (long long)n); return NULL; }
    float *p = (float *)wd__malloc((size_t)n * 4);
    if (!p) *st = wd__fail(WD_ERR_NOMEM, "model: out of memory for %s (%lld bytes)", what, (long long)n * 4);
    return p;
}

// Allocates every tensor from the planned sizes (contents uninitialised); a
// weights-only model (m->weights_only) gets no optimizer state (NULL).
static wd_status wd__model_alloc(wd_model *m) {
    int ws = m->weights_only, ne = wd__deep(m) ? 1 : 0;
    uint64_t bytes = ws ? 4 * (uint64_t)(m->P + m->wide_rows + ne * m->emb_rows * m->E) : (uint64_t)wd_model_bytes(m);
    bytes += m->d.precision == WD_PRECISION_BF16 ? 2 * (uint64_t)m->P_mlp : 0;
    char what[160];
    snprintf(what, sizeof what, "the model (%lld table rows, embedding dim %d)", (long long)m->wide_rows, m->E);
    WD__TRY(wd__memory_check(bytes, what));
    wd_status st = WD_OK;
    m->dense = wd__alloc_floats(m->P, "dense parameters", &st);
    if (!ws) m->dense_s1 = wd__alloc_floats(m->P, "dense optimizer state", &st);
    if (!ws) m->dense_s2 = wd__alloc_floats(m->P, "dense optimizer state", &st);
    m->wide = wd__alloc_floats(WD__MAX(m->wide_rows, 1), "wide weights", &st);
    if (!ws) m->wide_z = wd__alloc_floats(WD__MAX(m->wide_rows, 1), "FTRL z", &st);
    if (!ws) m->wide_n = wd__alloc_floats(WD__MAX(m->wide_rows, 1), "FTRL n", &st);
    if (wd__deep(m)) {
        m->emb = wd__alloc_floats(m->emb_rows * m->E, "embedding tables", &st);
        if (!ws) m->emb_s1 = wd__alloc_floats(m->emb_rows * m->E, "embedding optimizer state", &st);
        if (!ws && wd_opt_states(m->d.optimizer) > 1)
            m->emb_s2 = wd__alloc_floats(m->emb_rows * m->E, "embedding Adam state", &st);
    }
    if (!st && m->d.precision == WD_PRECISION_BF16) {
        m->dense_lp = (uint16_t *)wd__malloc(sizeof(uint16_t) * (size_t)WD__MAX(m->P_mlp, 1));
        if (!m->dense_lp) st = wd__fail(WD_ERR_NOMEM, "model: out of memory for the bf16 weights");
    }
    if (!st) { pthread_mutex_init(&m->lp_mu, NULL); m->lp_mu_made = 1; }
    return st;
}

WDDEF wd_status wd_model_create(const wd_model_desc *d, wd_model **out) {
    if (!out) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_create: NULL out");
    *out = NULL;
    wd_model *m = WD__NEW(wd_model);
    if (!m) return wd__fail(WD_ERR_NOMEM, "out of memory");
    wd_status st = wd__model_plan(m, d);
    if (!st) st = wd__model_alloc(m);
    if (st) { wd__free_model(m); return st; }
    uint64_t seed = m->d.seed;
    // MLP: He-uniform for ReLU layers, Glorot-like for the output; biases 0
    for (int l = 0; l < m->nlayers; l++) {
        wd__layer *L = &m->layer[l];
        double a = l + 1 < m->nlayers ? sqrt(6.0 / L->in) : sqrt(6.0 / (L->in + 1));
        wd__rng r = {wd_mix64(seed ^ (0xA11CE000ull + (uint64_t)l))};
        for (int64_t i = 0; i < (int64_t)L->in * L->out; i++)
            m->dense[L->w + i] = (float)((2.0 * wd__rng_uniform(&r) - 1.0) * a);
        memset(m->dense + L->b, 0, sizeof(float) * (size_t)L->out);
    }
    memset(m->dense + m->P_mlp, 0, sizeof(float) * (size_t)(m->P - m->P_mlp));
    for (int64_t i = 0; i < m->P; i++)
        m->dense_s1[i] = (i < m->P_mlp && m->d.optimizer == WD_ADAGRAD) ? m->d.adagrad_init : 0.0f;
    memset(m->dense_s2, 0, sizeof(float) * (size_t)m->P);
    memset(m->wide, 0, sizeof(float) * (size_t)WD__MAX(m->wide_rows, 1));
    memset(m->wide_z, 0, sizeof(float) * (size_t)WD__MAX(m->wide_rows, 1));
    memset(m->wide_n, 0, sizeof(float) * (size_t)WD__MAX(m->wide_rows, 1));
    if (m->emb) {
        // each row from its own stream: the same values whatever the table layout
        int E = m->E;
        for (int t = 0; t < m->S; t++)
            for (int64_t row = m->table_off[t]; row < m->table_off[t + 1]; row++) {
                wd__rng r = {wd_mix64(seed * 0x9E3779B97F4A7C15ull ^ ((uint64_t)t << 48)
                                      ^ (uint64_t)(row - m->table_off[t]))};
                float *e = m->emb + row * E;
                for (int j = 0; j < E; j++) e[j] = (float)((2.0 * wd__rng_uniform(&r) - 1.0) * m->d.emb_init);
            }
        float init = m->d.optimizer == WD_ADAGRAD ? m->d.adagrad_init : 0.0f;
        for (int64_t i = 0; i < m->emb_rows * E; i++) m->emb_s1[i] = init;
        if (m->emb_s2) memset(m->emb_s2, 0, sizeof(float) * (size_t)(m->emb_rows * E));
    }
    *out = m;
    return WD_OK;
}

// ---- CPU kernels ---------------------------------------------------------------------------
/* The GEMM engine. The MLP's three products per layer, on each worker's
   share of a batch:  forward  y (n, out) = x (n, in) W^T + b, ReLU on hidden
   layers;  weights  gW (out, in) = dz^T a;  inputs  da (n, in) = dz W.
   Chosen at build time by what is installed (the Makefile's probe):
   WD_USE_ONEDNN  oneDNN matmul primitives (made once per shape and worker,
                  dispatching on the CPU's instruction set; bias and ReLU
                  fused; bf16 inputs with fp32 accumulation for precision
                  bf16); thread-safe; allocation failures come back as
                  WD_ERR_NOMEM.
   WD_USE_CBLAS   cblas_sgemm (OpenBLAS with WD_USE_OPENBLAS): Debian's serial
                  OpenBLAS is not thread-safe, so calls are serialised by a
                  mutex (correct, but workers then wait for each other).
   neither        portable loops (slow; they exist so the header alone works). */
#ifdef __cplusplus
extern "C" {
#endif
#ifdef WD_USE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
// libdnnl's OpenMP: one thread per worker while our workers run (they parallelise)
extern void omp_set_num_threads(int);
extern int omp_get_max_threads(void);
#endif
#ifdef WD_USE_OPENBLAS
extern char *openblas_get_corename(void);
#endif
#ifdef __cplusplus
}
#endif
WDDEF const char *wd_gemm_engine_name(void) {
#if defined(WD_USE_ONEDNN)
    return "onednn";
#elif defined(WD_USE_OPENBLAS)
    return "openblas";
#elif defined(WD_USE_CBLAS)
    return "cblas";
#else
    return "portable";
#endif
}
enum { WD__MM_FWD, WD__MM_WGRAD, WD__MM_DGRAD };
enum { WD__LP_IN = 1, WD__LP_OUT = 2 };   // bf16 products: inputs only, or inputs and output
#ifdef WD_USE_ONEDNN
typedef struct wd__prim {
    int kind, layer, M, lp, relu;
    dnnl_primitive_t p;
    dnnl_memory_t src, wei, dst, bias;
    int64_t used;
} wd__prim;
#define WD__PRIMS 160   // a predictor's shapes (wd__piece_rows) times its layers fit
#endif
typedef struct wd__gemm {           // one worker's engine state
    int made;
#ifdef WD_USE_ONEDNN
    dnnl_engine_t eng;
    dnnl_stream_t st;
    wd__prim prim[WD__PRIMS];
    int nprim;
    int64_t clock;
#endif
} wd__gemm;

#ifdef WD_USE_ONEDNN
static const char *wd__isa_name(int isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}
static int wd__bf16_ok(void) {
    int isa = (int)dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx;
}
#endif
// "gemm=onednn isa=avx512_core_bf16 precision=bf16", for reports.
static void wd__engine_describe(const wd_model *m, char *buf, size_t n) {
    const char *prec = m->d.precision == WD_PRECISION_BF16 ? "bf16" : "fp32";
#if defined(WD_USE_ONEDNN)
    snprintf(buf, n, "gemm=%s isa=%s precision=%s", wd_gemm_engine_name(),
             wd__isa_name((int)dnnl_get_effective_cpu_isa()), prec);
#elif defined(WD_USE_OPENBLAS)
    snprintf(buf, n, "gemm=%s core=%s precision=%s", wd_gemm_engine_name(), openblas_get_corename(), prec);
#else
    snprintf(buf, n, "gemm=%s precision=%s", wd_gemm_engine_name(), prec);
#endif
}
// Whether this build and CPU can compute in the model's precision.
static wd_status wd__precision_check(const wd_model *m) {
    if (m->d.precision != WD_PRECISION_BF16) return WD_OK;
#ifndef WD_USE_ONEDNN
    return wd__fail(WD_ERR_UNSUPPORTED,
                    "precision bf16 needs the oneDNN GEMM engine; this build has %s (install libdnnl-dev: tools/install-deps.sh)",
                    wd_gemm_engine_name());
#else
    if (!wd__bf16_ok())
        return wd__fail(WD_ERR_UNSUPPORTED, "precision bf16 needs a CPU with AVX512-BF16 or AMX-BF16; this one runs %s",
                        wd__isa_name((int)dnnl_get_effective_cpu_isa()));
    return WD_OK;
#endif
}

// f32 -> bf16 by wd_bf16_bits (section 13), in software when the CPU has
// no VCVTNEPS2BF16: one rule for every bf16 value, however it was converted.
static void wd__to_bf16_sw(uint16_t *d, const float *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &s[i], 4);
        d[i] = wd_bf16_bits(u);
    }
}
#if defined(__x86_64__) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 10))
#include <immintrin.h>
__attribute__((target("avx512f,avx512bf16"))) static void wd__to_bf16_avx512(uint16_t *d, const float *s, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + i));
        memcpy(d + i, &v, 32);
    }
    wd__to_bf16_sw(d + i, s + i, n - i);
}
#define WD__HAVE_BF16_AVX512 1
#endif
static void wd__to_bf16(uint16_t *d, const float *s, size_t n) {
#ifdef WD__HAVE_BF16_AVX512
    static int hw = -1;   // asked once; threads may race to store the same answer
    int h = __atomic_load_n(&hw, __ATOMIC_RELAXED);
    if (h < 0) { h = __builtin_cpu_supports("avx512bf16") ? 1 : 0; __atomic_store_n(&hw, h, __ATOMIC_RELAXED); }
    if (h) { wd__to_bf16_avx512(d, s, n); return; }
#endif
    wd__to_bf16_sw(d, s, n);
}
// The bf16 weights, rebuilt when stale (several predicting threads may ask at once).
static void wd__lp_refresh(wd_model *m) {
    if (!m->dense_lp || __atomic_load_n(&m->lp_fresh, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&m->lp_mu);
    if (!m->lp_fresh) { wd__to_bf16(m->dense_lp, m->dense, (size_t)m->P_mlp);
        __atomic_store_n(&m->lp_fresh, 1, __ATOMIC_RELEASE); }
    pthread_mutex_unlock(&m->lp_mu);
}

#ifdef WD_USE_ONEDNN
static void wd__gemm_free(wd__gemm *g) {
    if (!g->made) return;
    for (int i = 0; i < g->nprim; i++) {
        wd__prim *q = &g->prim[i];
        dnnl_primitive_destroy(q->p);
        dnnl_memory_destroy(q->src); dnnl_memory_destroy(q->wei); dnnl_memory_destroy(q->dst);
        if (q->bias) dnnl_memory_destroy(q->bias);
    }
    dnnl_stream_destroy(g->st);
    dnnl_engine_destroy(g->eng);
    memset(g, 0, sizeof *g);
}
static wd_status wd__dnnl_fail(dnnl_status_t s, const char *what) {
    return wd__fail(s == dnnl_out_of_memory ? WD_ERR_NOMEM : WD_ERR_INTERNAL, "oneDNN: %s failed (status %d%s)", what,
                    (int)s, s == dnnl_out_of_memory ? ", out of memory" : "");
}
#define WD__DNNL(call, what) do { dnnl_status_t s_ = (call); \
    if (s_ != dnnl_success) { st = wd__dnnl_fail(s_, what); goto fail; } } while (0)
// The primitive for (kind, layer, M, lp): made on first use, then reused (LRU).
// lp: 0 fp32; WD__LP_IN bf16 inputs, fp32 output; WD__LP_OUT bf16 inputs and output.
static wd_status wd__prim_get(wd__gemm *g, int kind, int layer, int M, int N, int K, int lp, int relu, int bias,
                              wd__prim **out) {
    wd_status st = WD_OK;
    if (!g->made) {
        memset(g, 0, sizeof *g);
        if (dnnl_engine_create(&g->eng, dnnl_cpu, 0) != dnnl_success)
            return wd__fail(WD_ERR_INTERNAL, "oneDNN: no CPU engine");
        if (dnnl_stream_create(&g->st, g->eng, dnnl_stream_default_flags) != dnnl_success) {
            dnnl_engine_destroy(g->eng); return wd__fail(WD_ERR_INTERNAL, "oneDNN: no stream"); }
        g->made = 1;
    }
    g->clock++;
    for (int i = 0; i < g->nprim; i++) {
        wd__prim *q = &g->prim[i];
        if (q->kind == kind && q->layer == layer && q->M == M && q->lp == lp) { q->used = g->clock; *out = q;
            return WD_OK; }
    }
    wd__prim *q;
    if (g->nprim < WD__PRIMS) q = &g->prim[g->nprim++];
    else {   // evict the least recently used
        q = &g->prim[0];
        for (int i = 1; i < WD__PRIMS; i++) if (g->prim[i].used < q->used) q = &g->prim[i];
        dnnl_primitive_destroy(q->p);
        dnnl_memory_destroy(q->src); dnnl_memory_destroy(q->wei); dnnl_memory_destroy(q->dst);
        if (q->bias) dnnl_memory_destroy(q->bias);
    }
    memset(q, 0, sizeof *q);
    // C (M, N) = A (M, K) B (K, N); strides per kind (row-major arrays of the MLP)
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N}, biasd = {1, N};
    dnnl_dims_t as, bs, cs = {N, 1}, biass = {N, 1};
    if (kind == WD__MM_FWD) { as[0] = K; as[1] = 1; bs[0] = 1; bs[1] = K; }          // x (M, K); W (N, K) read as W^T
    else if (kind == WD__MM_WGRAD) { as[0] = 1; as[1] = M; bs[0] = N; bs[1] = 1; }   // dz (K, M) read as dz^T; a (K, N)
    else { as[0] = K; as[1] = 1; bs[0] = N; bs[1] = 1; }                             // dz (M, K); W (K, N)
    dnnl_data_type_t in_t = lp ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a, b, c, bi;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    WD__DNNL(dnnl_memory_desc_init_by_strides(&a, 2, ad, in_t, as), "source layout");
    WD__DNNL(dnnl_memory_desc_init_by_strides(&b, 2, bd, in_t, bs), "weights layout");
    WD__DNNL(dnnl_memory_desc_init_by_strides(&c, 2, cd, lp == WD__LP_OUT ? dnnl_bf16 : dnnl_f32, cs), "output layout");
    WD__DNNL(dnnl_memory_desc_init_by_strides(&bi, 2, biasd, dnnl_f32, biass), "bias layout");
    WD__DNNL(dnnl_matmul_desc_init(&md, &a, &b, bias ? &bi : NULL, &c), "matmul description");
    WD__DNNL(dnnl_primitive_attr_create(&attr), "attributes");
    if (relu) {
        WD__DNNL(dnnl_post_ops_create(&po), "post-ops");
        WD__DNNL(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f), "ReLU post-op");
        WD__DNNL(dnnl_primitive_attr_set_post_ops(attr, po), "post-ops");
    }
    WD__DNNL(dnnl_primitive_desc_create(&pd, &md, attr, g->eng, NULL), "matmul");
    WD__DNNL(dnnl_primitive_create(&q->p, pd), "matmul primitive");
    WD__DNNL(dnnl_memory_create(&q->src, &a, g->eng, DNNL_MEMORY_NONE), "memory");
    WD__DNNL(dnnl_memory_create(&q->wei, &b, g->eng, DNNL_MEMORY_NONE), "memory");
    WD__DNNL(dnnl_memory_create(&q->dst, &c, g->eng, DNNL_MEMORY_NONE), "memory");
    if (bias) WD__DNNL(dnnl_memory_create(&q->bias, &bi, g->eng, DNNL_MEMORY_NONE), "memory");
    q->kind = kind; q->layer = layer; q->M = M; q->lp = lp; q->relu = relu; q->used = g->clock;
    *out = q;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (st) {   // forget the half-made entry
        if (q->p) dnnl_primitive_destroy(q->p);
        if (q->src) dnnl_memory_destroy(q->src);
        if (q->wei) dnnl_memory_destroy(q->wei);
        if (q->dst) dnnl_memory_destroy(q->dst);
        if (q->bias) dnnl_memory_destroy(q->bias);
        *q = g->prim[--g->nprim];
    }
    return st;
}
// C = A B (+ bias, ReLU) through the cached primitive (lp as wd__prim_get's).
static wd_status wd__mm(wd__gemm *g, int kind, int layer, int M, int N, int K, int lp, const void *A, const void *B,
                        const float *bias, int relu, void *C) {
    wd__prim *q;
    WD__TRY(wd__prim_get(g, kind, layer, M, N, K, lp, relu, bias != NULL, &q));
    dnnl_memory_set_data_handle(q->src, (void *)(uintptr_t)A);
    dnnl_memory_set_data_handle(q->wei, (void *)(uintptr_t)B);
    dnnl_memory_set_data_handle(q->dst, C);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, q->src}, {DNNL_ARG_WEIGHTS, q->wei}, {DNNL_ARG_DST, q->dst},
                               {DNNL_ARG_BIAS, q->bias}};
    if (bias) dnnl_memory_set_data_handle(q->bias, (void *)(uintptr_t)bias);
    dnnl_status_t s = dnnl_primitive_execute(q->p, g->st, bias ? 4 : 3, args);
    if (s == dnnl_success) s = dnnl_stream_wait(g->st);
    return s == dnnl_success ? WD_OK : wd__dnnl_fail(s, "matmul");
}
#undef WD__DNNL
#else
static void wd__gemm_free(wd__gemm *g) { (void)g; }
#endif

#ifndef WD_USE_ONEDNN
// Row-major C (M,N) = alpha * op(A) (M,K) * op(B) (K,N) + beta * C.
static void wd__sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc) {
#ifdef WD_USE_CBLAS
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;   // Debian's serial OpenBLAS is not thread-safe
    pthread_mutex_lock(&mu);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
                B, ldb, beta, C, ldc);
    pthread_mutex_unlock(&mu);
#else
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (beta == 0.0f) memset(c, 0, sizeof(float) * (size_t)N);
        else if (beta != 1.0f) for (int j = 0; j < N; j++) c[j] *= beta;
    }
#define WD__A(i, k) (ta ? A[(size_t)(k) * lda + (i)] : A[(size_t)(i) * lda + (k)])
    if (!tb) {
        // axpy form, four rows of C share each row of B
        int i = 0;
        for (; i + 4 <= M; i += 4) {
            float *c0 = C + (size_t)i * ldc, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
            for (int k = 0; k < K; k++) {
                float a0 = alpha * WD__A(i, k), a1 = alpha * WD__A(i + 1, k), a2 = alpha * WD__A(i + 2, k),
                    a3 = alpha * WD__A(i + 3, k);
                if (a0 == 0.0f && a1 == 0.0f && a2 == 0.0f && a3 == 0.0f) continue;   // ReLU zeros
                const float *b = B + (size_t)k * ldb;
                for (int j = 0; j < N; j++) { float v = b[j]; c0[j] += a0 * v; c1[j] += a1 * v; c2[j] += a2 * v;
                    c3[j] += a3 * v; }
            }
        }
        for (; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            for (int k = 0; k < K; k++) {
                float a = alpha * WD__A(i, k);
                if (a == 0.0f) continue;
                const float *b = B + (size_t)k * ldb;
                for (int j = 0; j < N; j++) c[j] += a * b[j];
            }
        }
    } else {
        // dot form: C[i][j] += alpha * <row i of op(A), row j of B>
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            for (int j = 0; j < N; j++) {
                const float *b = B + (size_t)j * ldb;
                float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                int k = 0;
                if (!ta) {
                    const float *a = A + (size_t)i * lda;
                    for (; k + 4 <= K; k += 4) { s0 += a[k] * b[k]; s1 += a[k + 1] * b[k + 1];
                        s2 += a[k + 2] * b[k + 2]; s3 += a[k + 3] * b[k + 3]; }
                }
                for (; k < K; k++) s0 += WD__A(i, k) * b[k];
                c[j] += alpha * ((s0 + s1) + (s2 + s3));
            }
        }
    }
#undef WD__A
#endif
}
#endif

WDDEF uint32_t wd_cross_bucket(uint32_t a, uint32_t b, int c, uint32_t buckets) {
    return wd_cross_hash(a, b, c, buckets); }
// The update rules with the model's settings, before step `step`.
static wd_opt wd__opt(const wd_model *m, int64_t step) {
    const wd_model_desc *d = &m->d;
    wd_opt o;
    memset(&o, 0, sizeof o);
    o.optimizer = d->optimizer; o.lr_deep = d->lr_deep; o.lr_wide = d->lr_wide;
    o.beta = d->ftrl_beta; o.l1 = d->ftrl_l1; o.l2 = d->ftrl_l2;
    o.b1 = d->adam_beta1; o.b2 = d->adam_beta2; o.eps = d->adam_eps;
    wd_opt_at_step(&o, step);
    return o;
}

#define WD__TAIL WD_STEP_TAIL   // floats after the dense gradient: loss sum, weight sum, samples, stops
// One worker's scratch, for up to `cap` samples at a time.
typedef struct wd__occ { int64_t key; int32_t src, idx; } wd__occ;   // a sparse gradient row to merge
typedef struct wd__ws {
    int cap;
    float *x;                       // (cap, I)  [dense | pooled embeddings]
    float *act[WD_MAX_LAYERS + 1];  // (cap, H_l) post-ReLU activations (fp32 only: bf16
                                    // keeps them in lp_in); last: (cap, 1) deep logit
    float *da, *db;                 // (cap, max(I, H)) gradient ping-pong
    float *logit, *wlogit, *dlogit, *prob;   // (cap)
    float *g;                       // (P + WD__TAIL): dense gradient, loss sum, weight sum, samples, stops
    // sparse gradient rows of this worker's samples: key + R floats each
    int64_t nocc, occ_cap;
    int64_t *okey;                  // (occ_cap)
    float *orow;                    // (occ_cap, R)
    wd__occ *sort, *sort_tmp;       // (sort_cap) each
    int64_t sort_cap;
    wd__buf pack;                   // merged rows to exchange: i64 count, i64 keys, f32 rows
    int64_t nown, own_cap;          // merged rows this worker applies: keys, rows (scaled)
    int64_t *own_key;               // (own_cap)
    float *own_row;                 // (own_cap, R)
    double t_embed, t_fwd, t_bwd, t_wide, t_sort, t_rows, t_comm, t_opt;
    wd__gemm mm;                    // the GEMM engine's state (primitives) of this worker
    uint16_t *lp_in[WD_MAX_LAYERS + 1];   // precision bf16: each layer's input (cap,
                                          // in_l), the activations above layer 0
    uint16_t *lp_dz;                // precision bf16: the gradient being propagated (cap, max width)
} wd__ws;

static void wd__ws_free(wd__ws *w) {
    if (!w) return;
    wd__free(w->x);
    for (int l = 0; l <= WD_MAX_LAYERS; l++) wd__free(w->act[l]);
    wd__free(w->da); wd__free(w->db);
    wd__free(w->logit); wd__free(w->wlogit); wd__free(w->dlogit); wd__free(w->prob);
    wd__free(w->g); wd__free(w->okey); wd__free(w->orow); wd__free(w->sort); wd__free(w->sort_tmp);
    wd__free(w->own_key); wd__free(w->own_row);
    wd__buf_free(&w->pack);
    wd__gemm_free(&w->mm);
    for (int l = 0; l <= WD_MAX_LAYERS; l++) wd__free(w->lp_in[l]);
    wd__free(w->lp_dz);
    memset(w, 0, sizeof *w);
}
// train 0: what the forward pass needs only (prediction); x then starts
// zeroed (rows a piece computes beyond its samples read it: see
// wd__piece_rows). Training's x is not touched here: a worker's scratch for
// a huge batch stays unbacked until used (the loader's budget check comes after).
static wd_status wd__ws_init(wd__ws *w, const wd_model *m, int cap, int train) {
    memset(w, 0, sizeof *w);
    w->cap = cap;
    int widest = m->IN;
    for (int l = 0; l < m->nlayers; l++) widest = WD__MAX(widest, m->layer[l].out);
    wd_status st = WD_OK;
    w->x = wd__alloc_floats((int64_t)cap * m->IN, "activations", &st);
    if (!st && !train) memset(w->x, 0, sizeof(float) * (size_t)cap * (size_t)m->IN);
    int lp = m->d.precision == WD_PRECISION_BF16;
    for (int l = 0; l < m->nlayers; l++)
        if (!lp || l + 1 == m->nlayers)
            w->act[l] = wd__alloc_floats((int64_t)cap * m->layer[l].out, "activations", &st);
    w->logit = wd__alloc_floats(cap, "logits", &st);
    w->wlogit = wd__alloc_floats(cap, "logits", &st);
    w->prob = wd__alloc_floats(cap, "logits", &st);
    if (train) {
        w->da = wd__alloc_floats((int64_t)cap * widest, "gradients", &st);
        w->db = wd__alloc_floats((int64_t)cap * widest, "gradients", &st);
        w->dlogit = wd__alloc_floats(cap, "logits", &st);
        w->g = wd__alloc_floats(m->P + WD__TAIL, "dense gradients", &st);
    }
    if (!st && lp) {
        for (int l = 0; !st && l < m->nlayers; l++)
            if (!(w->lp_in[l] = (uint16_t *)wd__malloc(2 * (size_t)cap * (size_t)m->layer[l].in)))
                st = wd__fail(WD_ERR_NOMEM, "out of memory for bf16 activations");
        if (!st && train && !(w->lp_dz = (uint16_t *)wd__malloc(2 * (size_t)cap * (size_t)widest)))
            st = wd__fail(WD_ERR_NOMEM, "out of memory for bf16 gradients");
    }
    if (st) wd__ws_free(w);
    return st;
}
static wd_status wd__ws_occ_reserve(wd__ws *w, const wd_model *m, int64_t n) {
    if (n <= w->occ_cap) return WD_OK;
    int64_t cap = WD__MAX(n, w->occ_cap * 3 / 2);
    wd_status st = WD_OK;
    int64_t *k = (int64_t *)wd__malloc(sizeof(int64_t) * (size_t)cap);
    float *r = wd__alloc_floats(cap * m->R, "sparse gradients", &st);
    if (!k || st) { wd__free(k); wd__free(r);
        return st ? st : wd__fail(WD_ERR_NOMEM, "out of memory for sparse gradients"); }
    if (w->nocc) { memcpy(k, w->okey, sizeof(int64_t) * (size_t)w->nocc);
        memcpy(r, w->orow, sizeof(float) * (size_t)(w->nocc * m->R)); }
    wd__free(w->okey); wd__free(w->orow);
    w->okey = k; w->orow = r; w->occ_cap = cap;
    return WD_OK;
}
static wd_status wd__ws_own_reserve(wd__ws *w, const wd_model *m, int64_t n) {
    if (n <= w->own_cap) return WD_OK;
    int64_t cap = WD__MAX(n, w->own_cap * 3 / 2);
    wd_status st = WD_OK;
    int64_t *k = (int64_t *)wd__malloc(sizeof(int64_t) * (size_t)cap);
    float *r = wd__alloc_floats(cap * m->R, "merged sparse gradients", &st);
    if (!k || st) { wd__free(k); wd__free(r);
        return st ? st : wd__fail(WD_ERR_NOMEM, "out of memory for merged sparse gradients"); }
    wd__free(w->own_key); wd__free(w->own_row);
    w->own_key = k; w->own_row = r; w->own_cap = cap;
    return WD_OK;
}
static wd_status wd__ws_sort_reserve(wd__ws *w, int64_t n) {
    if (n <= w->sort_cap) return WD_OK;
    int64_t cap = WD__MAX(n, w->sort_cap * 3 / 2);
    wd__occ *s = (wd__occ *)wd__malloc(sizeof(wd__occ) * (size_t)cap),
        *t = (wd__occ *)wd__malloc(sizeof(wd__occ) * (size_t)cap);
    if (!s || !t) { wd__free(s); wd__free(t);
        return wd__fail(WD_ERR_NOMEM, "out of memory for sparse gradient merging"); }
    wd__free(w->sort); wd__free(w->sort_tmp);
    w->sort = s; w->sort_tmp = t; w->sort_cap = cap;
    return WD_OK;
}
// Sorts w->sort[0, n) by key, keeping the order of equal keys (so rows are
// summed in the order they were listed: deterministic, as a comparison sort
// on (key, src, idx) of rows listed in that order). Keys lie in [0, nkeys).
// LSD radix sort: as few linear passes as digits of at most 12 bits allow
// (keys of 23 bits: 2 passes of 12), instead of qsort.
static void wd__sort_occ(wd__ws *w, int64_t n, int64_t nkeys) {
    enum { MAXBITS = 12 };
    uint32_t cnt[1 << MAXBITS];
    int keybits = 1;
    while (keybits < 63 && (nkeys - 1) >> keybits > 0) keybits++;
    int passes = (keybits + MAXBITS - 1) / MAXBITS, bits = (keybits + passes - 1) / passes;
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    wd__occ *a = w->sort, *b = w->sort_tmp;
    for (int p = 0, shift = 0; p < passes; p++, shift += bits) {
        memset(cnt, 0, sizeof(uint32_t) << bits);
        for (int64_t i = 0; i < n; i++) cnt[(uint64_t)a[i].key >> shift & mask]++;
        uint32_t sum = 0;
        for (uint64_t d = 0; d <= mask; d++) { uint32_t c = cnt[d]; cnt[d] = sum; sum += c; }
        for (int64_t i = 0; i < n; i++) b[cnt[(uint64_t)a[i].key >> shift & mask]++] = a[i];
        wd__occ *t = a; a = b; b = t;
    }
    if (a != w->sort) { w->sort_tmp = w->sort; w->sort = a; }   // the sorted array is w->sort
}

// Asks for the table lines sample i of b reads (its slots' first ids): the
// embedding rows (emb) or the wide weights; called a few samples ahead, as
// the rows lie anywhere in tables of hundreds of MB.
static void wd__prefetch_sample(const wd_model *m, const wd_batch *b, int i, int emb) {
    for (int k = 0; k < m->S; k++) {
        int c;
        const uint32_t *ids = wd_batch_sample_ids(b, k, i, &c);
        if (c < 1) continue;
        int64_t key = m->table_off[k] + ids[0];
        if (!emb) { __builtin_prefetch(m->wide + key); continue; }
        uintptr_t p = (uintptr_t)(m->emb + key * m->E) & ~(uintptr_t)63, end = (uintptr_t)(m->emb + (key + 1) * m->E);
        for (; p < end; p += 64) __builtin_prefetch((const void *)p);
    }
}
#define WD__AHEAD 4   // samples
// Forward over samples [i0, i0+n) of b: fills x, the activations (fp32 in
// act; at precision bf16 in lp_in[1..], act holding only the deep logit),
// logits, probs.
// rows >= n: the rows the products compute (a predictor's padded piece,
// wd__piece_rows); rows n.. of x hold finite values and their results are dropped.
static wd_status wd__forward(const wd_model *m, wd__ws *w, const wd_batch *b, int i0, int n, int rows) {
    int D = m->D, S = m->S, E = m->E, IN = m->IN;
    double t0 = wd__now();
    if (wd__deep(m)) {
        for (int i = 0; i < n; i++) {
            if (i + WD__AHEAD < n) wd__prefetch_sample(m, b, i0 + i + WD__AHEAD, 1);
            float *x = w->x + (size_t)i * IN;
            memcpy(x, b->dense + (size_t)(i0 + i) * D, sizeof(float) * (size_t)D);
            for (int k = 0; k < S; k++) {
                float *e = x + D + k * E;
                int c;
                const uint32_t *ids = wd_batch_sample_ids(b, k, i0 + i, &c);
                if (c == 1) { memcpy(e, m->emb + (m->table_off[k] + ids[0]) * E, sizeof(float) * (size_t)E); continue; }
                memset(e, 0, sizeof(float) * (size_t)E);
                for (int j = 0; j < c; j++) {
                    const float *r = m->emb + (m->table_off[k] + ids[j]) * E;
                    for (int q = 0; q < E; q++) e[q] += r[q];
                }
                if (m->d.pooling == WD_POOL_MEAN && c > 1) for (int q = 0; q < E; q++) e[q] /= (float)c;
            }
        }
    }
    double t1 = wd__now();
    const float *in = w->x;
    for (int l = 0; l < m->nlayers; l++) {
        const wd__layer *L = &m->layer[l];
        float *o = w->act[l];
        int relu = l + 1 < m->nlayers;
#ifdef WD_USE_ONEDNN
        if (m->d.precision == WD_PRECISION_BF16) {   // a hidden layer writes the next one's bf16 input itself
            if (l == 0) wd__to_bf16(w->lp_in[0], w->x, (size_t)rows * (size_t)IN);
            WD__TRY(wd__mm(&w->mm, WD__MM_FWD, l, rows, L->out, L->in, relu ? WD__LP_OUT : WD__LP_IN, w->lp_in[l],
                           m->dense_lp + L->w, m->dense + L->b, relu, relu ? (void *)w->lp_in[l + 1] : (void *)o));
        } else WD__TRY(wd__mm(&w->mm, WD__MM_FWD, l, rows, L->out, L->in, 0, in, m->dense + L->w,
                              m->dense + L->b, relu, o));
#else
        for (int i = 0; i < rows; i++) memcpy(o + (size_t)i * L->out, m->dense + L->b, sizeof(float) * (size_t)L->out);
        wd__sgemm(0, 1, rows, L->out, L->in, 1.0f, in, L->in, m->dense + L->w, L->in, 1.0f, o, L->out);
        if (relu) for (size_t q = 0; q < (size_t)rows * (size_t)L->out; q++) o[q] = o[q] > 0.0f ? o[q] : 0.0f;
#endif
        in = o;
    }
    double t2 = wd__now();
    const float *wd_ = m->dense + m->P_mlp;
    for (int i = 0; i < n; i++) {
        float z = 0.0f;
        if (wd__wide(m)) {
            if (i + WD__AHEAD < n) wd__prefetch_sample(m, b, i0 + i + WD__AHEAD, 0);
            z = wd_[D];
            const float *xd = b->dense + (size_t)(i0 + i) * D;
            for (int j = 0; j < D; j++) z += wd_[j] * xd[j];
            for (int k = 0; k < S; k++) {
                int c;
                const uint32_t *ids = wd_batch_sample_ids(b, k, i0 + i, &c);
                float s = 0.0f;
                for (int j = 0; j < c; j++) s += m->wide[m->table_off[k] + ids[j]];
                z += (m->d.pooling == WD_POOL_MEAN && c > 1) ? s / (float)c : s;
            }
            for (int c = 0; c < m->d.ncross; c++) {
                uint32_t a = b->ids[m->d.cross[c][0]][i0 + i], bb = b->ids[m->d.cross[c][1]][i0 + i];
                z += m->wide[m->table_off[S + c] + wd_cross_hash(a, bb, c, m->d.cross_buckets)];
            }
        }
        w->wlogit[i] = z;
        float lg = z + (m->nlayers ? w->act[m->nlayers - 1][i] : 0.0f);
        w->logit[i] = lg;
        w->prob[i] = 1.0f / (1.0f + expf(-lg));
    }
    w->t_embed += t1 - t0;
    w->t_fwd += t2 - t1;
    w->t_wide += wd__now() - t2;
    return WD_OK;
}

// The backward pass's elementwise loops, written with the compiler's vector
// extension: 4 floats, one SSE register on baseline x86-64 (wider vectors
// would be split, and their comparisons done one lane at a time) or NEON on
// arm64, since -O2 does not vectorize these loops. Each lane keeps the scalar
// loop's order of operations, so results are bit-identical to it.
typedef float wd__f4 __attribute__((vector_size(16)));
typedef int32_t wd__i4 __attribute__((vector_size(16)));
typedef uint32_t wd__u4 __attribute__((vector_size(16)));
typedef uint16_t wd__h4 __attribute__((vector_size(8)));
// The gradient at a hidden layer's output d (n rows of `width`), just made by
// the GEMM above it, in one pass over the rows (no pass of its own for each
// step, and each row is in L1 for all of them): ReLU' in place (0 where the
// layer's activation is not positive), the row added into the layer's bias
// gradient gb (each column summed in row order, as a plain loop), and, at
// precision bf16, the row's bf16 copy lp for the next GEMMs. The activations
// are fp32 (a) or, at precision bf16, the bf16 ones the forward pass wrote
// (a16): a positive subnormal activation is 0 there, so its gradient is 0,
// as the next layer saw 0.
static void wd__hidden_grad(float *d, const float *a, const uint16_t *a16, float *gb, uint16_t *lp, int n, int width) {
    const wd__f4 zero = {0, 0, 0, 0};
    int w4 = width & ~3;
    for (int i = 0; i < n; i++) {
        float *dr = d + (size_t)i * (size_t)width;
        size_t row = (size_t)i * (size_t)width;
        for (int o = 0; o < w4; o += 4) {
            wd__f4 x, av, acc;
            wd__i4 xi;
            if (a) memcpy(&av, a + row + o, 16);
            else {   // bf16 -> fp32: the bits in the upper half
                wd__h4 h;
                memcpy(&h, a16 + row + o, 8);
                wd__u4 u = {h[0], h[1], h[2], h[3]};
                u <<= 16;
                memcpy(&av, &u, 16);
            }
            memcpy(&x, dr + o, 16);
            memcpy(&xi, &x, 16);
            xi &= av > zero;
            memcpy(&x, &xi, 16);
            memcpy(dr + o, &x, 16);
            memcpy(&acc, gb + o, 16);
            acc += x;
            memcpy(gb + o, &acc, 16);
        }
        for (int o = w4; o < width; o++) {
            float av;
            if (a) av = a[row + o];
            else { uint32_t u = (uint32_t)a16[row + o] << 16; memcpy(&av, &u, 4); }
            dr[o] = av > 0.0f ? dr[o] : 0.0f;
            gb[o] += dr[o];
        }
        if (lp) wd__to_bf16(lp + row, dr, (size_t)width);
    }
}

// Log loss from the logit, stable for large |logit|.
static double wd__logloss1(float logit, float y) {
    double z = logit;
    return (z > 0 ? z : 0) - z * y + log1p(exp(-fabs(z)));
}

// Backward over samples [i0, i0+n) after wd__forward: dense gradient into
// w->g (unscaled sums over samples: loss sum and weight sum appended), sparse
// gradient rows into okey/orow. Every gradient is d(sum_i w_i loss_i).
static wd_status wd__backward(const wd_model *m, wd__ws *w, const wd_batch *b, int i0, int n) {
    int D = m->D, S = m->S, E = m->E, IN = m->IN, R = m->R;
    double t0 = wd__now();
    float *g = w->g;
    memset(g, 0, sizeof(float) * (size_t)(m->P + WD__TAIL));
    double loss = 0, wsum = 0;
    for (int i = 0; i < n; i++) {
        float y = b->label[i0 + i], wt = b->weight[i0 + i];
        w->dlogit[i] = wt * (w->prob[i] - y);
        loss += wt * wd__logloss1(w->logit[i], y);
        wsum += wt;
    }
    g[m->P] = (float)loss;
    g[m->P + 1] = (float)wsum;
    // MLP, top to bottom; dz lives in da, the next one is built in db
    // (at precision bf16 the GEMMs read dz's bf16 copy lp_dz, made with it)
    float *dz = w->da, *dn = w->db;
    int lp = m->d.precision == WD_PRECISION_BF16;
    if (m->nlayers) {   // the top layer's output is the deep logit: its bias gradient is their sum
        float *gb = g + m->layer[m->nlayers - 1].b;
        for (int i = 0; i < n; i++) { dz[i] = w->dlogit[i]; *gb += dz[i]; }
        if (lp) wd__to_bf16(w->lp_dz, dz, (size_t)n);
    }
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const wd__layer *L = &m->layer[l];
        const float *a_in = l ? w->act[l - 1] : w->x;
#ifdef WD_USE_ONEDNN
        const void *dzp = lp ? (const void *)w->lp_dz : (const void *)dz;
        WD__TRY(wd__mm(&w->mm, WD__MM_WGRAD, l, L->out, L->in, n, lp ? WD__LP_IN : 0, dzp,
                       lp ? (const void *)w->lp_in[l] : (const void *)a_in, NULL, 0, g + L->w));   // dW = dz^T a
        WD__TRY(wd__mm(&w->mm, WD__MM_DGRAD, l, n, L->in, L->out, lp ? WD__LP_IN : 0, dzp,
                       lp ? (const void *)(m->dense_lp + L->w) : (const void *)(m->dense + L->w),
                       NULL, 0, dn));   // da = dz W
#else
        wd__sgemm(1, 0, L->out, L->in, n, 1.0f, dz, L->out, a_in, L->in, 1.0f, g + L->w, L->in);   // dW += dz^T a
        wd__sgemm(0, 0, n, L->in, L->out, 1.0f, dz, L->out, m->dense + L->w, L->in, 0.0f, dn, L->in);   // da = dz W
#endif
        if (l) wd__hidden_grad(dn, lp ? NULL : a_in, lp ? w->lp_in[l] : NULL, g + m->layer[l - 1].b,
                               lp ? w->lp_dz : NULL, n, L->in);
        float *t = dz; dz = dn; dn = t;
    }
    const float *dx = dz;   // (n, I) when deep: gradient of the input row
    double t1 = wd__now();
    // wide dense part
    if (wd__wide(m)) {
        float *gw = g + m->P_mlp;
        for (int i = 0; i < n; i++) {
            const float *xd = b->dense + (size_t)(i0 + i) * D;
            float dl = w->dlogit[i];
            for (int j = 0; j < D; j++) gw[j] += dl * xd[j];
            gw[D] += dl;
        }
    }
    // sparse rows: one per id occurrence (slot tables) and per cross
    int64_t need = 0;
    for (int k = 0; k < S; k++) {
        if (b->kind[k] == WD_MULTI_HOT) need += b->offs[k][i0 + n] - b->offs[k][i0];
        else need += n;
    }
    need += (int64_t)n * m->d.ncross;
    WD__TRY(wd__ws_occ_reserve(w, m, need));
    int64_t q = 0;
    for (int i = 0; i < n; i++) {
        float dl = wd__wide(m) ? w->dlogit[i] : 0.0f;
        for (int k = 0; k < S; k++) {
            int c;
            const uint32_t *ids = wd_batch_sample_ids(b, k, i0 + i, &c);
            float scale = (m->d.pooling == WD_POOL_MEAN && c > 1) ? 1.0f / (float)c : 1.0f;
            for (int j = 0; j < c; j++, q++) {
                w->okey[q] = m->table_off[k] + ids[j];
                float *r = w->orow + q * R;
                r[0] = dl * scale;
                if (R > 1) { const float *src = dx + (size_t)i * IN + D + k * E;
                    for (int e = 0; e < E; e++) r[1 + e] = src[e] * scale; }
            }
        }
        for (int c = 0; c < m->d.ncross; c++, q++) {
            uint32_t a = b->ids[m->d.cross[c][0]][i0 + i], bb = b->ids[m->d.cross[c][1]][i0 + i];
            w->okey[q] = m->table_off[S + c] + wd_cross_hash(a, bb, c, m->d.cross_buckets);
            float *r = w->orow + q * R;
            r[0] = dl;
            for (int e = 1; e < R; e++) r[e] = 0.0f;
        }
    }
    w->nocc = q;
    w->t_bwd += t1 - t0;
    w->t_wide += wd__now() - t1;
    return WD_OK;
}


// Merges this worker's rows by key (sum) into w->pack: i64 count, keys, rows.
static wd_status wd__merge_local(const wd_model *m, wd__ws *w) {
    int R = m->R;
    WD__TRY(wd__ws_sort_reserve(w, w->nocc));
    for (int64_t q = 0; q < w->nocc; q++) { w->sort[q].key = w->okey[q]; w->sort[q].src = 0;
        w->sort[q].idx = (int32_t)q; }
    double ts = wd__now();
    wd__sort_occ(w, w->nocc, m->table_off[m->ntables]);
    w->t_sort += wd__now() - ts;
    int64_t u = 0;
    for (int64_t q = 0; q < w->nocc; q++) u += q == 0 || w->sort[q].key != w->sort[q - 1].key;
    size_t bytes = 8 + 8 * (size_t)u + 4 * (size_t)u * (size_t)R;
    w->pack.len = 0;
    WD__TRY(wd__buf_reserve(&w->pack, bytes));
    uint8_t *p = w->pack.p;
    memcpy(p, &u, 8);
    int64_t *keys = (int64_t *)(p + 8);
    float *rows = (float *)(p + 8 + 8 * (size_t)u);
    int64_t o = -1;
    for (int64_t q = 0; q < w->nocc; q++) {
        const float *src = w->orow + (int64_t)w->sort[q].idx * R;
        if (q == 0 || w->sort[q].key != w->sort[q - 1].key) {
            o++;
            keys[o] = w->sort[q].key;
            memcpy(rows + o * R, src, sizeof(float) * (size_t)R);
        } else for (int e = 0; e < R; e++) rows[o * R + e] += src[e];
    }
    w->pack.len = bytes;
    return WD_OK;
}

static int wd__owner(int64_t key, int nranks) {
    return (int)(((uint64_t)key * 0x9E3779B97F4A7C15ull >> 32) % (uint64_t)nranks); }

// Applies one merged sparse row (already scaled to the batch mean); counts
// parameters the update left non-finite into *bad.
static void wd__sparse_update(wd_model *m, const wd_opt *o, int64_t key, const float *r, int *bad) {
    if (wd__wide(m)) {
        wd_opt_ftrl(&m->wide[key], &m->wide_z[key], &m->wide_n[key], r[0], o);
        *bad += !isfinite(m->wide[key]);
    }
    if (m->R > 1 && key < m->emb_rows) {
        int E = m->E;
        float *e = m->emb + key * E, *s1 = m->emb_s1 + key * E, *s2 = m->emb_s2 ? m->emb_s2 + key * E : NULL;
        for (int j = 0; j < E; j++) { wd_opt_deep(o, &e[j], &s1[j], s2 ? &s2[j] : NULL, r[1 + j]);
            *bad += !isfinite(e[j]); }
    }
}

// The largest gradient a step applies: larger ones (from inputs near 1e25,
// say) would overflow the optimizer state, so the whole step is refused.
#define WD__GRAD_MAX 1e15f
static int wd__grad_bad(float g) { return !(fabsf(g) <= WD__GRAD_MAX); }   // NaN too

// Rank r's share of a step: the dense range [P*r/n, P*(r+1)/n) and the
// sparse keys it owns, merged in rank order from every rank's rows into
// w->own_key / w->own_row and scaled to the batch mean (inv_w). *bad_out
// counts gradient values that are not finite or exceed WD__GRAD_MAX.
static wd_status wd__gather_owned(const wd_model *m, wd__ws *w, const float *g, float inv_w, int rank, int nranks,
                                  const void *const *views, int nviews, int *bad_out) {
    int R = m->R, bad = 0;   // counted here, added to *bad_out once: the workers' counters share a cache line
    int64_t a = m->P * rank / nranks, e = m->P * (rank + 1) / nranks;
    for (int64_t i = a; i < e; i++) bad += wd__grad_bad(g[i] * inv_w);
    int64_t total = 0;
    for (int q = 0; q < nviews; q++) { int64_t c; memcpy(&c, views[q], 8); total += c; }
    WD__TRY(wd__ws_sort_reserve(w, total));
    WD__TRY(wd__ws_own_reserve(w, m, total));
    int64_t n = 0;
    for (int q = 0; q < nviews; q++) {
        int64_t c;
        memcpy(&c, views[q], 8);
        const int64_t *keys = (const int64_t *)((const uint8_t *)views[q] + 8);
        for (int64_t i = 0; i < c; i++)
            if (nranks == 1 || wd__owner(keys[i], nranks) == rank) { w->sort[n].key = keys[i]; w->sort[n].src = q;
                w->sort[n].idx = (int32_t)i; n++; }
    }
    if (nviews > 1) wd__sort_occ(w, n, m->table_off[m->ntables]);   // one view is sorted already
    int64_t u = 0;
    for (int64_t i = 0; i < n; u++) {
        int64_t key = w->sort[i].key;
        float *acc = w->own_row + u * R;
        for (int j = 0; j < R; j++) acc[j] = 0.0f;
        for (; i < n && w->sort[i].key == key; i++) {
            int64_t c;
            const uint8_t *v = (const uint8_t *)views[w->sort[i].src];
            memcpy(&c, v, 8);
            const float *row = (const float *)(v + 8 + 8 * (size_t)c) + (int64_t)w->sort[i].idx * R;
            for (int j = 0; j < R; j++) acc[j] += row[j];
        }
        for (int j = 0; j < R; j++) { acc[j] *= inv_w; bad += wd__grad_bad(acc[j]); }
        w->own_key[u] = key;
    }
    w->nown = u;
    *bad_out += bad;
    return WD_OK;
}
// Applies what wd__gather_owned collected with the rules of step `step`;
// *bad_out counts parameters left non-finite (the gradient check should make it 0).
static void wd__apply_owned(wd_model *m, const wd__ws *w, const float *g, float inv_w, int rank, int nranks,
                            int64_t step, int *bad_out) {
    wd_opt o = wd__opt(m, step);
    int bad = 0;   // added to *bad_out once: the workers' counters share a cache line
    int64_t a = m->P * rank / nranks, e = m->P * (rank + 1) / nranks;
    for (int64_t i = a; i < e; i++) {
        float gi = g[i] * inv_w;
        if (i < m->P_mlp) wd_opt_deep(&o, &m->dense[i], &m->dense_s1[i], &m->dense_s2[i], gi);
        else if (wd__wide(m)) wd_opt_ftrl(&m->dense[i], &m->dense_s1[i], &m->dense_s2[i], gi, &o);
        bad += !isfinite(m->dense[i]);
    }
    if (m->dense_lp && a < m->P_mlp)
        wd__to_bf16(m->dense_lp + a, m->dense + a, (size_t)(WD__MIN(e, m->P_mlp) - a));   // the bf16 copy stays current
    // the rows lie anywhere in tables of hundreds of MB: ask for row u+16's
    // lines while row u is updated (-20% optimizer time on the bench workload)
    for (int64_t u = 0; u < w->nown; u++) {
        if (u + 16 < w->nown) {
            int64_t k = w->own_key[u + 16];
            if (wd__wide(m)) { __builtin_prefetch(&m->wide[k], 1); __builtin_prefetch(&m->wide_z[k], 1);
                __builtin_prefetch(&m->wide_n[k], 1); }
            if (m->R > 1 && k < m->emb_rows) {   // every 64-byte line a row touches (rows need not start on one)
                float *t[3] = {m->emb, m->emb_s1, m->emb_s2};
                for (int q = 0; q < 3 && t[q]; q++) {
                    uintptr_t p = (uintptr_t)(t[q] + k * m->E) & ~(uintptr_t)63,
                        end = (uintptr_t)(t[q] + (k + 1) * m->E);
                    for (; p < end; p += 64) __builtin_prefetch((const void *)p, 1);
                }
            }
        }
        wd__sparse_update(m, &o, w->own_key[u], w->own_row + u * m->R, &bad);
    }
    *bad_out += bad;
}

// ---- 14. Communicator ------------------------------------------------------------------------
// Two rules of every communicator (declared in section 17: widedeep_cuda.cu and wd-mpi use them too):
// how a rank's failure is said, and how long a rank waits for the others.
WDDEF void wd_rank_failure(char *buf, size_t n, int rank, wd_status st, const char *why) {
    if (n == 0) return;
    int k = snprintf(buf, n, "rank %d failed (%s): ", rank, wd_status_string(st));
    size_t at = k < 0 ? 0 : WD__MIN((size_t)k, n - 1);
    size_t len = why ? strnlen(why, n - 1 - at) : 0;   // the reason, cut where buf ends
    memcpy(buf + at, why ? why : "", len);
    buf[at + len] = 0;
}
WDDEF double wd_comm_timeout(void) {
    const char *v = getenv("WD_COMM_TIMEOUT");
    double s = v && *v ? atof(v) : 0.0;
    return s > 0 ? WD__MIN(s, 1e9) : WD_COMM_TIMEOUT_DEFAULT;   // (NaN is not > 0)
}
typedef struct wd__hub {
    int n;
    double timeout;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    int64_t generation;
    int aborted;
    wd_status abort_st;
    char why[400];
    float **bufs;                   // allreduce: each rank's buffer
    const void **gptr;              // allgather views
    size_t *gsize;
    wd_comm *ranks;
} wd__hub;

static wd_status wd__hub_aborted(wd__hub *h) { return wd__fail(WD_ERR_ABORTED, "%s", h->why); }
static wd_status wd__comm_barrier(wd_comm *c) {
    wd__hub *h = (wd__hub *)c->impl;
    pthread_mutex_lock(&h->mu);
    if (h->aborted) { pthread_mutex_unlock(&h->mu); return wd__hub_aborted(h); }
    int64_t gen = h->generation;
    if (++h->arrived == h->n) {
        h->arrived = 0;
        h->generation++;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
        return WD_OK;
    }
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    double end = (double)dl.tv_sec + 1e-9 * (double)dl.tv_nsec + h->timeout;
    dl.tv_sec = (time_t)end;
    dl.tv_nsec = (long)((end - (double)dl.tv_sec) * 1e9);
    while (h->generation == gen && !h->aborted) {
        if (pthread_cond_timedwait(&h->cv, &h->mu, &dl) == ETIMEDOUT && h->generation == gen && !h->aborted) {
            h->aborted = 1;
            h->abort_st = WD_ERR_ABORTED;
            snprintf(h->why, sizeof h->why, "rank %d waited %.1f s in a collective for %d other rank(s): timeout",
                     c->rank, h->timeout, h->n - h->arrived);
            pthread_cond_broadcast(&h->cv);
        }
    }
    wd_status st = h->generation == gen && h->aborted ? wd__hub_aborted(h) : WD_OK;
    pthread_mutex_unlock(&h->mu);
    return st;
}
static void wd__comm_abort(wd_comm *c, wd_status st, const char *why) {
    wd__hub *h = (wd__hub *)c->impl;
    pthread_mutex_lock(&h->mu);
    if (!h->aborted) {
        h->aborted = 1;
        h->abort_st = st;
        wd_rank_failure(h->why, sizeof h->why, c->rank, st, why);
    }
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}
// Ring allreduce over shared memory: in step s of the reduce-scatter, rank r
// adds chunk (r-s-1) of its left neighbour's buffer into its own; after n-1
// steps rank r holds the full sum of chunk (r+1); the allgather passes the
// finished chunks around the ring the same way.
static wd_status wd__comm_allreduce(wd_comm *c, float *buf, size_t count) {
    wd__hub *h = (wd__hub *)c->impl;
    int n = h->n, r = c->rank;
    h->bufs[r] = buf;
    WD__TRY(wd__comm_barrier(c));
    if (n == 1) return WD_OK;
    const float *left = h->bufs[(r + n - 1) % n];
    for (int s = 0; s < n - 1; s++) {
        int ch = ((r - s - 1) % n + n) % n;
        size_t a = count * (size_t)ch / (size_t)n, e = count * (size_t)(ch + 1) / (size_t)n;
        for (size_t i = a; i < e; i++) buf[i] += left[i];
        WD__TRY(wd__comm_barrier(c));
    }
    for (int s = 0; s < n - 1; s++) {
        int ch = ((r - s) % n + n) % n;
        size_t a = count * (size_t)ch / (size_t)n, e = count * (size_t)(ch + 1) / (size_t)n;
        memcpy(buf + a, left + a, sizeof(float) * (e - a));
        WD__TRY(wd__comm_barrier(c));
    }
    return WD_OK;
}
static wd_status wd__comm_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    wd__hub *h = (wd__hub *)c->impl;
    h->gptr[c->rank] = mine;
    h->gsize[c->rank] = bytes;
    WD__TRY(wd__comm_barrier(c));
    for (int q = 0; q < h->n; q++) { all[q] = h->gptr[q]; if (sizes) sizes[q] = h->gsize[q]; }
    return WD_OK;
}
static const wd_comm_ops wd__local_ops = {wd__comm_allreduce, wd__comm_allgather, wd__comm_barrier, wd__comm_abort,
                                          NULL, NULL, NULL};

WDDEF wd_status wd_comm_local_create(int nranks, double timeout_s, wd_comm **ranks) {
    if (nranks < 1 || nranks > 4096 || !ranks)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_comm_local_create: 1..4096 ranks");
    wd__hub *h = WD__NEW(wd__hub);
    if (!h) return wd__fail(WD_ERR_NOMEM, "out of memory");
    h->n = nranks;
    h->timeout = timeout_s > 0 ? timeout_s : wd_comm_timeout();
    h->bufs = (float **)wd__calloc(sizeof(float *) * (size_t)nranks);
    h->gptr = (const void **)wd__calloc(sizeof(void *) * (size_t)nranks);
    h->gsize = (size_t *)wd__calloc(sizeof(size_t) * (size_t)nranks);
    h->ranks = (wd_comm *)wd__calloc(sizeof(wd_comm) * (size_t)nranks);
    if (!h->bufs || !h->gptr || !h->gsize || !h->ranks) {
        wd__free(h->bufs); wd__free(h->gptr); wd__free(h->gsize); wd__free(h->ranks); wd__free(h);
        return wd__fail(WD_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    for (int r = 0; r < nranks; r++) {
        h->ranks[r].ops = &wd__local_ops; h->ranks[r].rank = r; h->ranks[r].size = nranks; h->ranks[r].impl = h;
        ranks[r] = &h->ranks[r];
    }
    return WD_OK;
}
WDDEF void wd_comm_local_destroy(wd_comm **ranks, int nranks) {
    if (!ranks || nranks < 1 || !ranks[0]) return;
    wd__hub *h = (wd__hub *)ranks[0]->impl;
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    wd__free(h->bufs); wd__free(h->gptr); wd__free(h->gsize); wd__free(h->ranks); wd__free(h);
    for (int r = 0; r < nranks; r++) ranks[r] = NULL;
}

// ---- workers of several processes: T threads here, one rank of a host communicator per process ----
// The CPU backend's workers in a job of several processes: worker t of
// process p is rank first[p] + t of first[P]. A sum is the workers' ring
// sum here, then worker 0's sum between the processes, copied by the others;
// an allgather concatenates this process's rows (a header of T byte counts,
// then each worker's bytes at an 8-aligned offset), allgathers that between
// the processes and hands out every worker's view. Worker 0 alone calls the
// processes' communicator (it runs on the thread that called wd_train).
typedef struct wd__hier {
    wd_comm *ext;                   // between the processes
    wd_comm **local;                // (T) between this process's workers
    int T, total;
    int *first;                     // (P + 1) the processes' first worker ranks
    wd_comm *ranks;                 // (T)
    int32_t T32;                    // T, sent at creation (kept: others may read it until our next collective)
    float *buf0;                    // sum: worker 0's buffer, the result
    const void **pv;                // (P) allgather: each process's bytes
    size_t *ps;
    const void **views;             // (total) every worker's bytes
    size_t *sizes;
    wd__buf cat;                    // this process's workers' bytes, concatenated
} wd__hier;
static size_t wd__align8(size_t n) { return (n + 7) & ~(size_t)7; }
static int wd__hier_worker(const wd_comm *c) {
    const wd__hier *h = (const wd__hier *)c->impl;
    return c->rank - h->first[h->ext->rank];
}
static wd_status wd__hier_ext_failed(wd_comm *lc, wd_status st) {
    lc->ops->abort(lc, st, wd_last_error());   // this process's other workers stop waiting
    return st;
}
static wd_status wd__hier_allreduce(wd_comm *c, float *buf, size_t n) {
    wd__hier *h = (wd__hier *)c->impl;
    int t = wd__hier_worker(c);
    wd_comm *lc = h->local[t];
    WD__TRY(lc->ops->allreduce_sum(lc, buf, n));
    if (t == 0) {
        h->buf0 = buf;
        wd_status st = h->ext->ops->allreduce_sum(h->ext, buf, n);
        if (st) return wd__hier_ext_failed(lc, st);
    }
    WD__TRY(lc->ops->barrier(lc));
    if (t) memcpy(buf, h->buf0, sizeof(float) * n);   // worker 0 leaves it alone until its
                                                      // next collective, which waits for us
    return WD_OK;
}
static wd_status wd__hier_exchange(wd__hier *h, const void *const *lv, const size_t *ls) {
    size_t len = 8 * (size_t)(1 + h->T);
    for (int t = 0; t < h->T; t++) len = wd__align8(len) + ls[t];
    h->cat.len = 0;
    WD__TRY(wd__buf_reserve(&h->cat, len));
    uint8_t *p = h->cat.p;
    uint64_t u = (uint64_t)h->T;
    memcpy(p, &u, 8);
    size_t off = 8 * (size_t)(1 + h->T);
    for (int t = 0; t < h->T; t++) {
        u = ls[t];
        memcpy(p + 8 * (size_t)(1 + t), &u, 8);
        size_t a = wd__align8(off);
        memset(p + off, 0, a - off);
        if (ls[t]) memcpy(p + a, lv[t], ls[t]);
        off = a + ls[t];
    }
    h->cat.len = len;
    wd_status st = h->ext->ops->allgather(h->ext, h->cat.p, len, h->pv, h->ps);
    if (st) return wd__fail(st, "the sparse rows' exchange between processes (%zu bytes from this one): %s", len,
                            wd_last_error());
    for (int q = 0; q < h->ext->size; q++) {   // every process's header, checked against what it sent
        const uint8_t *v = (const uint8_t *)h->pv[q];
        int Tq = h->first[q + 1] - h->first[q];
        uint64_t tq = 0;
        if (h->ps[q] >= 8) memcpy(&tq, v, 8);
        size_t o = 8 * (size_t)(1 + Tq);
        if (h->ps[q] < o || tq != (uint64_t)Tq)
            return wd__fail(WD_ERR_INTERNAL,
                            "process rank %d sent %zu bytes of sparse rows with a header for %llu workers; it has %d",
                            q, h->ps[q], (unsigned long long)tq, Tq);
        for (int t = 0; t < Tq; t++) {
            uint64_t sz;
            memcpy(&sz, v + 8 * (size_t)(1 + t), 8);
            o = wd__align8(o);
            if (sz > h->ps[q] - WD__MIN(o, h->ps[q]))
                return wd__fail(WD_ERR_INTERNAL,
                                "process rank %d: worker %d's %llu bytes of sparse rows overrun its %zu", q, t,
                                (unsigned long long)sz, h->ps[q]);
            h->views[h->first[q] + t] = v + o;
            h->sizes[h->first[q] + t] = (size_t)sz;
            o += (size_t)sz;
        }
    }
    return WD_OK;
}
static wd_status wd__hier_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    wd__hier *h = (wd__hier *)c->impl;
    int t = wd__hier_worker(c);
    wd_comm *lc = h->local[t];
    const void *lv[256];
    size_t ls[256];
    WD__TRY(lc->ops->allgather(lc, mine, bytes, lv, ls));
    if (t == 0) {
        wd_status st = wd__hier_exchange(h, lv, ls);
        if (st) return wd__hier_ext_failed(lc, st);
    }
    WD__TRY(lc->ops->barrier(lc));
    for (int q = 0; q < h->total; q++) { all[q] = h->views[q]; if (sizes) sizes[q] = h->sizes[q]; }
    return WD_OK;
}
static wd_status wd__hier_barrier(wd_comm *c) {
    wd__hier *h = (wd__hier *)c->impl;
    int t = wd__hier_worker(c);
    wd_comm *lc = h->local[t];
    WD__TRY(lc->ops->barrier(lc));
    if (t == 0) {
        wd_status st = h->ext->ops->barrier(h->ext);
        if (st) return wd__hier_ext_failed(lc, st);
    }
    return lc->ops->barrier(lc);
}
static void wd__hier_abort(wd_comm *c, wd_status st, const char *why) {
    wd__hier *h = (wd__hier *)c->impl;
    int t = wd__hier_worker(c);
    h->local[t]->ops->abort(h->local[t], st, why);
    if (t == 0) h->ext->ops->abort(h->ext, st, why);   // other workers' failures reach the
                                                       // processes through wd_train's rank
}
static const wd_comm_ops wd__hier_ops = {wd__hier_allreduce, wd__hier_allgather, wd__hier_barrier, wd__hier_abort, NULL,
                                         NULL, NULL};
static void wd__hier_destroy(wd__hier *h) {
    if (!h) return;
    wd__free(h->first); wd__free(h->ranks); wd__free(h->pv); wd__free(h->ps); wd__free(h->views); wd__free(h->sizes);
    wd__free(h->cat.p);
    wd__free(h);
}
// Called by every process at once (an allgather of the worker counts); a
// process that cannot join it aborts ext, so that no other waits for it.
static wd_status wd__hier_create(wd_comm *ext, wd_comm **local, int T, wd__hier **out) {
    *out = NULL;
    if (ext->ops->stream_allreduce_sum) {
        ext->ops->abort(ext, WD_ERR_INVALID_ARG, "the CPU device needs a host communicator");
        return wd__fail(WD_ERR_INVALID_ARG,
                        "the CPU device needs a host communicator (wd_comm_mpi_create), not a device one");
    }
    wd__hier *h = WD__NEW(wd__hier);
    if (!h) { ext->ops->abort(ext, WD_ERR_NOMEM, "out of memory for the processes' communicator");
        return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    int P = ext->size;
    h->ext = ext; h->local = local; h->T = T;
    h->first = (int *)wd__calloc(sizeof(int) * (size_t)(P + 1));
    h->ranks = (wd_comm *)wd__calloc(sizeof(wd_comm) * (size_t)T);
    h->pv = (const void **)wd__calloc(sizeof(void *) * (size_t)P);
    h->ps = (size_t *)wd__calloc(sizeof(size_t) * (size_t)P);
    if (!h->first || !h->ranks || !h->pv || !h->ps) {
        wd__hier_destroy(h);
        ext->ops->abort(ext, WD_ERR_NOMEM, "out of memory for the processes' communicator");
        return wd__fail(WD_ERR_NOMEM, "out of memory");
    }
    h->T32 = T;
    wd_status st = ext->ops->allgather(ext, &h->T32, sizeof h->T32, h->pv, h->ps);
    if (st) st = wd__fail(st, "the processes' worker counts: %s", wd_last_error());
    else {
        for (int q = 0; !st && q < P; q++) {
            int32_t tq = 0;
            if (h->ps[q] == sizeof tq) memcpy(&tq, h->pv[q], sizeof tq);
            if (tq < 1 || tq > 256 || h->first[q] > 1000000)
                st = wd__fail(WD_ERR_INTERNAL, "process rank %d reports %d workers", q, (int)tq);
            else h->first[q + 1] = h->first[q] + tq;
        }
        // the views may be the other processes' own counts (a shared-memory
        // communicator), which their next collective may overwrite: nobody
        // leaves before everyone has read them
        wd_status bst = ext->ops->barrier(ext);
        if (!st && bst) st = wd__fail(bst, "the processes' worker counts: %s", wd_last_error());
    }
    if (!st) {
        h->total = h->first[P];
        h->views = (const void **)wd__calloc(sizeof(void *) * (size_t)h->total);
        h->sizes = (size_t *)wd__calloc(sizeof(size_t) * (size_t)h->total);
        if (!h->views || !h->sizes) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    }
    if (st) { wd__hier_destroy(h); return st; }
    for (int t = 0; t < T; t++) { h->ranks[t].ops = &wd__hier_ops; h->ranks[t].rank = h->first[ext->rank] + t;
        h->ranks[t].size = h->total; h->ranks[t].impl = h; }
    *out = h;
    return WD_OK;
}

#ifdef WD_USE_MPI
// ---- MPI: one rank per process ----
#define WD__MPI_NOTE 400            // an abort notice: the reason, NUL-padded
#define WD__MPI_TAG 7
#define WD__MPI_ASK 8               // a roll call (a rank that waited past the timeout asks who is there)
#define WD__MPI_HERE 9              // its answer
enum { WD__MPI_SUMS, WD__MPI_GATHERS, WD__MPI_ROUNDS };   // MPI_Iallreduce calls, whole
                                                          // MPI_Iallgatherv, rounds of broadcasts
typedef struct wd__mpi {
    wd_comm self;
    MPI_Comm comm, ctl;             // collectives; abort notices
    double timeout;
    pid_t parent;                   // the launcher (mpirun, orted, slurmstepd): gone, the job is
    int aborted;
    char why[WD__MPI_NOTE];         // the reason, also the notice sent (never freed: wd_comm_mpi_destroy)
    size_t chunk;                   // the most bytes one MPI call moves per rank (WD_MPI_CHUNK_BYTES)
    long long *lens;                // (size) allgather: every rank's bytes
    MPI_Request *rq;                // (size) allgather: a round's broadcasts
    int *cnt, *dsp;                 // (size) allgather in one MPI_Iallgatherv: counts, displacements
    long long calls[3];             // MPI calls that moved data (tests read them): WD__MPI_SUMS, _GATHERS, _ROUNDS
    uint8_t *recv;
    size_t recv_cap;
    // A collective that an abort left pending (MPI can neither finish nor cancel it) writes only the
    // communicator's own buffers: the sum's chunk staged in sum, this rank's count in my, recv, lens
    long long my;                   // allgather: this rank's byte count
    float *sum;                     // allreduce: the chunk summed (of at most chunk bytes)
    size_t sum_cap;                 // (floats)
} wd__mpi;
// Sends a notice, its request freed at once: from memory never freed (MPI
// may read it until the job ends): an abort's from h->why (a communicator
// that aborted is not freed), a roll call and its answer (a rank that never
// aborts may answer) from wd__mpi_here (their bytes are not read: only their source).
static const int wd__mpi_here = 1;
static void wd__mpi_send(wd__mpi *h, const void *buf, int n, MPI_Datatype type, int q, int tag) {
    MPI_Request rq;
    if (MPI_Isend(buf, n, type, q, tag, h->ctl, &rq) == MPI_SUCCESS) MPI_Request_free(&rq);
}

static void wd__mpi_abort(wd_comm *c, wd_status st, const char *why) {
    wd__mpi *h = (wd__mpi *)c->impl;
    if (h->aborted) return;
    h->aborted = 1;
    memset(h->why, 0, sizeof h->why);
    wd_rank_failure(h->why, sizeof h->why, c->rank, st, why);
    for (int q = 0; q < c->size; q++)   // started at once, whatever the others do; why is not written again
        if (q != c->rank) wd__mpi_send(h, h->why, WD__MPI_NOTE, MPI_CHAR, q, WD__MPI_TAG);
}
// A roll call from a rank that waited past its timeout: answered at once
// (any rank polling a collective is there; a stopped one is not).
static void wd__mpi_answer(wd__mpi *h) {
    int flag = 0, x = 0;
    MPI_Status s;
    while (MPI_Iprobe(MPI_ANY_SOURCE, WD__MPI_ASK, h->ctl, &flag, &s) == MPI_SUCCESS && flag) {
        if (MPI_Recv(&x, 1, MPI_INT, s.MPI_SOURCE, WD__MPI_ASK, h->ctl, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
        wd__mpi_send(h, &wd__mpi_here, 1, MPI_INT, s.MPI_SOURCE, WD__MPI_HERE);
    }
}
// The timeout's reason, naming the ranks that do not answer a roll call
// within `grace` seconds into why: a stopped or hung process, or one busy
// outside the collectives (a checkpoint write, a validation) for longer than
// the timeout; the others, waiting in a collective, answer at once.
static void wd__mpi_rollcall(wd_comm *c, const char *what, double waited, double grace, char *why, size_t n) {
    wd__mpi *h = (wd__mpi *)c->impl;
    unsigned char *here = (unsigned char *)wd__calloc((size_t)c->size);
    int x = 0, flag = 0, missing = 0;
    size_t k = (size_t)snprintf(why, n, "waited %.0f s in %s for the other ranks: timeout", waited, what);
    if (!here) return;
    here[c->rank] = 1;
    for (int q = 0; q < c->size; q++)
        if (q != c->rank) wd__mpi_send(h, &wd__mpi_here, 1, MPI_INT, q, WD__MPI_ASK);
    for (double t0 = wd__now(); wd__now() - t0 < grace;) {
        MPI_Status s;
        wd__mpi_answer(h);
        while (MPI_Iprobe(MPI_ANY_SOURCE, WD__MPI_HERE, h->ctl, &flag, &s) == MPI_SUCCESS && flag &&
               MPI_Recv(&x, 1, MPI_INT, s.MPI_SOURCE, WD__MPI_HERE, h->ctl, MPI_STATUS_IGNORE) == MPI_SUCCESS)
            here[s.MPI_SOURCE] = 1;
        int all = 1;
        for (int q = 0; q < c->size; q++) all &= here[q];
        if (all) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    for (int q = 0; q < c->size && k < n; q++)
        if (!here[q]) k += (size_t)snprintf(why + k, n - k, "%s%d", missing++ ? ", " : "; rank ", q);
    if (missing && k < n)
        snprintf(why + k, n - k, " did not answer within %.0f s (stopped, hung, or busy longer than WD_COMM_TIMEOUT, "
                 "e.g. writing a checkpoint)", grace);
    else if (k < n) snprintf(why + k, n - k, "; every rank answered (a slow rank; raise WD_COMM_TIMEOUT)");
    wd__free(here);
}
// An abort notice from another rank: this rank is aborted too, with its reason.
static void wd__mpi_notice(wd__mpi *h) {
    int flag = 0;
    MPI_Status s;
    if (!h->aborted) wd__mpi_answer(h);
    if (h->aborted || MPI_Iprobe(MPI_ANY_SOURCE, WD__MPI_TAG, h->ctl, &flag, &s) != MPI_SUCCESS || !flag) return;
    char msg[WD__MPI_NOTE];
    if (MPI_Recv(msg, WD__MPI_NOTE, MPI_CHAR, s.MPI_SOURCE, WD__MPI_TAG, h->ctl, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "rank %d failed", s.MPI_SOURCE);
    msg[WD__MPI_NOTE - 1] = 0;
    h->aborted = 1;
    snprintf(h->why, sizeof h->why, "%s", msg);
}
static wd_status wd__mpi_error(wd_comm *c, int e, const char *call) {
    char es[MPI_MAX_ERROR_STRING], why[WD__MPI_NOTE];
    int n = 0;
    if (MPI_Error_string(e, es, &n) != MPI_SUCCESS) snprintf(es, sizeof es, "error %d", e);
    snprintf(why, sizeof why, "%s: %s", call, es);
    wd__mpi_abort(c, WD_ERR_ABORTED, why);
    return wd__fail(WD_ERR_ABORTED, "%s", ((wd__mpi *)c->impl)->why);
}
// Polls n started collectives until they all finish, another rank's abort
// notice arrives or the timeout passes (yielding the core meanwhile). An
// early return leaves the collectives pending: the communicator is aborted.
static wd_status wd__mpi_wait(wd_comm *c, MPI_Request *rq, int n, const char *what) {
    wd__mpi *h = (wd__mpi *)c->impl;
    double t0 = wd__now();
    for (int spin = 0;; spin++) {
        int done = 0, e = MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE);
        if (e != MPI_SUCCESS) return wd__mpi_error(c, e, what);
        if (done) return WD_OK;
        wd__mpi_notice(h);
        if (h->aborted) return wd__fail(WD_ERR_ABORTED, "%s", h->why);
        double waited = wd__now() - t0;
        if (spin % 1000 == 999 && getppid() != h->parent) {   // the launcher died: nobody will end this job
            char why[WD__MPI_NOTE];
            snprintf(why, sizeof why, "the launcher (process %ld) is gone while waiting in %s", (long)h->parent, what);
            wd__mpi_abort(c, WD_ERR_ABORTED, why);
            return wd__fail(WD_ERR_ABORTED, "%s", h->why);
        }
        if (waited > h->timeout) {
            char why[WD__MPI_NOTE];
            wd__mpi_rollcall(c, what, waited, WD__MIN(2.0, h->timeout), why, sizeof why);
            wd__mpi_abort(c, WD_ERR_ABORTED, why);
            return wd__fail(WD_ERR_ABORTED, "%s", h->why);
        }
        if (waited > 0.01) {   // a long wait (a validation on rank 0, a slow peer): sleep between polls
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        } else sched_yield();   // each poll drives MPI's progress; yield the core to a peer sharing it
    }
}
static wd_status wd__mpi_check(wd_comm *c) {
    wd__mpi *h = (wd__mpi *)c->impl;
    wd__mpi_notice(h);
    return h->aborted ? wd__fail(WD_ERR_ABORTED, "%s", h->why) : WD_OK;
}
// MPI counts are ints and some transports fail on messages of 2 GiB or
// more: every call moves at most h->chunk bytes per rank (the sum is
// elementwise: its chunks are the same sums).
static wd_status wd__mpi_allreduce(wd_comm *c, float *buf, size_t n) {
    wd__mpi *h = (wd__mpi *)c->impl;
    WD__TRY(wd__mpi_check(c));
    size_t most = WD__MAX(h->chunk / sizeof(float), 1);
    if (WD__MIN(n, most) > h->sum_cap) {   // each chunk summed in the communicator's own buffer: a sum left
                                           // pending by an abort may write it until the job ends
        float *p = (float *)wd__malloc(sizeof(float) * WD__MIN(n, most));
        if (!p) { wd__mpi_abort(c, WD_ERR_NOMEM, "out of memory for the dense gradient's sum");
            return wd__fail(WD_ERR_NOMEM, "out of memory for the %zu floats of the dense gradient's sum", n); }
        wd__free(h->sum);
        h->sum = p;
        h->sum_cap = WD__MIN(n, most);
    }
    for (size_t at = 0; at < n;) {
        int k = (int)WD__MIN(n - at, most);
        MPI_Request rq;
        memcpy(h->sum, buf + at, sizeof(float) * (size_t)k);
        int e = MPI_Iallreduce(MPI_IN_PLACE, h->sum, k, MPI_FLOAT, MPI_SUM, h->comm, &rq);
        if (e != MPI_SUCCESS) return wd__mpi_error(c, e, "the dense gradient's MPI_Iallreduce");
        h->calls[WD__MPI_SUMS]++;
        WD__TRY(wd__mpi_wait(c, &rq, 1, "the dense gradient's MPI_Allreduce"));
        memcpy(buf + at, h->sum, sizeof(float) * (size_t)k);
        at += (size_t)k;
    }
    return WD_OK;
}
// Every rank's byte count first (MPI_Allgather), then the bytes straight
// into place: within one chunk in all, one MPI_Iallgatherv (every count and
// displacement fits an int); beyond, each rank's bytes broadcast from it in
// rounds: round i moves bytes [i * chunk, (i + 1) * chunk) of every rank
// that has them, at most one chunk per rank and call (no int offsets into
// the whole: any total works). The same bytes either way (mpi.sh's
// mpi_chunked_bit_identical runs both).
static wd_status wd__mpi_allgather(wd_comm *c, const void *mine, size_t bytes, const void **all, size_t *sizes) {
    wd__mpi *h = (wd__mpi *)c->impl;
    WD__TRY(wd__mpi_check(c));
    h->my = (long long)bytes;
    MPI_Request rq;
    int e = MPI_Iallgather(&h->my, 1, MPI_LONG_LONG, h->lens, 1, MPI_LONG_LONG, h->comm, &rq);
    if (e != MPI_SUCCESS) return wd__mpi_error(c, e, "MPI_Iallgather");
    WD__TRY(wd__mpi_wait(c, &rq, 1, "MPI_Allgather (the byte counts)"));
    size_t total = 0, most = 0;
    for (int q = 0; q < c->size; q++) {   // the same sums on every rank: all fail or none
        size_t at = wd__align8(total);
        if (h->lens[q] < 0 || (unsigned long long)h->lens[q] > (unsigned long long)(SIZE_MAX / 2) - at)
            return wd__fail(WD_ERR_LIMIT,
                            "an allgather of %lld bytes from rank %d after %zu bytes of the ranks before it: more than this process can address",
                            h->lens[q], q, at);
        total = at + (size_t)h->lens[q];
        most = WD__MAX(most, (size_t)h->lens[q]);
    }
    if (total > h->recv_cap) {
        size_t want = WD__MAX(total, h->recv_cap + h->recv_cap / 2);
        uint8_t *p = (uint8_t *)wd__malloc(want);
        if (!p) { wd__mpi_abort(c, WD_ERR_NOMEM, "out of memory for an allgather of every rank's bytes");
            return wd__fail(WD_ERR_NOMEM, "out of memory for the %zu bytes that %d ranks gather", total, c->size); }
        wd__free(h->recv);
        h->recv = p;
        h->recv_cap = want;
    }
    size_t at = 0;
    for (int q = 0; q < c->size; q++) {
        at = wd__align8(at); all[q] = h->recv + at;
        if (sizes) sizes[q] = (size_t)h->lens[q];
        at += (size_t)h->lens[q]; }
    if (bytes) memcpy((uint8_t *)all[c->rank], mine, bytes);   // this rank's own, in place: its
                                                               // broadcasts send from there
    if (most > 0 && total <= h->chunk) {   // the same decision on every rank: from the gathered counts
        for (int q = 0; q < c->size; q++) { h->cnt[q] = (int)h->lens[q];
            h->dsp[q] = (int)((const uint8_t *)all[q] - h->recv); }
        e = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, h->recv, h->cnt, h->dsp, MPI_BYTE, h->comm, &rq);
        if (e != MPI_SUCCESS) return wd__mpi_error(c, e, "MPI_Iallgatherv");
        h->calls[WD__MPI_GATHERS]++;
        return wd__mpi_wait(c, &rq, 1, "MPI_Allgatherv (an allgather's bytes)");
    }
    for (size_t off = 0; off < most; off += h->chunk) {
        int n = 0;
        for (int q = 0; q < c->size; q++) {
            size_t len = (size_t)h->lens[q];
            if (len <= off) continue;
            int k = (int)WD__MIN(len - off, h->chunk);
            e = MPI_Ibcast((uint8_t *)all[q] + off, k, MPI_BYTE, q, h->comm, &h->rq[n]);
            if (e != MPI_SUCCESS) return wd__mpi_error(c, e, "MPI_Ibcast");
            n++;
        }
        h->calls[WD__MPI_ROUNDS]++;
        WD__TRY(wd__mpi_wait(c, h->rq, n, "MPI_Ibcast (an allgather's bytes)"));
    }
    return WD_OK;
}
static wd_status wd__mpi_barrier(wd_comm *c) {
    wd__mpi *h = (wd__mpi *)c->impl;
    WD__TRY(wd__mpi_check(c));
    MPI_Request rq;
    int e = MPI_Ibarrier(h->comm, &rq);
    if (e != MPI_SUCCESS) return wd__mpi_error(c, e, "MPI_Ibarrier");
    return wd__mpi_wait(c, &rq, 1, "MPI_Barrier");
}
static const wd_comm_ops wd__mpi_ops = {wd__mpi_allreduce, wd__mpi_allgather, wd__mpi_barrier, wd__mpi_abort, NULL,
                                        NULL, NULL};

WDDEF wd_status wd_comm_mpi_create(MPI_Comm comm, wd_comm **out) {
    if (!out) return wd__fail(WD_ERR_INVALID_ARG, "wd_comm_mpi_create: out is NULL");
    *out = NULL;
    int init = 0, fin = 0, level = MPI_THREAD_SINGLE;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_comm_mpi_create: MPI is %s (MPI_Init_thread first)",
                        fin ? "finalized" : "not initialized");
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_FUNNELED)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_comm_mpi_create: MPI was initialized with MPI_THREAD_SINGLE; the trainer's worker threads need MPI_THREAD_FUNNELED or more (MPI_Init_thread)");
    if (comm == MPI_COMM_NULL) return wd__fail(WD_ERR_INVALID_ARG, "wd_comm_mpi_create: comm is MPI_COMM_NULL");
    wd__mpi *h = WD__NEW(wd__mpi);
    if (!h) return wd__fail(WD_ERR_NOMEM, "out of memory");
    h->timeout = wd_comm_timeout();
    h->parent = getppid();
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int e = MPI_Comm_dup(comm, &h->comm);
    if (e == MPI_SUCCESS) e = MPI_Comm_dup(comm, &h->ctl);
    else h->ctl = MPI_COMM_NULL;
    if (e != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(e, es, &n);
        wd__free(h);
        return wd__fail(WD_ERR_INVALID_ARG, "wd_comm_mpi_create: MPI_Comm_dup: %s", es);
    }
    MPI_Comm_set_errhandler(h->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(h->ctl, MPI_ERRORS_RETURN);
    h->lens = (long long *)wd__calloc(sizeof(long long) * (size_t)size);
    h->rq = (MPI_Request *)wd__calloc(sizeof(MPI_Request) * (size_t)size);
    h->cnt = (int *)wd__calloc(sizeof(int) * (size_t)size);
    h->dsp = (int *)wd__calloc(sizeof(int) * (size_t)size);
    h->self.ops = &wd__mpi_ops; h->self.rank = rank; h->self.size = size; h->self.impl = h;
    if (!h->lens || !h->rq || !h->cnt || !h->dsp) { wd_comm_mpi_destroy(&h->self);
        return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    // The chunk: 1 GiB, or WD_MPI_CHUNK_BYTES (a test hook: tests/mpi.sh
    // proves with a few hundred bytes that chunks change no bit). Every rank
    // must split alike (the calls must match): compared here, on every rank.
    const char *cv = getenv("WD_MPI_CHUNK_BYTES");
    char *end = NULL;
    long long chunk = cv && *cv ? strtoll(cv, &end, 10) : 1ll << 30;
    if (cv && *cv && (*end || chunk < 8 || chunk > INT32_MAX)) chunk = -1;   // refused below, on every rank alike
    e = MPI_Allgather(&chunk, 1, MPI_LONG_LONG, h->lens, 1, MPI_LONG_LONG, h->comm);
    wd_status st = WD_OK;
    if (e != MPI_SUCCESS) st = wd__fail(WD_ERR_ABORTED, "wd_comm_mpi_create: MPI_Allgather failed (MPI error %d)", e);
    for (int q = 0; !st && q < size; q++)
        if (h->lens[q] < 0)
            st = wd__fail(WD_ERR_INVALID_ARG,
                          "wd_comm_mpi_create: rank %d's WD_MPI_CHUNK_BYTES is not a number of bytes from 8 to 2147483647", q);
        else if (h->lens[q] != h->lens[0])
            st = wd__fail(WD_ERR_INVALID_ARG,
                          "wd_comm_mpi_create: WD_MPI_CHUNK_BYTES is %lld on rank %d, %lld on rank 0: it must be equal on every rank",
                          h->lens[q], q, h->lens[0]);
    if (st) { wd_comm_mpi_destroy(&h->self); return st; }   // every rank fails here alike, before any notice
    h->chunk = (size_t)chunk;
    *out = &h->self;
    return WD_OK;
}
// An aborted communicator is kept whole until the process ends: MPI may
// still read its notices' bytes (a peer receives them late, or never) and
// write a collective's buffers that the abort left pending. (One rank alone
// sends no notice, and its collectives never wait.)
WDDEF wd_status wd_comm_mpi_destroy(wd_comm *c) {
    if (!c) return WD_OK;
    wd__mpi *h = (wd__mpi *)c->impl;
    if (h->aborted && c->size > 1)
        return wd__fail(WD_ERR_ABORTED, "rank %d of %d: the communicator aborted (%s): MPI may still use its memory, "
                        "kept until the process ends, and must not be finalized: end the job with MPI_Abort",
                        c->rank, c->size, h->why);
    MPI_Comm_free(&h->comm); MPI_Comm_free(&h->ctl);
    wd__free(h->lens); wd__free(h->rq); wd__free(h->cnt); wd__free(h->dsp); wd__free(h->recv); wd__free(h->sum);
    wd__free(h);
    return WD_OK;
}
#ifdef WD_HAVE_CUDA
WDDEF wd_status wd_comm_nccl_init_mpi(MPI_Comm comm, int device, wd_comm **out) {
    if (!out) return wd__fail(WD_ERR_INVALID_ARG, "wd_comm_nccl_init_mpi: out is NULL");
    *out = NULL;
    char id[128];   // ncclUniqueId is 128 bytes
    memset(id, 0, sizeof id);
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int ok = rank != 0 || wd_comm_nccl_unique_id(id, sizeof id) == WD_OK, all = 0;
    char err[WD__ERR_MAX] = "";
    if (!ok) snprintf(err, sizeof err, "%s", wd_last_error());
    // every rank learns whether rank 0 has an id before anyone waits for NCCL
    int e = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (e == MPI_SUCCESS && all) e = MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, comm);
    if (e != MPI_SUCCESS)
        return wd__fail(WD_ERR_ABORTED,
                        "wd_comm_nccl_init_mpi: sharing NCCL's unique id by MPI failed (MPI error %d)", e);
    if (!all)
        return wd__fail(WD_ERR_DEVICE, "wd_comm_nccl_init_mpi: rank 0 could not make NCCL's unique id%s%s",
                        err[0] ? ": " : "", err);
    return wd_comm_nccl_init_rank(id, rank, size, device, out);
}
#endif
#endif

// ---- 15. Training, evaluation, prediction -----------------------------------------------------
WDDEF const char *wd_stage_name(int stage) {
    static const char *names[WD_STAGE_COUNT] = {"data wait", "h2d copy", "embedding", "mlp forward", "wide+loss",
                                                "mlp backward", "sparse sort", "sparse rows", "comm",
                                                "optimizer", "other"};
    return stage >= 0 && stage < WD_STAGE_COUNT ? names[stage] : "?";
}

// ---- a team: persistent worker threads running one function per round ----
typedef struct wd__team wd__team;
typedef struct wd__member { wd__team *team; int index; } wd__member;
struct wd__team {
    int n;                          // workers, the calling thread being worker 0
    int started;                    // threads running (workers 1..started)
    pthread_t th[256];
    wd__member member[256];
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    int64_t round;                  // a new value starts a round
    int pending;                    // workers of this round still running
    int quit;
    void (*fn)(void *ctx, int worker);
    void *ctx;
};
static void *wd__team_thread(void *arg) {
    wd__member *me = (wd__member *)arg;
    wd__team *t = me->team;
#ifdef WD_USE_ONEDNN
    omp_set_num_threads(1);   // this thread is one worker: the engine's products run on it alone
#endif
    int64_t seen = 0;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (t->round == seen && !t->quit) pthread_cond_wait(&t->go, &t->mu);
        if (t->quit) break;
        seen = t->round;
        pthread_mutex_unlock(&t->mu);
        t->fn(t->ctx, me->index);
        pthread_mutex_lock(&t->mu);
        if (--t->pending == 0) pthread_cond_signal(&t->done);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}
static void wd__team_stop(wd__team *t) {
    pthread_mutex_lock(&t->mu);
    t->quit = 1;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    for (int i = 1; i <= t->started; i++) pthread_join(t->th[i], NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->go);
    pthread_cond_destroy(&t->done);
}
static wd_status wd__team_start(wd__team *t, int n) {
    memset(t, 0, sizeof *t);
    t->n = n;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->go, NULL);
    pthread_cond_init(&t->done, NULL);
    for (int i = 1; i < n; i++) {
        t->member[i].team = t; t->member[i].index = i;
        if (wd__thread_start(&t->th[i], wd__team_thread, &t->member[i]) != 0) {
            wd__team_stop(t);
            return wd__fail(WD_ERR_NOMEM, "cannot start worker thread %d of %d", i, n);
        }
        t->started = i;
    }
    return WD_OK;
}
// Runs fn(ctx, w) for every worker w (0 on the calling thread); returns when all are done.
static void wd__team_run(wd__team *t, void (*fn)(void *, int), void *ctx) {
    pthread_mutex_lock(&t->mu);
    t->fn = fn; t->ctx = ctx;
    t->pending = t->n - 1;
    t->round++;
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    fn(ctx, 0);
    pthread_mutex_lock(&t->mu);
    while (t->pending > 0) pthread_cond_wait(&t->done, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

// ---- the CPU backend: `threads` workers split every batch ----------------------------------------
// Each worker runs forward and backward on its share of the batch; the
// dense gradient (with a tail of loss sum, weight sum, sample count and the
// stop vote) is summed by a ring allreduce, merged sparse rows are
// allgathered, and each worker applies its share of the update. With a
// communicator between processes (wd_comm_mpi_create) the sum and the
// allgather span every worker of every process (wd__hier), and each
// process's workers apply the whole update to its replica. A worker waits
// for the others at most WD_COMM_TIMEOUT seconds (wd_comm_timeout), as
// every communicator does.
typedef struct wd__cpu {
    wd_model *m;
    int T, cap;                     // workers; samples per worker and round
    wd__ws *ws;                     // (T)
    wd_comm *comm[256];             // between the workers
    int comm_made;
    wd__hier *hier;                 // with other processes: every worker of the job
    wd_comm *wcomm[256];            // the workers' sums and allgathers (comm, or hier's)
    const void **views;             // (T x every worker of the job) allgather views
    wd__team team;
    int team_made;
    int rank;                       // this process's rank (wd_train's)
    // the round in progress
    const wd_batch *b;
    int stop;
    float *probs;
    wd_status wst[256];             // each worker's status
    char werr[256][WD__ERR_MAX];
    int wbad[256];                  // per worker: gradient values too large or not finite
    int wpost[256];                 // per worker: parameters an update left non-finite
    int wapplied[256];              // per worker: its share of the update was applied
    // finished steps not yet completed: a queue of two
    wd_step_result res[2];
    wd_status res_st[2];
    char res_err[2][WD__ERR_MAX];
    int res_head, res_n;
    wd_status halted;               // sticky: after a failed step nothing changes
    wd_status late;                 // the communicator failed after a step's whole update: the next submit fails
    char late_err[WD__ERR_MAX];
#ifdef WD_TESTING
    int inject;                     // the step in progress fails after its collectives (WD_CPU_TEST_FAIL)
    int fail_rank;                  // WD_CPU_TEST_FAIL=R:S (wd_test_fail_parse): rank R's S-th
    int64_t fail_step;              // step of this backend fails after its collectives, before its update (0: off)
    int64_t submits;                // steps submitted by this backend
#endif
    int64_t step;                   // steps applied (Adam's bias correction)
} wd__cpu;

static void wd__cpu_worker_fail(wd__cpu *c, int r, wd_status st) {
    c->wst[r] = st;
    snprintf(c->werr[r], sizeof c->werr[r], "%s", wd_last_error());
}
static void wd__cpu_step_worker(void *ctx, int r) {
    wd__cpu *c = (wd__cpu *)ctx;
    wd_model *m = c->m;
    wd__ws *w = &c->ws[r];
    wd_comm *cm = c->wcomm[r], *lc = c->comm[r];   // the update's check is this process's (lc)
    const wd_batch *b = c->b;
    int T = c->T;
    int i0 = (int)((int64_t)b->n * r / T), i1 = (int)((int64_t)b->n * (r + 1) / T);
    wd_status st = WD_OK;
    c->wst[r] = WD_OK;
    c->wbad[r] = 0;
    c->wpost[r] = 0;
    c->wapplied[r] = 0;
    if (i1 > i0) { st = wd__forward(m, w, b, i0, i1 - i0, i1 - i0); if (!st) st = wd__backward(m, w, b, i0, i1 - i0); }
    else { memset(w->g, 0, sizeof(float) * (size_t)(m->P + WD__TAIL)); w->nocc = 0; }
    float samples = 0.0f;
    for (int i = i0; i < i1; i++) samples += b->weight[i] != 0.0f;
    w->g[m->P + 2] = samples;
    w->g[m->P + 3] = r == 0 && c->stop ? 1.0f : 0.0f;   // worker 0 asks for the process
    double tm = wd__now(), sort0 = w->t_sort;
    if (!st) st = wd__merge_local(m, w);
    double t0 = wd__now();
    w->t_rows += t0 - tm - (w->t_sort - sort0);   // merging this worker's sparse rows; its sort is a stage of its own
    if (st) { wd__cpu_worker_fail(c, r, st); cm->ops->abort(cm, st, wd_last_error()); return; }
    st = cm->ops->allreduce_sum(cm, w->g, (size_t)(m->P + WD__TAIL));
    const void **views = c->views + (size_t)r * (size_t)cm->size;
    if (!st) st = cm->ops->allgather(cm, w->pack.p, w->pack.len, views, NULL);
    double t1 = wd__now();
    w->t_comm += t1 - t0;
    if (st) { wd__cpu_worker_fail(c, r, st); return; }
    float loss = w->g[m->P], wsum = w->g[m->P + 1];
    int apply = w->g[m->P + 3] <= 0.0f && wsum > 0;   // a stop: every worker of every rank skips the update
    if (apply && !isfinite(loss)) {
        st = wd__fail(WD_ERR_NUMERIC, "step %lld: the loss is not finite (diverged?); the update was not applied",
                      (long long)c->step + 1); apply = 0; }
#ifdef WD_TESTING
    if (c->inject) apply = 0;       // WD_CPU_TEST_FAIL: this process fails the
                                    // step after its collectives (wd__cpu_submit)
#endif
    if (apply) {   // every worker checks its share of the gradient before anyone writes
        st = wd__gather_owned(m, w, w->g, 1.0f / wsum, r, T, views, cm->size, &c->wbad[r]);
        if (st) { wd__cpu_worker_fail(c, r, st); cm->ops->abort(cm, st, wd_last_error()); return; }
        if ((st = lc->ops->barrier(lc)) != WD_OK) { wd__cpu_worker_fail(c, r, st); return; }
        int bad = 0;
        for (int q = 0; q < T; q++) bad += c->wbad[q];
        if (bad) st = wd__fail(WD_ERR_NUMERIC,
                               "step %lld: %d gradient values are not finite or exceed %g in magnitude (dense inputs too large?); the update was not applied",
                               (long long)c->step + 1, bad, (double)WD__GRAD_MAX);
        else { wd__apply_owned(m, w, w->g, 1.0f / wsum, r, T, c->step, &c->wpost[r]); c->wapplied[r] = 1; }
    }
    double t2 = wd__now();
    w->t_opt += t2 - t1;
    if (st) wd__cpu_worker_fail(c, r, st);
    // every update done before anyone reads the model again; and, between
    // processes, every view of this step's allgather read before any
    // process may change or free its rows (failing here, after the update:
    // wd__cpu_submit counts the step and fails the next)
    st = cm->ops->barrier(cm);
    w->t_comm += wd__now() - t2;   // waiting for the slowest worker
    if (st && !c->wst[r]) wd__cpu_worker_fail(c, r, st);
}
static void wd__cpu_predict_worker(void *ctx, int r) {
    wd__cpu *c = (wd__cpu *)ctx;
    const wd_batch *b = c->b;
    int i0 = (int)((int64_t)b->n * r / c->T), i1 = (int)((int64_t)b->n * (r + 1) / c->T);
    wd__ws *w = &c->ws[r];
    c->wst[r] = WD_OK;
    for (int at = i0; at < i1; at += w->cap) {
        int k = WD__MIN(w->cap, i1 - at);
        wd_status st = wd__forward(c->m, w, b, at, k, k);
        if (st) { wd__cpu_worker_fail(c, r, st); return; }
        memcpy(c->probs + at, w->prob, sizeof(float) * (size_t)k);
    }
}
// The status of the round: the first worker error that is not an abort
// caused by another worker's failure.
static wd_status wd__cpu_round_status(wd__cpu *c, char *err, size_t n) {
    wd_status st = WD_OK;
    for (int r = 0; r < c->T; r++)
        if (c->wst[r] && (!st || (st == WD_ERR_ABORTED && c->wst[r] != WD_ERR_ABORTED))) {
            st = c->wst[r];
            size_t len = strnlen(c->werr[r], n - 1);
            memcpy(err, c->werr[r], len);
            err[len] = 0;
        }
    return st;
}

// A round of the team, with the GEMM engine's own threading off meanwhile.
static void wd__cpu_round(wd__cpu *c, void (*fn)(void *, int)) {
#ifdef WD_USE_ONEDNN
    int prev = omp_get_max_threads();
    omp_set_num_threads(1);
    wd__team_run(&c->team, fn, c);
    omp_set_num_threads(prev);
#else
    wd__team_run(&c->team, fn, c);
#endif
}
static void wd__cpu_destroy(wd_backend *be) {
    wd__cpu *c = (wd__cpu *)be;
    if (!c) return;
    if (c->team_made) wd__team_stop(&c->team);
    for (int r = 0; c->ws && r < c->T; r++) wd__ws_free(&c->ws[r]);
    wd__free(c->ws);
    wd__hier_destroy(c->hier);
    if (c->comm_made) wd_comm_local_destroy(c->comm, c->T);
    wd__free(c->views);
    wd__free(c);
}
static wd_status wd__cpu_create(const wd_backend_desc *d, wd_backend **out) {
    *out = NULL;
    if (d->ranks > 1 && !d->comm)
        return wd__fail(WD_ERR_UNSUPPORTED,
                        "the CPU device trains as one rank per process (its `threads` workers split each batch); ranks of several processes need their communicator (wd_comm_mpi_create)");
    if (d->batch <= 0) return wd__fail(WD_ERR_INVALID_ARG, "cpu backend: batch %d", d->batch);   // equal on every rank
                                                                                                 // (the settings check)
    wd__cpu *c = WD__NEW(wd__cpu);
    if (!c) return wd__fail(WD_ERR_NOMEM, "out of memory");
    c->m = d->model;
    c->rank = d->rank;
    c->step = c->m->step;
    c->T = WD__MIN(256, d->threads > 0 ? d->threads : wd__online_cores());
    c->T = WD__MIN(c->T, d->batch);   // no idle workers
    c->cap = (d->batch + c->T - 1) / c->T;
    wd_status st = d->comm && d->comm->size > 1 ? wd__hier_create(d->comm, c->comm, c->T, &c->hier) : WD_OK;
    if (!st) st = wd__precision_check(d->model);
    if (!st) {
        c->ws = (wd__ws *)wd__calloc(sizeof(wd__ws) * (size_t)c->T);
        if (!c->ws) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    }
    for (int r = 0; !st && r < c->T; r++) st = wd__ws_init(&c->ws[r], c->m, c->cap, 1);
    // The workers' own waits: WD_COMM_TIMEOUT; under several processes workers 1..T-1 also wait while
    // worker 0 runs an exchange of several MPI waits (counts, then the gather's rounds), each bounded by it
    double wait = c->hier ? 8 * wd_comm_timeout() : wd_comm_timeout();
    if (!st) { st = wd_comm_local_create(c->T, wait, c->comm); c->comm_made = !st; }
    for (int r = 0; !st && r < c->T; r++) c->wcomm[r] = c->hier ? &c->hier->ranks[r] : c->comm[r];
    if (!st) {
        c->views = (const void **)wd__calloc(sizeof(void *) * (size_t)c->T * (size_t)c->wcomm[0]->size);
        if (!c->views) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    }
    if (!st) { st = wd__team_start(&c->team, c->T); c->team_made = !st; }
#ifdef WD_TESTING
    if (!st) {   // test builds only: a step failing after its collectives (R:S; no :pre here), a backend
                 // failing at the end of its creation (R:create)
        long long fs = 0;
        int pre = 0, create = 0;
        st = wd_test_fail_parse("WD_CPU_TEST_FAIL", 0, &c->fail_rank, &fs, &pre, &create);
        c->fail_step = fs;
        if (!st && create && c->fail_rank == d->rank)
            st = wd__fail(WD_ERR_DEVICE,
                          "rank %d: a failure injected at the end of the backend's creation (WD_CPU_TEST_FAIL)",
                          d->rank);
        if (create) c->fail_rank = -1;
    }
#endif
    if (st) { wd__cpu_destroy((wd_backend *)c); return st; }
    *out = (wd_backend *)c;
    return WD_OK;
}
static wd_status wd__cpu_submit(wd_backend *be, const wd_batch *b, int stop) {
    wd__cpu *c = (wd__cpu *)be;
    if (c->res_n == 2) return wd__fail(WD_ERR_INTERNAL, "cpu backend: a third step submitted before one completed");
    if (b->n > c->T * c->cap)
        return wd__fail(WD_ERR_INVALID_ARG, "batch of %d samples; the backend was made for %d", b->n, c->T * c->cap);
    if (c->late) return wd__fail(c->late, "%s", c->late_err);
    int q = (c->res_head + c->res_n) % 2;
    wd_step_result *res = &c->res[q];
    memset(res, 0, sizeof *res);
    wd_status st = c->halted;
    if (st) snprintf(c->res_err[q], sizeof c->res_err[q], "an earlier step failed; nothing more was applied");
    else {
        c->b = b; c->stop = stop;
#ifdef WD_TESTING
        c->inject = c->fail_step > 0 && c->rank == c->fail_rank && ++c->submits == c->fail_step;
#endif
        double t0 = wd__now();
        wd__lp_refresh(c->m);   // bf16 copies of the weights: part of the forward pass
        c->ws[0].t_fwd += wd__now() - t0;
        wd__cpu_round(c, wd__cpu_step_worker);
        st = wd__cpu_round_status(c, c->res_err[q], sizeof c->res_err[q]);
        int bad = 0, applied = 1;
        for (int r = 0; r < c->T; r++) { bad += c->wpost[r]; applied &= c->wapplied[r]; }
        const float *g = c->ws[0].g + c->m->P;
        res->loss = g[0]; res->weight = g[1]; res->samples = g[2]; res->stopped = g[3] > 0.0f;
        if (st && applied) {   // the update is whole: the step counts, the failure is the next submit's
            c->late = st;
            snprintf(c->late_err, sizeof c->late_err, "%s", c->res_err[q]);
            st = WD_OK;
        }
        if (!st && bad) {   // the same update of the same replica on every rank
            st = wd__fail(WD_ERR_NUMERIC,
                          "step %lld: the update left %d parameters non-finite; the model is no longer usable",
                          (long long)c->step + 1, bad);
            snprintf(c->res_err[q], sizeof c->res_err[q], "%s", wd_last_error());
        }
#ifdef WD_TESTING
        if (c->inject) {   // WD_CPU_TEST_FAIL: this step failed after its collectives, before its update
            c->inject = 0;
            if (!st) st = wd__fail(WD_ERR_DEVICE, "rank %d, step %lld: a failure injected after the step's collectives "
                                   "(WD_CPU_TEST_FAIL)", c->rank, (long long)c->fail_step);
            else st = wd__fail(st, "%s", c->res_err[q]);
            c->halted = st;
            return st;
        }
#endif
        if (!st && !res->stopped) c->step++;   // the global step, as the loop counts it
        if (st) c->halted = st;
    }
    c->res_st[q] = st;
    c->res_n++;
    return WD_OK;
}
static wd_status wd__cpu_complete(wd_backend *be, wd_step_result *out) {
    wd__cpu *c = (wd__cpu *)be;
    if (c->res_n == 0) return wd__fail(WD_ERR_INTERNAL, "cpu backend: no step in flight");
    int q = c->res_head;
    c->res_head = (c->res_head + 1) % 2;
    c->res_n--;
    *out = c->res[q];
    if (c->res_st[q]) return wd__fail(c->res_st[q], "%s", c->res_err[q]);
    return WD_OK;
}
static wd_status wd__cpu_predict(wd_backend *be, const wd_batch *b, float *probs) {
    wd__cpu *c = (wd__cpu *)be;
    c->b = b; c->probs = probs;
    wd__lp_refresh(c->m);
    wd__cpu_round(c, wd__cpu_predict_worker);
    char err[WD__ERR_MAX];
    wd_status st = wd__cpu_round_status(c, err, sizeof err);
    return st ? wd__fail(st, "%s", err) : WD_OK;
}
static wd_status wd__cpu_download(wd_backend *be) { (void)be; return WD_OK; }   // the model is the host's
static void wd__cpu_times(const wd_backend *be, double *s) {
    const wd__ws *w = &((const wd__cpu *)be)->ws[0];
    s[WD_STAGE_EMBED] += w->t_embed; s[WD_STAGE_MLP_FWD] += w->t_fwd; s[WD_STAGE_MLP_BWD] += w->t_bwd;
    s[WD_STAGE_WIDE] += w->t_wide; s[WD_STAGE_SORT] += w->t_sort; s[WD_STAGE_ROWS] += w->t_rows;
    s[WD_STAGE_COMM] += w->t_comm; s[WD_STAGE_OPTIMIZER] += w->t_opt;
}
static void wd__cpu_describe(const wd_backend *be, char *buf, size_t n) {
    const wd__cpu *c = (const wd__cpu *)be;
    char eng[96];
    wd__engine_describe(c->m, eng, sizeof eng);
    if (c->hier) snprintf(buf, n, "cpu threads=%d processes=%d %s", c->T, c->hier->ext->size, eng);
    else snprintf(buf, n, "cpu threads=%d %s", c->T, eng);
}
static const wd_backend_ops wd__cpu_ops = {
    .name = "cpu", .batch_alloc = NULL, .create = wd__cpu_create, .destroy = wd__cpu_destroy, .submit = wd__cpu_submit,
    .complete = wd__cpu_complete, .predict = wd__cpu_predict, .download = wd__cpu_download, .times = wd__cpu_times,
    .describe = wd__cpu_describe};
WDDEF const wd_backend_ops *wd_backend_cpu(void) { return &wd__cpu_ops; }

// ---- a device's backend: the CPU's; the CUDA backend, found at link time ------------------------
/* The CUDA backend is found at link time: widedeep_cuda.o defines
   wd_backend_cuda, and this weak reference to it stays NULL in a program
   linked without it, whether or not this file saw WD_HAVE_CUDA (which only
   declares the CUDA-only calls). A linker takes a member of an archive
   (libwidedeep_cuda.a) only for a symbol something needs, never for a weak
   reference: widedeep-cuda.pc and widedeep::cuda add -u wd_backend_cuda. */
#if defined(__GNUC__) || defined(__clang__)
#ifdef __cplusplus
extern "C"
#endif
const wd_backend_ops *wd_backend_cuda(void) __attribute__((weak));
#ifdef __cplusplus
extern "C"
#endif
const wd_device_ops *wd_devices_cuda(void) __attribute__((weak));
#define WD__CUDA_LINKED() (wd_backend_cuda != NULL && wd_devices_cuda != NULL)
#elif defined(WD_HAVE_CUDA)
#define WD__CUDA_LINKED() 1
#else
#define WD__CUDA_LINKED() 0
#endif
// The backend of a device (and its set-up table: NULL for the CPU), or an
// error naming what is missing.
static wd_status wd__backend_for(int device, const wd_backend_ops **out, const wd_device_ops **dev) {
    *out = NULL;
    if (dev) *dev = NULL;
    if (device == WD_DEVICE_CPU) { *out = wd_backend_cpu(); return WD_OK; }
    if (device != WD_DEVICE_CUDA)
        return wd__fail(WD_ERR_INVALID_ARG, "device %d is neither WD_DEVICE_CPU nor WD_DEVICE_CUDA", device);
#if defined(__GNUC__) || defined(__clang__) || defined(WD_HAVE_CUDA)
    if (WD__CUDA_LINKED()) {
        *out = wd_backend_cuda();
        if (dev) *dev = wd_devices_cuda();
        return WD_OK;
    }
#endif
    return wd__fail(WD_ERR_UNSUPPORTED,
                    "this program has no CUDA backend (link widedeep_cuda.o, or libwidedeep_cuda.a with -Wl,-u,wd_backend_cuda)");
}

// ---- the input contract: one comparison (section 8, wd_text_spec_compare) ----
// How slot k's ids of vocabulary a stand to b's: 0 the same (the same
// list, or neither has one), 1 a extends b (b's list is a prefix of a's),
// -1 b extends a, 2 neither (a value with two ids, or one of them hashes).
static int wd__vocab_rel(const wd_vocab *a, const wd_vocab *b, int k) {
    int64_t na = a && k < a->nslots ? a->n[k] : -1, nb = b && k < b->nslots ? b->n[k] : -1;
    if (na < 0 || nb < 0) return na == nb ? 0 : 2;
    int64_t n = WD__MIN(na, nb);
    if (n > 0 && memcmp(a->hash[k], b->hash[k], 8 * (size_t)n) != 0) return 2;
    return na == nb ? 0 : na > nb ? 1 : -1;
}
// A copy of a with every slot where b's vocabulary extends a's taken from b.
static wd_status wd__vocab_longer(const wd_vocab *a, const wd_vocab *b, wd_vocab **out) {
    WD__TRY(wd__vocab_copy(a, out));
    wd_vocab *v = *out;
    int grown = 0;
    for (int k = 0; v && k < v->nslots; k++) {
        if (wd__vocab_rel(b, a, k) != 1) continue;
        uint64_t *h = (uint64_t *)wd__malloc(8 * (size_t)b->n[k]);
        if (!h) { wd__vocab_free(v); *out = NULL; return wd__fail(WD_ERR_NOMEM, "out of memory for a vocabulary"); }
        memcpy(h, b->hash[k], 8 * (size_t)b->n[k]);
        wd__free(v->hash[k]); wd__free(v->key[k]); wd__free(v->val[k]);
        v->hash[k] = h; v->key[k] = NULL; v->val[k] = NULL;
        v->n[k] = b->n[k];
        grown = 1;
    }
    if (!grown) return WD_OK;
    for (int k = 0; k < v->nslots; k++) { wd__free(v->key[k]); wd__free(v->val[k]); v->key[k] = NULL;
        v->val[k] = NULL; }
    wd_status st = wd__vocab_index(v);
    if (st) { wd__vocab_free(v); *out = NULL; }
    return st;
}
// One side of a comparison: a schema, the input format its ids and features
// were mapped with (NULL: none recorded) and its vocabulary (NULL: no slot
// has one); who names it in messages ("this file", "the model").
typedef struct wd__side { const wd_schema *s; const wd_text_spec *t; const wd_vocab *v; const char *who; } wd__side;
// How vocabularies may differ: not at all; a's lists prefixes of b's (a file
// of an earlier day read by a model); one a prefix of the other (training);
// or b records none (a model that never trained on files: the schema alone).
enum { WD__MEET_SAME, WD__MEET_READ, WD__MEET_TRAIN, WD__MEET_SCHEMA };
// The first difference found (wd__contract_diff), in the order compared.
enum {
    WD__DIFF_NONE, WD__DIFF_FORMAT, WD__DIFF_NDENSE, WD__DIFF_DENSE_RULE, WD__DIFF_DENSE_COL, WD__DIFF_LABEL,
    WD__DIFF_NSLOTS, WD__DIFF_SLOT_NAME, WD__DIFF_SLOT_KIND, WD__DIFF_SLOT_COL, WD__DIFF_DERIVED, WD__DIFF_BUCKETS,
    WD__DIFF_VOCAB, WD__DIFF_COUNT
};
// Column i's name in t's CSV header (quotes removed, "" a quote), cut to n - 1 bytes.
static void wd__csv_colname(const wd_text_spec *t, int i, char *buf, size_t n) {
    char d = t->delimiter ? t->delimiter : ',';
    size_t o = 0;
    int col = 0, q = 0;
    for (const char *p = t->header; *p && col <= i; p++) {
        if (q && *p == '"') { if (p[1] != '"') { q = 0; continue; } p++; }
        else if (!q && *p == '"') { q = 1; continue; }
        else if (!q && *p == d) { col++; continue; }
        if (col == i && o + 1 < n) buf[o++] = *p;
    }
    buf[o] = 0;
}
// Where dense column j (slot k; the label: j and k -1) of side x takes its
// value from, in words: a CSV column by name (its position is the file's
// layout, not its meaning), a derived slot's bytes, a LibSVM index range, a
// Criteo field.
static void wd__source(const wd__side *x, int j, int k, char *buf, size_t n) {
    const wd_text_spec *t = x->t;
    char name[160];
    if (t->format == WD_FMT_CRITEO) {
        snprintf(buf, n, "Criteo field %d", j >= 0 ? 2 + j : k >= 0 ? 15 + k : 1);
        return;
    }
    if (t->format == WD_FMT_LIBSVM) {
        if (j >= 0) { snprintf(buf, n, "feature index %lld", (long long)t->dense_lo + j); return; }
        for (int r = 0; r < t->nranges; r++)
            if (t->ranges[r].slot == k) {
                snprintf(buf, n, "feature indexes %u-%u", t->ranges[r].lo, t->ranges[r].hi);
                return;
            }
        snprintf(buf, n, "no feature indexes");
        return;
    }
    int q = k - (x->s->nslots - t->nderived);
    if (k >= 0 && q >= 0) {
        int w = t->derived[q].weekday;
        wd__csv_colname(t, t->derived[q].col, name, sizeof name);
        snprintf(buf, n, "%sbytes %d..%d of column '%s'%s", w ? "the weekday of " : "", t->derived[q].from,
                 t->derived[q].to - 1, name, w ? "" : " (derived)");
        return;
    }
    int role = j >= 0 ? 2 : k >= 0 ? 3 : 1, index = j >= 0 ? j : k;
    for (int c = 0; c < t->ncols; c++)
        if (t->col_role[c] == role && (role == 1 || t->col_index[c] == index)) {
            wd__csv_colname(t, c, name, sizeof name);
            snprintf(buf, n, "column '%s'", name);
            return;
        }
    snprintf(buf, n, "no column");
}
static const char *wd__rule_words(const wd_text_spec *t) {
    if (t->format == WD_FMT_LIBSVM) return "the feature values as they are";
    return t->format == WD_FMT_CSV && t->dense_raw ? "values as they are (--dense-raw)" : "counts through log1p";
}
// "FIELD: a's value, b's value: the fix" into why; returns code.
static int wd__diff_say(char *why, size_t n, int code, const char *field, const wd__side *a, const char *av,
                        const wd__side *b, const char *bv, const char *fix) {
    snprintf(why, n, "%s: %s %s, %s %s: %s", field, a->who, av, b->who, bv, fix);
    return code;
}
// Slot k's ids in words: "has ids from a vocabulary of N values (fingerprint F)" or "has hashed ids".
static void wd__vocab_words(const wd_vocab *v, int k, char *buf, size_t n) {
    uint64_t f = wd_vocab_fingerprint(v, k);
    if (f) snprintf(buf, n, "has ids from a vocabulary of %lld values (fingerprint %016llx)", (long long)v->n[k],
                    (unsigned long long)f);
    else snprintf(buf, n, "has ids without a vocabulary (hashed, or chosen by its writer)");
}
/* THE comparison of two input contracts: whether side a's ids and features
   mean what side b's mean. Compared in this order, the first difference
   returned (WD__DIFF_*, WD__DIFF_NONE: none) and said in why ("FIELD: a's
   value, b's value: the fix"): the input format (a side that records none
   against one that does cannot be decided, and is refused); the dense
   columns, their rule and each one's source; the label's column; the slots,
   each one's name, kind and source (a CSV column, a derived slot's column,
   bytes and weekday rule, a LibSVM index range); bucket counts; each slot's
   vocabulary (hashed against a vocabulary, or another list: mode says which
   prefixes pass). A CSV file's column positions, delimiter, unused and id
   columns are its layout, not what its values mean: columns are compared by
   name. Every place where a file or a request meets a model or another file
   calls this: training, validation, evaluation, prediction, warm start and
   resume (wd__check_files), convert's schema_from and serving
   (wd_text_spec_compare, wd_model_check_spec). */
static int wd__contract_diff(const wd__side *a, const wd__side *b, int mode, char *why, size_t n) {
    static const char *fmt[3] = {"Criteo TSV", "LibSVM", "CSV"};
    static const char *none = "records none (written by wd_writer, or converted before .wdr version 3)";
    static const char *fix_map = "convert it with the options the training data was converted with "
                                 "(--format, --label, --dense, --dense-raw, --cat, --derive, --slots, --dense-range)";
    static const char *fix_ids = "convert it with --schema-from a training file or the model";
    const wd_text_spec *x = a->t, *y = b->t;
    const wd_schema *sa = a->s, *sb = b->s;
    char av[400], bv[400], field[120];
    if (mode != WD__MEET_SCHEMA && !x != !y)
        return wd__diff_say(why, n, WD__DIFF_FORMAT, "the input format", a, x ? fmt[x->format] : none, b,
                            y ? fmt[y->format] : none, "whether their columns and ids mean the same cannot be "
                            "told; convert the text again with this version");
    if (mode == WD__MEET_SCHEMA) x = y = NULL;
    if (x && x->format != y->format)
        return wd__diff_say(why, n, WD__DIFF_FORMAT, "the input format", a, fmt[x->format], b, fmt[y->format], fix_map);
    if (sa->ndense != sb->ndense) {
        snprintf(av, sizeof av, "has %d", sa->ndense);
        snprintf(bv, sizeof bv, "%d", sb->ndense);
        return wd__diff_say(why, n, WD__DIFF_NDENSE, "the dense columns", a, av, b, bv, fix_map);
    }
    if (x && sa->ndense && wd__rule_words(x) != wd__rule_words(y))   // (one literal per rule)
        return wd__diff_say(why, n, WD__DIFF_DENSE_RULE, "the dense rule", a, wd__rule_words(x), b,
                            wd__rule_words(y), fix_map);
    for (int j = 0; x && j < sa->ndense; j++) {
        wd__source(a, j, -1, av, sizeof av);
        wd__source(b, j, -1, bv, sizeof bv);
        snprintf(field, sizeof field, "dense column %d", j + 1);
        if (strcmp(av, bv) != 0) return wd__diff_say(why, n, WD__DIFF_DENSE_COL, field, a, av, b, bv, fix_map);
    }
    if (x) {
        wd__source(a, -1, -1, av, sizeof av);
        wd__source(b, -1, -1, bv, sizeof bv);
        if (strcmp(av, bv) != 0) return wd__diff_say(why, n, WD__DIFF_LABEL, "the label", a, av, b, bv, fix_map);
    }
    if (sa->nslots != sb->nslots) {
        snprintf(av, sizeof av, "has %d", sa->nslots);
        snprintf(bv, sizeof bv, "%d", sb->nslots);
        return wd__diff_say(why, n, WD__DIFF_NSLOTS, "the slots", a, av, b, bv, fix_map);
    }
    for (int k = 0; k < sa->nslots; k++) {
        const wd_slot *p = &sa->slot[k], *q = &sb->slot[k];
        snprintf(field, sizeof field, "slot %d (%.31s)", k, q->name);
        if (strncmp(p->name, q->name, WD_NAME_MAX) != 0) {
            snprintf(av, sizeof av, "names it '%.31s'", p->name);
            snprintf(bv, sizeof bv, "'%.31s'", q->name);
            return wd__diff_say(why, n, WD__DIFF_SLOT_NAME, field, a, av, b, bv, fix_map);
        }
        if (p->kind != q->kind)
            return wd__diff_say(why, n, WD__DIFF_SLOT_KIND, field, a, p->kind ? "is multi-hot" : "is one-hot", b,
                                q->kind ? "multi-hot" : "one-hot", fix_map);
        if (x) {
            char as[300];
            wd__source(a, -1, k, as, sizeof as);
            wd__source(b, -1, k, bv, sizeof bv);
            int derived = k >= sa->nslots - x->nderived || k >= sb->nslots - y->nderived;
            snprintf(av, sizeof av, "takes %s", as);
            if (strcmp(as, bv) != 0)
                return wd__diff_say(why, n, derived ? WD__DIFF_DERIVED : WD__DIFF_SLOT_COL, field, a, av, b, bv,
                                    fix_map);
        }
        if (p->buckets != q->buckets) {
            snprintf(av, sizeof av, "has %u buckets", p->buckets);
            snprintf(bv, sizeof bv, "%u", q->buckets);
            return wd__diff_say(why, n, WD__DIFF_BUCKETS, field, a, av, b, bv, fix_ids);
        }
        if (mode == WD__MEET_SCHEMA) continue;
        int rel = wd__vocab_rel(a->v, b->v, k);
        if (rel == 0 || (rel == -1 && mode != WD__MEET_SAME) || (rel == 1 && mode == WD__MEET_TRAIN)) continue;
        wd__vocab_words(a->v, k, av, sizeof av);
        wd__vocab_words(b->v, k, bv, sizeof bv);
        if (rel == 1)
            snprintf(why, n, "%s: %s %s, which extends %s's (%s): the values past it have ids %s never trained; "
                     "train on it first (the CLI's --init-from), or convert it with --schema-from the last training "
                     "file (no --extend-vocab)", field, a->who, av, b->who, bv + 4, b->who);
        else
            snprintf(why, n, "%s: %s %s, %s %s: the same value would have another id (files converted separately "
                     "number their values by their own counts); %s", field, a->who, av, b->who, bv, fix_ids);
        return WD__DIFF_VOCAB;
    }
    snprintf(why, n, "no difference");
    return WD__DIFF_NONE;
}
// Opens every file and compares its input contract with want's (the
// model's; NULL: the model records none yet, the schema alone is compared):
// wd__contract_diff, naming the file. capture (training files): every file
// may extend want's vocabularies, the files must agree with each other, and
// *capture gets the first file's contract with the longest vocabulary of
// each slot; otherwise (validation, evaluation) a file's lists may be
// prefixes of want's, never longer (ids the model never trained). *samples
// gets their total, *fp a fingerprint of the list (each file's samples,
// blocks and bytes, in order: what a resumed run must see again).
static wd_status wd__check_files(const wd_model *m, const char *const *files, int nfiles, const char *what,
                                 int64_t *samples, uint64_t *fp, const wd__contract *want, wd__contract *capture) {
    if (samples) *samples = 0;
    if (fp) *fp = wd_mix64(0x5EEDF11E5ull + (uint64_t)nfiles);
    const char *whose = !want ? "the model's schema" : m->in.known ? "the model" : "the training files";
    wd__side model = {&m->schema, want ? want->spec : NULL, want ? want->vocab : NULL, whose};
    int mode = !want ? WD__MEET_SCHEMA : capture ? WD__MEET_TRAIN : WD__MEET_READ;
    for (int f = 0; f < nfiles; f++) {
        if (!files[f]) return wd__fail(WD_ERR_INVALID_ARG, "%s file %d is NULL", what, f);
        wd_reader *r;
        wd_status st = wd_reader_open(files[f], &r);
        if (st) return wd__fail(st, "%s file: %s", what, wd_last_error());
        char who[40], why[1200];
        snprintf(who, sizeof who, "this %s file", what);
        wd__side file = {&r->schema, r->spec, r->vocab, who};
        int d = wd__contract_diff(&file, &model, mode, why, sizeof why);
        if (!d && capture && f == 0) st = wd__contract_of(r, capture);
        else if (!d && capture) {   // agrees with the files before it; the longest lists kept
            wd__side before = {&m->schema, capture->spec, capture->vocab, "the training files before it"};
            d = wd__contract_diff(&file, &before, WD__MEET_TRAIN, why, sizeof why);
            wd_vocab *v = NULL;
            if (!d) st = wd__vocab_longer(capture->vocab, r->vocab, &v);
            if (!d && !st) { wd__vocab_free(capture->vocab); capture->vocab = v; }
        }
        if (d) st = wd__fail(WD_ERR_SCHEMA, "%s: %s", wd__tail(files[f], 400), why);
        if (st) { wd_reader_close(r); return st; }
        if (samples) *samples += wd_reader_nsamples(r);
        if (fp) *fp = wd_mix64(*fp ^ wd_mix64((uint64_t)wd_reader_nsamples(r) * 0x9E3779B97F4A7C15ull
                                              ^ (uint64_t)wd_reader_nblocks(r) << 40
                                              ^ (uint64_t)wd_reader_file_bytes(r)));
        wd_reader_close(r);
    }
    return WD_OK;
}
WDDEF wd_status wd_text_spec_compare(const wd_text_spec *have, const wd_text_spec *want, int extend) {
    if (!have || !want) return wd__fail(WD_ERR_INVALID_ARG, "wd_text_spec_compare: a NULL spec");
    wd__side a = {&have->schema, have, have->vocab, "this spec"}, b = {&want->schema, want, want->vocab, "the other"};
    char why[1200];
    int mode = extend > 0 ? WD__MEET_TRAIN : extend < 0 ? WD__MEET_READ : WD__MEET_SAME;
    if (wd__contract_diff(&a, &b, mode, why, sizeof why))
        return wd__fail(WD_ERR_SCHEMA, "%s", why);
    return WD_OK;
}
WDDEF wd_status wd_model_check_spec(const wd_model *m, const wd_text_spec *t) {
    if (!m || !t) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_check_spec: a NULL argument");
    wd__side a = {&t->schema, t, t->vocab, "the spec"}, b = {&m->schema, m->in.spec, m->in.vocab, "the model"};
    char why[1200];
    if (!m->in.known)
        return wd__fail(WD_ERR_UNSUPPORTED, "wd_model_check_spec: the model records no input contract (never "
                        "trained on files, or saved before .wdm version 3): what its ids mean cannot be compared");
    if (wd__contract_diff(&a, &b, WD__MEET_READ, why, sizeof why)) return wd__fail(WD_ERR_SCHEMA, "%s", why);
    return WD_OK;
}
WDDEF wd_status wd_reader_spec(const wd_reader *r, wd_text_spec *out) {
    if (!r || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_reader_spec: a NULL argument");
    memset(out, 0, sizeof *out);
    if (!r->spec)
        return wd__fail(WD_ERR_UNSUPPORTED, "%s: the file records no input format (written by wd_writer, or "
                        "converted before .wdr version 3): what its ids mean cannot be told; convert the text again "
                        "with this version", wd__tail(r->path, 300));
    *out = *r->spec;
    out->vocab = NULL;
    if (!r->vocab) return WD_OK;
    wd_vocab *v = NULL;
    WD__TRY(wd__vocab_copy(r->vocab, &v));
    out->vocab = v;
    return WD_OK;
}

// ---- evaluation: predictions through a backend, in file order ---------------------------------
typedef struct wd__evalio {
    const char *const *files;
    int nfiles, batch, loader_threads;
    wd_map_fn map;
    void *map_user;
    float *predictions;             // optional, caller-owned
    int64_t predictions_cap;
    // The ranks of a job (NULL or one rank: this rank scores every sample).
    // Every rank calls wd__eval_run at once; rank r scores the blocks j with
    // j % size == r (the loader's shards, unshuffled) and the (score, label,
    // weight) of every rank are gathered back into file order, so that each
    // rank computes the metrics of the same arrays as one rank scoring all
    // (bit-identical where the predictions are). The oov counts are then
    // this rank's blocks'. A rank that fails returns its error and its
    // caller aborts the communicator (wd__rank_thread): the others' gather
    // ends with WD_ERR_ABORTED naming it.
    wd_comm *comm;
    const char *what;               // what the messages call it ("validation")
} wd__evalio;
// The gather of every rank's (pred, label, weight) planes (`mine` samples
// at planes) into file order: block j of the files (all[j], nall blocks)
// came from rank j % P, after that rank's earlier blocks. Called by every
// rank whose scoring succeeded.
static wd_status wd__eval_gather(wd_comm *c, const char *what, const float *planes, int64_t mine, const wd__lplan *all,
                                 int64_t nall, float *pred, float *label, float *weight) {
    int P = c->size;
    if (!what) what = "evaluation";
    const void **views = (const void **)wd__calloc(sizeof(void *) * (size_t)P);
    size_t *sizes = (size_t *)wd__calloc(sizeof(size_t) * (size_t)P);
    int64_t *n = (int64_t *)wd__calloc(sizeof(int64_t) * (size_t)P),
        *at = (int64_t *)wd__calloc(sizeof(int64_t) * (size_t)P);
    size_t len = sizeof(float) * 3 * (size_t)mine;
    wd_status st = views && sizes && n && at ? WD_OK
                                             : wd__fail(WD_ERR_NOMEM, "out of memory for the %s's %d ranks", what, P);
    if (!st) st = c->ops->allgather(c, planes, len, views, sizes);
    for (int64_t j = 0; !st && j < nall; j++) n[j % P] += all[j].n;
    for (int q = 0; !st && q < P; q++)   // the same check on every rank: all fail or none
        if (sizes[q] != sizeof(float) * 3 * (size_t)n[q])
            st = wd__fail(WD_ERR_INTERNAL, "%s: rank %d sent %zu bytes of scores for its %lld samples", what, q,
                          sizes[q], (long long)n[q]);
    int64_t o = 0;
    for (int64_t j = 0; !st && j < nall; j++) {
        int q = (int)(j % P);
        const float *v = (const float *)views[q];
        size_t k = sizeof(float) * (size_t)all[j].n;
        if (k) {
            memcpy(pred + o, v + at[q], k);
            memcpy(label + o, v + n[q] + at[q], k);
            memcpy(weight + o, v + 2 * n[q] + at[q], k);
        }
        at[q] += all[j].n; o += all[j].n;
    }
    // the views may be the other ranks' own memory (a shared-memory
    // communicator): nobody frees its planes before everyone has read them
    wd_status bst = views && sizes && n && at ? c->ops->barrier(c) : WD_OK;
    wd__free(views); wd__free(sizes); wd__free(n); wd__free(at);
    return st ? st : bst;
}
// Predicts every sample of the files in order through backend be (no step
// in flight) and computes the metrics; with io->comm, this rank's share.
static wd_status wd__eval_run(wd_model *m, const wd_backend_ops *ops, wd_backend *be, const wd__evalio *io,
                              wd_metrics *out) {
    memset(out, 0, sizeof *out);
    wd_comm *c = io->comm && io->comm->size > 1 ? io->comm : NULL;
    int64_t total = 0;
    wd_status st = wd__check_files(m, io->files, io->nfiles, "evaluation", &total, NULL,
                                   m->in.known ? &m->in : NULL, NULL);
    if (!st && total == 0)
        st = wd__fail(WD_ERR_INVALID_ARG, "evaluation: the files hold no samples (%s%s)", wd__tail(io->files[0], 300),
                      io->nfiles > 1 ? ", ..." : "");
    if (!st && io->predictions && io->predictions_cap < total)
        st = wd__fail(WD_ERR_INVALID_ARG, "predictions holds %lld, the files have %lld samples",
                      (long long)io->predictions_cap, (long long)total);
    wd_loader_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.files = io->files; ld.nfiles = io->nfiles; ld.batch_size = io->batch;
    ld.shard_index = c ? c->rank : 0; ld.shard_count = c ? c->size : 1;
    ld.threads = io->loader_threads > 0 ? io->loader_threads : 1;
    ld.remainder = WD_REMAINDER_PAD;
    ld.map = io->map; ld.map_user = io->map_user;
    ld.batch_alloc = ops->batch_alloc;
    wd_loader *l = NULL;
    float *pred = NULL, *label = NULL, *weight = NULL, *probs = NULL;
    if (!st) {
        pred = wd__alloc_floats(WD__MAX(total, 1), "predictions", &st);
        label = wd__alloc_floats(WD__MAX(total, 1), "labels", &st);
        weight = wd__alloc_floats(WD__MAX(total, 1), "weights", &st);
        probs = wd__alloc_floats(io->batch, "predictions", &st);
    }
    if (!st) st = wd_loader_open(&ld, &l);
    if (!st) st = wd_loader_reset(l, 0, 0);
    int64_t mine = total;           // this rank's samples: its blocks', in their order
    float *planes = NULL;           // with ranks: this rank's (pred, label, weight) planes
    if (!st && c) {
        mine = 0;
        for (int64_t j = c->rank; j < l->nall; j += c->size) mine += l->all[j].n;
        planes = wd__alloc_floats(WD__MAX(3 * mine, 1), "scores", &st);
    }
    float *op = c ? planes : pred, *ol = c ? planes + mine : label, *ow = c ? planes + 2 * mine : weight;
    int64_t at = 0;
    while (!st && at < mine) {
        const wd_batch *b;
        st = wd_loader_next(l, &b);
        if (st || !b) break;
        wd_oov_count(m->in.vocab, b, &out->oov);
        if (!st) st = ops->predict(be, b, probs);
        int k = (int)WD__MIN((int64_t)b->n, mine - at);   // the last batch may end in padding
        if (!st) {
            memcpy(op + at, probs, sizeof(float) * (size_t)k);
            memcpy(ol + at, b->label, sizeof(float) * (size_t)k);
            memcpy(ow + at, b->weight, sizeof(float) * (size_t)k);
            at += k;
        }
    }
    if (!st && at != mine)
        st = wd__fail(WD_ERR_INTERNAL, "evaluation read %lld of %lld samples", (long long)at, (long long)mine);
    if (c && !st) st = wd__eval_gather(c, io->what, planes, mine, l->all, l->nall, pred, label, weight);
    wd_loader_close(l);
    wd__free(planes);
    if (!st) st = wd_auc(pred, label, weight, total, &out->auc);
    if (!st) {
        out->logloss = wd_logloss(pred, label, weight, total);
        double sp = 0, sy = 0, sw = 0;
        for (int64_t i = 0; i < total; i++) { sp += weight[i] * pred[i]; sy += weight[i] * label[i]; sw += weight[i]; }
        out->mean_pred = sw > 0 ? sp / sw : NAN;
        out->ctr = sw > 0 ? sy / sw : NAN;
        out->samples = total;
        if (io->predictions) memcpy(io->predictions, pred, sizeof(float) * (size_t)total);
    }
    wd__free(pred); wd__free(label); wd__free(weight); wd__free(probs);
    return st;
}

WDDEF wd_status wd_evaluate(wd_model *m, const wd_eval_desc *d, wd_metrics *out) {
    if (!m || !d || !out)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_evaluate: a model, a desc and an output are required");
    if (!d->files || d->nfiles <= 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_evaluate: files and nfiles > 0 are required");
    if (d->batch_size < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_evaluate: batch_size %d is negative", d->batch_size);
    if (d->threads < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_evaluate: threads %d is negative", d->threads);
    const wd_backend_ops *ops;
    WD__TRY(wd__backend_for(d->device, &ops, NULL));
    wd_backend_desc bd;
    memset(&bd, 0, sizeof bd);
    bd.model = m; bd.batch = d->batch_size > 0 ? d->batch_size : 4096; bd.ranks = 1;
    bd.device = d->device_index; bd.threads = d->threads;
    if (d->device == WD_DEVICE_CUDA) WD__TRY(wd_cuda_desc_resolve(&d->cuda, &bd.cuda));
    wd_backend *be;
    WD__TRY(ops->create(&bd, &be));
    wd__evalio io;
    memset(&io, 0, sizeof io);
    io.files = d->files; io.nfiles = d->nfiles; io.batch = bd.batch;
    io.loader_threads = d->device == WD_DEVICE_CPU ? 1 : 0;
    io.map = d->map; io.map_user = d->map_user;
    io.predictions = d->predictions; io.predictions_cap = d->predictions_cap;
    wd_status st = wd__eval_run(m, ops, be, &io, out);
    ops->destroy(be);
    return st;
}

// ---- a training run: what wd_train's ranks share (wd__run), each rank's own (wd__rank) ----------
typedef struct wd__run {
    wd_model *m;
    const wd_train_desc *d;
    wd_train_report *rep;
    const wd_backend_ops *ops;
    int ranks, nlocal, first;       // ranks of the job; of this process; global rank of local rank 0
    int batch;                      // per rank
    int device[256];                // GPU of each local rank
    wd_comm *comm[256];             // the ranks' communicators (NULL with one rank)
    int64_t epochs, total_steps;
    double t0;
    int stop;                       // set by local rank 0: 1 the progress callback asked, 2 early stop
    double best_auc;                // validation (local rank 0): the best AUC so far, its step,
    int64_t best_step;              //   validations since it improved
    int stale;
    int stream;                     // batches come from d->source (one rank), not files
    int64_t src_batches;            // batches the source gave so far
    int64_t epoch_batches;          // batches of one epoch on each rank (0 until the loader tells; a stream: 0)
    uint64_t valid_fp;              // the validation files (wd__check_files' fingerprint; the settings check)
    int64_t saved_step;             // the step of the last checkpoint rank 0 wrote in this call (-1: none)
    const char *warning;            // wd_progress.warning of the call being made
    int skip_row;                   // a stream's batches skipped in a row (WD_MAX_SKIPPED), the last at
    int64_t skip_steps;             //   rep->steps of this many steps
} wd__run;
typedef struct wd__rank {
    wd__run *run;
    int local, rank;                // index in this process; rank in the job
    wd_backend *be;
    wd_loader *loader;
    wd_status st;
    char err[WD__ERR_MAX];
    double stage[WD_STAGE_COUNT];
    double loop_s;
    int stopped;
    wd_oov oov;                     // out-of-vocabulary values of the batches it trained on
    wd_batch pad;                   // a stream's short batch, padded to the rank's batch
    int pad_made;
    int64_t last_eval;              // the step of its last validation (-1: none)
    int host_holds;                 // be is gone (a rebuild after a skipped step failed); m holds the model
} wd__rank;

// ---- the processes' settings check: before the first collective of training ----
// The processes of a job must train the same model the same way: each fills
// a record of the settings that must be equal (wd__settings_fill, one line a
// setting), the records are gathered once (a few KB) and the first
// difference from rank 0 fails every rank alike with WD_ERR_INVALID_ARG
// naming the rank and the setting. In-process ranks share one desc and one
// model: nothing to compare. It reads nothing of the model's arithmetic.
#define WD__SET_MAX 32
typedef struct wd__setting { char name[56]; uint64_t v; char show[40]; } wd__setting;
typedef struct wd__settings {
    int n;
    wd__setting s[WD__SET_MAX];
    uint64_t vocab[WD_MAX_SLOTS];   // each slot's vocabulary fingerprint (0: none)
} wd__settings;
static uint64_t wd__fp_floats(uint64_t h, const float *p, int64_t n, int64_t most) {
    if (!p) return wd_mix64(h ^ 0xF1);
    int64_t step = n > most ? n / most : 1;
    for (int64_t i = 0; i < n; i += step) {
        uint32_t u;
        memcpy(&u, &p[i], 4);
        h = wd_mix64(h ^ u) + (uint64_t)i;
    }
    return h;
}
// One setting: its value (compared) and how a message shows it (show NULL: the number).
static void wd__set(wd__settings *r, const char *name, uint64_t v, const char *show) {
    if (r->n >= WD__SET_MAX) return;   // WD__SET_MAX covers wd__settings_fill's lines
    wd__setting *e = &r->s[r->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->v = v;
    if (show) snprintf(e->show, sizeof e->show, "%s", show);
    else snprintf(e->show, sizeof e->show, "%lld", (long long)v);
}
static void wd__set_fp(wd__settings *r, const char *name, uint64_t v) {
    char show[40];
    snprintf(show, sizeof show, "fingerprint %016llx", (unsigned long long)v);
    wd__set(r, name, v, show);
}
// The desc's CUDA settings (wd__train resolved the environment's overrides
// into them; the CPU device reads none: all 0). cuda.sparse leaves the
// replicas identical either way, but the two paths sum in other orders:
// compared as a policy.
static void wd__settings_cuda(wd__settings *r, const wd_train_desc *d) {
    wd_cuda_desc e;
    memset(&e, 0, sizeof e);
    if (d->device == WD_DEVICE_CUDA) e = d->cuda;
    wd__set(r, "cuda.exchange_cap (WD_EXCHANGE_CAP)", (uint64_t)e.exchange_cap, NULL);
    wd__set(r, "cuda.exchange_full (WD_EXCHANGE_FULL)", (uint64_t)e.exchange_full, NULL);
    wd__set(r, "cuda.check_tables (WD_CHECK_TABLES)", (uint64_t)e.check_tables, NULL);
    wd__set(r, "cuda.sparse (WD_CUDA_SPARSE)", (uint64_t)e.sparse, e.sparse ? "fused" : "segmented");
}
static void wd__settings_fill(const wd__run *run, wd__settings *r) {
    const wd_model *m = run->m;
    const wd_model_desc *md = &m->d;
    const wd_train_desc *d = run->d;
    memset(r, 0, sizeof *r);
    uint64_t h = wd_mix64(0xA6EE5EEDull ^ (uint64_t)m->schema.ndense) + (uint64_t)m->schema.nslots;
    for (int k = 0; k < m->schema.nslots; k++) {
        const wd_slot *sl = &m->schema.slot[k];
        for (size_t i = 0; i < sizeof sl->name && sl->name[i]; i++) h = wd_mix64(h ^ (uint8_t)sl->name[i]);
        h = wd_mix64(h ^ ((uint64_t)sl->buckets << 8 ^ (uint64_t)(uint32_t)sl->kind));
    }
    float fl[] = {md->lr_deep, md->lr_wide, md->ftrl_beta, md->ftrl_l1, md->ftrl_l2, md->adagrad_init, md->adam_beta1,
                  md->adam_beta2, md->adam_eps, md->emb_init};
    h = wd__fp_floats(h, fl, (int64_t)(sizeof fl / sizeof fl[0]), 64);
    int64_t iv[] = {md->embed_dim, md->optimizer, md->pooling, md->ncross, md->cross_buckets, md->no_wide, md->no_deep,
                    (int64_t)md->seed};
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++) h = wd_mix64(h ^ (uint64_t)iv[i]) + i;
    for (int l = 0; l < WD_MAX_LAYERS; l++) h = wd_mix64(h ^ (uint64_t)md->hidden[l]);
    for (int c = 0; c < md->ncross && c < WD_MAX_CROSSES; c++)
        h = wd_mix64(h ^ ((uint64_t)md->cross[c][0] << 32 | (uint32_t)md->cross[c][1]));
    // the MLP and the wide dense weights whole; the tables sampled
    uint64_t ph = wd__fp_floats(wd__fp_floats(0x9A7A, m->dense, m->P, INT64_MAX), m->wide, m->wide_rows, 1 << 16);
    ph = wd__fp_floats(ph, m->emb, m->emb ? m->emb_rows * m->E : 0, 1 << 16);
    char pos[40];
    snprintf(pos, sizeof pos, "epoch %lld, batch %lld, step %lld", (long long)m->epoch, (long long)m->batch,
             (long long)m->step);
    wd__set(r, "device", (uint64_t)d->device, d->device == WD_DEVICE_CUDA ? "cuda" : "cpu");
    wd__set_fp(r, "model description (schema, sizes, optimizers, seed)", h);
    wd__set(r, "precision", (uint64_t)md->precision, md->precision == WD_PRECISION_BF16 ? "bf16" : "fp32");
    wd__set_fp(r, "parameters (dense, sampled tables)", ph);
    wd__set(r, "training position", wd_mix64(wd_mix64(wd_mix64((uint64_t)m->epoch) ^ (uint64_t)m->batch) ^
                                              (uint64_t)m->step), pos);
    wd__set(r, "batch_size", (uint64_t)m->batch_size, NULL);
    wd__set_fp(r, "training files", m->data_fp);
    wd__set_fp(r, "validation files", run->valid_fp);
    wd__set(r, "epochs", (uint64_t)run->epochs, NULL);
    wd__set(r, "max_steps", (uint64_t)d->max_steps, NULL);
    wd__set(r, "eval_every", (uint64_t)(d->nvalid > 0 ? d->eval_every : 0), NULL);
    wd__set(r, "checkpoint_every", (uint64_t)d->checkpoint_every, NULL);   // every rank waits at its steps
    wd__set(r, "publish_every", (uint64_t)d->publish_every, NULL);
    wd__set(r, "early_stop", (uint64_t)d->early_stop, NULL);
    wd__set(r, "no_shuffle", (uint64_t)d->no_shuffle, NULL);
    wd__settings_cuda(r, d);
    for (int k = 0; k < m->schema.nslots && k < WD_MAX_SLOTS; k++) r->vocab[k] = wd_vocab_fingerprint(m->in.vocab, k);
}
// The first difference between rank q's settings and rank 0's into mis ("" if none).
static void wd__settings_diff(const wd__settings *r0, const wd__settings *rq, int q, const wd_schema *schema,
                              char *mis, size_t n) {
    for (int i = 0; i < r0->n; i++)
        if (rq->s[i].v != r0->s[i].v || strcmp(rq->s[i].name, r0->s[i].name)) {
            snprintf(mis, n, "rank %d's %.56s is %.40s, rank 0's %.40s: it must be equal on every rank", q,
                     rq->s[i].name, rq->s[i].show, r0->s[i].show);
            return;
        }
    for (int k = 0; k < WD_MAX_SLOTS; k++)
        if (rq->vocab[k] != r0->vocab[k]) {
            snprintf(mis, n, "rank %d's vocabulary of slot %d (%.31s) has fingerprint %016llx, rank 0's %016llx: every "
                     "rank must train the same model on files converted alike (--schema-from)", q, k,
                     k < schema->nslots ? schema->slot[k].name : "?", (unsigned long long)rq->vocab[k],
                     (unsigned long long)r0->vocab[k]);
            return;
        }
}
// The check (see above), every process's wd_train at once: WD_OK on every
// rank, or the same WD_ERR_INVALID_ARG on every rank; a failed collective
// (another rank's abort, a timeout) as it failed.
static wd_status wd__settings_check(const wd__run *run, wd_comm *c) {
    int P = c->size;
    wd__settings *rec = WD__NEW(wd__settings);
    const void **views = (const void **)wd__calloc(sizeof(void *) * (size_t)P);
    size_t *sizes = (size_t *)wd__calloc(sizeof(size_t) * (size_t)P);
    wd_status st = rec && views && sizes ? WD_OK
                                         : wd__fail(WD_ERR_NOMEM, "out of memory for the settings of %d ranks", P);
    if (!st) {
        wd__settings_fill(run, rec);
        st = c->ops->allgather(c, rec, sizeof *rec, views, sizes);
    }
    char mis[WD__ERR_MAX] = "";
    for (int q = 1; !st && !mis[0] && q < P; q++) {
        if (sizes[q] != sizeof *rec || sizes[0] != sizeof *rec)
            snprintf(mis, sizeof mis, "rank %d sent %zu bytes of settings, rank 0 %zu, this rank's library %zu: every "
                     "rank must run the same widedeep.h", q, sizes[q], sizes[0], sizeof *rec);
        else wd__settings_diff((const wd__settings *)views[0], (const wd__settings *)views[q], q, &run->m->schema,
                               mis, sizeof mis);
    }
    // the views may be the other ranks' own records (a shared-memory
    // communicator): nobody leaves before everyone has read them. A mismatch
    // wins over the barrier's failure: every rank found it, and one that
    // left first may have aborted already (the failure policy)
    if (!st) st = c->ops->barrier(c);
    wd__free(rec); wd__free(views); wd__free(sizes);
    if (mis[0]) return wd__fail(WD_ERR_INVALID_ARG, "start-up: %s", mis);
    return st;
}

// ---- the training loop: one per rank, the same for every backend --------------------------------
// Epochs done, with the current one's fraction.
static double wd__epoch_f(const wd__run *run) {
    return (double)run->m->epoch + (run->epoch_batches > 0 ? (double)run->m->batch / (double)run->epoch_batches : 0.0);
}
static int wd__call_progress(wd__rank *k, double loss, double auc, double ll) {
    wd__run *run = k->run;
    const wd_train_desc *d = run->d;
    if (!d->progress) return 0;
    wd_progress p;
    memset(&p, 0, sizeof p);
    p.step = run->m->step; p.epoch = run->m->epoch; p.samples = run->rep->samples; p.loss = loss;
    p.elapsed_s = wd__now() - run->t0;
    p.epoch_f = wd__epoch_f(run);
    // the loop's stages, the backend's (host-side counters: safe between steps), the rest as other
    for (int s = 0; s < WD_STAGE_COUNT; s++) p.stage_s[s] = k->stage[s];
    if (k->be) run->ops->times(k->be, p.stage_s);
    double known = 0;
    for (int s = 0; s < WD_STAGE_OTHER; s++) known += p.stage_s[s];
    p.stage_s[WD_STAGE_OTHER] = WD__MAX(0.0, p.elapsed_s - known);
    p.samples_per_s = p.elapsed_s > 0 ? (double)p.samples / p.elapsed_s : 0;
    int64_t done = run->rep->steps;
    p.eta_s = done > 0 && run->total_steps > p.step
        ? p.elapsed_s / (double)done * (double)(run->total_steps - p.step) : 0;
    p.valid_auc = auc; p.valid_logloss = ll;
    p.warning = run->warning;
    return d->progress(d->user, &p);
}
// Validation after `step` (no step in flight), called by every rank at
// once: each scores its share of the validation blocks on its backend and
// the scores are gathered (wd__evalio.comm), so the AUC is exact over every
// sample and the same on every rank. Each process's local rank 0 keeps it
// (its report, best, early stop: every process stops at the same step) and
// calls progress; rank 0 alone saves the best model (keep_best).
static wd_status wd__validate(wd__rank *k, int64_t step) {
    wd__run *run = k->run;
    const wd_train_desc *d = run->d;
    wd__evalio io;
    memset(&io, 0, sizeof io);
    io.files = d->valid_files; io.nfiles = d->nvalid; io.batch = run->batch;
    io.loader_threads = d->loader_threads; io.map = d->map; io.map_user = d->map_user;
    io.comm = run->comm[k->local]; io.what = "validation";
    wd_metrics mt;
    if (k->last_eval == step) return WD_OK;   // this model was validated already
    k->last_eval = step;
    wd_status st = wd__eval_run(run->m, run->ops, k->be, &io, &mt);
    if (st)
        return st == WD_ERR_ABORTED ? st
            : wd__fail(st, "validation: %s", wd_last_error());   // another rank's failure names itself
    if (k->local != 0) return WD_OK;
    run->rep->valid_auc = mt.auc; run->rep->valid_logloss = mt.logloss;
    if (mt.auc > run->best_auc || (isnan(run->best_auc) && !isnan(mt.auc))) {   // NaN never improves
        run->best_auc = mt.auc; run->best_step = run->m->step; run->stale = 0;
        run->rep->best_auc = mt.auc; run->rep->best_step = run->m->step; run->rep->best_epoch = wd__epoch_f(run);
        if (d->keep_best && k->rank == 0) {   // checkpoint_path holds the best model
            st = run->ops->download(k->be);
            if (!st) st = wd_model_save(run->m, d->checkpoint_path);
            if (st) return st;
        }
    } else if (d->early_stop > 0 && !isnan(mt.auc) && ++run->stale >= d->early_stop && !run->stop)
        run->stop = 2;   // an undefined AUC (one class) judges nothing
    if (wd__call_progress(k, run->rep->last_loss, mt.auc, mt.logloss) && !run->stop) run->stop = 1;
    return WD_OK;
}
// The oldest step in flight finished: count it (every rank), report it (local rank 0).
static wd_status wd__rank_complete(wd__rank *k, int64_t *step, int64_t *in_epoch) {
    wd__run *run = k->run;
    wd_step_result r;
    wd_status st = run->ops->complete(k->be, &r);
    if (st) return st;
    if (r.stopped) { k->stopped = 1; return WD_OK; }
    (*step)++;
    if (!run->stream) (*in_epoch)++;   // a stream has no epochs: its position is the step
    if (k->local != 0) return WD_OK;
    wd_model *m = run->m;
    wd_train_report *rep = run->rep;
    m->step = *step; m->batch = *in_epoch;
    rep->steps++;
    rep->samples += (int64_t)r.samples;
    rep->last_loss = r.weight > 0 ? r.loss / r.weight : 0.0;
    if (wd__call_progress(k, rep->last_loss, NAN, NAN)) run->stop = 1;
    return WD_OK;
}
// Whether b can be a step's batch of at most `most` samples of schema s:
// its layout, arrays, CSR offsets and values; `who` names it in messages.
static wd_status wd__batch_check(const wd_batch *b, const wd_schema *s, const char *who, int most) {
    WD__TRY(wd__batch_layout(b, s, who, -1, "model"));
    if (b->n < 1 || b->n > most)
        return wd__fail(WD_ERR_INVALID_ARG, "%s holds %d samples; a step takes 1..%d (batch_size)", who, b->n, most);
    if (b->n > b->cap)
        return wd__fail(WD_ERR_INVALID_ARG, "%s says it holds %d samples, its capacity is %d", who, b->n, b->cap);
    if (!b->label || !b->weight || (s->ndense && !b->dense))
        return wd__fail(WD_ERR_INVALID_ARG, "%s has no %s array", who,
                        !b->label ? "label" : !b->weight ? "weight" : "dense");
    for (int k = 0; k < s->nslots; k++) {
        if (!b->ids[k] || (b->kind[k] == WD_MULTI_HOT && !b->offs[k]))
            return wd__fail(WD_ERR_INVALID_ARG, "%s: slot %d (%.31s) has no id array", who, k, s->slot[k].name);
        if (b->kind[k] == WD_MULTI_HOT)
            for (int i = 0; i < b->n; i++)
                if ((i == 0 && b->offs[k][0] != 0) || b->offs[k][i + 1] < b->offs[k][i]
                    || (int64_t)b->offs[k][i + 1] > b->nnz_cap)
                    return wd__fail(WD_ERR_INVALID_ARG,
                                    "%s: slot %d (%.31s): offsets of sample %d (%u..%u) are not CSR offsets into %lld ids",
                                    who, k, s->slot[k].name, i, b->offs[k][i], b->offs[k][i + 1],
                                    (long long)b->nnz_cap);
    }
    return wd__check_values(s, b, 0, b->n, who, WD_ERR_INVALID_ARG);
}
// A stream's next batch from the source, checked and padded to the rank's
// batch with weight-0 samples (as the loader pads); *out = NULL at its end.
static wd_status wd__source_next(wd__rank *k, const wd_batch **out) {
    wd__run *run = k->run;
    const wd_train_desc *d = run->d;
    const wd_batch *b = NULL;
    long long i = (long long)run->src_batches;
    *out = NULL;
    wd_set_last_error("");
    wd_status st = d->source(d->source_user, &b);
    if (st) return wd__fail(st, "training source: batch %lld (step %lld): the source failed: %s", i,
                            (long long)run->m->step + 1, wd_last_error()[0] ? wd_last_error() : wd_status_string(st));
    if (!b) return WD_OK;
    run->src_batches++;
    char who[80];
    snprintf(who, sizeof who, "training source: batch %lld", i);
    WD__TRY(wd__batch_check(b, &run->m->schema, who, run->batch));
    if (b->n == run->batch) { *out = b; return WD_OK; }
    if (!k->pad_made) {
        WD__TRY(wd_batch_init_with(&k->pad, &run->m->schema, run->batch, 0, run->ops->batch_alloc));
        k->pad_made = 1;
    }
    k->pad.n = 0;
    WD__TRY(wd_batch_append(&k->pad, b, 0, b->n));
    while (k->pad.n < run->batch) wd__pad_sample(&k->pad);
    *out = &k->pad;
    return WD_OK;
}
static wd_status wd__publish_from(wd_model *m, const wd_backend_ops *ops, wd_backend *be);
static int wd__published(const wd_model *m);
// Whether every rank waits for step n (the model's step after it) to finish
// before submitting the next: a validation (*validating; probe: the step a
// tenth into epoch 2, -1: none), a checkpoint or a publish step. Every rank
// waits there, not only rank 0 (who writes checkpoints and publishes, and
// alone needs checkpoint_path): a stop read in such a step then leaves no
// rank with a step in flight that another rank never submits.
static int wd__sync_step(const wd_train_desc *d, int64_t n, int64_t probe, int *validating) {
    *validating = d->nvalid > 0 && (n == probe || (d->eval_every > 0 && n % d->eval_every == 0));
    return *validating || (d->checkpoint_every > 0 && n % d->checkpoint_every == 0)
        || (d->publish_every > 0 && n % d->publish_every == 0);
}
// A stream's failure that training survives: counted in *count, kept as the
// report's warning and given to the progress callback (local rank 0).
static void wd__stream_warn(wd__rank *k, int64_t *count, const char *msg) {
    wd__run *run = k->run;
    (*count)++;
    size_t n = WD__MIN(strlen(msg), sizeof run->rep->warning - 1);   // cut (wd_progress.warning has it whole)
    memcpy(run->rep->warning, msg, n);
    run->rep->warning[n] = 0;
    run->warning = msg;
    if (wd__call_progress(k, run->rep->last_loss, NAN, NAN) && !run->stop) run->stop = 1;
    run->warning = NULL;
}
static int wd__model_unsound(const wd_model *m, char *what, size_t n);
// A stream's step that failed with WD_ERR_NUMERIC (wd_last_error()) is
// skipped and training goes on: a backend applies a step whole or not at
// all, and a non-finite loss or gradient is found before anything is
// written, so the model is the one after the last finished step (checked:
// an update that left the model unsound ends training, and so does the
// WD_MAX_SKIPPED-th batch in a row skipped). The failure is sticky in the
// backend, so it is made again from the model; `pending` (the batch of the
// step after it, in flight: the failure refused it) is submitted again.
// `batch` numbers the skipped batch (the source's count).
static wd_status wd__stream_skip(wd__rank *k, const wd_backend_desc *bd, int64_t *step, int64_t *in_epoch,
                                 int *inflight, const wd_batch *pending, int64_t batch) {
    wd__run *run = k->run;
    const wd_backend_ops *ops = run->ops;
    char why[WD__ERR_MAX], msg[WD__ERR_MAX + 160], what[200];
    snprintf(why, sizeof why, "%s", wd_last_error());
    snprintf(msg, sizeof msg, "training source: batch %lld (step %lld) was not trained, training goes on: %s",
             (long long)batch, (long long)*step + 1, why);
    run->skip_row = run->rep->steps == run->skip_steps ? run->skip_row + 1 : 1;
    run->skip_steps = run->rep->steps;
    if (run->skip_row >= WD_MAX_SKIPPED)
        return wd__fail(WD_ERR_NUMERIC, "training source: batch %lld (step %lld): %d batches in a row were not "
                        "trained, their steps not finite (WD_MAX_SKIPPED; the model diverged?): training ends: %s",
                        (long long)batch, (long long)*step + 1, run->skip_row, why);
    wd_status st;
    if (*inflight) {   // refused by the failure (or, had it run, counted like any step)
        if (wd__rank_complete(k, step, in_epoch) == WD_OK) pending = NULL;
        (*inflight)--;
    }
    st = ops->download(k->be);
    if (!st && wd__model_unsound(run->m, what, sizeof what))
        return wd__fail(WD_ERR_NUMERIC, "training source: batch %lld (step %lld): %s; the model is unsound: %s",
                        (long long)batch, (long long)*step + 1, why, what);
    if (!st) {
        ops->times(k->be, k->stage);   // its seconds stay counted
        ops->destroy(k->be);
        k->be = NULL;
        st = ops->create(bd, &k->be);
        k->host_holds = st != WD_OK;   // the model after the last finished step is kept (wd__train_error_save)
    }
    if (st) return st;
    wd__stream_warn(k, &run->rep->skipped, msg);
    if (pending) {
        WD__TRY(ops->submit(k->be, pending, k->local == 0 && run->stop));
        (*inflight)++;
    }
    return WD_OK;
}
// The work after a step every rank waits for (wd__sync_step): the
// validation (every rank: each scores its share), rank 0's checkpoint
// (a stream's that cannot be written is a warning) and publish.
static wd_status wd__rank_sync(wd__rank *k, int64_t step, int validating, int inflight) {
    wd__run *run = k->run;
    const wd_train_desc *d = run->d;
    wd_status st = validating ? wd__validate(k, step) : WD_OK;
    if (!st && k->rank == 0 && d->checkpoint_path && d->checkpoint_every > 0 && step % d->checkpoint_every == 0) {
        st = run->ops->download(k->be);
        wd_status cs = st ? WD_OK : wd_model_save(run->m, d->checkpoint_path);
        if (!st && !cs) run->saved_step = step;
        if (cs == WD_ERR_IO && run->stream) {   // written as a temporary and renamed: the last one stays
            char msg[WD__ERR_MAX + 160];
            snprintf(msg, sizeof msg, "the checkpoint after step %lld (training source: batch %lld) was not "
                     "written, training goes on (the next one tries again): %s", (long long)step,
                     (long long)run->src_batches - 1 - inflight, wd_last_error());
            wd__stream_warn(k, &run->rep->checkpoints_failed, msg);
        } else if (cs) st = cs;
    }
    if (!st && k->rank == 0 && d->publish_every > 0 && step % d->publish_every == 0)
        st = wd__publish_from(run->m, run->ops, k->be);
    return st;
}
// One epoch's steps (a stream's: until it ends), at most two in flight, then
// the drain (also after an error: the first error wins). *over: 1 the epoch
// ended, 2 a stream's last step (at max_steps) was skipped and another batch
// takes its place, 0 otherwise (max_steps, a stop, an error).
static wd_status wd__rank_epoch(wd__rank *k, const wd_backend_desc *bd, int64_t epoch, int64_t *step,
                                int64_t *in_epoch, int *over) {
    wd__run *run = k->run;
    const wd_train_desc *d = run->d;
    const wd_backend_ops *ops = run->ops;
    wd_status st = WD_OK;
    if (run->stream) run->total_steps = d->max_steps;   // a stream's length is unknown
    else st = wd_loader_reset(k->loader, epoch, *in_epoch);
    if (!st && !run->stream && k->local == 0 && run->total_steps == 0) {   // every epoch has as many batches
        run->epoch_batches = wd_loader_batches(k->loader);
        run->total_steps = *step + (run->epochs - epoch) * wd_loader_batches(k->loader) - *in_epoch;
        if (d->max_steps > 0) run->total_steps = WD__MIN(run->total_steps, d->max_steps);
    }
    // Deep CTR models overfit sharply at the start of their second epoch (the
    // one-epoch phenomenon): with validation, the second epoch is validated
    // a tenth of the way in too, besides at its start and end.
    int64_t probe = epoch == 1 && d->nvalid > 0 && !run->stream && !st
                        ? *step - *in_epoch + WD__MAX(1, wd_loader_batches(k->loader) / 10) : -1;
    int inflight = 0;
    int64_t submitted = *step;
    *over = 0;
    while (!st && !k->stopped && !(d->max_steps > 0 && submitted >= d->max_steps)) {
        const wd_batch *b = NULL;
        double t0 = wd__now();
        st = run->stream ? wd__source_next(k, &b) : wd_loader_next(k->loader, &b);
        k->stage[WD_STAGE_DATA] += wd__now() - t0;
        if (!st && !b) *over = 1;
        if (st || !b) break;
        wd_oov_count(run->m->in.vocab, b, &k->oov);
        if ((st = ops->submit(k->be, b, k->local == 0 && run->stop)) != WD_OK) break;
        submitted++; inflight++;
        // Validation and checkpoints see exactly the model after their step (wd__sync_step).
        int validating;
        int sync = wd__sync_step(d, submitted, probe, &validating);
        while (!st && inflight > (sync ? 0 : 1)) {
            st = wd__rank_complete(k, step, in_epoch);
            inflight--;
            if (st == WD_ERR_NUMERIC && run->stream) {   // skipped; the step after it (b) goes again
                int64_t bad = run->src_batches - 1 - inflight, done = *step;   // the source's count of its batch
                st = wd__stream_skip(k, bd, step, in_epoch, &inflight, inflight ? b : NULL, bad);
                submitted = *step + inflight;
                // a step that finished before the skip had its validation, checkpoint and publish
                sync = submitted > done && wd__sync_step(d, submitted, probe, &validating);
            }
        }
        if (st || k->stopped || !sync) continue;
        double t1 = wd__now();
        st = wd__rank_sync(k, *step, validating, inflight);
        k->stage[WD_STAGE_OTHER] += wd__now() - t1;
    }
    int held = st != 0;   // the drain keeps the first error (wd_error_hold)
    if (held) wd_error_hold(1);
    while (inflight > 0) {
        wd_status s2 = wd__rank_complete(k, step, in_epoch);
        inflight--;
        if (s2 == WD_ERR_NUMERIC && run->stream && !st && !inflight) {   // the last step: skipped
            s2 = wd__stream_skip(k, bd, step, in_epoch, &inflight, NULL, run->src_batches - 1);
            if (!s2 && !*over && !run->stop) *over = 2;
        }
        if (!st && s2) { st = s2; held = 1; wd_error_hold(1); }
    }
    if (held) wd_error_hold(0);
    return st;
}
// One rank's training: its loader shard (or the stream) through its backend.
// Any error returns at once (wd__rank_thread applies the failure policy).
static wd_status wd__rank_train(wd__rank *k) {
    wd__run *run = k->run;
    const wd_train_desc *d = run->d;
    const wd_backend_ops *ops = run->ops;
    wd_model *m = run->m;
    wd_comm *jc = run->comm[k->local];
    if (jc && run->nlocal == 1) WD__TRY(wd__settings_check(run, jc));   // processes only
    wd_backend_desc bd;
    memset(&bd, 0, sizeof bd);
    bd.model = m; bd.batch = run->batch; bd.rank = k->rank; bd.ranks = run->ranks;
    bd.device = run->device[k->local]; bd.threads = d->threads; bd.comm = jc;
    bd.cuda = d->cuda;
    WD__TRY(ops->create(&bd, &k->be));
    if (!run->stream) {
        wd_loader_desc ld;
        memset(&ld, 0, sizeof ld);
        ld.files = d->files; ld.nfiles = d->nfiles; ld.batch_size = run->batch;
        ld.shard_index = k->rank; ld.shard_count = run->ranks;
        ld.threads = d->loader_threads > 0 ? d->loader_threads : ops == wd_backend_cpu() ? 1 : 0;
        ld.devices = run->nlocal; ld.ram_bytes = d->loader_ram;
        ld.shuffle = !d->no_shuffle; ld.seed = m->d.seed;
        ld.remainder = WD_REMAINDER_PAD;
        ld.map = d->map; ld.map_user = d->map_user;
        ld.batch_alloc = ops->batch_alloc;
        WD__TRY(wd_loader_open(&ld, &k->loader));
    }
    int publish = k->rank == 0 && d->publish_every > 0;
    if (publish) WD__TRY(wd__publish_from(m, ops, k->be));   // predictions never read the live model
    // every rank keeps its own copy of the position; local rank 0 writes the model's
    int64_t epoch = m->epoch, in_epoch = m->batch, step = m->step;
    wd_status st = WD_OK;
    double t_loop = wd__now();
    while (!st && !k->stopped && epoch < run->epochs && !(d->max_steps > 0 && step >= d->max_steps)) {
        int over = 0;
        st = wd__rank_epoch(k, &bd, epoch, &step, &in_epoch, &over);
        if (!st && over == 2 && !k->stopped) continue;
        if (st || k->stopped || !over) break;
        if (!run->stream) {
            epoch++;
            in_epoch = 0;
            if (k->local == 0) { m->epoch = epoch; m->batch = 0; }
        }
        if (d->nvalid > 0) {   // every rank: each scores its share (a stream: once, at its end)
            double t1 = wd__now();
            st = wd__validate(k, step);
            k->stage[WD_STAGE_OTHER] += wd__now() - t1;
        }
        if (run->stream) break;
    }
    k->loop_s = wd__now() - t_loop;
    if (!st && k->local == 0) st = ops->download(k->be);   // the host model holds the result
    if (!st && k->rank == 0 && (publish || wd__published(m)))   // predictions see the end
        st = wd__publish_from(m, ops, k->be);
    return st;
}

// ---- the failure policy: fail fast --------------------------------------------------------------
// The failure policy (fail fast), the one place: a rank that failed, at any
// point, aborts its communicator, so that every other rank's pending and
// later collectives end with "rank R failed (status): reason" (over NCCL
// between processes: at the timeout). A rank that failed because another
// did (WD_ERR_ABORTED from a collective) aborts too: the communicator keeps
// the first reason. wd_train reports the first failure that is not such an
// abort (wd__train_first_error), naming its rank when the process has several.
static void *wd__rank_thread(void *arg) {
    wd__rank *k = (wd__rank *)arg;
    k->st = wd__rank_train(k);
    if (!k->st) return NULL;
    snprintf(k->err, sizeof k->err, "%s", wd_last_error());
    wd_comm *c = k->run->comm[k->local];
    if (c) c->ops->abort(c, k->st, k->err);
    return NULL;
}
// The status of a run whose ranks ended: the first failure that is not an
// abort caused by another rank's, its message naming the rank when this
// process ran several.
static wd_status wd__train_first_error(const wd__run *run, const wd__rank *ks) {
    wd_status st = WD_OK;
    int who = 0;
    for (int i = 0; i < run->nlocal; i++)   // the first real error; aborts follow from it
        if (ks[i].st && (!st || (st == WD_ERR_ABORTED && ks[i].st != WD_ERR_ABORTED))) { st = ks[i].st; who = i; }
    char msg[WD__ERR_MAX];
    if (st && run->nlocal > 1) wd_rank_failure(msg, sizeof msg, ks[who].rank, st, ks[who].err);
    if (st) wd__fail(st, "%s", run->nlocal > 1 ? msg : ks[who].err);
    return st;
}
// An error after finished steps keeps them: a backend applies a step
// whole or not at all (a non-finite step is not applied; a GPU replica
// that holds a failed step refuses its download), so rank 0
// holds the model after the last finished step, and the position
// says which; it is saved marked as saved after an error.
static void wd__train_error_save(wd__run *run, const wd__rank *k0, wd_status st) {
    const wd_train_desc *d = run->d;
    wd_train_report *rep = run->rep;
    wd_model *m = run->m;
    if (!(st && !rep->stopped && rep->steps > 0 && d->checkpoint_path && run->first == 0 &&
          (k0->be || k0->host_holds) && !(d->keep_best && run->best_step >= 0)))
        return;
    char err[WD__ERR_MAX];
    snprintf(err, sizeof err, "%s", wd_last_error());
    wd_status s2 = k0->be ? run->ops->download(k0->be) : WD_OK;
    if (!s2) { m->after_error = 1; s2 = wd_model_save(m, d->checkpoint_path); }
    if (s2 && run->saved_step >= 0)
        wd__fail(st, "%s; the model of step %lld could not be saved (%s): %s holds the checkpoint of step %lld",
                 err, (long long)m->step, wd_last_error(), wd__tail(d->checkpoint_path, 300),
                 (long long)run->saved_step);
    else if (s2)
        wd__fail(st, "%s; the model of step %lld could not be saved: %s", err, (long long)m->step,
                 wd_last_error());
    else {
        rep->error_saved = 1;
        wd__fail(st, "%s; the model after step %lld (epoch %lld, batch %lld), the last step finished before this "
                 "error, is saved to %s", err, (long long)m->step, (long long)m->epoch, (long long)m->batch,
                 wd__tail(d->checkpoint_path, 300));
    }
}
// ... and predictions see them: a snapshot (a trainer's, publish_every's) would keep an older model
static void wd__train_error_publish(wd__run *run, const wd__rank *k0, wd_status st) {
    wd_model *m = run->m;
    if (!(st && run->rep->steps > 0 && run->first == 0 && k0->be && wd__published(m))) return;
    char err[WD__ERR_MAX];
    snprintf(err, sizeof err, "%s", wd_last_error());
    wd_status s2 = run->ops->download(k0->be);
    char bad[160];
    if (!s2 && wd__model_unsound(m, bad, sizeof bad)) s2 = wd__fail(WD_ERR_NUMERIC, "%s", bad);
    if (!s2) s2 = wd_model_publish(m);
    if (s2)
        wd__fail(st, "%s; predictions keep the last snapshot: the model of step %lld could not be "
                 "published: %s", err, (long long)m->step, wd_last_error());
    else wd__fail(st, "%s", err);
}

// ---- wd_train: the desc checked, the ranks set up and run, the report ---------------------------
// The batch size of a run: the desc's, the checkpoint's, or 4096 halved
// until an epoch has >= 100 steps (never below 32); a multiple of ranks.
static wd_status wd__batch_size(const wd_model *m, const wd_train_desc *d, int64_t samples, int ranks, int *out) {
    int64_t B = d->batch_size > 0 ? d->batch_size : m->batch_size > 0 ? m->batch_size : 4096;
    if (d->batch_size <= 0 && m->batch_size <= 0) {
        while (B > 32 && B * 100 > samples) B /= 2;
        B = WD__MAX(B - B % ranks, ranks);
    }
    if (B % ranks)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: batch_size %lld does not split over %d ranks",
                        (long long)B, ranks);
    if (m->batch > 0 && m->batch_size > 0 && B != m->batch_size)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_train: resuming in the middle of epoch %lld needs the checkpoint's batch size %lld, not %lld",
                        (long long)m->epoch, (long long)m->batch_size, (long long)B);
    *out = (int)B;
    return WD_OK;
}
// Checks a train desc, one rule per line, each message naming the setting.
static wd_status wd__train_check(const wd_model *m, const wd_train_desc *d) {
    if (!m) return wd__fail(WD_ERR_INVALID_ARG, "wd_train: model is NULL");
    if (!d) return wd__fail(WD_ERR_INVALID_ARG, "wd_train: desc is NULL");
    if (m->weights_only)
        return wd__fail(WD_ERR_UNSUPPORTED, "wd_train: the model was exported for serving (wd_model_export, or "
                        "loaded by wd_model_load_weights: weights only, no optimizer state to continue from); train "
                        "its checkpoint (wd_model_load)");
    if (d->source && (d->files || d->nfiles))
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_train: both training files and a source are given; train from one of them");
    if (!d->source && (!d->files || d->nfiles <= 0))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: files and nfiles > 0 (or a source) are required");
    if (d->source && d->epochs)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_train: epochs %d with a source: a stream has no epochs (it ends when the source gives no batch; max_steps limits it)", d->epochs);
    if (d->source && (m->epoch > 0 || m->batch > 0))
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_train: the model is at epoch %lld, batch %lld of a run over files; a stream starts a new run: call wd_model_new_run first (the CLI's --init-from)",
                        (long long)m->epoch, (long long)m->batch);
    if (d->publish_every < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: publish_every %lld is negative", (long long)d->publish_every);
    if (d->nvalid < 0 || (d->nvalid > 0 && !d->valid_files))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: nvalid %d without valid_files", d->nvalid);
    if (d->epochs < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_train: epochs %d is negative", d->epochs);
    if (d->batch_size < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_train: batch_size %d is negative", d->batch_size);
    if (d->threads < 0 || d->threads > 256)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: threads %d is outside 0..256", d->threads);
    if (d->loader_threads < 0 || d->loader_threads > 256)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: loader_threads %d is outside 0..256", d->loader_threads);
    if (d->devices < WD_ALL_GPUS || d->devices > 256)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: devices %d is outside 0..256 (or WD_ALL_GPUS)", d->devices);
    if (d->max_steps < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: max_steps %lld is negative", (long long)d->max_steps);
    if (d->checkpoint_every < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: checkpoint_every %lld is negative",
                        (long long)d->checkpoint_every);
    // rank 0 alone writes checkpoints: another rank of a job needs no checkpoint_path (nor a directory to probe)
    int writes = !d->comm || d->comm->rank == 0;
    if (d->checkpoint_every > 0 && !d->checkpoint_path && writes)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: checkpoint_every without checkpoint_path");
    if (d->eval_every < 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: eval_every %lld is negative", (long long)d->eval_every);
    if (d->early_stop < 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_train: early_stop %d is negative", d->early_stop);
    if (d->early_stop > 0 && d->nvalid == 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: early_stop needs validation files (valid_files)");
    if (d->keep_best && d->nvalid == 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: keep_best needs validation files (valid_files)");
    if (d->keep_best && !d->checkpoint_path)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: keep_best needs checkpoint_path (where the best model goes)");
    if (d->keep_best && d->checkpoint_every)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_train: keep_best and checkpoint_every would both write checkpoint_path; choose one");
    if (d->checkpoint_path && writes) {   // a checkpoint that cannot be written fails now, not after the epochs
        wd__outfile o;
        WD__TRY(wd__out_open(&o, d->checkpoint_path));
        wd__out_abort(&o);
        for (int f = 0; f < d->nfiles; f++)
            if (wd_same_file(d->files[f], d->checkpoint_path))
                return wd__fail(WD_ERR_INVALID_ARG,
                                "wd_train: checkpoint_path %s is training file %d: it would be destroyed",
                                d->checkpoint_path, f + 1);
        for (int f = 0; f < d->nvalid; f++)
            if (wd_same_file(d->valid_files[f], d->checkpoint_path))
                return wd__fail(WD_ERR_INVALID_ARG,
                                "wd_train: checkpoint_path %s is validation file %d: it would be destroyed",
                                d->checkpoint_path, f + 1);
    }
    if (d->comm && (d->comm->size < 1 || d->comm->rank < 0 || d->comm->rank >= d->comm->size))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: comm has rank %d of %d", d->comm->rank, d->comm->size);
    return WD_OK;
}

// wd_train (*ran: its ranks ran; each applies the failure policy itself).
static wd_status wd__train(wd_model *m, const wd_train_desc *d, wd_train_report *rep, int *ran);
// One training at a time per model (wd_train, a trainer): two would write the
// same parameters. Released by wd__train_release.
static wd_status wd__train_claim(wd_model *m, const char *who) {
    int idle = 0;
    if (m && !__atomic_compare_exchange_n(&m->training, &idle, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return wd__fail(WD_ERR_INVALID_ARG, "%s: the model is being trained already (by a trainer or wd_train): "
                        "one training at a time per model; close the trainer (or wait for wd_train) first", who);
    return WD_OK;
}
static void wd__train_release(wd_model *m) { if (m) __atomic_store_n(&m->training, 0, __ATOMIC_RELEASE); }
// wd_train once the model is claimed (st: the claim's failure). A failure
// before the ranks ran aborts a job's communicator (the failure policy: the
// other processes' settings check ends naming this rank).
static wd_status wd__train_run(wd_model *m, const wd_train_desc *d, wd_train_report *rep, wd_status st) {
    int ran = 0;
    wd_train_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);   // every failure leaves it so (the claim's too)
    rep->valid_auc = rep->valid_logloss = rep->best_auc = rep->best_epoch = NAN;
    rep->best_step = -1;
    if (!st) st = wd__train(m, d, rep, &ran);
    if (st && !ran && d && d->comm && d->comm->size > 1 && d->comm->ops)
        d->comm->ops->abort(d->comm, st, wd_last_error());
    return st;
}
WDDEF wd_status wd_train(wd_model *m, const wd_train_desc *d, wd_train_report *rep) {
    wd_status claim = wd__train_claim(m, "wd_train");
    wd_status st = wd__train_run(m, d, rep, claim);
    if (!claim) wd__train_release(m);
    return st;
}
// The training and validation files of d, every one opened and its input
// contract matched before anything starts: against the model's, or (a
// model that has none recorded yet) the first training file's, which the
// model then records. Training files may extend the model's vocabularies
// (wd_convert's extend_vocab): the model records the longer lists, and
// validation files must agree with them. A stream has no files: it
// records nothing, and validation files are checked against the model's
// vocabularies only when it has some. *samples, *fp, *vfp: the training
// files' samples and fingerprint, the validation files' fingerprint
// (wd__check_files; 0 where none). A model's position must belong to
// these training files.
static wd_status wd__train_files(wd_model *m, const wd_train_desc *d, int64_t *samples, uint64_t *fp, uint64_t *vfp) {
    wd__contract files, next;
    memset(&files, 0, sizeof files);
    memset(&next, 0, sizeof next);
    const wd__contract *want = m->in.known ? &m->in : NULL;
    wd_status cst = WD_OK;
    if (d->source) cst = wd__check_files(m, d->valid_files, d->nvalid, "validation", NULL, vfp, want, NULL);
    else {
        cst = wd__check_files(m, d->files, d->nfiles, "training", samples, fp, want, &files);
        if (!cst && want) cst = wd__vocab_longer(want->vocab, files.vocab, &next.vocab);
        next.spec = want ? want->spec : NULL;   // borrowed: validation meets the model's format and its longer lists
        if (!cst)
            cst = wd__check_files(m, d->valid_files, d->nvalid, "validation", NULL, vfp, want ? &next : &files, NULL);
    }
    if (cst) { wd__contract_free(&files); wd__vocab_free(next.vocab); return cst; }
    if (!d->source) {
        if (!m->in.known) { m->in = files; memset(&files, 0, sizeof files); }
        else { wd__vocab_free(m->in.vocab); m->in.vocab = next.vocab; }
    }
    wd__contract_free(&files);
    if (!d->source && *samples == 0)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_train: the training files hold no samples");
    if ((m->epoch > 0 || m->batch > 0) && m->data_fp && m->data_fp != *fp)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_train: the model's position (epoch %lld, batch %lld) belongs to a run over other training files: "
                        "resuming continues a run on the same files; to train on new data from this model, start a new run "
                        "(wd_model_new_run; the CLI's --init-from instead of --resume)", (long long)m->epoch,
                        (long long)m->batch);
    return WD_OK;
}
// The ranks of a run: this process's one rank of a job spanning processes
// (d->comm), or one per device of this process (devices counted before any
// is touched), their communicator made here (*own_comm).
static wd_status wd__train_devices(wd__run *run, const wd_device_ops *dev, int *own_comm) {
    const wd_train_desc *d = run->d;
    const wd_backend_ops *ops = run->ops;
    wd_status st = WD_OK;
    if (d->comm) {   // this process is one rank of a job spanning processes
        run->ranks = d->comm->size; run->nlocal = 1; run->first = d->comm->rank;
        run->device[0] = d->device_ids ? d->device_ids[0] : d->device_index;
        run->comm[0] = run->ranks > 1 ? d->comm : NULL;
    } else {
        int n = 1, have = 1;
        if (dev) {   // devices counted before any is touched
            st = dev->count(&have);
            n = d->devices == WD_ALL_GPUS ? have : d->devices > 0 ? d->devices : 1;
        }
        run->ranks = run->nlocal = n;
        for (int r = 0; r < n; r++) run->device[r] = d->device_ids ? d->device_ids[r] : r;
        for (int r = 0; !st && r < n; r++)
            if (run->device[r] < 0 || run->device[r] >= have)
                st = d->device_ids ? wd__fail(WD_ERR_INVALID_ARG, "wd_train: device id %d, but %d %s device%s present",
                                              run->device[r], have, ops->name, have == 1 ? " is" : "s are")
                                   : wd__fail(WD_ERR_UNSUPPORTED, "wd_train: %d %s devices asked for, %d present", n,
                                              ops->name, have);
        if (!st && n > 1) {
            if (!dev) st = wd__fail(WD_ERR_UNSUPPORTED, "wd_train: the %s device trains as one rank", ops->name);
            else { st = dev->comm_create(n, run->device, run->comm); *own_comm = !st; }
        }
    }
    if (!st && run->stream && run->ranks > 1)
        st = wd__fail(WD_ERR_UNSUPPORTED, "wd_train: a source trains one rank (%d asked for): one CPU or one GPU",
                      run->ranks);
    return st;
}
// Runs this process's ranks: one on the calling thread, several on a
// thread each (a thread that cannot start fails its rank, which aborts the
// others), and returns when every one ended.
static void wd__train_go(wd__run *run, wd__rank *ks) {
    pthread_t th[256];
    int started = 0;
    for (int i = 0; i < run->nlocal; i++) { ks[i].run = run; ks[i].local = i; ks[i].rank = run->first + i;
        ks[i].last_eval = -1; }
    if (run->nlocal == 1) wd__rank_thread(&ks[0]);
    else for (int i = 0; i < run->nlocal; i++) {
        if (wd__thread_start(&th[i], wd__rank_thread, &ks[i]) != 0) {
            ks[i].st = wd__fail(WD_ERR_NOMEM, "cannot start the thread of rank %d", ks[i].rank);
            snprintf(ks[i].err, sizeof ks[i].err, "%s", wd_last_error());
            run->comm[i]->ops->abort(run->comm[i], ks[i].st, ks[i].err);
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}
// The report of local rank 0 (this process's): how it stopped, its loop's
// seconds and stages (the rest of them as other), its backend's engine.
static void wd__train_report_rank0(const wd__run *run, const wd__rank *k0) {
    wd_train_report *rep = run->rep;
    rep->stopped = !k0->stopped ? 0 : run->stop == 2 ? 2 : run->stop ? 1 : 3;   // 3: not this process's stop vote
    rep->train_s = k0->loop_s;
    for (int s = 0; s < WD_STAGE_COUNT; s++) rep->stage_s[s] = k0->stage[s];
    if (k0->be) { run->ops->times(k0->be, rep->stage_s); run->ops->describe(k0->be, rep->engine, sizeof rep->engine); }
    double known = 0;
    for (int s = 0; s < WD_STAGE_OTHER; s++) known += rep->stage_s[s];
    rep->stage_s[WD_STAGE_OTHER] = WD__MAX(0.0, rep->train_s - known);
}
// Every rank's backend, loader and padded batch released; their
// out-of-vocabulary counts summed into the report.
static void wd__train_ranks_free(const wd__run *run, wd__rank *ks) {
    wd_train_report *rep = run->rep;
    for (int i = 0; i < run->nlocal; i++) {
        if (ks[i].be) run->ops->destroy(ks[i].be);
        wd_loader_close(ks[i].loader);
        rep->oov.values += ks[i].oov.values; rep->oov.oov += ks[i].oov.oov;
        for (int j = 0; j < WD_MAX_SLOTS; j++) { rep->oov.slot_values[j] += ks[i].oov.slot_values[j];
            rep->oov.slot_oov[j] += ks[i].oov.slot_oov[j]; }
        if (ks[i].pad_made) wd_batch_free(&ks[i].pad);
    }
}
// The end of a run (st: its status so far): rank 0 writes the checkpoint,
// at the end and when stopped early (with keep_best the best one was
// written already, unless none was validated); a stop asked for by the
// progress callback is WD_ERR_ABORTED.
static wd_status wd__train_finish(const wd__run *run, wd_status st) {
    const wd_train_desc *d = run->d;
    wd_model *m = run->m;
    if ((!st || run->rep->stopped) && d->checkpoint_path && run->first == 0 && !(d->keep_best && run->best_step >= 0)) {
        char err[WD__ERR_MAX];
        snprintf(err, sizeof err, "%s", wd_last_error());
        wd_status s2 = wd_model_save(m, d->checkpoint_path);
        if (s2) st = s2;
        else if (st) wd__fail(st, "%s", err);
    }
    if (!st && run->rep->stopped == 1)
        st = wd__fail(WD_ERR_ABORTED, "training stopped at step %lld by the progress callback%s%s", (long long)m->step,
                      d->checkpoint_path ? "; checkpoint saved to " : "",
                      d->checkpoint_path ? wd__tail(d->checkpoint_path, 300) : "");
    return st;
}
static wd_status wd__train(wd_model *m, const wd_train_desc *d, wd_train_report *rep, int *ran) {
    WD__TRY(wd__train_check(m, d));
    wd_train_desc resolved = *d;   // the CUDA settings after the environment's overrides (the ranks agree on these)
    if (d->device == WD_DEVICE_CUDA) WD__TRY(wd_cuda_desc_resolve(&d->cuda, &resolved.cuda));
    d = &resolved;
    double t0 = wd__now();
    const wd_backend_ops *ops;
    const wd_device_ops *dev;
    WD__TRY(wd__backend_for(d->device, &ops, &dev));
    int64_t samples = 0;
    uint64_t fp = 0, vfp = 0;
    WD__TRY(wd__train_files(m, d, &samples, &fp, &vfp));
    wd__run *run = WD__NEW(wd__run);
    if (!run) return wd__fail(WD_ERR_NOMEM, "out of memory");
    run->m = m; run->d = d; run->rep = rep; run->ops = ops; run->t0 = t0; run->valid_fp = vfp;
    run->best_auc = NAN; run->best_step = -1; run->saved_step = -1;
    rep->best_auc = rep->best_epoch = NAN; rep->best_step = -1;
    run->epochs = d->epochs > 0 ? d->epochs : 1;
    run->stream = d->source != NULL;
    int own_comm = 0;
    wd_status st = wd__train_devices(run, dev, &own_comm);
    int B = 0;
    if (!st && run->stream)
        B = d->batch_size > 0 ? d->batch_size
            : m->batch_size > 0 ? (int)m->batch_size : 4096;   // the most samples of one step
    else if (!st) st = wd__batch_size(m, d, samples, run->ranks, &B);
    if (!st) { run->batch = B / run->ranks; m->batch_size = B; m->data_fp = fp; m->after_error = 0; }
    wd__rank *ks = st ? NULL : (wd__rank *)wd__calloc(sizeof(wd__rank) * (size_t)run->nlocal);
    if (!st && !ks) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    if (!st) {
        *ran = 1;
        wd__train_go(run, ks);
        st = wd__train_first_error(run, ks);
        wd__train_report_rank0(run, &ks[0]);
        wd__train_error_save(run, &ks[0], st);
        wd__train_error_publish(run, &ks[0], st);
        wd__train_ranks_free(run, ks);
    }
    st = wd__train_finish(run, st);
    if (own_comm) {
        wd_error_hold(1);   // the communicators' teardown keeps the call's error
        dev->comm_destroy(run->comm, run->nlocal);
        wd_error_hold(0);
    }
    rep->seconds = wd__now() - t0;
    rep->samples_per_s = rep->train_s > 0 ? (double)rep->samples / rep->train_s : 0;
    wd__free(ks);
    wd__free(run);
    return st;
}
// ---- online learning: published snapshots (publish_every, wd_model_publish) ---------------------
// A snapshot is a shallow copy of the model whose parameter pointers lead to
// copies of its own (no optimizer state): wd__forward reads it like a model.
// A borrowed one (a swap's, below) leads to another model's parameters.
typedef struct wd__snap {
    wd_model view;
    int refs;                       // predictions reading it (under wd__pub.mu)
    int borrowed;                   // 1: the parameters are not its own
    wd__contract in;                // its own copy of the model's input contract (wd_model_spec), taken
    int64_t in_gen;                 // at the model's in_gen (-1: none yet): copied again when it grew
} wd__snap;
// What predictions read: cur, or the model in place while cur is NULL. A
// call takes a reference (cur's refs, or inplace) and gives it back at its
// end; a writer redirects the calls that start, then waits for those that
// hold the other reference. m->pub is made by the first predictor or publish.
typedef struct wd__pub {
    pthread_mutex_t mu;
    pthread_cond_t idle;            // a reference count fell to 0
    wd__snap *snap;                 // the one snapshot (NULL: never published)
    wd__snap *cur;                  // what calls read (NULL: the model in place)
    int inplace;                    // calls reading the model in place
    int predictors;                 // alive on the model (a swap refuses a next model that has any)
    pthread_mutex_t writer;         // one publisher or swap at a time
} wd__pub;
static void wd__snap_free(wd__snap *q) {
    if (!q) return;
    if (!q->borrowed) {
        wd__free(q->view.dense); wd__free(q->view.wide); wd__free(q->view.emb); wd__free(q->view.dense_lp);
    }
    wd__contract_free(&q->in);
    wd__free(q);
}
static void wd__pub_free(wd__pub *p) {
    if (!p) return;
    wd__snap_free(p->snap);
    pthread_mutex_destroy(&p->mu); pthread_cond_destroy(&p->idle); pthread_mutex_destroy(&p->writer);
    wd__free(p);
}
// m->pub, made on first use (predictor threads may race to make it: one wins).
static wd_status wd__pub_of(const wd_model *m, wd__pub **out) {
    wd_model *w = (wd_model *)(uintptr_t)m;
    wd__pub *p = __atomic_load_n(&w->pub, __ATOMIC_ACQUIRE);
    if (!p) {
        wd__pub *n = WD__NEW(wd__pub);
        if (!n) return wd__fail(WD_ERR_NOMEM, "out of memory for the model's publication state");
        pthread_mutex_init(&n->mu, NULL); pthread_cond_init(&n->idle, NULL); pthread_mutex_init(&n->writer, NULL);
        if (__atomic_compare_exchange_n(&w->pub, &p, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) p = n;
        else wd__pub_free(n);   // another thread's is there (p)
    }
    *out = p;
    return WD_OK;
}
// Whether predictions read a snapshot: p->snap is set only by a publish
// that succeeded (a failed one frees it), under p->writer.
static int wd__published(const wd_model *m) {
    wd__pub *p = __atomic_load_n(&((wd_model *)(uintptr_t)m)->pub, __ATOMIC_ACQUIRE);
    if (!p) return 0;
    pthread_mutex_lock(&p->writer);
    int has = p->snap != NULL;
    pthread_mutex_unlock(&p->writer);
    return has;
}
// Under p->mu: calls now read q (NULL: the model in place); returns once
// no call holds what they read before (old; NULL: the model in place).
static void wd__pub_redirect(wd__pub *p, wd__snap *q) {
    wd__snap *old = p->cur;
    p->cur = q;
    if (old == q) return;
    while (old ? old->refs > 0 : p->inplace > 0) pthread_cond_wait(&p->idle, &p->mu);
}
static wd_status wd__snap_alloc(const wd_model *m, wd__snap **out) {
    wd__snap *q = WD__NEW(wd__snap);
    if (!q) return wd__fail(WD_ERR_NOMEM, "publish: out of memory");
    wd_status st = WD_OK;
    q->view.dense = wd__alloc_floats(m->P, "the published dense parameters", &st);
    if (m->wide) q->view.wide = wd__alloc_floats(WD__MAX(m->wide_rows, 1), "the published wide weights", &st);
    if (m->emb) q->view.emb = wd__alloc_floats(m->emb_rows * m->E, "the published embedding tables", &st);
    if (!st && m->dense_lp) {
        q->view.dense_lp = (uint16_t *)wd__malloc(sizeof(uint16_t) * (size_t)WD__MAX(m->P_mlp, 1));
        if (!q->view.dense_lp) st = wd__fail(WD_ERR_NOMEM, "publish: out of memory for the bf16 weights");
    }
    if (st) { wd__snap_free(q); return st; }
    q->in_gen = -1;
    *out = q;
    return WD_OK;
}
// q->view: m's shape, description and tables' offsets around q's own
// parameter arrays (or, borrowed, m's), no optimizer state, never refreshed.
static void wd__snap_view(wd__snap *q, const wd_model *m) {
    float *dense = q->view.dense, *wide = q->view.wide, *emb = q->view.emb;
    uint16_t *lp = q->view.dense_lp;
    // the fields up to the bf16 cache's: calls reading m in place write lp_fresh and lock lp_mu meanwhile
    memcpy(&q->view, m, offsetof(wd_model, dense_lp));
    q->view.d.schema = &q->view.schema;
    q->view.dense_lp = m->dense_lp;
    if (!q->borrowed) {
        q->view.dense = dense; q->view.wide = wide; q->view.emb = emb; q->view.dense_lp = lp;
        q->view.in = q->in;
    }
    q->view.dense_s1 = q->view.dense_s2 = q->view.wide_z = q->view.wide_n = q->view.emb_s1 = q->view.emb_s2 = NULL;
    q->view.lp_fresh = 1;   // wd__lp_refresh leaves it alone (lp_mu_made, pub and training stay 0)
}
// One snapshot: while it is refilled, calls read the model in place, which
// holds the same parameters (no step runs during a publish).
WDDEF wd_status wd_model_publish(wd_model *m) {
    if (!m) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_publish: the model is NULL");
    wd__pub *p = NULL;   // (g++ -O3 cannot see wd__pub_of set it)
    WD__TRY(wd__pub_of(m, &p));
    pthread_mutex_lock(&p->writer);
    pthread_mutex_lock(&p->mu);
    wd__pub_redirect(p, NULL);   // the snapshot's readers finish
    pthread_mutex_unlock(&p->mu);
    wd_status st = WD_OK;
    if (!p->snap) st = wd__snap_alloc(m, &p->snap);
    if (!st && p->snap->in_gen != m->in_gen) {   // the vocabulary grew (or the first publish): its copy with the tables
        wd__contract_free(&p->snap->in);
        p->snap->in_gen = -1;
        st = wd__contract_copy(&m->in, &p->snap->in);
        if (!st) p->snap->in_gen = m->in_gen;
    }
    if (!st) {   // nobody reads the snapshot now: copy without the lock
        wd__snap *q = p->snap;
        wd__snap_view(q, m);
        memcpy(q->view.dense, m->dense, sizeof(float) * (size_t)m->P);
        if (q->view.wide) memcpy(q->view.wide, m->wide, sizeof(float) * (size_t)WD__MAX(m->wide_rows, 1));
        if (q->view.emb) memcpy(q->view.emb, m->emb, sizeof(float) * (size_t)(m->emb_rows * m->E));
        if (q->view.dense_lp) wd__to_bf16(q->view.dense_lp, q->view.dense, (size_t)m->P_mlp);
        pthread_mutex_lock(&p->mu);
        wd__pub_redirect(p, q);   // the calls in place finish before training goes on
        pthread_mutex_unlock(&p->mu);
    } else {   // no snapshot rather than one nobody reads: wd__published says calls read the model in place
        wd__snap_free(p->snap);
        p->snap = NULL;
    }
    pthread_mutex_unlock(&p->writer);
    return st;
}
// Before a training writes m's parameters: predictions read a snapshot,
// published now if there is none; wd_model_publish returns once the calls
// reading m in place ended (wd__pub_redirect; wd_train's start publish too).
static wd_status wd__publish_first(wd_model *m) { return wd__published(m) ? WD_OK : wd_model_publish(m); }
// The model after the backend's last step, published (no step in flight).
static wd_status wd__publish_from(wd_model *m, const wd_backend_ops *ops, wd_backend *be) {
    WD__TRY(ops->download(be));
    wd_status st = wd_model_publish(m);
    return st ? wd__fail(st, "publishing the model of step %lld: %s", (long long)m->step, wd_last_error()) : WD_OK;
}
// What a call reads, held until wd__snap_release: the current snapshot, or
// NULL for the model in place (counted, so that a swap can wait for it).
static wd__snap *wd__snap_get(wd__pub *p) {
    pthread_mutex_lock(&p->mu);
    wd__snap *q = p->cur;
    if (q) q->refs++;
    else p->inplace++;
    pthread_mutex_unlock(&p->mu);
    return q;
}
static void wd__snap_release(wd__pub *p, wd__snap *q) {
    pthread_mutex_lock(&p->mu);
    if (q ? --q->refs == 0 : --p->inplace == 0) pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->mu);
}
// wd_model_spec's source: what a prediction would read now, held.
static wd__snap *wd__spec_source(const wd_model *m, const wd_model **src) {
    wd__pub *p = __atomic_load_n(&((wd_model *)(uintptr_t)m)->pub, __ATOMIC_ACQUIRE);
    wd__snap *q = p ? wd__snap_get(p) : NULL;
    *src = q ? &q->view : m;
    return q;
}
static void wd__spec_source_end(const wd_model *m, wd__snap *q) {
    wd__pub *p = __atomic_load_n(&((wd_model *)(uintptr_t)m)->pub, __ATOMIC_ACQUIRE);
    if (p) wd__snap_release(p, q);
}

// ---- hot swap: wd_model_swap under live predictors ----------------------------------------------
// next's MLP, precision and schema against m's (a predictor's scratch and
// its callers' batches fit both): "" when they match, else the difference.
static void wd__swap_mismatch(const wd_model *m, const wd_model *n, char *why, size_t len) {
    const wd_schema *a = &m->schema, *b = &n->schema;
    why[0] = 0;
    if (m->d.precision != n->d.precision)
        snprintf(why, len, "precision %d, the served model's %d", n->d.precision, m->d.precision);
    else if (m->IN != n->IN || m->nlayers != n->nlayers)
        snprintf(why, len, "MLP input %d with %d layers, the served model's %d with %d", n->IN, n->nlayers, m->IN,
                 m->nlayers);
    else if (a->ndense != b->ndense || a->nslots != b->nslots)
        snprintf(why, len, "%d dense columns and %d slots, the served model's %d and %d", b->ndense, b->nslots,
                 a->ndense, a->nslots);
    for (int l = 0; !why[0] && l < m->nlayers; l++)
        if (m->layer[l].out != n->layer[l].out)
            snprintf(why, len, "layer %d: width %d, the served model's %d", l, n->layer[l].out, m->layer[l].out);
    for (int k = 0; !why[0] && k < a->nslots; k++)
        if (strcmp(a->slot[k].name, b->slot[k].name) || a->slot[k].kind != b->slot[k].kind ||
            a->slot[k].buckets != b->slot[k].buckets)
            snprintf(why, len, "slot %d: %.31s (%s, %u buckets), the served model's %.31s (%s, %u buckets)", k,
                     b->slot[k].name,
                     b->slot[k].kind == WD_MULTI_HOT ? "multi-hot" : "one-hot", b->slot[k].buckets, a->slot[k].name,
                     a->slot[k].kind == WD_MULTI_HOT ? "multi-hot" : "one-hot", a->slot[k].buckets);
}
// Hot swap: calls that start read a borrowed view of next's parameters;
// once the calls on the old model ended, m takes next's contents (and next
// m's old ones, freed with it), and calls read m in place again.
static wd_status wd__swap(wd_model *m, wd_model *next);
WDDEF wd_status wd_model_swap(wd_model *m, wd_model *next) {
    if (!m || !next)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_model_swap: %s is NULL", m ? "the next model" : "the served model");
    if (m == next) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_swap: the next model is the served model");
    // a training's parameters must not change under it: the claim refuses a swap during one, and one during a swap
    WD__TRY(wd__train_claim(m, "wd_model_swap (the served model)"));
    wd_status st = wd__train_claim(next, "wd_model_swap (the next model)");
    int next_claimed = !st;
    if (!st) st = wd__swap(m, next);
    if (next_claimed && st) wd__train_release(next);   // a swap that succeeded freed next
    wd__train_release(m);
    return st;
}
static wd_status wd__swap(wd_model *m, wd_model *next) {
    wd__pub *np = __atomic_load_n(&next->pub, __ATOMIC_ACQUIRE);
    if (np) {
        pthread_mutex_lock(&np->mu);
        int busy = np->predictors > 0 || np->snap;
        pthread_mutex_unlock(&np->mu);
        if (busy)
            return wd__fail(WD_ERR_INVALID_ARG, "wd_model_swap: the next model has predictors or a published snapshot "
                            "of its own");
    }
    char why[300];
    wd__swap_mismatch(m, next, why, sizeof why);
    if (why[0])
        return wd__fail(WD_ERR_SCHEMA, "wd_model_swap: the next model's predictions need another shape: %s", why);
    wd__pub *p = NULL;   // (g++ -O3 cannot see wd__pub_of set it)
    WD__TRY(wd__pub_of(m, &p));
    wd__snap *b = WD__NEW(wd__snap);
    if (!b) return wd__fail(WD_ERR_NOMEM, "wd_model_swap: out of memory");
    wd__lp_refresh(next);   // the view's bf16 weights current before anyone reads them
    b->borrowed = 1;
    wd__snap_view(b, next);
    pthread_mutex_lock(&p->writer);
    pthread_mutex_lock(&p->mu);
    wd__pub_redirect(p, b);   // the old model's last calls end
    pthread_mutex_unlock(&p->mu);
    wd__snap_free(p->snap);   // the old model's snapshot: nobody reads it now
    p->snap = NULL;
    size_t n = offsetof(wd_model, lp_mu);   // every field before each model's own lock and publication state
    wd_model old;
    memcpy(&old, m, n); memcpy(m, next, n); memcpy(next, &old, n);
    m->d.schema = &m->schema; next->d.schema = &next->schema;
    pthread_mutex_lock(&p->mu);
    wd__pub_redirect(p, NULL);   // m in place: the same parameters as b
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->writer);
    wd__snap_free(b);
    wd__free_model(next);
    return WD_OK;
}

// ---- a trainer: wd_train fed by pushed batches (wd_trainer_*) -----------------------------------
// wd_train on a thread of its own, fed through a source by wd_trainer_push.
struct wd_trainer {
    wd_model *m;
    wd_train_desc d;
    wd_train_report rep;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    wd_batch buf[2];                // copies of pushed batches, a ring
    int state[2];                   // 0 free, 1 filled (waits for the loop), 2 the loop's
    int taken;                      // the buffer the loop holds (-1: none)
    int head, tail;                 // the next buffer the loop takes; push fills
    int ended;                      // push: no more batches (close)
    int done;                       // wd_train returned: status, message
    wd_status st;
    char err[WD__ERR_MAX];
    int64_t pushed;
    int most;                       // samples a batch may hold (as wd_train counts; read by push)
    int closed;
    wd_vocab *grown[2];             // a buffer's longer vocabulary, installed in the model when the loop takes it
    wd_text_spec *spec;             // wd_trainer_push_lines: the model's input format and vocabulary, grown
    wd_batch text;                  // the lines of a push, parsed
};
static wd_status wd__trainer_source(void *user, const wd_batch **out) {
    wd_trainer *t = (wd_trainer *)user;
    pthread_mutex_lock(&t->mu);
    if (t->taken >= 0) { t->state[t->taken] = 0; t->taken = -1;
        pthread_cond_broadcast(&t->cv); }   // the step has its copy
    while (t->state[t->head] != 1 && !t->ended) pthread_cond_wait(&t->cv, &t->mu);
    *out = NULL;
    if (t->state[t->head] == 1) {
        if (t->grown[t->head]) {   // between steps, on the training thread: the ids of this batch need it
            wd__vocab_free(t->m->in.vocab);
            t->m->in.vocab = t->grown[t->head];
            t->grown[t->head] = NULL;
            t->m->in_gen++;
        }
        t->state[t->head] = 2; t->taken = t->head; *out = &t->buf[t->head]; t->head ^= 1;
    }
    pthread_mutex_unlock(&t->mu);
    return WD_OK;
}
static void *wd__trainer_thread(void *arg) {
    wd_trainer *t = (wd_trainer *)arg;
    wd_status st = wd__train_run(t->m, &t->d, &t->rep, WD_OK);   // open claimed the model
    pthread_mutex_lock(&t->mu);
    t->st = st;
    snprintf(t->err, sizeof t->err, "%s", st ? wd_last_error() : "");
    t->done = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}
WDDEF wd_status wd_trainer_open(wd_model *m, const wd_train_desc *d, wd_trainer **out) {
    if (!out) return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_open: out is NULL");
    *out = NULL;
    if (!m || !d) return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_open: %s is NULL", m ? "the desc" : "the model");
    if (d->files || d->nfiles || d->source)
        return wd__fail(WD_ERR_INVALID_ARG,
                        "wd_trainer_open: the desc names %s; a trainer's batches come from wd_trainer_push",
                        d->source ? "a source" : "training files");
    WD__TRY(wd__train_claim(m, "wd_trainer_open"));   // a second trainer (or a wd_train) on m is refused
    wd_trainer *t = WD__NEW(wd_trainer);
    if (!t) { wd__train_release(m); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    t->m = m; t->d = *d; t->taken = -1;
    t->most = d->batch_size > 0 ? d->batch_size : m->batch_size > 0 ? (int)m->batch_size : 4096;   // as wd_train counts
    t->d.source = wd__trainer_source; t->d.source_user = t;
    wd_status st = wd__train_check(m, &t->d);   // what wd_train would refuse, refused now
    const wd_backend_ops *ops = NULL;
    if (!st) st = wd__backend_for(d->device, &ops, NULL);
    for (int i = 0; !st && i < 2; i++) st = wd_batch_init_with(&t->buf[i], &m->schema, 0, 0, ops->batch_alloc);
    // predictions never read parameters the thread writes: they read a
    // snapshot, published now if none was; those already reading in place finish first
    if (!st) st = wd__publish_first(m);
    if (!st) { pthread_mutex_init(&t->mu, NULL); pthread_cond_init(&t->cv, NULL); }
    if (!st && wd__thread_start(&t->th, wd__trainer_thread, t) != 0) {
        pthread_mutex_destroy(&t->mu); pthread_cond_destroy(&t->cv);
        st = wd__fail(WD_ERR_NOMEM, "wd_trainer_open: cannot start the training thread");
    }
    if (st) { wd_batch_free(&t->buf[0]); wd_batch_free(&t->buf[1]); wd__free(t); wd__train_release(m); return st; }
    t->started = 1;
    *out = t;
    return WD_OK;
}
// b into the ring; grown (owned; NULL: none) goes to the model with it.
static wd_status wd__trainer_push(wd_trainer *t, const wd_batch *b, wd_vocab *grown, const char *who) {
    wd_status st = wd__batch_check(b, &t->m->schema, who, t->most);
    if (st) { wd__vocab_free(grown); return st; }
    pthread_mutex_lock(&t->mu);
    int i = t->tail;
    while (!t->done && t->state[i] != 0) pthread_cond_wait(&t->cv, &t->mu);
    if (t->done) {
        st = t->st ? t->st : WD_ERR_ABORTED;
        char err[WD__ERR_MAX];
        snprintf(err, sizeof err, "%s", t->st ? t->err : "training ended (max_steps reached or stopped)");
        pthread_mutex_unlock(&t->mu);
        wd__vocab_free(grown);
        return wd__fail(st, "%s: not trained: %s", who, err);
    }
    pthread_mutex_unlock(&t->mu);
    // buffer i is nobody's but ours until it is marked full
    t->buf[i].n = 0;
    st = wd_batch_append(&t->buf[i], b, 0, b->n);
    if (st) { wd__vocab_free(grown); return wd__fail(st, "%s: %s", who, wd_last_error()); }
    pthread_mutex_lock(&t->mu);
    t->grown[i] = grown;
    t->state[i] = 1;
    t->tail ^= 1;
    t->pushed++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return WD_OK;
}
WDDEF wd_status wd_trainer_push(wd_trainer *t, const wd_batch *b) {
    if (!t || !b) return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_push: %s is NULL", t ? "the batch" : "the trainer");
    if (t->closed)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_push: the trainer is closed (after %lld batches); open another",
                        (long long)t->pushed);
    char who[80];
    snprintf(who, sizeof who, "wd_trainer_push: batch %lld", (long long)t->pushed);
    return wd__trainer_push(t, b, NULL, who);
}
// The lines of text[0, len) parsed by t with the TLS sink `sink` (counting
// new values) or without (into t->text); a CSV header line is skipped, as
// wd_convert skips it. Errors name the push and the line.
static wd_status wd__lines_parse(wd_trainer *t, const wd_text_spec *spec, const char *text, size_t len, wd__sink *sink,
                                 const char *who) {
    const char *s = text, *end = text + len;
    size_t hlen = strlen(spec->header);
    wd_status st = WD_OK;
    t->text.n = 0;
    wd__cat_sink = sink;
    for (int64_t line = 1; !st && s < end; line++) {
        const char *nl = (const char *)memchr(s, '\n', (size_t)(end - s));
        size_t n = (size_t)((nl ? nl : end) - s);
        int header = spec->format == WD_FMT_CSV && hlen && n - (n && s[n - 1] == '\r') == hlen &&
                     !memcmp(s, spec->header, hlen);
        if (!header) {
            st = (n == 0 || (n == 1 && s[0] == '\r')) ? wd__fail(WD_ERR_PARSE, "empty line")
                                                       : wd_parse_line(spec, s, n, &t->text);
            if (st) st = wd__fail(st, "%s: line %lld: %s", who, (long long)line, wd_last_error());
        }
        s += n + 1;
    }
    wd__cat_sink = NULL;
    if (!st && sink && sink->failed) st = sink->failed;
    return st;
}
WDDEF wd_status wd_trainer_push_lines(wd_trainer *t, const char *text, size_t len) {
    if (!t || !text)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_push_lines: %s is NULL", t ? "the text" : "the trainer");
    if (t->closed)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_push_lines: the trainer is closed (after %lld batches); open "
                        "another", (long long)t->pushed);
    char who[80];
    snprintf(who, sizeof who, "wd_trainer_push_lines: batch %lld", (long long)t->pushed);
    if (!t->spec) {   // the model's input format and vocabulary (read once; later only the training thread changes it)
        wd_text_spec *sp = (wd_text_spec *)wd__malloc(sizeof *sp);
        if (!sp) return wd__fail(WD_ERR_NOMEM, "out of memory");
        wd_status st = wd__model_spec(t->m, sp);
        if (!st) st = wd_batch_init(&t->text, &sp->schema, 0, 0);
        if (st) { wd__free(sp); return wd__fail(st, "%s: the model's input format: %s", who, wd_last_error()); }
        t->spec = sp;
    }
    // As wd_convert with extend_vocab over these lines: the values the
    // vocabulary lacks counted, given the next ids (by falling count, then
    // hash) while their tables have rows, then the lines parsed with them.
    wd__sink *sink = WD__NEW(wd__sink);
    if (!sink) return wd__fail(WD_ERR_NOMEM, "out of memory");
    sink->counting = 1; sink->extend = 1; sink->nslots = t->spec->schema.nslots;
    wd_status st = wd__lines_parse(t, t->spec, text, len, sink, who);
    int fresh = 0;
    for (int k = 0; !st && k < sink->nslots; k++) fresh |= sink->map[k].n > 0;
    wd_vocab *nv = NULL, *mine = NULL;
    int64_t added[WD_MAX_SLOTS] = {0}, no_room[WD_MAX_SLOTS] = {0};
    if (!st && fresh && t->spec->vocab) st = wd__vocab_extend(t->spec->vocab, sink, 1, &nv, added, no_room);
    wd__sink_free(sink);
    wd_text_spec grown = *t->spec;
    if (nv) grown.vocab = nv;
    if (!st) st = wd__lines_parse(t, &grown, text, len, NULL, who);
    if (!st && nv) st = wd__vocab_copy(nv, &mine);   // the model's own, installed between steps
    if (!st) st = wd__trainer_push(t, &t->text, mine, who);
    if (st) { wd__vocab_free(nv); return st; }
    if (nv) { wd__vocab_free((wd_vocab *)(uintptr_t)t->spec->vocab); t->spec->vocab = nv; }
    return WD_OK;
}
WDDEF wd_status wd_trainer_close(wd_trainer *t, wd_train_report *rep) {
    if (!t) return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_close: the trainer is NULL");
    if (t->closed) return wd__fail(WD_ERR_INVALID_ARG, "wd_trainer_close: the trainer is closed already");
    t->closed = 1;
    pthread_mutex_lock(&t->mu);
    t->ended = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    t->started = 0;
    wd__train_release(t->m);
    if (rep) *rep = t->rep;
    return t->st ? wd__fail(t->st, "%s", t->err) : WD_OK;
}
WDDEF void wd_trainer_free(wd_trainer *t) {
    if (!t) return;
    if (!t->closed) {   // a release call: the training's error is not this thread's last
        wd_error_hold(1);
        wd_trainer_close(t, NULL);
        wd_error_hold(0);
    }
    pthread_mutex_destroy(&t->mu); pthread_cond_destroy(&t->cv);
    wd_batch_free(&t->buf[0]); wd_batch_free(&t->buf[1]);
    wd__vocab_free(t->grown[0]); wd__vocab_free(t->grown[1]);   // pushed, never taken (the training ended first)
    if (t->spec) { wd_text_spec_free(t->spec); wd__free(t->spec); }
    wd_batch_free(&t->text);
    wd__free(t);
}

// ---- prediction: wd_predict, wd_predictor (a serving thread's reusable context) -----------------
// The checks of every prediction: b's layout against m's schema, its
// offsets, dense values finite, ids inside their tables (labels unread).
static wd_status wd__predict_check(const wd_model *m, const wd_batch *b, const char *who) {
    WD__TRY(wd__batch_layout(b, &m->schema, who, -1, "model"));
    if (b->n < 0 || b->n > b->cap)
        return wd__fail(WD_ERR_INVALID_ARG, "%s: the batch says it holds %d samples, its capacity is %d", who,
                        b->n, b->cap);
    if (b->n > 0 && (!b->dense && b->ndense))
        return wd__fail(WD_ERR_INVALID_ARG, "%s: the batch has no dense array", who);
    for (int k = 0; k < b->nslots; k++) {
        if (b->n > 0 && (!b->ids[k] || (b->kind[k] == WD_MULTI_HOT && !b->offs[k])))
            return wd__fail(WD_ERR_INVALID_ARG, "%s: slot %d has no id array", who, k);
        if (b->kind[k] == WD_MULTI_HOT)   // CSR offsets: from 0, never falling, inside the id capacity
            for (int i = 0; i < b->n; i++)
                if ((i == 0 && b->offs[k][0] != 0) || b->offs[k][i + 1] < b->offs[k][i]
                    || (int64_t)b->offs[k][i + 1] > b->nnz_cap)
                    return wd__fail(WD_ERR_INVALID_ARG,
                                    "%s: slot %d: offsets of sample %d (%u..%u) are not CSR offsets into %lld ids", who,
                                    k, i, b->offs[k][i], b->offs[k][i + 1], (long long)b->nnz_cap);
    }
    // serving batches need no labels: check what the model reads
    for (size_t j = 0; j < (size_t)b->n * (size_t)b->ndense; j++)
        if (!isfinite(b->dense[j]))
            return wd__fail(WD_ERR_NUMERIC, "%s: sample %d: dense column %d is %g", who, (int)(j / (size_t)b->ndense),
                            (int)(j % (size_t)b->ndense), (double)b->dense[j]);
    for (int k = 0; k < b->nslots; k++)
        for (int i = 0; i < b->n; i++) {
            int c;
            const uint32_t *ids = wd_batch_sample_ids(b, k, i, &c);
            for (int j = 0; j < c; j++)
                if (ids[j] >= m->schema.slot[k].buckets)
                    return wd__fail(WD_ERR_INVALID_ARG, "%s: sample %d: slot %s id %u is outside its %u buckets", who,
                                    i, m->schema.slot[k].name, ids[j], m->schema.slot[k].buckets);
        }
    return WD_OK;
}

struct wd_predictor {
    const wd_model *m;
    wd__pub *pub;                   // m's: what each call reads (wd__snap_get)
    int cap, threads;
    wd__ws ws;                      // forward-only scratch for cap samples; the engine's products
};
// Rows the products compute for a piece of n <= cap samples: with oneDNN,
// whose products are made per shape, the next of 1, 2, 3, 4, 6, 8, 12, ...
// (at most cap), so that a predictor meets few shapes; n elsewhere.
static int wd__piece_rows(int n, int cap) {
#ifdef WD_USE_ONEDNN
    for (int p = 1; p < cap; p *= 2) {
        if (n <= p) return p;
        if (p >= 2 && n <= p + p / 2) return WD__MIN(p + p / 2, cap);
    }
    return cap;
#else
    (void)cap;
    return n;
#endif
}
WDDEF wd_status wd_predictor_create(const wd_model *m, const wd_predictor_desc *d, wd_predictor **out) {
    if (!out) return wd__fail(WD_ERR_INVALID_ARG, "wd_predictor_create: out is NULL");
    *out = NULL;
    if (!m) return wd__fail(WD_ERR_INVALID_ARG, "wd_predictor_create: the model is NULL");
    int cap = d && d->max_batch ? d->max_batch : 256, threads = d && d->threads ? d->threads : 1;
    if (cap < 1 || cap > WD_MAX_BLOCK_SAMPLES)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_predictor_create: max_batch %d is outside 1..%d", cap,
                        WD_MAX_BLOCK_SAMPLES);
    if (threads < 1 || threads > 1024)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_predictor_create: threads %d is outside 1..1024", threads);
    wd__pub *pub;
    WD__TRY(wd__pub_of(m, &pub));
    wd_predictor *p = WD__NEW(wd_predictor);
    if (!p) return wd__fail(WD_ERR_NOMEM, "out of memory");
    p->m = m; p->pub = pub; p->cap = cap; p->threads = threads;
    pthread_mutex_lock(&pub->mu);
    pub->predictors++;
    pthread_mutex_unlock(&pub->mu);
    wd__snap *snap = wd__snap_get(pub);   // the shape read as a call reads it (a swap may be under way)
    const wd_model *src = snap ? &snap->view : m;
    wd_status st = wd__precision_check(src);
    if (!st) st = wd__ws_init(&p->ws, src, cap, 0);
    wd__snap_release(pub, snap);
    if (st) { wd_predictor_destroy(p); return st; }
    *out = p;
    return WD_OK;
}
WDDEF void wd_predictor_destroy(wd_predictor *p) {
    if (!p) return;
    pthread_mutex_lock(&p->pub->mu);
    p->pub->predictors--;
    pthread_mutex_unlock(&p->pub->mu);
    wd__ws_free(&p->ws);
    wd__free(p);
}
// The pieces of b on src: the model itself or a published snapshot of it
// (same shapes: the predictor's scratch fits both).
static wd_status wd__predictor_pieces(wd_predictor *p, const wd_model *src, const wd_batch *b, float *probs) {
    for (int at = 0; at < b->n; at += p->cap) {
        int k = WD__MIN(p->cap, b->n - at);
        WD__TRY(wd__forward(src, &p->ws, b, at, k, wd__piece_rows(k, p->cap)));
        memcpy(probs + at, p->ws.prob, sizeof(float) * (size_t)k);
    }
    return WD_OK;
}
// Every prediction: the latest published snapshot (online learning) held
// for the whole batch, else the model in place; b checked against what it reads.
static wd_status wd__predictor_go(wd_predictor *p, const wd_batch *b, float *probs, const char *who) {
    const wd_model *m = p->m;
    wd__snap *snap = wd__snap_get(p->pub);   // a reference under the publisher's lock, no allocation
    const wd_model *src = snap ? &snap->view : m;
    wd_status st = wd__predict_check(src, b, who);
    if (!st) {
        if (!snap) wd__lp_refresh((wd_model *)(uintptr_t)m);   // bf16 weights: a cache the
                                                               // model keeps under its own lock
#ifdef WD_USE_ONEDNN
        int prev = omp_get_max_threads();   // the engine's team, for this thread's call only
        omp_set_num_threads(p->threads);
        st = wd__predictor_pieces(p, src, b, probs);
        omp_set_num_threads(prev);
#else
        st = wd__predictor_pieces(p, src, b, probs);
#endif
    }
    wd__snap_release(p->pub, snap);
    return st;
}
WDDEF wd_status wd_predictor_run(wd_predictor *p, const wd_batch *b, float *probs) {
    if (!p || !b || !probs)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_predictor_run: %s is NULL",
                        !p ? "the predictor" : !b ? "the batch" : "probs");
    return wd__predictor_go(p, b, probs, "wd_predictor_run");
}
WDDEF wd_status wd_predict(const wd_model *m, const wd_batch *b, float *probs) {
    if (!m || !b || !probs)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_predict: %s is NULL", !m ? "the model" : !b ? "the batch" : "probs");
    wd_predictor *p;
    WD__TRY(wd_predictor_create(m, NULL, &p));
    wd_status st = wd__predictor_go(p, b, probs, "wd_predict");
    wd_predictor_destroy(p);
    return st;
}

// ---- 16. Checkpoints -------------------------------------------------------------------------
#define WD__WDM_VERSION 3u   // reads 1, 2 and 3
#define WD__TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define WD__DESC_BYTES (64 + 16 + 4 * WD_MAX_LAYERS + 8 * WD_MAX_CROSSES + 40 * WD_MAX_SLOTS)

static void wd__putf(uint8_t *p, float f) { uint32_t u; memcpy(&u, &f, 4); wd__put32(p, u); }
static float wd__getf(const uint8_t *p) { uint32_t u = wd__get32(p); float f; memcpy(&f, &u, 4); return f; }

// The description and schema as fixed little-endian fields.
static size_t wd__desc_encode(const wd_model *m, uint8_t *p) {
    const wd_model_desc *d = &m->d;
    memset(p, 0, WD__DESC_BYTES);
    wd__put32(p + 0, (uint32_t)d->embed_dim); wd__put32(p + 4, (uint32_t)d->optimizer);
    wd__putf(p + 8, d->lr_deep); wd__putf(p + 12, d->lr_wide); wd__putf(p + 16, d->ftrl_beta);
    wd__putf(p + 20, d->ftrl_l1);
    wd__putf(p + 24, d->ftrl_l2); wd__putf(p + 28, d->adagrad_init); wd__putf(p + 32, d->adam_beta1);
    wd__putf(p + 36, d->adam_beta2);
    wd__putf(p + 40, d->adam_eps); wd__putf(p + 44, d->emb_init); wd__put32(p + 48, (uint32_t)d->pooling);
    wd__put32(p + 52, (uint32_t)d->ncross);
    wd__put32(p + 56, d->cross_buckets);
    wd__put32(p + 60, (uint32_t)(d->no_wide | d->no_deep << 1 | d->precision << 2));
    wd__put64(p + 64, d->seed);
    wd__put32(p + 72, (uint32_t)m->schema.ndense); wd__put32(p + 76, (uint32_t)m->schema.nslots);
    uint8_t *q = p + 80;
    for (int l = 0; l < WD_MAX_LAYERS; l++, q += 4) wd__put32(q, (uint32_t)d->hidden[l]);
    for (int c = 0; c < WD_MAX_CROSSES; c++, q += 8) { wd__put32(q, (uint32_t)d->cross[c][0]);
        wd__put32(q + 4, (uint32_t)d->cross[c][1]); }
    for (int k = 0; k < m->schema.nslots; k++, q += 40) {
        memcpy(q, m->schema.slot[k].name, WD_NAME_MAX);
        wd__put32(q + 32, m->schema.slot[k].buckets); wd__put32(q + 36, (uint32_t)m->schema.slot[k].kind);
    }
    return (size_t)(q - p);
}
static void wd__desc_decode(const uint8_t *p, wd_model_desc *d, wd_schema *s) {
    memset(d, 0, sizeof *d);
    memset(s, 0, sizeof *s);
    d->embed_dim = (int)wd__get32(p); d->optimizer = (int)wd__get32(p + 4);
    d->lr_deep = wd__getf(p + 8); d->lr_wide = wd__getf(p + 12); d->ftrl_beta = wd__getf(p + 16);
    d->ftrl_l1 = wd__getf(p + 20);
    d->ftrl_l2 = wd__getf(p + 24); d->adagrad_init = wd__getf(p + 28); d->adam_beta1 = wd__getf(p + 32);
    d->adam_beta2 = wd__getf(p + 36);
    d->adam_eps = wd__getf(p + 40); d->emb_init = wd__getf(p + 44); d->pooling = (int)wd__get32(p + 48);
    d->ncross = (int)wd__get32(p + 52);
    d->cross_buckets = wd__get32(p + 56);
    uint32_t fl = wd__get32(p + 60);
    d->no_wide = fl & 1; d->no_deep = (fl >> 1) & 1; d->precision = (int)(fl >> 2);   // version-1 files: fp32
    d->seed = wd__get64(p + 64);
    s->ndense = (int)wd__get32(p + 72); s->nslots = (int)wd__get32(p + 76);
    if (s->nslots < 0 || s->nslots > WD_MAX_SLOTS) s->nslots = -1;   // wd_schema_check rejects it
    const uint8_t *q = p + 80;
    for (int l = 0; l < WD_MAX_LAYERS; l++, q += 4) d->hidden[l] = (int)wd__get32(q);
    for (int c = 0; c < WD_MAX_CROSSES; c++, q += 8) { d->cross[c][0] = (int)wd__get32(q);
        d->cross[c][1] = (int)wd__get32(q + 4); }
    for (int k = 0; k < s->nslots; k++, q += 40) {
        memcpy(s->slot[k].name, q, WD_NAME_MAX);
        s->slot[k].name[WD_NAME_MAX - 1] = 0;
        s->slot[k].buckets = wd__get32(q + 32); s->slot[k].kind = (int)wd__get32(q + 36);
    }
}

typedef struct wd__span { const float *p; int64_t n; } wd__span;
static wd_status wd__write_section(wd__outfile *o, uint32_t tag, const wd__span *parts, int nparts) {
    int64_t bytes = 0;
    for (int i = 0; i < nparts; i++) bytes += 4 * parts[i].n;
    uint8_t h[16];
    wd__put32(h, tag); wd__put32(h + 4, 0); wd__put64(h + 8, (uint64_t)bytes);
    WD__TRY(wd__out_write(o, h, 16));
    uint32_t crc = 0;
    for (int i = 0; i < nparts; i++) {
        const uint8_t *p = (const uint8_t *)parts[i].p;
        int64_t left = 4 * parts[i].n;
        while (left > 0) {
            size_t chunk = (size_t)WD__MIN(left, (int64_t)1 << 26);
            crc = wd__crc32c_ext(crc, p, chunk);
            WD__TRY(wd__out_write(o, p, chunk));
            p += chunk; left -= (int64_t)chunk;
        }
    }
    uint8_t t[8];
    wd__put32(t, crc); wd__put32(t + 4, 0);
    return wd__out_write(o, t, 8);
}

// The 'INPT' section's payload (section 16's layout), padded to 4 bytes.
static wd_status wd__contract_encode(const wd_model *m, wd__buf *out) {
    const wd__contract *c = &m->in;
    wd__buf spec = {0, 0, 0};
    if (c->spec) WD__TRY(wd__spec_encode(c->spec, &spec));
    int S = m->schema.nslots;
    uint64_t n = 8 + 8 * (uint64_t)S + (c->spec ? 4 + spec.len : 0);
    for (int k = 0; c->vocab && k < S; k++) if (c->vocab->n[k] > 0) n += 8 * (uint64_t)c->vocab->n[k];
    n = (n + 3) & ~(uint64_t)3;
    out->len = 0;
    wd_status st = wd__buf_reserve(out, (size_t)n);
    if (st) { wd__buf_free(&spec); return st; }
    uint8_t *q = out->p;
    memset(q, 0, (size_t)n);
    wd__put32(q, (uint32_t)(c->known ? 1 : 0) | (c->spec ? 2u : 0u)); wd__put32(q + 4, (uint32_t)S); q += 8;
    for (int k = 0; k < S; k++) {
        int64_t vn = c->vocab ? c->vocab->n[k] : -1;
        wd__put64(q, (uint64_t)vn); q += 8;
        for (int64_t i = 0; i < vn; i++, q += 8) wd__put64(q, c->vocab->hash[k][i]);
    }
    if (c->spec) { wd__put32(q, (uint32_t)spec.len); memcpy(q + 4, spec.p, spec.len); }
    out->len = (size_t)n;
    wd__buf_free(&spec);
    return WD_OK;
}
// Decodes an 'INPT' payload into m->in (m's schema is known).
static wd_status wd__contract_decode(wd_model *m, const uint8_t *p, size_t n, const char *path) {
    char where[WD__ERR_MAX / 2];
    snprintf(where, sizeof where, "%s: section INPT", wd__tail(path, 300));
    if (n < 8) return wd__fail(WD_ERR_CORRUPT, "%s: %zu bytes, too short", where, n);
    uint32_t flags = wd__get32(p), S = wd__get32(p + 4);
    if (flags > 3 || (flags == 2) || S != (uint32_t)m->schema.nslots)
        return wd__fail(WD_ERR_CORRUPT, "%s: flags %#x and %u slots do not fit a model of %d slots", where, flags, S,
                        m->schema.nslots);
    const uint8_t *q = p + 8, *end = p + n;
    wd__contract c;
    memset(&c, 0, sizeof c);
    wd_status st = wd__vocab_decode(where, &m->schema, &q, end, &c.vocab);
    int any = 0;
    for (int k = 0; !st && k < m->schema.nslots; k++) any |= c.vocab->n[k] >= 0;
    if (!st && !any) { wd__vocab_free(c.vocab); c.vocab = NULL; }
    if (!st && !(flags & 1) && any)
        st = wd__fail(WD_ERR_CORRUPT, "%s: vocabularies in a contract marked not recorded", where);
    if (!st && (flags & 2)) {
        uint32_t sn = end - q >= 4 ? wd__get32(q) : 0;
        if (end - q < 4 || (uint64_t)(end - q - 4) < sn)
            st = wd__fail(WD_ERR_CORRUPT, "%s: the input format ends early", where);
        else { st = wd__spec_decode(q + 4, sn, &m->schema, where, &c.spec); q += 4 + (size_t)sn; }
    }
    int junk = !st && end - q >= 4;   // at most 3 bytes of zero padding
    for (const uint8_t *z = q; !st && !junk && z < end; z++) junk |= *z != 0;
    if (junk) st = wd__fail(WD_ERR_CORRUPT, "%s: %lld bytes after the contract", where, (long long)(end - q));
    if (st) { wd__contract_free(&c); return st; }
    c.known = (int)(flags & 1);
    m->in = c;
    return WD_OK;
}

// The first non-finite parameter or state value, or a negative accumulator,
// named in *what; 0 when the model is sound.
static int wd__model_unsound(const wd_model *m, char *what, size_t n) {
    int64_t ne = m->emb ? m->emb_rows * m->E : 0;
    struct { const float *p; int64_t n; int nonneg; const char *name; } arr[9] = {
        {m->dense, m->P, 0, "dense parameters"}, {m->dense_s1, m->P, 0, "dense optimizer state"},
        {m->dense_s2, m->P, 0, "dense optimizer state"},
        {m->wide, m->wide_rows, 0, "wide weights"}, {m->wide_z, m->wide_rows, 0, "FTRL z"},
        {m->wide_n, m->wide_rows, 1, "FTRL n"},
        {m->emb, ne, 0, "embeddings"}, {m->emb_s1, ne, m->d.optimizer == WD_ADAGRAD, "embedding optimizer state"},
        {m->emb_s2, m->emb_s2 ? ne : 0, 1, "embedding Adam v"}};
    for (int a = 0; a < 9; a++) {
        if (!arr[a].p) continue;   // weights only: no optimizer state
        uint32_t bad = 0;   // branch-free scan; locate only on failure
        for (int64_t i = 0; i < arr[a].n; i++) { uint32_t u; memcpy(&u, &arr[a].p[i], 4);
            bad |= ((u & 0x7f800000u) == 0x7f800000u) | (arr[a].nonneg & (u >> 31) & (u != 0x80000000u)); }
        for (int64_t i = 0; bad && i < arr[a].n; i++)
            if (!isfinite(arr[a].p[i]) || (arr[a].nonneg && arr[a].p[i] < 0)) {
                snprintf(what, n, "%s[%lld] is %g%s", arr[a].name, (long long)i, (double)arr[a].p[i],
                         isfinite(arr[a].p[i]) ? " (negative)" : ""); return 1; }
    }
    // the MLP's accumulators (Adagrad) and Adam's v are never negative; FTRL's n neither
    for (int64_t i = 0; m->dense_s1 && i < m->P; i++) {
        int acc = i < m->P_mlp ? m->d.optimizer == WD_ADAGRAD : 0;
        if ((acc && m->dense_s1[i] < 0) || (i < m->P_mlp && wd_opt_states(m->d.optimizer) > 1 && m->dense_s2[i] < 0)
            || (i >= m->P_mlp && m->dense_s2[i] < 0)) {
            snprintf(what, n, "dense optimizer state %lld is negative", (long long)i);
            return 1;
        }
    }
    return 0;
}
// A training position a file may hold: counters at most 2^53 (far from
// overflow), a batch size at most 2^30; save and load both ask.
static int wd__position_bad(const wd_model *m) {
    const int64_t lim = (int64_t)1 << 53;
    return m->epoch < 0 || m->epoch > lim || m->batch < 0 || m->batch > lim || m->step < 0 || m->step > lim ||
           m->batch_size < 0 || m->batch_size > (1 << 30);
}
static wd_status wd__model_write(const wd_model *m, const char *path, int weights_only) {
    char why[200];
    if (wd__model_unsound(m, why, sizeof why))
        return wd__fail(WD_ERR_NUMERIC, "%s: not saved: %s (it could not be loaded)", wd__tail(path, 400), why);
    if (wd__position_bad(m))
        return wd__fail(WD_ERR_LIMIT, "%s: not saved: the training position (epoch %lld, batch %lld, step %lld) "
                        "is past 2^53 (it could not be loaded)", wd__tail(path, 400), (long long)m->epoch,
                        (long long)m->batch, (long long)m->step);
    wd__outfile o;
    WD__TRY(wd__out_open(&o, path));
    uint8_t head[12];
    memcpy(head, WD_WDM_MAGIC, 8);
    wd__put32(head + 8, WD__WDM_VERSION);
    float descbuf[WD__DESC_BYTES / 4];
    wd__desc_encode(m, (uint8_t *)descbuf);
    float pos[12];
    memset(pos, 0, sizeof pos);
    wd__put64((uint8_t *)pos, (uint64_t)m->epoch); wd__put64((uint8_t *)pos + 8, (uint64_t)m->batch);
    wd__put64((uint8_t *)pos + 16, (uint64_t)m->step); wd__put64((uint8_t *)pos + 24, (uint64_t)m->batch_size);
    wd__put64((uint8_t *)pos + 32, m->data_fp);
    wd__put64((uint8_t *)pos + 40, (m->after_error ? 1u : 0u) | (weights_only ? 2u : 0u));   // flags
    wd__buf inpt = {0, 0, 0};
    wd_status cst = wd__contract_encode(m, &inpt);
    if (cst) { wd__out_abort(&o); return cst; }
    wd__span sd[1] = {{descbuf, WD__DESC_BYTES / 4}}, sp[1] = {{pos, 12}},
        si[1] = {{(const float *)(const void *)inpt.p, (int64_t)(inpt.len / 4)}};
    wd__span dn[3] = {{m->dense, m->P}, {m->dense_s1, m->P}, {m->dense_s2, m->P}};
    wd__span wi[3] = {{m->wide, m->wide_rows}, {m->wide_z, m->wide_rows}, {m->wide_n, m->wide_rows}};
    int64_t ne = m->emb ? m->emb_rows * m->E : 0;
    wd__span em[3] = {{m->emb, ne}, {m->emb_s1, ne}, {m->emb_s2, m->emb_s2 ? ne : 0}};
    wd_status st = wd__out_write(&o, head, 12);
    if (!st) st = wd__write_section(&o, WD__TAG('D', 'E', 'S', 'C'), sd, 1);
    if (!st) st = wd__write_section(&o, WD__TAG('P', 'O', 'S', ' '), sp, 1);
    if (!st) st = wd__write_section(&o, WD__TAG('I', 'N', 'P', 'T'), si, 1);
    wd__buf_free(&inpt);
    if (!st) st = wd__write_section(&o, WD__TAG('D', 'E', 'N', 'S'), dn, weights_only ? 1 : 3);
    if (!st) st = wd__write_section(&o, WD__TAG('W', 'I', 'D', 'E'), wi, weights_only ? 1 : 3);
    if (!st) st = wd__write_section(&o, WD__TAG('E', 'M', 'B', 'D'), em, weights_only ? 1 : m->emb_s2 ? 3 : 2);
    if (!st) st = wd__write_section(&o, WD__TAG('E', 'N', 'D', ' '), NULL, 0);
    if (st) { wd__out_abort(&o); return st; }
    return wd__out_commit(&o);
}
WDDEF wd_status wd_model_save(const wd_model *m, const char *path) {
    if (!m || !path) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_save: NULL argument");
    return wd__model_write(m, path, m->weights_only);
}
WDDEF wd_status wd_model_export(const wd_model *m, const char *path) {
    if (!m || !path) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_export: NULL argument");
    return wd__model_write(m, path, 1);
}

static const char *wd__tagname(uint32_t tag, char *buf) {
    for (int i = 0; i < 4; i++) { char c = (char)(tag >> (8 * i)); buf[i] = (c >= 32 && c < 127) ? c : '?'; }
    buf[4] = 0;
    return buf;
}
// Reads a section that must have `tag` and exactly the bytes of `parts`.
static wd_status wd__read_section(int fd, int64_t *off, int64_t fsize, const char *path, uint32_t tag, wd__span *parts,
                                  int nparts) {
    char tn[5], gn[5];
    uint8_t h[16];
    if (*off + 16 > fsize)
        return wd__fail(WD_ERR_CORRUPT, "%s: truncated before section %s", path, wd__tagname(tag, tn));
    WD__TRY(wd__pread_all(fd, h, 16, *off, path));
    uint64_t bytes = wd__get64(h + 8), want = 0;
    for (int i = 0; i < nparts; i++) want += 4 * (uint64_t)parts[i].n;
    if (wd__get32(h) != tag || wd__get32(h + 4) != 0)
        return wd__fail(WD_ERR_CORRUPT, "%s: expected section %s at offset %lld, found %s", path, wd__tagname(tag, tn),
                        (long long)*off, wd__tagname(wd__get32(h), gn));
    if (bytes != want)
        return wd__fail(WD_ERR_CORRUPT, "%s: section %s holds %llu bytes, the model description needs %llu", path,
                        wd__tagname(tag, tn), (unsigned long long)bytes, (unsigned long long)want);
    if ((uint64_t)*off + 16 + bytes + 8 > (uint64_t)fsize)
        return wd__fail(WD_ERR_CORRUPT, "%s: truncated inside section %s", path, wd__tagname(tag, tn));
    int64_t at = *off + 16;
    uint32_t crc = 0;
    uint8_t *drop = NULL;           // parts with no array (p NULL): read through it, checked, not kept
    for (int i = 0; i < nparts; i++) {
        uint8_t *p = (uint8_t *)(uintptr_t)parts[i].p;
        int64_t left = 4 * parts[i].n;
        if (!p && left > 0 && !drop && !(drop = (uint8_t *)wd__malloc((size_t)1 << 16)))   // (64 KiB: below malloc's
            return wd__fail(WD_ERR_NOMEM, "%s: out of memory", path);                      // mmap threshold)
        while (left > 0) {
            size_t chunk = (size_t)WD__MIN(left, p ? (int64_t)1 << 26 : (int64_t)1 << 16);
            wd_status st = wd__pread_all(fd, p ? p : drop, chunk, at, path);
            if (st) { wd__free(drop); return st; }
            crc = wd__crc32c_ext(crc, p ? p : drop, chunk);
            if (p) p += chunk;
            at += (int64_t)chunk; left -= (int64_t)chunk;
        }
    }
    wd__free(drop);
    uint8_t t[8];
    WD__TRY(wd__pread_all(fd, t, 8, at, path));
    if (wd__get32(t) != crc || wd__get32(t + 4) != 0)
        return wd__fail(WD_ERR_CORRUPT, "%s: section %s checksum mismatch", path, wd__tagname(tag, tn));
    *off = at + 8;
    return WD_OK;
}

// Reads a section of any length that must have `tag` into *out (caller frees).
static wd_status wd__read_blob(int fd, int64_t *off, int64_t fsize, const char *path, uint32_t tag, uint8_t **out,
                               size_t *len) {
    char tn[5], gn[5];
    uint8_t h[16];
    *out = NULL; *len = 0;
    if (*off + 16 > fsize)
        return wd__fail(WD_ERR_CORRUPT, "%s: truncated before section %s", path, wd__tagname(tag, tn));
    WD__TRY(wd__pread_all(fd, h, 16, *off, path));
    uint64_t bytes = wd__get64(h + 8);
    if (wd__get32(h) != tag || wd__get32(h + 4) != 0)
        return wd__fail(WD_ERR_CORRUPT, "%s: expected section %s at offset %lld, found %s", path, wd__tagname(tag, tn),
                        (long long)*off, wd__tagname(wd__get32(h), gn));
    if (bytes > (uint64_t)fsize || (uint64_t)*off + 16 + bytes + 8 > (uint64_t)fsize)
        return wd__fail(WD_ERR_CORRUPT, "%s: truncated inside section %s (%llu bytes)", path, wd__tagname(tag, tn),
                        (unsigned long long)bytes);
    uint8_t *p = (uint8_t *)wd__malloc((size_t)WD__MAX(bytes, 1));
    if (!p) return wd__fail(WD_ERR_NOMEM, "%s: out of memory for section %s (%llu bytes)", path, wd__tagname(tag, tn),
                            (unsigned long long)bytes);
    uint8_t t[8];
    wd_status st = wd__pread_all(fd, p, (size_t)bytes, *off + 16, path);
    if (!st) st = wd__pread_all(fd, t, 8, *off + 16 + (int64_t)bytes, path);
    if (!st && (wd__get32(t) != wd__crc32c(p, (size_t)bytes) || wd__get32(t + 4) != 0))
        st = wd__fail(WD_ERR_CORRUPT, "%s: section %s checksum mismatch", path, wd__tagname(tag, tn));
    if (st) { wd__free(p); return st; }
    *off += 16 + (int64_t)bytes + 8;
    *out = p; *len = (size_t)bytes;
    return WD_OK;
}

// weights: keep no optimizer state (wd_model_load_weights)
static wd_status wd__model_load(const char *path, int weights, wd_model **out) {
    if (!path || !out)
        return wd__fail(WD_ERR_INVALID_ARG, "%s: NULL argument", weights ? "wd_model_load_weights" : "wd_model_load");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return wd__fail(WD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    int64_t fsize = fstat(fd, &sb) == 0 ? (int64_t)sb.st_size : 0;
    uint8_t head[12];
    wd_status st = WD_OK;
    if (fsize < 12)
        st = wd__fail(fsize == 0 ? WD_ERR_FORMAT : WD_ERR_CORRUPT, "%s: %s", path,
                      fsize == 0 ? "empty file, not a .wdm model" : "truncated model header");
    if (!st) st = wd__pread_all(fd, head, 12, 0, path);
    if (!st && memcmp(head, WD_WDM_MAGIC, 8) != 0)
        st = wd__fail(WD_ERR_FORMAT, "%s: not a .wdm model (bad magic)", path);
    uint32_t version = st ? 0 : wd__get32(head + 8);
    if (!st && (version < 1 || version > WD__WDM_VERSION))
        st = wd__fail(WD_ERR_FORMAT, "%s: .wdm version %u, this build reads versions 1 to %u", path, version,
                      WD__WDM_VERSION);
    int npos = version >= 2 ? 12 : 8;   // version 2 adds the training files' fingerprint
    int64_t off = 12;
    float descbuf[WD__DESC_BYTES / 4];
    wd__span sd[1] = {{descbuf, WD__DESC_BYTES / 4}};
    if (!st) st = wd__read_section(fd, &off, fsize, path, WD__TAG('D', 'E', 'S', 'C'), sd, 1);
    wd_model *m = NULL;
    if (!st) {
        m = WD__NEW(wd_model);
        if (!m) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        wd_model_desc d;
        wd_schema s;
        wd__desc_decode((const uint8_t *)descbuf, &d, &s);
        d.schema = &s;
        st = wd__model_plan(m, &d);
        if (st) st = wd__fail(WD_ERR_CORRUPT, "%s: model description: %s", path, wd_last_error());
    }
    float pos[12];
    memset(pos, 0, sizeof pos);
    wd__span sp[1] = {{pos, npos}};
    if (!st) st = wd__read_section(fd, &off, fsize, path, WD__TAG('P', 'O', 'S', ' '), sp, 1);
    if (!st) {
        m->epoch = (int64_t)wd__get64((uint8_t *)pos); m->batch = (int64_t)wd__get64((uint8_t *)pos + 8);
        m->step = (int64_t)wd__get64((uint8_t *)pos + 16); m->batch_size = (int64_t)wd__get64((uint8_t *)pos + 24);
        m->data_fp = wd__get64((uint8_t *)pos + 32);
        uint64_t flags = wd__get64((uint8_t *)pos + 40);   // bit 1 (weights only) from version 3
        m->after_error = (int)(flags & 1);
        m->weights_only = (int)(flags >> 1 & 1);
        if (flags > (version >= 3 ? 3u : 1u))
            st = wd__fail(WD_ERR_CORRUPT, "%s: unknown training position flags 0x%llx", path,
                          (unsigned long long)flags);
        if (!st && wd__position_bad(m))
            st = wd__fail(WD_ERR_CORRUPT,
                          "%s: bad training position (epoch %lld, batch %lld, step %lld, batch size %lld)", path,
                          (long long)m->epoch, (long long)m->batch, (long long)m->step, (long long)m->batch_size);
    }
    if (!st && version >= 3) {   // the input contract (older files have none: m->in.known stays 0)
        uint8_t *blob = NULL;
        size_t blen = 0;
        st = wd__read_blob(fd, &off, fsize, path, WD__TAG('I', 'N', 'P', 'T'), &blob, &blen);
        if (!st) st = wd__contract_decode(m, blob, blen, path);
        wd__free(blob);
    }
    int k = m && m->weights_only ? 1 : 3,
        ke = m && m->weights_only ? 1 : m ? 1 + wd_opt_states(m->d.optimizer) : 0;   // arrays per section
    if (!st) {   // the file must hold what the description implies before we allocate it
        int64_t ne = wd__deep(m) ? m->emb_rows * m->E : 0;
        int64_t need = off + 24 + k * 4 * m->P + 24 + k * 4 * m->wide_rows + 24 + ke * 4 * ne + 24;
        if (need > fsize)
            st = wd__fail(WD_ERR_CORRUPT, "%s: the model needs %lld bytes, the file has %lld (truncated?)", path,
                          (long long)need, (long long)fsize);
    }
    if (!st && weights) m->weights_only = 1;   // the file's optimizer state is read (checksummed) and dropped
    if (!st) st = wd__model_alloc(m);   // a weights-only model: no optimizer state (the spans below read past it)
    if (!st) {
        wd__span dn[3] = {{m->dense, m->P}, {m->dense_s1, m->P}, {m->dense_s2, m->P}};
        st = wd__read_section(fd, &off, fsize, path, WD__TAG('D', 'E', 'N', 'S'), dn, k);
    }
    if (!st) {
        wd__span wi[3] = {{m->wide, m->wide_rows}, {m->wide_z, m->wide_rows}, {m->wide_n, m->wide_rows}};
        st = wd__read_section(fd, &off, fsize, path, WD__TAG('W', 'I', 'D', 'E'), wi, k);
    }
    if (!st) {
        int64_t ne = m->emb ? m->emb_rows * m->E : 0;
        wd__span em[3] = {{m->emb, ne}, {m->emb_s1, ne}, {m->emb_s2, ne}};
        st = wd__read_section(fd, &off, fsize, path, WD__TAG('E', 'M', 'B', 'D'), em, m->emb ? ke : 1);
    }
    if (!st) st = wd__read_section(fd, &off, fsize, path, WD__TAG('E', 'N', 'D', ' '), NULL, 0);
    if (!st && off != fsize)
        st = wd__fail(WD_ERR_CORRUPT, "%s: %lld bytes after the end section", path, (long long)(fsize - off));
    // a sound model only: NaN/Inf anywhere (or a negative accumulator) means
    // the file is not one we wrote; it would predict plausible garbage
    if (!st) {
        char why[200];
        if (wd__model_unsound(m, why, sizeof why)) st = wd__fail(WD_ERR_CORRUPT, "%s: %s", path, why);
    }
    close(fd);
    if (st) { wd__free_model(m); return st; }
    *out = m;
    return WD_OK;
}
WDDEF wd_status wd_model_load(const char *path, wd_model **out) { return wd__model_load(path, 0, out); }
WDDEF wd_status wd_model_load_weights(const char *path, wd_model **out) { return wd__model_load(path, 1, out); }
WDDEF void wd_model_get_info(const wd_model *m, wd_model_info *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!m) return;
    out->weights_only = m->weights_only;
    out->contract = m->in.known;
    out->vocab = m->in.vocab;
    out->batch_size = m->batch_size;
    out->data_fp = m->data_fp;
    int64_t ne = wd__deep(m) ? m->emb_rows * m->E : 0;
    out->wide_bytes = 4 * (m->wide_rows + m->P - m->P_mlp);
    out->embedding_bytes = 4 * ne;
    out->mlp_bytes = 4 * m->P_mlp;
    // the optimizer state: what wd_model_bytes counts beyond the parameters (one formula of the state)
    out->state_bytes = m->weights_only ? 0 : wd_model_bytes(m) - out->wide_bytes - out->embedding_bytes
                                                 - out->mlp_bytes;
}

// ---- 17. Device interface ----------------------------------------------------------------------
WDDEF void wd_model_view_get(wd_model *m, wd_model_view *v) {
    memset(v, 0, sizeof *v);
    __atomic_store_n(&m->lp_fresh, 0, __ATOMIC_RELEASE);   // the holder may write parameters
    v->desc = &m->d; v->schema = &m->schema;
    v->E = m->E; v->D = m->D; v->S = m->S; v->IN = m->IN; v->R = m->R; v->nlayers = m->nlayers;
    for (int l = 0; l < m->nlayers; l++) {
        v->layer_in[l] = m->layer[l].in; v->layer_out[l] = m->layer[l].out;
        v->layer_w[l] = m->layer[l].w; v->layer_b[l] = m->layer[l].b;
    }
    v->P_mlp = m->P_mlp; v->P = m->P; v->ntables = m->ntables; v->table_off = m->table_off;
    v->wide_rows = m->wide_rows; v->emb_rows = m->emb_rows;
    v->dense = m->dense; v->dense_s1 = m->dense_s1; v->dense_s2 = m->dense_s2;
    v->wide = m->wide; v->wide_z = m->wide_z; v->wide_n = m->wide_n;
    v->emb = m->emb; v->emb_s1 = m->emb_s1; v->emb_s2 = m->emb_s2;
    v->epoch = &m->epoch; v->batch = &m->batch; v->step = &m->step; v->batch_size = &m->batch_size;
}

WDDEF const char *wd_buf_name(int buf) {
    static const char *names[WD_BUF_COUNT] = {
        "dense params", "dense state 1", "dense state 2", "wide weights", "wide ftrl z", "wide ftrl n",
        "embeddings", "embedding state 1", "embedding state 2", "input batch", "mlp input x", "activations",
        "gradient", "logits, probabilities", "dense gradient", "column-sum partials", "sparse keys",
        "sparse keys (alt)", "sparse occurrences", "sparse occurrences (alt)", "sparse unique keys",
        "sparse run counts", "sparse run offsets", "segment counts", "segment firsts", "segment runs",
        "segment rows", "merged rows", "sparse exchange", "sort scratch", "cublasLt workspace", "device state",
        "relu mask", "bf16 weights", "bf16 mlp input", "bf16 gradient"};
    return buf >= 0 && buf < WD_BUF_COUNT ? names[buf] : "?";
}
static wd_status wd__plan_add(wd_plan *p, int buf, int index, int64_t bytes) {
    if (p->n >= WD_PLAN_MAX) return wd__fail(WD_ERR_INTERNAL, "device plan: more than %d buffers", WD_PLAN_MAX);
    if (bytes < 0) return wd__fail(WD_ERR_LIMIT, "device plan: %s too large", wd_buf_name(buf));
    wd_plan_entry *e = &p->e[p->n++];
    e->buf = buf; e->index = index;
    e->bytes = (bytes + 255) & ~(int64_t)255;   // every buffer 256-byte aligned
    e->offset = p->total;
    p->total += e->bytes;
#ifdef WD_PLAN_REDZONE   // test builds: the buffer's own bytes, then a gap of at least WD_PLAN_REDZONE bytes
    e->bytes = bytes;    // (the emulated device poisons the gaps: a kernel running off a buffer is caught)
    p->total += ((int64_t)(WD_PLAN_REDZONE) + 255) & ~(int64_t)255;
#endif
    return WD_OK;
}
WDDEF wd_status wd_plan_make(const wd_model *m, int batch, int ranks, wd_plan *out) {
    if (!m || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_plan_make: NULL argument");
    if (batch <= 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_plan_make: batch %d must be positive", batch);
    if (ranks <= 0) return wd__fail(WD_ERR_INVALID_ARG, "wd_plan_make: ranks %d must be positive", ranks);
    memset(out, 0, sizeof *out);
    int64_t B = batch, ne = wd__deep(m) ? m->emb_rows * m->E : 0;
    int64_t INp = (m->IN + 15) / 16 * 16, H0 = m->nlayers ? m->layer[0].out : 0;
    int64_t Pd = m->P + (INp - m->IN) * H0;
    int lp = m->d.precision == WD_PRECISION_BF16 && m->nlayers;
    int64_t rows = 0;   // sparse rows of one rank's step
    for (int k = 0; k < m->S; k++) rows += m->schema.slot[k].kind == WD_MULTI_HOT ? B * WD_PLAN_MULTI_HOT_IDS : B;
    rows += B * m->d.ncross;
    // NS: segments, and room for the fused path's chunk list there (8 bytes a chunk, at least one, even at N = 0)
    int64_t N = rows * ranks, NS = N + N / 32 + 2;
    int64_t widest = INp, colw = m->D + 1;
    for (int l = 0; l < m->nlayers; l++) { widest = WD__MAX(widest, (int64_t)m->layer[l].out);
        colw = WD__MAX(colw, (int64_t)m->layer[l].out); }
    wd_batch shape;   // input batches as the loader lays them out
    memset(&shape, 0, sizeof shape);
    shape.ndense = m->D; shape.nslots = m->S;
    for (int k = 0; k < m->S; k++) shape.kind[k] = m->schema.slot[k].kind;
    int64_t bb = (int64_t)wd__batch_carve(&shape, NULL, batch, B * WD_PLAN_MULTI_HOT_IDS);
    struct { int buf, index; int64_t bytes; } want[WD_PLAN_MAX];
    int n = 0;
#define WD__P(b_, i_, bytes_) do { \
    if (n == WD_PLAN_MAX) return wd__fail(WD_ERR_INTERNAL, "wd_plan_make: more than WD_PLAN_MAX (%d) buffers", \
                                          WD_PLAN_MAX); \
                                    want[n].buf = (b_); want[n].index = (i_); want[n].bytes = (bytes_); n++; } while (0)
    WD__P(WD_BUF_DENSE, 0, 4 * Pd);
    WD__P(WD_BUF_DENSE_S1, 0, 4 * Pd);
    WD__P(WD_BUF_DENSE_S2, 0, 4 * Pd);
    WD__P(WD_BUF_WIDE, 0, 4 * m->wide_rows);
    WD__P(WD_BUF_WIDE_Z, 0, 4 * m->wide_rows);
    WD__P(WD_BUF_WIDE_N, 0, 4 * m->wide_rows);
    WD__P(WD_BUF_EMB, 0, 4 * ne);
    WD__P(WD_BUF_EMB_S1, 0, 4 * ne);
    WD__P(WD_BUF_EMB_S2, 0, wd_opt_states(m->d.optimizer) > 1 ? 4 * ne : 0);
    WD__P(WD_BUF_BATCH, 0, bb);
    WD__P(WD_BUF_BATCH, 1, bb);
    WD__P(WD_BUF_X, 0, 4 * B * INp);
    // activations: fp32, or at precision bf16 bf16 for the hidden layers (the last, the deep logit, stays fp32)
    for (int l = 0; l < m->nlayers; l++) WD__P(WD_BUF_ACT, l, (lp && l + 1 < m->nlayers ? 2 : 4) * B * m->layer[l].out);
    WD__P(WD_BUF_GRAD, 0, 4 * B * widest);
    WD__P(WD_BUF_GRAD, 1, 4 * B * widest);
    WD__P(WD_BUF_LOGITS, 0, 4 * 5 * B);
    WD__P(WD_BUF_DENSE_GRAD, 0, 4 * (Pd + WD__TAIL));
    WD__P(WD_BUF_PARTIAL, 0, 4 * (B / 256 + 1) * colw);
    WD__P(WD_BUF_KEYS, 0, 8 * N);
    WD__P(WD_BUF_KEYS_ALT, 0, 8 * N);
    WD__P(WD_BUF_OCC, 0, 4 * N);
    WD__P(WD_BUF_OCC_ALT, 0, 4 * N);
    WD__P(WD_BUF_UKEYS, 0, 8 * (N + 1));
    WD__P(WD_BUF_RUN_COUNT, 0, 4 * (N + 1));
    WD__P(WD_BUF_RUN_OFF, 0, 4 * (N + 1));
    WD__P(WD_BUF_SEG_COUNT, 0, 4 * (N + 1));
    WD__P(WD_BUF_SEG_FIRST, 0, 4 * (N + 1));
    WD__P(WD_BUF_SEG_RUN, 0, 4 * NS);
    WD__P(WD_BUF_SEG_ROWS, 0, 4 * NS * m->R);
    WD__P(WD_BUF_ROWS, 0, 4 * N * m->R);
    // each rank sends its merged rows (count, keys, rows; at most `rows`) and receives every rank's
    WD__P(WD_BUF_EXCHANGE, 0, ranks > 1 ? (int64_t)(ranks + 1) * (16 + (8 + 4 * (int64_t)m->R) * rows) : 0);
    WD__P(WD_BUF_SORT_SCRATCH, 0, 8 * N + (4 << 20));
    WD__P(WD_BUF_GEMM_WS, 0, 32 << 20);
    WD__P(WD_BUF_STATE, 0, 16384);   // the CUDA backend's wdc_state: flags, results, shapes, batch pointers
    // the ReLU masks: a column of ceil(H / 128) x 128 bits per sample (cuBLASLt's leading dimension: a multiple of 128)
    for (int l = 0; l + 1 < m->nlayers; l++)
        WD__P(WD_BUF_RELU_MASK, l, ((int64_t)m->layer[l].out + 127) / 128 * 16 * B);
    int64_t widest_h = 1;
    for (int l = 0; l < m->nlayers; l++) widest_h = WD__MAX(widest_h, (int64_t)m->layer[l].out);
    if (lp) {   // precision bf16 only
        WD__P(WD_BUF_DENSE_LP, 0, 2 * (m->P_mlp + (INp - m->IN) * H0));
        WD__P(WD_BUF_X_LP, 0, 2 * B * INp);
        WD__P(WD_BUF_GRAD_LP, 0, 2 * B * widest_h);
        WD__P(WD_BUF_GRAD_LP, 1, 2 * B * widest_h);
    }
#undef WD__P
    for (int i = 0; i < n; i++) WD__TRY(wd__plan_add(out, want[i].buf, want[i].index, want[i].bytes));
    return WD_OK;
}
WDDEF wd_status wd_plan_from_desc(const wd_model_desc *d, int batch, int ranks, wd_plan *out) {
    wd_model *m = WD__NEW(wd_model);   // sized, never allocated
    if (!m) return wd__fail(WD_ERR_NOMEM, "out of memory");
    wd_status st = wd__model_plan(m, d);
    if (!st) st = wd_plan_make(m, batch, ranks, out);
    wd__free(m);
    return st;
}
static int64_t wd__xcap_for(int64_t rows, int64_t most) {
    int64_t c = (most + most / 4 + 255) / 256 * 256;
    return c < 256 ? WD__MIN(256, rows) : WD__MIN(c, rows);
}
WDDEF void wd_xcap_init(wd_xcap *x, int64_t rows, int64_t cap0) {
    memset(x, 0, sizeof *x);
    x->rows = rows;
    x->cap = WD__MIN(rows, cap0 > 0 ? cap0 : (rows / 4 + 255) / 256 * 256);
}
// wd_cuda_desc's table: each variable set and not empty replaces its field.
// The switches: 1 where the number is nonzero (inverted for the no_ fields:
// WD_CUDA_GRAPH=0 is no_graph = 1); counts: a number below 1 (or not a number)
// is the default, 0, as these variables were always read.
static void wd__cuda_flag(const char *name, int on_when_zero, int *field) {
    const char *v = getenv(name);
    if (v && *v) *field = (atof(v) != 0) != on_when_zero;
}
static void wd__cuda_count(const char *name, int64_t *field) {
    const char *v = getenv(name);
    if (v && *v) *field = atof(v) >= 1 && atof(v) < 9e18 ? (int64_t)atof(v) : 0;
}
WDDEF wd_status wd_cuda_desc_resolve(const wd_cuda_desc *in, wd_cuda_desc *out) {
    wd_cuda_desc c = *in;
    wd__cuda_flag("WD_CUDA_FP32", 0, &c.fp32);
    wd__cuda_flag("WD_CUDA_EPILOGUE", 1, &c.no_epilogue);
    wd__cuda_flag("WD_CUDA_BF16_DIRECT", 0, &c.bf16_direct);
    wd__cuda_flag("WD_CUDA_GRAPH", 1, &c.no_graph);
    wd__cuda_flag("WD_CUDA_OVERLAP", 1, &c.no_overlap);
    wd__cuda_flag("WD_CUDA_SIDE_PRIORITY", 0, &c.side_priority);
    wd__cuda_flag("WD_CUDA_TIMING", 0, &c.timing);
    wd__cuda_flag("WD_EXCHANGE_FULL", 0, &c.exchange_full);
    wd__cuda_count("WD_EXCHANGE_CAP", &c.exchange_cap);
    wd__cuda_count("WD_CHECK_TABLES", &c.check_tables);
    wd__cuda_count("WD_CUDA_MAX_BYTES", &c.max_bytes);
    const char *v = getenv("WD_CUDA_SPARSE");
    if (v && *v) {
        if (strcmp(v, "fused") && strcmp(v, "segmented"))
            return wd__fail(WD_ERR_INVALID_ARG, "WD_CUDA_SPARSE=%.40s: expected fused or segmented", v);
        c.sparse = !strcmp(v, "fused") ? WD_CUDA_SPARSE_FUSED : WD_CUDA_SPARSE_SEGMENTED;
    }
    if ((v = getenv("WD_CUDA_FUSED_GRID")) && *v) {
        char *end = NULL;
        long g = strtol(v, &end, 10);
        if (*end || g < 1 || g > 1 << 20)
            return wd__fail(WD_ERR_INVALID_ARG,
                            "WD_CUDA_FUSED_GRID=%.40s: expected a count of blocks from 1 to 1048576 (tests only)", v);
        c.fused_grid = (int)g;
    }
    if ((v = getenv("WD_CUDA_OVERLAP_DELAY_US")) && *v) c.overlap_delay_us = WD__MAX(0.0, atof(v));
    const struct { const char *name; int v; } flags[] = {
        {"fp32", c.fp32}, {"no_epilogue", c.no_epilogue}, {"bf16_direct", c.bf16_direct}, {"no_graph", c.no_graph},
        {"no_overlap", c.no_overlap}, {"side_priority", c.side_priority}, {"timing", c.timing},
        {"exchange_full", c.exchange_full}, {"sparse", c.sparse}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i].v != 0 && flags[i].v != 1)
            return wd__fail(WD_ERR_INVALID_ARG, "wd_cuda_desc.%s is %d: expected 0 or 1%s", flags[i].name,
                            flags[i].v, strcmp(flags[i].name, "sparse") ? "" : " (WD_CUDA_SPARSE_SEGMENTED, _FUSED)");
    const struct { const char *name; int64_t v, most; } counts[] = {
        {"exchange_cap", c.exchange_cap, INT64_MAX}, {"check_tables", c.check_tables, INT64_MAX},
        {"max_bytes", c.max_bytes, INT64_MAX}, {"fused_grid", c.fused_grid, 1 << 20}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (counts[i].v < 0 || counts[i].v > counts[i].most)
            return wd__fail(WD_ERR_INVALID_ARG, "wd_cuda_desc.%s is %lld: expected 0 (the default) or a count%s",
                            counts[i].name, (long long)counts[i].v, counts[i].most < INT64_MAX ? " up to 1048576" : "");
    if (!(c.overlap_delay_us >= 0 && c.overlap_delay_us <= 1e9))
        return wd__fail(WD_ERR_INVALID_ARG, "wd_cuda_desc.overlap_delay_us is %g: expected 0 to 1e9 (tests only)",
                        c.overlap_delay_us);
    *out = c;
    return WD_OK;
}
#ifdef WD_TESTING
WDDEF wd_status wd_test_fail_parse(const char *name, int pre_ok, int *rank, long long *step, int *pre, int *create) {
    const char *tf = getenv(name);
    int fr = -1, n = 0;
    long long fs = 0;
    *rank = -1; *step = 0; *pre = 0; *create = 0;
    if (!tf || !*tf) return WD_OK;
    if (sscanf(tf, "%d:create%n", &fr, &n) == 1 && n > 0 && !tf[n] && fr >= 0) {
        *rank = fr; *create = 1; return WD_OK; }
    n = 0;
    if (sscanf(tf, "%d:%lld%n", &fr, &fs, &n) != 2 || fr < 0 || fs < 1
        || (tf[n] && (!pre_ok || strcmp(tf + n, ":pre"))))
        return wd__fail(WD_ERR_INVALID_ARG, "%s=%.40s: expected RANK:STEP%s or RANK:create (tests only)", name, tf,
                        pre_ok ? ", RANK:STEP:pre" : "");
    *rank = fr; *step = fs; *pre = tf[n] != 0;
    return WD_OK;
}
#endif
WDDEF int wd_xcap_step(wd_xcap *x, int64_t most) {
    int over = most > x->cap;
    x->win = WD__MAX(x->win, most);
    if (over || ++x->steps >= 64) {
        int64_t c = wd__xcap_for(x->rows, x->win);
        if (over || c < x->cap) x->cap = c;
        x->win = 0; x->steps = 0;
    }
    return over;
}
WDDEF wd_status wd_plan_find(const wd_plan *p, int buf, int index, int64_t *offset, int64_t *bytes) {
    for (int i = 0; p && i < p->n; i++)
        if (p->e[i].buf == buf && p->e[i].index == index) {
            if (offset) *offset = p->e[i].offset;
            if (bytes) *bytes = p->e[i].bytes;
            return WD_OK;
        }
    return wd__fail(WD_ERR_INTERNAL, "device plan has no buffer '%s' (index %d)", wd_buf_name(buf), index);
}

// ---- 18. ONNX export ----------------------------------------------------------------------------
// ---- protobuf encoder: varints, keys, length-delimited fields (ONNX models, TensorBoard events) ----
// A message is built bottom-up: each nested message in its own wd__pb, then
// appended to its parent as one length-delimited field. The first failure
// (out of memory) sticks in st; every later call does nothing.
typedef struct wd__pb { wd__buf b; wd_status st; } wd__pb;
enum { WD__PB_VARINT = 0, WD__PB_I64 = 1, WD__PB_LEN = 2, WD__PB_I32 = 5 };
static void wd__pb_raw(wd__pb *p, const void *d, size_t n) { if (!p->st && n) p->st = wd__buf_put(&p->b, d, n); }
static size_t wd__pb_varint_len(uint64_t v) { size_t n = 1; while (v > 0x7f) { v >>= 7; n++; } return n; }
static size_t wd__pb_put_varint(uint8_t *t, uint64_t v) {
    size_t n = 0;
    do { t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v);
    return n;
}
static void wd__pb_varint(wd__pb *p, uint64_t v) { uint8_t t[10]; wd__pb_raw(p, t, wd__pb_put_varint(t, v)); }
static void wd__pb_key(wd__pb *p, int field, int wire) { wd__pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire); }
static void wd__pb_int(wd__pb *p, int field, int64_t v) { wd__pb_key(p, field, WD__PB_VARINT);
    wd__pb_varint(p, (uint64_t)v); }
static void wd__pb_bytes(wd__pb *p, int field, const void *d, size_t n) { wd__pb_key(p, field, WD__PB_LEN);
    wd__pb_varint(p, n); wd__pb_raw(p, d, n); }
static void wd__pb_str(wd__pb *p, int field, const char *s) { wd__pb_bytes(p, field, s, strlen(s)); }
static void wd__pb_f32(wd__pb *p, int field, float v) { uint8_t t[4]; uint32_t u; memcpy(&u, &v, 4); wd__put32(t, u);
    wd__pb_key(p, field, WD__PB_I32); wd__pb_raw(p, t, 4); }
static void wd__pb_f64(wd__pb *p, int field, double v) { uint8_t t[8]; uint64_t u; memcpy(&u, &v, 8); wd__put64(t, u);
    wd__pb_key(p, field, WD__PB_I64); wd__pb_raw(p, t, 8); }
// Appends sub as message field `field` of p, and empties sub for reuse.
static void wd__pb_msg(wd__pb *p, int field, wd__pb *sub) {
    if (sub->st && !p->st) p->st = sub->st;
    wd__pb_bytes(p, field, sub->b.p, sub->b.len);
    sub->b.len = 0;
}
static void wd__pb_free(wd__pb *p) { wd__buf_free(&p->b); p->st = WD_OK; }

// ---- the ONNX graph -------------------------------------------------------------------------------
// onnx.proto's field numbers and enums (IR version 8, opset 17).
enum { WD__OX_FLOAT = 1, WD__OX_INT64 = 7, WD__OX_STRING = 8, WD__OX_UINT64 = 13 };
enum { WD__OX_ATTR_FLOAT = 1, WD__OX_ATTR_INT = 2, WD__OX_ATTR_STRING = 3, WD__OX_ATTR_TENSOR = 4,
       WD__OX_ATTR_INTS = 7, WD__OX_ATTR_STRINGS = 8 };
#define WD__OX_MAX_BIG (2 * WD_MAX_SLOTS + WD_MAX_CROSSES + 2 * (WD_MAX_LAYERS + 1) + 2)
typedef struct wd__ox {
    wd__pb nodes, inits, io, attrs, t1, t2;   // GraphProto.node, .initializer (small), .input/.output; scratch
    struct { char name[48]; int64_t dims[2]; int ndims; const float *p; int64_t n; } big[WD__OX_MAX_BIG];
    int nbig, ntmp;
    const char *domain;             // the next node's operator set (NULL: the default one)
} wd__ox;
// A tensor's type and shape fields (TensorProto: dims 1, data_type 2, name 8).
static void wd__ox_tensor_head(wd__pb *t, const char *name, int dtype, const int64_t *dims, int ndims) {
    for (int i = 0; i < ndims; i++) wd__pb_int(t, 1, dims[i]);
    wd__pb_int(t, 2, dtype);
    if (name) wd__pb_str(t, 8, name);
}
// A small constant initializer (int64, uint64 or float values), raw little-endian data.
static void wd__ox_const(wd__ox *o, const char *name, int dtype, const int64_t *dims, int ndims,
                         const void *vals, int n) {
    uint8_t raw[64];
    int w8 = dtype == WD__OX_INT64 || dtype == WD__OX_UINT64;
    for (int i = 0; i < n && i < 8; i++) {
        if (w8) wd__put64(raw + 8 * i, ((const uint64_t *)vals)[i]);
        else { uint32_t u; memcpy(&u, (const float *)vals + i, 4); wd__put32(raw + 4 * i, u); }
    }
    wd__ox_tensor_head(&o->t1, name, dtype, dims, ndims);
    wd__pb_bytes(&o->t1, 9, raw, (size_t)n * (w8 ? 8 : 4));
    wd__pb_msg(&o->inits, 5, &o->t1);
}
static void wd__ox_big(wd__ox *o, const char *name, const float *p, int64_t d0, int64_t d1) {
    if (o->nbig >= WD__OX_MAX_BIG) {
        if (!o->nodes.st) o->nodes.st = wd__fail(WD_ERR_INTERNAL, "ONNX export: too many tables");
        return; }
    snprintf(o->big[o->nbig].name, sizeof o->big[0].name, "%s", name);
    o->big[o->nbig].dims[0] = d0; o->big[o->nbig].dims[1] = d1;
    o->big[o->nbig].ndims = d1 ? 2 : 1;
    o->big[o->nbig].p = p;
    o->big[o->nbig].n = d0 * (d1 ? d1 : 1);
    o->nbig++;
}
// Attributes (AttributeProto: name 1, f 2, i 3, s 4, t 5, type 20) collected in o->attrs.
static void wd__ox_attr_int(wd__ox *o, const char *name, int64_t v) {
    wd__pb_str(&o->t1, 1, name); wd__pb_int(&o->t1, 3, v); wd__pb_int(&o->t1, 20, WD__OX_ATTR_INT);
    wd__pb_msg(&o->attrs, 5, &o->t1);
}
static void wd__ox_attr_str(wd__ox *o, const char *name, const char *v) {
    wd__pb_str(&o->t1, 1, name); wd__pb_str(&o->t1, 4, v); wd__pb_int(&o->t1, 20, WD__OX_ATTR_STRING);
    wd__pb_msg(&o->attrs, 5, &o->t1);
}
static void wd__ox_attr_fill(wd__ox *o, int dtype, int v) {   // ConstantOfShape's value: a one-element tensor
    const int64_t one = 1;
    uint8_t z[8];
    if (dtype == WD__OX_INT64) wd__put64(z, (uint64_t)(int64_t)v);
    else { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); wd__put32(z, u); }
    wd__ox_tensor_head(&o->t2, NULL, dtype, &one, 1);
    wd__pb_bytes(&o->t2, 9, z, dtype == WD__OX_INT64 ? 8 : 4);
    wd__pb_str(&o->t1, 1, "value"); wd__pb_msg(&o->t1, 5, &o->t2); wd__pb_int(&o->t1, 20, WD__OX_ATTR_TENSOR);
    wd__pb_msg(&o->attrs, 5, &o->t1);
}
// A node (NodeProto: input 1, output 2, name 3, op_type 4, attribute 5) with
// the attributes collected so far; its output gets a fresh name in out
// unless out already holds one (the graph's output).
static const char *wd__ox_node(wd__ox *o, const char *op, char *out, const char *a, const char *b, const char *c) {
    const char *in[3] = {a, b, c};
    if (!out[0]) snprintf(out, 48, "t%d", o->ntmp++);
    for (int i = 0; i < 3; i++) if (in[i]) wd__pb_str(&o->t2, 1, in[i]);
    wd__pb_str(&o->t2, 2, out);
    char nm[64];
    snprintf(nm, sizeof nm, "%s_%s", op, out);
    wd__pb_str(&o->t2, 3, nm);
    wd__pb_str(&o->t2, 4, op);
    if (o->domain) wd__pb_str(&o->t2, 7, o->domain);
    o->domain = NULL;
    if (o->attrs.st && !o->t2.st) o->t2.st = o->attrs.st;
    wd__pb_raw(&o->t2, o->attrs.b.p, o->attrs.b.len);
    o->attrs.b.len = 0;
    wd__pb_msg(&o->nodes, 1, &o->t2);
    return out;
}
// A graph input or output (ValueInfoProto: name 1, type 2, doc_string 3;
// TypeProto.tensor_type 1: elem_type 1, shape 2; dim: dim_value 1, dim_param 2).
static void wd__ox_value(wd__ox *o, int field, const char *name, int dtype, const char *d0, int64_t d1,
                         const char *doc) {
    wd__pb *dim = &o->attrs, *shape = &o->t1, *tt = &o->t2;
    wd__pb_str(dim, 2, d0); wd__pb_msg(shape, 1, dim);
    if (d1 > 0) { wd__pb_int(dim, 1, d1); wd__pb_msg(shape, 1, dim); }
    wd__pb_int(tt, 1, dtype); wd__pb_msg(tt, 2, shape);
    wd__pb_msg(shape, 1, tt);   // shape now holds TypeProto {tensor_type}
    wd__pb_str(tt, 1, name); wd__pb_msg(tt, 2, shape); wd__pb_str(tt, 3, doc);
    wd__pb_msg(&o->io, field, tt);
}
static void wd__ox_free(wd__ox *o) {
    wd__pb_free(&o->nodes); wd__pb_free(&o->inits); wd__pb_free(&o->io); wd__pb_free(&o->attrs); wd__pb_free(&o->t1);
    wd__pb_free(&o->t2);
}

// Slot k's raw values to ids inside the graph: input values.<slot> and a
// LabelEncoder (ai.onnx.ml) whose output is the value ids.<slot>.
static void wd__ox_values(wd__ox *o, const wd_model *m, int k, const wd__names *nm, int64_t n, const char *ids,
                          wd__pb *doc) {
    const wd_slot *sl = &m->schema.slot[k];
    char vals[48], line[512];
    snprintf(vals, sizeof vals, "values.%s", sl->name);
    // where the value is in a line of the training text (fields from 0, the label's counted)
    const wd_text_spec *t = nm->spec;
    char at[160] = "", wk[48] = "";
    int base = t->schema.nslots - t->nderived, col = -1;
    if (t->format == WD_FMT_CRITEO) col = 14 + k;
    for (int c = 0; t->format == WD_FMT_CSV && k < base && c < t->ncols; c++)
        if (t->col_role[c] == 3 && t->col_index[c] == k) col = c;
    if (k >= base) {
        int q = k - base;
        snprintf(at, sizeof at, "bytes [%d, %d) of field %d", t->derived[q].from, t->derived[q].to, t->derived[q].col);
        if (t->derived[q].weekday) snprintf(wk, sizeof wk, ", as its day of the week (0 = Monday)");
    } else snprintf(at, sizeof at, "field %d", col);
    snprintf(line, sizeof line, "string [N]: slot %d '%s' (one-hot, a vocabulary of %lld values): each sample's raw "
             "value, as wd_batch_add takes it: %s of a training line (fields from 0, the label's counted)%s; a value "
             "outside the vocabulary gets id 0", k, sl->name, (long long)n, at, wk);
    wd__ox_value(o, 11, vals, WD__OX_STRING, "N", 0, line);
    char dl[640];
    snprintf(dl, sizeof dl, "  %s  %s\n", vals, line);
    wd__pb_raw(doc, dl, strlen(dl));
    wd__pb_str(&o->t1, 1, "keys_strings");   // id i's value, i = 1..n
    for (int64_t i = 1; i <= n; i++) wd__pb_bytes(&o->t1, 9, nm->text.p + nm->at[k][i], nm->len[k][i]);
    wd__pb_int(&o->t1, 20, WD__OX_ATTR_STRINGS);
    wd__pb_msg(&o->attrs, 5, &o->t1);
    wd__pb_str(&o->t1, 1, "values_int64s");
    for (int64_t i = 1; i <= n; i++) wd__pb_int(&o->t1, 8, i);
    wd__pb_int(&o->t1, 20, WD__OX_ATTR_INTS);
    wd__pb_msg(&o->attrs, 5, &o->t1);
    wd__ox_attr_int(o, "default_int64", 0);
    char out[48];
    memcpy(out, ids, sizeof out);
    o->domain = "ai.onnx.ml";
    wd__ox_node(o, "LabelEncoder", out, vals, NULL, NULL);
}
// Crossed pair c's row from its slots' ids (values ids.<p>, ids.<q>), into
// id: wd_cross_bucket as ONNX operators (opset 18: BitwiseOr, BitwiseXor).
static void wd__ox_cross(wd__ox *o, const wd_model *m, int c, char *id) {
    static const uint64_t mix[2] = {0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull};
    static const uint64_t shift[3] = {30, 27, 31};
    const int64_t one = 1;
    char k[48], ids[2][48], u[2][48] = {"", ""};
    if (c == 0) {   // the constants every cross uses
        const uint64_t v32 = 32, buckets = m->d.cross_buckets;
        wd__ox_const(o, "cx.32", WD__OX_UINT64, &one, 1, &v32, 1);
        for (int i = 0; i < 3; i++) {
            snprintf(k, sizeof k, "cx.%d", (int)shift[i]);
            wd__ox_const(o, k, WD__OX_UINT64, &one, 1, &shift[i], 1);
        }
        wd__ox_const(o, "cx.m1", WD__OX_UINT64, &one, 1, &mix[0], 1);
        wd__ox_const(o, "cx.m2", WD__OX_UINT64, &one, 1, &mix[1], 1);
        wd__ox_const(o, "cx.buckets", WD__OX_UINT64, &one, 1, &buckets, 1);
    }
    const uint64_t key = (uint64_t)(c + 1) * 0x9E3779B97F4A7C15ull;
    snprintf(k, sizeof k, "cx.key%d", c);
    wd__ox_const(o, k, WD__OX_UINT64, &one, 1, &key, 1);
    for (int j = 0; j < 2; j++) {
        snprintf(ids[j], sizeof ids[j], "ids.%s", m->schema.slot[m->d.cross[c][j]].name);
        wd__ox_attr_int(o, "to", WD__OX_UINT64);
        wd__ox_node(o, "Cast", u[j], ids[j], NULL, NULL);
    }
    char hi[48] = "", x[48] = "", y[48] = "";
    wd__ox_attr_str(o, "direction", "LEFT");
    wd__ox_node(o, "BitShift", hi, u[0], "cx.32", NULL);
    wd__ox_node(o, "BitwiseOr", x, hi, u[1], NULL);
    wd__ox_node(o, "BitwiseXor", y, x, k, NULL);
    for (int i = 0; i < 3; i++) {   // x ^= x >> 30; x *= m1; x ^= x >> 27; x *= m2; x ^= x >> 31
        char sh[48] = "", xr[48] = "", sn[48];
        snprintf(sn, sizeof sn, "cx.%d", (int)shift[i]);
        wd__ox_attr_str(o, "direction", "RIGHT");
        wd__ox_node(o, "BitShift", sh, y, sn, NULL);
        wd__ox_node(o, "BitwiseXor", xr, y, sh, NULL);
        memcpy(y, xr, sizeof y);
        if (i < 2) { char p[48] = ""; wd__ox_node(o, "Mul", p, y, i ? "cx.m2" : "cx.m1", NULL);
            memcpy(y, p, sizeof y); }
    }
    char r[48] = "";
    wd__ox_node(o, "Mod", r, y, "cx.buckets", NULL);
    wd__ox_attr_int(o, "to", WD__OX_INT64);
    wd__ox_node(o, "Cast", id, r, NULL, NULL);
}
// The graph's nodes, inputs, outputs and initializers; doc gets the inputs'
// description. names: the raw values of the slots the graph maps (NULL: ids only).
static void wd__ox_build(wd__ox *o, const wd_model *m, wd__pb *doc, const wd__names *names) {
    const int S = m->S, D = m->D, E = m->E, deep = wd__deep(m), wide = wd__wide(m), mean = m->d.pooling == WD_POOL_MEAN;
    const int64_t c0 = 0, c1 = 1, cbig = INT64_MAX, cE = E, cm1 = -1, one = 1;
    const float f1 = 1.0f;
    int multi = 0;
    for (int k = 0; k < S; k++) multi |= m->schema.slot[k].kind == WD_MULTI_HOT;
    if (multi) {   // the constants the nodes below use
        wd__ox_const(o, "c.0", WD__OX_INT64, &one, 1, &c0, 1);
        wd__ox_const(o, "c.0d", WD__OX_INT64, NULL, 0, &c0, 1);   // a scalar: CumSum's axis
        wd__ox_const(o, "c.1", WD__OX_INT64, &one, 1, &c1, 1);
        if (deep) wd__ox_const(o, "c.E", WD__OX_INT64, &one, 1, &cE, 1);
        if (mean) { wd__ox_const(o, "c.max", WD__OX_INT64, &one, 1, &cbig, 1);
            wd__ox_const(o, "c.1f", WD__OX_FLOAT, &one, 1, &f1, 1); }
    }
    if (deep) wd__ox_const(o, "c.-1", WD__OX_INT64, &one, 1, &cm1, 1);
    char line[512], nm[64], nm2[48];
    const char *mh = mean ? "mean" : "sum";
#define WD__DOC(...) do { char dl[640]; snprintf(dl, sizeof dl, __VA_ARGS__); \
    wd__pb_raw(doc, dl, strlen(dl)); } while (0)
    WD__DOC("widedeep Wide&Deep CTR model (%s%s%s). Inputs, N samples:\n", deep ? "deep" : "",
            deep && wide ? " + " : "", wide ? "wide" : "");
    if (D) {
        snprintf(line, sizeof line,
                 "float [N, %d]: the dense features as a .wdr holds them (after the dense feature rule)", D);
        wd__ox_value(o, 11, "dense", WD__OX_FLOAT, "N", D, line);
        WD__DOC("  dense  %s\n", line);
    }
    char term[WD_MAX_SLOTS + WD_MAX_CROSSES + 2][48];   // the wide part's terms, each [N]
    char emb[WD_MAX_SLOTS][48];                          // the deep input's pooled embeddings, each [N, E]
    int nterm = 0;
    for (int k = 0; k < S; k++) {
        const wd_slot *sl = &m->schema.slot[k];
        char ids[48], offs[48];
        snprintf(ids, sizeof ids, "ids.%s", sl->name);
        snprintf(offs, sizeof offs, "offsets.%s", sl->name);
        const float *et = deep ? m->emb + m->table_off[k] * E : NULL, *wt = m->wide + m->table_off[k];
        char ename[48], wname[48];
        snprintf(ename, sizeof ename, "emb.%s", sl->name);
        snprintf(wname, sizeof wname, "wide.%s", sl->name);
        if (deep) wd__ox_big(o, ename, et, sl->buckets, E);
        if (wide) wd__ox_big(o, wname, wt, sl->buckets, 0);
        emb[k][0] = term[nterm][0] = 0;
        if (sl->kind == WD_ONE_HOT) {
            if (names && names->at[k]) wd__ox_values(o, m, k, names, m->in.vocab->n[k], ids, doc);
            else {
                snprintf(line, sizeof line, "int64 [N]: slot %d '%s' (one-hot): each sample's id in [0, %u)", k,
                         sl->name, sl->buckets);
                wd__ox_value(o, 11, ids, WD__OX_INT64, "N", 0, line);
                WD__DOC("  %s  %s\n", ids, line);
            }
            if (deep) wd__ox_node(o, "Gather", emb[k], ename, ids, NULL);
            if (wide) wd__ox_node(o, "Gather", term[nterm++], wname, ids, NULL);
            continue;
        }
        char tdim[48];
        snprintf(tdim, sizeof tdim, "T.%s", sl->name);
        snprintf(line, sizeof line,
                 "int64 [T]: slot %d '%s' (multi-hot, %s-pooled): every sample's ids in [0, %u), one sample after another",
                 k, sl->name, mh, sl->buckets);
        wd__ox_value(o, 11, ids, WD__OX_INT64, tdim, 0, line);
        WD__DOC("  %s  %s\n", ids, line);
        snprintf(line, sizeof line,
                 "int64 [N]: slot %d '%s': where each sample's ids start in %s (offsets[0] = 0, non-decreasing, at most T; a sample may have none)",
                 k, sl->name, ids);
        wd__ox_value(o, 11, offs, WD__OX_INT64, "N", 0, line);
        WD__DOC("  %s  %s\n", offs, line);
        // seg[t] = the sample of id t: the number of offsets <= t, less one
        // (a 1 added at each offset into T+1 counters, then their running sum).
        char Nk[48] = "", Tk[48] = "", Tp[48] = "", z[48] = "", ones[48] = "", marks[48] = "", cum[48] = "",
            cumT[48] = "", seg[48] = "";
        wd__ox_node(o, "Shape", Nk, offs, NULL, NULL);
        wd__ox_node(o, "Shape", Tk, ids, NULL, NULL);
        wd__ox_node(o, "Add", Tp, Tk, "c.1", NULL);
        wd__ox_attr_fill(o, WD__OX_INT64, 0); wd__ox_node(o, "ConstantOfShape", z, Tp, NULL, NULL);
        wd__ox_attr_fill(o, WD__OX_INT64, 1); wd__ox_node(o, "ConstantOfShape", ones, Nk, NULL, NULL);
        wd__ox_attr_int(o, "axis", 0); wd__ox_attr_str(o, "reduction", "add");
        wd__ox_node(o, "ScatterElements", marks, z, offs, ones);
        wd__ox_node(o, "CumSum", cum, marks, "c.0d", NULL);
        wd__ox_node(o, "Slice", cumT, cum, "c.0", Tk);
        wd__ox_node(o, "Sub", seg, cumT, "c.1", NULL);
        char cnt[48] = "";
        if (mean) {   // ids per sample, at least 1 (an empty sample's sum is 0 either way)
            char tail[48] = "", ends[48] = "", cnti[48] = "", cntf[48] = "";
            wd__ox_node(o, "Slice", tail, offs, "c.1", "c.max");
            wd__ox_attr_int(o, "axis", 0); wd__ox_node(o, "Concat", ends, tail, Tk, NULL);
            wd__ox_node(o, "Sub", cnti, ends, offs, NULL);
            wd__ox_attr_int(o, "to", WD__OX_FLOAT); wd__ox_node(o, "Cast", cntf, cnti, NULL, NULL);
            wd__ox_node(o, "Max", cnt, cntf, "c.1f", NULL);
        }
        if (deep) {
            char seg2[48] = "", shTE[48] = "", idx[48] = "", shNE[48] = "", zNE[48] = "", g[48] = "", pooled[48] = "";
            wd__ox_node(o, "Unsqueeze", seg2, seg, "c.1", NULL);
            wd__ox_attr_int(o, "axis", 0); wd__ox_node(o, "Concat", shTE, Tk, "c.E", NULL);
            wd__ox_node(o, "Expand", idx, seg2, shTE, NULL);
            wd__ox_attr_int(o, "axis", 0); wd__ox_node(o, "Concat", shNE, Nk, "c.E", NULL);
            wd__ox_attr_fill(o, WD__OX_FLOAT, 0); wd__ox_node(o, "ConstantOfShape", zNE, shNE, NULL, NULL);
            wd__ox_node(o, "Gather", g, ename, ids, NULL);
            wd__ox_attr_int(o, "axis", 0); wd__ox_attr_str(o, "reduction", "add");
            wd__ox_node(o, "ScatterElements", mean ? pooled : emb[k], zNE, idx, g);
            if (mean) {
                char cnt2[48] = "";
                wd__ox_node(o, "Unsqueeze", cnt2, cnt, "c.1", NULL);
                wd__ox_node(o, "Div", emb[k], pooled, cnt2, NULL);
            }
        }
        if (wide) {
            char zN[48] = "", gw[48] = "", sw[48] = "";
            wd__ox_attr_fill(o, WD__OX_FLOAT, 0); wd__ox_node(o, "ConstantOfShape", zN, Nk, NULL, NULL);
            wd__ox_node(o, "Gather", gw, wname, ids, NULL);
            wd__ox_attr_int(o, "axis", 0); wd__ox_attr_str(o, "reduction", "add");
            wd__ox_node(o, "ScatterElements", mean ? sw : term[nterm], zN, seg, gw);
            if (mean) wd__ox_node(o, "Div", term[nterm], sw, cnt, NULL);
            nterm++;
        }
    }
    for (int c = 0; wide && c < m->d.ncross; c++) {
        int p = m->d.cross[c][0], q = m->d.cross[c][1];
        snprintf(nm, sizeof nm, "cross%d", c);
        snprintf(nm2, sizeof nm2, "wide.cross%d", c);
        wd__ox_big(o, nm2, m->wide + m->table_off[S + c], m->d.cross_buckets, 0);
        if (names) {   // section 13's rule on the ids in the graph, in uint64 (wrapping products)
            char id[48] = "";
            wd__ox_cross(o, m, c, id);
            term[nterm][0] = 0;
            wd__ox_node(o, "Gather", term[nterm++], nm2, id, NULL);
            continue;
        }
        snprintf(line, sizeof line,
                 "int64 [N]: crossed pair %d of slots %d '%s' and %d '%s': wd_cross_hash(id %s, id %s, %d, %u)", c, p,
                 m->schema.slot[p].name, q, m->schema.slot[q].name, m->schema.slot[p].name, m->schema.slot[q].name, c,
                 m->d.cross_buckets);
        wd__ox_value(o, 11, nm, WD__OX_INT64, "N", 0, line);
        WD__DOC("  %s  %s\n", nm, line);
        term[nterm][0] = 0;
        wd__ox_node(o, "Gather", term[nterm++], nm2, nm, NULL);
    }
    WD__DOC("Output: probability float [N], the click probability (sigmoid of the wide and deep logits).\n"
            "Ids are those wd convert assigns (the model's spec maps raw values to ids); cross ids: wd_cross_hash (widedeep.h, section 13).\n");
#undef WD__DOC
    char logit[48] = "", deepl[48] = "", widel[48] = "";
    if (deep) {   // x = [dense | emb_0 | ... | emb_{S-1}], the MLP, [N, 1] -> [N]
        char x[48] = "";
        wd__ox_attr_int(o, "axis", 1);
        // Concat takes any number of inputs: written by hand
        snprintf(x, sizeof x, "t%d", o->ntmp++);
        if (D) wd__pb_str(&o->t2, 1, "dense");
        for (int k = 0; k < S; k++) wd__pb_str(&o->t2, 1, emb[k]);
        wd__pb_str(&o->t2, 2, x); snprintf(nm, sizeof nm, "Concat_%s", x); wd__pb_str(&o->t2, 3, nm);
        wd__pb_str(&o->t2, 4, "Concat");
        wd__pb_raw(&o->t2, o->attrs.b.p, o->attrs.b.len); o->attrs.b.len = 0;
        wd__pb_msg(&o->nodes, 1, &o->t2);
        char in[48];
        memcpy(in, x, sizeof in);
        for (int l = 0; l < m->nlayers; l++) {
            const wd__layer *L = &m->layer[l];
            char w[48], b[48], h[48] = "";
            snprintf(w, sizeof w, "mlp.%d.weight", l); snprintf(b, sizeof b, "mlp.%d.bias", l);
            wd__ox_big(o, w, m->dense + L->w, L->out, L->in);
            wd__ox_big(o, b, m->dense + L->b, L->out, 0);
            wd__ox_attr_int(o, "transB", 1);
            wd__ox_node(o, "Gemm", h, in, w, b);
            if (l + 1 < m->nlayers) { char r[48] = ""; wd__ox_node(o, "Relu", r, h, NULL, NULL);
                memcpy(in, r, sizeof in); }
            else memcpy(in, h, sizeof in);
        }
        wd__ox_node(o, "Reshape", deepl, in, "c.-1", NULL);
    }
    if (wide) {   // bias + dense . w, then each slot's and cross's term in order
        wd__ox_big(o, "wide.bias", m->dense + m->P_mlp + D, 1, 0);
        char acc[48] = "";
        if (D) {
            char dot[48] = "";
            wd__ox_big(o, "wide.dense", m->dense + m->P_mlp, D, 0);
            wd__ox_node(o, "MatMul", dot, "dense", "wide.dense", NULL);
            wd__ox_node(o, "Add", acc, "wide.bias", dot, NULL);
        } else memcpy(acc, "wide.bias", 10);
        for (int t = 0; t < nterm; t++) { char s[48] = ""; wd__ox_node(o, "Add", s, acc, term[t], NULL);
            memcpy(acc, s, sizeof acc); }
        memcpy(widel, acc, sizeof widel);
    }
    if (deep && wide) wd__ox_node(o, "Add", logit, widel, deepl, NULL);
    else memcpy(logit, deep ? deepl : widel, sizeof logit);
    char prob[48] = "probability";
    wd__ox_node(o, "Sigmoid", prob, logit, NULL, NULL);
    wd__ox_value(o, 12, "probability", WD__OX_FLOAT, "N", 0,
                 "float [N]: the click probability of each sample (as wd_predict)");
}

static wd_status wd__export_onnx(const wd_model *m, const char *path, const wd__names *nm) {
    const char *tp = wd__tail(path, 400);
    if (m->d.precision != WD_PRECISION_FP32)
        return wd__fail(WD_ERR_UNSUPPORTED,
                        "%s: not exported: the model computes its MLP in bf16 and the ONNX graph in fp32, so their "
                        "probabilities would differ; train it with precision fp32 to export it", tp);
    for (int k = 0; k < m->S; k++) {
        if (!m->schema.slot[k].name[0])
            return wd__fail(WD_ERR_UNSUPPORTED,
                            "%s: not exported: slot %d has no name (ONNX inputs are named by slot)", tp, k);
        for (int j = 0; j < k; j++)
            if (strcmp(m->schema.slot[j].name, m->schema.slot[k].name) == 0)
                return wd__fail(WD_ERR_UNSUPPORTED,
                                "%s: not exported: slots %d and %d are both named '%s' (ONNX inputs are named by slot)",
                                tp, j, k, m->schema.slot[k].name);
    }
    wd__ox *o = WD__NEW(wd__ox);
    if (!o) return wd__fail(WD_ERR_NOMEM, "out of memory");
    wd__pb doc = {{0, 0, 0}, WD_OK}, head = {{0, 0, 0}, WD_OK}, gh = {{0, 0, 0}, WD_OK};
    wd__ox_build(o, m, &doc, nm);
    // The graph: nodes, name, initializers (small, then the tables, whose data
    // is written from the model's arrays), doc_string, inputs, outputs.
    wd__pb_str(&gh, 2, "widedeep");
    wd__pb_raw(&doc, "", 1);   // NUL
    wd__pb_str(&gh, 10, doc.st ? "" : (const char *)doc.b.p);
    uint64_t glen = o->nodes.b.len + o->inits.b.len + o->io.b.len + gh.b.len;
    wd_status st = o->nodes.st ? o->nodes.st : o->inits.st ? o->inits.st : o->io.st ? o->io.st : o->t1.st ? o->t1.st
        : o->t2.st ? o->t2.st : o->attrs.st ? o->attrs.st : doc.st ? doc.st : gh.st;
    size_t bighead[WD__OX_MAX_BIG];
    for (int i = 0; !st && i < o->nbig; i++) {   // a table: its head in t1 (measured here, written below)
        wd__ox_tensor_head(&o->t1, o->big[i].name, WD__OX_FLOAT, o->big[i].dims, o->big[i].ndims);
        uint64_t data = 4 * (uint64_t)o->big[i].n;
        uint64_t tlen = o->t1.b.len + 1 + wd__pb_varint_len(data) + data;
        bighead[i] = o->t1.b.len;
        glen += 1 + wd__pb_varint_len(tlen) + tlen;
        o->t1.b.len = 0;
    }
    // the model: ir_version 1, producer 2, 3, doc_string 6, opset_import 8, graph 7
    wd__pb_int(&head, 1, 8);
    wd__pb_str(&head, 2, "widedeep");
    wd__pb_str(&head, 3, WD_VERSION_STRING);
    wd__pb_str(&head, 6, doc.st ? "" : (const char *)doc.b.p);
    wd__pb_int(&o->t1, 2, nm ? 18 : 17);   // 18: the crosses' BitwiseOr, BitwiseXor
    wd__pb_msg(&head, 8, &o->t1);
    if (nm) {   // LabelEncoder's operator set
        wd__pb_str(&o->t1, 1, "ai.onnx.ml");
        wd__pb_int(&o->t1, 2, 2);
        wd__pb_msg(&head, 8, &o->t1);
    }
    wd__pb_key(&head, 7, WD__PB_LEN);
    wd__pb_varint(&head, glen);
    if (!st) st = head.st ? head.st : o->t1.st;
    uint64_t total = head.b.len + glen;
    if (!st && total > 0x7FFFFFFFull)
        st = wd__fail(WD_ERR_LIMIT,
                      "%s: not exported: the graph would take %.2f GiB and ONNX keeps a model in one protobuf of at most 2 GiB",
                      tp, (double)total / 1073741824.0);
    wd__outfile out;
    int opened = 0;
    if (!st) { st = wd__out_open(&out, path); opened = !st; }
    if (!st) st = wd__out_write(&out, head.b.p, head.b.len);
    if (!st) st = wd__out_write(&out, o->nodes.b.p, o->nodes.b.len);
    if (!st) st = wd__out_write(&out, gh.b.p, gh.b.len);
    if (!st) st = wd__out_write(&out, o->inits.b.p, o->inits.b.len);
    for (int i = 0; !st && i < o->nbig; i++) {
        o->t1.b.len = 0;
        uint64_t data = 4 * (uint64_t)o->big[i].n;
        uint64_t tlen = bighead[i] + 1 + wd__pb_varint_len(data) + data;
        wd__pb_key(&o->t1, 5, WD__PB_LEN);
        wd__pb_varint(&o->t1, tlen);
        wd__ox_tensor_head(&o->t1, o->big[i].name, WD__OX_FLOAT, o->big[i].dims, o->big[i].ndims);
        wd__pb_key(&o->t1, 9, WD__PB_LEN);
        wd__pb_varint(&o->t1, data);
        st = o->t1.st;
        if (!st) st = wd__out_write(&out, o->t1.b.p, o->t1.b.len);
        if (!st) st = wd__out_write(&out, o->big[i].p, (size_t)data);   // little-endian floats, as .wdm
    }
    if (!st) st = wd__out_write(&out, o->io.b.p, o->io.b.len);
    if (!st && (uint64_t)out.bytes != total)
        st = wd__fail(WD_ERR_INTERNAL, "%s: ONNX export wrote %lld bytes, measured %llu", tp, (long long)out.bytes,
                      (unsigned long long)total);
    if (opened) { if (st) wd__out_abort(&out); else st = wd__out_commit(&out); }
    wd__ox_free(o);
    wd__free(o);
    wd__pb_free(&doc);
    wd__pb_free(&head);
    wd__pb_free(&gh);
    return st;
}
WDDEF wd_status wd_model_export_onnx(const wd_model *m, const char *path) {
    if (!m || !path)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_model_export_onnx: %s is NULL", !m ? "the model" : "the path");
    if (!*path) return wd__fail(WD_ERR_INVALID_ARG, "wd_model_export_onnx: the path is empty");
    return wd__export_onnx(m, path, NULL);
}
// Notes the vocabulary values of every line of `path` (wd__names).
static wd_status wd__names_scan(const wd_text_spec *t, const char *path, wd__names *nm) {
    wd__in in;
    WD__TRY(wd__in_open(&in, path));
    wd_batch b;
    wd__buf buf = {0, 0, 0};
    wd_status st = wd_batch_init(&b, &t->schema, 1, 16);
    if (!st) st = wd__buf_reserve(&buf, (size_t)1 << 20);
    size_t have = 0, hlen = strlen(t->header);
    for (int eof = 0; !st && !eof;) {
        size_t got = 0;
        if (have == buf.cap) st = wd__buf_reserve(&buf, 2 * buf.cap);   // a line longer than the buffer
        if (!st) st = wd__in_read(&in, buf.p + have, buf.cap - have, &got);
        eof = !st && got == 0;
        have += got;
        char *s = (char *)buf.p, *end = s + have;
        for (;;) {   // every whole line (and at the end, the last one)
            char *nl = (char *)memchr(s, '\n', (size_t)(end - s));
            if (!nl && !(eof && s < end)) break;
            size_t len = (size_t)((nl ? nl : end) - s);
            if (len && s[len - 1] == '\r') len--;
            if (len && !(hlen && len == hlen && memcmp(s, t->header, hlen) == 0)) {
                wd_batch_clear(&b);
                wd__name_sink = nm;
                wd_status ps = wd_parse_line(t, s, len, &b);   // a line that does not parse: passed over
                wd__name_sink = NULL;
                if ((st = nm->failed ? nm->failed : ps != WD_ERR_PARSE ? ps : WD_OK) != WD_OK) break;
            }
            s = nl ? nl + 1 : end;
        }
        have = (size_t)(end - s);
        memmove(buf.p, s, have);
    }
    wd__buf_free(&buf);
    wd_batch_free(&b);
    wd__in_close(&in);
    return st;
}
WDDEF wd_status wd_model_export_onnx_values(const wd_model *m, const char *path, const char *const *files, int nfiles) {
    const char *who = "wd_model_export_onnx_values";
    if (!m || !path || (!files && nfiles))
        return wd__fail(WD_ERR_INVALID_ARG, "%s: %s is NULL", who, !m ? "the model" : !path ? "the path" : "files");
    if (!*path) return wd__fail(WD_ERR_INVALID_ARG, "%s: the path is empty", who);
    if (nfiles < 1) return wd__fail(WD_ERR_INVALID_ARG, "%s: no text files to read the vocabularies' values from", who);
    const char *tp = wd__tail(path, 400);
    wd_text_spec spec;
    WD__TRY(wd_model_spec(m, &spec));
    wd__names nm;
    memset(&nm, 0, sizeof nm);
    nm.spec = &spec;
    wd_status st = WD_OK;
    int nvoc = 0;
    if (spec.format == WD_FMT_LIBSVM)
        st = wd__fail(WD_ERR_UNSUPPORTED, "%s: not exported: the model reads LibSVM (feature indexes, no values "
                      "to map)", tp);
    for (int k = 0; !st && k < m->S; k++) {
        int64_t n = wd_vocab_size(spec.vocab, k);
        if (n < 0 || m->schema.slot[k].kind != WD_ONE_HOT) continue;
        nvoc++;
        nm.at[k] = (int64_t *)wd__malloc(sizeof(int64_t) * (size_t)(n + 1));
        nm.len[k] = (uint32_t *)wd__calloc(sizeof(uint32_t) * (size_t)(n + 1));
        if (!nm.at[k] || !nm.len[k])
            st = wd__fail(WD_ERR_NOMEM, "out of memory for the values of slot %s", m->schema.slot[k].name);
        for (int64_t i = 0; !st && i <= n; i++) nm.at[k][i] = -1;
    }
    if (!st && !nvoc)
        st = wd__fail(WD_ERR_UNSUPPORTED, "%s: not exported: no slot of the model has a vocabulary (all hash): "
                      "export its ids (wd_model_export_onnx)", tp);
    for (int f = 0; !st && f < nfiles; f++) st = wd__names_scan(&spec, files[f], &nm);
    for (int k = 0; !st && k < m->S; k++) {   // every value of every vocabulary found
        int64_t missing = 0, first = 0, n = nm.at[k] ? wd_vocab_size(spec.vocab, k) : 0;
        for (int64_t i = n; i >= 1; i--) if (nm.at[k][i] < 0) { missing++; first = i; }
        if (missing)
            st = wd__fail(WD_ERR_INVALID_ARG, "%s: not exported: slot %s: %lld of its %lld vocabulary values (id %lld "
                          "the first) are in none of the %d text file%s given: give the files its vocabulary was "
                          "built from",
                          tp, m->schema.slot[k].name, (long long)missing, (long long)n, (long long)first, nfiles,
                          nfiles == 1 ? "" : "s");
    }
    if (!st) st = wd__export_onnx(m, path, &nm);
    for (int k = 0; k < WD_MAX_SLOTS; k++) { wd__free(nm.at[k]); wd__free(nm.len[k]); }
    wd__buf_free(&nm.text);
    wd_text_spec_free(&spec);
    return st;
}

// ---- 19. TensorBoard event files ------------------------------------------------------------------
struct wd_tb { int fd; char *path; wd__buf buf; wd__pb ev, sum, val; wd_status st; };
static uint32_t wd__tb_masked_crc(const void *p, size_t n) {   // TFRecord's mask of CRC32C
    uint32_t c = wd__crc32c(p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
static double wd__wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
// One TFRecord around the Event in t->ev (then emptied).
static wd_status wd__tb_record(wd_tb *t) {
    if (t->ev.st) return t->st = t->ev.st;
    uint8_t h[12], c[4];
    wd__put64(h, (uint64_t)t->ev.b.len);
    wd__put32(h + 8, wd__tb_masked_crc(h, 8));
    wd__put32(c, wd__tb_masked_crc(t->ev.b.p, t->ev.b.len));
    wd_status st = wd__buf_put(&t->buf, h, 12);
    if (!st) st = wd__buf_put(&t->buf, t->ev.b.p, t->ev.b.len);
    if (!st) st = wd__buf_put(&t->buf, c, 4);
    t->ev.b.len = 0;
    if (!st && t->buf.len >= (1u << 16)) st = wd_tb_flush(t);
    if (st && !t->st) t->st = st;
    return st;
}
WDDEF wd_status wd_tb_open(const char *dir, wd_tb **out) {
    if (!dir || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_tb_open: %s is NULL", !dir ? "dir" : "out");
    *out = NULL;
    if (!*dir) return wd__fail(WD_ERR_INVALID_ARG, "wd_tb_open: the directory name is empty");
    size_t n = strlen(dir);
    char *p = (char *)wd__malloc(n + 400);
    if (!p) return wd__fail(WD_ERR_NOMEM, "out of memory");
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++)   // mkdir -p
        if (p[i] == '/' || p[i] == 0) {
            char ch = p[i];
            p[i] = 0;
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                wd_status st = wd__fail(WD_ERR_IO, "%s: cannot create the directory: %s", wd__tail(p, 400),
                                        strerror(errno));
                wd__free(p);
                return st;
            }
            p[i] = ch;
        }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        wd_status st = wd__fail(WD_ERR_IO, "%s: not a directory", wd__tail(dir, 400));
        wd__free(p);
        return st;
    }
    char host[64] = "host";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = 0;
    for (char *h = host; *h; h++) if (*h == '/') *h = '_';
    // a new file, never one that exists (two writers in one second and process
    // differ by the sequence number)
    static int seq;
    snprintf(p + n, 400, "/events.out.tfevents.%lld.%s.%ld.%d.widedeep", (long long)time(NULL), host, (long)getpid(),
             __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
    wd_tb *t = WD__NEW(wd_tb);
    if (!t) { wd__free(p); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    t->path = p;
    t->fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (t->fd < 0) {
        wd_status st = wd__fail(WD_ERR_IO, "%s: cannot create: %s", wd__tail(p, 400), strerror(errno));
        wd__free(p); wd__free(t);
        return st;
    }
    // the first event: the file's version (Event: wall_time 1, file_version 3)
    wd__pb_f64(&t->ev, 1, wd__wall_time());
    wd__pb_str(&t->ev, 3, "brain.Event:2");
    wd_status st = wd__tb_record(t);
    if (!st) st = wd_tb_flush(t);
    if (st) {   // no event file is left behind
        unlink(t->path);
        wd_error_hold(1);
        wd_tb_close(t);
        wd_error_hold(0);
        return st;
    }
    *out = t;
    return WD_OK;
}
WDDEF wd_status wd_tb_scalar(wd_tb *t, const char *tag, int64_t step, double value) {
    if (!t || !tag) return wd__fail(WD_ERR_INVALID_ARG, "wd_tb_scalar: %s is NULL", !t ? "the writer" : "the tag");
    if (t->st) return wd__fail(t->st, "%s: an earlier write failed", wd__tail(t->path, 400));
    // Event: wall_time 1, step 2, summary 5; Summary: value 1; Value: tag 1, simple_value 2
    wd__pb_str(&t->val, 1, tag);
    wd__pb_f32(&t->val, 2, (float)value);
    wd__pb_msg(&t->sum, 1, &t->val);
    wd__pb_f64(&t->ev, 1, wd__wall_time());
    wd__pb_int(&t->ev, 2, step);
    wd__pb_msg(&t->ev, 5, &t->sum);
    return wd__tb_record(t);
}
WDDEF wd_status wd_tb_flush(wd_tb *t) {
    if (!t) return wd__fail(WD_ERR_INVALID_ARG, "wd_tb_flush: the writer is NULL");
    if (t->buf.len && !t->st) {
        wd_status st = wd__write_all(t->fd, t->buf.p, t->buf.len, t->path);
        if (st) t->st = st;
    }
    t->buf.len = 0;
    return t->st;
}
WDDEF wd_status wd_tb_close(wd_tb *t) {
    if (!t) return WD_OK;
    wd_status st = wd_tb_flush(t);
    if (close(t->fd) != 0 && !st)
        st = wd__fail(WD_ERR_IO, "%s: close failed: %s", wd__tail(t->path, 400), strerror(errno));
    wd__buf_free(&t->buf); wd__pb_free(&t->ev); wd__pb_free(&t->sum); wd__pb_free(&t->val);
    wd__free(t->path);
    wd__free(t);
    return st;
}
WDDEF const char *wd_tb_path(const wd_tb *t) { return t ? t->path : NULL; }

// ---- 20. Arrow streams ---------------------------------------------------------------------------
// The types this reader maps (wd__arrow_type); a dictionary column has its
// index type's code and a value type of its own.
enum { WD__A_BOOL = 1, WD__A_I8, WD__A_U8, WD__A_I16, WD__A_U16, WD__A_I32, WD__A_U32, WD__A_I64, WD__A_U64,
       WD__A_F32, WD__A_F64, WD__A_STR32, WD__A_STR64, WD__A_VIEW };
static int wd__arrow_type(const char *f) {
    if (!f) return 0;
    if (f[0] && !f[1]) {
        const char *codes = "bcCsSiIlLfguzUZ";
        static const int type[] = {WD__A_BOOL, WD__A_I8, WD__A_U8, WD__A_I16, WD__A_U16, WD__A_I32, WD__A_U32,
                WD__A_I64, WD__A_U64, WD__A_F32, WD__A_F64, WD__A_STR32, WD__A_STR32, WD__A_STR64, WD__A_STR64};
        const char *c = strchr(codes, f[0]);
        return c ? type[c - codes] : 0;
    }
    return (strcmp(f, "vu") == 0 || strcmp(f, "vz") == 0) ? WD__A_VIEW : 0;
}
static int wd__arrow_int(int t) { return t >= WD__A_I8 && t <= WD__A_U64; }
static int wd__arrow_numeric(int t) { return t >= WD__A_BOOL && t <= WD__A_F64; }

// One column the spec needs: where it is in the stream and how to read it.
typedef struct wd__acol {
    int col;                        // the spec's column (header position)
    int child;                      // the stream's column
    int role;                       // 1 label, 2 dense, 3 categorical (also derived slots' and the id's columns)
    int type, dict;                 // dict: the dictionary's value type (0: not a dictionary)
    int list;                       // 1 list (+l), 2 large list (+L) of `type`: a multi-hot slot's values
    char name[64], format[24];      // for messages
} wd__acol;
typedef struct wd__abind {
    int ncols, nchildren;           // the spec's columns; the stream's
    int n;
    int unlabeled;                  // the label column is absent (its field reads "0")
    wd__acol c[WD__CSV_MAXCOLS];
} wd__abind;

static const char *wd__arrow_role(int role) {
    return role == 1 ? "the label" : role == 2 ? "a dense column" : "a categorical column";
}
// Binds the spec's columns to the stream's schema by name, checking types.
static wd_status wd__arrow_bind(const wd_text_spec *t, const struct ArrowSchema *s, int unlabeled, wd__abind *b) {
    memset(b, 0, sizeof *b);
    if (!s || !s->release) return wd__fail(WD_ERR_INVALID_ARG, "arrow: the stream's schema is NULL or released");
    if (!s->format || strcmp(s->format, "+s") != 0 || s->n_children < 0 || (s->n_children && !s->children))
        return wd__fail(WD_ERR_UNSUPPORTED,
                "arrow: the stream's schema has format '%.20s', not a struct of columns (+s)",
                s->format ? s->format : "(null)");
    if (t->format != WD_FMT_CSV)
        return wd__fail(
                WD_ERR_INVALID_ARG, "arrow: the spec is not a CSV spec (streams map columns by name as CSV does)");
    const char *fs[WD__CSV_MAXCOLS];
    size_t fl[WD__CSV_MAXCOLS];
    char *scratch = NULL;
    int nf = wd__csv_split(
            t->header, strlen(t->header), t->delimiter ? t->delimiter : ',', fs, fl, WD__CSV_MAXCOLS, &scratch);
    wd_status st = WD_OK;
    if (nf != t->ncols)
        st = wd__fail(WD_ERR_INVALID_ARG, "arrow: the spec's header does not hold its %d columns", t->ncols);
    int need[WD__CSV_MAXCOLS] = {0}, text[WD__CSV_MAXCOLS] = {0};   // text: a derived slot or the ids read it
    for (int i = 0; !st && i < t->ncols; i++) need[i] = t->col_role[i];
    for (int q = 0; !st && q < t->nderived; q++) text[t->derived[q].col] = 1;
    if (!st && t->id_col >= 0) text[t->id_col] = 1;
    for (int i = 0; !st && i < t->ncols; i++) if (text[i] && !need[i]) need[i] = 3;
    b->ncols = t->ncols; b->nchildren = (int)s->n_children; b->unlabeled = unlabeled;
    for (int i = 0; !st && i < t->ncols; i++) {
        if (!need[i]) continue;
        if (need[i] == 1 && unlabeled && !text[i]) { b->unlabeled = 1; continue; }   // predictions read no label
        int found = -1;
        for (int64_t k = 0; !st && k < s->n_children; k++) {
            const struct ArrowSchema *ch = s->children[k];
            if (!ch || !ch->name || strlen(ch->name) != fl[i] || memcmp(ch->name, fs[i], fl[i]) != 0) continue;
            if (found >= 0)
                st = wd__fail(WD_ERR_INVALID_ARG, "arrow: the stream has two columns named '%.*s'",
                        (int)WD__MIN(fl[i], 64), fs[i]);
            found = (int)k;
        }
        if (st) break;
        if (found < 0) {
            st = wd__fail(WD_ERR_INVALID_ARG, "arrow: the stream has no column '%.*s' (%s of the spec)",
                    (int)WD__MIN(fl[i], 64), fs[i], wd__arrow_role(need[i]));
            break;
        }
        const struct ArrowSchema *ch = s->children[found];
        wd__acol *c = &b->c[b->n++];
        c->col = i; c->child = found; c->role = need[i];
        snprintf(c->name, sizeof c->name, "%.*s", (int)WD__MIN(fl[i], sizeof c->name - 1), fs[i]);
        snprintf(c->format, sizeof c->format, "%s", ch->format ? ch->format : "(null)");
        c->type = wd__arrow_type(ch->format);
        int multi = need[i] == 3 && t->col_role[i] == 3 && t->schema.slot[t->col_index[i]].kind == WD_MULTI_HOT;
        if (ch->format && (strcmp(ch->format, "+l") == 0 || strcmp(ch->format, "+L") == 0)) {   // a multi-hot slot
            const struct ArrowSchema *it = ch->n_children == 1 && ch->children ? ch->children[0] : NULL;
            c->list = ch->format[1] == 'l' ? 1 : 2;
            c->type = it ? wd__arrow_type(it->format) : 0;
            snprintf(c->format, sizeof c->format, "%s<%.12s>", ch->format, it && it->format ? it->format : "?");
            if (!multi || text[i] || !c->type || c->type == WD__A_BOOL || c->type == WD__A_F32 ||
                    c->type == WD__A_F64 || it->dictionary)
                st = wd__fail(WD_ERR_UNSUPPORTED,
                        "arrow: column '%s' has format '%s': a list column fills a multi-hot slot with strings, binary "
                        "or integers%s",
                        c->name, c->format,
                        text[i]   ? " (derived slots and the id column take no lists)"
                        : multi ? ""
                                : " (this spec's slot is one-hot: wd_text_spec_arrow makes a list column's slot "
                                  "multi-hot; derived slots and the id column take no lists)");
        } else if (multi)
            st = wd__fail(WD_ERR_UNSUPPORTED,
                    "arrow: column '%s' has format '%s': its slot is multi-hot, filled by a list column", c->name,
                    c->format);
        else if (ch->dictionary) {
            c->dict = wd__arrow_type(ch->dictionary->format);
            if (!wd__arrow_int(c->type) || !c->dict || c->dict == WD__A_BOOL || c->dict == WD__A_F32 ||
                    c->dict == WD__A_F64 || c->role != 3 || ch->dictionary->dictionary)
                st = wd__fail(WD_ERR_UNSUPPORTED,
                        "arrow: column '%s': a dictionary of '%.15s' with '%s' indices, as %s: not supported "
                        "(categorical columns take dictionaries of strings, binary or integers)",
                        c->name, ch->dictionary->format ? ch->dictionary->format : "(null)", c->format,
                        wd__arrow_role(c->role));
        } else if (!c->type || (c->role != 3 && !wd__arrow_numeric(c->type)) ||
                (c->role == 3 && (c->type == WD__A_BOOL || c->type == WD__A_F32 || c->type == WD__A_F64)))
            st = wd__fail(WD_ERR_UNSUPPORTED, "arrow: column '%s' has format '%s', not supported as %s (%s)", c->name,
                    c->format, wd__arrow_role(c->role),
                    c->role == 3 ? "strings, binary, integers or a dictionary of them"
                                 : "booleans, integers or floats");
    }
    wd__free(scratch);
    return st;
}

WDDEF wd_status wd_text_spec_arrow(wd_text_spec *t, const struct ArrowSchema *schema, const wd_csv_desc *d) {
    if (!t || !schema || !d) return wd__fail(WD_ERR_INVALID_ARG, "wd_text_spec_arrow: NULL argument");
    if (!schema->release || !schema->format || strcmp(schema->format, "+s") != 0 || schema->n_children < 0 ||
            (schema->n_children && !schema->children))
        return wd__fail(WD_ERR_UNSUPPORTED,
                "arrow: the stream's schema has format '%.20s', not a struct of columns (+s)",
                schema->format ? schema->format : "(null)");
    char delim = d->delimiter ? d->delimiter : ',';
    char header[sizeof t->header];
    size_t n = 0;
    for (int64_t k = 0; k < schema->n_children; k++) {   // the names as a CSV header line: quoted where needed
        const char *nm = schema->children[k] ? schema->children[k]->name : NULL;
        if (!nm) return wd__fail(WD_ERR_INVALID_ARG, "arrow: column %lld has no name", (long long)k + 1);
        if (strpbrk(nm, "\r\n"))
            return wd__fail(WD_ERR_INVALID_ARG, "arrow: column %lld's name holds a line break", (long long)k + 1);
        int quote = strchr(nm, delim) || strchr(nm, '"');
        size_t need = strlen(nm) + 3 + (size_t)(quote ? strlen(nm) : 0);
        if (n + need >= sizeof header)
            return wd__fail(WD_ERR_LIMIT,
                    "arrow: the column names make a header line longer than %zu bytes "
                    "(the spec keeps every column's name)",
                    sizeof header - 1);
        if (k) header[n++] = delim;
        if (quote) header[n++] = '"';
        for (const char *p = nm; *p; p++) { if (*p == '"') header[n++] = '"'; header[n++] = *p; }
        if (quote) header[n++] = '"';
    }
    header[n] = 0;
    wd_csv_desc cd = *d;
    cd.header = header;
    cd.delimiter = delim;
    WD__TRY(wd_text_spec_csv_desc(t, &cd));
    for (int64_t k = 0; k < schema->n_children;
            k++) {   // a list column's slot is multi-hot (header order: the schema's)
        const char *f = schema->children[k]->format;
        if (t->col_role[k] == 3 && f && (strcmp(f, "+l") == 0 || strcmp(f, "+L") == 0))
            t->schema.slot[t->col_index[k]].kind = WD_MULTI_HOT;
    }
    wd__abind *b = WD__NEW(wd__abind);
    if (!b) return wd__fail(WD_ERR_NOMEM, "out of memory");
    wd_status st = wd__arrow_bind(t, schema, 0, b);
    wd__free(b);
    return st;
}

// Whether value j (physical: offset included) is not null.
static int wd__arrow_valid(const struct ArrowArray *a, int64_t j) {
    const uint8_t *v = (const uint8_t *)a->buffers[0];
    return !v || a->null_count == 0 || (v[j >> 3] >> (j & 7) & 1);
}
// Checks one column's array of a batch: its structure against the schema's
// type, its lengths and offsets, every index and view inside its data.
// The batch reads rows [from, from + rows) of it (from: its parent's offset).
static wd_status wd__arrow_check_leaf(
        const struct ArrowArray *a, int type, int64_t from, int64_t rows, const char *what) {
    if (!a || !a->release) return wd__fail(WD_ERR_CORRUPT, "%s: the array is missing or released", what);
    if (a->length < 0 || a->offset < 0 || a->length > INT64_MAX - a->offset || a->n_buffers < 0 || a->n_children < 0)
        return wd__fail(WD_ERR_CORRUPT, "%s: length %lld, offset %lld: out of range", what, (long long)a->length,
                (long long)a->offset);
    if (a->length < from + rows)
        return wd__fail(WD_ERR_CORRUPT, "%s: length %lld, the batch reads rows %lld..%lld of it", what,
                (long long)a->length, (long long)from, (long long)(from + rows));
    int want = type == WD__A_STR32 || type == WD__A_STR64 ? 3 : 2;
    if (type == WD__A_VIEW ? a->n_buffers < 3 : a->n_buffers != want)
        return wd__fail(WD_ERR_CORRUPT,
                "%s: %lld buffers, its format has %s%d (the schema changed mid-stream, or a malformed array)", what,
                (long long)a->n_buffers, type == WD__A_VIEW ? "at least " : "", type == WD__A_VIEW ? 3 : want);
    if (a->n_children)
        return wd__fail(WD_ERR_CORRUPT, "%s: %lld children, its format has none (the schema changed mid-stream?)", what,
                (long long)a->n_children);
    if (!a->buffers) return wd__fail(WD_ERR_CORRUPT, "%s: no buffers", what);
    if (!a->buffers[0] && a->null_count > 0)
        return wd__fail(WD_ERR_CORRUPT, "%s: %lld nulls and no validity buffer", what, (long long)a->null_count);
    if (rows == 0) return WD_OK;
    int64_t o = a->offset + from;
    if (!a->buffers[1])
        return wd__fail(WD_ERR_CORRUPT, "%s: the %s buffer is missing", what,
                type == WD__A_VIEW            ? "views"
                        : type >= WD__A_STR32 ? "offsets"
                                              : "values");
    if (type == WD__A_STR32 || type == WD__A_STR64) {
        int64_t prev = 0, first = 0;
        for (int64_t i = 0; i <= rows; i++) {
            int64_t v = type == WD__A_STR32 ? (int64_t)((const int32_t *)a->buffers[1])[o + i]
                                            : ((const int64_t *)a->buffers[1])[o + i];
            if (i == 0) first = v;
            if (v < 0 || (i && v < prev))
                return wd__fail(WD_ERR_CORRUPT,
                        "%s: offset %lld at index %lld of the batch's is %s (offsets out of range)", what, (long long)v,
                        (long long)i, v < 0 ? "negative" : "below the one before");
            prev = v;
        }
        if (prev > first && !a->buffers[2])
            return wd__fail(
                    WD_ERR_CORRUPT, "%s: %lld bytes of values and no data buffer", what, (long long)(prev - first));
    } else if (type == WD__A_VIEW) {
        int64_t nvar = a->n_buffers - 3;
        const int64_t *sizes = (const int64_t *)a->buffers[a->n_buffers - 1];
        if (nvar && !sizes) return wd__fail(WD_ERR_CORRUPT, "%s: the data buffers' sizes are missing", what);
        for (int64_t i = 0; i < rows; i++) {
            int64_t j = o + i;
            if (!wd__arrow_valid(a, j)) continue;
            const uint8_t *v = (const uint8_t *)a->buffers[1] + 16 * j;
            int32_t len, bi, off;
            memcpy(&len, v, 4); memcpy(&bi, v + 8, 4); memcpy(&off, v + 12, 4);
            if (len < 0 ||
                    (len > 12 &&
                            (bi < 0 || bi >= nvar || off < 0 || !a->buffers[2 + bi] || sizes[bi] < 0 ||
                                    (int64_t)off + len > sizes[bi])))
                return wd__fail(WD_ERR_CORRUPT,
                        "%s: row %lld: a view of %d bytes at %d in data buffer %d, outside the data "
                        "(offsets out of range)",
                        what, (long long)i + 1, len, off, bi);
        }
    }
    return WD_OK;
}
// Checks a list column's array (its offsets, then its values' array).
static wd_status wd__arrow_check_list(
        const struct ArrowArray *a, int list, int type, int64_t from, int64_t rows, const char *what) {
    if (!a || !a->release) return wd__fail(WD_ERR_CORRUPT, "%s: the array is missing or released", what);
    if (a->length < 0 || a->offset < 0 || a->length > INT64_MAX - a->offset || a->length < from + rows)
        return wd__fail(WD_ERR_CORRUPT, "%s: length %lld, offset %lld: out of range for rows %lld..%lld", what,
                (long long)a->length, (long long)a->offset, (long long)from, (long long)(from + rows));
    if (a->n_buffers != 2 || a->n_children != 1 || !a->buffers || !a->children || !a->children[0])
        return wd__fail(WD_ERR_CORRUPT,
                "%s: %lld buffers and %lld children, a list has 2 and 1 (the schema changed mid-stream?)", what,
                (long long)a->n_buffers, (long long)a->n_children);
    if (!a->buffers[0] && a->null_count > 0)
        return wd__fail(WD_ERR_CORRUPT, "%s: %lld nulls and no validity buffer", what, (long long)a->null_count);
    if (rows == 0) return WD_OK;
    if (!a->buffers[1]) return wd__fail(WD_ERR_CORRUPT, "%s: the offsets buffer is missing", what);
    int64_t o = a->offset + from, first = 0, prev = 0;
    for (int64_t i = 0; i <= rows; i++) {
        int64_t v =
                list == 1 ? (int64_t)((const int32_t *)a->buffers[1])[o + i] : ((const int64_t *)a->buffers[1])[o + i];
        if (i == 0) first = v;
        if (v < 0 || (i && v < prev))
            return wd__fail(WD_ERR_CORRUPT, "%s: offset %lld at index %lld of the batch's is %s (offsets out of range)",
                    what, (long long)v, (long long)i, v < 0 ? "negative" : "below the one before");
        prev = v;
    }
    const struct ArrowArray *c = a->children[0];
    if (c->release && c->length >= 0 && prev > c->length)
        return wd__fail(WD_ERR_CORRUPT, "%s: offset %lld past the %lld values of the list (offsets out of range)", what,
                (long long)prev, (long long)c->length);
    return wd__arrow_check_leaf(c, type, first, prev - first, what);
}
// The bytes of value j (a physical index: offset included) of a string,
// binary or view array.
static const char *wd__arrow_bytes(const struct ArrowArray *a, int type, int64_t j, size_t *n) {
    if (type == WD__A_STR32) {
        const int32_t *o = (const int32_t *)a->buffers[1];
        *n = (size_t)(o[j + 1] - o[j]);
        return *n ? (const char *)a->buffers[2] + o[j] : "";
    }
    if (type == WD__A_STR64) {
        const int64_t *o = (const int64_t *)a->buffers[1];
        *n = (size_t)(o[j + 1] - o[j]);
        return *n ? (const char *)a->buffers[2] + o[j] : "";
    }
    const char *v = (const char *)a->buffers[1] + 16 * j;
    int32_t len, bi, off;
    memcpy(&len, v, 4);
    *n = (size_t)len;
    if (len <= 12) return v + 4;
    memcpy(&bi, v + 8, 4); memcpy(&off, v + 12, 4);
    return (const char *)a->buffers[2 + bi] + off;
}
// Integer j of an integer array, as int64 (*u: the uint64 when unsigned).
static int64_t wd__arrow_i64(const struct ArrowArray *a, int type, int64_t j, uint64_t *u) {
    const void *p = a->buffers[1];
    int64_t v = 0;
    switch (type) {
    case WD__A_I8: v = ((const int8_t *)p)[j]; break;
    case WD__A_U8: v = ((const uint8_t *)p)[j]; break;
    case WD__A_I16: v = ((const int16_t *)p)[j]; break;
    case WD__A_U16: v = ((const uint16_t *)p)[j]; break;
    case WD__A_I32: v = ((const int32_t *)p)[j]; break;
    case WD__A_U32: v = ((const uint32_t *)p)[j]; break;
    case WD__A_I64: v = ((const int64_t *)p)[j]; break;
    case WD__A_U64: *u = ((const uint64_t *)p)[j]; return *u > (uint64_t)INT64_MAX ? -1 : (int64_t)*u;
    default: break;
    }
    *u = v < 0 ? 0 : (uint64_t)v;
    return v;
}
static size_t wd__u64_text(uint64_t v, int neg, char *out) {
    char tmp[24];
    size_t n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    size_t k = 0;
    if (neg) out[k++] = '-';
    while (n) out[k++] = tmp[--n];
    return k;
}
// The text of value j of a column: into the producer's buffer for strings
// and binary, into num (32 bytes) for numbers; NULL for a null.
static const char *wd__arrow_text(const struct ArrowArray *a, int type, int dict, int64_t j, char *num, size_t *n) {
    if (!wd__arrow_valid(a, j)) { *n = 0; return NULL; }
    if (dict) {   // an index into the dictionary (checked against its length)
        uint64_t u;
        int64_t ix = wd__arrow_i64(a, type, j, &u);
        const struct ArrowArray *d = a->dictionary;
        return wd__arrow_text(d, dict, 0, d->offset + ix, num, n);
    }
    if (type >= WD__A_STR32) return wd__arrow_bytes(a, type, j, n);
    if (type == WD__A_BOOL) {
        num[0] = (char)('0' + (((const uint8_t *)a->buffers[1])[j >> 3] >> (j & 7) & 1));
        *n = 1;
        return num;
    }
    if (type == WD__A_F32 || type == WD__A_F64) {   // 17 digits: strtod gives the same double back
        double x = type == WD__A_F32 ? (double)((const float *)a->buffers[1])[j] : ((const double *)a->buffers[1])[j];
        int k = snprintf(num, 32, "%.17g", x);
        *n = (size_t)WD__MAX(k, 0);
        return num;
    }
    uint64_t u;   // uint64 from its unsigned value (2^63 and above have no int64)
    int64_t v = wd__arrow_i64(a, type, j, &u);
    *n = v < 0 && type != WD__A_U64 ? wd__u64_text((uint64_t)0 - (uint64_t)v, 1, num) : wd__u64_text(u, 0, num);
    return num;
}

// A batch of the stream: the record batch (moved from the producer) and its
// columns checked; refs: jobs and cursors still reading it.
typedef struct wd__abatch {
    struct ArrowArray a;
    int64_t row0, no;               // the stream's row of its first row; its number (1, 2, ...)
    int refs;
    const struct ArrowArray *col[WD__CSV_MAXCOLS];   // per bound column (wd__abind.c)
} wd__abatch;
static void wd__abatch_unref(wd__abatch *ab) {
    if (!ab || --ab->refs > 0) return;
    if (ab->a.release) ab->a.release(&ab->a);
    wd__free(ab);
}
// The stream's next batch (*out = NULL at its end), checked against b.
static wd_status wd__arrow_next(
        struct ArrowArrayStream *s, const wd__abind *b, int64_t row0, int64_t no, wd__abatch **out) {
    *out = NULL;
    struct ArrowArray a;
    memset(&a, 0, sizeof a);
    int rc = s->get_next(s, &a);
    if (rc) {
        const char *e = s->get_last_error ? s->get_last_error(s) : NULL;
        return wd__fail(WD_ERR_IO, "arrow: the producer failed reading batch %lld (error %d): %.600s", (long long)no,
                rc, e ? e : "(no message)");
    }
    if (!a.release) return WD_OK;   // the end of the stream
    wd__abatch *ab = WD__NEW(wd__abatch);
    if (!ab) { a.release(&a); return wd__fail(WD_ERR_NOMEM, "out of memory"); }
    ab->a = a; ab->row0 = row0; ab->no = no; ab->refs = 1;
    char what[160];
    wd_status st = WD_OK;
    if (a.length < 0 || a.offset < 0 || a.length > INT64_MAX - a.offset || a.n_children != b->nchildren ||
            (a.n_children && !a.children))
        st = wd__fail(WD_ERR_CORRUPT,
                "arrow: batch %lld: %lld columns, length %lld, offset %lld; the stream's schema has %d columns "
                "(a schema that changes mid-stream, "
                "or a malformed batch)",
                (long long)no, (long long)a.n_children, (long long)a.length, (long long)a.offset, b->nchildren);
    else if (a.null_count > 0)
        st = wd__fail(WD_ERR_CORRUPT, "arrow: batch %lld: %lld null rows (a record batch has none)", (long long)no,
                (long long)a.null_count);
    for (int i = 0; !st && i < b->n; i++) {
        const wd__acol *c = &b->c[i];
        const struct ArrowArray *ch = a.children[c->child];
        snprintf(what, sizeof what, "arrow: batch %lld, column '%s' (%s)", (long long)no, c->name, c->format);
        st = c->list ? wd__arrow_check_list(ch, c->list, c->type, a.offset, a.length, what)
                     : wd__arrow_check_leaf(ch, c->type, a.offset, a.length, what);
        if (!st && c->dict != 0) {
            const struct ArrowArray *d = ch->dictionary;
            if (!d) st = wd__fail(WD_ERR_CORRUPT, "%s: no dictionary (the schema changed mid-stream?)", what);
            if (!st) st = wd__arrow_check_leaf(d, c->dict, 0, d->length, what);
            for (int64_t r = 0; !st && r < a.length; r++) {   // every index inside the dictionary
                int64_t j = ch->offset + a.offset + r;
                uint64_t u;
                int64_t ix = wd__arrow_valid(ch, j) ? wd__arrow_i64(ch, c->type, j, &u) : 0;
                if (ix < 0 || ix >= d->length)
                    st = wd__fail(WD_ERR_CORRUPT, "%s: row %lld: index %lld outside the dictionary's %lld values", what,
                            (long long)r + 1, (long long)ix, (long long)d->length);
            }
        } else if (!st && ch->dictionary)
            st = wd__fail(
                    WD_ERR_CORRUPT, "%s: a dictionary the schema does not have (the schema changed mid-stream?)", what);
        ab->col[i] = ch;
    }
    if (st) { wd__abatch_unref(ab); return st; }
    *out = ab;
    return WD_OK;
}
// Appends the sample of row r of batch ab (the spec's mapping of its fields);
// num: 32 bytes per bound column.
static wd_status wd__arrow_row(
        const wd_text_spec *t, const wd__abind *b, const wd__abatch *ab, int64_t r, char *num, wd_batch *out) {
    const char *fs[WD__CSV_MAXCOLS];
    size_t fl[WD__CSV_MAXCOLS];
    for (int i = 0; i < b->ncols; i++) { fs[i] = ""; fl[i] = 0; }
    if (b->unlabeled) for (int i = 0; i < b->ncols; i++) if (t->col_role[i] == 1) { fs[i] = "0"; fl[i] = 1; }
    for (int i = 0; i < b->n; i++) {
        const wd__acol *c = &b->c[i];
        const struct ArrowArray *a = ab->col[i];
        if (c->list) continue;   // below
        const char *p = wd__arrow_text(a, c->type, c->dict, a->offset + ab->a.offset + r, num + 32 * i, &fl[c->col]);
        if (!p && c->role == 1) return wd__fail(WD_ERR_PARSE, "column '%s': a null label", c->name);
        fs[c->col] = p ? p : "";
    }
    WD__TRY(wd__csv_fields(t, fs, fl, out));
    int s = out->n - 1;
    for (int i = 0; i < b->n; i++) {   // list columns: the ids of a multi-hot slot (null elements left out)
        const wd__acol *c = &b->c[i];
        if (!c->list) continue;
        const struct ArrowArray *a = ab->col[i], *v = a->children[0];
        int k = t->col_index[c->col];
        uint32_t cur = out->offs[k][s];
        int64_t j = a->offset + ab->a.offset + r, lo = 0, hi = 0;
        if (wd__arrow_valid(a, j)) {
            lo = c->list == 1 ? ((const int32_t *)a->buffers[1])[j] : ((const int64_t *)a->buffers[1])[j];
            hi = c->list == 1 ? ((const int32_t *)a->buffers[1])[j + 1] : ((const int64_t *)a->buffers[1])[j + 1];
        }
        for (int64_t e = lo; e < hi; e++) {
            size_t n;
            const char *p = wd__arrow_text(v, c->type, 0, v->offset + e, num + 32 * i, &n);
            if (!p) continue;
            wd_status st = wd__push_id(out, k, wd__cat_id(t, k, p, n), &cur);
            if (st) { out->n--; return st; }
        }
        out->offs[k][s + 1] = cur;
    }
    return WD_OK;
}

// ---- wd_convert from a stream (a pass of wd__conv over jobs of rows)
typedef struct wd__aseg { wd__abatch *ab; int64_t from, n; } wd__aseg;
// Maps a job's rows (its segments) into j->batch: convert's jobs and the
// reader's read-ahead; skip_bad: a row the CSV rules refuse is counted, not fatal.
static void wd__arrow_rows(const wd_text_spec *t, const wd__abind *b, int skip_bad, wd__job *j) {
    char *num = (char *)wd__malloc(32 * (size_t)WD__MAX(b->n, 1));
    if (!num) { j->status = WD_ERR_NOMEM; snprintf(j->err, sizeof j->err, "out of memory"); return; }
    const wd__aseg *seg = (const wd__aseg *)j->segs.p;
    size_t nseg = j->segs.len / sizeof *seg;
    for (size_t g = 0; g < nseg && !j->status; g++)
        for (int64_t r = seg[g].from; r < seg[g].from + seg[g].n; r++) {
            size_t ids0 = j->side1.len;
            wd_status st = wd__arrow_row(t, b, seg[g].ab, r, num, &j->batch);
            if (st) j->side1.len = ids0;
            j->bad += st == WD_ERR_PARSE;
            if (st && (st != WD_ERR_PARSE || !skip_bad)) {
                j->status = st;
                snprintf(j->err, sizeof j->err, "arrow stream: row %lld (batch %lld, its row %lld): %.800s",
                        (long long)(seg[g].ab->row0 + r + 1), (long long)seg[g].ab->no, (long long)r + 1,
                        wd_last_error());
                break;
            }
            if (st && j->nbad_shown < 8)
                snprintf(j->bad_where[j->nbad_shown++], sizeof j->bad_where[0], "arrow stream: row %lld: %.300s",
                        (long long)(seg[g].ab->row0 + r + 1), wd_last_error());
            j->rows += !st;
        }
    wd__free(num);
}
static void wd__arrow_job(wd__conv *c, wd__job *j) {
    wd__arrow_rows(c->spec, (const wd__abind *)c->arrow, c->d->skip_bad_lines, j);
}
static void wd__arrow_job_done(wd__job *j) {
    const wd__aseg *seg = (const wd__aseg *)j->segs.p;
    for (size_t g = 0; seg && g < j->segs.len / sizeof *seg; g++) wd__abatch_unref(seg[g].ab);
    j->segs.len = 0;
}
static wd_status wd__arrow_open(const wd_convert_desc *d, struct ArrowArrayStream *s, struct ArrowSchema *schema) {
    memset(s, 0, sizeof *s);
    memset(schema, 0, sizeof *schema);
    wd__errbuf[0] = 0;
    int rc = d->arrow(d->arrow_user, s);
    if (rc || !s->release) {
        wd_status st = wd__fail(WD_ERR_IO, "arrow: the stream could not be opened (%d): %.800s", rc,
                wd__errbuf[0] ? wd__errbuf : "(no message)");
        if (s->release) s->release(s);
        return st;
    }
    rc = s->get_schema(s, schema);
    if (rc || !schema->release) {
        const char *e = s->get_last_error ? s->get_last_error(s) : NULL;
        wd_status st = wd__fail(WD_ERR_IO, "arrow: the producer failed giving its schema (error %d): %.600s", rc,
                e ? e : "(no message)");
        s->release(s);
        return st;
    }
    return WD_OK;
}
static wd_status wd__arrow_pass(wd__conv *c, int threads, int m) {
    const wd_convert_desc *d = c->d;
    struct ArrowArrayStream s;
    struct ArrowSchema schema;
    WD__TRY(wd__arrow_open(d, &s, &schema));
    wd__abind *b = WD__NEW(wd__abind);
    wd_status st = b ? wd__arrow_bind(c->spec, &schema, 0, b) : wd__fail(WD_ERR_NOMEM, "out of memory");
    schema.release(&schema);
    wd__pipe pipe;
    int started = 0;
    if (!st) { c->arrow = b; st = wd__pipe_start(&pipe, threads, &c->spec->schema, wd__conv_run, c); started = !st; }
    int64_t submitted = 0, written = 0, rows = 0, no = 0;
    double last_progress = 0;
    wd__job *j = NULL;   // the job being filled
    int64_t have = 0;    // its rows
    while (!st) {
        wd__abatch *ab;
        if ((st = wd__arrow_next(&s, b, rows, ++no, &ab)) != WD_OK) break;
        for (int64_t r = 0; ab && r < ab->a.length && !st;) {
            while (!j && !st) {   // a free job, writing finished ones in order while none is free
                if ((j = wd__pipe_free_slot(&pipe)) != NULL && submitted - written < pipe.njobs) {
                    j->segs.len = 0;
                    have = 0;
                    break;
                }
                j = NULL;
                wd__conv_collect(&pipe, written++, &st);
            }
            if (st) break;
            int64_t n = WD__MIN(ab->a.length - r, (int64_t)m - have);
            wd__aseg seg = {ab, r, n};
            if ((st = wd__buf_put(&j->segs, &seg, sizeof seg)) != WD_OK) break;
            ab->refs++;
            r += n; have += n;
            if (have == m) { wd__pipe_submit(&pipe, j, submitted++); j = NULL; }
            if (d->progress) {   // after each block, not each batch: one batch may be the whole table
                double now = wd__now();
                if (now - last_progress > 0.1) {
                    last_progress = now;
                    if (d->progress(d->user, 0, 0, c->rep->rows))
                        st = wd__fail(WD_ERR_ABORTED, "conversion stopped by the progress callback; no output written");
                }
            }
        }
        if (!ab) break;
        rows += ab->a.length;
        wd__abatch_unref(ab);
    }
    if (j && !st && have) wd__pipe_submit(&pipe, j, submitted++);   // the last, shorter block
    else if (j) wd__arrow_job_done(j);
    if (started) {
        while (written < submitted) wd__conv_collect(&pipe, written++, &st);   // drain, also after an error
        wd__pipe_stop(&pipe);
    }
    if (!st && c->count_pass) c->arrow_rows = rows + 1;
    else if (!st && c->arrow_rows && rows != c->arrow_rows - 1)
        st = wd__fail(WD_ERR_IO,
                "arrow: the stream gave %lld rows on the second pass, %lld on the first: the source changed between "
                "the passes (the tables were sized from the first)",
                (long long)rows, (long long)(c->arrow_rows - 1));
    s.release(&s);
    c->arrow = NULL;
    wd__free(b);
    return st;
}

// ---- the reader: batches for a training loop's source, decoded ahead
// The read-ahead is section 8's ordered pipeline (as convert's): job seq
// takes the stream's next batch_size rows in seq order (its turn: the
// stream's calls, the cursor and the batches' references under mu, so the
// producer is never called from two threads at once), then maps them on its
// worker; the consumer takes jobs in order, holding the one it handed out.
struct wd_arrow_reader {
    wd_text_spec spec;              // a copy (its vocabulary borrowed from the caller's)
    struct ArrowArrayStream s;
    wd__abind b;
    int batch_size;
    pthread_mutex_t mu;             // the stream and the cursor (below), batches' refs
    pthread_cond_t cv;              // a turn passed, or stopping
    wd__abatch *ab;                 // cursor: the batch being cut, its next row,
    int64_t r, rows, no, turn;      // the rows of the batches before it, its number; the job to cut next
    int end, stopping;              // the stream ended (or failed: no more is read); close
    wd__pipe pipe;
    int started, ahead;             // the pipeline runs; jobs in flight at most (the RAM budget)
    int64_t submitted, taken, delivered;
    wd__job *held;                  // the job whose batch the caller has
    int done;                       // the caller was given the end
    wd_status st;                   // the failure the caller was given (sticky)
    char err[WD__ERR_MAX];
};
static void wd__arrow_ahead_run(wd__pipe *p, wd__job *j) {
    wd_arrow_reader *r = (wd_arrow_reader *)p->ctx;
    wd_batch_clear(&j->batch);
    j->rows = j->bad = 0;
    j->nbad_shown = 0;
    j->segs.len = 0;
    pthread_mutex_lock(&r->mu);
    while (r->turn != j->seq && !r->stopping) pthread_cond_wait(&r->cv, &r->mu);
    for (int64_t have = 0; !r->stopping && !r->end && have < r->batch_size;) {
        if (!r->ab || r->r == r->ab->a.length) {
            if (r->ab) { r->rows += r->ab->a.length; wd__abatch_unref(r->ab); r->ab = NULL; }
            wd_status st = wd__arrow_next(&r->s, &r->b, r->rows, ++r->no, &r->ab);
            r->r = 0;
            if (st) { j->status = st; snprintf(j->err, sizeof j->err, "%s", wd_last_error()); }
            r->end = st || !r->ab;
            continue;
        }
        wd__aseg seg = {r->ab, r->r, WD__MIN(r->ab->a.length - r->r, (int64_t)r->batch_size - have)};
        if (wd__buf_put(&j->segs, &seg, sizeof seg) != WD_OK) {
            j->status = WD_ERR_NOMEM; snprintf(j->err, sizeof j->err, "out of memory"); r->end = 1;
            break;
        }
        r->ab->refs++;
        r->r += seg.n; have += seg.n;
    }
    if (r->turn == j->seq) r->turn++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (!j->status) wd__arrow_rows(&r->spec, &r->b, 0, j);
    pthread_mutex_lock(&r->mu);
    wd__arrow_job_done(j);   // the producer's release callbacks, serialized with its other calls
    pthread_mutex_unlock(&r->mu);
}
WDDEF wd_status wd_arrow_reader_open(const wd_arrow_reader_desc *d, struct ArrowArrayStream *s,
                                     wd_arrow_reader **out) {
    if (out) *out = NULL;
    if (!s || !s->release)
        return wd__fail(WD_ERR_INVALID_ARG, "wd_arrow_reader_open: the stream is NULL or released");
    struct ArrowArrayStream mine = *s;   // moved: the reader releases it (or open, failing)
    s->release = NULL;
    const wd_text_spec *t = d ? d->spec : NULL;
    wd_status st = WD_OK;
    if (!out || !t)
        st = wd__fail(WD_ERR_INVALID_ARG, "wd_arrow_reader_open: %s is NULL",
                !out ? "out" : d ? "the desc's spec" : "the desc");
    else if (d->batch_size <= 0 || d->batch_size > WD_MAX_BLOCK_SAMPLES)
        st = wd__fail(WD_ERR_INVALID_ARG, "wd_arrow_reader_open: batch_size %d is outside 1..%d", d->batch_size,
                WD_MAX_BLOCK_SAMPLES);
    else if (d->threads < 0 || d->threads > 256)
        st = wd__fail(WD_ERR_INVALID_ARG, "wd_arrow_reader_open: threads %d is outside 0..256", d->threads);
    for (int k = 0; !st && k < t->schema.nslots; k++)
        if (wd__slot_unsized(t, k))
            st = wd__fail(WD_ERR_INVALID_ARG,
                    "wd_arrow_reader_open: slot %d (%.31s) has no buckets yet: take them from the training file "
                    "(wd_text_spec_match or wd_text_spec_vocab)",
                    k, t->schema.slot[k].name);
    // the read-ahead's budget: at least 2 batches (the one the caller holds, the next)
    size_t ram = st ? 0 : d->ram_bytes, bat = st ? 0 : wd__batch_bytes(&t->schema, d->batch_size);
    uint64_t avail = 0;
    if (!st && !ram && !(st = wd__memory_left(&avail))) ram = (size_t)(avail / 4);
    if (!st && ram / bat < 2)
        st = wd__fail(WD_ERR_LIMIT,
                "arrow reader: RAM budget %zu bytes (ram_bytes) is below the %zu needed for 2 batches of %d samples",
                ram, 2 * bat, d->batch_size);
    wd_arrow_reader *r = st ? NULL : WD__NEW(wd_arrow_reader);
    if (!st && !r) st = wd__fail(WD_ERR_NOMEM, "out of memory");
    if (st) { mine.release(&mine); return st; }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->spec = *t;
    r->s = mine;
    r->batch_size = d->batch_size;
    struct ArrowSchema schema;
    memset(&schema, 0, sizeof schema);
    int rc = mine.get_schema(&r->s, &schema);
    if (rc || !schema.release) {
        const char *e = r->s.get_last_error ? r->s.get_last_error(&r->s) : NULL;
        st = wd__fail(WD_ERR_IO, "arrow: the producer failed giving its schema (error %d): %.600s", rc,
                e ? e : "(no message)");
    } else {
        st = wd__arrow_bind(&r->spec, &schema, d->unlabeled, &r->b);
        schema.release(&schema);
    }
    if (!st) st = wd__pipe_start(&r->pipe, d->threads > 0 ? d->threads : 1, &r->spec.schema, wd__arrow_ahead_run, r);
    if (st) { wd_arrow_reader_close(r); return st; }
    r->started = 1;
    r->ahead = (int)WD__MIN(ram / bat, (size_t)r->pipe.njobs);
    *out = r;
    return WD_OK;
}
WDDEF wd_status wd_arrow_reader_next(wd_arrow_reader *r, const wd_batch **out) {
    if (!r || !out) return wd__fail(WD_ERR_INVALID_ARG, "wd_arrow_reader_next: NULL argument");
    *out = NULL;
    if (r->held) { wd__pipe_release(&r->pipe, r->held); r->held = NULL; }
    if (r->st) return wd__fail(r->st, "%s", r->err);
    if (r->done) return WD_OK;
    wd__job *j;
    while (r->submitted - r->taken < r->ahead && (j = wd__pipe_free_slot(&r->pipe)) != NULL)
        wd__pipe_submit(&r->pipe, j, r->submitted++);
    j = wd__pipe_wait(&r->pipe, r->taken++);
    if (j->status) {
        r->st = j->status;
        snprintf(r->err, sizeof r->err, "%s", j->err);
    } else if (j->batch.n) {
        r->held = j;
        r->delivered += j->batch.n;
        *out = &j->batch;
        return WD_OK;
    } else r->done = 1;   // no row: the stream's end
    wd__pipe_release(&r->pipe, j);
    return r->st ? wd__fail(r->st, "%s", r->err) : WD_OK;
}
WDDEF wd_status wd_arrow_source(void *reader, const wd_batch **out) {
    return wd_arrow_reader_next((wd_arrow_reader *)reader, out);
}
WDDEF int64_t wd_arrow_reader_rows(const wd_arrow_reader *r) { return r ? r->delivered : 0; }
WDDEF void wd_arrow_reader_close(wd_arrow_reader *r) {
    if (!r) return;
    if (r->started) {   // workers finish their job (a producer call in progress returns first)
        pthread_mutex_lock(&r->mu);
        r->stopping = 1;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        wd__pipe_stop(&r->pipe);
    }
    wd__abatch_unref(r->ab);
    if (r->s.release) r->s.release(&r->s);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    wd__free(r);
}

#endif // WIDEDEEP_IMPLEMENTATION_DONE
#endif // WIDEDEEP_IMPLEMENTATION

/*
MIT License. Copyright (c) 2026 the widedeep authors.
Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions: the above copyright
notice and this permission notice shall be included in all copies or
substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS",
WITHOUT WARRANTY OF ANY KIND.
*/
