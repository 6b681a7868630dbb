# Makes the extra ONNX forms of the tiny-llama fixture that region formation must
# recognize, on the GPU machine (torch, transformers, onnxscript, onnxruntime there;
# CPU work only): an opset-23 export (the `Attention` and `RMSNormalization` ops) and
# onnxruntime contrib-op graphs (com.microsoft MultiHeadAttention /
# GroupQueryAttention, made by onnxscript's ORT fusions from the dynamo exports).
# Every file is checked with onnxruntime against transformers before it is kept.
#   python3 tools/gpu/export_more_onnx.py models/testdata/tiny-llama $OUT
import json, math, os, sys
import numpy as np, torch, onnx, onnxruntime as ort
import torch.nn.functional as F
from transformers import LlamaForCausalLM

SRC, OUT = sys.argv[1], sys.argv[2]
os.makedirs(OUT, exist_ok=True)
m = LlamaForCausalLM.from_pretrained(SRC, attn_implementation="sdpa").float().eval()
c = m.config
ref = json.load(open(os.path.join(SRC, "reference.json")))
ids = torch.tensor([ref["token_ids"][0]])
S = ids.shape[1]
with torch.no_grad():
    logits = m(ids).logits[0]
report = {"torch": torch.__version__, "onnxruntime": ort.__version__, "onnx": onnx.__version__}


class Plain(torch.nn.Module):
    def __init__(s, m): super().__init__(); s.m = m
    def forward(s, input_ids): return s.m(input_ids=input_ids, use_cache=False).logits


