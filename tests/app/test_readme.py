"""Every command of the README's quick start runs as written (issue 16): the commands are taken
from README.md itself, run in order in a scratch folder on a tiny synthetic model (the one
change: `synth --shape tiny` instead of the 0.5B shape, for time), with the examples/ files the
README names, and each must exit 0, or the status its comment states ("exit 3").

usage: test_readme.py --logitscope BIN --readme README.md"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def quick_start_commands(readme):
    text = open(readme, encoding="utf-8").read()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines()
            if line.startswith("    build/app/logitscope ")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--readme", required=True)
    a = ap.parse_args()
    root = os.path.dirname(os.path.abspath(a.readme))
    commands = quick_start_commands(a.readme)
    failures = []
    if len(commands) < 10:
        failures.append(f"only {len(commands)} quick-start commands found in {a.readme}")
    work = tempfile.mkdtemp(prefix="ls_readme_")
    try:
        shutil.copytree(os.path.join(root, "examples"), os.path.join(work, "examples"))
        for line in commands:
            command, _, comment = line.partition("#")
            expected = int(m.group(1)) if (m := re.search(r"exit (\d+)", comment)) else 0
            args = shlex.split(command)
            args[0] = a.logitscope
            if args[1] == "synth":
                args[args.index("--shape") + 1] = "tiny"
            r = subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=300)
            ok = r.returncode == expected
            print(("ok   " if ok else "FAIL ") + f"exit {r.returncode} (want {expected}): {command.strip()}")
            if not ok:
                failures.append(f"{command.strip()}: exit {r.returncode}\n{r.stderr[-600:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{len(commands)} commands, {len(failures)} failures")
    for f in failures:
        print("  FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
