# Sources of the YAML server configuration, part of kvd_server.
set(kvd_server_config_sources
  ${CMAKE_CURRENT_LIST_DIR}/api_key.cc
  ${CMAKE_CURRENT_LIST_DIR}/byte_size.cc
  ${CMAKE_CURRENT_LIST_DIR}/config_loader.cc
  ${CMAKE_CURRENT_LIST_DIR}/server_config.cc
  ${CMAKE_CURRENT_LIST_DIR}/yaml_reader.cc)
