# SHA-256 of --verify from OpenSSL's libcrypto (libssl-dev).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
target_link_libraries(uiw-nfs PRIVATE OpenSSL::Crypto)
target_compile_definitions(uiw-nfs PRIVATE UIW_VERSION="${PROJECT_VERSION}")
