# The one ONNX of every build: the system's when it is 1.17 or newer (Debian 13),
# otherwise ONNX 1.17.0 built once from Debian 13's source package into a cache
# folder (scripts/build_onnx.sh), static, on the system's shared protobuf. So the
# checker, the schemas and shape inference users and tests see are one release's,
# whatever the machine. Everything links the target `bpulint_onnx`, which hides
# the differences between ONNX's CMake packages (target names, ONNX_ML).
set(BPULINT_ONNX_MIN_VERSION 1.17)
set(BPULINT_ONNX_CACHE "" CACHE PATH
    "Where ONNX ${BPULINT_ONNX_MIN_VERSION} is built when the system's is older (default: ~/.cache/bpu-lint)")

find_package(ONNX ${BPULINT_ONNX_MIN_VERSION} CONFIG QUIET)
if(NOT ONNX_FOUND)
  if(BPULINT_ONNX_CACHE)
    set(cache "${BPULINT_ONNX_CACHE}")
  elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(cache "$ENV{XDG_CACHE_HOME}/bpu-lint")
  else()
    set(cache "$ENV{HOME}/.cache/bpu-lint")
  endif()
  # The static library is compiled against one protobuf's headers: one folder per protobuf
  # (and per target, when cross-compiling with a toolchain file).
  set(BPULINT_ONNX_PREFIX "${cache}/onnx-1.17.0-protobuf-${Protobuf_VERSION}")
  set(toolchain "")
  if(CMAKE_CROSSCOMPILING)
    string(APPEND BPULINT_ONNX_PREFIX "-${CMAKE_SYSTEM_PROCESSOR}")
    get_filename_component(toolchain "${CMAKE_TOOLCHAIN_FILE}" ABSOLUTE)
  endif()
  if(NOT EXISTS "${BPULINT_ONNX_PREFIX}/.complete")
    message(STATUS "ONNX ${BPULINT_ONNX_MIN_VERSION}: the system has none; building it once into ${BPULINT_ONNX_PREFIX}")
    execute_process(COMMAND "${CMAKE_SOURCE_DIR}/scripts/build_onnx.sh" "${BPULINT_ONNX_PREFIX}" ${toolchain} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "ONNX ${BPULINT_ONNX_MIN_VERSION} could not be built (scripts/build_onnx.sh, above)")
    endif()
  endif()
  find_package(ONNX ${BPULINT_ONNX_MIN_VERSION} CONFIG REQUIRED PATHS "${BPULINT_ONNX_PREFIX}" NO_DEFAULT_PATH
               NO_CMAKE_FIND_ROOT_PATH)  # (the cache is not in a cross-build's sysroot)
endif()
message(STATUS "ONNX ${ONNX_VERSION} from ${ONNX_DIR}")

add_library(bpulint_onnx INTERFACE)
if(TARGET ONNX::onnx)
  target_link_libraries(bpulint_onnx INTERFACE ONNX::onnx ONNX::onnx_proto)
else()
  target_link_libraries(bpulint_onnx INTERFACE onnx onnx_proto)
endif()
# Debian 13's package builds the ML protos but does not tell its users so.
target_compile_definitions(bpulint_onnx INTERFACE ONNX_NAMESPACE=onnx ONNX_ML=1)
# ONNX's licence, where its static library is linked into the binary
# (cmake/install.cmake); build_onnx.sh puts it beside the library. A shared
# system ONNX is bundled with its Debian copyright file instead.
get_filename_component(onnx_prefix "${ONNX_DIR}/../../.." ABSOLUTE)
set(BPULINT_ONNX_LICENSE "")
if(EXISTS "${onnx_prefix}/share/doc/onnx/LICENSE")
  set(BPULINT_ONNX_LICENSE "${onnx_prefix}/share/doc/onnx/LICENSE")
endif()
