# bench-iwperf runs the iwperf tool built alongside it.
if(TARGET iwperf)
  add_dependencies(bench-iwperf iwperf)
  target_compile_definitions(bench-iwperf PRIVATE IWPERF_PATH="$<TARGET_FILE:iwperf>")
endif()
