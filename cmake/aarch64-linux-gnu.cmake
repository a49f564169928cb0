# Cross-compiling for aarch64 Linux on an x86-64 Debian machine (scripts/package.sh
# --arch aarch64, scripts/build_onnx.sh): Debian's aarch64-linux-gnu GCC, the
# arm64 libraries unpacked by scripts/cross_sysroot.sh (BPULINT_SYSROOT in the
# environment, else its default folder), the host's protoc, and qemu-user to run
# what is built (the man page is help2man of the binary's --help).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(DEFINED ENV{BPULINT_SYSROOT} AND NOT "$ENV{BPULINT_SYSROOT}" STREQUAL "")
  set(BPULINT_SYSROOT "$ENV{BPULINT_SYSROOT}")
elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(BPULINT_SYSROOT "$ENV{XDG_CACHE_HOME}/bpu-lint/sysroot-arm64")
else()
  set(BPULINT_SYSROOT "$ENV{HOME}/.cache/bpu-lint/sysroot-arm64")
endif()
if(NOT EXISTS "${BPULINT_SYSROOT}/.complete")
  message(FATAL_ERROR "no arm64 libraries in ${BPULINT_SYSROOT}: run scripts/cross_sysroot.sh ${BPULINT_SYSROOT}")
endif()

# Not --sysroot: glibc and libstdc++ are the cross compiler's own
# (/usr/aarch64-linux-gnu); the sysroot only adds the libraries above them.
set(CMAKE_FIND_ROOT_PATH "${BPULINT_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# The linker finds the libraries' own dependencies (libgvc -> libcdt, libexpat)
# in the sysroot, as the loader will on the target.
foreach(dir lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu)
  string(APPEND CMAKE_EXE_LINKER_FLAGS_INIT " -Wl,-rpath-link,${BPULINT_SYSROOT}/${dir}")
  string(APPEND CMAKE_SHARED_LINKER_FLAGS_INIT " -Wl,-rpath-link,${BPULINT_SYSROOT}/${dir}")
endforeach()

set(ENV{PKG_CONFIG_SYSROOT_DIR} "${BPULINT_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR} "${BPULINT_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${BPULINT_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# The host's protoc generates the sources (FindProtobuf; ONNX's build).
set(Protobuf_PROTOC_EXECUTABLE /usr/bin/protoc CACHE FILEPATH "protoc of the build machine")
set(ONNX_CUSTOM_PROTOC_EXECUTABLE /usr/bin/protoc CACHE FILEPATH "protoc of the build machine")

find_program(BPULINT_QEMU_AARCH64 qemu-aarch64-static)
if(BPULINT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${BPULINT_QEMU_AARCH64};-L;${BPULINT_SYSROOT}")
endif()
