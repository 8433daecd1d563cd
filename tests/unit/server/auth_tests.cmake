# Tenant admission tests.
kvd_test(server_tenants_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/tenants_test.cc DEPS kvd::server)
