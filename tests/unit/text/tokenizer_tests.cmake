# Tokenizer tests: hand-checked fixtures, conformance with the bundled model's reference cases,
# normalizers and SentencePiece-style vocabularies, streaming decode, and load errors.
kvd_test(text_tokenizer_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_test.cc DEPS kvd::text)
kvd_test(text_incremental_decoder_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/incremental_decoder_test.cc DEPS kvd::text)
kvd_test(text_tokenizer_pipeline_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_pipeline_test.cc DEPS kvd::text)
kvd_test(text_tokenizer_errors_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_errors_test.cc DEPS kvd::text)
