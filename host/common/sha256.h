// SHA-256 (OpenSSL EVP) of strings, byte ranges and files, as lowercase hex.
// Used for plugin files, manifests, data fingerprints and result digests.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of this header

namespace lra::host {

// Incremental hashing. hex_digest() does not end the computation: it reports
// the digest of everything fed so far, and update() may continue afterwards.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  void update(const void* data, std::size_t size);
  std::string hex_digest() const;  // 64 lowercase hex digits

 private:
  struct CtxFree {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, CtxFree> ctx_;
};

std::string sha256_hex(std::string_view bytes);

// `s` without a leading "sha256:" (results write plugin and model hashes either way).
inline std::string bare_sha256(std::string s) {
  if (s.rfind("sha256:", 0) == 0) s.erase(0, 7);
  return s;
}

// "sha256:" prefix dropped, lowercased; nullopt unless 64 hex digits remain.
std::optional<std::string> normalise_sha256(std::string s);

// Streams the file. Throws lra::Error(usage) naming the path if it cannot be
// read (missing, a directory, no permission, I/O error).
std::string sha256_file(const std::filesystem::path& file);

}  // namespace lra::host
