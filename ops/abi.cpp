#include "ops/abi.h"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "ops/gemm_region.h"
#include "ops/quant.h"

namespace strata::abi {

int64_t packedPanelsSize(int64_t K, int64_t N, int64_t width) { return (N + width - 1) / width * K * width; }

namespace {

template <typename T>
void packPanelsOf(const T* w, int64_t K, int64_t N, bool nk, int64_t width, T* out) {
  for (int64_t p = 0, panels = (N + width - 1) / width; p < panels; ++p) {
    const int64_t n0 = p * width, cols = std::min(width, N - n0);
    T* panel = out + p * K * width;
    if (!nk) {
      // [K, N]: each panel row is a run of a source row.
      for (int64_t k = 0; k < K; ++k) {
        std::copy(w + k * N + n0, w + k * N + n0 + cols, panel + k * width);
        std::fill(panel + k * width + cols, panel + (k + 1) * width, T(0));
      }
      continue;
    }
    // [N, K]: a transpose, 16 K at a time so the source runs and the 16
    // destination rows stay in L1.
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
      const int64_t k1 = std::min(K, k0 + 16);
      for (int64_t j = 0; j < width; ++j)
        for (int64_t k = k0; k < k1; ++k) panel[k * width + j] = j < cols ? w[(n0 + j) * K + k] : T(0);
    }
  }
}

}  // namespace

void packPanels(const float* w, int64_t K, int64_t N, bool nk, int64_t width, float* out) {
  packPanelsOf(w, K, N, nk, width, out);
}

ops::Tensor packPanels(const ops::Tensor& w, bool nk, int64_t width) {
  const int64_t K = w.dim(nk ? 1 : 0), N = w.dim(nk ? 0 : 1);
  ops::Tensor p(w.dtype(), {packedPanelsSize(K, N, width)});
  switch (w.dtype()) {
    case ops::DType::F32: packPanelsOf(w.data<float>(), K, N, nk, width, p.mut<float>()); break;
    case ops::DType::F16:
    case ops::DType::BF16:  // bit patterns moved as they are (0 is +0 in both)
      packPanelsOf(w.data<uint16_t>(), K, N, nk, width, p.mut<uint16_t>());
      break;
    default: fail("packPanels: {} weights (f32, f16 or bf16 are packed)", ops::dtypeName(w.dtype()));
  }
  return p;
}

std::optional<Int8BlockForm> int8BlockForm(std::string_view quant) {
  const ops::QuantFormat* f = ops::quantFormat(quant);
  if (!f) return std::nullopt;
  const bool nibbles = f->bits <= 4;
  return Int8BlockForm{f->subBlock, f->offsets || (nibbles && f->qMin != 0), nibbles, f->blockElems, f->subScales()};
}

Int8BlockForm commonInt8Form(std::span<const Int8BlockForm> forms) {
  Int8BlockForm form{0, false, true, -1, false};
  for (const Int8BlockForm& f : forms) {
    form.block = form.block ? std::gcd(form.block, f.block) : f.block;
    form.offsets = form.offsets || f.offsets;
    form.nibbles = form.nibbles && f.nibbles;
    form.superBlock = form.superBlock < 0 || form.superBlock == f.superBlock ? f.superBlock : 0;
    form.subScales = form.subScales || f.subScales;
  }
  if (form.superBlock <= 0) form.superBlock = 0, form.subScales = false;
  if (form.block <= 0) fail("commonInt8Form: no forms");
  return form;
}

