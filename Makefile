# widedeep - `make` builds the wd tool (the CUDA build where a GPU is: see
# `all` below), `make demo` runs the demo, `make test` runs the test suite.
# Both install missing build dependencies first (tools/install-deps.sh);
# `make` names the ones it lacks.
.DEFAULT_GOAL := all
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra
LDLIBS  := -lzstd -lz -lpthread -lm
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer
# the test hooks (WD_CPU_TEST_FAIL, WD_CUDA_TEST_FAIL): test builds only, never a user's (`make`, build/wd)
TESTF   := -DWD_TESTING
DATA    ?= ../shared/data
B       := build
HDR     := widedeep.h
FUZZERS := wdr criteo libsvm csv wdm api arrow
# The GEMM engine of the MLP (widedeep.h, "The GEMM engine"): oneDNN when it is
# installed (tools/install-deps.sh installs it), else Debian's serial OpenBLAS,
# else the header's portable loops. `make GEMM=openblas` or `GEMM=portable`
# chooses one (the build directory is per engine only if you make it so: run
# `make clean` between engines).
OBDIR   := /usr/lib/x86_64-linux-gnu/openblas-serial
OBINC   := /usr/include/x86_64-linux-gnu/openblas-serial
HAVE_ONEDNN   := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\nint main(void){return dnnl_get_effective_cpu_isa()==0;}\n' | $(CC) -x c - -o /dev/null -ldnnl >/dev/null 2>&1 && echo 1)
HAVE_OPENBLAS := $(shell printf '\043include <cblas.h>\nint main(void){openblas_set_num_threads(1);return 0;}\n' | $(CC) -I$(OBINC) -x c - -o /dev/null -L$(OBDIR) -lopenblas >/dev/null 2>&1 && test -d $(OBDIR) && echo 1)
GEMM    ?= $(if $(HAVE_ONEDNN),onednn,$(if $(HAVE_OPENBLAS),openblas,portable))
ifeq ($(GEMM),onednn)
GEMMF   := -DWD_USE_ONEDNN
GEMML   := -ldnnl -lgomp
else ifeq ($(GEMM),openblas)
GEMMF   := -DWD_USE_CBLAS -DWD_USE_OPENBLAS -I$(OBINC)
GEMML   := -L$(OBDIR) -Wl,-rpath,$(OBDIR) -lopenblas
else ifneq ($(GEMM),portable)
$(error GEMM=$(GEMM): choose onednn, openblas or portable)
endif
# a change of engine rebuilds everything that links one
ENGINE  := $(B)/engine-$(GEMM).stamp
$(ENGINE): | $(B)
	@rm -f $(B)/engine-*.stamp; touch $@

.PHONY: all cuda check-deps deps demo test test-gpu test-gpu-emu-full gpu-pack fuzz clean test-python-asan

# CUDA: `make test` builds it whenever nvcc exists (CI compiles it on every
# change), `make cuda` too, plain `make` where a GPU is (`all` below); running
# it needs a GPU: `make test-gpu`, or `make gpu-pack` and bench/gpu_run.sh on a
# GPU host. CUDA_HOME locates the toolkit, NCCL_HOME nccl.h (compile time);
# libnccl.so.2 is loaded when a communicator is made (dlopen: the loader's
# path, then NCCL_HOME/lib through the RUNPATH; WD_NCCL_LIB names it), so a
# program without NCCL fails only where it asks for NCCL. -lineinfo: source
# lines in compute-sanitizer's reports (no effect on the code). Needs CUDA
# 11.7 or newer (cudaGraphInstantiateFlagUseNodePriority), 11.8 for sm_90
# below; compiled and checked with CUDA 13.0 only.
CUDA_HOME ?= $(shell dirname $$(dirname $$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)))
NCCL_HOME ?= $(CUDA_HOME)
NVCC      ?= $(shell command -v nvcc 2>/dev/null || (test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc))
GENCODE   := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80
NVFLAGS   := -O3 -std=c++17 $(GENCODE) -lineinfo -DWD_HAVE_CUDA -I. -I$(NCCL_HOME)/include -Xcompiler -Wall,-Wextra
CUDALIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(NCCL_HOME)/lib -lcublasLt -lcudart -ldl
# MPI: `mpirun -np N build/wd-mpi train ...` trains one rank per process
# (widedeep.h section 14, tools/wd.c); built whenever mpicc exists
# (tools/install-deps.sh installs Open MPI), with CUDA too as wd-mpi-cuda
# (--device cuda: one GPU per local rank, NCCL bootstrapped by MPI_Bcast).
MPICC     ?= $(shell command -v mpicc 2>/dev/null)
MPICXX    ?= $(shell command -v mpicxx 2>/dev/null)
PACK      := $(B)/gpu-pack
# the Criteo sample (DATA, when its train, dev and test files are all there)
# converted for the GPU host, never part of the repository: gpu_run.sh phase 3
# trains it fp32 and bf16 (AUC); --dry fails without it
CRITEO_TSV  := $(addprefix $(DATA)/criteo_kaggle_head8000_,train.tsv dev.tsv test.tsv)
CRITEO_PACK := $(if $(filter-out $(wildcard $(CRITEO_TSV)),$(CRITEO_TSV)),,$(PACK)/criteo-train.wdr $(PACK)/criteo-eval.wdr)
PACK_BINS := $(if $(NVCC),$(addprefix $(PACK)/,test_gpu wd-cuda multi_gpu ceilings loader_ladder host_feed gpu_run.sh peer_torch.py gpu_model.py) \
	$(if $(MPICXX),$(PACK)/wd-mpi-cuda) $(CRITEO_PACK))
CUDA_BINS := $(if $(NVCC),$(B)/widedeep_cuda.o $(B)/wd-cuda $(B)/test_gpu $(B)/multi_gpu $(B)/consumer_cuda_o $(PACK_BINS))
MPI_BINS  := $(if $(MPICC),$(B)/wd-mpi $(if $(NVCC),$(if $(MPICXX),$(B)/wd-mpi-cuda)))

