// The cache layout huggingface_hub uses (folder names, link targets, refs), where the cache is
// found from the environment, model ids and their lookup, and the Hub's header conventions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "hub/cache.h"
#include "hub/checksum.h"
#include "hub/hub_api.h"
#include "hub/model_ref.h"
#include "hub/pull.h"

namespace ls::hub {

namespace {

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

}  // namespace

TEST(Cache, FolderNamesAndLinkTargets) {
  EXPECT_EQ(repo_folder_name("Qwen/Qwen2.5-0.5B-Instruct"), "models--Qwen--Qwen2.5-0.5B-Instruct");
  EXPECT_EQ(repo_id_from_folder("models--Qwen--Qwen2.5-0.5B-Instruct"),
            "Qwen/Qwen2.5-0.5B-Instruct");
  EXPECT_EQ(repo_id_from_folder("models--gpt2"), "gpt2");
  EXPECT_EQ(repo_id_from_folder("datasets--x--y"), "");
  EXPECT_EQ(link_target("config.json", "abc"), "../../blobs/abc");
  EXPECT_EQ(link_target("a/b/c.txt", "abc"), "../../../../blobs/abc");
}

TEST(Cache, RefsHoldTheCommitWithoutNewlineAndLinksAreRelative) {
  const fs::path root = temp_dir("ls-hub-cache");
  const RepoCache c(root, "org/name");
  const std::string commit(40, 'a');
  EXPECT_FALSE(c.commit_for("main").has_value());
  c.write_ref("main", commit);
  EXPECT_EQ(read(root / "models--org--name" / "refs" / "main"), commit);  // no newline
  c.write_ref("refs/pr/1", commit);
  EXPECT_EQ(read(root / "models--org--name" / "refs" / "refs" / "pr" / "1"), commit);
  c.write_ref(commit, commit);  // a commit names itself: no ref file, as huggingface_hub
  EXPECT_FALSE(fs::exists(root / "models--org--name" / "refs" / commit));
  EXPECT_EQ(c.commit_for("main"), commit);
  write(c.blob("e1"), "bytes");
  c.link(commit, "sub/file.txt", "e1");
  const fs::path link = c.snapshot(commit) / "sub" / "file.txt";
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link).string(), "../../../blobs/e1");
  EXPECT_EQ(read(link), "bytes");
  EXPECT_EQ(c.commit_for(commit), commit);  // a commit with a snapshot resolves to itself
  EXPECT_EQ(c.lock("e1"), root / ".locks" / "models--org--name" / "e1.lock");
  write(root / "models--org--name" / "refs" / "bad", "not-a-hash\n");
  EXPECT_THROW(c.commit_for("bad"), Error);
  fs::remove_all(root);
}

TEST(Cache, RootFromTheEnvironmentInHuggingFaceHubsOrder) {
  ::setenv("HOME", "/home/u", 1);
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HF_HOME");
  ::unsetenv("HF_HUB_CACHE");
  EXPECT_EQ(cache_root_from_env(), fs::path("/home/u/.cache/huggingface/hub"));
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(cache_root_from_env(), fs::path("/xdg/huggingface/hub"));
  ::setenv("HF_HOME", "~/hf", 1);
  EXPECT_EQ(cache_root_from_env(), fs::path("/home/u/hf/hub"));
  ::setenv("HF_HUB_CACHE", "/c", 1);
  EXPECT_EQ(cache_root_from_env(), fs::path("/c"));
  ::unsetenv("HF_HUB_CACHE");
  ::unsetenv("HF_HOME");
  ::unsetenv("XDG_CACHE_HOME");
}

