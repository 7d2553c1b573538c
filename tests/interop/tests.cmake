# Interop tests: iwping (built first, its path compiled in), tshark, the siw VM rig.
if(TARGET iwping)
  add_dependencies(${runner} iwping)
  target_compile_definitions(${runner} PRIVATE UIW_IWPING="$<TARGET_FILE:iwping>")
endif()
set(UIW_TEST_TIMEOUT 120)

# siwvm_* tests exit 77 when this machine cannot build or run the VM (scripts/siwvm.sh
# status 77): ctest shows them as skipped, never as passed. A rig that fails to build or
# boot fails them, and so does one that is not available where UIW_SIWVM_REQUIRED=1 (CI).
# One VM at a time and nothing beside it (PROCESSORS 2): QEMU's emulation keeps two cores
# busy, and tests beside it would time out or have their races hidden by its load.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/interop/test_siwvm.c uiw_siwvm_lines
     REGEX "^TEST\\(siwvm_[A-Za-z0-9_]+\\)")
set(uiw_siwvm_tests)
foreach(line ${uiw_siwvm_lines})
  string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "interop.\\1" t "${line}")
  list(APPEND uiw_siwvm_tests ${t})
endforeach()
if(uiw_siwvm_tests)
  cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL
                 set_tests_properties ${uiw_siwvm_tests} PROPERTIES SKIP_RETURN_CODE 77
                 RESOURCE_LOCK siwvm PROCESSORS 2)
endif()
