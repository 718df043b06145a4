# kvmesh_test(NAME SOURCES... LIBS ...): one gtest binary registered with ctest.
if(KVMESH_BUILD_TESTS)
  enable_testing()
  set(KVMESH_GTEST_SOURCE_DIR "" CACHE PATH
      "GoogleTest sources to build instead of an installed GTest (e.g. /usr/src/googletest)")
  if(KVMESH_GTEST_SOURCE_DIR)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    add_subdirectory(${KVMESH_GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  else()
    find_package(GTest REQUIRED CONFIG)
  endif()
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
