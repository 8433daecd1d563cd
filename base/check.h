// Invariant checks, for every layer above kernels/ too: KVD_CHECK aborts with the condition and
// its place when it fails, in every build; KVD_DCHECK only in debug builds. Never for what a
// client or a file sent: that is a Status.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace kvd {

[[noreturn]] inline void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, condition);
  std::abort();
}

}  // namespace kvd

#define KVD_CHECK(condition) \
  ((condition) ? static_cast<void>(0) : ::kvd::CheckFailed(#condition, __FILE__, __LINE__))

#ifdef NDEBUG
#define KVD_DCHECK(condition) static_cast<void>(0)
#else
#define KVD_DCHECK(condition) KVD_CHECK(condition)
#endif
