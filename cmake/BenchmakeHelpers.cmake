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
endfunction()

# Precompiled headers (BENCHMAKE_PCH): cmake/pch/common.h for the libraries and tools,
# cmake/pch/tests.h (common.h and GoogleTest) for the tests. CI compiles everything from
# scratch on two cores, and parsing these headers again in every file was a fifth of the
# build. GCC uses a precompiled header only where it was compiled with the same options
# and predefined macros (-march, -fopenmp's _OPENMP, FMT_SHARED); CMake adds -Winvalid-pch,
# an error under BENCHMAKE_WERROR, so a mismatch shows instead of silently costing time.
# So one header is compiled per kind of compile line and reused (REUSE_FROM) by the
# targets that share that line: "bm_pch_common", "bm_pch_tests", "bm_pch_tests_omp"
# (OpenMP: the trainer's tests). A target with options of its own (bm_train's -march)
# gets its own header where it has enough files to pay for it, else none.
# Called once, at the end of the top-level CMakeLists.txt, when every link is known.
function(bm_precompile_headers)
  if(NOT BENCHMAKE_PCH)
    return()
  endif()
  set(dir ${PROJECT_SOURCE_DIR}/cmake/pch)
  get_property(targets GLOBAL PROPERTY BM_OWN_TARGETS)
  foreach(target IN LISTS targets)
    # base/'s small files use neither nlohmann/json nor much of the standard library:
    # loading the header (about 0.5 s) cost them more than it saved (measured).
    get_target_property(source_dir ${target} SOURCE_DIR)
    if(source_dir MATCHES "^${PROJECT_SOURCE_DIR}/base(/|$)")
      continue()
    endif()
    _bm_usage_closure(deps ${target})
    set(omp OFF)
    if("OpenMP::OpenMP_CXX" IN_LIST deps)
      set(omp ON)
    endif()
    get_target_property(kind ${target} BM_PCH_KIND)
    get_target_property(options ${target} COMPILE_OPTIONS)
    if(kind STREQUAL "tests")
      set(donor bm_pch_tests)
      if(omp)
        set(donor bm_pch_tests_omp)
      endif()
      _bm_pch_donor(${donor} ${dir}/tests.h ${omp} GTest::gtest GTest::gmock)
      target_precompile_headers(${target} REUSE_FROM ${donor})
      _bm_pch_gcc12_warnings(${target})
    elseif(omp OR options MATCHES "-march")
      _bm_cxx_source_count(count ${target})
      if(count GREATER_EQUAL 8)
        target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${dir}/common.h>")
        _bm_pch_gcc12_warnings(${target})
      endif()
    elseif("fmt::fmt" IN_LIST deps AND "nlohmann_json::nlohmann_json" IN_LIST deps)
      _bm_pch_donor(bm_pch_common ${dir}/common.h OFF)
      target_precompile_headers(${target} REUSE_FROM bm_pch_common)
      _bm_pch_gcc12_warnings(${target})
    endif()
  endforeach()
endfunction()

# GCC 12 at -O3 warns of an out-of-range memcpy inside std::string's operator+ and insert
# (the code whose false -Wrestrict bm_warnings turns off for GCC 12) where a
# precompiled header changes what it inlines: engine/gpu_allocator.cc's `"," + s` did.
function(_bm_pch_gcc12_warnings target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow>)
  endif()
endfunction()

# A target that compiles `header` for others to reuse, with the compile line of our own
# targets (bm_warnings) and the usage requirements of fmt, nlohmann/json and `ARGN`.
function(_bm_pch_donor name header omp)
  if(TARGET ${name})
    return()
  endif()
  add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch/donor.cc)
  target_link_libraries(${name} PRIVATE fmt::fmt nlohmann_json::nlohmann_json ${ARGN})
  if(omp)
    find_package(OpenMP REQUIRED COMPONENTS CXX)
    target_link_libraries(${name} PRIVATE OpenMP::OpenMP_CXX)
  endif()
  bm_warnings(${name})
  _bm_pch_gcc12_warnings(${name})
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

function(_bm_cxx_source_count out target)
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "\\.(cc|cpp)$")
  list(LENGTH sources count)
  set(${out} ${count} PARENT_SCOPE)
endfunction()
