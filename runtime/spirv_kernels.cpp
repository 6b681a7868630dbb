#include "runtime/spirv_kernels.h"

#include <cstring>
#include <map>

#include "ops/error.h"

namespace strata::runtime {

namespace {

// The opcodes read here (SPIR-V 1.6 specification, section 3.52).
enum : uint32_t {
  kOpEntryPoint = 15,
  kOpTypeInt = 21,
  kOpTypeFloat = 22,
  kOpTypePointer = 32,
  kOpFunction = 54,
  kOpFunctionParameter = 55,
  kOpFunctionEnd = 56,
};
constexpr uint32_t kMagic = 0x07230203, kExecutionModelKernel = 6;

}  // namespace

std::vector<SpirvKernel> spirvKernels(std::string_view module, const std::string& what) {
  if (module.size() < 20 || module.size() % 4)
    fail("{}: not a SPIR-V module ({} bytes; a module is a 5-word header and whole 32-bit words)", what, module.size());
  std::vector<uint32_t> w(module.size() / 4);
  std::memcpy(w.data(), module.data(), module.size());
  if (w[0] != kMagic) fail("{}: not a little-endian SPIR-V module (magic 0x{:08x}, expected 0x{:08x})", what, w[0], kMagic);

  std::vector<std::pair<uint32_t, std::string>> entries;  // function id, name
  std::map<uint32_t, SpirvParam> types;                   // scalar and pointer types by id
  // Each function's parameters as (type id, word), by function id: only a
  // kernel's must be scalars or pointers (helpers may take vectors).
  std::map<uint32_t, std::vector<std::pair<uint32_t, size_t>>> functions;
  uint32_t function = 0;                                  // the function being read (0: none)
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (count == 0 || i + count > w.size())
      fail("{}: instruction at word {} (opcode {}) claims {} words, {} remain", what, i, op, count, w.size() - i);
    const uint32_t* a = &w[i + 1];  // operands
    const size_t n = count - 1;
    auto need = [&](size_t words) {
      if (n < words) fail("{}: instruction at word {} (opcode {}) has {} operands, expected at least {}", what, i, op, n, words);
    };
    switch (op) {
      case kOpEntryPoint: {
        need(3);
        if (a[0] != kExecutionModelKernel) break;
        // The name: a nul-terminated string in the words after the id.
        const char* s = reinterpret_cast<const char*>(a + 2);
        const size_t room = (n - 2) * 4, len = strnlen(s, room);
        if (len == room) fail("{}: entry point at word {} has an unterminated name", what, i);
        entries.push_back({a[1], std::string(s, len)});
        break;
      }
      case kOpTypeInt:
      case kOpTypeFloat:
        need(2);
        // A launch slot holds at most 8 bytes: wider (or sub-byte) scalars
        // are types a parameter may not have (bytes 0).
        types[a[0]] = {op == kOpTypeInt ? SpirvParam::Int : SpirvParam::Float,
                       a[1] == 8 || a[1] == 16 || a[1] == 32 || a[1] == 64 ? a[1] / 8 : 0};
        break;
      case kOpTypePointer:
        need(1);
        types[a[0]] = {SpirvParam::Pointer, 8};
        break;
      case kOpFunction:
        need(2);
        function = a[1];
        functions[function];
        break;
      case kOpFunctionParameter: {
        need(2);
        if (!function) fail("{}: a function parameter at word {} outside a function", what, i);
        functions[function].push_back({a[0], i});
        break;
      }
      case kOpFunctionEnd:
        function = 0;
        break;
      default:
        break;
    }
    i += count;
  }
  std::vector<SpirvKernel> out;
  for (const auto& [id, name] : entries) {
    auto f = functions.find(id);
    if (f == functions.end()) fail("{}: kernel '{}' names function %{}, which the module does not define", what, name, id);
    SpirvKernel k{name, {}};
    for (const auto& [type, word] : f->second) {
      auto t = types.find(type);
      if (t == types.end() || t->second.bytes == 0)
        fail("{}: kernel '{}' has a parameter (word {}) of type %{}, not a pointer or a scalar of 8 to 64 bits", what,
             name, word, type);
      k.params.push_back(t->second);
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<KernelArgument> kernelArguments(const SpirvKernel& k, std::span<void* const> slots) {
  std::vector<KernelArgument> args;
  size_t s = 0;
  for (const SpirvParam& p : k.params) {
    const size_t take = p.kind == SpirvParam::Pointer ? 5 : 1;
    if (s + take > slots.size())
      fail("kernel {}: its {} parameters need more than the launch's {} argument slots (a buffer takes 5, ops/abi.h)",
           k.name, k.params.size(), slots.size());
    if (p.kind == SpirvParam::Pointer)
      args.push_back({slots[s + 1], sizeof(void*), true});
    else
      args.push_back({slots[s], p.bytes, false});
    s += take;
  }
  if (s != slots.size())
    fail("kernel {}: its {} parameters take {} argument slots, the launch passed {}", k.name, k.params.size(), s,
         slots.size());
  return args;
}

}  // namespace strata::runtime
