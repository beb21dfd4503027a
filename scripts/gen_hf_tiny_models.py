#!/usr/bin/env python3
"""Writes tests/data/hf-tiny/<name>/: tiny random-weight models made and saved
by Hugging Face transformers (Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2,
Gemma 3, Qwen3-MoE, Qwen2-MoE, Mixtral, gpt-oss (also in its MXFP4 checkpoint form),
with the config variants they allow: biases,
tied or untied embeddings, rope bases 1e4 to 1e6, rope scaling, partial
rotary, softcaps, sliding windows), with the logits transformers computes for
token sequences of up to 512 tokens (expected.json + .f32 files, which also
record the library versions).

Needs torch and transformers (>= 4.50 for Gemma 3):
  /tmp/hfvenv/bin/python scripts/gen_hf_tiny_models.py [NAME ...]
(NAME: the models to write, default all; each model's weights come from its
own seed, so writing one leaves the others as they are.)
"""
import json
import pathlib
import shutil
import sys
import zlib

import numpy as np
import torch
import transformers
from transformers import (Gemma2Config, Mxfp4Config, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig, GptOssConfig,
                          GptOssForCausalLM, LlamaConfig,
                          LlamaForCausalLM, MistralConfig, MistralForCausalLM, MixtralConfig, MixtralForCausalLM,
                          Phi3Config, Phi3ForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM,
                          Qwen2MoeConfig, Qwen2MoeForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM)

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "hf-tiny"
TOKENIZER_DIR = ROOT / "tests" / "data" / "hf" / "tiny-sharded"
VOCAB = 400
COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, max_position_embeddings=1024, rms_norm_eps=1e-6,
              torch_dtype="float32", attn_implementation="eager", pad_token_id=0, bos_token_id=1, eos_token_id=2)
LENGTHS = (5, 17, 512)


def models():
    yield "llama", LlamaForCausalLM(LlamaConfig(**COMMON, rope_theta=10000.0, tie_word_embeddings=False))
    # Llama 3 rope scaling, with a short original context so it matters here.
    llama3_scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 16}
    yield "llama3", LlamaForCausalLM(LlamaConfig(**COMMON, rope_theta=500000.0, rope_scaling=llama3_scaling,
                                                 tie_word_embeddings=False))
    yield "mistral", MistralForCausalLM(MistralConfig(**COMMON, rope_theta=10000.0, sliding_window=6,
                                                      tie_word_embeddings=False))
    yield "qwen2", Qwen2ForCausalLM(Qwen2Config(**COMMON, rope_theta=1000000.0, tie_word_embeddings=True,
                                                use_sliding_window=False))
    gemma = Gemma3TextConfig(**COMMON, rope_theta=1000000.0, rope_local_base_freq=10000.0, sliding_window=6,
                             sliding_window_pattern=2, query_pre_attn_scalar=16, tie_word_embeddings=True,
                             hidden_activation="gelu_pytorch_tanh")
    yield "gemma3", Gemma3ForCausalLM(gemma)
    # Projection biases (attention and MLP), linear rope scaling, rope base 1e5.
    yield "llama-bias", LlamaForCausalLM(LlamaConfig(**COMMON, rope_theta=100000.0, attention_bias=True, mlp_bias=True,
                                                     rope_scaling={"rope_type": "linear", "factor": 2.0},
                                                     tie_word_embeddings=True))
    yield "qwen3", Qwen3ForCausalLM(Qwen3Config(**COMMON, rope_theta=1000000.0, tie_word_embeddings=False,
                                                use_sliding_window=False, sliding_window=None))
    yield "qwen3-bias", Qwen3ForCausalLM(Qwen3Config(**COMMON, rope_theta=10000.0, attention_bias=True,
                                                     tie_word_embeddings=True, use_sliding_window=False,
                                                     sliding_window=None))
    yield "phi3", Phi3ForCausalLM(Phi3Config(**COMMON, rope_theta=10000.0, sliding_window=6, tie_word_embeddings=False))
    yield "phi3-partial", Phi3ForCausalLM(Phi3Config(**COMMON, rope_theta=1000000.0, partial_rotary_factor=0.5,
                                                     sliding_window=None, tie_word_embeddings=True))
    yield "gemma2", Gemma2ForCausalLM(Gemma2Config(**COMMON, rope_theta=10000.0, sliding_window=6,
                                                   query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                                                   final_logit_softcapping=3.0, tie_word_embeddings=True,
                                                   hidden_activation="gelu_pytorch_tanh"))
    # Eight experts of 32 channels, two per token, their weights renormalised.
    yield "qwen3moe", Qwen3MoeForCausalLM(Qwen3MoeConfig(**COMMON, rope_theta=1000000.0, num_experts=8,
                                                         num_experts_per_tok=2, moe_intermediate_size=32,
                                                         norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                                                         use_sliding_window=False, sliding_window=None,
                                                         tie_word_embeddings=False))
    # Qwen2-MoE: eight experts of 32 channels, two per token, not
    # renormalised, and a shared expert of 96 behind its sigmoid gate.
    yield "qwen2moe", Qwen2MoeForCausalLM(Qwen2MoeConfig(**COMMON, rope_theta=1000000.0, num_experts=8,
                                                         num_experts_per_tok=2, moe_intermediate_size=32,
                                                         shared_expert_intermediate_size=96, norm_topk_prob=False,
                                                         decoder_sparse_step=1, mlp_only_layers=[],
                                                         use_sliding_window=False, tie_word_embeddings=False))
    # gpt-oss: attention sinks, windows on alternate layers, YaRN (a short
    # original context so that it matters here), clamped SwiGLU experts with
    # biases, router softmax over the chosen experts.
    yarn = {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 16.0, "beta_fast": 32.0, "beta_slow": 1.0,
            "original_max_position_embeddings": 64, "truncate": False}
    gpt_oss = {k: v for k, v in COMMON.items() if k not in ("bos_token_id", "eos_token_id")}
    yield "gpt-oss", GptOssForCausalLM(GptOssConfig(**gpt_oss, num_local_experts=4, num_experts_per_tok=2,
                                                    sliding_window=6, rope_parameters=yarn, tie_word_embeddings=False))
    yield "gpt-oss-mxfp4", GptOssForCausalLM(GptOssConfig(**gpt_oss, num_local_experts=4, num_experts_per_tok=2,
                                                          sliding_window=6, rope_parameters=yarn,
                                                          tie_word_embeddings=False))
    yield "mixtral", MixtralForCausalLM(MixtralConfig(**COMMON, rope_theta=1000000.0, num_local_experts=4,
                                                      num_experts_per_tok=2, sliding_window=None,
                                                      tie_word_embeddings=False))


