#include "tools/serve_command.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "models/chat_template.h"
#include "tools/flag_ranges.h"
#include "models/tokenizer.h"
#include "runtime/model_bench.h"
#include "runtime/artifact.h"
#include "runtime/executor.h"
#include "runtime/gpu_executor.h"
#include "runtime/paged_generate.h"
#include "runtime/server/http_server.h"

namespace strata::tools {

namespace {

// The tokenizer and chat template, as the server sees them.
class ModelText : public runtime::server::ServedText {
 public:
  ModelText(const models::Tokenizer& tok, std::optional<models::ChatTemplate> chat) : tok_(tok), chat_(std::move(chat)) {
    if (chat_ && !chat_->eosToken().empty())
      if (auto id = tok_.tokenId(chat_->eosToken())) stop_.push_back(*id);
  }
  std::vector<int64_t> encode(const std::string& text) const override { return tok_.encode(text); }
  bool hasChatTemplate() const override { return chat_.has_value(); }
  std::vector<int64_t> encodeChat(const nlohmann::ordered_json& messages) const override {
    return tok_.encode(chat_->render(messages, /*addGenerationPrompt=*/true), /*addSpecial=*/false);
  }
  std::vector<int64_t> chatStopIds() const override { return stop_; }
  // A model's vocabulary can be larger than its tokenizer's (padded
  // embeddings): ids the tokenizer lacks decode to nothing, as in HF.
  std::string decode(const std::vector<int64_t>& ids) const override { return tok_.decode(known(ids)); }
  std::string tokenText(int64_t id) const override { return tok_.decode(known({id}), /*skipSpecial=*/false); }

