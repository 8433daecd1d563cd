#include "kernels/cpu/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvd::kernels::cpu {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kAlignment = 64;

size_t RoundUp(size_t bytes, size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

size_t PageSize() {
  static const size_t page = static_cast<size_t>(std::max(4096L, sysconf(_SC_PAGESIZE)));
  return page;
}

// Pages of an anonymous mapping, unmapped with the buffer.
class MappedBuffer final : public DeviceBuffer {
 public:
  MappedBuffer(void* data, size_t size) : data_(data), size_(size) {}
  ~MappedBuffer() override { ::munmap(data_, size_); }
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

class HeapBuffer final : public DeviceBuffer {
 public:
  HeapBuffer(void* data, size_t size) : data_(data), size_(size) {}
  ~HeapBuffer() override { std::free(data_); }
  HeapBuffer(const HeapBuffer&) = delete;
  HeapBuffer& operator=(const HeapBuffer&) = delete;
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

absl::Status OutOfMemory(size_t bytes, int error) {
  return absl::ResourceExhaustedError(
      absl::StrCat("cpu: cannot allocate ", bytes, " bytes: ", std::strerror(error)));
}

// `size` bytes (a multiple of the page size) whose start is a multiple of kHugePage: a mapping
// one huge page longer, its unaligned head and its tail unmapped.
absl::StatusOr<std::unique_ptr<DeviceBuffer>> MapAligned(size_t size) {
  const size_t mapped = size + kHugePage;
  void* mapping =
      ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return OutOfMemory(size, errno);
  const auto start = reinterpret_cast<uintptr_t>(mapping);
  const uintptr_t aligned = RoundUp(start, kHugePage);
  if (aligned > start) ::munmap(mapping, aligned - start);
  const uintptr_t end = aligned + size;
  if (start + mapped > end) ::munmap(reinterpret_cast<void*>(end), start + mapped - end);
  auto* data = reinterpret_cast<void*>(aligned);
  // Advice only: without transparent huge pages the mapping keeps small pages.
  ::madvise(data, size, MADV_HUGEPAGE);
  return std::make_unique<MappedBuffer>(data, size);
}

// Faults the pages of [data, data + size) in on the pool's threads, a stretch of huge pages a
// call: MADV_POPULATE_WRITE (Linux 5.14) takes no fault a page, which a virtual machine makes
// costly, and reports ENOMEM where the pages cannot be had; where the kernel lacks it, a write
// to every page.
absl::Status FaultIn(char* data, size_t size, ThreadPool& pool) {
  const auto stretches = static_cast<int64_t>(RoundUp(size, kHugePage) / kHugePage);
  const auto range = [&](int64_t begin, int64_t end) {
    const size_t first = static_cast<size_t>(begin) * kHugePage;
    return std::pair<size_t, size_t>(first, std::min(size, static_cast<size_t>(end) * kHugePage));
  };
  std::atomic<int> advice_error = 0;
  pool.ParallelFor(stretches, [&](int64_t begin, int64_t end) {
    const auto [first, last] = range(begin, end);
    if (::madvise(data + first, last - first, MADV_POPULATE_WRITE) != 0) {
      int none = 0;
      advice_error.compare_exchange_strong(none, errno);
    }
  });
  const int error = advice_error.load();
  if (error == ENOMEM) return OutOfMemory(size, error);
  if (error != 0 && error != EINVAL) {
    return absl::InternalError(
        absl::StrCat("cpu: faulting in ", size, " bytes: ", std::strerror(error)));
  }
  if (error == 0) return absl::OkStatus();
  pool.ParallelFor(stretches, [&](int64_t begin, int64_t end) {
    const auto [first, last] = range(begin, end);
    for (size_t at = first; at < last; at += PageSize()) static_cast<volatile char*>(data)[at] = 0;
  });
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateResident(size_t bytes, ThreadPool& pool) {
  if (bytes < kHugePage) {
    const size_t rounded = RoundUp(std::max<size_t>(bytes, 1), kAlignment);
    void* data = std::aligned_alloc(kAlignment, rounded);
    if (data == nullptr) return OutOfMemory(bytes, ENOMEM);
    std::memset(data, 0, rounded);
    return std::make_unique<HeapBuffer>(data, rounded);
  }
  auto buffer = MapAligned(RoundUp(bytes, PageSize()));
  if (!buffer.ok()) return buffer.status();
  if (absl::Status s = FaultIn(static_cast<char*>((*buffer)->data()), (*buffer)->size(), pool);
      !s.ok()) {
    return s;
  }
  return buffer;
}

}  // namespace kvd::kernels::cpu
