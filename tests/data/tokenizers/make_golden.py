"""Regenerates the tokenizer golden data (tokenizers==0.22.1, pinned).

Builds small tokenizers in each family's tokenizer.json form, trained on a
small corpus: Llama-3-style (Split with Llama 3's regex, then ByteLevel
without regex; ignore_merges; bos template), ChatML/Qwen2-style (NFC
normalizer, GPT-2 regex), Llama-2-style SentencePiece BPE (Prepend/Replace
normalizer, byte fallback, <0xXX> tokens in the vocabulary) and
Mistral-style (Metaspace pre-tokenizer with the "first" scheme) and
SmolLM-style (Digits one by one, then ByteLevel with GPT-2's regex), and
SentencePiece vocabularies behind Gemma's literal Split, every Split
behavior (and invert, Punctuation) in one Sequence, and WhitespaceSplit
with Punctuation and Digits. Encodes
tricky strings with them and with the tiny-llama fixture's tokenizer
(GPT-2-style ByteLevel with regex) and decodes the ids back. strata's C++
tokenizer must give the same ids and text (tests/unit/tokenizer_test.cpp).
Run: python3 make_golden.py
"""
import json
import pathlib

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = pathlib.Path(__file__).parent
FIXTURE = HERE.parents[2] / "models" / "testdata" / "tiny-llama" / "tokenizer.json"
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = [
    "Triton compiles tile programs for GPUs. Layouts are chosen once, at the root op.",
    "paged attention keeps the KV cache in blocks of sixteen tokens; block tables map them.",
    "The quick brown fox jumps over the lazy dog 1234567890 times!",
    "Ünïcödé, naïve café — 東京 and Привет мир. Emojis: 🙂🚀.",
    "def f(x):\n    return x * 2  # tabs\tand  spaces\n\n\nI'm sure they'll say we've done it, isn't it?",
] * 20

SAMPLES = [
    "Triton compiles tile programs for GPUs.",
    "Hello, world! I'm here; you're there. We'LL see.",
    "numbers 1 12 123 1234 12345 3.14159 -42",
    "  leading and trailing spaces  ",
    "line one\nline two\r\n\n  indented\tTAB",
    "Ünïcödé naïve café 東京 Привет 🙂🚀",
    "<|begin_of_text|>special in the middle<|end_of_text|> and after",
    "a",
    "",
    "x" * 40,
    "<s>mid</s> text",
    " two  spaces and cafe\u0301 (decomposed) \u212b",
]


def llama3_style():
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|begin_of_text|>", "<|end_of_text|>",
                                                                  "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)]),
    ])
    return tok


def chatml_style():
    """GPT-2 byte-level regex with Qwen2's ChatML turn tokens, no bos."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def smollm_style():
    """SmolLM / StarCoder: digits split one by one, then GPT-2's byte-level
    regex (a Sequence of Digits(individual_digits) and ByteLevel)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def sentencepiece_vocab():
    """A SentencePiece-shaped BPE vocabulary: <unk> <s> </s>, the 256
    <0xXX> byte tokens, then pieces trained with U+2581 word starts (some
    characters of the corpus left out, so byte fallback happens)."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    t.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=500, limit_alphabet=60, show_progress=False))
    trained = json.loads(t.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(piece, len(vocab))
    return vocab, [tuple(m) for m in trained["merges"]]


def sentencepiece_style(legacy):
    """legacy: Llama 2's converted form (normalizer Prepend + Replace, no
    pre-tokenizer); else Mistral's newer form (Metaspace, scheme "first")."""
    vocab, merges = sentencepiece_vocab()
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    if legacy:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def gemma_style():
    """Gemma: spaces replaced by U+2581 in the normalizer, then a Split on a
    literal space merged with the piece before it (a no-op after the
    normalizer, as Gemma ships it), byte fallback."""
    vocab, merges = sentencepiece_vocab()
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def split_behaviors_style():
    """Every Split behavior in one Sequence over SentencePiece-style text:
    [,;:] removed, U+2581 merged with the next piece, [.!?] contiguous runs,
    apostrophes merged with the piece before, letters inverted (the rest
    isolated), then Punctuation merged with the next piece; byte fallback."""
    vocab, merges = sentencepiece_vocab()
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("[,;:]"), behavior="removed"),
        pre_tokenizers.Split("\u2581", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex("[.!?]"), behavior="contiguous"),
        pre_tokenizers.Split(Regex("'"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex("\\p{L}+"), behavior="isolated", invert=True),
        pre_tokenizers.Punctuation(behavior="merged_with_next"),
    ])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    return tok


def whitespace_split_style():
    """WhitespaceSplit, then Punctuation (isolated) and Digits, BERT-like,
    over a byte-fallback vocabulary (the spaces are gone)."""
    vocab, merges = sentencepiece_vocab()
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(),
                                                 pre_tokenizers.Digits(individual_digits=False)])
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    return tok


# Chat prompts rendered as the model families' templates do (Llama 3:
# trimmed content; Qwen2: a default system message), encoded without the
# post-processor (the template carries its own bos).
CHAT = [("Why tile programs?", ""), ("  Hi there  ", "Answer briefly.")]


def render_llama3(user, system):
    turn = lambda role, text: f"<|start_header_id|>{role}<|end_header_id|>\n\n{text.strip()}<|eot_id|>"
    return ("<|begin_of_text|>" + (turn("system", system) if system else "") + turn("user", user)
            + "<|start_header_id|>assistant<|end_header_id|>\n\n")


def render_chatml(user, system):
    turn = lambda role, text: f"<|im_start|>{role}\n{text}<|im_end|>\n"
    return turn("system", system or "You are a helpful assistant.") + turn("user", user) + "<|im_start|>assistant\n"


def main():
    llama3 = llama3_style()
    llama3.save(str(HERE / "llama3_style.json"))
    chatml = chatml_style()
    chatml.save(str(HERE / "chatml_style.json"))
    llama2 = sentencepiece_style(legacy=True)
    llama2.save(str(HERE / "llama2_style.json"))
    mistral = sentencepiece_style(legacy=False)
    mistral.save(str(HERE / "mistral_style.json"))
    smollm = smollm_style()
    smollm.save(str(HERE / "smollm_style.json"))
    gemma = gemma_style()
    gemma.save(str(HERE / "gemma_style.json"))
    behaviors = split_behaviors_style()
    behaviors.save(str(HERE / "split_behaviors_style.json"))
    whitespace = whitespace_split_style()
    whitespace.save(str(HERE / "whitespace_split_style.json"))
    golden = {}
    for name, tok in [("llama3_style.json", llama3), ("chatml_style.json", chatml), ("llama2_style.json", llama2),
                      ("mistral_style.json", mistral), ("smollm_style.json", smollm), ("gemma_style.json", gemma),
                      ("split_behaviors_style.json", behaviors), ("whitespace_split_style.json", whitespace),
                      ("tiny-llama", Tokenizer.from_file(str(FIXTURE)))]:
        golden[name] = []
        for s in SAMPLES:
            ids = tok.encode(s).ids
            golden[name].append({"text": s, "ids": ids, "decoded": tok.decode(ids),
                                 "decoded_all": tok.decode(ids, skip_special_tokens=False)})
    golden["chat"] = {
        "llama3_style.json": [{"user": u, "system": s, "ids": llama3.encode(render_llama3(u, s), add_special_tokens=False).ids}
                              for u, s in CHAT],
        "chatml_style.json": [{"user": u, "system": s, "ids": chatml.encode(render_chatml(u, s), add_special_tokens=False).ids}
                              for u, s in CHAT],
    }
    (HERE / "golden.json").write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main()