class WithPast(torch.nn.Module):
    """The fixture's decoder-with-past layout written with the fused torch ops
    (F.rms_norm, F.scaled_dot_product_attention with GQA), which the opset-23
    exporter maps to RMSNormalization and Attention."""
    def __init__(s, hf):
        super().__init__(); s.m = hf.model; s.head = hf.lm_head; cf = hf.config
        s.nh, s.nkv, s.hd = cf.num_attention_heads, cf.num_key_value_heads, cf.head_dim
        s.eps = cf.rms_norm_eps; s.theta = cf.rope_parameters["rope_theta"]
    def rms(s, x, w): return F.rms_norm(x, (x.shape[-1],), w, s.eps)
    def rope(s, x, pos):
        inv = 1.0 / (s.theta ** (torch.arange(0, s.hd, 2, dtype=torch.float32) / s.hd))
        f = pos[..., None].float() * inv; emb = torch.cat([f, f], -1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        x1, x2 = x[..., : s.hd // 2], x[..., s.hd // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin
    def forward(s, input_ids, attention_mask, position_ids, *past):
        h = s.m.embed_tokens(input_ids); B, S = input_ids.shape; presents = []
        for i, L in enumerate(s.m.layers):
            a = L.self_attn; x = s.rms(h, L.input_layernorm.weight)
            q = a.q_proj(x).view(B, S, s.nh, s.hd).transpose(1, 2)
            k = a.k_proj(x).view(B, S, s.nkv, s.hd).transpose(1, 2)
            v = a.v_proj(x).view(B, S, s.nkv, s.hd).transpose(1, 2)
            q, k = s.rope(q, position_ids), s.rope(k, position_ids)
            k = torch.cat([past[2 * i], k], 2); v = torch.cat([past[2 * i + 1], v], 2); presents += [k, v]
            key_pos = torch.cumsum(torch.ones_like(attention_mask), -1) - 1
            keep = (key_pos[:, None, None, :] <= position_ids[:, None, :, None]) & attention_mask[:, None, None, :].bool()
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, enable_gqa=True)
            h = h + a.o_proj(o.transpose(1, 2).reshape(B, S, s.nh * s.hd))
            x = s.rms(h, L.post_attention_layernorm.weight); mlp = L.mlp
            h = h + mlp.down_proj(F.silu(mlp.gate_proj(x)) * mlp.up_proj(x))
        return (s.head(s.rms(h, s.m.norm.weight)), *presents)


nl, hd, nkv = c.num_hidden_layers, c.head_dim, c.num_key_value_heads
names_in = ["input_ids", "attention_mask", "position_ids"] + [f"past_key_values.{i}.{kv}" for i in range(nl) for kv in ("key", "value")]
names_out = ["logits"] + [f"present.{i}.{kv}" for i in range(nl) for kv in ("key", "value")]
wp = WithPast(m).eval()
with torch.no_grad():
    zero = [torch.zeros(1, nkv, 0, hd) for _ in range(2 * nl)]
    report["withpast_vs_hf_maxabs"] = float((wp(ids, torch.ones(1, S, dtype=torch.int64), torch.arange(S)[None], *zero)[0][0] - logits).abs().max())


def export(mod, args, path, opset, dyn, **kw):
    try:
        prog = torch.onnx.export(mod, args, dynamo=True, opset_version=opset, dynamic_shapes=dyn, **kw)
        prog.save(path)
        return path
    except Exception as e:
        report[f"export_failed_{os.path.basename(path)}"] = f"{type(e).__name__}: {str(e)[:400]}"
        return None


A = torch.export.Dim.AUTO
past1 = [torch.randn(1, nkv, 3, hd) for _ in range(2 * nl)]
made = {}
made["model_opset23.onnx"] = export(Plain(m), (ids,), os.path.join(OUT, "model_opset23.onnx"), 23,
                                    {"input_ids": {0: A, 1: A}}, input_names=["input_ids"], output_names=["logits"])
made["decoder_with_past_opset23.onnx"] = export(
    wp, (ids, torch.ones(1, S + 3, dtype=torch.int64), torch.arange(3, S + 3)[None], *past1),
    os.path.join(OUT, "decoder_with_past_opset23.onnx"), 23,
    ({0: A, 1: A}, {0: A, 1: A}, {0: A, 1: A}, tuple({0: A, 2: A} for _ in range(2 * nl))),
    input_names=names_in, output_names=names_out)

# onnxruntime contrib-op graphs: onnxscript's ORT fusions over the fixture's dynamo exports.
try:
    import onnx_ir as ir
    from onnxscript.rewriter.ort_fusions import optimize_for_ort
    for src, dst in (("model_dynamo.onnx", "model_ort_fused.onnx"), ("decoder_with_past_dynamo.onnx", "decoder_with_past_ort_fused.onnx")):
        try:
            model = ir.load(os.path.join(SRC, src))
            fused, stats = optimize_for_ort(model)
            ir.save(fused, os.path.join(OUT, dst))
            report[f"fusions_{dst}"] = {k: v for k, v in stats.items() if v}
            made[dst] = os.path.join(OUT, dst)
        except Exception as e:
            report[f"fuse_failed_{dst}"] = f"{type(e).__name__}: {str(e)[:400]}"
except Exception as e:
    report["ort_fusions_unavailable"] = f"{type(e).__name__}: {str(e)[:300]}"

gen = ref["greedy_prompt0_24"]
for name, f in made.items():
    if not f:
        continue
    mp = onnx.load(f)
    report[f"ops_{name}"] = sorted({(n.domain or "") + ":" + n.op_type for n in mp.graph.node})
    report[f"opset_{name}"] = [(i.domain, i.version) for i in mp.opset_import]
    try:
        s = ort.InferenceSession(f, providers=["CPUExecutionProvider"])
        if "past" not in name:
            o = s.run(None, {"input_ids": ids.numpy()})[0][0]
            report[f"ort_{name}_maxabs_vs_hf"] = float(np.abs(o - logits.numpy()).max())
            continue
        feed = {"input_ids": ids.numpy(), "attention_mask": np.ones((1, S), np.int64), "position_ids": np.arange(S)[None].astype(np.int64)}
        for n in names_in[3:]: feed[n] = np.zeros((1, nkv, 0, hd), np.float32)
        ins = {i.name for i in s.get_inputs()}
        toks = []; T = S
        for step in range(8):
            o = s.run(None, {k: v for k, v in feed.items() if k in ins}); nxt = int(o[0][0, -1].argmax()); toks.append(nxt)
            feed = {"input_ids": np.array([[nxt]], np.int64), "attention_mask": np.ones((1, T + 1), np.int64), "position_ids": np.array([[T]], np.int64)}
            for j, n in enumerate(names_in[3:]): feed[n] = o[1 + j]
            T += 1
        report[f"ort_{name}_greedy8"] = toks
        report[f"ort_{name}_matches_hf"] = toks == gen[S:S + 8]
    except Exception as e:
        report[f"ort_failed_{name}"] = f"{type(e).__name__}: {str(e)[:400]}"

# An MHA model (kv heads == heads; random weights, seed 0, the fixture's sizes
# otherwise): its plain dynamo export and onnxscript's ORT fusions of it
# (com.microsoft MultiHeadAttention + RotaryEmbedding) ->
# models/testdata/tiny-llama-mha/. Tests compare the two with each other.
try:
    from transformers import LlamaConfig
    cm = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                     vocab_size=512, max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=False)
    torch.manual_seed(0)
    mha = LlamaForCausalLM(cm).eval()
    f = os.path.join(OUT, "mha_dynamo.onnx")
    if export(Plain(mha), (torch.randint(0, 512, (1, 12)),), f, None, {"input_ids": {0: A, 1: A}},
              input_names=["input_ids"], output_names=["logits"]):
        fused, stats = optimize_for_ort(ir.load(f))
        ir.save(fused, os.path.join(OUT, "mha_ort_fused.onnx"))
        report["fusions_mha_ort_fused.onnx"] = {k: v for k, v in stats.items() if v}
except Exception as e:
    report["mha_failed"] = f"{type(e).__name__}: {str(e)[:300]}"

json.dump(report, open(os.path.join(OUT, "export_report.json"), "w"), indent=1)
print(json.dumps(report, indent=1))
