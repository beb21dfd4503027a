# Writes OUTPUT: a C++ file defining tessera::xpu::kKernelSource, the
# concatenation of the OpenCL C files in SOURCES (comma-separated), in order.
string(REPLACE "," ";" files "${SOURCES}")
set(text "")
foreach(file IN LISTS files)
  file(READ "${file}" body)
  get_filename_component(name "${file}" NAME)
  string(APPEND text "// ---- ${name}\n${body}\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from kernels/xpu/cl/*.cl by embed_sources.cmake.\n#include \"kernels/xpu/program_source.h\"\n\nnamespace tessera::xpu {\n\nconst char* const kKernelSource = R\"tessera_cl(\n${text})tessera_cl\";\n\n}  // namespace tessera::xpu\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
