#!/usr/bin/env python3
"""Writes golden.json: each published chat template here rendered by jinja2
the way transformers' apply_chat_template renders it (trim_blocks,
lstrip_blocks, loop controls, raise_exception, tojson as json.dumps with
ensure_ascii=False), over conversations that exercise system messages,
multi-turn history, whitespace, non-ASCII text, tools and tool calls, and
role errors. strata's interpreter (models/jinja*.cpp) must give the same
text, or fail where jinja2 raises.

Sources: meta-llama/Meta-Llama-3-8B-Instruct, meta-llama/Llama-2-7b-chat-hf,
mistralai/Mistral-7B-Instruct-v0.2, Qwen/Qwen2-7B-Instruct,
HuggingFaceTB/SmolLM2-135M-Instruct (tokenizer_config.json's chat_template);
Llama-3.1-8B-Instruct, Qwen2.5-7B-Instruct, Phi-3.5-mini-instruct,
gemma-2-2b-it and Mistral-Nemo-Instruct-2407 as llama.cpp keeps them
(models/templates in its source).

    python3 -m pip install jinja2==3.1.6 && python3 make_golden.py
"""
import json
import pathlib

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = pathlib.Path(__file__).parent

TOKENS = {
    "llama-3": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama-3.1": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama-2": ("<s>", "</s>"),
    "mistral-v0.2": ("<s>", "</s>"),
    "mistral-nemo": ("<s>", "</s>"),
    "qwen2": (None, "<|im_end|>"),
    "qwen2.5": (None, "<|im_end|>"),
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "phi-3.5": ("<s>", "<|endoftext|>"),
    "gemma-2": ("<bos>", "<eos>"),
}

TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}

CASES = [
    ("user", [{"role": "user", "content": "Hello!"}], True, None),
    ("system_user", [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}], True, None),
    ("multi_turn", [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Who are you?"},
                    {"role": "assistant", "content": "  An assistant.  "}, {"role": "user", "content": "Thanks"}],
     True, None),
    ("no_generation_prompt", [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}], False, None),
    ("whitespace_unicode", [{"role": "user", "content": "  caf\u00e9 \u6771\u4eac \U0001F600\n\n"}], True, None),
    ("roles_not_alternating", [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], True, None),
    ("system_only", [{"role": "system", "content": "Only a system message."}], True, None),
    ("tools", [{"role": "user", "content": "Weather in Paris?"}], True, [TOOL]),
    ("tool_call", [{"role": "user", "content": "Weather in Paris?"},
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"id": "call12345", "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                   {"role": "tool", "tool_call_id": "call12345", "content": "{\"temp\": 21.5}"}], True, [TOOL]),
]


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def main():
    env = environment()
    out = {}
    for name, (bos, eos) in sorted(TOKENS.items()):
        source = (HERE / f"{name}.jinja").read_text()
        template = env.from_string(source)
        cases = []
        for case, messages, add_generation_prompt, tools in CASES:
            context = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                       "bos_token": bos, "eos_token": eos}
            if tools is not None:
                context["tools"] = tools
            entry = {"case": case, "context": context}
            try:
                entry["text"] = template.render(**context)
            except Exception as e:  # the template refuses the conversation
                entry["error"] = str(e)
            cases.append(entry)
        out[name] = cases
    (HERE / "golden.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
