# Third-party libraries, all from Debian packages (see scripts/bootstrap).
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)  # the shared document tier's Redis client
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)  # KV events in vLLM's transport (ZeroMQ)
find_package(ICU COMPONENTS uc REQUIRED)  # Unicode normalization (NFC...) for the tokenizer
find_package(Boost 1.74 REQUIRED)  # Beast and Asio, header-only
find_package(yaml-cpp CONFIG REQUIRED)  # target `yaml-cpp` (no namespace in 0.7)
find_package(prometheus-cpp CONFIG REQUIRED)  # prometheus-cpp::core only; /metrics is ours
find_package(OpenSSL REQUIRED)  # SHA-256 of API keys and of stored payloads
find_package(RocksDB CONFIG REQUIRED)  # RocksDB::rocksdb-shared: the document store
# gRPC: protobuf has no CMake config on bookworm (module mode), gRPC has one.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(GTest CONFIG REQUIRED)
find_package(benchmark CONFIG REQUIRED)
find_path(KVD_CBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu /usr/include/aarch64-linux-gnu /usr/include
  PATH_SUFFIXES openblas-pthread openblas NO_DEFAULT_PATH REQUIRED)
