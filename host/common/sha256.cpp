#include "common/sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include <openssl/evp.h>

#include "lra/status.h"

namespace lra::host {
namespace {

[[noreturn]] void openssl_failed(const char* what) {
  throw lra::Error(lra::ErrorKind::internal, std::string("SHA-256: OpenSSL ") + what + " failed");
}

std::string to_hex(const unsigned char* bytes, unsigned int n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * static_cast<std::size_t>(n), '0');
  for (unsigned int i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0x0f];
  }
  return out;
}

}  // namespace

void Sha256::CtxFree::operator()(evp_md_ctx_st* ctx) const noexcept { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) openssl_failed("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) openssl_failed("EVP_DigestInit_ex");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::string_view bytes) { update(bytes.data(), bytes.size()); }

void Sha256::update(const void* data, std::size_t size) {
  if (!ctx_) throw lra::Error(lra::ErrorKind::internal, "SHA-256: update() on a moved-from hasher");
  if (size == 0) return;
  if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) openssl_failed("EVP_DigestUpdate");
}

std::string Sha256::hex_digest() const {
  if (!ctx_) throw lra::Error(lra::ErrorKind::internal, "SHA-256: hex_digest() on a moved-from hasher");
  // Finalise a copy so that this hasher can keep going.
  std::unique_ptr<evp_md_ctx_st, CtxFree> copy(EVP_MD_CTX_new());
  if (!copy || EVP_MD_CTX_copy_ex(copy.get(), ctx_.get()) != 1) openssl_failed("EVP_MD_CTX_copy_ex");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(copy.get(), md, &n) != 1) openssl_failed("EVP_DigestFinal_ex");
  return to_hex(md, n);
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

std::optional<std::string> normalise_sha256(std::string s) {
  s = bare_sha256(std::move(s));
  if (s.size() != 64) return std::nullopt;
  for (char& c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string sha256_file(const std::filesystem::path& file) {
  auto fail = [&](int err) -> lra::Error {
    return lra::Error(lra::ErrorKind::usage,
                      "cannot read '" + file.string() + "' to hash it: " + std::strerror(err));
  };
  int fd = -1;
  do {
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw fail(errno);

  Sha256 h;
  std::vector<unsigned char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;  // e.g. EISDIR for a directory
      ::close(fd);
      throw fail(err);
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return h.hex_digest();
}

}  // namespace lra::host
