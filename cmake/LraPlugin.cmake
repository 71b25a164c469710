# lra_add_plugin(<target> SOURCES <src>... [LIBRARIES <lib>...] [OUTPUT_DIRECTORY <dir>])
#
# Builds an lrahost plugin (mixer or task) the way a third party would: a
# MODULE library against lrahost::sdk, hidden visibility so only the entry
# point is exported, every symbol resolved at link time.
function(lra_add_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE lrahost::sdk ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED LRA_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${LRA_PLUGIN_OUTPUT_DIR}")
  endif()
  if(NOT APPLE)
    # Export the entry point alone (template instantiations from LibTorch
    # headers would otherwise leak out as weak symbols) and fail at link time,
    # not at load time, on any unresolved symbol.
    set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}.exports")
    file(WRITE "${script}" "{ global: lra_plugin_entry; local: *; };\n")
    target_link_options(${target} PRIVATE "LINKER:--no-undefined" "LINKER:--version-script=${script}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${script}")
  endif()
  if(TARGET lra_pch)
    target_precompile_headers(${target} REUSE_FROM lra_pch)
  endif()
endfunction()
