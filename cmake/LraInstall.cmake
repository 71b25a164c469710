# What `cmake --install <build> --prefix <dir>` puts under <dir>:
#
#   bin/lrahost                     the host (component "host")
#   lib/lrahost/plugins/*.so        built-in mixer and task plugins, where the host looks
#                                   for them (<bin>/../lib/lrahost/plugins)
#   include/lra/*.h                 the SDK headers, nothing else (component "sdk")
#   lib/cmake/LraSdk/               the CMake package: find_package(LraSdk) gives
#                                   LraSdk::sdk and lra_add_plugin()
#
# Host internals (host/*, its static libraries, tests) are never installed.
# The package's version is the SDK ABI version (lra/abi.h), with
# SameMajorVersion compatibility: find_package(LraSdk 1.1) accepts any 1.y
# with y >= 1, exactly the plugins a 1.y host loads (docs/abi.md).
include(CMakePackageConfigHelpers)

file(STRINGS "${PROJECT_SOURCE_DIR}/sdk/include/lra/abi.h" abi_defines REGEX "^#define LRA_ABI_M(AJ|IN)OR ")
string(REGEX MATCH "LRA_ABI_MAJOR ([0-9]+)" _ "${abi_defines}")
set(LRA_SDK_ABI_MAJOR "${CMAKE_MATCH_1}")
string(REGEX MATCH "LRA_ABI_MINOR ([0-9]+)" _ "${abi_defines}")
set(LRA_SDK_ABI_MINOR "${CMAKE_MATCH_1}")
if(LRA_SDK_ABI_MAJOR STREQUAL "" OR LRA_SDK_ABI_MINOR STREQUAL "")
  message(FATAL_ERROR "cmake/LraInstall.cmake: cannot read LRA_ABI_MAJOR/LRA_ABI_MINOR from sdk/include/lra/abi.h")
endif()

set(LRA_SDK_CMAKE_DIR lib/cmake/LraSdk)

# --- SDK ---------------------------------------------------------------------
install(DIRECTORY "${PROJECT_SOURCE_DIR}/sdk/include/lra" DESTINATION include COMPONENT sdk
        FILES_MATCHING PATTERN "*.h")
install(TARGETS lra_sdk EXPORT LraSdkTargets COMPONENT sdk)
install(EXPORT LraSdkTargets NAMESPACE LraSdk:: DESTINATION ${LRA_SDK_CMAKE_DIR} COMPONENT sdk)
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/LraSdkConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cmake/LraSdkConfig.cmake"
  INSTALL_DESTINATION ${LRA_SDK_CMAKE_DIR})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/cmake/LraSdkConfigVersion.cmake"
  VERSION ${LRA_SDK_ABI_MAJOR}.${LRA_SDK_ABI_MINOR}
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/cmake/LraSdkConfig.cmake"
  "${PROJECT_BINARY_DIR}/cmake/LraSdkConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/LraTorch.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/LraPlugin.cmake"
  DESTINATION ${LRA_SDK_CMAKE_DIR} COMPONENT sdk)

# --- host and built-in plugins -------------------------------------------------
# Keep the link-time library paths (a pip torch's lib/) in the installed
# files' RPATH: CMake would otherwise strip them and the host would not start.
get_property(lra_builtin_plugins GLOBAL PROPERTY LRA_BUILTIN_PLUGIN_TARGETS)
if(TARGET lrahost)
  set_target_properties(lrahost PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS lrahost RUNTIME DESTINATION bin COMPONENT host)
endif()
if(lra_builtin_plugins)
  set_target_properties(${lra_builtin_plugins} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS ${lra_builtin_plugins} LIBRARY DESTINATION lib/lrahost/plugins COMPONENT host)
endif()
