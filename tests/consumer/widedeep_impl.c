/* The one translation unit of the program that compiles widedeep.h's
   implementation: the package's targets (widedeep::widedeep, widedeep.pc)
   give the include directory, the GEMM engine's definitions and the
   libraries, never WIDEDEEP_IMPLEMENTATION. Every other file includes
   widedeep.h for the declarations only (main.c). */
#define WIDEDEEP_IMPLEMENTATION
#include "widedeep.h"
