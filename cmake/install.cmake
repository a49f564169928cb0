# `cmake --install`: the binary, a man page generated from its --help, bash
# completion. With BPULINT_BUNDLE the install is also relocatable: every shared
# library beyond the base system goes into lib/bpu-lint, found through an
# $ORIGIN-relative RPATH (scripts/package.sh builds the tar.gz, the wheel and
# the .deb from such an install).
include(GNUInstallDirs)

install(TARGETS bpu-lint RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/scripts/completion.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME bpu-lint)

find_program(BPULINT_HELP2MAN help2man)
# help2man runs the binary; a cross-built one runs under the toolchain's emulator
# (qemu-user), through a script help2man can call like the binary itself.
set(help_runner $<TARGET_FILE:bpu-lint>)
if(CMAKE_CROSSCOMPILING)
  if(NOT CMAKE_CROSSCOMPILING_EMULATOR)
    message(FATAL_ERROR "cross-compiling needs CMAKE_CROSSCOMPILING_EMULATOR (qemu-user) to write the man page")
  endif()
  list(JOIN CMAKE_CROSSCOMPILING_EMULATOR "' '" emulator)
  set(help_runner ${CMAKE_BINARY_DIR}/bpu-lint-emulated)
  file(GENERATE OUTPUT ${help_runner} CONTENT "#!/bin/sh\nexec '${emulator}' '$<TARGET_FILE:bpu-lint>' \"$@\"\n"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endif()
if(BPULINT_HELP2MAN)
  set(man_page ${CMAKE_BINARY_DIR}/bpu-lint.1)
  add_custom_command(OUTPUT ${man_page}
    COMMAND ${BPULINT_HELP2MAN} --no-info --section=1
            "--name=which ONNX nodes will fall off a Horizon BPU, and why" --output=${man_page} ${help_runner}
    DEPENDS bpu-lint
    COMMENT "Generating the man page from bpu-lint --help")
  add_custom_target(bpulint_man_page ALL DEPENDS ${man_page})
  install(FILES ${man_page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: cmake --install writes no man page (Debian package help2man)")
endif()

if(NOT BPULINT_BUNDLE)
  # Graphviz's plugins live outside the loader's default path
  # (.../graphviz/); the installed binary keeps the link-time directories.
  set_target_properties(bpu-lint PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
endif()

if(BPULINT_BUNDLE)
  # DT_RPATH, not DT_RUNPATH: it also applies to the bundled libraries' own
  # dependencies (libgvc -> libcdt), which carry no search path of their own.
  set_target_properties(bpu-lint PROPERTIES INSTALL_RPATH "$ORIGIN/../lib/bpu-lint")
  target_link_options(bpu-lint PRIVATE -Wl,--disable-new-dtags)
  # The base system every supported machine has (Ubuntu 22.04, Debian 12):
  # glibc, GCC 12's libstdc++ and libgcc_s, zlib, expat. Everything else is bundled.
  # A cross-build's libraries come from scripts/cross_sysroot.sh's folder, which
  # lists each file's Debian package (owners.txt) for the copyright files.
  install(CODE "set(sysroot \"${BPULINT_SYSROOT}\")")
  install(CODE [[
    file(GET_RUNTIME_DEPENDENCIES
      EXECUTABLES "$<TARGET_FILE:bpu-lint>"
      RESOLVED_DEPENDENCIES_VAR bundled
      UNRESOLVED_DEPENDENCIES_VAR missing
      PRE_EXCLUDE_REGEXES "^(ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libstdc\\+\\+|libgcc_s|libz|libexpat)\\.so.*")
    # A library found for one dependent is the one the loader gives every other
    # (one soname, one copy in the process). CMake does not carry the binary's RPATH
    # to every library's dependencies (libcgraph -> libcdt); natively the machine's
    # loader cache finds them, which holds no other architecture's libraries.
    foreach(lib IN LISTS bundled)
      get_filename_component(name "${lib}" NAME)
      list(REMOVE_ITEM missing "${name}")
    endforeach()
    if(missing)
      message(FATAL_ERROR "bpu-lint needs libraries that cannot be found: ${missing}")
    endif()
    # One real file per library, under the name the loader asks for (a wheel
    # is a zip: it keeps no symlinks).
    foreach(lib IN LISTS bundled)
      get_filename_component(name "${lib}" NAME)
      get_filename_component(real "${lib}" REALPATH)
      file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/bpu-lint" TYPE FILE RENAME "${name}" FILES "${real}")
      # Each bundled library's licence travels with it: its Debian package's copyright file.
      set(owner "")
      if(sysroot)
        file(RELATIVE_PATH path "${sysroot}" "${real}")
        file(STRINGS "${sysroot}/owners.txt" line REGEX "^/${path} ")
        string(REGEX REPLACE "^[^ ]* " "" owner "${line}")
      else()
        execute_process(COMMAND dpkg-query -S "${real}" OUTPUT_VARIABLE owner ERROR_QUIET RESULT_VARIABLE rc)
        if(rc EQUAL 0)
          string(REGEX REPLACE "[:,].*" "" owner "${owner}")
        else()
          set(owner "")
        endif()
      endif()
      if(owner AND EXISTS "${sysroot}/usr/share/doc/${owner}/copyright")
        file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/share/doc/bpu-lint/third-party" TYPE FILE
             RENAME "${owner}.copyright" FILES "${sysroot}/usr/share/doc/${owner}/copyright")
      elseif(sysroot)
        message(FATAL_ERROR "${real}: no Debian package in ${sysroot}/owners.txt with a copyright file")
      endif()
    endforeach()
  ]])
endif()

if(BPULINT_BUNDLE AND BPULINT_ONNX_LICENSE)
  # ONNX, linked in statically (cmake/onnx.cmake): its licence beside the bundled libraries'.
  install(FILES "${BPULINT_ONNX_LICENSE}" DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/bpu-lint/third-party RENAME onnx.LICENSE)
endif()

if(BPULINT_BUNDLE)
  # The .deb (cpack -G DEB, from scripts/package.sh) is the bundle installed
  # under /usr, its libraries private in /usr/lib/bpu-lint: it depends only on
  # the base system, so one package installs on Debian 12 and Ubuntu 22.04.
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGE_NAME bpu-lint)
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
  set(CPACK_PACKAGE_CONTACT "bpu-lint maintainers")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "which ONNX nodes will fall off a Horizon BPU, and why")
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  set(CPACK_STRIP_FILES ON)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  if(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  else()
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
  endif()
  set(CPACK_DEBIAN_PACKAGE_SECTION devel)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.35), libstdc++6 (>= 12), libgcc-s1, zlib1g, libexpat1")
  set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Lints ONNX models against Horizon Robotics BPU constraints (Journey 6P first)\n and rewrites ConvTranspose3d layers so they stay on the BPU.")
  include(CPack)
endif()