# `make` (all): the wd tool, build/wd-mpi where mpicc exists, and the CUDA
# build (CUDA_TOOLS: the backend's object and archive, wd-cuda, multi_gpu,
# wd-mpi-cuda) only where it can run: a GPU that nvidia-smi lists, or GPU=1
# (GPU=0: never). `make cuda` builds CUDA_TOOLS on any machine with nvcc.
# The GPU pack and the GPU tests are `make gpu-pack`'s and `make test`'s
# (without a GPU, plain make spent 3 min 11 s on them, issue 32). First it
# checks the header's dependencies (zstd, zlib), naming the packages and
# `make deps` when they are missing, rather than failing on zstd.h.
ifeq ($(origin GPU),undefined)
GPU := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && echo 1)
endif
CUDA_TOOLS := $(B)/widedeep_cuda.o $(B)/libwidedeep_cuda.a $(B)/wd-cuda $(B)/multi_gpu \
	$(if $(and $(MPICC),$(MPICXX)),$(B)/wd-mpi-cuda)
ALL_BINS  := $(B)/wd $(if $(MPICC),$(B)/wd-mpi) $(if $(and $(NVCC),$(filter-out 0,$(GPU))),$(CUDA_TOOLS))
all: check-deps
	@$(MAKE) --no-print-directory $(ALL_BINS)
cuda: check-deps
	@test -n "$(NVCC)" || { echo "make cuda: nvcc not found (PATH, CUDA_HOME=$(CUDA_HOME))" >&2; exit 1; }
	@$(MAKE) --no-print-directory $(CUDA_TOOLS)
check-deps:
	@CC="$(CC)" bash tools/install-deps.sh --check

$(B)/wd-mpi: tools/wd.c $(HDR) $(ENGINE) | $(B)
	$(MPICC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -DWD_USE_MPI -o $@ tools/wd.c $(LDLIBS) $(GEMML)
# bench: the bytes a step exchanges between GPUs, before and with the exchange's cap (bench/MULTIGPU.md)
$(B)/exchange_bytes: bench/exchange_bytes.c $(HDR) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) -o $@ bench/exchange_bytes.c $(LDLIBS)
# bench: the bytes a step exchanges between processes (bench/MULTINODE.md)
$(B)/mpi_exchange: bench/mpi_exchange.c $(HDR) $(ENGINE) | $(B)
	$(MPICC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -DWD_USE_MPI -o $@ bench/mpi_exchange.c $(LDLIBS) $(GEMML)
$(B)/wd-mpi-cuda: tools/wd.c $(HDR) $(B)/widedeep_cuda.o $(ENGINE) | $(B)
	$(MPICC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -DWD_USE_MPI -DWD_HAVE_CUDA -c -o $(B)/wd-mpi-cuda.o tools/wd.c
	$(MPICXX) -o $@ $(B)/wd-mpi-cuda.o $(B)/widedeep_cuda.o $(CUDALIBS) $(LDLIBS) $(GEMML)

$(B)/widedeep_cuda.o: widedeep_cuda.cu $(HDR) | $(B)
	$(NVCC) $(NVFLAGS) -c -o $@ widedeep_cuda.cu
# the wd tool with the CUDA backend (--device cuda)
$(B)/wd-cuda: tools/wd.c $(HDR) $(B)/widedeep_cuda.o $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -DWD_HAVE_CUDA -c -o $(B)/wd-cuda.o tools/wd.c
	$(CXX) -o $@ $(B)/wd-cuda.o $(B)/widedeep_cuda.o $(CUDALIBS) $(LDLIBS) $(GEMML)
$(B)/multi_gpu: examples/multi_gpu.c $(HDR) $(B)/widedeep_cuda.o $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -DWD_HAVE_CUDA -c -o $(B)/multi_gpu.o examples/multi_gpu.c
	$(CXX) -o $@ $(B)/multi_gpu.o $(B)/widedeep_cuda.o $(CUDALIBS) $(LDLIBS) $(GEMML)
# test_gpu compares against tests/ref.h and the CPU backend with the portable
# GEMM loops, whatever GEMM says (so gpu-pack links the same object)
$(B)/test_gpu.o: tests/test_gpu.cu tests/testlib.h tests/ref.h $(HDR) | $(B)
	$(NVCC) $(NVFLAGS) $(TESTF) -c -o $@ tests/test_gpu.cu
$(B)/widedeep_cuda_test.o: widedeep_cuda.cu $(HDR) | $(B)
	$(NVCC) $(NVFLAGS) $(TESTF) -c -o $@ widedeep_cuda.cu
$(B)/test_gpu: $(B)/test_gpu.o $(B)/widedeep_cuda_test.o | $(B)
	$(CXX) -o $@ $(B)/test_gpu.o $(B)/widedeep_cuda_test.o $(CUDALIBS) $(LDLIBS)

# ---- the GPU pack ---------------------------------------------------------------------------
# `make gpu-pack`: build/gpu-pack/, what a GPU host with no package registry
# runs (bench/GPU_RUN.md): test_gpu, wd-cuda, multi_gpu, ceilings,
# loader_ladder, host_feed, the PyTorch peer, bench/gpu_model.py and bench/gpu_run.sh.
# Built here for the host there: sm_90 code and compute_80 PTX, -lineinfo;
# GEMM=portable (no oneDNN there); cudart, zstd and zlib static; libstdc++
# dynamic (static libstdc++/libgcc on Debian 12 pull in glibc 2.35/2.36
# symbols); cuBLASLt from the toolkit there; NCCL through dlopen (gpu_run.sh
# puts python3's nvidia/nccl/lib wheel on LD_LIBRARY_PATH). RUNPATH
# $ORIGIN/lib:/usr/local/cuda/lib64. wd-mpi-cuda (the MPI bootstrap, phase
# 4) brings Open MPI along: its libraries in lib/, its components in
# lib/openmpi/ (bench/pack_mpi.sh; the host has no MPI). `bench/gpu_run.sh
# --dry` checks every binary's NEEDED list, newest glibc symbol and the
# pack's size (30 MiB). No host debug sections (-Wl,-S: the -g of CFLAGS,
# 0.66-0.79 MB a binary; -lineinfo is in the device code, untouched), and no
# symbol table (-Wl,-s after it, 0.06-0.4 MB) but in test_gpu and wd-cuda, which phase 2
# runs under compute-sanitizer (its host frames named).
PACK_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,'$$ORIGIN/lib:/usr/local/cuda/lib64' -lcublasLt -lcudart_static \
	-Wl,-Bstatic -lzstd -lz -Wl,-Bdynamic -lpthread -ldl -lrt -lm -Wl,-S
$(PACK)/multi_gpu $(PACK)/wd-mpi-cuda $(PACK)/ceilings $(PACK)/loader_ladder $(PACK)/host_feed: PACK_STRIP := -Wl,-s
$(PACK):
	@mkdir -p $(PACK)
$(PACK)/test_gpu: $(B)/test_gpu.o $(B)/widedeep_cuda_test.o | $(PACK)
	$(CXX) -o $@ $^ $(PACK_LIBS)
$(B)/wd-cuda-pack.o: tools/wd.c $(HDR) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) -DWD_HAVE_CUDA -c -o $@ tools/wd.c
$(B)/multi_gpu-pack.o: examples/multi_gpu.c $(HDR) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) -DWD_HAVE_CUDA -c -o $@ examples/multi_gpu.c
$(PACK)/wd-cuda $(PACK)/multi_gpu: $(PACK)/%: $(B)/%-pack.o $(B)/widedeep_cuda.o | $(PACK)
	$(CXX) -o $@ $^ $(PACK_LIBS) $(PACK_STRIP)
