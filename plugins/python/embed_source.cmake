# Writes IN (a text file) to OUT as a C++ raw string constant kBridgeSource.
file(READ ${IN} text)
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n#pragma once\nstatic const char* kBridgeSource = R\"LRAPY(${text})LRAPY\";\n")
