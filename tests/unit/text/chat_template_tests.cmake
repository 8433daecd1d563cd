# Chat-template tests: the interpreter feature by feature with its errors and limits, and
# model-family templates, the bundled model's template and tokenizer_config.json loading, and
# where a stored document sits in a chat.
kvd_test(text_chat_template_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/chat_template_test.cc DEPS kvd::text)
kvd_test(text_chat_template_families_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/chat_template_families_test.cc DEPS kvd::text)
kvd_test(text_chat_document_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/chat_document_test.cc DEPS kvd::text)
