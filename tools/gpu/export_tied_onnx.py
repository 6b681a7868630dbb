# A tiny Qwen2-style model with tied embeddings (lm_head = the embedding
# matrix), made on the GPU machine (torch, transformers, onnx, onnxruntime;
# CPU work only): the HF folder, its dynamo and TorchScript ONNX exports of
# the plain forward pass, each checked with onnxruntime against
# transformers, and reference.json (the prompt's ids, the logits of one
# forward pass, 8 greedy tokens). Region formation must turn the tied
# lm_head (a Transpose of the shared embedding initializer feeding a
# MatMul, or whatever each exporter writes) into a GEMM region.
#   python3 tools/gpu/export_tied_onnx.py models/testdata/tiny-llama/tokenizer.json $OUT
import json, os, shutil, sys
import numpy as np, torch, onnx, onnxruntime as ort
from transformers import Qwen2Config, Qwen2ForCausalLM

TOK, OUT = sys.argv[1], sys.argv[2]
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(1)
c = Qwen2Config(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=512, max_position_embeddings=256, rms_norm_eps=1e-5,
                rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=0, eos_token_id=1)
m = Qwen2ForCausalLM(c).float().eval()
assert m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()
m.save_pretrained(OUT)
shutil.copy(TOK, os.path.join(OUT, "tokenizer.json"))
ids = torch.tensor([[0, 53, 308, 425, 294, 271, 259, 294, 70, 407, 72, 83]])
with torch.no_grad():
    logits = m(ids).logits[0]
    seq = ids.clone()
    for _ in range(8):
        nxt = m(seq).logits[0, -1].argmax()
        seq = torch.cat([seq, nxt.view(1, 1)], dim=1)


class Plain(torch.nn.Module):
    # An explicit all-ones mask: without one, transformers looks for packed
    # sequences with aten::diff, which the TorchScript exporter lacks.
    def __init__(s, m): super().__init__(); s.m = m
    def forward(s, input_ids):
        return s.m(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), use_cache=False).logits


ref = {"token_ids": ids[0].tolist(), "logits_fp32": logits.tolist(), "greedy_8": seq[0].tolist(),
       "torch": torch.__version__, "onnxruntime": ort.__version__}
for name, dynamo in (("model_dynamo.onnx", True), ("model_torchscript.onnx", False)):
    path = os.path.join(OUT, name)
    kw = dict(dynamo=True) if dynamo else dict(dynamo=False, opset_version=17)
    torch.onnx.export(Plain(m), (ids,), path, input_names=["input_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}}, **kw)
    mo = onnx.load(path)  # external data, if the exporter wrote any, comes in
    onnx.save(mo, path)  # one file, weights inline
    if os.path.exists(path + ".data"): os.remove(path + ".data")
    got = ort.InferenceSession(path).run(None, {"input_ids": ids.numpy()})[0][0]
    err = float(np.abs(got - logits.numpy()).max())
    ref[name + "_maxabs_vs_hf"] = err
    ref[name + "_ops"] = sorted({n.op_type for n in mo.graph.node})
    assert err < 1e-4, (name, err)
    print(name, "max abs vs HF", err, "ops", ref[name + "_ops"])
json.dump(ref, open(os.path.join(OUT, "reference.json"), "w"))
for f in sorted(os.listdir(OUT)): print(f, os.path.getsize(os.path.join(OUT, f)))
