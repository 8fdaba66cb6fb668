// Profile JSON round trip and strict errors, lookup interpolation, and the least-squares fits.
#include "simulator/cost/profile_fit.h"
#include "simulator/cost/profile_table.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "simulator/cost/cost_model.h"
#include "simulator/cost/optimizer_step_cost.h"
#include "simulator/model/layer_ops.h"
#include "simulator/spec/error.h"
#include "simulator/spec/gpu_catalog.h"
#include "tests/test_helpers.h"

namespace ppsim {
namespace {

// A bf16 s x s x s GEMM op, one launch per pass.
Op square_gemm(double s) {
  Op op;
  op.name = "qkv_proj";
  op.op_class = OpClass::kGemm;
  op.gemm = {s, s, s, 1};
  op.flops_fwd = op.flops_b = op.flops_w = 2.0 * s * s * s;
  op.bytes_fwd = op.bytes_b = op.bytes_w = 3 * 2.0 * s * s;
  op.kernels_fwd = op.kernels_b = op.kernels_w = 1;
  return op;
}

// A small profile with every table, times from known models.
Profile sample_profile() {
  Profile p;
  p.backend = "cuda";
  p.device = {"NVIDIA H100 80GB HBM3", "H100-SXM-80GB", 8, "node0", "13.0", "13.0", "2.27.7",
              "cublasLt 13.0.0"};
  p.method = {5, 20, "cuda_events"};
  for (double s : {1024.0, 2048.0, 4096.0, 8192.0}) {
    GemmSample g{"bf16", s, s, s, 1, 0};
    g.seconds = 5e-6 + g.flops() / 700e12;
    p.gemm.push_back(g);
  }
  p.attention.push_back({"bf16", false, "gemm_softmax", 64, 4096, 128, true, 2.0 * 64 * 4096.0 * 4096 * 128, 1e-3});
  p.attention.push_back({"bf16", true, "gemm_softmax", 64, 4096, 128, true, 5.0 * 64 * 4096.0 * 4096 * 128, 3e-3});
  for (double b : {1e7, 1e8, 1e9}) {
    p.memory.push_back({"copy", b, 3e-6 + b / 3e12});
    p.memory.push_back({"elementwise", b, 3e-6 + b / 2.8e12});
    p.host_transfer.push_back({true, true, b, 10e-6 + b / 50e9});
  }
  for (double b = 1024; b <= (1 << 30); b *= 4) {
    p.collectives.push_back({Collective::kAllReduce, 8, 8, "intra_node", b, 20e-6 + b / 200e9});
  }
  p.fits = fit_profile(p);
  return p;
}

// The same keys in the same order, equal strings and booleans, numbers equal to rounding.
void require_same_json(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                       const std::string& path = "") {
  INFO(path);
  REQUIRE(a.type() == b.type());
  if (a.is_object()) {
    REQUIRE(a.size() == b.size());
    auto ia = a.begin();
    auto ib = b.begin();
    for (; ia != a.end(); ++ia, ++ib) {
      REQUIRE(ia.key() == ib.key());
      require_same_json(ia.value(), ib.value(), path + "/" + ia.key());
    }
  } else if (a.is_array()) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) require_same_json(a[i], b[i], path + "/" + std::to_string(i));
  } else if (a.is_number()) {
    REQUIRE(a.get<double>() == Approx(b.get<double>()).epsilon(1e-13).margin(1e-300));
  } else {
    REQUIRE(a == b);
  }
}

void require_round_trip(const Profile& p) {
  std::string text = profile_json(p);
  std::string again = profile_json(parse_profile(text, "p.json"));
  require_same_json(nlohmann::ordered_json::parse(text), nlohmann::ordered_json::parse(again));
}

TEST_CASE("Profile: JSON round trip keeps every field") {
  Profile p = sample_profile();
  require_round_trip(p);
  std::string text = profile_json(p);
  Profile q = parse_profile(text, "p.json");
  REQUIRE(q.gemm.size() == 4);
  REQUIRE(q.gemm[1].seconds == Approx(p.gemm[1].seconds).epsilon(1e-14));
  REQUIRE(q.device.catalog_gpu == "H100-SXM-80GB");
  REQUIRE(q.collectives.back().bytes == double(1 << 30));
  REQUIRE(q.fits.collectives.size() == 1);
  REQUIRE(q.fits.gemm.size() == 1);
}

