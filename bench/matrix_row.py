"""One row of bench/run_matrix.sh's table: logitscope's pp128 + tg64 run (SHORT) and pp1024
run (LONG) as `bench --json` printed them, and llama-bench's `-o json` list (THEIRS, or {} when
there is none), from the environment; the shape and weight type as arguments."""
import json
import math
import os
import sys


def main():
    shape, weights = sys.argv[1], sys.argv[2]
    s, l = json.loads(os.environ["SHORT"]), json.loads(os.environ["LONG"])
    ours = [s["prefill_tokens_per_s"], l["prefill_tokens_per_s"], s["decode_tokens_per_s"]]
    rss = s["peak_rss_mib"] / (s["weights_mib"] + s["kv_cache_mib"])
    row = [shape, weights, str(s["threads"]), f"{ours[0]:.1f}", f"{ours[1]:.1f}", f"{ours[2]:.2f}",
           f"{100 * s['decode_fraction_of_roofline']:.1f}", f"{rss:.2f}"]
    theirs = json.loads(os.environ.get("THEIRS") or "{}")
    if isinstance(theirs, list):
        def ts(n_prompt, n_gen):
            return next((t["avg_ts"] for t in theirs
                         if t["n_prompt"] == n_prompt and t["n_gen"] == n_gen), math.nan)
        ref = [ts(128, 0), ts(1024, 0), ts(0, 64)]
        row += [f"{v:.1f}" for v in ref] + [f"{o / r:.2f}x" for o, r in zip(ours, ref)]
    print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
