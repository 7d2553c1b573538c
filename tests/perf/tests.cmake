# test-perf: iwperf end to end (the tests run the built iwperf binary, and tshark on its
# captures) plus unit tests of iwperf's statistics, options, control messages and reports.
set(IWPERF_DIR ${CMAKE_SOURCE_DIR}/tools/iwperf)
target_sources(${runner} PRIVATE ${IWPERF_DIR}/stats.c ${IWPERF_DIR}/opts.c ${IWPERF_DIR}/report.c)
target_include_directories(${runner} PRIVATE ${IWPERF_DIR})
if(TARGET iwperf)
  add_dependencies(${runner} iwperf)
  target_compile_definitions(${runner} PRIVATE IWPERF_BIN="$<TARGET_FILE:iwperf>")
endif()
if(TSHARK)
  target_compile_definitions(${runner} PRIVATE TSHARK_BIN="${TSHARK}")
endif()
set(UIW_TEST_TIMEOUT 120)
