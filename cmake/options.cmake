# Build options. KVD_WITH_CUDA defaults to ON when nvcc can be found.
find_program(KVD_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_PATH PATH_SUFFIXES bin)
if(KVD_NVCC)
  set(kvd_cuda_default ON)
else()
  set(kvd_cuda_default OFF)
endif()
option(KVD_WITH_CUDA "Build the CUDA backend (kernels/cuda)" ${kvd_cuda_default})
set(KVD_SANITIZE "" CACHE STRING "Sanitizers to build with: '', 'address;undefined' or 'thread'")
option(KVD_WERROR "Treat compiler warnings as errors" OFF)
# Unity builds compile each library's sources eight to a file: the headers they share (Abseil,
# Asio, Beast, gRPC, JSON) are parsed and their templates instantiated once per eight, which
# takes 55-65% less compile time. Off by default, so a change recompiles one file and every
# file is checked on its own; CI builds the sanitizer configurations this way.
option(KVD_UNITY_BUILD "Compile each library's sources in batches of eight" OFF)
# Debug information (the build type's -g). CI's plain build turns it off: its failures are
# explained by the tests' own output, and every file compiles about a quarter faster.
option(KVD_DEBUG_INFO "Compile with debug information (-g)" ON)
# A libFuzzer build (clang only): every library and test is compiled with coverage
# instrumentation, ASan and UBSan, and tests/ builds the fuzz targets of tests/fuzz/ as well.
option(KVD_FUZZ "Build the libFuzzer targets (tests/fuzz); needs clang" OFF)

find_program(KVD_CCACHE ccache)
if(KVD_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER ${KVD_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${KVD_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${KVD_CCACHE})
endif()

if(KVD_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND KVD_NVCC)
    set(CMAKE_CUDA_COMPILER ${KVD_NVCC})
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # nvcc 13 accepts 75..121; "native" fails on machines without a GPU.
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(CMAKE_VERSION VERSION_LESS 3.26)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
endif()
