# NFS tests: the server in-process on loopback (port 0), the tools as programs, raw RPC
# records for bad input, and the Linux kernel's NFS client and server in the siw VM rig.
target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/tools/run.c)
target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/tools)
foreach(tool uiw-nfsd uiw-nfs rpcrdma-decode)
  if(TARGET ${tool})
    add_dependencies(${runner} ${tool})
  endif()
endforeach()
target_compile_definitions(${runner} PRIVATE
  UIW_NFSD="$<TARGET_FILE:uiw-nfsd>" UIW_NFS="$<TARGET_FILE:uiw-nfs>")
set(UIW_TEST_TIMEOUT 120)
# The VM rig's helpers (spawn, wait for a marker, free ports) come from the interop tests.
target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/interop/interop.c)
target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/interop)
# rdma_* tests exit 77 in a build without the RPC layer.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/nfs/test_rdma.c uiw_nfs_rdma_lines
     REGEX "^TEST\\(rdma_[A-Za-z0-9_]+\\)")
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/nfs/test_conns.c uiw_nfs_conns_lines
     REGEX "^TEST\\([a-z]+_[A-Za-z0-9_]+\\)")
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/nfs/test_nfs4_cb_rdma.c uiw_nfs_cb_rdma_lines
     REGEX "^TEST\\(rdma_[A-Za-z0-9_]+\\)")
list(APPEND uiw_nfs_rdma_lines ${uiw_nfs_conns_lines} ${uiw_nfs_cb_rdma_lines})
set(uiw_nfs_rdma_tests)
foreach(line ${uiw_nfs_rdma_lines})
  string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "nfs.\\1" t "${line}")
  list(APPEND uiw_nfs_rdma_tests ${t})
endforeach()
list(REMOVE_DUPLICATES uiw_nfs_rdma_tests)
if(uiw_nfs_rdma_tests)
  cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL
                 set_tests_properties ${uiw_nfs_rdma_tests} PROPERTIES SKIP_RETURN_CODE 77)
endif()
# The README's demo (scripts/nfs-demo.sh, what scripts/run.sh runs) at a small scale: three
# sizes, both transports; tests/nfs/demo.sh checks its table, checksums and plots (gnuplot's
# SVG and PNG); 77 without the RPC layer.
add_test(NAME nfs.demo COMMAND bash ${CMAKE_SOURCE_DIR}/tests/nfs/demo.sh
         $<TARGET_FILE_DIR:uiw-nfs> ${CMAKE_CURRENT_BINARY_DIR}/nfs-demo)
set_tests_properties(nfs.demo PROPERTIES LABELS "nfs;tools" TIMEOUT 300 SKIP_RETURN_CODE 77
  ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
# tshark_* decode captures with Wireshark's NFS dissector: 77 (a skip) on a machine without
# tshark, a failure where the tools are required (UIW_ROOT_REQUIRED=1 or CI, as CI sets).
cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL
               set_tests_properties nfs.tshark_nfs_tcp nfs.tshark_nfs_rdma_v1
               nfs.tshark_nfs4_compound nfs.tshark_nfs4_server nfs.tshark_nfs4_callbacks
               PROPERTIES SKIP_RETURN_CODE 77)
# 1,000 connections take about 15 s in a release build and 70 to 110 s under the sanitizers
# on two busy cores.
cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL
               set_tests_properties nfs.rdma_tcp_thousand_connections PROPERTIES TIMEOUT 300)
# The NFSv4 XDR (xdr/nfs4.x), tested on its own (test_nfs4_xdr.c) and against Wireshark's
# dissector (test_tshark.c); the tests of uiw-nfsd's NFSv4.1 (test_nfs4_server.c) use it
# as a client.
target_link_libraries(${runner} PRIVATE uiw_nfs4_xdr)
# Allocations counted (alloc_count.c): the calls of the code linked into the runner.
target_link_options(${runner} PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc)
