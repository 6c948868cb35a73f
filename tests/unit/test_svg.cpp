// SVG charts: well-formed standalone documents, stacks that add up to the
// peak, stable colours, escaped text, and sane output for degenerate input.
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "render/common.hpp"
#include "vramcalc/svg.hpp"
#include "xml_check.hpp"

using namespace vramcalc;
using test::XmlElement;

namespace {

PlanResult llama_plan(std::initializer_list<std::pair<std::string, std::string>> settings) {
  return plan(test::request(load_model("llama-3.1-8b"), settings));
}

// The four ZeRO stages of llama-3.1-8b training on 8 H100s: 0 and 1 do not
// fit, 2 and 3 do.
std::vector<PlanResult> zero_plans() {
  std::vector<PlanResult> out;
  for (const char* zero : {"0", "1", "2", "3"}) {
    out.push_back(llama_plan({{"mode", "train"},
                              {"batch", "1"},
                              {"seq", "4096"},
                              {"dp", "8"},
                              {"zero", zero},
                              {"gpu", "h100-80gb"}}));
  }
  return out;
}

std::vector<SvgBar> bars_of(const std::vector<PlanResult>& plans, const std::string& prefix) {
  std::vector<SvgBar> out;
  for (std::size_t i = 0; i < plans.size(); ++i) out.push_back({prefix + std::to_string(i), &plans[i]});
  return out;
}

XmlElement parse_svg(const std::string& doc) {
  const test::XmlResult r = test::parse_xml(doc, "svg");
  INFO(doc);
  REQUIRE(r.error.empty());
  return *r.root;
}

// Every number in every geometric attribute is finite; lengths are not negative.
void check_geometry(const XmlElement& e) {
  for (const auto& [key, value] : e.attributes) {
    static const std::set<std::string> numeric{"x",  "y", "x1",    "y1",     "x2",        "y2",          "cx",
                                               "cy", "r", "width", "height", "font-size", "stroke-width"};
    if (key == "points") {
      std::string v = value;
      for (char& ch : v) ch = ch == ',' ? ' ' : ch;
      const char* p = v.c_str();
      char* end = nullptr;
      for (double d = std::strtod(p, &end); end != p; p = end, d = std::strtod(p, &end)) {
        CHECK(std::isfinite(d));
      }
      continue;
    }
    if (!numeric.contains(key)) continue;
    INFO(e.name << " " << key << "=\"" << value << "\"");
    char* end = nullptr;
    const double d = std::strtod(value.c_str(), &end);
    CHECK(end != value.c_str());
    CHECK(*end == '\0');
    CHECK(std::isfinite(d));
    if (key == "width" || key == "height" || key == "r") CHECK(d >= 0);
  }
  for (const XmlElement& c : e.children) check_geometry(c);
}

// A standalone SVG 1.1 document: namespace, size, viewBox, a title, a white
// background and a sans-serif font; sane geometry throughout.
XmlElement check_document(const std::string& doc) {
  CHECK(doc.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0) == 0);
  XmlElement svg = parse_svg(doc);
  CHECK(svg.attr("xmlns") == "http://www.w3.org/2000/svg");
  CHECK(svg.attr("version") == "1.1");
  CHECK(svg.attr("font-family") == "sans-serif");
  CHECK(svg.attr("viewBox") == "0 0 " + svg.attr("width") + " " + svg.attr("height"));
  CHECK(std::strtod(svg.attr("width").c_str(), nullptr) > 0);
  CHECK(std::strtod(svg.attr("height").c_str(), nullptr) > 0);
  REQUIRE(!svg.children.empty());
  CHECK(svg.children[0].name == "title");
  CHECK(!svg.children[0].text.empty());
  REQUIRE(svg.children.size() > 1);
  CHECK(svg.children[1].name == "rect");
  CHECK(svg.children[1].attr("fill") == "#FFFFFF");
  CHECK(svg.children[1].attr("width") == svg.attr("width"));
  check_geometry(svg);
  for (const char* bad : {"nan", "inf"}) CHECK(doc.find(std::string("\"") + bad) == std::string::npos);
  return svg;
}

std::vector<const XmlElement*> with_class(const XmlElement& root, const std::string& name,
                                          const std::string& cls) {
  std::vector<const XmlElement*> out;
  for (const XmlElement* e : root.all(name)) {
    if (e->attr("class") == cls) out.push_back(e);
  }
  return out;
}