Int8BlockPanels packInt8BlockPanels(const uint8_t* rows, int64_t K, int64_t N, int64_t width,
                                    const ops::QuantFormat& f, Int8BlockForm form) {
  if (K % f.blockElems || K <= 0 || N <= 0 || width <= 0)
    fail("packInt8BlockPanels: K = {} must be a positive multiple of {}'s {} (N = {}, panels of {})", K, f.name,
         f.blockElems, N, width);
  // Nibbles hold q - qMin; a qMin below 0 moves into the offsets.
  const int64_t shift = form.nibbles ? f.qMin : 0;
  const bool halves = form.superBlock > 0;
  if (form.block <= 0 || f.subBlock % form.block || ((f.offsets || shift) && !form.offsets) ||
      (form.nibbles && f.bits > 4) || (halves && (form.superBlock != f.blockElems || form.subScales != f.subScales() ||
                                                  (shift && f.subScales()))))
    fail("packInt8BlockPanels: {} (sub-blocks of {}{}, {}-bit integers, blocks of {}) does not fit panels of {}-value "
         "blocks{}{}{}",
         f.name, f.subBlock, f.offsets ? " with offsets" : "", f.bits, f.blockElems, form.block,
         form.offsets ? " with offsets" : "", form.nibbles ? " in nibbles" : "",
         halves ? fmt::format(", f16 scales per {}{}", form.superBlock, form.subScales ? " times i8 ones" : "") : "");
  const int64_t panels = (N + width - 1) / width, blocks = K / f.blockElems, subs = K / form.block;
  const int64_t per = f.subBlock / form.block;  // form's blocks per sub-block of f
  Int8BlockPanels out;
  out.values.assign(size_t(panels * K * width / (form.nibbles ? 2 : 1)), 0);
  if (!halves) {
    out.scales.assign(size_t(panels * subs * width), 0.f);
    if (form.offsets) out.offsets.assign(out.scales.size(), 0.f);
  } else {
    out.halfScales.assign(size_t(panels * blocks * width), 0);
    if (form.offsets) out.halfOffsets.assign(out.halfScales.size(), 0);
    if (form.subScales) {
      out.subScales.assign(size_t(panels * subs * width), 0);
      if (form.offsets) out.subOffsets.assign(out.subScales.size(), 0);
    }
  }
  // An f16 field of the file as it is (scaleParts' values are f16 ones; a
  // Q4_0 offset, -8 d, is one too).
  auto half = [&](float v, const char* what) {
    const uint16_t h = ops::floatToHalf(v);
    if (ops::halfToFloat(h) != v && !std::isnan(v)) fail("packInt8BlockPanels: {}'s {} {} is not an f16 value", f.name, what, v);
    return h;
  };
  int8_t q[ops::kMaxBlockElems], sub[ops::kMaxBlockElems], subOffset[ops::kMaxBlockElems];
  float scale[ops::kMaxBlockElems], offset[ops::kMaxBlockElems], sup[2];
  for (int64_t n = 0; n < N; ++n) {
    const int64_t p = n / width, j = n % width;
    for (int64_t b = 0; b < blocks; ++b) {
      std::fill_n(offset, f.blockElems / f.subBlock, 0.f);
      const uint8_t* block = rows + (n * blocks + b) * f.blockBytes;
      f.intBlock(block, q, scale, offset);
      if (halves) {
        f.scaleParts(block, sup, sub, subOffset);
        const size_t at = size_t((p * blocks + b) * width + j);
        out.halfScales[at] = half(sup[0], "scale");
        if (form.offsets) out.halfOffsets[at] = half(sup[1] + (shift ? sup[0] * float(shift) : 0.f), "offset");
        for (int64_t s = 0; s < f.blockElems / form.block && form.subScales; ++s) {
          const size_t si = size_t((p * subs + b * f.blockElems / form.block + s) * width + j);
          out.subScales[si] = sub[s / per];
          if (form.offsets) out.subOffsets[si] = subOffset[s / per];
        }
      }
      // K pairs: row k / 2 of the panel's [K / 2, 2 width] holds K steps
      // k and k + 1 of column j at 2 j and 2 j + 1.
      for (int64_t i = 0; i < f.blockElems; ++i) {
        const int64_t k = b * f.blockElems + i;
        if (form.nibbles)
          out.values[size_t((p * K / 2 + k / 2) * width + j)] |= int8_t((q[i] - shift) << (4 * (k & 1)));
        else
          out.values[size_t((p * K + (k & ~int64_t(1))) * width + 2 * j + (k & 1))] = q[i];
      }
      for (int64_t s = 0; s < f.blockElems / form.block && !halves; ++s) {
        const size_t at = size_t((p * subs + b * f.blockElems / form.block + s) * width + j);
        out.scales[at] = scale[s / per];
        // scale q + offset = scale (q - qMin) + (offset + scale qMin).
        if (form.offsets) out.offsets[at] = offset[s / per] + (shift ? scale[s / per] * float(shift) : 0.f);
      }
    }
  }
  return out;
}

Int8BlockForm gpuInt8Form(Int8BlockForm form) {
  form.superBlock = form.block, form.subScales = false;
  return form;
}

std::string int8FormName(const Int8BlockForm& form) {
  return fmt::format("{}b{}{}{}", form.nibbles ? "n4" : "i8", form.block, form.superBlock ? "h" : "f",
                     form.offsets ? "o" : "");
}

