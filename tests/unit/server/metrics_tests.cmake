# Metrics exposition tests.
kvd_test(server_metrics_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cc DEPS kvd::server)