// "weights: 16,060,522,496 bytes (14.96 GiB)" → 16060522496.
std::uint64_t bytes_in(const std::string& tooltip) {
  const std::size_t colon = tooltip.rfind(": ");
  REQUIRE(colon != std::string::npos);
  std::uint64_t v = 0;
  for (std::size_t i = colon + 2; i < tooltip.size() && tooltip[i] != ' '; ++i) {
    if (tooltip[i] == ',') continue;
    REQUIRE((tooltip[i] >= '0' && tooltip[i] <= '9'));
    v = v * 10 + static_cast<std::uint64_t>(tooltip[i] - '0');
  }
  return v;
}

std::vector<std::string> texts(const XmlElement& svg) {
  std::vector<std::string> out;
  for (const XmlElement* t : svg.all("text")) out.push_back(t->text);
  return out;
}

bool has_text(const XmlElement& svg, const std::string& s) {
  for (const std::string& t : texts(svg)) {
    if (t == s) return true;
  }
  return false;
}

bool text_contains(const XmlElement& svg, const std::string& s) {
  for (const std::string& t : texts(svg)) {
    if (t.find(s) != std::string::npos) return true;
  }
  return false;
}

SvgCurve batch_curve(std::uint64_t last) {
  SvgCurve c;
  c.title = "llama-3.1-8b training on one H100: peak memory by batch";
  c.knob = "batch";
  const Gpu h100 = find_gpu("h100-80gb", "--gpu");
  c.capacity_bytes = h100.capacity_bytes;
  c.gpu_name = h100.name;
  for (std::uint64_t b = 1; b <= last; ++b) {
    const PlanResult p = llama_plan({{"mode", "train"},
                                     {"batch", std::to_string(b)},
                                     {"seq", "2048"},
                                     {"dp", "8"},
                                     {"zero", "3"},
                                     {"checkpoint", "full"}});
    c.points.emplace_back(b, p.budget.peak_device);
    if (p.budget.peak_device <= h100.capacity_bytes) c.answer = b;
  }
  return c;
}

}  // namespace

TEST_CASE("svg: the XML checker accepts well-formed documents", "[svg][xml]") {
  CHECK(test::xml_error("<svg/>", "svg").empty());
  CHECK(test::xml_error("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg a=\"1\" b='2'>\n"
                        "  <!-- note --><g><text x=\"1\">a &amp; b &lt; c &gt; d &quot;&apos; &#38; &#x3C;"
                        "</text></g>\n</svg>\n",
                        "svg")
            .empty());
  const test::XmlResult r = test::parse_xml("<svg><title>A &amp; B</title><rect q=\"&lt;&quot;\"/></svg>");
  REQUIRE(r.error.empty());
  CHECK(r.root->child("title")->text == "A & B");
  CHECK(r.root->child("rect")->attr("q") == "<\"");
}

TEST_CASE("svg: the XML checker rejects malformed documents", "[svg][xml]") {
  for (const char* bad : {
           "",                                    // no root
           "   ",                                 // no root
           "<svg>",                               // unclosed
           "<svg><g></svg>",                      // unbalanced
           "<svg><g></h></svg>",                  // mismatched end tag
           "<svg></svg><svg></svg>",              // two roots
           "<svg></svg>text",                     // content after the root
           "text<svg></svg>",                     // content before the root
           "<svg a=1></svg>",                     // unquoted attribute
           "<svg a=\"1></svg>",                   // unterminated attribute
           "<svg a=\"1\" a=\"2\"></svg>",         // duplicate attribute
           "<svg a=\"1\"b=\"2\"></svg>",          // attributes not separated
           "<svg a></svg>",                       // attribute without a value
           "<svg a=\"x<y\"></svg>",               // '<' in an attribute value
           "<svg a=\"x&y\"></svg>",               // bare '&' in an attribute value
           "<svg>a & b</svg>",                    // bare '&'
           "<svg>a &nbsp; b</svg>",               // undefined entity
           "<svg>&#xD800;</svg>",                 // reference to a surrogate
           "<svg>&#1;</svg>",                     // reference to a control character
           "<svg>&#;</svg>",                      // empty reference
           "<svg>a < b</svg>",                    // stray '<'
           "<svg>a ]]> b</svg>",                  // ']]>' in text
           "<svg><!-- a -- b --></svg>",          // '--' in a comment
           "<svg><!-- open</svg>",                // unterminated comment
           "<svg><![CDATA[x]]></svg>",            // CDATA is not accepted
           "<!DOCTYPE svg><svg/>",                // DOCTYPE is not accepted
           "<svg>\x01</svg>",                     // control character
           "<svg>\xff</svg>",                     // invalid UTF-8
           "<svg>\xc3</svg>",                     // truncated UTF-8
           "<svg><?xml version=\"1.0\"?></svg>",  // misplaced declaration
           "<1svg/>",                             // bad name
       }) {
    INFO(bad);
    CHECK(!test::xml_error(bad).empty());
  }
  CHECK(!test::xml_error("<html></html>", "svg").empty());  // wrong root
}

