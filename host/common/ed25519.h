// Ed25519 signatures (OpenSSL 3 EVP): key pairs in PEM files, signing, and
// checking a signature against a raw 32-byte public key. A key is named by
// its key id, "ed25519:" + the first 16 hex digits of the SHA-256 of its raw
// public key, which is what results and messages show.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace lra::host {

struct PkeyFree {
  void operator()(evp_pkey_st* k) const noexcept;
};
using Pkey = std::unique_ptr<evp_pkey_st, PkeyFree>;

struct Ed25519PrivateKey {
  Pkey key;
  std::string public_raw;  // 32 bytes
  std::string key_id;
};

// A fresh key pair as PEM text (PKCS#8 private, SubjectPublicKeyInfo public).
void generate_ed25519_pem(std::string* private_pem, std::string* public_pem);

// Loads a private key file. Throws lra::Error(usage) naming the file when it
// cannot be read, is not a PEM private key (a public key given by mistake is
// said so), or is not Ed25519.
Ed25519PrivateKey load_ed25519_private_key(const std::filesystem::path& file);

// Loads a public key file: its raw 32 bytes. Throws lra::Error(usage) as above.
std::string load_ed25519_public_key(const std::filesystem::path& file);

std::string ed25519_key_id(const std::string& public_raw);

// 64-byte signature of `message`.
std::string ed25519_sign(const Ed25519PrivateKey& key, const std::string& message);

// Whether `signature` is `public_raw`'s signature of `message` (false for
// malformed sizes, never throws).
bool ed25519_verify(const std::string& public_raw, const std::string& message, const std::string& signature);

// Standard base64 (RFC 4648, with padding); decode returns false for anything else.
std::string base64_encode(const std::string& bytes);
bool base64_decode(const std::string& text, std::string* bytes);

}  // namespace lra::host
