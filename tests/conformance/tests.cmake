# The capture test reads the stack's pcap files back with the wire tests' reader.
target_sources(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/wire/pcap_reader.c)
target_include_directories(${runner} PRIVATE ${CMAKE_SOURCE_DIR}/tests/wire)