TEST_CASE("svg_segments are what is live at the peak and add up to peak_device", "[svg]") {
  std::vector<PlanResult> plans = zero_plans();
  plans.push_back(llama_plan({}));
  plans.push_back(llama_plan({{"mode", "infer"}, {"batch", "8"}, {"seq", "8192"}}));
  plans.push_back(llama_plan({{"mode", "train"}, {"checkpoint", "full"}, {"batch", "4"}}));
  plans.push_back(plan(test::request(load_model("gpt2"), {{"mode", "train"}})));
  for (const PlanResult& p : plans) {
    const auto segs = svg_segments(p.budget);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < k_component_count; ++i) {
      CHECK(segs[i].bytes == render_detail::at_peak(p.budget, static_cast<Component>(i)));
      sum += segs[i].bytes;
    }
    CHECK(segs[k_component_count].name == "allocator slack");
    CHECK(segs[k_component_count].bytes == p.budget.allocator_slack);
    sum += segs[k_component_count].bytes;
    CHECK(sum == p.budget.peak_device);
  }
}

TEST_CASE("svg: every segment has its own fixed colour", "[svg]") {
  const PlanResult train = zero_plans()[0];
  const PlanResult infer = llama_plan({{"mode", "infer"}});
  const auto a = svg_segments(train.budget);
  const auto b = svg_segments(infer.budget);
  const auto z = svg_segments(Budget{});
  std::set<std::string_view> colours;
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < k_svg_segment_count; ++i) {
    CHECK(a[i].colour == b[i].colour);
    CHECK(a[i].colour == z[i].colour);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].colour.size() == 7);
    CHECK(a[i].colour[0] == '#');
    colours.insert(a[i].colour);
    names.insert(a[i].name);
  }
  CHECK(colours.size() == k_svg_segment_count);
  CHECK(names.size() == k_svg_segment_count);
  CHECK(a[0].name == "weights");
  CHECK(a[0].colour == "#0072B2");
  CHECK(a[static_cast<std::size_t>(Component::kv_cache)].name == "KV cache");

  // In the drawing too: a segment name always comes with the same fill,
  // across bars and across documents.
  const std::vector<PlanResult> plans = zero_plans();
  std::map<std::string, std::string> fill_of;
  for (const std::string& doc :
       {render_svg_bars(bars_of(plans, "zero ")), render_svg_bars({{"infer", &infer}, {"train", &train}})}) {
    const XmlElement svg = parse_svg(doc);
    for (const XmlElement* r : with_class(svg, "rect", "segment")) {
      const std::string tip = r->child("title")->text;
      const std::string name = tip.substr(0, tip.find(':'));
      if (fill_of.contains(name)) CHECK(fill_of[name] == r->attr("fill"));
      fill_of[name] = r->attr("fill");
    }
  }
  CHECK(fill_of.size() >= 6);
  for (std::size_t i = 0; i < k_svg_segment_count; ++i) {
    if (fill_of.contains(std::string(a[i].name))) CHECK(fill_of[std::string(a[i].name)] == a[i].colour);
  }
}

