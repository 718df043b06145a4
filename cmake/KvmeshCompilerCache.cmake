# A compiler cache (ccache) when one is installed and no launcher is set: the
# test build, the container images' CPU-only build (scripts/containers.sh)
# and later builds of the same sources share their objects. CCACHE_BASEDIR
# makes paths under the repository relative, so two build directories (or
# two clones) hit the same entries. KVMESH_CCACHE=OFF turns it off.
option(KVMESH_CCACHE "Compile through ccache when it is installed" ON)
if(KVMESH_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(KVMESH_CCACHE_PROGRAM ccache)
  if(KVMESH_CCACHE_PROGRAM)
    # CCACHE_NOHASHDIR: with -g (the fuzz build) the build directory would
    # otherwise be part of every key, and no other clone could hit.
    set(launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1
        ${KVMESH_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${launcher})
    message(STATUS "Compiling through ${KVMESH_CCACHE_PROGRAM}")
  endif()
endif()