TEST(ModelId, ShapeAndLookup) {
  EXPECT_FALSE(parse_model_id("gpt2").has_value());  // a bare name is a path here
  EXPECT_FALSE(parse_model_id("./models/x").has_value());
  EXPECT_FALSE(parse_model_id("/abs/x.gguf").has_value());
  EXPECT_FALSE(parse_model_id("a/b/c").has_value());
  EXPECT_FALSE(parse_model_id("org/na--me").has_value());
  EXPECT_FALSE(parse_model_id("org/name:").has_value());
  const auto id = parse_model_id("Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->repo, "Qwen/Qwen2.5-0.5B-Instruct-GGUF");
  EXPECT_EQ(id->tag, "q4_k_m");
  EXPECT_EQ(pull_command(*id, "main"), "logitscope pull Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m");
  EXPECT_EQ(pull_command({"o/n", ""}, "v1"), "logitscope pull o/n --revision v1");

  const fs::path root = temp_dir("ls-hub-ids");
  const std::string commit(40, 'b');
  RepoCache hf(root, "o/model");
  write(hf.blob("cfg"), "{}");
  hf.link(commit, "config.json", "cfg");
  hf.write_ref("main", commit);
  EXPECT_EQ(find_in_cache({"o/model", ""}, "main", root), hf.snapshot(commit).string());
  EXPECT_FALSE(find_in_cache({"o/model", ""}, "v2", root).has_value());
  EXPECT_FALSE(find_in_cache({"o/other", ""}, "main", root).has_value());
  RepoCache gg(root, "o/model-GGUF");
  write(gg.blob("g1"), "GGUF");
  write(gg.blob("g2"), "GGUF");
  gg.link(commit, "m-Q8_0.gguf", "g1");
  gg.write_ref("main", commit);
  EXPECT_EQ(find_in_cache({"o/model-GGUF", ""}, "main", root),
            (gg.snapshot(commit) / "m-Q8_0.gguf").string());  // the only GGUF needs no tag
  EXPECT_EQ(find_in_cache({"o/model-GGUF", "q8_0"}, "main", root),
            (gg.snapshot(commit) / "m-Q8_0.gguf").string());
  EXPECT_FALSE(find_in_cache({"o/model-GGUF", "q4_0"}, "main", root).has_value());  // pull it
  gg.link(commit, "m-q4_0.gguf", "g2");
  EXPECT_THROW(find_in_cache({"o/model-GGUF", ""}, "main", root), Error);  // which one?
  fs::remove_all(root);
}

TEST(HubProtocol, RepoIdsOriginsEtagsAndChecksums) {
  EXPECT_TRUE(is_repo_id("Qwen/Qwen2.5-0.5B-Instruct"));
  EXPECT_TRUE(is_repo_id("gpt2"));
  EXPECT_FALSE(is_repo_id("a/b/c"));
  EXPECT_FALSE(is_repo_id("org/-x"));
  EXPECT_FALSE(is_repo_id("org/x..y"));
  EXPECT_FALSE(is_repo_id(std::string(97, 'a')));
  EXPECT_EQ(url_origin("https://huggingface.co/api/models/x"), "https://huggingface.co:443");
  EXPECT_EQ(url_origin("http://127.0.0.1:8080/lfs/x?s=1"), "http://127.0.0.1:8080");
  EXPECT_NE(url_origin("http://127.0.0.1:8080/"), url_origin("http://127.0.0.1:8081/"));
  EXPECT_EQ(normalize_etag("W/\"abc\""), "abc");
  EXPECT_EQ(normalize_etag("\"abc\""), "abc");
  EXPECT_EQ(url_quote("refs/pr/1", ""), "refs%2Fpr%2F1");
  EXPECT_EQ(url_quote("a b/c.json"), "a%20b/c.json");

  const fs::path d = temp_dir("ls-hub-sum");
  write(d / "f", "hello\n");
  // `git hash-object` of "hello\n", and sha256sum of it.
  EXPECT_EQ(git_blob_sha1_file((d / "f").string()), "ce013625030ba8dba906f756967f9e9ca394464a");
  EXPECT_EQ(sha256_file((d / "f").string()),
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  fs::remove_all(d);
}

TEST(HubProtocol, TokenGoesOnlyToTheEndpointsOrigin) {
  HubSettings s;
  s.endpoint = "http://127.0.0.1:9000";
  s.token = "hf_x";
  const HubClient hub(s);
  const auto to_hub = hub.headers_for("http://127.0.0.1:9000/org/m/resolve/main/config.json");
  const auto to_store = hub.headers_for("http://127.0.0.1:9001/lfs/abc");
  EXPECT_NE(std::find(to_hub.begin(), to_hub.end(), "Authorization: Bearer hf_x"), to_hub.end());
  for (const auto& h : to_store) EXPECT_EQ(h.find("Authorization"), std::string::npos) << h;
}

}  // namespace ls::hub