TEST_CASE("svg: the bars chart compares plans against the GPU", "[svg]") {
  const std::vector<PlanResult> plans = zero_plans();
  REQUIRE(plans.size() == 4);
  REQUIRE(plans[0].fit);
  const std::string doc = render_svg_bars(bars_of(plans, "ZeRO stage "));
  CHECK(doc == render_svg_bars(bars_of(plans, "ZeRO stage ")));  // deterministic
  const XmlElement svg = check_document(doc);
  CHECK(svg.child("title")->text == "Peak memory per GPU: llama-3.1-8b");

  const std::vector<const XmlElement*> groups = with_class(svg, "g", "bar");
  REQUIRE(groups.size() == plans.size());
  bool some_fit = false;
  bool some_over = false;
  for (std::size_t b = 0; b < plans.size(); ++b) {
    const Budget& budget = plans[b].budget;
    INFO("bar " << b);
    // The tooltips' exact bytes add up to the peak; the rects stack without
    // gaps, each as tall as its share.
    std::uint64_t sum = 0;
    double height = 0;
    double top = 1e9;
    double bottom = 0;
    const std::vector<const XmlElement*> rects = with_class(*groups[b], "rect", "segment");
    REQUIRE(!rects.empty());
    for (const XmlElement* r : rects) {
      REQUIRE(r->child("title"));
      const std::string tip = r->child("title")->text;
      CHECK(tip.find(" bytes (") != std::string::npos);
      CHECK(tip.find(',') != std::string::npos);  // thousands separators
      sum += bytes_in(tip);
      const double y = std::strtod(r->attr("y").c_str(), nullptr);
      const double h = std::strtod(r->attr("height").c_str(), nullptr);
      height += h;
      top = std::min(top, y);
      bottom = std::max(bottom, y + h);
    }
    CHECK(sum == budget.peak_device);
    CHECK(std::abs(height - (bottom - top)) < 0.1 * static_cast<double>(rects.size()));
    // The segments in drawing order are the non-zero svg_segments, bottom up.
    std::vector<std::uint64_t> expected;
    for (const SvgSegment& s : svg_segments(budget)) {
      if (s.bytes > 0) expected.push_back(s.bytes);
    }
    REQUIRE(expected.size() == rects.size());
    for (std::size_t i = 0; i < rects.size(); ++i) {
      CHECK(bytes_in(rects[i]->child("title")->text) == expected[i]);
      const double hi = std::strtod(rects[i]->attr("height").c_str(), nullptr);
      CHECK(std::abs(hi - height * static_cast<double>(expected[i]) / static_cast<double>(sum)) < 0.2);
    }
    CHECK(has_text(svg, format_gib(budget.peak_device) + " GiB"));
    CHECK(has_text(svg, "ZeRO stage " + std::to_string(b)));
    some_fit = some_fit || plans[b].fit->fits;
    some_over = some_over || !plans[b].fit->fits;
  }
  CHECK(some_fit);
  CHECK(some_over);
  CHECK(text_contains(svg, "fits, "));
  CHECK(text_contains(svg, "over by "));
  // The capacity line is labelled with the GPU's name and capacity.
  const Gpu& gpu = plans[0].fit->gpu;
  CHECK(text_contains(svg, format_gib(gpu.capacity_bytes) + " GiB"));
  CHECK(text_contains(svg, "H100"));
  bool dashed = false;
  for (const XmlElement* l : svg.all("line")) dashed = dashed || l->attribute("stroke-dasharray");
  CHECK(dashed);
  // The legend lists only what some bar holds: no KV cache in training.
  CHECK(has_text(svg, "weights"));
  CHECK(has_text(svg, "optimizer states"));
  CHECK(!has_text(svg, "KV cache"));
}

TEST_CASE("svg: the legend follows the bars: KV cache appears for serving", "[svg]") {
  const PlanResult infer = llama_plan({{"mode", "infer"}, {"batch", "8"}, {"seq", "8192"}});
  const XmlElement svg = check_document(render_svg_bars({{"serving", &infer}}));
  CHECK(has_text(svg, "KV cache"));
  CHECK(!has_text(svg, "optimizer states"));
  CHECK(!text_contains(svg, "over by"));  // no GPU, no verdict
  CHECK(!text_contains(svg, "fits"));
}

