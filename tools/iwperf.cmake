# perftest's entry points: iw_write_bw ... iw_send_lat are links to iwperf, which reads its
# name (argv[0]) to take perftest's options; each has a man page that shows iwperf(1).
set(uiw_perftest_names iw_write_bw iw_read_bw iw_send_bw iw_write_lat iw_read_lat iw_send_lat)
foreach(link ${uiw_perftest_names})
  add_custom_command(TARGET iwperf POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E create_symlink iwperf ${link}
    WORKING_DIRECTORY $<TARGET_FILE_DIR:iwperf> VERBATIM)
  install(CODE "file(CREATE_LINK iwperf
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/${link}\" SYMBOLIC)")
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/man1/${link}.1 CONTENT ".so man1/iwperf.1\n")
  install(FILES ${CMAKE_BINARY_DIR}/man1/${link}.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endforeach()
