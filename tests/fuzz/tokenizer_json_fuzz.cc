// Fuzzes text::Tokenizer::FromJson (tokenizer.json: model, added tokens, normalizer,
// pre-tokenizer, decoder, post-processor), then encodes and decodes with what it accepts.
#include <vector>

#include "fuzz_support.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tokenizer = kvd::text::Tokenizer::FromJson(kvd::fuzz::AsText(data, size), "tokenizer.json");
  if (!tokenizer.ok()) return 0;
  const kvd::text::Tokenizer& loaded = **tokenizer;
  for (bool add_special : {false, true}) {
    const std::vector<int32_t> ids =
        loaded.Encode("Hello, world! 123 \xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80 <s></s>", add_special);
    for (int32_t id : ids) {
      kvd::fuzz::Require(id >= 0 && id < loaded.vocab_size(), "Encode gave an id past the vocab");
      kvd::fuzz::Require(loaded.TokenBytesView(id).ok(), "Encode gave an id naming no token");
    }
    (void)loaded.Decode(ids, /*skip_special_tokens=*/add_special);
  }
  for (int32_t id = 0; id < loaded.vocab_size() && id < 64; ++id) {
    (void)loaded.FirstTokenBytesView(id);
    (void)loaded.IdToToken(id);
  }
  return 0;
}
