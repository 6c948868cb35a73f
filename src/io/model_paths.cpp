// Where MODEL's config is when MODEL is not a preset: a file, a model
// directory's config.json, or a Hugging Face Hub id found in the local Hub
// cache (no network), and the name the plan is titled with.
//
// The cache layout is the Hub client's (huggingface_hub constants.py and
// file_download.py: HF_HUB_CACHE, else HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub or ~/.cache/huggingface/hub; a model
// repo is models--{org}--{name}, refs/main holds the commit whose
// snapshot, snapshots/{commit}/, holds the files).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "io/model_reader.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::io {

namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// An environment path with a leading ~ expanded (os.path.expanduser).
fs::path env_path(const char* name) {
  std::string v = env(name);
  if (v == "~" || v.starts_with("~/")) v = env("HOME") + v.substr(1);
  return v;
}

// The Hub cache directory the client would use (constants.py: HF_HUB_CACHE,
// else the legacy HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, HF_HOME being
// $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface when unset).
fs::path hub_cache() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    if (const fs::path c = env_path(name); !c.empty()) return c;
  }
  if (const fs::path h = env_path("HF_HOME"); !h.empty()) return h / "hub";
  if (const fs::path x = env_path("XDG_CACHE_HOME"); !x.empty()) return x / "huggingface" / "hub";
  return fs::path(env("HOME")) / ".cache" / "huggingface" / "hub";
}

// "org/name": two non-empty parts of the characters Hub ids use
// (huggingface_hub utils/_validators.py validate_repo_id: letters, digits,
// '-', '_' and '.', not starting with '-' or '.').
bool is_hub_id(std::string_view arg) {
  const std::size_t slash = arg.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == arg.size()) return false;
  if (arg.find('/', slash + 1) != std::string_view::npos || arg.ends_with(".json")) return false;
  if (arg.front() == '.' || arg.front() == '-') return false;
  for (const char c : arg) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.' || c == '/';
    if (!ok) return false;
  }
  return true;
}

// The first line of a small text file, or "".
std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// Whether a regular file begins with GGUF's magic (ggml/include/gguf.h,
// GGUF_MAGIC "GGUF"): read four bytes, not the file.
bool starts_with_gguf_magic(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
}

// The cached config.json of Hub model `id`; what was tried when absent.
ModelFile from_hub_cache(const std::string& id) {
  const fs::path cache = hub_cache();
  std::string folder = "models--" + id;
  folder.replace(folder.find('/'), 1, "--");
  const fs::path repo = cache / folder;
  const std::string commit = first_line(repo / "refs" / "main");
  std::error_code ec;
  if (!commit.empty() && commit.find('/') == std::string::npos) {
    const fs::path config = repo / "snapshots" / commit / "config.json";
    if (fs::is_regular_file(config, ec)) return {config.string(), id, true};
  }
  const std::string tried = commit.empty() ? (repo / "refs" / "main").string()
                                           : (repo / "snapshots" / commit / "config.json").string();
  throw InputError(id, fmt::format("no such file, and no config.json of the Hugging Face model \"{}\" in the "
                                   "local Hub cache ({} not found; the cache is HF_HUB_CACHE, else "
                                   "HF_HOME/hub, else ~/.cache/huggingface/hub). vramcalc reads no "
                                   "network: fetch it with `hf download {} config.json`, or give the "
                                   "path of a config.json or its directory",
                                   id, tried, id));
}

}  // namespace

std::optional<ModelFile> find_model_file(const std::string& arg) {
  std::error_code ec;
  const fs::path p(arg);
  if (fs::is_directory(p, ec)) {
    const fs::path config = p / "config.json";
    if (!fs::exists(config, ec)) {
      throw InputError(arg, "a model directory holds its config.json, and this one has none");
    }
    fs::path name = p.lexically_normal();
    if (name.filename().empty()) name = name.parent_path();
    return ModelFile{config.string(), name.filename().string(), false};
  }
  if (starts_with_gguf_magic(p)) return ModelFile{arg, p.stem().string(), false, true};
  if (fs::exists(p, ec) || (looks_like_path(arg) && !is_hub_id(arg))) {
    // A file named config.json is titled by its directory (a snapshot's is
    // its commit, so the name in the config usually wins: model_title).
    std::string title = p.stem().string();
    if (title == "config" && p.has_parent_path()) title = p.parent_path().filename().string();
    return ModelFile{arg, title, false};
  }
  if (is_hub_id(arg)) return from_hub_cache(arg);
  return std::nullopt;
}

std::string model_title(const JsonCursor& root, const ModelFile& file) {
  if (file.hub_id) return file.title;
  if (root.is_object()) {
    if (auto n = root.find("_name_or_path"); n && n->is_string()) {
      // A local training path names its last component.
      std::string name = n->string();
      while (name.size() > 1 && name.back() == '/') name.pop_back();
      if (name.starts_with('/') || name.starts_with('.')) name = fs::path(name).filename().string();
      // "./" or "." (a model saved from its own directory) names nothing.
      if (!name.empty() && name != "." && name != "..") return name;
    }
  }
  return file.title;
}

}  // namespace vramcalc::io
