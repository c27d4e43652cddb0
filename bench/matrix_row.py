"""One row of bench/run_matrix.sh's table: logitscope's pp128 + tg64 runs (SHORT) and pp1024 runs
(LONG; since December 2026 they also decode 64 tokens after the 1,024, `--depth 1024`), one
`bench --json` line per repetition, and llama-bench's `-o jsonl` records (THEIRS,
empty when there is none), from the environment; the shape and weight type as arguments. Each
figure is the best of the repetitions, ours and theirs alike (a shared machine only ever makes a
run slower); the spread of ours is printed after the table row as a comment line."""
import json
import math
import os
import sys


def lines(name):
    return [json.loads(l) for l in os.environ.get(name, "").splitlines() if l.strip()]


def roof_cell(run):
    """A run's % of the roofline; starred when bench found stretches of decode faster than the
    bandwidth read on both sides of them (the machine's bandwidth moved: not a reliable figure)."""
    star = "*" if run.get("stretches_above_roofline", 0) > 0 else ""
    return f"{100 * run['decode_fraction_of_roofline']:.1f}{star}"


def main():
    shape, weights = sys.argv[1], sys.argv[2]
    short, long = lines("SHORT"), lines("LONG")
    s = short[0]
    pp128 = [r["prefill_tokens_per_s"] for r in short]
    tg = [r["decode_tokens_per_s"] for r in short]
    pp1024 = [r["prefill_tokens_per_s"] for r in long]
    ours = [max(pp128), max(pp1024), max(tg)]
    best = short[tg.index(max(tg))]
    rss = max(r["peak_rss_mib"] for r in short) / (s["weights_mib"] + s["kv_cache_mib"])
    row = [shape, weights, str(s["threads"]), f"{ours[0]:.1f}", f"{ours[1]:.1f}", f"{ours[2]:.2f}",
           roof_cell(best)]
    # Decode after the 1,024-token prompt (llama-bench 4748 has no depth: ours alone).
    deep = [r for r in long if r.get("depth", 0) > 0]
    if deep:
        top = max(deep, key=lambda r: r["decode_tokens_per_s"])
        row += [f"{top['decode_tokens_per_s']:.2f}", roof_cell(top)]
    else:
        row += ["-", "-"]
    row.append(f"{rss:.2f}")
    theirs = lines("THEIRS")
    if theirs:
        def ts(n_prompt, n_gen):
            return max((t["avg_ts"] for t in theirs
                        if t["n_prompt"] == n_prompt and t["n_gen"] == n_gen), default=math.nan)
        ref = [ts(128, 0), ts(1024, 0), ts(0, 64)]
        row += [f"{v:.1f}" for v in ref] + [f"{o / r:.2f}x" for o, r in zip(ours, ref)]
    print("| " + " | ".join(row) + " |")
    if len(short) > 1:
        spread = lambda v: f"{min(v):.1f}-{max(v):.1f}"
        # The roofline beside each stretch, and (bench since December 2026) the best reading's.
        roof = ""
        if all("decode_fraction_of_best_bandwidth" in r for r in short):
            pct = lambda k: spread([100 * r[k] for r in short])
            roof = (f", tg % of roofline {pct('decode_fraction_of_roofline')} "
                    f"(of the best reading {pct('decode_fraction_of_best_bandwidth')})")
        print(f"<!-- {weights}: {len(short)} runs, ours pp128 {spread(pp128)}, "
              f"pp1024 {spread(pp1024)}, tg64 {spread(tg)}{roof} -->")


if __name__ == "__main__":
    main()
