#!/usr/bin/env python3
"""Writes tests/data/tokenizer-goldens/<model>.jsonl: llama.cpp's token ids
for a few hundred varied strings, for each real model, in two modes:
"plain" (no BOS/EOS, special-token text left as text) and "special"
(BOS/EOS as the model asks, special-token text parsed).

llama.cpp is reached through llama-cpp-python, which builds llama.cpp from
source: python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install llama-cpp-python==0.3.36
Then: /tmp/refvenv/bin/python scripts/gen_tokenizer_goldens.py [MODEL_DIR]
"""
import json
import os
import pathlib
import random
import sys

import llama_cpp

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "tokenizer-goldens"
MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}

HAND_PICKED = [
    "", " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n \n", "Hello", " Hello", "Hello world", "HELLO WORLD",
    "I'm here, you're there, they've gone, we'll see, he'd know, it's OK", "I'M SHOUTING, DON'T", "'s 't 're 've 'm 'll 'd",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}",
    '{"key": [1, 2.5, -3e10, true, null], "nested": {"a": "b"}}',
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "SELECT name, COUNT(*) FROM users WHERE age >= 21 GROUP BY name;",
    "regex: ^[a-z0-9_.+-]+@[a-z0-9-]+\\.[a-z]{2,}$",
    "https://example.com/path?query=1&other=two#frag", "user.name+tag@example.co.uk",
    "1234567890", "3.14159265358979", "1e-10", "1,000,000.00", "$1,234.56", "2024-11-21T09:40:00Z", "+1 (555) 123-4567",
    "你好，世界！", "我想在apple工作1314151天～", "日本語のテキストとカタカナ、ひらがな。", "한국어 텍스트입니다.",
    "Привет, мир! Как дела?", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "Ünïcödé àccénts: café, naïve, façade, Zürich, Ærø", "e\u0301 combining vs \u00e9 precomposed", "ﬁ ligature ＦＵＬＬＷＩＤＴＨ",
    "🦙 llama", "😀😃😄😁", "👨‍👩‍👧‍👦 family", "🇩🇪🇯🇵 flags", "👍🏽 skin tone", "✅ ❌ ⚠️", "🚀 (normal) 😶‍🌫️ (multiple emojis concatenated)",
    "\u00a0non-breaking\u00a0space", "ideographic\u3000space", "zero\u200bwidth\u200bspace", "tab\there\tand\tthere",
    "     leading spaces", "trailing spaces     ", "multiple     inner     spaces", "\n\n\nleading newlines",
    "line one\nline two\r\nline three\rline four", "a" * 100, "ab" * 60, " " * 40, "\n" * 20, "!!!!!!!!", "...???!!!",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "<|im_start|><|im_end|>",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", "<bos><eos><pad><unk><mask>", "<s></s>",
    "<|im_", "<start_of", "text<|im_end|>more", "<end_of_turn><end_of_turn>", "<|im_start|>system\nYou are helpful.<|im_end|>",
    "Markdown **bold** _italic_ `code` [link](http://x.y)\n\n- item 1\n- item 2\n\n| a | b |\n|---|---|",
    "x = a^2 + b^2 ≤ c² ∑ ∫ √ ∞ ≠ ± × ÷ → ⇒ ∀ ∃", "Tab\tseparated\tvalues\n1\t2\t3",
    "The quick brown fox jumps over the lazy dog.", "Once upon a time, in a land far, far away, there lived a llama.",
]

INVALID_UTF8 = [b"a\xffb", b"\xc3", b"x\xc0\xafy", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"a\x00b", b"\x80\x80", b"ok\xe2\x82", b"\xf8\x88\x80\x80\x80"]

FRAGMENTS = [
    "the", "The", " of", "and", "tokenizer", "llama", "Gemma", "SmolLM", "123", "4567", "0", "3.5", "-7", "你好", "世界", "🙂",
    "🦙", "é", "naïve", "Straße", "ñ", "```", "::", "->", "=>", "!=", "(", ")", "[", "]", "{", "}", "'", '"', "`", "\\", "/", "//",
    "#", "@", "$", "%", "^", "&", "*", "_", "+", "=", "|", "~", "<", ">", "?", ",", ".", ";", ":", "don't", "it's", "I'll", "O'Neil",
    "x86_64", "HTTP/1.1", "C++", "c#", "e.g.", "U.S.A.", "Ω", "π", "∑", "ü", "😀", "👍🏽", "<|im_start|>", "<end_of_turn>",
]
SEPARATORS = ["", " ", "  ", "\n", "\t", "   ", "\n\n", " \n"]


def corpus():
    rng = random.Random(20261121)
    texts = [t.encode() for t in HAND_PICKED] + INVALID_UTF8
    while len(texts) < 320:
        parts = [rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 8))]
        text = parts[0]
        for p in parts[1:]:
            text += rng.choice(SEPARATORS) + p
        texts.append(text.encode())
    return texts


def main():
    model_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                             os.environ.get("TESSERA_MODEL_DIR", pathlib.Path.home() / ".cache/tessera/models"))
    OUT.mkdir(parents=True, exist_ok=True)
    texts = corpus()
    for name, file in MODELS.items():
        llm = llama_cpp.Llama(str(model_dir / file), vocab_only=True, verbose=False)
        with open(OUT / f"{name}.jsonl", "w") as out:
            for text in texts:
                row = {
                    "text_hex": text.hex(),
                    "plain": llm.tokenize(text, add_bos=False, special=False),
                    "special": llm.tokenize(text, add_bos=True, special=True),
                }
                out.write(json.dumps(row) + "\n")
    (OUT / "README.md").write_text(
        "# Tokenizer goldens for the real models\n\n"
        "Token ids from llama.cpp's tokenizer (llama-cpp-python "
        f"{llama_cpp.__version__}, vocab-only load of each GGUF) for {len(texts)} strings: code, CJK, emoji,\n"
        "whitespace runs, special-token text and invalid UTF-8. Each line: `text_hex` (the input bytes),\n"
        "`plain` (add_special=false, parse_special=false) and `special` (add_special=true, parse_special=true).\n"
        "Produced by `scripts/gen_tokenizer_goldens.py`.\n")
    print(f"wrote {len(texts)} strings per model")


if __name__ == "__main__":
    main()