TEST_CASE("svg: text is escaped", "[svg]") {
  PlanResult p = zero_plans()[3];
  p.request.model.name = "model <x> & \"y\" 'z'";
  p.fit->gpu.name = "GPU <&> \"q\"";
  const std::string label = "a & b < c > d \"e\" 'f'";
  const std::string doc = render_svg_bars({{label, &p}});
  CHECK(doc.find("& b") == std::string::npos);
  CHECK(doc.find("< c") == std::string::npos);
  for (const char* escaped : {">a &amp; b &lt; c &gt; d", "&quot;e&quot;", "&apos;f&apos;"}) {
    CHECK(doc.find(escaped) != std::string::npos);
  }
  const XmlElement svg = check_document(doc);
  CHECK(svg.child("title")->text == "Peak memory per GPU: model <x> & \"y\" 'z'");
  CHECK(text_contains(svg, "a & b < c"));
  CHECK(text_contains(svg, "GPU <&>"));

  SvgCurve c;
  c.title = "<script>alert('&')</script>";
  c.knob = "b&<";
  c.gpu_name = "x\"y'z<";
  c.capacity_bytes = 1ULL << 34;
  c.points = {{1, 1ULL << 32}, {2, 1ULL << 33}, {3, 1ULL << 35}};
  c.answer = 2;
  const XmlElement curve = check_document(render_svg_curve(c));
  CHECK(curve.child("title")->text == c.title);
  CHECK(text_contains(curve, "largest b&< that fits: 2"));
  CHECK(text_contains(curve, "x\"y'z<"));

  // Invalid UTF-8 and control characters never reach the document.
  const std::string odd = std::string("bad \xff\xc3 utf8 \x01\x1f tab\there \xe2\x82\xac ok");
  CHECK(test::xml_error(render_svg_bars({{odd, &p}}), "svg").empty());
  c.title = odd;
  CHECK(test::xml_error(render_svg_curve(c), "svg").empty());
}

TEST_CASE("svg: long labels wrap instead of running into their neighbours", "[svg]") {
  const std::vector<PlanResult> plans = zero_plans();
  const std::string long_label = "checkpoint selective, zero 3, dp 8, batch 16, seq 8192, adamw 8bit";
  const XmlElement svg = check_document(render_svg_bars({{long_label, &plans[0]}, {"short", &plans[1]}}));
  std::size_t pieces = 0;
  for (const std::string& t : texts(svg)) {
    if (long_label.find(t) != std::string::npos && t.size() > 3) {
      ++pieces;
      CHECK(t.size() <= 20);
    }
  }
  CHECK(pieces >= 3);
}

TEST_CASE("svg: degenerate bar charts are still valid SVG", "[svg]") {
  const PlanResult empty;  // no phases, all zero, no GPU
  PlanResult zero_gpu = empty;
  zero_gpu.fit = FitVerdict{Gpu{"tiny", "Tiny GPU", "sm_0", 0, "", ""}, true, 0, ""};
  const std::vector<PlanResult> plans = zero_plans();
  for (const std::vector<SvgBar>& bars : std::vector<std::vector<SvgBar>>{
           {},
           {{"only", &plans[2]}},
           {{"zero", &empty}},
           {{"zero", &empty}, {"", &empty}},
           {{"null", nullptr}},
           {{"gpu 0", &zero_gpu}, {"null", nullptr}, {"real", &plans[0]}},
       }) {
    const std::string doc = render_svg_bars(bars);
    INFO(doc);
    const XmlElement svg = check_document(doc);
    CHECK(with_class(svg, "g", "bar").size() == bars.size());
  }
  CHECK(text_contains(check_document(render_svg_bars({})), "no configurations"));
}

