# bench-nfs runs uiw-nfsd and uiw-nfs built alongside it.
foreach(tool uiw-nfsd uiw-nfs)
  if(TARGET ${tool})
    add_dependencies(bench-nfs ${tool})
  endif()
endforeach()
target_compile_definitions(bench-nfs PRIVATE UIW_NFSD_PATH="$<TARGET_FILE:uiw-nfsd>"
                                             UIW_NFS_PATH="$<TARGET_FILE:uiw-nfs>")
# libnfs's asynchronous RPC API: the pipelined TCP baseline of GETATTR (Debian: libnfs-dev).
find_path(LIBNFS_INCLUDE_DIR nfsc/libnfs-raw.h)
find_library(LIBNFS_LIBRARY NAMES nfs)
if(LIBNFS_INCLUDE_DIR AND LIBNFS_LIBRARY)
  target_include_directories(bench-nfs PRIVATE ${LIBNFS_INCLUDE_DIR})
  target_link_libraries(bench-nfs PRIVATE ${LIBNFS_LIBRARY})
  target_compile_definitions(bench-nfs PRIVATE UIW_HAVE_LIBNFS=1)
else()
  message(STATUS "libnfs not found: bench-nfs has no pipelined TCP baseline (libnfs-dev)")
endif()
