// File checksums the Hub names files by: the SHA-256 of an LFS file's bytes (its X-Linked-Etag)
// and the git blob id of a regular file (SHA-1 of "blob <size>\0" + bytes, its ETag). Both use
// OpenSSL's EVP digests, the implementation every TLS connection here already trusts.
#pragma once

#include <string>

namespace ls::hub {

// Lower-case hex SHA-256 of the file's bytes; throws ls::Error naming the file when unreadable.
std::string sha256_file(const std::string& path);
// Lower-case hex git blob id (SHA-1 over "blob <size>\0" followed by the bytes).
std::string git_blob_sha1_file(const std::string& path);

}  // namespace ls::hub
