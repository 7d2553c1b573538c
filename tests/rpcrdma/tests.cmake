# The rpcrdma runner: differential tests link the rpcgen-generated reference codec
# (xdr/CMakeLists.txt) and libtirpc.
if(TARGET rpcrdma_xdr_gen)
  target_link_libraries(${runner} PRIVATE rpcrdma_xdr_gen)
  target_compile_definitions(${runner} PRIVATE UIW_HAVE_RPCGEN=1)
endif()
# The differential tests run 100,000 messages each: well under 30 s with ASan, but
# slower under valgrind (scripts/valgrind.sh) on a loaded machine.
set(UIW_TEST_TIMEOUT 240)
