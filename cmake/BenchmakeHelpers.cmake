# Helpers shared by every folder's CMakeLists.txt.

# Warnings on our own code only (third-party headers are SYSTEM); errors only when the
# project asks for them (BENCHMAKE_WERROR: CI and developers), never on a user's build,
# whose compiler may warn where ours did not.
function(bm_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  # GCC 12 at -O3 warns of overlapping copies inside std::string's operator+ where none
  # can happen (GCC bugs 105329 and 105651, fixed in GCC 13): engine/build.cc and others.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
  if(BENCHMAKE_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# Prints one line per optional feature: "✓ name" or "✗ name".
function(bm_report_feature name var)
  if(${var})
    message(STATUS "benchmake: ✓ ${name}")
  else()
    message(STATUS "benchmake: ✗ ${name}")
  endif()
endfunction()

# bm_test(NAME SOURCES a.cc b.cc LIBS lib1 lib2 [LABELS l] [PROPERTIES key value ...])
# One GoogleTest binary; each TEST becomes its own ctest entry. PROPERTIES are
# set on every entry (e.g. FIXTURES_REQUIRED).
function(bm_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS;PROPERTIES" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  bm_warnings(${name})
  # The same paths compiled in, for tests run outside ctest.
  target_compile_definitions(${name} PRIVATE
    BENCHMAKE_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}" BENCHMAKE_TEST_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # Both variables in one ENVIRONMENT value: the ';' must survive four list
  # expansions on its way through GoogleTest's PRE_TEST discovery (16
  # backslashes here; checked with `ctest --show-only=json-v1`), and an empty
  # LABELS must not shift the key/value pairs.
  set(props ENVIRONMENT
    "BENCHMAKE_SOURCE_DIR=${PROJECT_SOURCE_DIR}\\\\\\\\\\\\\\\\;BENCHMAKE_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(T_LABELS)
    list(APPEND props LABELS "${T_LABELS}")
  endif()
  if(T_PROPERTIES)
    list(APPEND props ${T_PROPERTIES})
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES ${props})
endfunction()