$(PACK)/loader_ladder $(PACK)/host_feed: $(PACK)/%: bench/%.c $(HDR) | $(PACK)
	$(CC) -std=c11 $(CFLAGS) $(WARN) -o $@ $< -Wl,-Bstatic -lzstd -lz -Wl,-Bdynamic -lpthread -lm -Wl,-S $(PACK_STRIP)
$(B)/wd-mpi-cuda-pack.o: tools/wd.c $(HDR) | $(B)
	$(MPICC) -std=c11 $(CFLAGS) $(WARN) -DWD_USE_MPI -DWD_HAVE_CUDA -c -o $@ tools/wd.c
$(PACK)/wd-mpi-cuda: $(B)/wd-mpi-cuda-pack.o $(B)/widedeep_cuda.o bench/pack_mpi.sh | $(PACK)
	$(MPICXX) -o $@ $(B)/wd-mpi-cuda-pack.o $(B)/widedeep_cuda.o $(PACK_LIBS) $(PACK_STRIP)
	bash bench/pack_mpi.sh $(PACK) $@
$(B)/ceilings.o: bench/ceilings.cu | $(B)
	$(NVCC) -O3 -std=c++17 $(GENCODE) -lineinfo -Xcompiler -Wall,-Wextra -c -o $@ bench/ceilings.cu
$(PACK)/ceilings: $(B)/ceilings.o | $(PACK)
	$(CXX) -o $@ $^ $(PACK_LIBS) $(PACK_STRIP)
$(PACK)/gpu_run.sh $(PACK)/peer_torch.py $(PACK)/gpu_model.py: $(PACK)/%: bench/% | $(PACK)
	cp $< $@
# the Criteo sample (CRITEO_PACK above; make test builds it with the pack)
$(PACK)/criteo-train.wdr: $(B)/wd | $(PACK)
	$(B)/wd convert --format criteo -o $@ $(DATA)/criteo_kaggle_head8000_train.tsv > /dev/null
$(PACK)/criteo-eval.wdr: $(PACK)/criteo-train.wdr
	$(B)/wd convert --format criteo --schema-from $< -o $@ $(DATA)/criteo_kaggle_head8000_dev.tsv $(DATA)/criteo_kaggle_head8000_test.tsv > /dev/null
gpu-pack: $(PACK_BINS)
	@du -sh $(PACK)

# the backend found at link time: tests/consumer compiled without WD_HAVE_CUDA
# (neither file declares a CUDA call), linked with widedeep_cuda.o
$(B)/consumer_cuda_o: tests/consumer/main.c tests/consumer/widedeep_impl.c $(HDR) $(B)/widedeep_cuda.o $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -DWD_EXPECT_GEMM='"$(GEMM)"' -I. -c -o $(B)/consumer_main.o tests/consumer/main.c
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -I. -c -o $(B)/consumer_impl.o tests/consumer/widedeep_impl.c
	$(CXX) -o $@ $(B)/consumer_main.o $(B)/consumer_impl.o $(B)/widedeep_cuda.o $(CUDALIBS) $(LDLIBS) $(GEMML)

# on a machine with an NVIDIA GPU: the GPU tests (no GPU fails here:
# WD_REQUIRE_GPU=1), then the same binary under compute-sanitizer's memcheck,
# racecheck, initcheck and synccheck (shorter runs: WD_GPU_TEST_QUICK=1). Every
# run happens; the target fails if any failed, or if compute-sanitizer is
# missing. NO_DEPS=1 skips `make deps`. A GPU host without the build's
# dependencies runs `make gpu-pack`'s binaries instead (bench/GPU_RUN.md).
test-gpu: $(if $(NO_DEPS),,deps)
	@$(MAKE) --no-print-directory $(B)/test_gpu
	@mkdir -p $(B)/gpu-tmp
	@failed=; \
	echo "== test_gpu"; WD_REQUIRE_GPU=1 $(B)/test_gpu $(B)/gpu-tmp || failed="$$failed test_gpu"; \
	CS=$$(command -v compute-sanitizer || echo $(CUDA_HOME)/bin/compute-sanitizer); \
	if [ -x "$$CS" ]; then \
	    for tool in memcheck racecheck initcheck synccheck; do \
	        echo "== compute-sanitizer --tool $$tool test_gpu (WD_GPU_TEST_QUICK=1)"; \
	        WD_REQUIRE_GPU=1 WD_GPU_TEST_QUICK=1 $$CS --tool $$tool --error-exitcode 1 $(B)/test_gpu $(B)/gpu-tmp || failed="$$failed $$tool"; \
	    done; \
	else echo "compute-sanitizer not found (PATH, $(CUDA_HOME)/bin): memcheck, racecheck, initcheck and synccheck cannot run"; failed="$$failed compute-sanitizer-missing"; fi; \
	if [ -n "$$failed" ]; then echo "test-gpu FAILED:$$failed"; exit 1; fi; echo "test-gpu: test_gpu and all four sanitizers passed"

deps:
	@CC=$(CC) bash tools/install-deps.sh

$(B):
	@mkdir -p $(B)

