# test-tools runs the built tools; make sure they are built first.
foreach(tool rpcrdma-decode rpcrdma-ping rpcrdma-bench)
  if(TARGET ${tool})
    add_dependencies(${runner} ${tool})
  endif()
endforeach()
# Random headers from the codec's tests, used as the differential oracle's input.
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/rpcrdma/rnd.c)
  target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/rpcrdma/rnd.c)
  target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/rpcrdma)
endif()