std::vector<Int8BlockForm> gpuInt8Forms() {
  std::vector<Int8BlockForm> forms, all;
  for (const char* name : {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"}) {
    all.push_back(*int8BlockForm(name));
    Int8BlockForm g = gpuInt8Form(all.back());
    if (std::find(forms.begin(), forms.end(), g) == forms.end()) forms.push_back(g);
  }
  Int8BlockForm mixed = gpuInt8Form(commonInt8Form(all));
  if (std::find(forms.begin(), forms.end(), mixed) == forms.end()) forms.push_back(mixed);
  return forms;
}

Int8BlockPanels packGpuInt8Rows(const uint8_t* rows, int64_t K, int64_t N, const ops::QuantFormat& f,
                                Int8BlockForm form) {
  if (form.subScales || form.superBlock != form.block)
    fail("packGpuInt8Rows: {}: the GPU form has one f16 scale (and offset) a block of {} values, no super-block rows",
         int8FormName(form), form.block);
  // Packed with f32 products a block, then rounded to f16 (exact where the
  // file holds f16 values a block; the K formats' products of an f16 and a
  // 6-bit integer keep 11 of their up to 17 significant bits).
  Int8BlockForm wide = form;
  wide.superBlock = 0;
  Int8BlockPanels p = packInt8BlockPanels(rows, K, N, 1, f, wide);
  auto toHalf = [&](const std::vector<float>& from, std::vector<uint16_t>& to, const char* what) {
    to.resize(from.size());
    for (size_t i = 0; i < from.size(); ++i) {
      to[i] = ops::floatToHalf(from[i]);
      if (std::isfinite(from[i]) && !std::isfinite(ops::halfToFloat(to[i])))
        fail("packGpuInt8Rows: {} {} of row {}, block {} is beyond f16's range (the GPU form's scales are f16)", f.name,
             what, int64_t(i) / (K / form.block), int64_t(i) % (K / form.block), from[i]);
    }
  };
  toHalf(p.scales, p.halfScales, "scale");
  if (form.offsets) toHalf(p.offsets, p.halfOffsets, "offset");
  p.scales.clear(), p.offsets.clear();
  if (!form.nibbles) return p;
  // Width-1 panels pair k with k + 1 (byte k / 2); reorder each block's
  // bytes to pair i with i + block / 2.
  const int64_t half = form.block / 2;
  std::vector<uint8_t> pairs(static_cast<size_t>(half));
  for (size_t at = 0; at < p.values.size(); at += size_t(half)) {
    auto* block = reinterpret_cast<uint8_t*>(p.values.data() + at);
    std::copy(block, block + half, pairs.begin());
    auto value = [&](int64_t i) { return (pairs[size_t(i / 2)] >> (4 * (i & 1))) & 0xF; };
    for (int64_t i = 0; i < half; ++i) block[i] = uint8_t(value(i) | value(i + half) << 4);
  }
  return p;
}

void int8ScaleBuffers(const Int8BlockPanels& p, const Int8BlockForm& form,
                      const std::function<void(const void*, int64_t)>& each) {
  if (!form.superBlock) {
    each(p.scales.data(), (int64_t)p.scales.size());
    if (form.offsets) each(p.offsets.data(), (int64_t)p.offsets.size());
    return;
  }
  each(p.halfScales.data(), (int64_t)p.halfScales.size());
  if (form.subScales) each(p.subScales.data(), (int64_t)p.subScales.size());
  if (!form.offsets) return;
  each(p.halfOffsets.data(), (int64_t)p.halfOffsets.size());
  if (form.subScales) each(p.subOffsets.data(), (int64_t)p.subOffsets.size());
}

KernelArgs& KernelArgs::buffer(const void* data, int64_t elements) {
  void*& p = ptrs_.emplace_back(const_cast<void*>(data));
  add(&p, sizeof(void*));                     // allocated
  add(&p, sizeof(void*));                     // aligned
  add(&ints_.emplace_back(0), 8);         // offset
  add(&ints_.emplace_back(elements), 8);  // size
  add(&ints_.emplace_back(1), 8);         // stride
  return *this;
}

KernelArgs& KernelArgs::index(int64_t value) {
  add(&ints_.emplace_back(value), 8);
  return *this;
}

KernelArgs& KernelArgs::f32(float value) {
  add(&floats_.emplace_back(value), 4);
  return *this;
}

KernelArgs& KernelArgs::pointer(const void* p) {
  add(&ptrs_.emplace_back(const_cast<void*>(p)), sizeof(void*));
  return *this;
}

KernelArgs& KernelArgs::u32(uint32_t value) {
  add(&u32s_.emplace_back(value), 4);
  return *this;
}

namespace {

// Persistent workers for launch(): created on first use, they wait for a
// launch, take programs from its shared counter, and wait again. A waiting
// worker spins briefly before blocking, because a model step issues launches
// back to back (waking a blocked thread costs tens of microseconds, more than
// a small decode kernel). The calling thread works too.
class WorkerPool {
 public:
  static WorkerPool& get() {
    static WorkerPool pool((int)std::max(1u, std::thread::hardware_concurrency()) - 1);
    return pool;
  }
  int size() const { return (int)threads_.size(); }

  // Runs body() on the caller and on `helpers` workers; returns when all are done.
  void run(const std::function<void()>& body, int helpers) {
    std::lock_guard<std::mutex> serial(launchMutex_);  // one launch at a time
    helpers = std::min(helpers, size());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      wanted_ = helpers;
      pending_.store(helpers);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    body();
    while (pending_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  }

  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  explicit WorkerPool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { loop(i); });
  }
  void loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      // Spin for a while, then block until the next launch.
      auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spinUntil)
        std::this_thread::yield();
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stop_) return;
      const std::function<void()>* body = body_;
      bool mine = index < wanted_;
      lock.unlock();
      if (!mine) continue;
      (*body)();
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  std::vector<std::thread> threads_;
  std::mutex launchMutex_, mutex_;
  std::condition_variable cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  const std::function<void()>* body_ = nullptr;
  int wanted_ = 0;
  bool stop_ = false;
};

}  // namespace

