#!/usr/bin/env python3
"""A tokenizer for a benchmark model with random weights: tokenizer.json
(and tokenizer_config.json) covering exactly the config's vocab_size ids, so
every token a server generates has text and llama.cpp's
convert_hf_to_gguf.py accepts the folder.

Weights cannot be downloaded on these machines, and neither can a real
tokenizer; a random model's ids still need one. This one has the Llama 2
form (SentencePiece-style BPE: Metaspace "▁", byte fallback), which
convert_hf_to_gguf.py reads through gguf's LlamaHfVocab without the
pre-tokenizer hash it needs for byte-level BPE vocabularies, and which
strata reads as any HF tokenizer.json. Ids: <unk> 0, <s> / </s> at the
config's bos / eos ids, the 256 byte tokens <0x00>..<0xFF>, "▁" and
printable ASCII, then every pair of those, then triples (a pair and one
more character) until the vocabulary is full; each merge joins a token's
all-but-last characters with its last.

    python3 tools/gpu/bench_tokenizer.py CONFIG.json OUT_DIR
"""
import json
import os
import sys


def build(config):
    vocab_size = config["vocab_size"]
    bos, eos = config.get("bos_token_id", 1), config.get("eos_token_id", 2)
    specials = {0: "<unk>", bos: "<s>", eos: "</s>"}
    if len(specials) != 3 or max(specials) >= vocab_size:
        sys.exit(f"bench_tokenizer: bos {bos} / eos {eos} must be distinct, non-zero and below vocab_size {vocab_size}")
    chars = ["\u2581"] + [chr(c) for c in range(33, 127)]
    pieces = [f"<0x{b:02X}>" for b in range(256)] + chars
    merges = []
    pairs = [a + b for a in chars for b in chars]
    need = vocab_size - len(specials) - len(pieces)
    for p in pairs[:need]:
        pieces.append(p)
        merges.append([p[0], p[1]])
    for p in pairs:
        if len(pieces) - 256 - len(chars) >= need:
            break
        for c in chars:
            if len(pieces) - 256 - len(chars) >= need:
                break
            pieces.append(p + c)
            merges.append([p, c])
    if len(pieces) + len(specials) != vocab_size:
        sys.exit(f"bench_tokenizer: vocab_size {vocab_size} is larger than this scheme covers")
    vocab, it = {}, iter(pieces)
    for i in range(vocab_size):
        vocab[specials.get(i) or next(it)] = i
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in sorted(specials.items())]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [bos], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    tokenizer_config = {"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                        "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": False,
                        "model_max_length": config.get("max_position_embeddings", 4096)}
    return tokenizer, tokenizer_config


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    config = json.load(open(sys.argv[1]))
    tokenizer, tokenizer_config = build(config)
    os.makedirs(sys.argv[2], exist_ok=True)
    with open(os.path.join(sys.argv[2], "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(sys.argv[2], "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config, f, indent=1)
    print(f"{sys.argv[2]}/tokenizer.json: {config['vocab_size']} ids, {len(tokenizer['model']['merges'])} merges")


if __name__ == "__main__":
    main()
