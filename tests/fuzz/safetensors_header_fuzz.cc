// Fuzzes engine::SafetensorsFile::Open on a whole file: the 8-byte header length, the JSON
// header and every tensor's extent, which must then lie inside the file and match its shape.
#include <algorithm>
#include <string>

#include "engine/safetensors.h"
#include "fuzz_support.h"

namespace {

size_t ElementBytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  return 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static kvd::fuzz::MemoryFile file;
  const std::string_view bytes = kvd::fuzz::AsText(data, size);
  auto opened = kvd::engine::SafetensorsFile::Open(file.Write(bytes));
  if (!opened.ok()) return 0;
  // Every tensor accepted must be readable whole, with exactly the bytes its shape and dtype
  // need: none when a dimension is 0, else a product that must not wrap.
  for (const auto& [name, info] : (*opened)->tensors()) {
    const bool empty = std::find(info.shape.begin(), info.shape.end(), 0) != info.shape.end();
    uint64_t needed = empty ? 0 : ElementBytes(info.dtype);
    for (int64_t dim : info.shape) {
      kvd::fuzz::Require(dim >= 0, "negative dimension accepted");
      kvd::fuzz::Require(!__builtin_mul_overflow(needed, static_cast<uint64_t>(dim), &needed),
                         "shape whose byte count overflows accepted");
    }
    kvd::fuzz::Require(needed == info.num_bytes, "tensor bytes differ from its shape");
    if (info.num_bytes > 0) {
      const auto* bytes_of = static_cast<const volatile uint8_t*>(info.data);
      (void)bytes_of[0];
      (void)bytes_of[info.num_bytes - 1];
    }
  }
  return 0;
}
