# Tokenizer tests: hand-checked fixtures, conformance with the bundled model's reference cases,
# normalizers and SentencePiece-style vocabularies, streaming decode, and load errors.
kvd_test(engine_tokenizer_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_test.cc DEPS kvd::engine)
kvd_test(engine_incremental_decoder_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/incremental_decoder_test.cc DEPS kvd::engine)
kvd_test(engine_tokenizer_pipeline_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_pipeline_test.cc DEPS kvd::engine)
kvd_test(engine_tokenizer_errors_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tokenizer_errors_test.cc DEPS kvd::engine)
