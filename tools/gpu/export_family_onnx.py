# Tiny random models for the forms the fixture lacks, made on the GPU machine
# (torch, transformers, onnx, onnxruntime; CPU work only): a Qwen2 with tied
# embeddings (qwen2-tied: lm_head = the embedding matrix) and the families
# beyond the Llama style (GPT-2, Phi-3, Gemma). Per model, in OUT/tiny-NAME:
# the HF folder, its dynamo and TorchScript ONNX exports of the plain
# forward pass, each checked with onnxruntime against transformers, and
# reference.json (the prompt's ids, the logits of one forward pass, 8 greedy
# tokens, each export's op types). Every parameter gets noise on top of its
# initialization: transformers starts biases at 0 and norm weights at 1
# (0 for Gemma's 1 + w), which an exporter may fold away and which would let
# a wrong bias or norm weight pass unnoticed.
#   python3 tools/gpu/export_family_onnx.py models/testdata/tiny-llama/tokenizer.json $OUT [qwen2-tied gpt2 phi3 gemma]
import json, os, shutil, sys
import numpy as np, torch, onnx, onnxruntime as ort
import transformers as tf

TOK, OUT = sys.argv[1], sys.argv[2]
FAMILIES = sys.argv[3:] or ["qwen2-tied", "gpt2", "phi3", "gemma"]


def make(family):
    common = dict(vocab_size=512, bos_token_id=0, eos_token_id=1)
    if family == "qwen2-tied":
        c = tf.Qwen2Config(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
                           rope_theta=10000.0, tie_word_embeddings=True, **common)
        m = tf.Qwen2ForCausalLM(c)
        assert m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()
        return m
    if family == "gpt2":
        c = tf.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=256, **common)
        return tf.GPT2LMHeadModel(c)
    if family == "phi3":
        c = tf.Phi3Config(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
                          partial_rotary_factor=0.5, pad_token_id=1, **common)
        return tf.Phi3ForCausalLM(c)
    if family == "gemma":
        c = tf.GemmaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6,
                           pad_token_id=1, **common)
        return tf.GemmaForCausalLM(c)
    raise SystemExit(f"unknown family {family}")


class Plain(torch.nn.Module):
    # An explicit all-ones mask: without one, transformers looks for packed
    # sequences with aten::diff, which the TorchScript exporter lacks.
    def __init__(s, m): super().__init__(); s.m = m
    def forward(s, input_ids):
        return s.m(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), use_cache=False).logits


for family in FAMILIES:
    torch.manual_seed(1)
    out = os.path.join(OUT, f"tiny-{family}")
    os.makedirs(out, exist_ok=True)
    m = make(family).float().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    m.save_pretrained(out)
    shutil.copy(TOK, os.path.join(out, "tokenizer.json"))
    ids = torch.tensor([[0, 53, 308, 425, 294, 271, 259, 294, 70, 407, 72, 83]])
    with torch.no_grad():
        logits = m(ids).logits[0]
        seq = ids.clone()
        for _ in range(8):
            nxt = m(seq).logits[0, -1].argmax()
            seq = torch.cat([seq, nxt.view(1, 1)], dim=1)
    ref = {"family": family, "token_ids": ids[0].tolist(), "logits_fp32": logits.tolist(), "greedy_8": seq[0].tolist(),
           "torch": torch.__version__, "transformers": tf.__version__, "onnxruntime": ort.__version__}
    for name, dynamo in (("model_dynamo.onnx", True), ("model_torchscript.onnx", False)):
        path = os.path.join(out, name)
        kw = dict(dynamo=True) if dynamo else dict(dynamo=False, opset_version=17)
        try:
            torch.onnx.export(Plain(m), (ids,), path, input_names=["input_ids"], output_names=["logits"],
                              dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}}, **kw)
        except Exception as e:  # an exporter that cannot take the family is recorded, not fatal
            ref[name + "_error"] = f"{type(e).__name__}: {e}"[:500]
            print(family, name, "export failed:", ref[name + "_error"])
            continue
        mo = onnx.load(path)
        onnx.save(mo, path)
        if os.path.exists(path + ".data"): os.remove(path + ".data")
        got = ort.InferenceSession(path).run(None, {"input_ids": ids.numpy()})[0][0]
        err = float(np.abs(got - logits.numpy()).max())
        ref[name + "_maxabs_vs_hf"] = err
        ref[name + "_ops"] = sorted({n.op_type for n in mo.graph.node})
        assert err < 1e-4, (family, name, err)
        print(family, name, "max abs vs HF", err, "ops", ref[name + "_ops"])
    json.dump(ref, open(os.path.join(out, "reference.json"), "w"))
    for f in sorted(os.listdir(out)): print(family, f, os.path.getsize(os.path.join(out, f)))
