#include "kernels/cpu/host_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kvd::kernels::cpu {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// How many of the pages of [data, data + bytes) are in memory now.
size_t ResidentPages(void* data, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> flags((bytes + page - 1) / page);
  EXPECT_EQ(mincore(data, bytes, flags.data()), 0);
  size_t resident = 0;
  for (unsigned char flag : flags) resident += flag & 1;
  return resident;
}

TEST(HostMemoryTest, SmallBuffersAreZeroedAndAligned) {
  ThreadPool pool(2);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, kHugePage - 1}) {
    auto buffer = AllocateResident(bytes, pool);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    ASSERT_GE((*buffer)->size(), std::max<size_t>(bytes, 1));
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % 64, 0u);
    const auto* bytes_in = static_cast<const unsigned char*>((*buffer)->data());
    for (size_t i = 0; i < (*buffer)->size(); ++i) ASSERT_EQ(bytes_in[i], 0) << bytes << " " << i;
  }
}

TEST(HostMemoryTest, LargeBuffersStartOnAHugePageAndAreResidentAndZero) {
  ThreadPool pool(2);
  const size_t bytes = 3 * kHugePage + 12345;  // a tail that is not a whole huge page
  auto buffer = AllocateResident(bytes, pool);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  void* data = (*buffer)->data();
  const size_t size = (*buffer)->size();
  ASSERT_GE(size, bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kHugePage, 0u);
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Every page is in memory before anything writes to it.
  EXPECT_EQ(ResidentPages(data, size), (size + page - 1) / page);
  const auto* words = static_cast<const uint64_t*>(data);
  for (size_t i = 0; i < size / sizeof(uint64_t); ++i) ASSERT_EQ(words[i], 0u) << i;
  // The whole buffer is writable, to its last byte.
  static_cast<unsigned char*>(data)[size - 1] = 1;
}

TEST(HostMemoryTest, ReleasedBuffersAreUnmapped) {
  ThreadPool pool(1);
  void* data = nullptr;
  size_t size = 0;
  {
    auto buffer = AllocateResident(kHugePage, pool);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    data = (*buffer)->data();
    size = (*buffer)->size();
  }
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> flags((size + page - 1) / page);
  EXPECT_EQ(mincore(data, size, flags.data()), -1);  // ENOMEM: nothing is mapped there
}

}  // namespace
}  // namespace kvd::kernels::cpu
