// Fuzzes the bundled model's tokenizer on arbitrary text (Encode, then Decode back, which must
// give the text again when it is valid UTF-8) and on arbitrary ids (Decode and the streaming
// IncrementalDecoder, whose output must equal Decode's).
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "text/incremental_decoder.h"
#include "text/internal/utf8.h"
#include "text/tokenizer.h"

namespace {

bool IsValidUtf8(std::string_view text) {
  std::string lossy;
  kvd::text::internal::AppendLossyUtf8(text, &lossy);
  return lossy == text;
}

// Ids from the input's bytes, two per id (little-endian), so most land near the vocabulary.
std::vector<int32_t> IdsOf(std::string_view bytes) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    int16_t id;
    std::memcpy(&id, bytes.data() + i, sizeof(id));
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvd::text::Tokenizer& tokenizer = *kvd::fuzz::Bundled().tokenizer;
  const std::string_view text = kvd::fuzz::AsText(data, size);

  const std::vector<int32_t> encoded = tokenizer.Encode(text, /*add_special_tokens=*/false);
  auto decoded = tokenizer.Decode(encoded);
  kvd::fuzz::Require(decoded.ok(), "Decode refused ids from Encode");
  if (IsValidUtf8(text)) kvd::fuzz::Require(*decoded == text, "Decode(Encode(text)) != text");
  (void)tokenizer.Encode(text, /*add_special_tokens=*/true);

  const std::vector<int32_t> ids = IdsOf(text);
  for (bool skip_special : {false, true}) {
    auto whole = tokenizer.Decode(ids, skip_special);
    kvd::text::IncrementalDecoder stream(tokenizer, skip_special);
    std::string streamed;
    std::vector<int32_t> valid;
    for (int32_t id : ids) {
      auto piece = stream.Push(id);
      if (!piece.ok()) continue;
      streamed += *piece;
      valid.push_back(id);
    }
    streamed += stream.Flush();
    auto valid_whole = tokenizer.Decode(valid, skip_special);
    kvd::fuzz::Require(valid_whole.ok(), "Decode refused ids IncrementalDecoder took");
    kvd::fuzz::Require(streamed == *valid_whole, "IncrementalDecoder output != Decode");
    kvd::fuzz::Require(whole.ok() == (valid.size() == ids.size()),
                       "Decode and IncrementalDecoder disagree on which ids are valid");
  }
  return 0;
}
