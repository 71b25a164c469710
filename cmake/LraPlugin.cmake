# lra_add_plugin(<target> SOURCES <src>... [LIBRARIES <lib>...] [OUTPUT_DIRECTORY <dir>])
#
# Builds an lrahost plugin (mixer or task) the way a third party would: a
# MODULE library against LraSdk::sdk, hidden visibility so only the entry
# point is exported, every symbol resolved at link time.
#
# One definition serves both uses: the lrahost tree includes this file
# directly, and the installed SDK package (find_package(LraSdk)) ships it next
# to LraSdkConfig.cmake. Out of tree the file is lib<target>.so in the current
# binary directory unless OUTPUT_DIRECTORY says otherwise.
function(lra_add_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES;EXPORTS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "lra_add_plugin(${target}): no SOURCES given")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lra_add_plugin(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}; "
                        "use SOURCES, LIBRARIES, EXPORTS, OUTPUT_DIRECTORY")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE LraSdk::sdk ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  # In tree the built-in plugins are named lra_mixer_<name>.so, without "lib".
  if(DEFINED LRA_PLUGIN_FILE_PREFIX)
    set_target_properties(${target} PROPERTIES PREFIX "${LRA_PLUGIN_FILE_PREFIX}")
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED LRA_PLUGIN_OUTPUT_DIR)
    # A built-in plugin of the lrahost tree: `cmake --install` ships it.
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${LRA_PLUGIN_OUTPUT_DIR}")
    set_property(GLOBAL APPEND PROPERTY LRA_BUILTIN_PLUGIN_TARGETS ${target})
  endif()
  if(NOT APPLE)
    # Export the entry point alone (template instantiations from LibTorch
    # headers would otherwise leak out as weak symbols), plus any EXPORTS a
    # built-in needs (the Python plugin's class opener), and fail at link
    # time, not at load time, on any unresolved symbol.
    set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}.exports")
    set(exported "lra_plugin_entry;")
    foreach(sym ${ARG_EXPORTS})
      string(APPEND exported " ${sym};")
    endforeach()
    file(WRITE "${script}" "{ global: ${exported} local: *; };\n")
    target_link_options(${target} PRIVATE "LINKER:--no-undefined" "LINKER:--version-script=${script}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${script}")
  endif()
  # The lrahost tree shares one precompiled header; an installed SDK has none.
  if(TARGET lra_pch)
    target_precompile_headers(${target} REUSE_FROM lra_pch)
  endif()
endfunction()
