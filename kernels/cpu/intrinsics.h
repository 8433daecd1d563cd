// <immintrin.h> for the vector kernels. GCC 12's AVX-512 intrinsics start from deliberately
// undefined registers, which it then warns about wherever they are inlined (GCC bug 105593,
// fixed in GCC 13): the header comes in here with those warnings off. The guard holds only where
// this is the first include of <immintrin.h>, so include it from here rather than directly.
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
