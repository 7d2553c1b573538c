# The RPC layer's tests run a server and clients on loopback (ports chosen by the kernel).
set(UIW_TEST_TIMEOUT 120)
# testprog.x through rpcgen (header, XDR, client stubs, server dispatch): generated code is
# not ours, so it compiles without the project's warnings.
if(RPCGEN)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/rpcgen)
  file(MAKE_DIRECTORY ${gen})
  set(x ${CMAKE_CURRENT_SOURCE_DIR}/rpc/testprog.x)
  add_custom_command(
    OUTPUT ${gen}/testprog.h ${gen}/testprog_xdr.c ${gen}/testprog_clnt.c ${gen}/testprog_svc.c
    COMMAND ${CMAKE_COMMAND} -E copy ${x} ${gen}/testprog.x
    COMMAND ${CMAKE_COMMAND} -E rm -f testprog.h testprog_xdr.c testprog_clnt.c testprog_svc.c
    COMMAND ${RPCGEN} -h -o testprog.h testprog.x
    COMMAND ${RPCGEN} -c -o testprog_xdr.c testprog.x
    COMMAND ${RPCGEN} -l -o testprog_clnt.c testprog.x
    COMMAND ${RPCGEN} -m -o testprog_svc.c testprog.x
    DEPENDS ${x}
    WORKING_DIRECTORY ${gen}
    COMMENT "rpcgen testprog.x"
    VERBATIM)
  set(gsrcs ${gen}/testprog_xdr.c ${gen}/testprog_clnt.c ${gen}/testprog_svc.c)
  set_source_files_properties(${gsrcs} PROPERTIES COMPILE_OPTIONS "-w")
  target_sources(${runner} PRIVATE ${gsrcs})
  target_include_directories(${runner} PRIVATE ${gen})
  target_compile_definitions(${runner} PRIVATE UIW_HAVE_RPCGEN=1)
endif()
