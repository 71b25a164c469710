// Ed25519 signatures of results (common/ed25519, results/signature): a
// signature binds the digest to a key; any edit, a swapped key or a copied
// signature is caught, and key files are checked with clear errors.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "common/ed25519.h"
#include "lra/status.h"
#include "results/result.h"
#include "results/signature.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct KeyDir {
  fs::path dir;
  Ed25519PrivateKey key;
  KeyDir() {
    char t[] = "/tmp/lra-sign-test-XXXXXX";
    dir = mkdtemp(t);
    std::string priv, pub;
    generate_ed25519_pem(&priv, &pub);
    std::ofstream(dir / "k.pem") << priv;
    std::ofstream(dir / "k.pub.pem") << pub;
    key = load_ed25519_private_key(dir / "k.pem");
  }
  ~KeyDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

json signed_result(const Ed25519PrivateKey& key) {
  json r = seal(json{{"schema", kResultSchema}, {"metrics", {{"test_accuracy", 0.5}}}});
  r["signature"] = sign_digest(key, r["digest"].get<std::string>());
  return r;
}

TEST(Ed25519, SignAndVerifyRoundTrip) {
  KeyDir k;
  EXPECT_EQ(k.key.public_raw.size(), 32u);
  EXPECT_EQ(k.key.key_id.rfind("ed25519:", 0), 0u);
  EXPECT_EQ(k.key.key_id.size(), 8u + 16u);
  EXPECT_EQ(load_ed25519_public_key(k.dir / "k.pub.pem"), k.key.public_raw);
  const std::string sig = ed25519_sign(k.key, "message");
  EXPECT_TRUE(ed25519_verify(k.key.public_raw, "message", sig));
  EXPECT_FALSE(ed25519_verify(k.key.public_raw, "messagE", sig));
  EXPECT_FALSE(ed25519_verify(k.key.public_raw, "message", sig.substr(0, 63)));
}

TEST(Ed25519, Base64IsStrict) {
  std::string out;
  EXPECT_TRUE(base64_decode(base64_encode("\x01\x02\x03\x04"), &out));
  EXPECT_EQ(out, "\x01\x02\x03\x04");
  EXPECT_FALSE(base64_decode("AQID\n", &out));
  EXPECT_FALSE(base64_decode("AQI", &out));
  EXPECT_FALSE(base64_decode("AQJ=", &out));  // non-canonical trailing bits
}

TEST(Signature, ASignedResultVerifiesAndKeepsItsDigest) {
  KeyDir k;
  const json r = signed_result(k.key);
  EXPECT_EQ(compute_digest(r), r["digest"]);  // signing did not change the digest
  const SignatureCheck c = check_signature(r);
  EXPECT_TRUE(c.present);
  EXPECT_TRUE(c.valid) << c.problem;
  EXPECT_EQ(c.key_id, k.key.key_id);
  EXPECT_FALSE(check_signature(seal(json{{"a", 1}})).present);
}

TEST(Signature, AnEditResealedWithoutResigningIsCaught) {
  KeyDir k;
  json r = signed_result(k.key);
  r["metrics"]["test_accuracy"] = 0.99;
  r["digest"] = compute_digest(r);  // anyone can re-seal
  const SignatureCheck c = check_signature(r);
  EXPECT_FALSE(c.valid);
  EXPECT_NE(c.problem.find("does not verify over the digest"), std::string::npos) << c.problem;
}

TEST(Signature, ASwappedPublicKeyOrForgedKeyIdIsCaught) {
  KeyDir a, b;
  json r = signed_result(a.key);
  // Another key's public key with this signature: does not verify.
  json swapped = r;
  swapped["signature"]["public_key"] = base64_encode(b.key.public_raw);
  swapped["signature"]["key_id"] = b.key.key_id;
  EXPECT_FALSE(check_signature(swapped).valid);
  // Claiming another key id than the public key's.
  json renamed = r;
  renamed["signature"]["key_id"] = b.key.key_id;
  const SignatureCheck c = check_signature(renamed);
  EXPECT_FALSE(c.valid);
  EXPECT_NE(c.problem.find("is not the id of its public key"), std::string::npos) << c.problem;
  // A signature copied onto another result.
  json other = seal(json{{"schema", kResultSchema}, {"metrics", {{"test_accuracy", 0.9}}}});
  other["signature"] = r["signature"];
  EXPECT_FALSE(check_signature(other).valid);
  // Malformed members.
  json bad = r;
  bad["signature"]["value"] = "not base64!";
  EXPECT_NE(check_signature(bad).problem.find("signature.value"), std::string::npos);
  bad = r;
  bad["signature"] = "ed25519";
  EXPECT_FALSE(check_signature(bad).valid);
}

