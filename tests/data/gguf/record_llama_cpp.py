#!/usr/bin/env python3
"""Records llama.cpp's own tokenization of the tok-*.gguf vocabularies
(make_gguf.py) on tricky strings into llama_cpp_tokens.json, the oracle of
tests/unit/gguf_test.cpp (CI needs no llama.cpp).

llama-tokenize is built from the llama.cpp source in PyPI's
llama-cpp-python 0.3.16 sdist (vendor/llama.cpp; CMake, CPU only):

    cmake -S vendor/llama.cpp -B build -DGGML_NATIVE=OFF && cmake --build build --target llama-tokenize
    python3 tests/data/gguf/record_llama_cpp.py build/bin/llama-tokenize

Each string goes through a file (-f, --no-escape: the bytes as they are),
with llama.cpp's defaults otherwise: bos as the vocabulary says, control
tokens parsed.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, os.path.join(HERE, "..", "tokenizers"))
from make_golden import SAMPLES  # noqa: E402  (the HF golden strings, then more)

STRINGS = [t for t in SAMPLES if t] + [
    " ",
    "   ",
    "\n",
    "\n\n\n",
    "\t\t",
    " \n \n",
    "Hello",
    " Hello",
    "  Hello",
    "Hello world",
    "HELLO WORLD",
    "hello   world",
    "don't won't can't shouldn't",
    "I'M YOU'RE THEY'LL WE'VE",
    "'s 's 'S",
    "1+1=2, 2*3=6; 10/5=2",
    "3.14 2,718 1e-5 0x1F",
    "1234567890123",
    "$100 €50 £20 ¥1000",
    "email@example.com https://example.com/path?q=1&r=2",
    "C:\\Users\\name\\file.txt",
    "def f(x):\n    return x * 2  # tabs\tand  spaces",
    "int main() { return 0; }",
    "<html><body>Hi</body></html>",
    "(parentheses) [brackets] {braces} <angles>",
    "!!! ??? ... --- ___ ***",
    "a.b,c;d:e!f?g",
    "naïve résumé coöperate",
    "Straße groß",
    "東京は日本の首都です。",
    "你好，世界！",
    "안녕하세요",
    "Привет, как дела?",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "🙂🚀🎉👍🏽",
    "👨‍👩‍👧‍👦 family",
    "\u00a0non-breaking\u00a0space",
    "zero\u200bwidth",
    "ﬁ ligature and ℌ",
    "mixed\tTabs and\nnewlines\r\nand CRLF",
    "<|im_start|>user\nhi<|im_end|>",
    "the the the the the the",
    "paged attention keeps the KV cache in blocks of sixteen tokens; block tables map them.",
    "The quick brown fox jumps over the lazy dog 1234567890 times!",
    "a" * 17 + " " + "b" * 9,
    "end with space ",
    "end with newline\n",
]


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else "llama-tokenize"
    files = sorted(f for f in os.listdir(HERE) if f.startswith("tok-") and f.endswith(".gguf"))
    out = {"llama_cpp": "llama-cpp-python 0.3.16 sdist (vendor/llama.cpp)", "strings": STRINGS, "ids": {}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prompt.txt")
        for f in files:
            rows = []
            for text in STRINGS:
                with open(path, "wb") as p:
                    p.write(text.encode("utf-8"))
                r = subprocess.run([exe, "-m", os.path.join(HERE, f), "-f", path, "--no-escape", "--ids", "--log-disable"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"{f}: llama-tokenize failed on {text!r}: {r.stderr[-2000:]}")
                rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
            out["ids"][f] = rows
            print(f"{f}: {len(rows)} strings")
    with open(os.path.join(HERE, "llama_cpp_tokens.json"), "w") as o:
        json.dump(out, o, ensure_ascii=False, indent=0)
        o.write("\n")


if __name__ == "__main__":
    main()
