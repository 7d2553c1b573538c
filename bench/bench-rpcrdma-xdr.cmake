# bench-rpcrdma-xdr compares the codec with the rpcgen-generated routines on libtirpc.
if(TARGET rpcrdma_xdr_gen)
  target_link_libraries(bench-rpcrdma-xdr PRIVATE rpcrdma_xdr_gen)
  target_compile_definitions(bench-rpcrdma-xdr PRIVATE UIW_HAVE_RPCGEN=1)
endif()