$(B)/wd: tools/wd.c $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -o $@ tools/wd.c $(LDLIBS) $(GEMML)

# test binaries carry ASan + UBSan and the build's GEMM engine; the quick
# numeric ones again with the portable loops (the fallback stays right)
TESTS := test_wd test_convert test_contract test_loader test_train test_stream test_online test_loop test_faults test_ref test_golden test_edges test_hardening test_engine test_export test_arrow test_spec test_service
TESTS += test_errors   # the first error survives its clean-up; library threads block signals
PORTABLE_TESTS := test_ref_portable test_golden_portable test_train_portable test_engine_portable
$(B)/test_%: tests/test_%.c tests/testlib.h $(wildcard tests/*.h) $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(TESTF) $(WARN) $(GEMMF) -o $@ $< $(LDLIBS) $(GEMML)
$(B)/%_portable: tests/%.c tests/testlib.h $(wildcard tests/*.h) $(HDR) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(TESTF) $(WARN) -o $@ $< $(LDLIBS)
# the tests that use the header's declarations only (no WIDEDEEP_IMPLEMENTATION,
# no wd__ internals) link the implementation compiled once per flavor
# (tests/impl.c) instead of compiling all of it again each
LINKED_TESTS := test_ref test_golden test_faults test_loop test_edges
LINKED_TESTS += test_errors
$(B)/impl_san.o: tests/impl.c $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(TESTF) $(WARN) $(GEMMF) -c -o $@ tests/impl.c
$(B)/impl_san_portable.o: tests/impl.c $(HDR) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(TESTF) $(WARN) -c -o $@ tests/impl.c
$(addprefix $(B)/,$(LINKED_TESTS)): $(B)/%: tests/%.c tests/testlib.h $(wildcard tests/*.h) $(B)/impl_san.o $(ENGINE) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(TESTF) $(WARN) $(GEMMF) -o $@ $< $(B)/impl_san.o $(LDLIBS) $(GEMML)
$(addsuffix _portable,$(addprefix $(B)/,$(filter $(LINKED_TESTS),$(PORTABLE_TESTS:_portable=)))): $(B)/%_portable: tests/%.c tests/testlib.h $(wildcard tests/*.h) $(B)/impl_san_portable.o | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(TESTF) $(WARN) -o $@ $< $(B)/impl_san_portable.o $(LDLIBS)

# the threaded tests (loader, communicator, trainer) again under ThreadSanitizer
# (portable GEMMs: libgomp, under oneDNN, is not instrumented for TSan)
TSAN_CC := $(shell command -v clang >/dev/null && echo clang || echo $(CC))
$(B)/%_tsan: tests/%.c tests/testlib.h $(HDR) | $(B)
	$(TSAN_CC) -std=c11 -O1 -g -fsanitize=thread $(TESTF) $(WARN) -o $@ $< $(LDLIBS)

# tests/test_gpu.cu's harness on the CPU backend (no nvcc needed): the
# reference runs, the screen, the read-backs, the tolerances, WD_GPU_TESTS;
# with the build's GEMM engine, so that precision bf16 runs where oneDNN and
# the CPU have it (test_gradients_bf16: the CPU's bf16 against the reference)
$(B)/test_gpu_on_cpu: tests/test_gpu.cu tests/testlib.h tests/ref.h $(HDR) $(ENGINE) | $(B)
	$(CXX) -std=c++17 -x c++ -DWD_TEST_GPU_ON_CPU -O1 -g $(SAN) $(TESTF) $(WARN) $(GEMMF) -o $@ tests/test_gpu.cu $(LDLIBS) $(GEMML)

# tests/test_gpu.cu and widedeep_cuda.cu, unchanged, on an emulated device
# (tests/cudacpu: CUDA on the CPU, for tests; its README.md): g++ with the
# toolkit's headers (found as nvcc is: CUDA_HOME), ASan + UBSan, the
# emulator's runtime exported (-rdynamic) to the NCCL of threads that
# WD_NCCL_LIB loads (build/libnccl_cpu.so). Built where the headers are;
# without them tests/run.sh says SKIP (a failure under CI=true). -g1: the
# line tables a sanitizer's report names file:line by, in 3/4 of -g's build.
CUDA_HDRS := $(wildcard $(CUDA_HOME)/include/cuda_runtime.h)
NCCL_HDRS := $(wildcard $(NCCL_HOME)/include/nccl.h)
EMU_DIR   := tests/cudacpu
EMU_HDRS  := $(EMU_DIR)/cudacpu.h $(EMU_DIR)/internal.h $(EMU_DIR)/cub/cub.cuh
EMU_CXX   := $(CXX) -std=c++17 -g1 -ffp-contract=off $(SAN) $(WARN) -I$(EMU_DIR) -isystem $(CUDA_HOME)/include -isystem $(NCCL_HOME)/include
# (WD_PLAN_REDZONE: the device plan's buffers with poisoned gaps between them, widedeep.h section 17)
EMU_RZ    := -DWD_PLAN_REDZONE=256
EMU_CU    := $(EMU_CXX) -O1 -Wno-unknown-pragmas -x c++ -include $(EMU_DIR)/cudacpu.h -DWD_HAVE_CUDA $(TESTF) $(EMU_RZ) -I.
EMU_RT    := $(addprefix $(B)/cudacpu_,fiber.o cudart.o cublaslt.o)
EMU_BINS  := $(if $(CUDA_HDRS),$(B)/test_gpu_emu $(B)/cudacpu_selftest $(B)/cudacpu_redzone $(B)/wd-cuda-emu \
	$(if $(NCCL_HDRS),$(B)/libnccl_cpu.so $(B)/test_nccl_cpu))
$(B)/cudacpu_%.o: $(EMU_DIR)/%.cpp $(EMU_HDRS) | $(B)
	$(EMU_CXX) -O2 -c -o $@ $<
$(B)/widedeep_cuda_emu.o: widedeep_cuda.cu $(HDR) $(EMU_HDRS) | $(B)
	$(EMU_CU) -c -o $@ widedeep_cuda.cu
$(B)/test_gpu_emu.o: tests/test_gpu.cu tests/testlib.h tests/ref.h $(HDR) $(EMU_HDRS) | $(B)
	$(EMU_CU) -c -o $@ tests/test_gpu.cu
$(B)/test_gpu_emu: $(B)/test_gpu_emu.o $(B)/widedeep_cuda_emu.o $(EMU_RT)
	$(CXX) $(SAN) -rdynamic -o $@ $^ $(LDLIBS) -ldl
# the device plan's red zones against a seeded overrun (widedeep_cuda.cu's wdc_plan_poison, the header's plan)
$(B)/cudacpu_redzone: $(EMU_DIR)/redzone.cu $(EMU_DIR)/child.h $(HDR) $(B)/widedeep_cuda_emu.o $(EMU_RT) | $(B)
	$(EMU_CU) -o $@ $< -x none $(B)/widedeep_cuda_emu.o $(EMU_RT) $(LDLIBS) -ldl
# wd-cuda on the emulated device (ASan + UBSan, the objects of test_gpu_emu): tests/run.sh trains the
# Criteo sample with it on the device and on the CPU backend and compares their AUC (gpu_emu_criteo)
$(B)/wd-cuda-emu: tools/wd.c $(HDR) $(B)/widedeep_cuda_emu.o $(EMU_RT) $(ENGINE) | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(WARN) $(GEMMF) $(TESTF) -DWD_HAVE_CUDA $(EMU_RZ) -c -o $(B)/wd-cuda-emu.o tools/wd.c
	$(CXX) $(SAN) -rdynamic -o $@ $(B)/wd-cuda-emu.o $(B)/widedeep_cuda_emu.o $(EMU_RT) $(LDLIBS) $(GEMML) -ldl
# the emulator's own tests: each check against a seeded bug in a copy of a real kernel
$(B)/cudacpu_selftest: $(EMU_DIR)/selftest.cu $(EMU_DIR)/child.h $(EMU_RT) | $(B)
	$(EMU_CU) -o $@ $< -x none $(EMU_RT) $(LDLIBS) -ldl
# NCCL for the emulated device (ranks as threads; tests/cudacpu/README.md, "NCCL"): no CUDA library
# linked, the program's runtime is its; ASan + UBSan as the programs that load it. test_nccl_cpu: the
# library against NCCL's rules and its faults, the backend against the faults, examples/multi_gpu.c.
EMU_CC    := $(CC) -std=c11 -O1 -g1 $(SAN) $(TESTF) $(WARN) $(EMU_RZ) -isystem $(CUDA_HOME)/include -isystem $(NCCL_HOME)/include
$(B)/libnccl_cpu.so: $(EMU_DIR)/nccl_cpu.c | $(B)
	$(EMU_CC) -fPIC -shared -o $@ $<
$(B)/test_nccl_cpu: $(EMU_DIR)/test_nccl_cpu.c examples/multi_gpu.c tests/testlib.h $(HDR) $(B)/widedeep_cuda_emu.o $(EMU_RT) \
		$(B)/libnccl_cpu.so
	$(EMU_CC) -DWD_HAVE_CUDA -c -o $(B)/test_nccl_cpu.o $<
	$(CXX) $(SAN) -rdynamic -o $@ $(B)/test_nccl_cpu.o $(B)/widedeep_cuda_emu.o $(EMU_RT) -L$(B) -lnccl_cpu \
		-Wl,-rpath,'$$ORIGIN' $(LDLIBS) -ldl
# every test of test_gpu.cu at its full shapes on 2 emulated devices (make test runs the quick ones;
# the NCCL tests need build/libnccl_cpu.so)
test-gpu-emu-full: $(B)/test_gpu_emu
	mkdir -p $(B)/emu-full && WD_COMM_TIMEOUT=150 CUDACPU_DEVICES=2 WD_NCCL_LIB=$(CURDIR)/$(B)/libnccl_cpu.so \
	    $(B)/test_gpu_emu $(B)/emu-full
.PHONY: test-gpu-emu-criteo coverage-gpu-emu test-gpu-emu-tsan
# line coverage of widedeep_cuda.cu under the emulated suite (gcov; bench/RESULTS.md): the backend compiled
# --coverage, test_gpu_emu's tests at the quick shapes (make test's default policies) and test_nccl_cpu
# run, then its lines run and not run, per function (tests/gcov_lines.sh)
COV := $(B)/cov
$(COV)/widedeep_cuda_emu.o: widedeep_cuda.cu $(HDR) $(EMU_HDRS) | $(B)
	@mkdir -p $(COV)
	$(EMU_CU) --coverage -c -o $@ widedeep_cuda.cu
$(COV)/test_gpu_emu: $(B)/test_gpu_emu.o $(COV)/widedeep_cuda_emu.o $(EMU_RT)
	$(CXX) $(SAN) --coverage -rdynamic -o $@ $^ $(LDLIBS) -ldl
$(COV)/test_nccl_cpu: $(B)/test_nccl_cpu $(COV)/widedeep_cuda_emu.o
	$(CXX) $(SAN) --coverage -rdynamic -o $@ $(B)/test_nccl_cpu.o $(COV)/widedeep_cuda_emu.o $(EMU_RT) -L$(B) -lnccl_cpu \
		-Wl,-rpath,'$$ORIGIN/..' $(LDLIBS) -ldl
coverage-gpu-emu: $(COV)/test_gpu_emu $(COV)/test_nccl_cpu
	rm -f $(COV)/*.gcda; mkdir -p $(COV)/run
	WD_GPU_TEST_QUICK=1 WD_COMM_TIMEOUT=150 CUDACPU_DEVICES=2 WD_NCCL_LIB=$(CURDIR)/$(B)/libnccl_cpu.so \
	    $(COV)/test_gpu_emu $(COV)/run > $(COV)/test_gpu_emu.out 2>&1; tail -1 $(COV)/test_gpu_emu.out
	CUDACPU_DEVICES=2 WD_NCCL_LIB=$(CURDIR)/$(B)/libnccl_cpu.so $(COV)/test_nccl_cpu $(COV)/run \
	    > $(COV)/test_nccl_cpu.out 2>&1; tail -1 $(COV)/test_nccl_cpu.out
	bash tests/gcov_lines.sh widedeep_cuda.cu $(COV)/widedeep_cuda_emu.o

# the TSan kernel harness (tests/cudacpu/tsan.cpp): kernels, host code and the emulator's runtime under
# -fsanitize=thread, but for fiber.cpp (GPU threads' switches and barriers: not TSan's concern) and tsan.cpp,
# compiled without it but with fiber.cpp's TSan hooks (-D__SANITIZE_THREAD__); the order TSan sees between GPU threads
# only CUDA's (--wrap of the fiber calls, __syncthreads, __shared__ arrays and the grid); under the FIFO schedule: the
# selftest's seeded missing barrier (caught), then test_gpu.cu's tests of TSAN_GPU_TESTS on the real kernels
# (few executor threads and multiprocessors: gcc 12's TSan pays for every thread and fiber it has seen)
TSAN_GPU_TESTS := test_gradients_fp32
TSAN_WRAP := -Wl,--wrap=__tsan_switch_to_fiber,--wrap=__tsan_create_fiber,--wrap=__tsan_destroy_fiber \
	-Wl,--wrap=_ZN7cudacpu13block_barrierEv \
	-Wl,--wrap=_ZN7cudacpu12shared_arrayEPKvm,--wrap=_ZN7cudacpu8run_gridE4dim3S0_RKSt8functionIFvvEEPKc
# (g++'s TSan: clang 14's reports no race between fibers, the seeded one included)
TSAN_CXX  := $(CXX)
TSAN_RT   := $(addprefix $(B)/tsan/cudacpu_,fiber.o cudart.o cublaslt.o tsan.o)
TSAN_EMU  := $(TSAN_CXX) $(wordlist 2,100,$(filter-out $(SAN),$(EMU_CXX)))
$(B)/tsan/cudacpu_%.o: $(EMU_DIR)/%.cpp $(EMU_HDRS) | $(B)
	@mkdir -p $(B)/tsan
	$(TSAN_EMU) -O2 -fsanitize=thread -c -o $@ $<
$(B)/tsan/cudacpu_fiber.o $(B)/tsan/cudacpu_tsan.o: $(B)/tsan/cudacpu_%.o: $(EMU_DIR)/%.cpp $(EMU_HDRS) | $(B)
	@mkdir -p $(B)/tsan
	$(TSAN_EMU) -O2 -D__SANITIZE_THREAD__ -c -o $@ $<
$(B)/tsan/%.o: %.cu $(HDR) $(EMU_HDRS) $(EMU_DIR)/child.h | $(B)
	@mkdir -p $(dir $@)
	$(TSAN_CXX) $(wordlist 2,100,$(filter-out $(SAN),$(EMU_CU))) -fsanitize=thread -DCUDACPU_TSAN_HARNESS -c -o $@ $<
$(B)/tsan/cudacpu_selftest: $(B)/tsan/tests/cudacpu/selftest.o $(TSAN_RT)
	$(TSAN_CXX) -fsanitize=thread $(TSAN_WRAP) -o $@ $^ $(LDLIBS) -ldl
$(B)/tsan/test_gpu_emu: $(B)/tsan/tests/test_gpu.o $(B)/tsan/widedeep_cuda.o $(TSAN_RT)
	$(TSAN_CXX) -fsanitize=thread $(TSAN_WRAP) -o $@ $^ $(LDLIBS) -ldl
test-gpu-emu-tsan: $(B)/tsan/cudacpu_selftest $(B)/tsan/test_gpu_emu
	CUDACPU_SCHED=fifo $(B)/tsan/cudacpu_selftest missing_barrier_tsan
	mkdir -p $(B)/tsan/run && CUDACPU_SCHED=fifo CUDACPU_WORKERS=2 CUDACPU_SMS=4 WD_GPU_TEST_QUICK=1 \
	    WD_GPU_TESTS=$(TSAN_GPU_TESTS) $(B)/tsan/test_gpu_emu $(B)/tsan/run

# wd-cuda's Criteo AUC on the emulated device at the CLI's defaults (1024,512,256 MLP; make test: 64,32)
test-gpu-emu-criteo: $(B)/wd-cuda-emu
	bash tests/emu_criteo.sh $(B) $(DATA) $(B)/emu-criteo

$(B)/test_cpp: tests/test_cpp.cpp tests/testlib.h $(HDR) $(ENGINE) | $(B)
	$(CXX) -std=c++17 -O1 -g $(SAN) $(WARN) $(GEMMF) -o $@ tests/test_cpp.cpp $(LDLIBS) $(GEMML)

# the ONNX Runtime check's input writer (tests/ecosystem.sh)
$(B)/onnx_feed: tests/onnx_feed.c $(B)/impl_san_portable.o | $(B)
	$(CC) -std=c11 -O1 -g $(SAN) $(WARN) -o $@ tests/onnx_feed.c $(B)/impl_san_portable.o $(LDLIBS)

# the Python package's extension (python/) against this header, for tests/test_python.py
# (`pip install ./python` builds the same file; the tests import this one)
# (empty without python3 or its headers: tests/run.sh then skips the Python tests)
PY_INC := $(shell python3 -c 'import os, sysconfig; p = sysconfig.get_paths()["include"]; \
                               print(p if os.path.exists(p + "/Python.h") else "")' 2>/dev/null)
$(B)/python/widedeep/_wd.so: python/src/_wd.c $(wildcard python/src/widedeep/*.py) $(HDR) | $(B)
	@mkdir -p $(B)/python/widedeep
	cp python/src/widedeep/*.py $(B)/python/widedeep/
	$(CC) -std=c11 $(CFLAGS) -fPIC -shared $(WARN) -I. -I$(PY_INC) -o $@ python/src/_wd.c $(LDLIBS)
# `make test-python-asan`: tests/test_python.py against the extension built with ASan + UBSan (no
# recovery), python3 run with libasan preloaded and PYTHONMALLOC=malloc (every object through ASan's
# allocator); leaks are not checked (CPython keeps its own to the end). Passes on "N passed, 0 failed,
# 0 skipped" only.
PY_ASAN := LD_PRELOAD=$(shell $(CC) -print-file-name=libasan.so) PYTHONMALLOC=malloc \
           ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
$(B)/python-asan/widedeep/_wd.so: python/src/_wd.c $(wildcard python/src/widedeep/*.py) $(HDR) | $(B)
	@mkdir -p $(B)/python-asan/widedeep
	cp python/src/widedeep/*.py $(B)/python-asan/widedeep/
	$(CC) -std=c11 -O1 -g $(SAN) -fno-sanitize-recover=all -fPIC -shared $(WARN) -I. -I$(PY_INC) -o $@ \
	    python/src/_wd.c $(LDLIBS)
test-python-asan: $(B)/wd $(B)/python-asan/widedeep/_wd.so
	@rm -rf $(B)/python-asan-tmp; mkdir -p $(B)/python-asan-tmp
	$(PY_ASAN) python3 tests/test_python.py $(B)/wd $(B)/python-asan $(B)/python-asan-tmp ../shared/data \
	    | tee $(B)/python-asan-tmp/log
	@grep -Eq '^# python: [1-9][0-9]* passed, 0 failed, 0 skipped$$' $(B)/python-asan-tmp/log

# examples (built and run by the tests)
$(B)/train_criteo: examples/train_criteo.c $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -o $@ examples/train_criteo.c $(LDLIBS) $(GEMML)
$(B)/predict_cpp: examples/predict.cpp $(HDR) $(ENGINE) | $(B)
	$(CXX) -std=c++17 $(CFLAGS) $(WARN) $(GEMMF) -o $@ examples/predict.cpp $(LDLIBS) $(GEMML)

# the README's "Using the header" blocks as a program that runs serve() on a model
$(B)/readme_api.c: README.md | $(B)
	awk '/^## Using the header/{s=1;next} /^## /{s=0} s&&/^```c$$/{c=1;next} c&&/^```$$/{c=0} c' README.md > $@
$(B)/readme_serve: tests/readme_main.c $(B)/readme_api.c $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -I. -I$(B) -o $@ tests/readme_main.c $(LDLIBS) $(GEMML)
# the serving benchmark (bench/predict_bench.sh runs it beside PyTorch)
$(B)/predict_bench: bench/predict_bench.c $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -o $@ bench/predict_bench.c $(LDLIBS) $(GEMML)
# a service's model: its memory, latency beside training (bench/serve_bench.sh)
$(B)/serve_bench: bench/serve_bench.c $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -o $@ bench/serve_bench.c $(LDLIBS) $(GEMML)
$(B)/vocab_online: bench/vocab_online.c $(HDR) $(ENGINE) | $(B)
	$(CC) -std=c11 $(CFLAGS) $(WARN) $(GEMMF) -o $@ bench/vocab_online.c $(LDLIBS) $(GEMML)

demo: deps
	@$(MAKE) --no-print-directory $(B)/wd
	bash tools/demo.sh $(B)/wd $(B)/demo

# the fuzz harnesses join the test build when clang has libFuzzer
HAVE_FUZZER := $(shell printf 'int LLVMFuzzerTestOneInput(const char*d,long n){(void)d;(void)n;return 0;}' | clang -x c -fsanitize=fuzzer - -o /dev/null >/dev/null 2>&1 && echo 1)
TEST_FUZZ := $(if $(HAVE_FUZZER),$(addprefix $(B)/fuzz_,$(FUZZERS)))

# Everything `make test` runs. -k: a binary that does not build (or whose
# source does not exist yet) still lets every other test run; tests/run.sh then
# reports it by name (missing binary) and, through WD_BUILD_RC, the build failure.
TEST_BINS := $(TEST_FUZZ) $(addprefix $(B)/replay_,$(FUZZERS)) $(CUDA_BINS) $(MPI_BINS) $(B)/wd $(addprefix $(B)/,$(TESTS) $(PORTABLE_TESTS)) \
	$(B)/test_cpp $(B)/test_gpu_on_cpu $(EMU_BINS) $(B)/test_loader_tsan $(B)/test_train_tsan $(B)/test_stream_tsan $(B)/test_online_tsan $(B)/test_engine_tsan $(B)/test_contract_tsan $(B)/test_service_tsan $(B)/test_arrow_tsan $(B)/train_criteo $(B)/predict_cpp $(B)/readme_serve $(B)/onnx_feed \
	$(if $(PY_INC),$(B)/python/widedeep/_wd.so)
# the test binaries build on every core (JOBS=1: one at a time)
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
test: deps
	@$(MAKE) --no-print-directory -k -j$(JOBS) $(TEST_BINS); WD_BUILD_RC=$$? bash tests/run.sh $(B) $(DATA)

# libFuzzer harnesses (clang): `make fuzz FUZZ_SECONDS=N` runs each for N seconds
# from the seeds in tests/fuzz/corpus/<name> (written by tests/fuzz/make_seeds.c)
# and the regression inputs in tests/fuzz/regress/<name>; a crash input lands in
# build/fuzz-crashes/ and fails the target. Once fixed, copy it into
# tests/fuzz/regress/<name>/: every `make test` replays those folders through
# build/replay_<name> (the harness built with $(CC), ASan + UBSan and
# tests/fuzz/replay_main.c), with or without libFuzzer.
FUZZ_SECONDS ?= 10
FUZZ_CC := clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined $(WARN)
# Every harness and the implementation are compiled once (tests/fuzz/fuzz_all.c:
# build/fuzz_all.o with libFuzzer's flags, build/replay_all.o with the replay's);
# tests/fuzz/fuzz_one.c makes harness <name> the entry point of each binary.
REPLAY_CC := $(CC) -std=c11 -O1 -g $(SAN) -fno-sanitize-recover=all $(WARN)
FUZZ_SRC  := tests/fuzz/fuzz_all.c $(addprefix tests/fuzz/fuzz_,$(addsuffix .c,$(FUZZERS))) tests/fuzz/fuzz_common.h $(HDR) $(ENGINE)
$(B)/fuzz_all.o: $(FUZZ_SRC) | $(B)
	$(FUZZ_CC) $(GEMMF) -c -o $@ $<
$(B)/replay_all.o: $(FUZZ_SRC) | $(B)
	$(REPLAY_CC) $(GEMMF) -c -o $@ $<
$(addprefix $(B)/fuzz_,$(FUZZERS)): $(B)/fuzz_%: tests/fuzz/fuzz_one.c $(B)/fuzz_all.o
	$(FUZZ_CC) -DFUZZ_HARNESS=fuzz_$*_one -o $@ $< $(B)/fuzz_all.o $(LDLIBS) $(GEMML)
$(addprefix $(B)/replay_,$(FUZZERS)): $(B)/replay_%: tests/fuzz/fuzz_one.c tests/fuzz/replay_main.c $(B)/replay_all.o
	$(REPLAY_CC) -DFUZZ_HARNESS=fuzz_$*_one -o $@ $< tests/fuzz/replay_main.c $(B)/replay_all.o $(LDLIBS) $(GEMML)
$(B)/make_seeds: tests/fuzz/make_seeds.c $(HDR) | $(B)
	$(CC) -std=c11 -O1 -g $(WARN) -o $@ $< $(LDLIBS)
fuzz: deps $(addprefix $(B)/fuzz_,$(FUZZERS))
	@mkdir -p $(B)/fuzz $(B)/fuzz-crashes
	@for f in $(FUZZERS); do \
	    mkdir -p $(B)/fuzz/corpus-$$f; \
	    $(B)/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=25 -artifact_prefix=$(B)/fuzz-crashes/$$f- -print_final_stats=1 \
	        $(B)/fuzz/corpus-$$f tests/fuzz/corpus/$$f tests/fuzz/regress/$$f > $(B)/fuzz/$$f.log 2>&1; rc=$$?; \
	    echo "fuzz_$$f: $$(grep -E '^#[0-9]+[[:space:]]+DONE' $(B)/fuzz/$$f.log | sed -E 's/[[:space:]]+rss.*//') (exit $$rc)"; \
	    if [ $$rc != 0 ]; then grep -E 'ERROR|SUMMARY' $(B)/fuzz/$$f.log | head -5; \
	        for a in $$(sed -n 's/.*Test unit written to \(.*\)$$/\1/p' $(B)/fuzz/$$f.log); do \
	            echo "input saved as $$a: reproduce with $(B)/replay_$$f $$a; once fixed, cp $$a tests/fuzz/regress/$$f/ (make test replays it)"; done; \
	        exit 1; fi; \
	done

clean:
	rm -rf $(B)

# ---- install ------------------------------------------------------------------
# `make install [PREFIX=/usr/local] [DESTDIR=stage]`: the header, the wd tool,
# pkg-config files (widedeep, widedeep-cuda) and a CMake package
# (find_package(widedeep): widedeep::widedeep, widedeep::cuda). The GEMM
# engine of this build goes into widedeep.pc's Cflags/Libs and the CMake
# package's default. Where nvcc exists, the CUDA backend is installed as a
# static library, lib/libwidedeep_cuda.a: its object calls back into the
# implementation that the program compiles itself (wd_alloc, wd_plan_find, ...),
# which an archive resolves at the program's link, and it matches the header
# installed beside it. `make uninstall` removes what install wrote;
# `make test-consumer` builds and runs tests/consumer each way (tests/consumer.sh).
PREFIX  ?= /usr/local
INSTALL ?= install
VERSION := $(shell sed -n 's/^#define WD_VERSION_STRING "\(.*\)"/\1/p' $(HDR))
PKGDIR   = $(DESTDIR)$(PREFIX)/lib/pkgconfig
CMAKEDIR = $(DESTDIR)$(PREFIX)/lib/cmake/widedeep
SUBST    = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@GEMM@|$(GEMM)|g' \
	-e 's|@GEMM_CFLAGS@|$(GEMMF)|g' -e 's|@GEMM_LIBS@|$(GEMML)|g' -e 's|@LIBS@|$(LDLIBS)|g' \
	-e 's|@CUDA_LIBS@|$(CUDALIBS)|g' -e 's|@CUDA_ROOTS@|"$(CUDA_HOME)" "$(NCCL_HOME)"|g'
INSTALLED := include/widedeep.h share/widedeep/widedeep_cuda.cu bin/wd bin/wd-cuda lib/libwidedeep_cuda.a \
	lib/pkgconfig/widedeep.pc lib/pkgconfig/widedeep-cuda.pc lib/cmake/widedeep/widedeepConfig.cmake \
	lib/cmake/widedeep/widedeepConfigVersion.cmake lib/cmake/widedeep/widedeepDeps.cmake
.PHONY: install uninstall test-consumer

$(B)/libwidedeep_cuda.a: $(B)/widedeep_cuda.o
	rm -f $@ && ar rcs $@ $<

install: $(B)/wd $(if $(NVCC),$(B)/libwidedeep_cuda.a $(B)/wd-cuda)
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/widedeep $(PKGDIR) $(CMAKEDIR)
	$(INSTALL) -m 644 $(HDR) $(DESTDIR)$(PREFIX)/include/
	$(INSTALL) -m 644 widedeep_cuda.cu $(DESTDIR)$(PREFIX)/share/widedeep/
	$(INSTALL) -m 755 $(B)/wd $(DESTDIR)$(PREFIX)/bin/
	@echo 'writing widedeep.pc and the CMake package (widedeepConfig.cmake) for PREFIX=$(PREFIX), GEMM=$(GEMM)'
	@$(SUBST) cmake/widedeep.pc.in > $(PKGDIR)/widedeep.pc
	@$(SUBST) cmake/widedeepConfig.cmake.in > $(CMAKEDIR)/widedeepConfig.cmake
	@$(SUBST) cmake/widedeepConfigVersion.cmake.in > $(CMAKEDIR)/widedeepConfigVersion.cmake
	$(INSTALL) -m 644 cmake/widedeepDeps.cmake $(CMAKEDIR)/
ifneq ($(NVCC),)
	$(INSTALL) -m 644 $(B)/libwidedeep_cuda.a $(DESTDIR)$(PREFIX)/lib/
	$(INSTALL) -m 755 $(B)/wd-cuda $(DESTDIR)$(PREFIX)/bin/
	@$(SUBST) cmake/widedeep-cuda.pc.in > $(PKGDIR)/widedeep-cuda.pc
else
	rm -f $(DESTDIR)$(PREFIX)/lib/libwidedeep_cuda.a $(DESTDIR)$(PREFIX)/bin/wd-cuda $(PKGDIR)/widedeep-cuda.pc
endif

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALLED))
	rmdir $(DESTDIR)$(PREFIX)/lib/cmake/widedeep $(DESTDIR)$(PREFIX)/share/widedeep 2>/dev/null || true

test-consumer: $(B)/wd $(if $(NVCC),$(B)/libwidedeep_cuda.a $(B)/wd-cuda)
	bash tests/consumer.sh $(B) $(B)/consumer
