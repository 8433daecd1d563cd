// Memory of the CPU backend: buffers resident from the start, every page faulted in when they
// are allocated, so that no step later pays for a first touch (a page fault in a virtual machine
// costs microseconds), and backed by transparent huge pages where the kernel grants them (one
// fault and one TLB entry per 2 MiB instead of per 4 KiB).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/cpu/thread_pool.h"

namespace kvd::kernels::cpu {

// A zero-filled, resident buffer of at least `bytes` (64-byte aligned; from 2 MiB on, aligned
// to 2 MiB and advised into huge pages), its pages faulted in on `pool`'s threads, so `pool`
// must be idle (ThreadPool runs one loop at a time). ResourceExhausted where the kernel reports
// it has no pages to give; under a cgroup's memory limit, its OOM killer may act first.
[[nodiscard]] absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateResident(size_t bytes,
                                                                             ThreadPool& pool);

// Anonymous memory resident in this process and the part of it in transparent huge pages.
struct AnonymousMemory {
  size_t bytes = 0;
  size_t huge_page_bytes = 0;
};

// /proc/self/smaps_rollup's `Anonymous:` and `AnonHugePages:` lines (in kB) from its text; nullopt
// where either is missing, given twice, or not a whole number of kB that fits.
std::optional<AnonymousMemory> ParseSmapsRollup(std::string_view text);
// This process's, read now; nullopt where the kernel does not report it (before Linux 4.14).
std::optional<AnonymousMemory> ProcessAnonymousMemory();

// Bytes of memory this process may use: physical RAM, or its cgroup's memory limit where that
// is lower (a container's limit, which physical RAM says nothing about).
size_t UsableHostMemoryBytes();

// The lowest memory limit set on the cgroups that `proc_self_cgroup` (/proc/self/cgroup's text)
// places this process in, and on their ancestors, under the cgroup file system at `root`: v2's
// memory.max (under `root` or, on a hybrid system, `root`/unified) and v1's
// memory/memory.limit_in_bytes. nullopt where none is set.
std::optional<size_t> CgroupMemoryLimit(const std::filesystem::path& root,
                                        std::string_view proc_self_cgroup);

}  // namespace kvd::kernels::cpu
