# Helpers shared by every CMakeLists.txt of the project.

set(UIW_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wpointer-arith -Wformat=2 -Wundef -Wvla -Wno-unused-parameter)
if(UIW_WERROR)
  list(APPEND UIW_WARNINGS -Werror)
endif()

if(UIW_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  add_compile_definitions(UIW__ASAN) # src/common/copy.h keeps memcpy (checked)
endif()
if(UIW_TSAN)
  if(UIW_SANITIZE)
    message(FATAL_ERROR "UIW_TSAN and UIW_SANITIZE exclude each other")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  add_compile_definitions(UIW__TSAN)
endif()
if(UIW_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "UIW_FUZZ needs clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

add_compile_definitions(_GNU_SOURCE)
# Only what the public headers declare with UIW_EXTERN (include/uiw/export.h) leaves a
# shared library; calls between the layers stay direct (no PLT, no interposition).
set(CMAKE_C_VISIBILITY_PRESET hidden)
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options(-fno-semantic-interposition)
endif()
# Calls into libc through the GOT, not a PLT stub: one code page fewer on the data path.
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options(-fno-plt)
endif()
# The stack's switches as compare chains, not jump or value tables in .rodata: the data
# path then reads no constant page (each page it touches after a system call is a TLB
# miss).
set(UIW_CODEGEN)
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  set(UIW_CODEGEN -fno-jump-tables)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    list(APPEND UIW_CODEGEN -fno-tree-switch-conversion)
  endif()
endif()

# uiw_layer(name dep...): static library uiw_<name> from src/<name>/*.c
function(uiw_layer name)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.c)
  if(NOT srcs)
    return()
  endif()
  add_library(uiw_${name} STATIC ${srcs})
  target_include_directories(uiw_${name}
    PUBLIC ${CMAKE_SOURCE_DIR}/include
    PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(uiw_${name} PRIVATE ${UIW_WARNINGS} ${UIW_CODEGEN})
  set_target_properties(uiw_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  foreach(dep ${ARGN})
    if(TARGET uiw_${dep})
      target_link_libraries(uiw_${name} PUBLIC uiw_${dep})
    endif()
  endforeach()
  target_link_libraries(uiw_${name} PUBLIC Threads::Threads)
  set_property(GLOBAL APPEND PROPERTY UIW_LAYERS uiw_${name})
endfunction()

# uiw_library(): interface target uiw linking every layer (the whole stack).
function(uiw_library)
  get_property(layers GLOBAL PROPERTY UIW_LAYERS)
  add_library(uiw INTERFACE)
  target_link_libraries(uiw INTERFACE ${layers})
endfunction()

# uiw_program(name src... LIBS lib...): an executable with the project's warnings.
function(uiw_program name)
  cmake_parse_arguments(P "" "" "LIBS" ${ARGN})
  add_executable(${name} ${P_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE ${UIW_WARNINGS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  if(P_LIBS)
    target_link_libraries(${name} PRIVATE ${P_LIBS})
  else()
    target_link_libraries(${name} PRIVATE uiw)
  endif()
endfunction()

# uiw_public_library(name LAYERS layer... HEADERS file... DESCRIPTION text
#                    [REQUIRES public-library...] [PC_REQUIRES pkg-config-module...]
#                    [SOURCES file...] [LIBS_PRIVATE flag...])
# A library for users made of layers: lib<name>.so (SONAME lib<name>.so.UIW_ABI_VERSION,
# exporting only the UIW_EXTERN declarations of its headers, include/uiw/<file>) and
# lib<name>.a, both holding the layers' objects, and the pkg-config file <name>.pc.
# REQUIRES names public libraries this one calls (through their public API only: their
# internal symbols are not exported); PC_REQUIRES other pkg-config modules it needs (in
# its .pc file's Requires); SOURCES internal helpers of the layers below that it needs
# too, compiled into it (hidden); LIBS_PRIVATE the flags a static link adds.
# `cmake --install` puts the libraries in lib/, the headers in include/uiw/ and <name>.pc
# in lib/pkgconfig/. Targets: <name>_shared, <name>_static; the global property
# UIW_PUBLIC_LIBRARIES lists the names (the tests check each library's exports).
function(uiw_public_library name)
  cmake_parse_arguments(P "" "DESCRIPTION" "LAYERS;HEADERS;REQUIRES;PC_REQUIRES;SOURCES;LIBS_PRIVATE"
                        ${ARGN})
  set(objs)
  if(P_SOURCES)
    add_library(${name}_extra OBJECT ${P_SOURCES})
    target_include_directories(${name}_extra PRIVATE ${CMAKE_SOURCE_DIR}/include
                                                     ${CMAKE_SOURCE_DIR}/src)
    target_compile_options(${name}_extra PRIVATE ${UIW_WARNINGS} ${UIW_CODEGEN})
    set_target_properties(${name}_extra PROPERTIES POSITION_INDEPENDENT_CODE ON)
    list(APPEND objs $<TARGET_OBJECTS:${name}_extra>)
  endif()
  set(layers)
  foreach(l ${P_LAYERS})
    if(TARGET uiw_${l})
      list(APPEND objs $<TARGET_OBJECTS:uiw_${l}>)
      list(APPEND layers uiw_${l})
    endif()
  endforeach()
  add_library(${name}_shared SHARED ${objs})
  add_library(${name}_static STATIC ${objs})
  set_target_properties(${name}_shared PROPERTIES OUTPUT_NAME ${name}
    VERSION ${PROJECT_VERSION} SOVERSION ${UIW_ABI_VERSION})
  set_target_properties(${name}_static PROPERTIES OUTPUT_NAME ${name})
  # The layers' own libraries bring their dependencies (threads, ISA-L); their objects
  # are already in, so nothing else of them is linked.
  target_link_libraries(${name}_shared PRIVATE ${layers})
  target_link_libraries(${name}_static INTERFACE ${layers})
  foreach(t ${name}_shared ${name}_static)
    target_include_directories(${t} INTERFACE ${CMAKE_SOURCE_DIR}/include)
  endforeach()
  foreach(r ${P_REQUIRES})
    target_link_libraries(${name}_shared PUBLIC ${r}_shared)
    target_link_libraries(${name}_static INTERFACE ${r}_static)
  endforeach()
  if(NOT UIW_SANITIZE AND NOT UIW_TSAN)
    target_link_options(${name}_shared PRIVATE -Wl,--no-undefined)
  endif()
  set_property(GLOBAL APPEND PROPERTY UIW_PUBLIC_LIBRARIES ${name})
  set_property(TARGET ${name}_shared PROPERTY UIW_LAYERS ${layers})
  list(TRANSFORM P_HEADERS PREPEND ${CMAKE_SOURCE_DIR}/include/uiw/)
  set_property(TARGET ${name}_shared PROPERTY UIW_HEADERS ${P_HEADERS})

  install(TARGETS ${name}_shared ${name}_static
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${P_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/uiw)

  # pkg-config: the prefix is the one given when installing (cmake --install --prefix),
  # so the file is completed at install time.
  list(JOIN P_REQUIRES " " PC_REQUIRES_LIBS)
  list(JOIN P_PC_REQUIRES " " PC_REQUIRES_MODS)
  string(STRIP "${PC_REQUIRES_LIBS} ${PC_REQUIRES_MODS}" PC_REQUIRES)
  list(JOIN P_LIBS_PRIVATE " " PC_LIBS_PRIVATE)
  set(PC_NAME ${name})
  set(PC_DESCRIPTION ${P_DESCRIPTION})
  set(prefix "@prefix@")
  set(libdir "\${exec_prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(libdir "${CMAKE_INSTALL_LIBDIR}")
  endif()
  if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
    set(includedir "${CMAKE_INSTALL_INCLUDEDIR}")
  endif()
  set(pc_in ${CMAKE_BINARY_DIR}/pkgconfig/${name}.pc.in)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/pkgconfig.pc.in ${pc_in} @ONLY)
  set(pc_dir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  if(NOT IS_ABSOLUTE "${pc_dir}")
    set(pc_dir "\${CMAKE_INSTALL_PREFIX}/${pc_dir}")
  endif()
  # Written straight to its destination: installs into several prefixes may run at once.
  install(CODE "
    set(pc \"\$ENV{DESTDIR}${pc_dir}/${name}.pc\")
    message(STATUS \"Installing: \${pc}\")
    file(READ \"${pc_in}\" text)
    string(REPLACE \"@prefix@\" \"\${CMAKE_INSTALL_PREFIX}\" text \"\${text}\")
    file(WRITE \"\${pc}\" \"\${text}\")
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${pc}\")")
endfunction()

# uiw_man_links(page header): every function include/uiw/<header> declares gets a man
# page in section 3 that shows `page` (`man uiw_post_send` opens uiw_verbs(3)).
function(uiw_man_links page header)
  set(h ${CMAKE_SOURCE_DIR}/include/uiw/${header})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${h})
  file(READ ${h} text)
  string(REGEX MATCHALL "UIW_EXTERN[^;(]*[ *]uiw_[a-z0-9_]+\\(" decls "${text}")
  set(dir ${CMAKE_BINARY_DIR}/man3)
  set(files)
  foreach(d ${decls})
    string(REGEX REPLACE ".*[ *](uiw_[a-z0-9_]+)\\($" "\\1" name "${d}")
    file(CONFIGURE OUTPUT ${dir}/${name}.3 CONTENT ".so man3/${page}\n")
    list(APPEND files ${dir}/${name}.3)
  endforeach()
  install(FILES ${files} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
endfunction()
