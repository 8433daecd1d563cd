# kvd_node_tests(<name> FILES <files...> TESTS <scripts...> [ENVIRONMENT <vars...>]): tests
# written in JavaScript against real clients from the npm registry. FILES (package.json and
# package-lock.json among them) and the TESTS scripts are copied into the build tree; the setup
# test <name>_install runs `npm ci` there (the dependencies pinned by the lock file); each
# script runs as `node --test <script>`, named <name> when it is the only one and
# <name>_<script stem> otherwise. The scripts find the kvd under test in KVD_BINARY and the
# repository in KVD_SOURCE_DIR; tests/integration/kvd_process.mjs, copied beside them, starts
# one. All carry the CTest label `node`.
function(kvd_node_tests name)
  cmake_parse_arguments(arg "" "" "FILES;TESTS;ENVIRONMENT" ${ARGN})
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/npm)
  foreach(file IN LISTS arg_FILES arg_TESTS)
    configure_file(${file} ${dir}/${file} COPYONLY)
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/tests/integration/kvd_process.mjs ${dir}/kvd_process.mjs
                 COPYONLY)
  add_test(NAME ${name}_install
    COMMAND npm ci --no-audit --no-fund --loglevel=error WORKING_DIRECTORY ${dir})
  set_tests_properties(${name}_install PROPERTIES FIXTURES_SETUP ${name}_npm LABELS node)
  list(LENGTH arg_TESTS count)
  foreach(script IN LISTS arg_TESTS)
    string(REGEX REPLACE "\\.test\\.mjs$" "" stem ${script})
    set(test ${name})
    if(count GREATER 1)
      set(test ${name}_${stem})
    endif()
    add_test(NAME ${test} COMMAND node --test ${script} WORKING_DIRECTORY ${dir})
    set_tests_properties(${test} PROPERTIES
      FIXTURES_REQUIRED ${name}_npm
      LABELS node
      ENVIRONMENT "KVD_BINARY=$<TARGET_FILE:kvd>;KVD_SOURCE_DIR=${PROJECT_SOURCE_DIR};${arg_ENVIRONMENT}")
  endforeach()
endfunction()
