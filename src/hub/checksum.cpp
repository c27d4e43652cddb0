// SHA-256 and git blob ids through OpenSSL's EVP interface (see checksum.h).
#include "hub/checksum.h"

#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"

namespace ls::hub {

namespace {

std::string digest_file(const std::string& path, const EVP_MD* md, const std::string& prefix) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) fail("OpenSSL: digest init failed");
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot be read to check its checksum", path);
  std::vector<char> buf(std::size_t{1} << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) fail("{}: read error while checking its checksum", path);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[out[i] >> 4];
    hex += kHex[out[i] & 15];
  }
  return hex;
}

}  // namespace

std::string sha256_file(const std::string& path) {
  return digest_file(path, EVP_sha256(), "");
}

std::string git_blob_sha1_file(const std::string& path) {
  const auto size = std::filesystem::file_size(path);
  std::string prefix = "blob " + std::to_string(size);
  prefix.push_back('\0');
  return digest_file(path, EVP_sha1(), prefix);
}

}  // namespace ls::hub
