// Units: checked arithmetic, element widths, formatting and size parsing.
#include <catch2/catch.hpp>

#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/units.hpp"

using namespace vramcalc;

TEST_CASE("checked arithmetic refuses to wrap", "[units]") {
  CHECK(checked_add(1, 2) == 3);
  CHECK(checked_mul(1ULL << 32, 1ULL << 31) == 1ULL << 63);
  CHECK_THROWS_AS(checked_mul(1ULL << 32, 1ULL << 32), OverflowError);
  CHECK_THROWS_AS(checked_add(~0ULL, 1), OverflowError);
  CHECK(checked_product(2, 3, 7) == 42);
}

TEST_CASE("ceil_div rounds up to the most loaded rank", "[units]") {
  CHECK(ceil_div(10, 4) == 3);
  CHECK(ceil_div(8, 4) == 2);
  CHECK(ceil_div(0, 4) == 0);
}

TEST_CASE("bytes_for uses bits, never rounding a sub-byte type to zero", "[units]") {
  CHECK(bytes_for(10, DType::fp32) == 40);
  CHECK(bytes_for(10, DType::bf16) == 20);
  CHECK(bytes_for(10, DType::fp8) == 10);
  CHECK(bytes_for(3, DType::boolean) == 3);
  CHECK(bytes_for(3, DType::int64) == 24);
}

TEST_CASE("format_bytes labels binary units honestly", "[units]") {
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.50 KiB");
  CHECK(format_bytes(1ULL << 30) == "1.00 GiB");
  CHECK(format_bytes(16060522496ULL) == "14.96 GiB");
  CHECK(format_gib(1ULL << 29) == "0.50");
  CHECK(format_thousands(8030261248ULL) == "8,030,261,248");
  CHECK(format_thousands(999) == "999");
  CHECK(format_thousands(1000) == "1,000");
}

TEST_CASE("parse_size keeps GiB and GB apart", "[units]") {
  CHECK(parse_size("80GiB", "--gpu-mem") == 80ULL << 30);
  CHECK(parse_size("80 GB", "--gpu-mem") == 80'000'000'000ULL);
  CHECK(parse_size("81559MiB", "--gpu-mem") == 81559ULL << 20);
  CHECK(parse_size("1.5GiB", "--gpu-mem") == 3ULL << 29);
  CHECK(parse_size("4096", "--gpu-mem") == 4096);
  CHECK(parse_size("2kib", "--gpu-mem") == 2048);
}
