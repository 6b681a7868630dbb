#include "tools/run_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "graph/Pipeline.h"
#include "models/model_source.h"
#include "models/chat_template.h"
#include "models/tokenizer.h"
#include "runtime/artifact.h"
#include "runtime/scheduler.h"
#include "tools/cpu_model.h"

namespace strata::tools {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<int64_t> parseIds(const std::string& s) {
  std::vector<int64_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    std::string tok = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
    try {
      size_t used = 0;
      ids.push_back(std::stoll(tok, &used));
      if (used != tok.size()) throw std::invalid_argument(tok);
    } catch (const std::exception&) {
      fail("--prompt-ids: '{}' is not a token id (expected comma-separated integers, e.g. 0,53,308)", tok);
    }
    if (j == std::string::npos) break;
    i = j + 1;
  }
  if (ids.empty()) fail("--prompt-ids is empty");
  return ids;
}

// The model ready to run: its executor (generated kernels, reference ops or
// an artifact), tokenizer and KV block size.
struct Loaded {
  std::optional<runtime::Executor> exec;
  std::optional<models::Tokenizer> tok;
  int64_t blockSize = 0;
};

Loaded load(const RunOpts& o) {
  Loaded l;
  l.blockSize = o.blockSize;
  if (runtime::isArtifact(o.model)) {
    if (o.backend != "cpu")
      fail("{} is a compiled artifact: it runs its generated kernels (--backend cpu), not --backend {}", o.model, o.backend);
    runtime::Artifact a = runtime::loadArtifact(o.model);
    if (o.blockSizeGiven && o.blockSize != a.blockSize)
      fail("--block-size {}: {} was compiled for KV blocks of {} tokens (recompile with --block-size {})", o.blockSize,
           o.model, a.blockSize, o.blockSize);
    l.blockSize = a.blockSize;
    if (a.tokenizer) l.tok = models::Tokenizer::load(*a.tokenizer);
    l.exec.emplace(std::move(a.graph), std::move(a.kernels));
    return l;
  }
  ops::GraphDef g = graph::formRegions(models::loadModel(o.model));
  if (auto t = models::findTokenizer(o.model)) l.tok = models::Tokenizer::load(*t);
  if (o.backend == "cpu") {
    CompiledCpuModel m = compileCpuModel(std::move(g), o.blockSize, !o.json);
    l.exec.emplace(std::move(m.graph), std::move(m.kernels));
  } else {
    l.exec.emplace(std::move(g));
  }
  return l;
}

struct Prompt {
  std::string label;  // what the user gave (text or ids), for messages and output
  std::vector<int64_t> ids;
};

