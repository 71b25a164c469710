#include "plugins/elf_section.h"

#include <elf.h>

#include <cstring>
#include <fstream>

#include "lra/status.h"

namespace lra::host {
namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& why) {
  throw Error(ErrorKind::plugin, "'" + file.string() + "' is not a loadable plugin: " + why);
}

// Bounds-checked read of `n` bytes at `off` (the file may be hostile or truncated).
void read_at(std::ifstream& in, uint64_t size, uint64_t off, void* dst, uint64_t n,
             const std::filesystem::path& file) {
  if (off > size || n > size - off) fail(file, "truncated ELF file");
  in.seekg(static_cast<std::streamoff>(off));
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
  if (!in) fail(file, "read error");
}

}  // namespace

std::optional<std::vector<char>> read_elf_section(const std::filesystem::path& file,
                                                  const std::string& section) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) fail(file, "cannot read file (" + ec.message() + ")");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open file");

  Elf64_Ehdr eh{};
  char magic[SELFMAG] = {};
  if (size < SELFMAG) fail(file, "not an ELF file (" + std::to_string(size) + " bytes)");
  read_at(in, size, 0, magic, SELFMAG, file);
  if (std::memcmp(magic, ELFMAG, SELFMAG) != 0) fail(file, "not an ELF file");
  if (size < sizeof eh) fail(file, "truncated ELF file");
  read_at(in, size, 0, &eh, sizeof eh, file);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) fail(file, "not a 64-bit ELF file");
  if (eh.e_type != ET_DYN) fail(file, "not a shared library (ELF type " + std::to_string(eh.e_type) + ")");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum)
    fail(file, "ELF section table missing or malformed");

  if (eh.e_shoff > size || sizeof(Elf64_Shdr) * eh.e_shnum > size - eh.e_shoff) fail(file, "truncated ELF file");
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  read_at(in, size, eh.e_shoff, sh.data(), sizeof(Elf64_Shdr) * sh.size(), file);
  const auto& strtab = sh[eh.e_shstrndx];
  // Sizes come from the file: check them against it before allocating anything.
  if (strtab.sh_offset > size || strtab.sh_size > size - strtab.sh_offset) fail(file, "truncated ELF file");
  std::vector<char> names(strtab.sh_size + 1, '\0');
  read_at(in, size, strtab.sh_offset, names.data(), strtab.sh_size, file);

  for (const auto& s : sh) {
    if (s.sh_name >= strtab.sh_size) continue;
    if (section != &names[s.sh_name]) continue;
    if (s.sh_type == SHT_NOBITS) fail(file, "section " + section + " has no file contents");
    if (s.sh_offset > size || s.sh_size > size - s.sh_offset) fail(file, "truncated ELF file");
    std::vector<char> bytes(s.sh_size);
    read_at(in, size, s.sh_offset, bytes.data(), bytes.size(), file);
    return bytes;
  }
  return std::nullopt;
}

}  // namespace lra::host
