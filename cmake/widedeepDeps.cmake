# What widedeep.h and widedeep_cuda.cu link against, found the same way for
# the top-level CMakeLists.txt (add_subdirectory, FetchContent) and for the
# widedeepConfig.cmake that `make install` writes (find_package).
include_guard(GLOBAL)

# widedeep_find_deps(ENGINE): zstd, zlib, pthread, libm and the GEMM engine of the
# MLP (widedeep.h, "GEMM ENGINE"). ENGINE is auto (oneDNN, else OpenBLAS,
# else the portable loops; the Makefile's order), onednn, openblas or
# portable. Sets in the caller's scope:
#   WIDEDEEP_GEMM_ENGINE      the engine chosen
#   WIDEDEEP_DEFINITIONS      its compile definitions (WD_USE_ONEDNN, ...)
#   WIDEDEEP_INCLUDE_DIRS     its include directories
#   WIDEDEEP_LIBRARIES        everything to link: zstd, z, pthread, m, the engine's
#   WIDEDEEP_DEPS_ERROR       what is missing ("" when everything was found)
function(widedeep_find_deps engine)
  set(err "")
  set(defs "")
  set(incs "")
  set(libs "")
  find_path(WIDEDEEP_ZSTD_INCLUDE_DIR zstd.h)
  find_library(WIDEDEEP_ZSTD_LIBRARY zstd)
  find_path(WIDEDEEP_ZLIB_INCLUDE_DIR zlib.h)
  find_library(WIDEDEEP_ZLIB_LIBRARY z)
  if(NOT WIDEDEEP_ZSTD_INCLUDE_DIR OR NOT WIDEDEEP_ZSTD_LIBRARY)
    set(err "zstd (zstd.h and libzstd: Debian's libzstd-dev) not found")
  elseif(NOT WIDEDEEP_ZLIB_INCLUDE_DIR OR NOT WIDEDEEP_ZLIB_LIBRARY)
    set(err "zlib (zlib.h and libz: Debian's zlib1g-dev) not found")
  endif()

  if(engine STREQUAL "auto" OR engine STREQUAL "onednn")
    find_path(WIDEDEEP_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
    find_library(WIDEDEEP_DNNL_LIBRARY dnnl)
    if(WIDEDEEP_DNNL_INCLUDE_DIR AND WIDEDEEP_DNNL_LIBRARY)
      set(engine onednn)
      set(defs WD_USE_ONEDNN)
      set(incs "${WIDEDEEP_DNNL_INCLUDE_DIR}")
      # gomp: widedeep.h calls omp_set_num_threads (libdnnl's OpenMP runtime)
      set(libs "${WIDEDEEP_DNNL_LIBRARY}" gomp)
    elseif(engine STREQUAL "onednn")
      set(err "oneDNN (oneapi/dnnl/dnnl.h and libdnnl: Debian's libdnnl-dev) not found")
    endif()
  endif()
  if(engine STREQUAL "auto" OR engine STREQUAL "openblas")
    # Debian's serial OpenBLAS first, as the Makefile does
    find_path(WIDEDEEP_CBLAS_INCLUDE_DIR cblas.h
      HINTS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-serial PATH_SUFFIXES openblas)
    find_library(WIDEDEEP_OPENBLAS_LIBRARY openblas
      HINTS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-serial)
    if(WIDEDEEP_CBLAS_INCLUDE_DIR AND WIDEDEEP_OPENBLAS_LIBRARY)
      set(engine openblas)
      set(defs WD_USE_CBLAS WD_USE_OPENBLAS)
      set(incs "${WIDEDEEP_CBLAS_INCLUDE_DIR}")
      set(libs "${WIDEDEEP_OPENBLAS_LIBRARY}")
    elseif(engine STREQUAL "openblas")
      set(err "OpenBLAS (cblas.h and libopenblas: Debian's libopenblas-dev) not found")
    endif()
  endif()
  if(engine STREQUAL "auto")
    set(engine portable)
  elseif(NOT engine MATCHES "^(onednn|openblas|portable)$")
    set(err "WIDEDEEP_GEMM=${engine}: choose auto, onednn, openblas or portable")
  endif()

  set(WIDEDEEP_GEMM_ENGINE "${engine}" PARENT_SCOPE)
  set(WIDEDEEP_DEFINITIONS "${defs}" PARENT_SCOPE)
  set(WIDEDEEP_INCLUDE_DIRS "${incs}" PARENT_SCOPE)
  set(WIDEDEEP_LIBRARIES "${WIDEDEEP_ZSTD_LIBRARY};${WIDEDEEP_ZLIB_LIBRARY};pthread;m;${libs}" PARENT_SCOPE)
  set(WIDEDEEP_DEPS_ERROR "${err}" PARENT_SCOPE)
endfunction()

# widedeep_find_cuda_libs(ROOT...): the libraries widedeep_cuda.cu links
# (cuBLASLt, the shared CUDA runtime; NCCL is loaded at run time with dlopen,
# only nccl.h is needed here), searched first under each ROOT (a CUDA toolkit
# or NCCL install: ROOT/lib64, ROOT/lib), then in $CUDA_HOME, $NCCL_HOME and
# the system paths. Sets in the caller's scope WIDEDEEP_CUDA_LIBRARIES (with
# the C++ runtime and libdl the object needs), WIDEDEEP_NCCL_INCLUDE_DIR and
# WIDEDEEP_CUDA_ERROR ("" when all were found).
function(widedeep_find_cuda_libs)
  set(hints "")
  foreach(root IN LISTS ARGN ITEMS "$ENV{CUDA_HOME}" "$ENV{NCCL_HOME}")
    if(root)
      list(APPEND hints "${root}/lib64" "${root}/lib")
    endif()
  endforeach()
  set(libs "")
  set(missing "")
  foreach(name IN ITEMS cublasLt cudart)
    find_library(WIDEDEEP_${name}_LIBRARY ${name} HINTS ${hints})
    if(WIDEDEEP_${name}_LIBRARY)
      list(APPEND libs "${WIDEDEEP_${name}_LIBRARY}")
    else()
      list(APPEND missing lib${name})
    endif()
  endforeach()
  set(inc_hints "")
  foreach(root IN LISTS ARGN ITEMS "$ENV{CUDA_HOME}" "$ENV{NCCL_HOME}")
    if(root)
      list(APPEND inc_hints "${root}/include")
    endif()
  endforeach()
  find_path(WIDEDEEP_NCCL_INCLUDE_DIR nccl.h HINTS ${inc_hints})
  if(NOT WIDEDEEP_NCCL_INCLUDE_DIR)
    list(APPEND missing nccl.h)
  endif()
  set(err "")
  if(missing)
    string(REPLACE ";" ", " missing "${missing}")
    set(err "${missing} not found (set CUDA_HOME / NCCL_HOME, or CMAKE_PREFIX_PATH)")
  endif()
  list(APPEND libs stdc++ ${CMAKE_DL_LIBS})
  set(WIDEDEEP_CUDA_LIBRARIES "${libs}" PARENT_SCOPE)
  set(WIDEDEEP_NCCL_INCLUDE_DIR "${WIDEDEEP_NCCL_INCLUDE_DIR}" PARENT_SCOPE)
  set(WIDEDEEP_CUDA_ERROR "${err}" PARENT_SCOPE)
endfunction()
