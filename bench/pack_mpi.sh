#!/usr/bin/env bash
# The Open MPI that the GPU pack's wd-mpi-cuda needs, carried beside it
# (`make gpu-pack` runs this): the GPU host has no package registry and no
# MPI, so bench/gpu_run.sh phase 4 runs the MPI bootstrap as an Open MPI
# singleton on these files (LD_LIBRARY_PATH=PACK/lib,
# OMPI_MCA_mca_base_component_path=PACK/lib/openmpi,
# OMPI_MCA_ess_singleton_isolated=1: one rank, no daemon, no mpirun).
# Usage: bench/pack_mpi.sh PACK BINARY
#   PACK/lib/          every library BINARY loads under libmpi, as ldd resolves
#                      it here (Debian 12's Open MPI 4.1: libmpi, libopen-rte,
#                      libopen-pal, hwloc, libevent, libudev, zlib), less glibc,
#                      libstdc++, libgcc_s and CUDA's
#   PACK/lib/openmpi/  the Open MPI components (ompi_info's pkglibdir) that
#                      need nothing beyond those: the ones that need UCX,
#                      libfabric, verbs, PSM, PMIx or libnuma are left out
#                      (a singleton on one host uses none of them), and so
#                      are the frameworks of MPI calls wd never makes and of
#                      mpirun's daemons, which a singleton never starts
#                      (UNUSED below: 1.25 MB of 3.4)
# bench/gpu_run.sh --check-elf checks what this leaves (glibc 2.36 or
# older; every NEEDED in glibc or lib/).
set -eu
pack=${1:?usage: pack_mpi.sh PACK BINARY}; bin=${2:?usage: pack_mpi.sh PACK BINARY}
base="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1"
command -v ompi_info > /dev/null || { echo "pack_mpi: ompi_info not found: the pack's MPI is Open MPI's (tools/install-deps.sh installs it)" >&2; exit 1; }
src=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
[ -d "$src" ] || { echo "pack_mpi: no Open MPI components at '$src' (ompi_info --path pkglibdir)" >&2; exit 1; }
lib=$pack/lib
rm -rf "$lib/openmpi"
mkdir -p "$lib/openmpi"
carried=
while read -r name path; do
    case " $base " in *" $name "*) continue;; esac
    case $name in libcublas*|libcudart*|libnccl*|linux-vdso*) continue;; esac
    # a rebuild: ldd finds the copy already here (the binary's RUNPATH has $ORIGIN/lib)
    [ "$path" -ef "$lib/$name" ] || cp -L "$path" "$lib/$name"
    carried="$carried $name"
done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
case " $carried " in *" libmpi.so."*) ;; *) echo "pack_mpi: $bin does not load libmpi" >&2; exit 1;; esac
# wd's MPI calls (widedeep.h section 14, tools/wd.c): init, comm dup/size/rank/free,
# bcast, barrier/ibarrier, allreduce/iallreduce, allgather(v)/iallgather(v), recv,
# test, abort: no MPI-IO (io fs fbtl fcoll sharedfp), no one-sided (osc), no process
# topologies (topo), no message logging (vprotocol) or checkpoints (crs), no
# debugger message queues (libompi_dbg_msgq); and the launcher's own frameworks
# (plm ras rmaps odls: mpirun and orted, which a singleton without a daemon never
# runs). bench/gpu_run.sh --dry trains wd-mpi-cuda as a singleton on what is left.
UNUSED="io fs fbtl fcoll sharedfp osc topo vprotocol crs plm ras rmaps odls"
n=0; left=0; unused=0
for c in "$src"/*.so; do   # first what the host cannot load, then, of the rest, what wd does not use
    ok=1
    for d in $(readelf -d "$c" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        case " $base $carried " in *" $d "*) ;; *) ok=0;; esac
    done
    [ $ok = 1 ] || { left=$((left + 1)); continue; }
    f=$(basename "$c" .so); f=${f#mca_}; f=${f%%_*}
    case " $UNUSED libompi " in *" $f "*) unused=$((unused + 1)); continue;; esac
    cp "$c" "$lib/openmpi/"; n=$((n + 1))
done
echo "pack_mpi: lib/:$carried; lib/openmpi/: $n Open MPI components of $((n + left + unused)) ($left left out: they need libraries the host lacks; of the $((n + unused)) others, $unused of frameworks wd and a singleton do not use); $(du -sh "$lib" | cut -f1)"
