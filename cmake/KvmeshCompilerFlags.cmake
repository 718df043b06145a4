# Warning and sanitizer flags shared by every target in the tree.
add_compile_options(
  "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wno-unused-parameter>")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # g++ 12 reports impossible memcpy overlaps in inlined std::string
  # concatenation at -O2/-O3 (GCC bug 105651); the warning is a false positive.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>")
endif()
if(KVMESH_WERROR)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Werror>")
endif()
if(KVMESH_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(KVMESH_TSAN)
  if(KVMESH_SANITIZE)
    message(FATAL_ERROR "KVMESH_TSAN and KVMESH_SANITIZE cannot be combined (ASan and TSan exclude each other)")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
if(KVMESH_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KVMESH_BUILD_FUZZERS needs clang++ (-DCMAKE_CXX_COMPILER=clang++)")
  endif()
  # Coverage instrumentation for every library the fuzz targets link.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
