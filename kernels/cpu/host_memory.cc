#include "kernels/cpu/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
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

// Memory that `release(data, size)` gives back when the buffer goes.
class HostBuffer final : public DeviceBuffer {
 public:
  using Release = void (*)(void* data, size_t size);
  HostBuffer(void* data, size_t size, Release release)
      : data_(data), size_(size), release_(release) {}
  ~HostBuffer() override { release_(data_, size_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
  Release release_;
};

void Unmap(void* data, size_t size) { ::munmap(data, size); }
void Free(void* data, size_t) { std::free(data); }

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
  return std::make_unique<HostBuffer>(data, size, Unmap);
}

// Faults the pages of [data, data + size) in on the pool's threads, a stretch of huge pages a
// call: MADV_POPULATE_WRITE (Linux 5.14) takes no fault a page, which a virtual machine makes
// costly, and reports ENOMEM where the kernel has no pages to give; where the advice is refused
// otherwise (an older kernel, a sandbox), a write to every page.
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
  if (error == 0) return absl::OkStatus();
  if (error == ENOMEM) return OutOfMemory(size, error);
  pool.ParallelFor(stretches, [&](int64_t begin, int64_t end) {
    const auto [first, last] = range(begin, end);
    for (size_t at = first; at < last; at += PageSize()) static_cast<volatile char*>(data)[at] = 0;
  });
  return absl::OkStatus();
}

// The lowest limit in the files named `file` of `dir` and its ancestors up to `top`: a number of
// bytes, or "max" (v2) or a value near 2^63 (v1) for none.
std::optional<size_t> LowestLimitUpTo(const std::filesystem::path& top, std::filesystem::path dir,
                                      const char* file) {
  std::optional<size_t> lowest;
  for (;;) {
    std::ifstream in(dir / file);
    unsigned long long limit = 0;
    if (in >> limit && limit < (1ull << 62)) {
      lowest = std::min<size_t>(lowest.value_or(limit), limit);
    }
    if (dir == top || !dir.has_relative_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return lowest;
}

}  // namespace

std::optional<size_t> CgroupMemoryLimit(const std::filesystem::path& root,
                                        std::string_view proc_self_cgroup) {
  std::optional<size_t> lowest;
  const auto lower = [&](std::optional<size_t> limit) {
    if (limit) lowest = std::min<size_t>(lowest.value_or(*limit), *limit);
  };
  // Each line is "hierarchy-id:controllers:path"; v2's has id 0 and no controllers.
  for (std::string_view rest = proc_self_cgroup; !rest.empty();) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    while (!path.empty() && path.front() == '/') path.erase(0, 1);
    if (path.find("..") != std::string::npos) continue;  // stays under `root`
    if (line.substr(0, first) == "0" && controllers.empty()) {
      for (const std::filesystem::path& top : {root, root / "unified"}) {
        lower(LowestLimitUpTo(top, top / path, "memory.max"));
      }
    } else if (controllers == "memory" || controllers.find("memory,") == 0 ||
               controllers.find(",memory") != std::string_view::npos) {
      const std::filesystem::path top = root / "memory";
      lower(LowestLimitUpTo(top, top / path, "memory.limit_in_bytes"));
    }
  }
  return lowest;
}

size_t UsableHostMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  size_t usable =
      pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size) : 0;
  std::ifstream cgroup_file("/proc/self/cgroup");
  const std::string cgroups((std::istreambuf_iterator<char>(cgroup_file)),
                            std::istreambuf_iterator<char>());
  if (const auto limit = CgroupMemoryLimit("/sys/fs/cgroup", cgroups)) {
    usable = usable == 0 ? *limit : std::min(usable, *limit);
  }
  return usable;
}

std::optional<AnonymousMemory> ParseSmapsRollup(std::string_view text) {
  std::optional<size_t> anonymous, huge;
  for (std::string_view rest = text; !rest.empty();) {
    const size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    std::optional<size_t>* field = key == "Anonymous"       ? &anonymous
                                   : key == "AnonHugePages" ? &huge
                                                            : nullptr;
    if (field == nullptr) continue;
    if (field->has_value()) return std::nullopt;
    // "<spaces><digits> kB"
    std::string_view value = line.substr(colon + 1);
    value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
    uint64_t kib = 0;
    const auto [after, error] = std::from_chars(value.data(), value.data() + value.size(), kib);
    if (error != std::errc() || std::string_view(after, value.data() + value.size()) != " kB" ||
        kib > std::numeric_limits<size_t>::max() / 1024) {
      return std::nullopt;
    }
    *field = static_cast<size_t>(kib) * 1024;
  }
  if (!anonymous || !huge) return std::nullopt;
  return AnonymousMemory{.bytes = *anonymous, .huge_page_bytes = *huge};
}

std::optional<AnonymousMemory> ProcessAnonymousMemory() {
  std::ifstream file("/proc/self/smaps_rollup");
  if (!file) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return ParseSmapsRollup(text);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateResident(size_t bytes, ThreadPool& pool) {
  if (bytes > std::numeric_limits<size_t>::max() / 2) return OutOfMemory(bytes, ENOMEM);
  if (bytes < kHugePage) {
    const size_t rounded = RoundUp(std::max<size_t>(bytes, 1), kAlignment);
    void* data = std::aligned_alloc(kAlignment, rounded);
    if (data == nullptr) return OutOfMemory(bytes, ENOMEM);
    std::memset(data, 0, rounded);
    return std::make_unique<HostBuffer>(data, rounded, Free);
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