std::string error_of(const std::string& text) {
  try {
    parse_profile(text, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("Profile: strict parsing names the path and what was expected") {
  std::string good = profile_json(sample_profile());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  CHECK_THAT(error_of(replace("\"version\": 1", "\"version\": 7")),
             Catch::Contains("/version: unsupported profile version 7"));
  CHECK_THAT(error_of(replace("\"dtype\": \"bf16\"", "\"dtype\": \"bf61\"")),
             Catch::Contains("/gemm/0/dtype: unknown value 'bf61'"));
  CHECK_THAT(error_of(replace("\"batch\": 1.0", "\"batches\": 1.0")),
             Catch::Contains("/gemm/0"));
  CHECK_THAT(error_of(replace("\"op\": \"all_reduce\"", "\"op\": \"allreduce\"")),
             Catch::Contains("/collectives/0/op"));
  CHECK_THAT(error_of(replace("\"catalog_gpu\": \"H100-SXM-80GB\"", "\"catalog_gpu\": \"H100\"")),
             Catch::Contains("/device/catalog_gpu: unknown GPU 'H100'"));
  CHECK_THAT(error_of(replace("\"format\": \"ppsim-profile\"", "\"format\": \"other\"")),
             Catch::Contains("/format"));
  CHECK_THAT(error_of("{\"format\": \"ppsim-profile\", \"version\": 1, \"backend\": \"tpu\"}"),
             Catch::Contains("/backend"));
}

TEST_CASE("Profile: a derived column that disagrees with size and time is an error") {
  Profile p = sample_profile();
  nlohmann::json j = nlohmann::json::parse(profile_json(p));
  j["memory"][0]["GBps"] = j["memory"][0]["GBps"].get<double>() * 2;
  CHECK_THAT(error_of(j.dump()), Catch::Contains("/memory/0/GBps: expected"));
}

TEST_CASE("ProfileTable: series are exact at measured points and monotone between") {
  ProfileTable::Series s = ProfileTable::make_series({{1e9, 2e-3}, {1e6, 1e-5}, {1e3, 3e-6}});
  REQUIRE(s.x == std::vector<double>{1e3, 1e6, 1e9});
  for (size_t i = 0; i < s.x.size(); ++i) {
    ProfileEstimate e = s.at(s.x[i]);
    CHECK(e.seconds == s.seconds[i]);
    CHECK_FALSE(e.extrapolated);
  }
  double previous = 0;
  for (double x = 1e3; x <= 1e9; x *= 1.5) {
    ProfileEstimate e = s.at(x);
    CHECK(e.seconds >= previous);
    CHECK_FALSE(e.extrapolated);
    previous = e.seconds;
  }
  // Halfway in log(x) between 1e6 and 1e9 is the geometric mean of the two times.
  CHECK(s.at(std::sqrt(1e6 * 1e9)).seconds == Approx(std::sqrt(1e-5 * 2e-3)).epsilon(1e-12));
  // Outside: the latency floor below, the last rate above; both flagged.
  CHECK(s.at(10).seconds == 3e-6);
  CHECK(s.at(10).extrapolated);
  CHECK(s.at(2e9).seconds == Approx(4e-3));
  CHECK(s.at(2e9).extrapolated);
}

TEST_CASE("ProfileTable: GEMM lookup by dtype, with twins and extrapolation") {
  Profile p = sample_profile();
  ProfileTable table(p);
  auto at = [&](Precision precision, double s) {
    return table.gemm(precision, GemmShape{s, s, s, 1});
  };
  REQUIRE(at(Precision::kBf16, 4096)->seconds == p.gemm[2].seconds);
  REQUIRE_FALSE(at(Precision::kBf16, 4096)->extrapolated);
  REQUIRE(at(Precision::kFp16, 4096)->seconds == p.gemm[2].seconds);
  REQUIRE_FALSE(at(Precision::kFp16, 4096)->note.empty());
  REQUIRE_FALSE(at(Precision::kFp8, 4096).has_value());  // The fp8 roofline is the better guess.
  REQUIRE(at(Precision::kBf16, 16384)->extrapolated);
  double mid = at(Precision::kBf16, 3000)->seconds;
  REQUIRE(mid > p.gemm[1].seconds);
  REQUIRE(mid < p.gemm[2].seconds);
}

TEST_CASE("ProfileTable: a measured GEMM shape gives its own time, not its FLOPs' neighbours'") {
  Profile p;
  p.backend = "cuda";
  // Three shapes of equal FLOPs (2^31) at different speeds, as transposed passes run, and two
  // others around them.
  p.gemm.push_back({"bf16", 1024, 1024, 1024, 1, 1e-4});
  p.gemm.push_back({"bf16", 256, 4096, 1024, 1, 2e-4});
  p.gemm.push_back({"bf16", 4096, 1024, 256, 1, 4e-4});
  p.gemm.push_back({"bf16", 512, 512, 512, 1, 2e-5});
  p.gemm.push_back({"bf16", 2048, 2048, 2048, 1, 8e-4});
  ProfileTable table(p);
  auto at = [&](double m, double n, double k) {
    return table.gemm(Precision::kBf16, GemmShape{m, n, k, 1})->seconds;
  };
  CHECK(at(1024, 1024, 1024) == 1e-4);
  CHECK(at(256, 4096, 1024) == 2e-4);
  CHECK(at(4096, 1024, 256) == 4e-4);
  // An unmeasured shape of the same FLOPs: the series point, the geometric mean of the three.
  CHECK(at(2048, 1024, 512) == Approx(std::cbrt(1e-4 * 2e-4 * 4e-4)).epsilon(1e-12));
  // Fractional dims (tokens per expert) round to the measured shape, scaled by the FLOPs ratio.
  CHECK(at(256.4, 4096, 1024) == Approx(2e-4 * 256.4 / 256).epsilon(1e-12));
  CHECK_FALSE(table.gemm(Precision::kBf16, GemmShape{256.4, 4096, 1024, 1})->extrapolated);
}

TEST_CASE("Adam step: the profile's measured kernel when it has one, else the bandwidth model") {
  GpuSpec gpu = *find_gpu("H100-SXM-80GB");
  const double parameters = 1e9;
  const double bandwidth_model = parameters * 34 / (gpu.memory_bandwidth * 0.9);
  // The sample profile has no "adam" table: the bandwidth model, as without a profile.
  Profile p = sample_profile();
  ProfileTable without(p);
  CHECK_FALSE(without.optimizer(34e9).has_value());
  CHECK(adam_step_seconds(parameters, gpu, 0.9, &without) == bandwidth_model);
  CHECK(adam_step_seconds(parameters, gpu, 0.9, nullptr) == bandwidth_model);
  // Measured Adam steps at 1e8 and 1e9 parameters' bytes: exact at a point, and the rate of
  // the largest point above it.
  p.memory.push_back({"adam", 34e8, 2e-3});
  p.memory.push_back({"adam", 34e9, 15e-3});
  ProfileTable with(p);
  CHECK(adam_step_seconds(parameters, gpu, 0.9, &with) == 15e-3);
  CHECK(adam_step_seconds(2 * parameters, gpu, 0.9, &with) == Approx(30e-3));
  CHECK(adam_step_seconds(0, gpu, 0.9, &with) == 0);
  // The JSON carries the kernel name back.
  CHECK(ProfileTable(parse_profile(profile_json(p), "p.json")).optimizer(34e9)->seconds ==
        Approx(15e-3));
}

TEST_CASE("ProfileTable: collectives use the fit outside the measured sizes") {
  Profile p = sample_profile();
  ProfileTable table(p);
  auto inside = table.collective(Collective::kAllReduce, 8, 8, 4096);
  REQUIRE(inside->seconds == Approx(20e-6 + 4096 / 200e9).epsilon(1e-12));
  REQUIRE_FALSE(inside->extrapolated);
  auto outside = table.collective(Collective::kAllReduce, 8, 8, 4.0 * (1 << 30));
  REQUIRE(outside->extrapolated);
  REQUIRE(outside->seconds == Approx(20e-6 + 4.0 * (1 << 30) / 200e9).epsilon(1e-9));
  REQUIRE_FALSE(table.collective(Collective::kAllGather, 8, 8, 4096).has_value());
}

TEST_CASE("Fits: alpha-beta recovers known alpha and beta exactly") {
  std::vector<double> bytes, seconds;
  const double alpha = 12.5e-6, beta = 187.25e9;
  for (double b = 1024; b <= (1 << 30); b *= 2) {
    bytes.push_back(b);
    seconds.push_back(alpha + b / beta);
  }
  AlphaBetaFit fit = fit_alpha_beta(bytes, seconds);
  REQUIRE(fit.pieces.size() == 1);
  CHECK(std::abs(fit.pieces[0].alpha - alpha) / alpha < 1e-9);
  CHECK(std::abs(fit.pieces[0].beta - beta) / beta < 1e-9);
  CHECK(fit.residuals.max_rel < 1e-9);
  CHECK(fit.residuals.points == static_cast<int64_t>(bytes.size()));
}

TEST_CASE("Fits: alpha-beta splits where the protocol changes") {
  // LL-like below 64 KiB (alpha 5 us, 20 GB/s), Simple-like above (alpha 30 us, 200 GB/s).
  std::vector<double> bytes, seconds;
  for (double b = 1024; b <= (1 << 30); b *= 2) {
    bytes.push_back(b);
    seconds.push_back(b <= 65536 ? 5e-6 + b / 20e9 : 30e-6 + b / 200e9);
  }
  AlphaBetaFit fit = fit_alpha_beta(bytes, seconds);
  REQUIRE(fit.pieces.size() == 2);
  CHECK(fit.pieces[0].max_bytes == 65536);
  CHECK(fit.pieces[0].alpha == Approx(5e-6).epsilon(1e-9));
  CHECK(fit.pieces[0].beta == Approx(20e9).epsilon(1e-9));
  CHECK(fit.pieces[1].alpha == Approx(30e-6).epsilon(1e-9));
  CHECK(fit.pieces[1].beta == Approx(200e9).epsilon(1e-9));
  CHECK(fit.residuals.max_rel < 1e-9);
}

TEST_CASE("Fits: GEMM efficiency model recovers latency, peak and bandwidth") {
  std::vector<double> flops, bytes, seconds;
  const double latency = 4e-6, peak = 750e12, bandwidth = 3e12;
  for (double m : {256.0, 1024.0, 4096.0, 16384.0}) {
    for (double k : {64.0, 1024.0, 8192.0}) {
      GemmSample g{"bf16", m, 4096, k, 1, 0};
      flops.push_back(g.flops());
      bytes.push_back(g.bytes());
      seconds.push_back(latency + g.flops() / peak + g.bytes() / bandwidth);
    }
  }
  ComputeFit fit = fit_compute(flops, bytes, seconds);
  CHECK(fit.latency == Approx(latency).epsilon(1e-6));
  CHECK(fit.peak == Approx(peak).epsilon(1e-6));
  CHECK(fit.bandwidth == Approx(bandwidth).epsilon(1e-6));
  CHECK(fit.residuals.max_rel < 1e-6);
  // Pure compute data: the bytes term is dropped, not fitted negative.
  for (size_t i = 0; i < seconds.size(); ++i) seconds[i] = flops[i] / peak;
  ComputeFit pure = fit_compute(flops, bytes, seconds);
  CHECK(pure.peak == Approx(peak).epsilon(1e-9));
  CHECK(pure.bandwidth == 0);
  CHECK(pure.latency == 0);
}

TEST_CASE("CostModel: an attached profile wins over the roofline, op by op") {
  Profile p = sample_profile();
  ProfileTable table(p);
  GpuSpec gpu = *find_gpu("H100-SXM-80GB");
  CostModel roofline(gpu);
  CostModel profiled(gpu, {}, &table);
  REQUIRE(profiled.profile() == &table);
  Op op = square_gemm(4096);
  OpCost with = profiled.op_cost(op);
  OpCost without = roofline.op_cost(op);
  CHECK(without.fwd.source == CostSource::kRoofline);
  CHECK(with.fwd.source == CostSource::kProfile);
  CHECK(with.fwd.seconds == Approx(p.gemm[2].seconds + roofline.kernel_gap()));
  CHECK_FALSE(with.fwd.extrapolated);
  // A whole layer: every op class has a table, so every op comes from the profile, once the
  // plan runs the attention kernel the profile measured (unfused: gemm_softmax). Under the
  // default runtime's fused kernel, which it did not measure, attention keeps the roofline.
  OpShape shape;
  shape.seq_length = 4096;
  shape.tp = 8;
  CostModel unfused(gpu, {}, &table, kDefaultRuntime, AttentionKernel::kUnfused);
  LayerCost layer = unfused.layer_cost(testing::llama2_70b_shape(), shape, 0);
  CHECK(layer.roofline_ops == 0);
  CHECK(layer.profile_ops > 0);
  LayerCost fused = profiled.layer_cost(testing::llama2_70b_shape(), shape, 0);
  CHECK(fused.roofline_ops == 1);  // attention_core.
  CHECK(fused.profile_ops == layer.profile_ops - 1);
  // Without a profile nothing changes.
  LayerCost plain = CostModel(gpu).layer_cost(testing::llama2_70b_shape(), shape, 0);
  CHECK(plain.profile_ops == 0);
  CHECK(plain.extrapolated_ops == 0);
}

// The causal attention call of sample_profile's samples (64 heads x 4,096 tokens, d 128).
Op sampled_attention() {
  Op op;
  op.name = "attention_core";
  op.op_class = OpClass::kAttention;
  op.attention = {64, 4096, 4096, 128, 2048};
  op.flops_fwd = 2.0 * 64 * 4096.0 * 4096 * 128;
  op.flops_b = 2.5 * op.flops_fwd;
  op.bytes_fwd = op.bytes_b = 4 * 2.0 * 64 * 4096 * 128;
  op.kernels_fwd = op.kernels_b = 1;
  return op;
}

TEST_CASE("CostModel: a profile prices attention only with the kernel it measured") {
  Profile p = sample_profile();  // gemm_softmax: 1 ms forward, 3 ms backward.
  GpuSpec gpu = *find_gpu("H100-SXM-80GB");
  const Op op = sampled_attention();
  auto with = [&](const ProfileTable& table, AttentionKernel kernel, bool stand_in = false) {
    return CostModel(gpu, {}, &table, kDefaultRuntime, kernel, stand_in).op_cost(op);
  };
  auto roofline = [&](AttentionKernel kernel) {
    return CostModel(gpu, {}, nullptr, kDefaultRuntime, kernel).op_cost(op);
  };
  ProfileTable table(p);
  const double gap = CostModel(gpu).kernel_gap();
  // Unfused attention is what gemm_softmax measures.
  OpCost unfused = with(table, AttentionKernel::kUnfused);
  CHECK(unfused.fwd.source == CostSource::kProfile);
  CHECK(unfused.fwd.seconds == Approx(1e-3 + gap));
  CHECK(unfused.b.seconds == Approx(3e-3 + gap));
  // The flash kernels were not measured: their datasheet roofline, to the bit.
  for (AttentionKernel kernel :
       {AttentionKernel::kFused, AttentionKernel::kFlash2, AttentionKernel::kTriton}) {
    OpCost cost = with(table, kernel);
    CHECK(cost.fwd.source == CostSource::kRoofline);
    CHECK(cost.fwd.seconds == roofline(kernel).fwd.seconds);
    CHECK(cost.b.seconds == roofline(kernel).b.seconds);
    CHECK(cost.fwd.seconds < roofline(AttentionKernel::kUnfused).fwd.seconds);
  }
  // validate's stand-in: the executor runs the profiler's kernel whatever the plan names.
  OpCost stand_in = with(table, AttentionKernel::kFused, true);
  CHECK(stand_in.fwd.source == CostSource::kProfile);
  CHECK(stand_in.fwd.seconds == Approx(1e-3 + gap));
  // A cuDNN sample prices the fused kernel, and only it.
  Profile both = p;
  both.attention.push_back(
      {"bf16", false, "cudnn_sdpa", 64, 4096, 128, true, op.flops_fwd, 0.25e-3});
  ProfileTable both_table(both);
  CHECK(with(both_table, AttentionKernel::kFused).fwd.seconds == Approx(0.25e-3 + gap));
  CHECK(with(both_table, AttentionKernel::kUnfused).fwd.seconds == Approx(1e-3 + gap));
  CHECK(with(both_table, AttentionKernel::kFlash2).fwd.source == CostSource::kRoofline);
  // What the reports say: the fused kernel's attention was not profiled, the unfused one's (and
  // the stand-in's) was; without a profile there is nothing to say.
  auto unprofiled = [&](const ProfileTable* profile, AttentionKernel kernel, bool stand_in) {
    return CostModel(gpu, {}, profile, kDefaultRuntime, kernel, stand_in).attention_unprofiled();
  };
  CHECK(unprofiled(&table, AttentionKernel::kFused, false));
  CHECK_FALSE(unprofiled(&table, AttentionKernel::kUnfused, false));
  CHECK_FALSE(unprofiled(&table, AttentionKernel::kFused, true));
  CHECK_FALSE(unprofiled(nullptr, AttentionKernel::kFused, false));
  // The lookup itself.
  CHECK(table.has_attention(profile_attention_impls(AttentionKernel::kUnfused)));
  CHECK_FALSE(table.has_attention(profile_attention_impls(AttentionKernel::kFused)));
  CHECK_FALSE(table.attention(Precision::kBf16, false, 128, op.flops_fwd, {}).has_value());
}

// configs/profiles/h200-sxm-quick.json was measured by `ppsim profile` on one H200 SXM
// (configs/profiles/README.md). The Hopper kernel datasheet (gpu_catalog.cc, from published
// H100 GEMM sweeps) must stay within 10% of what that GPU measured for an 8192^3 GEMM.
TEST_CASE("Shipped H200 profile: loads, stands for the H200, and agrees with the datasheet") {
  const Profile profile =
      load_profile(std::string(PPSIM_SOURCE_DIR) + "/configs/profiles/h200-sxm-quick.json");
  CHECK(profile.backend == "cuda");
  CHECK(profile.device.catalog_gpu == "H200-SXM-141GB");
  const GpuSpec h200 = *find_gpu("H200-SXM-141GB");
  auto measured = [&](const std::string& dtype) {
    for (const GemmSample& g : profile.gemm) {
      if (g.dtype == dtype && g.m == 8192 && g.n == 8192 && g.k == 8192) return g.flops() / g.seconds;
    }
    FAIL("no 8192^3 " << dtype << " GEMM in the shipped profile");
    return 0.0;
  };
  const double bf16 = measured("bf16") / h200.peak_bf16_flops;  // 0.815 measured.
  const double fp8 = measured("fp8") / h200.peak_fp8_flops;     // 0.724 measured.
  CHECK(h200.kernels.gemm_bf16 == Approx(bf16).epsilon(0.10));
  CHECK(h200.kernels.gemm_fp8 == Approx(fp8).epsilon(0.10));
  // Attached to a cost model, the measured shape costs what it measured (plus the launch gap).
  ProfileTable table(profile);
  CostModel profiled(h200, {}, &table);
  Op op = square_gemm(8192);
  OpCost cost = profiled.op_cost(op);
  CHECK(cost.fwd.source == CostSource::kProfile);
  CHECK(cost.fwd.seconds == Approx(op.flops_fwd / measured("bf16") + profiled.kernel_gap()));
}

TEST_CASE("load_profile_for: the flag wins over the cluster's path") {
  ClusterSpec cluster = testing::uniform_cluster("H100-SXM-80GB", 1);
  REQUIRE_FALSE(load_profile_for(cluster, "").has_value());
  cluster.profile_path = "no/such/profile.json";
  CHECK_THROWS_AS(load_profile_for(cluster, ""), InputError);
}

}  // namespace
}  // namespace ppsim
