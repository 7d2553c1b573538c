# Interop tests: iwping (built first, its path compiled in), tshark, the siw VM rig.
if(TARGET iwping)
  add_dependencies(${runner} iwping)
  target_compile_definitions(${runner} PRIVATE UIW_IWPING="$<TARGET_FILE:iwping>")
endif()
set(UIW_TEST_TIMEOUT 120)
