# rbench.x through rpcgen (header and XDR routines): generated code is not ours, so it
# compiles without the project's warnings; its xdr_bytes is uiw_xdr_bytes, so that a
# server decodes a WRITE's Read chunk in place (no copy).
if(RPCGEN)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/rpcrdma-bench-gen)
  file(MAKE_DIRECTORY ${gen})
  set(x ${CMAKE_CURRENT_SOURCE_DIR}/rpcrdma-bench/rbench.x)
  add_custom_command(
    OUTPUT ${gen}/rbench.h ${gen}/rbench_xdr.c
    COMMAND ${CMAKE_COMMAND} -E copy ${x} ${gen}/rbench.x
    COMMAND ${CMAKE_COMMAND} -E rm -f rbench.h rbench_xdr.c
    COMMAND ${RPCGEN} -h -o rbench.h rbench.x
    COMMAND ${RPCGEN} -c -o rbench_xdr.c rbench.x
    DEPENDS ${x}
    WORKING_DIRECTORY ${gen}
    COMMENT "rpcgen rbench.x"
    VERBATIM)
  set_source_files_properties(${gen}/rbench_xdr.c PROPERTIES COMPILE_OPTIONS "-w;-include;uiw/rpc.h"
                              COMPILE_DEFINITIONS "xdr_bytes=uiw_xdr_bytes")
  target_sources(rpcrdma-bench PRIVATE ${gen}/rbench_xdr.c)
  target_include_directories(rpcrdma-bench PRIVATE ${gen})
  target_link_libraries(rpcrdma-bench PRIVATE pthread m)
  target_compile_definitions(rpcrdma-bench PRIVATE UIW_VERSION="${PROJECT_VERSION}")
endif()
