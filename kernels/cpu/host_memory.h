// Memory of the CPU backend: buffers resident from the start, every page faulted in when they
// are allocated, so that no step later pays for a first touch (a page fault in a virtual machine
// costs microseconds), and backed by transparent huge pages where the kernel grants them (one
// fault and one TLB entry per 2 MiB instead of per 4 KiB).
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/cpu/thread_pool.h"

namespace kvd::kernels::cpu {

// A zero-filled, resident buffer of at least `bytes` (64-byte aligned; from 2 MiB on, aligned
// to 2 MiB and advised into huge pages), its pages faulted in on `pool`'s threads.
// ResourceExhausted where the kernel cannot provide the pages now.
[[nodiscard]] absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateResident(size_t bytes,
                                                                             ThreadPool& pool);

}  // namespace kvd::kernels::cpu
