// check_svg FILE: exit 0 when FILE is a well-formed XML document whose root
// is <svg>, else print the first problem and exit 1. Used by the CLI tests
// of --svg (tests/cli/svg_case.cmake).
#include <fstream>
#include <iostream>
#include <sstream>

#include "xml_check.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: check_svg FILE\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "check_svg: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string problem = vramcalc::test::xml_error(text.str(), "svg");
  if (!problem.empty()) {
    std::cerr << "check_svg: " << argv[1] << ": " << problem << "\n";
    return 1;
  }
  return 0;
}
