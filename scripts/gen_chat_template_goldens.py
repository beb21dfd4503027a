#!/usr/bin/env python3
"""Renders every template under tests/data/chat-templates with Python jinja2
over a set of conversations and writes tests/data/chat-templates/goldens.json.

The environment is configured as Hugging Face transformers configures it for
apply_chat_template: an immutable sandbox with trim_blocks, lstrip_blocks and
loop controls, a tojson that keeps key order and non-ASCII text, and the
raise_exception and strftime_now globals. A conversation the template refuses
is recorded with the error message instead of an output.

Usage: .venv/bin/python scripts/gen_chat_template_goldens.py
"""
import json
import pathlib
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATE_DIR = ROOT / "tests" / "data" / "chat-templates"

# Special tokens of the model each template belongs to.
TOKENS = {
    "HuggingFaceTB-SmolLM2-135M-Instruct": ("<|im_start|>", "<|im_end|>"),
    "google-gemma-3-it": ("<bos>", "<eos>"),
    "google-gemma-2-2b-it": ("<bos>", "<eos>"),
    "Qwen-Qwen2.5-7B-Instruct": ("", "<|im_end|>"),
    # tokenizer.chat_template of qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    "Qwen-Qwen2.5-Coder-0.5B-Instruct": ("", "<|im_end|>"),
    "meta-llama-Llama-3.1-8B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.2-3B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistralai-Mistral-Nemo-Instruct-2407": ("<s>", "</s>"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "microsoft-Phi-3.5-mini-instruct": ("<s>", "<|endoftext|>"),
    # gpt-oss's harmony template, as llama.cpp's sdist ships it (models/templates/); it prints
    # the current date, which the test compares as a pattern.
    "openai-gpt-oss-120b": ("<|startoftext|>", "<|return|>"),
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}, "celsius": {"type": "boolean"}},
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello!"}],
    "system_user": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
    ],
    "multi_turn": [
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another one?"},
    ],
    "system_multi_turn": [
        {"role": "system", "content": "  Answer in French.  "},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": " Bonjour ! "},
        {"role": "user", "content": "Thanks"},
    ],
    "unicode_whitespace": [
        {"role": "user", "content": "  Héllo 世界 🌍\n\n\ttabs and \"quotes\" and 'apostrophes' \\ backslash  \n"},
    ],
    "special_text": [{"role": "user", "content": "{{ not a template }} {% neither %} <|im_end|> [INST]"}],
    "empty_content": [{"role": "user", "content": ""}],
    "assistant_last": [
        {"role": "user", "content": "Say hi"},
        {"role": "assistant", "content": "Hi there"},
    ],
    "not_alternating": [
        {"role": "user", "content": "One"},
        {"role": "user", "content": "Two"},
    ],
    "tool_call": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call00001", "type": "function",
                 "function": {"name": "get_weather", "arguments": {"city": "Paris", "celsius": True}}}
            ],
        },
        {"role": "tool", "tool_call_id": "call00001", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
    ],
}

# (conversation, add_generation_prompt, with tools)
CASES = [
    ("user", True, False),
    ("user", False, False),
    ("system_user", True, False),
    ("multi_turn", True, False),
    ("system_multi_turn", True, False),
    ("unicode_whitespace", True, False),
    ("special_text", True, False),
    ("empty_content", True, False),
    ("assistant_last", False, False),
    ("not_alternating", True, False),
    ("user", True, True),
    ("tool_call", True, True),
]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def main():
    env = make_environment()
    cases = []
    for path in sorted(TEMPLATE_DIR.glob("*.jinja")):
        name = path.stem
        bos, eos = TOKENS[name]
        template = env.from_string(path.read_text(encoding="utf-8"))
        for conversation, add_generation_prompt, with_tools in CASES:
            messages = CONVERSATIONS[conversation]
            tools = [WEATHER_TOOL] if with_tools else None
            extra = {"date_string": "21 Nov 2026"}
            case = {
                "template": path.name, "conversation": conversation, "add_generation_prompt": add_generation_prompt,
                "messages": messages, "tools": tools, "bos_token": bos, "eos_token": eos, "extra": extra,
            }
            context = dict(extra, messages=messages, add_generation_prompt=add_generation_prompt,
                           bos_token=bos, eos_token=eos)
            if tools is not None:
                context["tools"] = tools
            try:
                case["output"] = template.render(**context)
            except jinja2.exceptions.TemplateError as e:
                case["error"] = str(e)
            except Exception as e:  # the template fails on this input: a render error either way
                case["error"] = f"{type(e).__name__}: {e}"
            cases.append(case)
    out = {"generator": f"scripts/gen_chat_template_goldens.py, jinja2 {jinja2.__version__}", "cases": cases}
    (TEMPLATE_DIR / "goldens.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases, {sum('error' in c for c in cases)} refused")


if __name__ == "__main__":
    main()
