# Builds widedeep._wd from the repository's widedeep.h (one directory up):
# `pip install ./python` from a clone. Needs a C compiler, Python's headers
# and libzstd-dev and zlib1g-dev (`make deps` installs them). The MLP's
# products use the header's portable loops; WIDEDEEP_GEMM=onednn (with
# libdnnl-dev) or openblas builds the engine the Makefile would pick.
import os
from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
if not os.path.exists(os.path.join(root, "widedeep.h")):
    raise SystemExit("widedeep: build from the repository (pip install ./python): widedeep.h is not in %s" % root)
macros, libs = [], ["zstd", "z", "pthread", "m"]
gemm = os.environ.get("WIDEDEEP_GEMM", "")
if gemm == "onednn":
    macros.append(("WD_USE_ONEDNN", "1"))
    libs += ["dnnl", "gomp"]
elif gemm == "openblas":
    macros += [("WD_USE_CBLAS", "1"), ("WD_USE_OPENBLAS", "1")]
    libs.append("openblas")
elif gemm:
    raise SystemExit("WIDEDEEP_GEMM=%s: onednn, openblas or unset (the portable loops)" % gemm)
setup(ext_modules=[Extension("widedeep._wd", sources=["src/_wd.c"], include_dirs=[root], define_macros=macros,
                             libraries=libs,
                             extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
                             depends=[os.path.join(root, "widedeep.h")])])