TEST(Signature, VerifyReportsTheSignerAndRefusesABadSignature) {
  KeyDir k;
  const json r = signed_result(k.key);
  // verify_result_json reports many schema problems for this minimal result; only the signature matters here.
  EXPECT_EQ(verify_result_json(r, nullptr).signed_by, k.key.key_id);
  json edited = r;
  edited["metrics"]["test_accuracy"] = 0.99;
  edited["digest"] = compute_digest(edited);
  const VerifyReport rep = verify_result_json(edited, nullptr);
  EXPECT_EQ(rep.signed_by, "");
  bool named = false;
  for (const auto& why : rep.reasons) named |= why.find("does not verify over the digest") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(Signature, TrustedKeysRequireAKnownSigner) {
  KeyDir k, other;
  const auto trusted = load_trusted_keys(k.dir);  // k.pem (private) is skipped, k.pub.pem loaded
  ASSERT_EQ(trusted.size(), 1u);
  EXPECT_TRUE(trusted.count(k.key.key_id));
  VerifyReport signed_ok;
  signed_ok.readable = signed_ok.valid = true;
  signed_ok.signed_by = k.key.key_id;
  require_trusted_signer(signed_ok, trusted, k.dir);
  EXPECT_TRUE(signed_ok.valid);
  VerifyReport stranger = signed_ok;
  stranger.signed_by = other.key.key_id;
  require_trusted_signer(stranger, trusted, k.dir);
  EXPECT_FALSE(stranger.valid);
  EXPECT_NE(stranger.reasons.back().find("not among the trusted keys"), std::string::npos);
  VerifyReport unsigned_report = signed_ok;
  unsigned_report.signed_by.clear();
  require_trusted_signer(unsigned_report, trusted, k.dir);
  EXPECT_FALSE(unsigned_report.valid);
  EXPECT_NE(unsigned_report.reasons.back().find("unsigned"), std::string::npos);
}

TEST(Signature, KeyFileErrorsNameTheFile) {
  KeyDir k;
  auto kind_and_message = [](const fs::path& f) -> std::pair<ErrorKind, std::string> {
    try {
      load_ed25519_private_key(f);
    } catch (const Error& e) {
      return {e.kind(), e.what()};
    }
    return {ErrorKind::none, ""};
  };
  auto [kind, msg] = kind_and_message(k.dir / "k.pub.pem");
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(msg.find("is a public key"), std::string::npos) << msg;
  std::tie(kind, msg) = kind_and_message(k.dir / "missing.pem");
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(msg.find("missing.pem"), std::string::npos) << msg;
  std::ofstream(k.dir / "junk.pem") << "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
  std::tie(kind, msg) = kind_and_message(k.dir / "junk.pem");
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(msg.find("not a PEM private key"), std::string::npos) << msg;
  // An RSA key is refused by type.
  ASSERT_EQ(std::system(("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out " +
                         (k.dir / "rsa.pem").string() + " 2>/dev/null").c_str()), 0);
  std::tie(kind, msg) = kind_and_message(k.dir / "rsa.pem");
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(msg.find("Ed25519"), std::string::npos) << msg;
  // A passphrase-protected key is refused by name, never prompted for.
  ASSERT_EQ(std::system(("openssl pkey -in " + (k.dir / "k.pem").string() + " -aes256 -passout pass:secret -out " +
                         (k.dir / "enc.pem").string() + " 2>/dev/null").c_str()), 0);
  std::tie(kind, msg) = kind_and_message(k.dir / "enc.pem");
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(msg.find("passphrase"), std::string::npos) << msg;
  // A device that never ends is not read forever, nor is a directory or FIFO read.
  std::tie(kind, msg) = kind_and_message("/dev/zero");
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(msg.find("/dev/zero"), std::string::npos) << msg;
  ASSERT_EQ(mkfifo((k.dir / "fifo.pem").c_str(), 0600), 0);
  std::tie(kind, msg) = kind_and_message(k.dir / "fifo.pem");
  EXPECT_EQ(kind, ErrorKind::usage);
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
  std::ofstream(k.dir / "big.pem") << std::string((64 << 10) + 1, 'A');
  std::tie(kind, msg) = kind_and_message(k.dir / "big.pem");
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
  EXPECT_THROW(load_trusted_keys(k.dir / "nope"), Error);
  fs::create_directories(k.dir / "empty");
  EXPECT_THROW(load_trusted_keys(k.dir / "empty"), Error);
}

}  // namespace
}  // namespace lra::host