# E2M1 magnitudes by code (bit 3 is the sign).
FP4_MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)


def mxfp4_pack(w):
    """(..., rows, cols) floats as Hugging Face's MXFP4 form: blocks
    (..., rows, cols / 32, 16) uint8, value 2k in byte k's low nibble and
    2k + 1 in its high one, and scales (..., rows, cols / 32) uint8 E8M0
    exponents (2^(e - 127)) chosen so the block's largest magnitude is at
    most 6; each value rounded to the nearest code."""
    blocks = w.reshape(*w.shape[:-1], w.shape[-1] // 32, 32).astype(np.float32)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    exponent = np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)).astype(np.int32)
    scaled = blocks / np.exp2(exponent)
    codes = np.abs(np.abs(scaled)[..., None] - FP4_MAGNITUDES).argmin(axis=-1).astype(np.uint8)
    codes |= (scaled < 0).astype(np.uint8) << 3
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return packed, (exponent[..., 0] + 127).astype(np.uint8)


def write_gpt_oss_mxfp4(model, d):
    """The model's checkpoint with every expert matrix in MXFP4 (the form
    openai/gpt-oss-* ships): transformers keeps the experts input-major,
    (experts, in, out), while the blocks are output-major."""
    from safetensors.torch import load_file, save_file
    tensors = load_file(d / "model.safetensors")
    for name in [n for n in tensors if n.endswith(("experts.gate_up_proj", "experts.down_proj"))]:
        w = tensors.pop(name).float().numpy().transpose(0, 2, 1)
        blocks, scales = mxfp4_pack(w)
        tensors[name + "_blocks"] = torch.from_numpy(np.ascontiguousarray(blocks))
        tensors[name + "_scales"] = torch.from_numpy(np.ascontiguousarray(scales))
    save_file(tensors, d / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((d / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (d / "config.json").write_text(json.dumps(config, indent=2))
    # transformers' reference: the checkpoint dequantized as it loads (its
    # CPU path), in f32.
    return GptOssForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager",
                                             quantization_config=Mxfp4Config(dequantize=True))


def main():
    names = sys.argv[1:]
    rng = np.random.default_rng(99)
    sequences = [rng.integers(3, VOCAB, size=n).tolist() for n in LENGTHS]
    for name, model in models():
        if names and name not in names:
            continue
        model.eval()
        torch.manual_seed(zlib.crc32(name.encode()))
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.1)
        d = OUT / name
        if d.exists():
            shutil.rmtree(d)
        model.config._attn_implementation = "eager"
        model.save_pretrained(d, safe_serialization=True)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(TOKENIZER_DIR / f, d / f)
        if name.endswith("-mxfp4"):
            model = write_gpt_oss_mxfp4(model, d)
            model.eval()
        cases = []
        for i, ids in enumerate(sequences):
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0].float().numpy()
            logits.astype("<f4").tofile(d / f"logits_{i}.f32")
            cases.append({"ids": ids, "logits": f"logits_{i}.f32"})
        (d / "expected.json").write_text(json.dumps({
            "transformers": transformers.__version__, "torch": torch.__version__, "cases": cases}, indent=1))
        print(name, "written")


if __name__ == "__main__":
    main()
