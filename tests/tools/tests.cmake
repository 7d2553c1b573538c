# test-tools runs the built tools; make sure they are built first. Every tool follows the
# command-line conventions (test_cli.c); the iwperf and iwping tests start their servers
# with the iwperf tests' helpers.
foreach(tool rpcrdma-decode rpcrdma-ping rpcrdma-bench iwperf iwping uiw-selfcheck uiw-nfs uiw-nfsd)
  if(TARGET ${tool})
    add_dependencies(${runner} ${tool})
  endif()
endforeach()
# The benchmarks' own checks (built with the benchmarks: not in the TSan tree).
if(TARGET bench-rpcrdma-xdr)
  target_compile_definitions(${runner} PRIVATE UIW_BENCH_XDR="$<TARGET_FILE:bench-rpcrdma-xdr>")
  add_dependencies(${runner} bench-rpcrdma-xdr)
endif()
if(TARGET bench-nfs)
  target_compile_definitions(${runner} PRIVATE UIW_BENCH_NFS="$<TARGET_FILE:bench-nfs>")
  add_dependencies(${runner} bench-nfs)
endif()
if(TARGET bench-iwperf)
  target_compile_definitions(${runner} PRIVATE UIW_BENCH_IWPERF="$<TARGET_FILE:bench-iwperf>")
  add_dependencies(${runner} bench-iwperf)
endif()
if(TARGET bench-sendfile)
  target_compile_definitions(${runner} PRIVATE UIW_BENCH_SENDFILE="$<TARGET_FILE:bench-sendfile>")
  add_dependencies(${runner} bench-sendfile)
endif()
cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL
               set_tests_properties tools.bench_xdr_counts_both_sides tools.bench_nfs_fair_ratios
               tools.bench_nfs_alternates_order tools.bench_iwperf_both_baselines
               tools.bench_sendfile_ratios PROPERTIES SKIP_RETURN_CODE 77)
target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/perf/perf_util.c)
target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/perf)
set(UIW_TEST_TIMEOUT 120)
# Random headers from the codec's tests, used as the differential oracle's input.
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/rpcrdma/rnd.c)
  target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/rpcrdma/rnd.c)
  target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/rpcrdma)
endif()
# The kernel interop test (siwvm_*): the VM rig's helpers come from the interop tests, and
# it runs uiw-nfs against the kernel's NFS server for a capture with chunk lists.
target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/interop/interop.c)
target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/interop)
if(TARGET uiw-nfs)
  add_dependencies(${runner} uiw-nfs)
  target_compile_definitions(${runner} PRIVATE UIW_NFS="$<TARGET_FILE:uiw-nfs>")
else()
  target_compile_definitions(${runner} PRIVATE UIW_NFS="")
endif()
