// Checks the source tree's size limits (docs/architecture.md): no function
// in src/ longer than 100 lines, no file in src/core/ longer than 700.
//
// clang-format puts a namespace-scope definition's first line and its
// closing brace at column 0, so a function is a column-0 line that opens a
// brace (and is no namespace, class, struct, enum or table) up to the next
// column-0 "}". Usage: source_limits SRC_DIR; exits 1 listing what is over.
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr std::size_t k_max_function_lines = 100;
constexpr std::size_t k_max_core_file_lines = 700;

// Whether a column-0 line starts a function definition's signature.
bool starts_signature(const std::string& line) {
  if (line.empty() || line.front() == ' ' || line.front() == '}' || line.front() == '#' ||
      line.starts_with("//"))
    return false;
  for (const char* word : {"namespace", "struct", "class", "enum", "union", "using", "template"}) {
    if (line.starts_with(word)) return false;
  }
  // Tables and constants: "constexpr std::array k_x = {", "const T k_x{".
  return line.find('(') != std::string::npos && line.find(" = ") == std::string::npos;
}

// The line that opens the body of a signature starting at `i`, or none
// when it is a declaration.
std::size_t body_start(const std::vector<std::string>& lines, std::size_t i) {
  for (std::size_t j = i; j < lines.size(); ++j) {
    const std::string& l = lines[j];
    if (l.ends_with(";")) return lines.size();
    if (l.ends_with("{")) return j;
    if (j > i && !l.starts_with(" ")) return lines.size();
  }
  return lines.size();
}

std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: source_limits SRC_DIR\n";
    return 2;
  }
  const std::filesystem::path src = std::filesystem::weakly_canonical(argv[1]);
  int problems = 0;
  std::size_t functions = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() != ".cpp" && p.extension() != ".hpp") continue;
    const std::vector<std::string> lines = lines_of(p);
    const std::string rel = std::filesystem::relative(p, src.parent_path()).string();
    if (rel.starts_with("src/core/") && lines.size() > k_max_core_file_lines) {
      std::cout << rel << ": " << lines.size() << " lines (at most " << k_max_core_file_lines << ")\n";
      ++problems;
    }
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (!starts_signature(lines[i]) || body_start(lines, i) == lines.size()) continue;
      std::size_t end = body_start(lines, i) + 1;
      while (end < lines.size() && !lines[end].starts_with("}")) ++end;
      ++functions;
      const std::size_t length = end - i + 1;
      if (length > k_max_function_lines) {
        std::cout << rel << ":" << i + 1 << ": a function of " << length << " lines (at most "
                  << k_max_function_lines << "): " << lines[i] << "\n";
        ++problems;
      }
      i = end;
    }
  }
  std::cout << functions << " functions checked, " << problems << " over the limits\n";
  return problems == 0 ? 0 : 1;
}
