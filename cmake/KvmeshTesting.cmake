# kvmesh_test(NAME SOURCES... LIBS ...): one gtest binary registered with ctest.
if(KVMESH_BUILD_TESTS)
  enable_testing()
  find_package(GTest REQUIRED CONFIG)
  include(GoogleTest)
endif()

function(kvmesh_test name)
  if(NOT KVMESH_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    KVMESH_SHARED_DIR="${KVMESH_SHARED_DIR}"
    KVMESH_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    KVMESH_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${T_LABELS}")
endfunction()
