# NFS tests: the server in-process on loopback (port 0), the tools as programs, raw RPC
# records for bad input, and the Linux kernel's NFS client and server in the siw VM rig.
target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/tools/run.c)
target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/tools)
foreach(tool uiw-nfsd uiw-nfs)
  if(TARGET ${tool})
    add_dependencies(${runner} ${tool})
  endif()
endforeach()
target_compile_definitions(${runner} PRIVATE
  UIW_NFSD="$<TARGET_FILE:uiw-nfsd>" UIW_NFS="$<TARGET_FILE:uiw-nfs>")
set(UIW_TEST_TIMEOUT 120)
