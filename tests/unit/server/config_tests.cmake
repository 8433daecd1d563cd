# Server configuration tests.
kvd_test(server_config_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/config_test.cc DEPS kvd::server)
kvd_test(server_config_keepkv_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/config_keepkv_test.cc
         DEPS kvd::server)
kvd_test(server_api_key_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/api_key_test.cc DEPS kvd::server)
kvd_test(server_byte_size_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/byte_size_test.cc
         DEPS kvd::server)
kvd_test(server_config_keys_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/config_keys_test.cc
         DEPS kvd::server)