void launch(PackedKernel kernel, const KernelArgs& args, int64_t gx, int64_t gy, int64_t gz, int threads) {
  launch(kernel, std::span<void* const>(args.slots()), gx, gy, gz, threads);
}

int launchThreads() { return WorkerPool::get().size() + 1; }

void launch(PackedKernel kernel, std::span<void* const> args, int64_t gx, int64_t gy, int64_t gz, int threads) {
  int64_t total = gx * gy * gz;
  if (total <= 0) return;
  WorkerPool& pool = WorkerPool::get();
  if (threads <= 0) threads = pool.size() + 1;
  threads = (int)std::min<int64_t>(threads, total);
  std::atomic<int64_t> next{0};
  std::function<void()> worker = [&] {
    std::vector<void*> slots(args.begin(), args.end());
    int64_t pid[3];
    for (int i = 0; i < 3; ++i) slots.push_back(&pid[i]);
    // Programs are handed out one at a time, in grid order (dim 0 fastest).
    for (int64_t p; (p = next.fetch_add(1)) < total;) {
      pid[0] = p % gx;
      pid[1] = (p / gx) % gy;
      pid[2] = p / (gx * gy);
      kernel(slots.data());
    }
  };
  if (threads == 1) return worker();
  pool.run(worker, threads - 1);
}

}  // namespace strata::abi

namespace strata::abi {

std::map<std::string, Int8BlockForm> gpuQuantWeightForms(const ops::GraphDef& g) {
  std::map<std::string, const ops::WeightRef*> quantized;
  for (const ops::WeightRef& w : g.weights)
    if (!w.quant.empty()) quantized[w.name] = &w;
  std::map<std::string, Int8BlockForm> forms;
  auto own = [&](const std::string& name) -> std::optional<Int8BlockForm> {
    auto it = quantized.find(name);
    if (it == quantized.end()) return std::nullopt;
    std::optional<Int8BlockForm> f = int8BlockForm(it->second->quant);
    if (!f) fail("weight '{}': unknown block format {}", name, it->second->quant);
    return gpuInt8Form(*f);
  };
  auto assign = [&](const ops::NodeDef& n, const std::string& name, const Int8BlockForm& f) {
    auto [it, fresh] = forms.try_emplace(name, f);
    if (!fresh && !(it->second == f))
      fail("node '{}': weight '{}' would be read in two GPU forms ({} and {})", n.name, name,
           int8FormName(it->second), int8FormName(f));
  };
  for (const ops::NodeDef& n : g.nodes) {
    if (n.op != "region.gemm") continue;
    const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
    std::vector<Int8BlockForm> launch;
    for (int64_t wi = 0; wi < op.weights; ++wi) {
      const std::string& name = n.inputs[op.weight(wi)];
      std::optional<Int8BlockForm> f = own(name);
      if (!f) continue;
      if (!op.weightsNK) fail("node '{}': quantized weight '{}' must be read [N, K] (layout nk)", n.name, name);
      if (!op.swiglu) assign(n, name, *f);
      launch.push_back(*f);
    }
    if (!op.swiglu || launch.empty()) continue;
    if (launch.size() != 2)
      fail("node '{}': a SwiGLU GEMM's gate and up weights must both be quantized or neither", n.name);
    const Int8BlockForm both = gpuInt8Form(commonInt8Form(launch));
    for (int64_t wi = 0; wi < 2; ++wi) assign(n, n.inputs[op.weight(wi)], both);
  }
  // Embedding tables: the GEMMs' form where the lm_head shares the table
  // (tied), else their own; the gather widens rows of it.
  for (const ops::NodeDef& n : g.nodes)
    if (n.op == "region.embedding" && !n.inputs.empty() && !forms.count(n.inputs[0]))
      if (std::optional<Int8BlockForm> f = own(n.inputs[0])) forms.emplace(n.inputs[0], *f);
  return forms;
}

}  // namespace strata::abi
