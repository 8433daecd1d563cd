# Sources of the chat-template renderer (a Jinja subset) and of document placement in a chat,
# part of kvd_text.
set(kvd_text_chat_template_sources
  ${CMAKE_CURRENT_LIST_DIR}/chat_document.cc
  ${CMAKE_CURRENT_LIST_DIR}/chat_template.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/builtins.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/call_args.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/errors.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/expression_eval.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/expression_parser.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/filters.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/json_convert.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/lexer.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/methods.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/operators.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/parser.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/predicates.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/sequence_filters.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/statement_exec.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/template.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/text.cc
  ${CMAKE_CURRENT_LIST_DIR}/internal/jinja/value.cc)
