# Warnings, sanitizers and the helper every kvd target uses.
add_library(kvd_build_flags INTERFACE)
target_compile_options(kvd_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter
                              -Wno-missing-field-initializers>)
if(KVD_WERROR)
  target_compile_options(kvd_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
target_include_directories(kvd_build_flags INTERFACE ${PROJECT_SOURCE_DIR})
if(KVD_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # A batch includes its .cc files, so g++ takes their anonymous-namespace types for a header's
  # and warns where a lambda or coroutine frame holds one.
  target_compile_options(kvd_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
endif()

if(NOT KVD_DEBUG_INFO)
  foreach(lang C CXX CUDA)
    string(REGEX REPLACE "(^| )-g( |$)" " " CMAKE_${lang}_FLAGS_RELWITHDEBINFO
                         "${CMAKE_${lang}_FLAGS_RELWITHDEBINFO}")
  endforeach()
endif()

if(KVD_SANITIZE)
  string(REPLACE ";" "," kvd_sanitizers "${KVD_SANITIZE}")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${kvd_sanitizers}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=${kvd_sanitizers})
endif()

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # Boost 1.74's Asio looks for clang's coroutines only in libc++'s <experimental/coroutine>;
  # clang has C++20 coroutines with libstdc++'s <coroutine> too (which Asio then uses).
  add_compile_definitions(BOOST_ASIO_HAS_CO_AWAIT=1)
  # Locks checked by the compiler (base/mutex.h): a member read or written without the mutex
  # its ABSL_GUARDED_BY names is an error in every clang build (the fuzz build in CI).
  target_compile_options(kvd_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wthread-safety -Werror=thread-safety>)
endif()

if(KVD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KVD_FUZZ=ON needs clang: configure with CC=clang CXX=clang++")
  endif()
  if(KVD_SANITIZE)
    message(FATAL_ERROR "KVD_FUZZ=ON already builds with ASan and UBSan; leave KVD_SANITIZE empty")
  endif()
  # fuzzer-no-link instruments the libraries for coverage; only the fuzz targets link libFuzzer's
  # main (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt). -O1 and line tables only, as OSS-Fuzz
  # builds, override the build type's -O2 -g: they compile much faster and still symbolise
  # every frame of a crash. NDEBUG stays defined, as in the release build: Boost 1.74's chunked
  # body parser asserts more than its code relies on (at least five bytes when the last chunk's
  # line arrives a byte at a time, which it then parses correctly). UBSan's `function` check is
  # left out: clang 14 cannot emit it for coroutines ("Cannot represent a difference across
  # sections", server/http).
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link,address,undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize=function>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-O1> $<$<COMPILE_LANGUAGE:C,CXX>:-gline-tables-only>)
  add_link_options(-fsanitize=address,undefined)
endif()

# kvd_library(<folder> SOURCES ... DEPS ...): the one CMake library of a top-level folder,
# named kvd_<folder> with the alias kvd::<folder>.
function(kvd_library folder)
  cmake_parse_arguments(arg "" "" "SOURCES;DEPS" ${ARGN})
  add_library(kvd_${folder} STATIC ${arg_SOURCES})
  add_library(kvd::${folder} ALIAS kvd_${folder})
  target_link_libraries(kvd_${folder} PUBLIC kvd_build_flags ${arg_DEPS})
  set_target_properties(kvd_${folder} PROPERTIES UNITY_BUILD ${KVD_UNITY_BUILD}
                                                 UNITY_BUILD_BATCH_SIZE 8)
endfunction()

# kvd_test(<name> SOURCES ... DEPS ... [LABELS ...]): one GoogleTest binary registered with CTest.
function(kvd_test name)
  cmake_parse_arguments(arg "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE kvd_build_flags ${arg_DEPS} kvd_test_source_dir GTest::gmock
                                        GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  if(arg_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${arg_LABELS}")
  endif()
endfunction()
