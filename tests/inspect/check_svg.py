"""Every chart kind renders (issue 16): sweep's probability bars, generate's entropy/probability
line chart and compare's KL chart with its flips, each drawn by rsvg-convert (librsvg, Debian's
librsvg2-bin) into a PNG. The charts' labels are checked in the SVG: a token's leading space
shows as '␣', token labels are direction-isolated (FSI ... PDI), every tick is a multiple of
one round step (1, 2 or 5 x 10^k) from 0, entropy has its unit, and the flips have a legend
entry.

usage: check_svg.py LOGITSCOPE TOKENIZER_DIR   (exit 77 = skipped: no rsvg-convert)"""
import math
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from lab_util import Checker, run, synth

NS = {"s": "http://www.w3.org/2000/svg"}
FSI, PDI, OPEN_BOX = "\u2068", "\u2069", "\u2423"


def renders(check, svg, png):
    r = subprocess.run(["rsvg-convert", "-o", png, svg], capture_output=True, text=True)
    size = os.path.getsize(png) if os.path.exists(png) else 0
    check(r.returncode == 0 and size > 4000,
          f"rsvg-convert renders {os.path.basename(svg)} ({size} bytes; {r.stderr.strip()[:200]})")


def round_ticks(check, root, cls, what):
    values = [float(t.text) for t in root.iter("{http://www.w3.org/2000/svg}text")
              if t.get("class") == cls]
    if len(values) < 2:
        check(False, f"{what}: {len(values)} ticks")
        return
    step = values[1] - values[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    evenly = all(abs(v - i * step) <= 1e-9 * max(1.0, step * len(values))
                 for i, v in enumerate(values))
    check(values[0] == 0 and evenly and any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5)),
          f"{what}: ticks {values} are 0, s, 2s, ... with s = 1, 2 or 5 x 10^k")


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    if shutil.which("rsvg-convert") is None:
        print("SKIP: rsvg-convert not installed (apt-get install librsvg2-bin)")
        return 77
    check = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        a = synth(exe, tok, os.path.join(tmp, "a"), seed=3)
        b = synth(exe, tok, os.path.join(tmp, "b"), seed=4)
        prompts = os.path.join(tmp, "prompts.txt")
        with open(prompts, "w", encoding="utf-8") as f:
            f.write("The temperature is 40 degrees\nمرحبا بالعالم\n你好，世界\n")

        sweep = os.path.join(tmp, "sweep.svg")
        out = run(exe, "sweep", "--model", a, "--prompt", "The temperature is 40 degrees",
                  "--temperature", "0.5,1", "--top", "8", "--svg", sweep, "--json")
        renders(check, sweep, os.path.join(tmp, "sweep.png"))
        root = ET.parse(sweep).getroot()
        labels = [r.get("data-label") for r in root.findall(".//s:rect[@class='point']", NS)]
        check(labels and all(l.startswith(FSI) and l.endswith(PDI) for l in labels),
              f"sweep: token labels are direction-isolated ({labels[:2]})")
        check(all(" " not in l for l in labels), "sweep: no bare space in a token label")
        import json
        cells = json.loads(out.stdout)["steps"][0]["cells"]
        spaced = [c["text"] for cell in cells for c in cell["top"] if c["text"].startswith(" ")]
        check(not spaced or any(l.startswith(FSI + OPEN_BOX) for l in labels),
              f"sweep: a leading space shows as ␣ ({spaced[:2]})")
        titles = [g.get("data-name") for g in root.findall(".//s:g[@class='series']", NS)]
        check(titles and all(" nats" in t for t in titles), f"sweep: entropy has its unit {titles[:1]}")

        gen = os.path.join(tmp, "gen.svg")
        run(exe, "generate", "--model", a, "--prompt", "The temperature is", "--max-new-tokens",
            "12", "--seed", "5", "--svg", gen)
        renders(check, gen, os.path.join(tmp, "gen.png"))
        root = ET.parse(gen).getroot()
        round_ticks(check, root, "tick-left", "generate: entropy axis")
        round_ticks(check, root, "tick-right", "generate: probability axis")
        texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
        check("entropy (nats)" in texts, "generate: the entropy axis has its unit")

        comp = os.path.join(tmp, "compare.svg")
        run(exe, "compare", "--model", a, "--model-b", b, "--prompts", prompts, "--steps", "4",
            "--svg", comp)
        renders(check, comp, os.path.join(tmp, "compare.png"))
        root = ET.parse(comp).getroot()
        round_ticks(check, root, "tick-left", "compare: KL axis")
        marks = root.findall(".//s:line[@class='mark']", NS)
        legend = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
                  if t.get("class") == "legend-marks"]
        check(marks and legend == ["top-1 flip (A and B choose differently)"],
              f"compare: {len(marks)} flips marked, legend {legend}")
    return check.close("charts render")


if __name__ == "__main__":
    sys.exit(main())