std::vector<Prompt> readPrompts(const RunOpts& o, const std::optional<models::Tokenizer>& tok,
                                const std::optional<models::ChatTemplate>& chat) {
  std::vector<Prompt> ps;
  auto encode = [&](const std::string& text, const std::string& where) {
    if (!tok) fail("{}: no tokenizer.json beside {}; give --prompt-ids instead", where, o.model);
    // A chat template brings its own special tokens (bos included).
    std::vector<int64_t> ids = chat ? tok->encode(chat->render(text, o.system), false) : tok->encode(text);
    if (ids.empty()) fail("{}: the text encodes to no tokens", where);
    return ids;
  };
  if (!o.batchFile.empty()) {
    std::ifstream in(o.batchFile);
    if (!in) fail("--batch-file {}: cannot read", o.batchFile);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;  // blank lines separate nothing
      ps.push_back({line, encode(line, fmt::format("--batch-file {} line {}", o.batchFile, n))});
    }
    if (ps.empty()) fail("--batch-file {}: no prompts (one per line)", o.batchFile);
  } else if (!o.prompt.empty()) {
    ps.push_back({o.prompt, encode(o.prompt, "--prompt")});
  } else {
    ps.push_back({o.promptIds, parseIds(o.promptIds)});
  }
  return ps;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int runCommand(const RunOpts& o) {
  if (o.backend != "reference" && o.backend != "cpu")
    fail("--backend {}: not available in this build; 'cpu' (generated kernels) and 'reference' (plain CPU ops) are",
         o.backend);
  int given = !o.prompt.empty() + !o.promptIds.empty() + !o.batchFile.empty();
  if (given > 1) fail("give one of --prompt, --prompt-ids or --batch-file, not several (--prompt or --prompt-ids, not both)");
  if (given == 0) fail("no prompt: give --prompt TEXT, --prompt-ids (comma-separated token ids) or --batch-file FILE");
  if (o.maxNewTokens < 0) fail("--max-new-tokens must be >= 0, got {}", o.maxNewTokens);
  if (o.blockSize <= 0) fail("--block-size must be >= 1, got {}", o.blockSize);
  if (o.cacheBlocks < 0) fail("--cache-blocks must be >= 0, got {}", o.cacheBlocks);
  if (o.cacheMiB < 0) fail("--cache-mb must be > 0, got {}", o.cacheMiB);
  if (o.samples < 1) fail("--samples must be >= 1, got {}", o.samples);
  for (const auto& s : o.stop)
    if (s.empty()) fail("--stop: an empty stop string would stop at once");
  if (o.chat && !o.promptIds.empty()) fail("--chat formats text: give --prompt or --batch-file, not --prompt-ids");
  if (!o.system.empty() && !o.chat) fail("--system is part of the chat format: add --chat");
  runtime::SamplingParams sp;
  bool sampling = o.temperature || o.topK || o.topP;
  if (sampling && o.greedy) fail("--greedy cannot be combined with --temperature/--top-k/--top-p");
  sp.greedy = !sampling;
  sp.temperature = o.temperature.value_or(1.0f);
  sp.topK = o.topK.value_or(0);
  sp.topP = o.topP.value_or(1.0f);
  sp.seed = o.seed;
  sp.repetitionPenalty = o.repetitionPenalty;
  sp.validate();

  Loaded l = load(o);
  const runtime::Executor& exec = *l.exec;
  const json& meta = exec.graph().meta;
  int64_t vocab = meta.value("vocab_size", (int64_t)-1);
  if (l.tok && vocab > 0 && l.tok->vocabSize() > vocab)
    fail("the tokenizer has {} tokens but the model's vocabulary is {}: they do not belong together", l.tok->vocabSize(),
         vocab);
  if (!o.stop.empty() && !l.tok) fail("--stop needs the model's tokenizer.json to compare text");
  std::optional<models::ChatTemplate> chat;
  std::optional<int64_t> endOfTurn;
  if (o.chat) {
    if (!l.tok) fail("--chat needs the model's tokenizer.json");
    chat = models::detectChatTemplate(*l.tok);
    if (!chat)
      fail("--chat: the tokenizer has neither Llama 3's (<|start_header_id|>, <|eot_id|>) nor ChatML's (<|im_start|>, "
           "<|im_end|>) turn tokens, so strata does not know this model's chat format");
    endOfTurn = l.tok->tokenId(chat->endOfTurn());
  }
  std::vector<Prompt> prompts = readPrompts(o, l.tok, chat);
  int64_t ctx = meta.value("max_position_embeddings", (int64_t)0);
  std::vector<runtime::GenerateRequest> reqs;
  int64_t blocksForAll = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Prompt& p = prompts[i];
    std::string where = prompts.size() > 1 ? fmt::format("prompt {}", i + 1) : std::string("the prompt");
    for (int64_t id : p.ids)
      if (id < 0 || (vocab > 0 && id >= vocab)) fail("{}: token id {} is outside the vocabulary (0..{})", where, id, vocab - 1);
    if (ctx > 0 && (int64_t)p.ids.size() >= ctx)
      fail("{} has {} tokens; the model's context is {} (max_position_embeddings)", where, p.ids.size(), ctx);
    runtime::GenerateRequest r;
    r.promptIds = p.ids;
    r.maxNewTokens = o.maxNewTokens;
    if (ctx > 0 && (int64_t)p.ids.size() + r.maxNewTokens > ctx) {
      r.maxNewTokens = ctx - (int64_t)p.ids.size();
      if (!o.json)
        std::fprintf(stderr, "note: %s: generating at most %lld tokens (context %lld)\n", where.c_str(),
                     (long long)r.maxNewTokens, (long long)ctx);
    }
    r.sampling = sp;
    r.sampling.seed = sp.seed + i * o.samples;  // completion j samples with seed + j
    if (!o.ignoreEos && meta.contains("eos_token_id")) r.eosId = meta["eos_token_id"].get<int64_t>();
    blocksForAll += ((int64_t)p.ids.size() + r.maxNewTokens + l.blockSize - 1) / l.blockSize * o.samples;
    reqs.push_back(r);
  }

  runtime::SchedulerOptions so;
  so.blockSize = l.blockSize;
  so.numBlocks = o.cacheBlocks > 0 ? o.cacheBlocks : std::max<int64_t>(1, blocksForAll);
  if (o.cacheMiB > 0) {
    uint64_t budget = (uint64_t)(o.cacheMiB * 1048576.0);
    runtime::Device& device = runtime::cpuDevice();
    if (budget > device.capacity())
      fail("--cache-mb {}: more than the {} device's {:.0f} MiB of memory", o.cacheMiB, device.name(),
           device.capacity() / 1048576.0);
    so.numBlocks = runtime::blocksForBudget(runtime::kvCacheShapeFor(exec.graph(), l.blockSize, 0), budget);
  }
  so.maxStepTokens = o.maxStepTokens;
  so.maxSeqs = o.maxSeqs;
  so.maxContext = ctx;

  // One output per (prompt, sample): output j is prompt j / samples.
  const size_t outputs = prompts.size() * (size_t)o.samples;
  const bool single = outputs == 1;
  struct Result {
    std::vector<int64_t> ids;
    std::vector<int64_t> generated;
    runtime::FinishReason why = runtime::FinishReason::Length;
    Clock::time_point first, done;
    std::string shown;  // streamed text so far
  };
  std::map<int64_t, size_t> index;  // scheduler id -> output index
  std::vector<Result> results(outputs);
  // Text of generated ids, cut before the first stop string.
  auto textOf = [&](const std::vector<int64_t>& gen, bool* stopped = nullptr) {
    std::string t = l.tok ? l.tok->decode(gen) : std::string();
    size_t cut = std::string::npos;
    for (const auto& s : o.stop) cut = std::min(cut, t.find(s));
    if (stopped) *stopped = cut != std::string::npos;
    return cut == std::string::npos ? t : t.substr(0, cut);
  };
  runtime::Scheduler::Events ev;
  ev.onToken = [&](int64_t id, int64_t token) {
    Result& r = results[index.at(id)];
    if (r.generated.empty()) r.first = Clock::now();
    r.generated.push_back(token);
    if (!single || o.json) return;
    if (l.tok) {  // print the new suffix of the decoded text
      std::string text = textOf(r.generated);
      if (text.size() > r.shown.size() && text.compare(0, r.shown.size(), r.shown) == 0) {
        std::fputs(text.c_str() + r.shown.size(), stdout);
        r.shown = text;
      }
    } else {
      std::printf("%s%lld", r.generated.size() > 1 ? " " : "", (long long)token);
    }
    std::fflush(stdout);
  };
  ev.onFinish = [&](int64_t id, const std::vector<int64_t>& ids, runtime::FinishReason why) {
    Result& r = results[index.at(id)];
    r.ids = ids;
    r.why = why;
    r.done = Clock::now();
    if (!single && !o.json)
      std::printf("[%zu] %s\n", index.at(id) + 1, l.tok ? textOf(r.generated).c_str() : json(r.generated).dump().c_str());
  };
  runtime::Scheduler sched(exec, so, ev);
  std::function<bool(const std::vector<int64_t>&)> stop;
  if (!o.stop.empty() || endOfTurn)
    stop = [&](const std::vector<int64_t>& gen) {
      if (endOfTurn && !gen.empty() && gen.back() == *endOfTurn) return true;  // the assistant's turn ended
      bool hit = false;
      if (!o.stop.empty()) textOf(gen, &hit);
      return hit;
    };
  Clock::time_point t0 = Clock::now();
  for (size_t i = 0; i < reqs.size(); ++i) {
    std::vector<int64_t> ids = sched.addSamples(reqs[i], o.samples, stop);
    for (size_t k = 0; k < ids.size(); ++k) index[ids[k]] = i * o.samples + k;
  }
  sched.runToCompletion();
  double wall = ms(Clock::now() - t0);

  auto timingsOf = [&](const Result& r) {
    json t = {{"ttft_ms", r.generated.empty() ? 0.0 : ms(r.first - t0)}, {"total_ms", ms(r.done - t0)}};
    if (r.generated.size() > 1) t["ms_per_token"] = ms(r.done - r.first) / double(r.generated.size() - 1);
    return t;
  };
  const auto& st = sched.stats();
  json summary = {{"wall_ms", wall},
                  {"prompts", prompts.size()},
                  {"prompt_tokens", st.promptTokens},
                  {"generated_tokens", st.generatedTokens},
                  {"tokens_per_s", wall > 0 ? st.generatedTokens / (wall / 1000.0) : 0.0},
                  {"steps", st.steps},
                  {"preemptions", st.preemptions},
                  {"recomputed_tokens", st.recomputedTokens},
                  {"cache_blocks", so.numBlocks},
                  {"forks", st.forks},
                  {"copied_blocks", st.copiedBlocks}};
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    if (!o.json) continue;
    json out = {{"token_ids", r.ids},
                {"prompt_tokens", prompts[i / o.samples].ids.size()},
                {"generated_tokens", r.generated.size()},
                {"finish_reason", runtime::finishReasonName(r.why)}};
    out["text"] = l.tok ? json(textOf(r.generated)) : json(nullptr);
    if (!single) out["index"] = i;
    if (o.samples > 1) out["sample"] = i % o.samples;
    if (o.timings) out["timings"] = timingsOf(r);
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  }
  if (single && !o.json) {
    std::printf("\n");
    std::fflush(stdout);
  }
  if (o.timings) {
    if (single) {
      json t = timingsOf(results[0]);
      std::fprintf(stderr, "timings: TTFT %.1f ms, %.2f ms/token, %.1f tokens/s (%lld prompt + %zu generated tokens)\n",
                   t["ttft_ms"].get<double>(), t.value("ms_per_token", 0.0), summary["tokens_per_s"].get<double>(),
                   (long long)st.promptTokens, results[0].generated.size());
    } else {
      std::fprintf(stderr,
                   "timings: %zu prompts x %lld samples, %lld generated tokens in %.1f ms (%.1f tokens/s), %lld steps, "
                   "%lld preemptions (%lld tokens recomputed), %lld cache blocks, %lld forks (%lld blocks copied on "
                   "write)\n",
                   prompts.size(), (long long)o.samples, (long long)st.generatedTokens, wall,
                   summary["tokens_per_s"].get<double>(), (long long)st.steps, (long long)st.preemptions,
                   (long long)st.recomputedTokens, (long long)so.numBlocks, (long long)st.forks,
                   (long long)st.copiedBlocks);
    }
    if (o.json) std::cout << json{{"summary", summary}}.dump() << "\n";
  }
  return 0;
}

}  // namespace strata::tools
