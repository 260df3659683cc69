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
  # In a unity build a .cc is no longer the main file, so GCC's -Wsubobject-linkage takes a
  # pimpl's Impl holding a type of the .cc's anonymous namespace for a header's class doing so.
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
  endif()
  if(BENCHMAKE_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  set_property(GLOBAL APPEND PROPERTY BM_OWN_TARGETS ${target})
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
  # fmt and nlohmann/json on every test, so that all of them can share one precompiled
  # header (bm_precompile_headers: FMT_SHARED must be defined alike).
  target_link_libraries(${name} PRIVATE fmt::fmt nlohmann_json::nlohmann_json)
  set_property(TARGET ${name} PROPERTY BM_PCH_KIND tests)
  _bm_test_opt(${name})
endfunction()

# The tests' own sources at BENCHMAKE_TEST_OPT (-O1) outside Debug: what they test (the
# libraries) keeps the build type's -O3 / -O2, but a test file is GoogleTest's macros, setup and
# assertions, whose -O3 compile cost about as much as the rest of the build (the heaviest,
# cuda_ops_test.cc: 30 s at -O3, 12 s at -O1; CI compiles everything from scratch on two cores).
# The last -O on the line wins. The precompiled header's donors get it too (GCC uses a header
# only under the same optimization macros).
function(_bm_test_opt target)
  if(BENCHMAKE_TEST_OPT)
    target_compile_options(${target} PRIVATE
      "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Debug>>>:${BENCHMAKE_TEST_OPT}>")
  endif()
endfunction()

# Precompiled headers (BENCHMAKE_PCH). CI compiles everything from scratch on two cores;
# every test file parsed GoogleTest, fmt, nlohmann/json and the standard headers again.
# The tests get cmake/pch/tests.h, compiled once by a donor target and reused (REUSE_FROM):
# GCC uses a precompiled header only under the same options and predefined macros, so there
# are two donors, "bm_pch_tests" and "bm_pch_tests_omp" (-fopenmp: the trainer's tests), and
# every test links fmt (FMT_SHARED). CMake adds -Winvalid-pch, an error under
# BENCHMAKE_WERROR: a mismatch shows instead of silently costing time. bm_train and
# bm_train_cuda (options of their own: -march, OpenMP) compile cmake/pch/common.h for
# themselves (a file where GCC 12 then reports a false std::string warning is compiled
# without it: trainer/process_env.cc). The other libraries have none: loading the header
# (about 0.5 s a file) cost them about what it saved, and under it GCC 12 reported its false
# std::string -Warray-bounds/-Wstringop-overflow in engine/ files (docs/PERFORMANCE.md, "CI").
# Called once, at the end of the top-level CMakeLists.txt, when every link is known.
function(bm_precompile_headers)
  if(NOT BENCHMAKE_PCH)
    return()
  endif()
  set(dir ${PROJECT_SOURCE_DIR}/cmake/pch)
  get_property(targets GLOBAL PROPERTY BM_OWN_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(kind ${target} BM_PCH_KIND)
    if(kind STREQUAL "tests")
      _bm_usage_closure(deps ${target})
      if("OpenMP::OpenMP_CXX" IN_LIST deps)
        _bm_pch_donor(bm_pch_tests_omp ${dir}/tests.h GTest::gtest GTest::gmock OpenMP)
        target_precompile_headers(${target} REUSE_FROM bm_pch_tests_omp)
      else()
        _bm_pch_donor(bm_pch_tests ${dir}/tests.h GTest::gtest GTest::gmock)
        target_precompile_headers(${target} REUSE_FROM bm_pch_tests)
      endif()
      # Under the header GCC 12 inlines std::string's operator+ and assignment differently
      # and reports its false -Wstringop-overflow / -Warray-bounds in them (GCC bug 105329's
      # kind, like the -Wrestrict that bm_warnings turns off; tests/cache/
      # action_record_remeasure_test.cc did): off in the tests, which are not shipped.
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
        target_compile_options(${target} PRIVATE
          $<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow -Wno-array-bounds>)
      endif()
    elseif(target STREQUAL "bm_train" OR target STREQUAL "bm_train_cuda")
      target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${dir}/common.h>")
    endif()
  endforeach()
endfunction()

# A target that compiles `header` for others to reuse, with the compile line of our own
# targets (bm_warnings) and the usage requirements of fmt, nlohmann/json and `ARGN`
# (targets, or OpenMP for OpenMP::OpenMP_CXX, whose imported target is trainer/'s).
function(_bm_pch_donor name header)
  if(TARGET ${name})
    return()
  endif()
  add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch/donor.cc)
  target_link_libraries(${name} PRIVATE fmt::fmt nlohmann_json::nlohmann_json)
  foreach(usage IN LISTS ARGN)
    if(usage STREQUAL "OpenMP")
      find_package(OpenMP REQUIRED COMPONENTS CXX)
      set(usage OpenMP::OpenMP_CXX)
    endif()
    target_link_libraries(${name} PRIVATE ${usage})
  endforeach()
  bm_warnings(${name})
  _bm_test_opt(${name})
  target_precompile_headers(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
endfunction()

# The targets whose usage requirements (compile options, definitions) reach `target`'s own
# compile lines: its LINK_LIBRARIES and, through them, their INTERFACE_LINK_LIBRARIES.
function(_bm_usage_closure out target)
  set(seen "")
  get_target_property(stack ${target} LINK_LIBRARIES)
  if(NOT stack)
    set(stack "")
  endif()
  while(stack)
    list(POP_FRONT stack item)
    if(item MATCHES "^\\$<LINK_ONLY:")
      continue()  # links, does not compile
    endif()
    if(NOT TARGET "${item}")
      # A plain library, or an imported target of another directory (OpenMP::OpenMP_CXX
      # of trainer/): named, not followed.
      list(APPEND seen ${item})
      continue()
    endif()
    get_target_property(aliased ${item} ALIASED_TARGET)
    if(aliased)
      set(item ${aliased})
    endif()
    if(item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${item})
    get_target_property(next ${item} INTERFACE_LINK_LIBRARIES)
    if(next)
      list(APPEND stack ${next})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()