TEST_CASE("svg: the batch curve marks the capacity and the largest batch that fits", "[svg]") {
  const SvgCurve c = batch_curve(24);
  REQUIRE(c.answer);
  REQUIRE(*c.answer < 24);  // the curve crosses the capacity
  const std::string doc = render_svg_curve(c);
  CHECK(doc == render_svg_curve(c));
  const XmlElement svg = check_document(doc);
  CHECK(svg.child("title")->text == c.title);
  CHECK(text_contains(svg, "largest batch that fits: " + std::to_string(*c.answer)));
  CHECK(text_contains(svg, c.gpu_name));
  CHECK(svg.all("polyline").size() == 1);
  const std::vector<const XmlElement*> points = with_class(svg, "circle", "point");
  REQUIRE(points.size() == c.points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    CHECK(bytes_in(points[i]->child("title")->text) == c.points[i].second);
    const bool fits = c.points[i].second <= *c.capacity_bytes;
    CHECK((points[i]->attr("fill") == "#FFFFFF") == !fits);
    if (i > 0) {  // left to right, rising
      CHECK(std::strtod(points[i]->attr("cx").c_str(), nullptr) >
            std::strtod(points[i - 1]->attr("cx").c_str(), nullptr));
      CHECK(std::strtod(points[i]->attr("cy").c_str(), nullptr) <=
            std::strtod(points[i - 1]->attr("cy").c_str(), nullptr));
    }
  }
  // 1..24 spans 24×: a log2 axis labelled at the powers of two.
  CHECK(text_contains(svg, "log scale"));
  CHECK(has_text(svg, "16"));
  CHECK(!has_text(svg, "3"));

  // 1..12 spans 12×: linear.
  SvgCurve linear = batch_curve(12);
  const XmlElement lin = check_document(render_svg_curve(linear));
  CHECK(!text_contains(lin, "log scale"));
}

TEST_CASE("svg: the seq curve uses a log2 axis labelled with the real values", "[svg]") {
  SvgCurve c;
  c.knob = "seq";
  const Gpu h100 = find_gpu("h100-80gb", "--gpu");
  c.capacity_bytes = h100.capacity_bytes;
  c.gpu_name = h100.name;
  for (std::uint64_t s = 512; s <= 131072; s *= 2) {
    const PlanResult p = llama_plan(
        {{"mode", "train"}, {"batch", "1"}, {"seq", std::to_string(s)}, {"dp", "8"}, {"zero", "3"}});
    c.points.emplace_back(s, p.budget.peak_device);
    if (p.budget.peak_device <= h100.capacity_bytes) c.answer = s;
  }
  REQUIRE(c.answer);
  const XmlElement svg = check_document(render_svg_curve(c));
  CHECK(text_contains(svg, "log scale"));
  CHECK(has_text(svg, "131,072"));
  CHECK(has_text(svg, "512"));
  CHECK(text_contains(svg, "largest sequence length that fits: "));
  CHECK(!svg.child("title")->text.empty());
}

TEST_CASE("svg: degenerate curves are still valid SVG", "[svg]") {
  std::vector<SvgCurve> curves;
  curves.push_back(SvgCurve{});  // nothing at all
  SvgCurve one;
  one.knob = "batch";
  one.points = {{4, 1ULL << 33}};
  curves.push_back(one);
  one.capacity_bytes = 1ULL << 34;
  one.answer = 4;
  curves.push_back(one);
  SvgCurve zeros;
  zeros.knob = "seq";
  zeros.points = {{0, 0}, {0, 0}, {1, 0}};
  zeros.capacity_bytes = 0;
  zeros.answer = 0;
  curves.push_back(zeros);
  SvgCurve none_fit;
  none_fit.knob = "batch";
  none_fit.points = {{1, 100}, {2, 200}};
  none_fit.capacity_bytes = 50;
  curves.push_back(none_fit);
  SvgCurve huge;
  huge.knob = "seq";
  huge.points = {{1, 1}, {~std::uint64_t{0}, ~std::uint64_t{0}}};
  huge.capacity_bytes = ~std::uint64_t{0};
  huge.answer = ~std::uint64_t{0};
  curves.push_back(huge);
  SvgCurve full_range;
  full_range.knob = "tokens";
  full_range.points = {{0, 0}, {~std::uint64_t{0}, 1}};
  curves.push_back(full_range);
  SvgCurve answer_off_grid;
  answer_off_grid.knob = "batch";
  answer_off_grid.points = {{2, 10}, {4, 20}};
  answer_off_grid.capacity_bytes = 15;
  answer_off_grid.answer = 3;
  curves.push_back(answer_off_grid);
  SvgCurve empty_with_gpu;
  empty_with_gpu.capacity_bytes = 1ULL << 30;
  empty_with_gpu.answer = 7;
  curves.push_back(empty_with_gpu);
  for (const SvgCurve& c : curves) {
    const std::string doc = render_svg_curve(c);
    INFO(doc);
    check_document(doc);
  }
  CHECK(text_contains(check_document(render_svg_curve(SvgCurve{})), "no points"));
}
