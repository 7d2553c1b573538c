target_compile_definitions(uiw-nfsd PRIVATE UIW_VERSION="${PROJECT_VERSION}")