 private:
  std::vector<int64_t> known(const std::vector<int64_t>& ids) const {
    std::vector<int64_t> out;
    for (int64_t id : ids)
      if (tok_.hasId(id)) out.push_back(id);
    return out;
  }
  const models::Tokenizer& tok_;
  std::optional<models::ChatTemplate> chat_;
  std::vector<int64_t> stop_;
};


}  // namespace

void addServeOptions(CLI::App* cmd, ServeOpts& o) {
  cmd->add_option("MODEL", o.model, "HF model folder, .onnx or .gguf file, or an artifact directory from strata compile")->required();
  auto* backend = cmd->add_option("--backend", o.backend,
                                  "Kernels to run with: 'cpu' (generated for this CPU), 'reference' (plain CPU ops) or "
                                  "'cuda' (GPU 0, sm_90) or 'xe' (the first Intel GPU Level Zero finds: PVC, Arc B-series); an artifact "
                                  "runs on the target it was compiled for")
                      ->capture_default_str();
  cmd->add_option("--host", o.host, "Address to listen on (0.0.0.0 for every interface)")->capture_default_str();
  cmd->add_option("--port", o.port, "Port to listen on (0: any free port, printed at start)")->capture_default_str();
  cmd->add_option("--served-model-name", o.servedName,
                  "The model name clients send in 'model' (default: the model folder's or file's name)");
  cmd->add_option("--api-key", o.apiKey,
                  "Require 'Authorization: Bearer KEY' on /v1/* (default: $STRATA_API_KEY when set, else none)");
  cmd->add_option("--chat-template", o.chatTemplate,
                  "A Jinja chat template file (or a tokenizer_config.json) for /v1/chat/completions instead of the "
                  "model's own");
  cmd->add_option("--max-seqs", o.maxSeqs, "Sequences per model step (continuous batching)")->capture_default_str();
  cmd->add_option("--max-step-tokens", o.maxStepTokens,
                  "Tokens per model step over all sequences (long prompts are prefilled in chunks)")
      ->capture_default_str();
  auto* cacheMiB = cmd->add_option("--cache-mb", o.cacheMiB,
                  "KV cache memory in MiB (default: enough for --max-seqs full-context sequences, or what the device's "
                  "free memory holds less a reserve when that is less)");
  auto* block = cmd->add_option("--block-size", o.blockSize, "Tokens per KV cache block (an artifact: the size it was compiled for)")
                    ->capture_default_str();
  cmd->add_flag("--no-warmup", o.noWarmup,
                "Serve without first running a short prefill and decode step (which takes the first steps' one-time "
                "work, such as packing CPU weights into panels, off the first request)");
  cmd->add_flag("--no-prefix-cache", o.noPrefixCache,
                "Compute every prompt in full (default: full KV blocks of earlier prompts are reused, keyed by their "
                "tokens and all tokens before them; outputs are the same either way)");
  cmd->add_option("--max-queue", o.maxQueue,
                  "Requests that may wait for the model; more are answered 503 with Retry-After")
      ->capture_default_str();
  cmd->add_option("--max-prompt-tokens", o.maxPromptTokens, "Longest prompt accepted, in tokens (0: the context)")
      ->capture_default_str();
  cmd->add_option("--max-tokens", o.maxTokens, "Largest max_tokens a request may ask for (0: the context)")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", o.maxBodyBytes, "Largest request body; larger ones are answered 413")
      ->capture_default_str();
  cmd->add_option("--max-n", o.maxN, "Largest n (completions per prompt) a request may ask for")->capture_default_str();
  cmd->add_option("--threads", o.threads, "HTTP I/O threads (connections are asynchronous, not a thread each)")
      ->capture_default_str();
  cmd->add_option("--weights", o.weightsDir, "An artifact's model weight files are now in this folder");
  cmd->callback([&o, block, backend, cacheMiB] {
    o.blockSizeGiven = block->count() > 0;
    o.cacheMiBGiven = cacheMiB->count() > 0;
    o.backendGiven = backend->count() > 0;
  });
}

void checkServeOpts(const ServeOpts& o) {
  // Every numeric flag checked before anything is loaded.
  if (o.port < 0 || o.port > 65535) fail("--port must be in 0..65535, got {}", o.port);
  flagInRange("--threads", o.threads, 1, 64);
  flagInRange<int64_t>("--max-seqs", o.maxSeqs, 1, kMaxSeqsFlag);
  flagInRange<int64_t>("--max-step-tokens", o.maxStepTokens, 1, kMaxTokensFlag);
  flagInRange<int64_t>("--max-queue", o.maxQueue, 1, int64_t(1) << 20);
  flagInRange<int64_t>("--max-prompt-tokens", o.maxPromptTokens, 0, kMaxTokensFlag);
  flagInRange<int64_t>("--max-tokens", o.maxTokens, 0, kMaxTokensFlag);
  flagInRange<int64_t>("--max-body-bytes", o.maxBodyBytes, 256, int64_t(1) << 32);
  flagInRange<int64_t>("--max-n", o.maxN, 1, kMaxSeqsFlag);
  flagInRange<int64_t>("--block-size", o.blockSize, 1, kMaxBlockSizeFlag);
  if (o.cacheMiBGiven) checkCacheMiB(o.cacheMiB);

}

int serveLoaded(const ServeOpts& o, const runtime::GraphRunner& exec, int64_t blockSize, const models::Tokenizer& tok,
                const std::string& tokenizerPath) {
  const nlohmann::json& meta = exec.graph().meta;
  const int64_t vocab = meta.value("vocab_size", (int64_t)0);
  if (vocab > 0 && tok.vocabSize() > vocab)
    fail("the tokenizer has {} tokens but the model's vocabulary is {}: they do not belong together", tok.vocabSize(), vocab);

  std::optional<models::ChatTemplate> chat;
  if (!o.chatTemplate.empty()) chat = models::ChatTemplate::fromFile(o.chatTemplate, tokenizerPath);
  else chat = models::ChatTemplate::ofTokenizer(tokenizerPath);
  ModelText text(tok, std::move(chat));

  runtime::server::ServeLimits lim;
  std::filesystem::path name = std::filesystem::absolute(o.model).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  lim.modelName = o.servedName.empty() ? name.filename().string() : o.servedName;
  lim.maxPromptTokens = o.maxPromptTokens;
  lim.maxTokens = o.maxTokens;
  lim.maxContext = meta.value("max_position_embeddings", (int64_t)0);
  lim.maxN = o.maxN;
  lim.vocabSize = vocab;
  if (meta.contains("eos_token_id")) lim.eosIds.push_back(meta["eos_token_id"].get<int64_t>());

  runtime::server::EngineOptions eo;
  eo.maxQueue = o.maxQueue;
  runtime::SchedulerOptions& so = eo.scheduler;
  so.blockSize = blockSize;
  so.maxSeqs = o.maxSeqs;
  so.maxStepTokens = o.maxStepTokens;
  so.maxContext = lim.maxContext;
  so.prefixCache = !o.noPrefixCache;
  runtime::Device& device = exec.cacheDevice();
  const runtime::KvCacheShape shape = runtime::kvCacheShapeFor(exec, blockSize, 0);
  if (o.cacheMiBGiven) {
    so.numBlocks = runtime::blocksForCacheMiB(shape, device, o.cacheMiB);
  } else {
    const int64_t ctx = lim.maxContext > 0 ? lim.maxContext : 4096;
    const int64_t wanted = o.maxSeqs * ((ctx + blockSize - 1) / blockSize);
    so.numBlocks = runtime::defaultCacheBlocks(shape, wanted, device.available());
  }

  std::string apiKey = o.apiKey;
  if (apiKey.empty())
    if (const char* env = std::getenv("STRATA_API_KEY")) apiKey = env;

  if (!o.noWarmup) {
    // As llama-server does at load: one short prefill and a decode step in
    // a cache of their own, before the port opens (health checks wait).
    // It only saves time: a model it cannot run (random ids past a
    // vocabulary its metadata does not give) is served without it.
    const auto t0 = std::chrono::steady_clock::now();
    try {
      runtime::timePagedModel(exec, 1, 8, 1, blockSize, 0);
      std::fprintf(stderr, "strata serve: warmed up in %.1f s\n",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } catch (const Error& e) {
      std::fprintf(stderr, "strata serve: warning: no warm-up (%s)\n", e.what());
    }
  }

  runtime::server::Metrics metrics;
  runtime::server::Engine engine(exec, eo, [&](const std::vector<int64_t>& ids) { return text.decode(ids); },
                                 &metrics);
  runtime::server::ServerOptions sopts;
  sopts.host = o.host;
  sopts.port = o.port;
  sopts.apiKey = apiKey;
  sopts.maxBodyBytes = o.maxBodyBytes;
  sopts.threads = o.threads;
  runtime::server::HttpServer server(sopts, engine, text, lim, metrics);
  server.run([&](const std::string& url) {
    std::fprintf(stderr,
                 "strata serve: %s on %s (model '%s', %s, KV cache %lld blocks of %lld tokens = %.0f MiB, prefix "
                 "cache %s, chat template: %s)\n",
                 url.c_str(), device.name(), lim.modelName.c_str(), o.backend.c_str(), (long long)so.numBlocks,
                 (long long)so.blockSize, so.numBlocks * (double)shape.blockBytes() / 1048576.0,
                 so.prefixCache ? "on" : "off",
                 text.hasChatTemplate() ? "yes" : "none (/v1/chat/completions refuses)");
    std::fflush(stderr);
  });
  std::fprintf(stderr, "strata serve: stopped\n");
  return 0;
}

int serveArtifact(const ServeOpts& given) {
  checkServeOpts(given);
  ServeOpts o = given;
  if (!runtime::isArtifact(o.model)) fail("{} is not an artifact directory from strata compile", o.model);
  runtime::Artifact a = runtime::loadArtifact(o.model, {o.weightsDir});
  if (o.blockSizeGiven && o.blockSize != a.blockSize)
    fail("--block-size {}: {} was compiled for KV blocks of {} tokens", o.blockSize, o.model, a.blockSize);
  if (!a.tokenizer) fail("strata serve needs the model's tokenizer.json; {} names none", o.model);
  models::Tokenizer tok = models::Tokenizer::load(*a.tokenizer);
  const std::string tokenizerPath = *a.tokenizer;
  const int64_t blockSize = a.blockSize;
  const std::string built = a.backend();
  if (o.backendGiven && o.backend != built)
    fail("{} is compiled for {}: it serves with --backend {}, not --backend {}", o.model, a.target, built, o.backend);
  o.backend = built;
  if (a.gpu()) {
    runtime::GpuModel gpu = runtime::loadGpuModel(std::move(a), {.verbose = true});
    return serveLoaded(o, *gpu.exec, blockSize, tok, tokenizerPath);
  }
  runtime::Executor cpu(std::move(a.graph), std::move(a.kernels));
  return serveLoaded(o, cpu, blockSize, tok, tokenizerPath);
}

}  // namespace strata::tools
