// snapshot_download for model repositories (see pull.h).
#include "hub/pull.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "hub/download.h"
#include "hub/glob.h"
#include "hub/quant_tag.h"

namespace ls::hub {

namespace {

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// A repo path from the server becomes a path under snapshots/: refuse one that could leave it.
void check_repo_path(const std::string& repo, const std::string& path) {
  bool bad = path.empty() || path.front() == '/' || path.find('\\') != std::string::npos ||
             path.find('\0') != std::string::npos;
  for (std::size_t start = 0; !bad && start <= path.size();) {
    const auto end = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, end - start);
    bad = part.empty() || part == "." || part == "..";
    start = end + 1;
  }
  if (bad)
    fail("{}: the Hub lists a file named '{}', which is not a safe relative path", repo, path);
}

std::vector<std::string> snapshot_files(const fs::path& snapshot) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_directory()) files.push_back(it->path().lexically_relative(snapshot).string());
  std::sort(files.begin(), files.end());
  return files;
}

PullResult pull_offline(const PullRequest& rq, const RepoCache& cache) {
  const auto commit = cache.commit_for(rq.revision);
  if (!commit)
    fail(
        "HF_HUB_OFFLINE is set and {} (revision '{}') is not in the cache {}: pull it while "
        "online (unset HF_HUB_OFFLINE), or copy the cache from a machine that has it",
        rq.repo, rq.revision, cache.root().string());
  PullResult result{*commit, cache.snapshot(*commit), {}, true};
  std::vector<std::string> files = snapshot_files(result.snapshot);
  if (!rq.quant_tag.empty()) files = pick_gguf(files, rq.quant_tag, rq.repo);
  for (const auto& f : files) {
    FileOutcome o;
    o.path = f;
    o.reused = true;
    std::error_code ec;
    o.size = fs::file_size(result.snapshot / f, ec);
    if (ec)
      fail(
          "HF_HUB_OFFLINE is set and {} is in the cache without its blob ({} is a broken "
          "link): pull it again while online",
          rq.repo, (result.snapshot / f).string());
    result.files.push_back(o);
  }
  return result;
}

// The files of the revision that the request keeps, in the repo's order.
std::vector<RepoFile> chosen_files(const PullRequest& rq, const RepoRevision& rev) {
  if (rq.one_model && rq.quant_tag.empty()) {
    std::vector<std::string> ggufs;
    std::set<std::string> tags;  // a split model's parts share one tag
    bool hf_dir = false;
    for (const auto& f : rev.files) {
      hf_dir |= f.path == "config.json";
      if (f.path.ends_with(".gguf")) ggufs.push_back(f.path), tags.insert(quant_tag_of(f.path));
    }
    if (!hf_dir && tags.size() > 1)
      fail(
          "{} holds {} GGUF models: pick one by its quant tag, e.g. --model {}:{} (tags: {}); "
          "nothing was downloaded",
          rq.repo, tags.size(), rq.repo, quant_tag_of(ggufs.front()), available_quant_tags(ggufs));
  }
  std::set<std::string> tagged;
  if (!rq.quant_tag.empty()) {
    std::vector<std::string> paths;
    for (const auto& f : rev.files) paths.push_back(f.path);
    for (const auto& p : pick_gguf(paths, rq.quant_tag, rq.repo)) tagged.insert(p);
  }
  std::vector<RepoFile> kept;
  for (const auto& f : rev.files) {
    check_repo_path(rq.repo, f.path);
    const bool keep = rq.quant_tag.empty()
                          ? glob_keep(f.path, rq.include, rq.exclude)
                          : tagged.count(f.path) > 0 ||
                                (!rq.include.empty() && glob_keep(f.path, rq.include, rq.exclude));
    if (keep) kept.push_back(f);
  }
  if (kept.empty()) {
    std::string names;
    for (std::size_t i = 0; i < rev.files.size() && i < 20; ++i)
      names += (i ? ", " : "") + rev.files[i].path;
    fail(
        "no file of {} at revision '{}' matches the --include/--exclude patterns; it has {} "
        "file{}: {}{}",
        rq.repo, rq.revision, rev.files.size(), rev.files.size() == 1 ? "" : "s", names,
        rev.files.size() > 20 ? ", ..." : "");
  }
  return kept;
}

}  // namespace

bool is_repo_id(const std::string& s) {
  if (s.empty() || s.size() > 96 || s.find("--") != std::string::npos ||
      s.find("..") != std::string::npos)
    return false;
  const auto slash = s.find('/');
  if (slash != std::string::npos && s.find('/', slash + 1) != std::string::npos) return false;
  for (const std::string& part : {slash == std::string::npos ? s : s.substr(0, slash),
                                  slash == std::string::npos ? s : s.substr(slash + 1)}) {
    if (part.empty() || part.front() == '-' || part.front() == '.' || part.back() == '-' ||
        part.back() == '.')
      return false;
    for (char c : part)
      if (!name_char(c)) return false;
  }
  return true;
}

void check_repo_id(const std::string& s) {
  if (!is_repo_id(s))
    fail(
        "'{}' is not a Hugging Face repo id: expected org/name (letters, digits, '-', '_', '.'; "
        "at most 96 characters; no '--' or '..')",
        s);
}

PullResult pull(const PullRequest& rq, const HubSettings& settings, const fs::path& cache_root,
                ProgressSink* progress) {
  check_repo_id(rq.repo);
  if (rq.revision.empty() || rq.revision.find("..") != std::string::npos ||
      rq.revision.front() == '/')
    fail("--revision '{}' is not a branch, tag or commit name", rq.revision);
  const RepoCache cache(cache_root, rq.repo);
  if (settings.offline) return pull_offline(rq, cache);

  const HubClient hub(settings);
  Http api(settings.metadata);
  RepoRevision rev;
  for (int attempt = 1;; ++attempt) {
    try {
      rev = hub.revision(api, rq.repo, rq.revision);
      break;
    } catch (const TransferError& e) {
      if (attempt == Downloader::kMaxStalledAttempts)
        fail("{}: no answer from {} after {} attempts: {}", rq.repo, settings.endpoint, attempt,
             e.what());
      if (progress) progress->note(fmt::format("retrying the file list: {}", e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(500 << (attempt - 1)));
    }
  }
  const std::vector<RepoFile> files = chosen_files(rq, rev);
  std::uint64_t total = 0;
  for (const auto& f : files) total += f.size.value_or(0);
  if (progress) progress->plan(files.size(), total);

  // Workers take the next file until none is left or one fails; the first failure is rethrown.
  Downloader downloader(hub, cache, progress);
  PullResult result{rev.commit, cache.snapshot(rev.commit), {}, false};
  result.files.resize(files.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto work = [&] {
    try {
      Http metadata_http(settings.metadata), data_http(settings.download);
      for (std::size_t i; !failed && (i = next++) < files.size();)
        result.files[i] = downloader.fetch(metadata_http, data_http, rev.commit, files[i].path);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!failed.exchange(true)) first_error = std::current_exception();
    }
  };
  const std::size_t n_threads = std::max<std::size_t>(
      1, std::min<std::size_t>(static_cast<std::size_t>(rq.jobs), files.size()));
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < n_threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
  cache.write_ref(rq.revision, rev.commit);
  return result;
}

}  // namespace ls::hub
