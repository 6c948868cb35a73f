// Encoders (BERT, RoBERTa, XLM-RoBERTa) on tiny models worked by hand: the
// parameter count, no KV cache, and one forward's working set under
// transformers.
//
// Tiny dimensions: h = 8, a = 2 heads of d = 4, I = 12, V = 10, two
// layers, 6 positions, 2 token types.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {

std::string tiny(const std::string& type, const std::string& extra = "") {
  return R"({"model_type": ")" + type + R"(", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "intermediate_size": 12, "max_position_embeddings": 6,
      "type_vocab_size": 2)" +
         extra + "}";
}

}  // namespace

TEST_CASE("bert: embeddings, post-LN layers and the pooler, by hand", "[encoders]") {
  const ModelSpec m = test::model(tiny("bert"));
  CHECK(m.encoder_only);
  CHECK(m.block == BlockLayout::post_ln);
  // Embeddings: words 80, positions 48, token types 16, LayerNorm 16 → 160.
  // Per layer: q, k, v, o 4 · (64 + 8) = 288; intermediate 96 + 12, output
  // 96 + 8; two LayerNorms 32 → 532. Pooler 64 + 8. No final norm, no head.
  const ParameterCount c = count_parameters(m);
  CHECK(c.total == 160 + 2 * 532 + 72);
  CHECK(c.pooler == 72);
  CHECK(c.lm_head == 0);
  CHECK(c.final_norm == 0);
  // bert-base-uncased (V 30522, h 768, L 12, I 3072, 512 positions, 2
  // types) is the published 109,482,240 with its pooler.
  CHECK(count_parameters(test::model(R"({"model_type": "bert", "vocab_size": 30522, "hidden_size": 768,
      "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
      "max_position_embeddings": 512, "type_vocab_size": 2})"))
            .total == 109'482'240);
  CHECK_THROWS_WITH(test::model(tiny("bert", R"(, "position_embedding_type": "relative_key")")),
                    Catch::Contains("not modelled"));
}

TEST_CASE("roberta: the position table's rows before the first position",
          "[encoders][kv:roberta][act:roberta][kv:xlm-roberta][act:xlm-roberta]") {
  const ModelSpec m = test::model(tiny("roberta", R"(, "pad_token_id": 1)"));
  CHECK(m.position_offset == 2);
  CHECK(count_parameters(m).total == count_parameters(test::model(tiny("bert"))).total);
  // 6 rows hold 4 positions.
  CHECK_NOTHROW(test::workload(m, {{"seq", "4"}}));
  test::check_rejects(m, {{"seq", "5"}}, "--seq", "the first 2 before the first position");
  CHECK(test::model(tiny("xlm-roberta")).type == ModelType::xlm_roberta);
  // Nothing cached, and one forward holds what BERT's does (the offset
  // moves which rows are read, not what is held): for T = 6 tokens, the
  // attention moment's 576 (see below).
  for (const char* type : {"roberta", "xlm-roberta"}) {
    INFO(type);
    const ModelSpec r = test::model(tiny(type, R"(, "pad_token_id": 1)"));
    const Workload w = test::workload(r, {{"batch", "2"}, {"seq", "3"}});
    const Budget b = estimate(r, w);
    CHECK(test::component(b, Component::kv_cache) == 0);
    REQUIRE(b.phases.size() == 2);
    CHECK(b.phases[1].total == b.phases[0].total + test::cublas_workspaces(w) + 576);
  }
}

TEST_CASE("bert: one forward under transformers, nothing cached", "[encoders][kv:bert][act:bert]") {
  const ModelSpec m = test::model(tiny("bert"));
  const Workload w = test::workload(m, {{"batch", "2"}, {"seq", "3"}});
  const Budget b = estimate(m, w);
  CHECK(test::component(b, Component::kv_cache) == 0);
  REQUIRE(b.phases.size() == 2);
  CHECK(b.phases[1].name == "forward");
  // T = 6 tokens, bf16. Attention: residual, input 192, q/k/v 3·T·h 288,
  // output 96 → 576. The MLP moment is smaller: residual and input 2·T·h
  // 192, the intermediate output and its GELU (one kernel) 2·T·I 288 → 480;
  // so are the outputs: last hidden states 96 and the pooler's b·h 32.
  CHECK(b.phases[1].total == b.phases[0].total + test::cublas_workspaces(w) + 576);
  // Training, other engines and a draft model are refused with why.
  test::check_rejects(m, {{"mode", "train"}}, "tiny", "inference is");
  test::check_rejects(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}}, "--engine", "pooling runner");
}
