// <immintrin.h> for the vector kernels. GCC 12's AVX-512 intrinsics start from deliberately
// undefined registers, which it then warns about wherever they are inlined (GCC bug 105593,
// fixed in GCC 13): the header comes in with those warnings off, so include it from here, and
// before anything else that includes it.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
