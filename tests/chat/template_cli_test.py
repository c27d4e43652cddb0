#!/usr/bin/env python3
"""`logitscope template` against jinja2: for a few conversations of cases/conversations.json,
the prompt printed by the command (--json, --tools, --context, --no-generation-prompt) must be
the one Hugging Face's rendering (jinja2, see jinja_reference.py) gives for the same
tokenizer_config.json; a missing model directory must fail with a message naming it."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import jinja_reference as ref


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--logitscope", required=True)
    p.add_argument("--cases-dir", required=True)
    p.add_argument("--qwen3-config", required=True)
    args = p.parse_args()
    with open(os.path.join(args.cases_dir, "conversations.json"), encoding="utf-8") as f:
        conversations = {c["name"]: c for c in json.load(f)}
    env = ref.hf_environment()
    failures = 0
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model")
        os.makedirs(model)
        with open(args.qwen3_config, encoding="utf-8") as f:
            config = f.read()
        with open(os.path.join(model, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            f.write(config)
        for name in ("system_user", "unicode", "tool_call_dict_args", "multi_step_tools_after_query",
                     "enable_thinking_false"):
            conv = conversations[name]
            for agp in (True, False):
                paths = {}
                for key in ("messages", "tools", "extra"):
                    if conv.get(key) is not None:
                        paths[key] = os.path.join(tmp, f"{name}.{key}.json")
                        with open(paths[key], "w", encoding="utf-8") as f:
                            json.dump(conv[key], f, ensure_ascii=False)
                cmd = [args.logitscope, "template", "--model", model, "--messages", paths["messages"], "--json"]
                if "tools" in paths:
                    cmd += ["--tools", paths["tools"]]
                if "extra" in paths:
                    cmd += ["--context", paths["extra"]]
                if not agp:
                    cmd.append("--no-generation-prompt")
                run = subprocess.run(cmd, capture_output=True, text=True)
                want = ref.render_reference(env, {
                    "tokenizer_config": os.path.join(model, "tokenizer_config.json"),
                    "messages": conv["messages"], "tools": conv.get("tools"),
                    "add_generation_prompt": agp, "extra": conv.get("extra")})
                got = json.loads(run.stdout) if run.returncode == 0 else None
                checked += 1
                if got != want.get("output"):
                    failures += 1
                    print(f"MISMATCH {name} agp={agp}: rc={run.returncode} {run.stderr}\n"
                          f"  jinja2:     {want}\n  logitscope: {got!r}")
        run = subprocess.run([args.logitscope, "template", "--model", os.path.join(tmp, "absent"),
                              "--messages", paths["messages"]], capture_output=True, text=True)
        if run.returncode == 0 or "absent" not in run.stderr:
            failures += 1
            print(f"missing model directory: rc={run.returncode}, stderr={run.stderr!r}")
    print(f"logitscope template: {checked} prompts compared with jinja2, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
