# bench-nfs runs uiw-nfsd and uiw-nfs built alongside it.
foreach(tool uiw-nfsd uiw-nfs)
  if(TARGET ${tool})
    add_dependencies(bench-nfs ${tool})
  endif()
endforeach()
target_compile_definitions(bench-nfs PRIVATE UIW_NFSD_PATH="$<TARGET_FILE:uiw-nfsd>"
                                             UIW_NFS_PATH="$<TARGET_FILE:uiw-nfs>")
