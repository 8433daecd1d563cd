# Sources of the tokenizer (BPE from tokenizer.json), part of kvd_text.
set(kvd_text_tokenizer_sources
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer.cc
  ${CMAKE_CURRENT_LIST_DIR}/incremental_decoder.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/added_tokens.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/bpe_model.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/bpe_tokenizer_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/bpe_word_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/byte_level.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/normalizer.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/pipeline_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/pretokenize.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/token_decoder.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/utf8.cc)

# Libraries those sources use, for kvd_library(text ... DEPS).
set(kvd_text_tokenizer_deps
  absl::flat_hash_map absl::inlined_vector absl::function_ref absl::status absl::statusor
  absl::strings absl::str_format nlohmann_json::nlohmann_json PkgConfig::PCRE2 ICU::uc)
