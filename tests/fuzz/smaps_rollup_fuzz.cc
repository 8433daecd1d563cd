// Fuzzes kernels::cpu::ParseSmapsRollup on any /proc/self/smaps_rollup text: what it reads is in
// whole kB, comes from the text's Anonymous and AnonHugePages lines, and written back as those
// two lines parses back to itself.
#include <string>

#include "fuzz_support.h"
#include "kernels/cpu/host_memory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(kvd::fuzz::AsText(data, size));
  const auto parsed = kvd::kernels::cpu::ParseSmapsRollup(text);
  if (!parsed) return 0;
  kvd::fuzz::Require(parsed->bytes % 1024 == 0 && parsed->huge_page_bytes % 1024 == 0,
                     "a size that is not whole kB");
  kvd::fuzz::Require(text.find("Anonymous:") != std::string::npos &&
                         text.find("AnonHugePages:") != std::string::npos,
                     "a size from a line the text does not hold");
  const auto again = kvd::kernels::cpu::ParseSmapsRollup(
      "Anonymous: " + std::to_string(parsed->bytes / 1024) +
      " kB\nAnonHugePages: " + std::to_string(parsed->huge_page_bytes / 1024) + " kB\n");
  kvd::fuzz::Require(
      again && again->bytes == parsed->bytes && again->huge_page_bytes == parsed->huge_page_bytes,
      "sizes written back do not parse back to themselves");
  return 0;
}
