// Included by the files of AVX-512 intrinsics: GCC 12's own 512-bit intrinsics (broadcast,
// insert, extract, shuffle) start from an undefined register and trip -Wuninitialized inside its
// headers. Nothing in those files reads an uninitialized value, so the warning is off for them.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
