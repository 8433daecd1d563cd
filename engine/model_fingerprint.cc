#include "engine/model_fingerprint.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvd::engine {
namespace {

constexpr int kSampleWindows = 16;
constexpr int64_t kWindowBytes = 64 << 10;

class Digest {
 public:
  Digest() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr);
  }
  // Length-prefixed, so that no two sequences of parts hash alike.
  void Add(std::string_view bytes) {
    const uint64_t size = bytes.size();
    EVP_DigestUpdate(context_.get(), &size, sizeof(size));
    EVP_DigestUpdate(context_.get(), bytes.data(), bytes.size());
  }
  std::string Hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(context_.get(), digest, &length);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
      hex.push_back(kHex[digest[i] >> 4]);
      hex.push_back(kHex[digest[i] & 0xf]);
    }
    return hex;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context_;
};

absl::StatusOr<std::string> ReadRange(std::ifstream& in, const std::filesystem::path& path,
                                      int64_t offset, int64_t length) {
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  if (!in.read(bytes.data(), length)) {
    return absl::DataLossError(absl::StrCat("cannot read ", path.string(), " at byte ", offset));
  }
  return bytes;
}

absl::Status AddFile(Digest& digest, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  digest.Add(path.filename().string());
  digest.Add(bytes);
  return absl::OkStatus();
}

absl::Status AddSafetensors(Digest& digest, const std::filesystem::path& path) {
  std::error_code error;
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path, error));
  if (error) return absl::NotFoundError(absl::StrCat("cannot stat ", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in || size < 8) return absl::DataLossError(absl::StrCat("cannot read ", path.string()));
  auto length_bytes = ReadRange(in, path, 0, 8);
  if (!length_bytes.ok()) return length_bytes.status();
  uint64_t header_length = 0;
  std::copy(length_bytes->begin(), length_bytes->end(), reinterpret_cast<char*>(&header_length));
  if (header_length > static_cast<uint64_t>(size - 8)) {
    return absl::DataLossError(absl::StrCat(path.string(), " has a header beyond its end"));
  }
  auto header = ReadRange(in, path, 8, static_cast<int64_t>(header_length));
  if (!header.ok()) return header.status();
  digest.Add(path.filename().string());
  digest.Add(std::to_string(size));
  digest.Add(*header);
  const int64_t data_begin = 8 + static_cast<int64_t>(header_length);
  const int64_t data_size = size - data_begin;
  for (int i = 0; i < kSampleWindows && data_size > 0; ++i) {
    const int64_t length = std::min(kWindowBytes, data_size);
    const int64_t offset = data_begin + (data_size - length) * i / (kSampleWindows - 1);
    auto window = ReadRange(in, path, offset, length);
    if (!window.ok()) return window.status();
    digest.Add(*window);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CacheFingerprint> FingerprintModel(const std::filesystem::path& model_dir,
                                                  const std::vector<std::string>& framing_parts) {
  Digest model;
  if (auto status = AddFile(model, model_dir / "config.json"); !status.ok()) return status;
  std::vector<std::filesystem::path> shards;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(model_dir, error)) {
    if (entry.path().extension() == ".safetensors") shards.push_back(entry.path());
  }
  if (error) return absl::NotFoundError(absl::StrCat("cannot list ", model_dir.string()));
  std::sort(shards.begin(), shards.end());
  for (const auto& shard : shards) {
    if (auto status = AddSafetensors(model, shard); !status.ok()) return status;
  }
  Digest text;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    if (std::filesystem::exists(model_dir / name)) {
      if (auto status = AddFile(text, model_dir / name); !status.ok()) return status;
    }
  }
  for (const std::string& part : framing_parts) text.Add(part);
  return CacheFingerprint{model.Hex(), text.Hex()};
}

}  // namespace kvd::engine
