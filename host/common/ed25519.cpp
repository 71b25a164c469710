#include "common/ed25519.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {
namespace {

struct BioFree {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};

// A key file is small and regular: reading stops after 64 KiB, so a device
// (--sign-key /dev/zero) or a FIFO is refused instead of read forever.
std::string read_key_file(const std::filesystem::path& file) {
  constexpr std::streamsize kMaxKeyBytes = 64 << 10;
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw Error(ErrorKind::usage, "key file " + file.string() + " is a directory; give the .pem file");
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec))
    throw Error(ErrorKind::usage, "key file " + file.string() + " is not a regular file; give the .pem file");
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::usage, "cannot read key file " + file.string() + ": " + std::strerror(errno) +
                                      " (make one with `lrahost keygen --out DIR`)");
  std::string text(static_cast<size_t>(kMaxKeyBytes) + 1, '\0');
  in.read(text.data(), kMaxKeyBytes + 1);
  text.resize(static_cast<size_t>(in.gcount()));
  if (static_cast<std::streamsize>(text.size()) > kMaxKeyBytes)
    throw Error(ErrorKind::usage, "key file " + file.string() + " is not a PEM key (too large)");
  return text;
}

// OpenSSL's passphrase callback: none is given, so an encrypted key fails to
// load here instead of OpenSSL prompting on the terminal of a batch job.
int no_passphrase(char*, int, int, void*) { return -1; }

std::string raw_public(EVP_PKEY* k) {
  size_t len = 32;
  std::string raw(32, '\0');
  if (EVP_PKEY_get_raw_public_key(k, reinterpret_cast<unsigned char*>(raw.data()), &len) != 1 || len != 32)
    throw Error(ErrorKind::internal, "cannot read an Ed25519 public key");
  return raw;
}

std::string pem_of(EVP_PKEY* k, bool priv) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  const int ok = priv ? PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr)
                      : PEM_write_bio_PUBKEY(bio.get(), k);
  if (ok != 1) throw Error(ErrorKind::internal, "cannot write a PEM key");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

void PkeyFree::operator()(evp_pkey_st* k) const noexcept { EVP_PKEY_free(k); }

void generate_ed25519_pem(std::string* private_pem, std::string* public_pem) {
  EVP_PKEY* raw = nullptr;
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr),
                                                                  EVP_PKEY_CTX_free);
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1)
    throw Error(ErrorKind::internal, "OpenSSL could not generate an Ed25519 key");
  Pkey key(raw);
  *private_pem = pem_of(key.get(), true);
  *public_pem = pem_of(key.get(), false);
}

Ed25519PrivateKey load_ed25519_private_key(const std::filesystem::path& file) {
  const std::string text = read_key_file(file);
  if (text.find("-----BEGIN PUBLIC KEY-----") != std::string::npos)
    throw Error(ErrorKind::usage, file.string() + " is a public key; --sign-key takes the private key file "
                                                  "(lrahost-key.pem, not lrahost-key.pub.pem)");
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (text.find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string::npos ||
      text.find("Proc-Type: 4,ENCRYPTED") != std::string::npos)
    throw Error(ErrorKind::usage, file.string() + " is protected by a passphrase, which lrahost cannot ask for in a "
                                                  "batch run; use an unencrypted key (`lrahost keygen --out DIR`) "
                                                  "kept in a private folder");
  Pkey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key)
    throw Error(ErrorKind::usage, file.string() + " is not a PEM private key (make one with `lrahost keygen --out DIR`)");
  if (EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519)
    throw Error(ErrorKind::usage, file.string() + " is a " + OBJ_nid2sn(EVP_PKEY_id(key.get())) +
                                      " key; results are signed with Ed25519 keys (`lrahost keygen --out DIR`)");
  Ed25519PrivateKey out;
  out.public_raw = raw_public(key.get());
  out.key_id = ed25519_key_id(out.public_raw);
  out.key = std::move(key);
  return out;
}

std::string load_ed25519_public_key(const std::filesystem::path& file) {
  const std::string text = read_key_file(file);
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  Pkey key(PEM_read_bio_PUBKEY(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) throw Error(ErrorKind::usage, file.string() + " is not a PEM public key");
  if (EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519)
    throw Error(ErrorKind::usage, file.string() + " is not an Ed25519 public key");
  return raw_public(key.get());
}

std::string ed25519_key_id(const std::string& public_raw) { return "ed25519:" + sha256_hex(public_raw).substr(0, 16); }

std::string ed25519_sign(const Ed25519PrivateKey& key, const std::string& message) {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  std::string sig(64, '\0');
  size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1 ||
      len != 64)
    throw Error(ErrorKind::internal, "OpenSSL could not sign with key " + key.key_id);
  return sig;
}

bool ed25519_verify(const std::string& public_raw, const std::string& message, const std::string& signature) {
  if (public_raw.size() != 32 || signature.size() != 64) return false;
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(public_raw.data()), 32));
  if (!key) return false;
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

std::string base64_encode(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool base64_decode(const std::string& text, std::string* bytes) {
  if (text.empty() || text.size() % 4 != 0 || text.size() > (1 << 20)) return false;
  for (char c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) return false;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t pad = 0;
  if (text.size() >= 1 && text[text.size() - 1] == '=') ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  // Canonical form only: re-encoding must give the same text.
  if (base64_encode(out) != text) return false;
  *bytes = std::move(out);
  return true;
}

}  // namespace lra::host
