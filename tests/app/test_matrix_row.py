"""bench/matrix_row.py, the table row of bench/run_matrix.sh, on made-up runs: each figure is the
best of the repetitions (ours: bench --json lines; theirs: llama-bench jsonl records), the ratio
is ours over theirs, the spread of ours is reported, and a run without llama-bench has no
llama.cpp columns. usage: /usr/bin/python3 test_matrix_row.py PATH/TO/bench/matrix_row.py"""
import json
import os
import subprocess
import sys


def ours(pp, tg, rss=110.0, **more):
    return json.dumps({"threads": 2, "prefill_tokens_per_s": pp, "decode_tokens_per_s": tg,
                       "decode_fraction_of_roofline": tg / 200.0, "peak_rss_mib": rss,
                       "weights_mib": 100.0, "kv_cache_mib": 0.0, **more})


def theirs(n_prompt, n_gen, ts):
    return json.dumps({"n_prompt": n_prompt, "n_gen": n_gen, "avg_ts": ts})


def row(script, short, long, their):
    env = dict(os.environ, SHORT="\n".join(short), LONG="\n".join(long), THEIRS="\n".join(their))
    out = subprocess.run([sys.executable, script, "qwen2.5-0.5b", "q4_0"], env=env,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [c.strip() for c in out[0].strip("|").split("|")], out[1:]


def main():
    script = sys.argv[1]
    short = [ours(300.0, 100.0), ours(350.0, 80.0, rss=120.0), ours(280.0, 120.0)]
    long = [ours(250.0, 1.0), ours(200.0, 1.0), ours(240.0, 1.0)]
    their = [theirs(128, 0, 320.0), theirs(1024, 0, 230.0), theirs(0, 64, 75.0),
             theirs(128, 0, 350.0), theirs(1024, 0, 210.0), theirs(0, 64, 80.0)]
    cells, rest = row(script, short, long, their)
    want = ["qwen2.5-0.5b", "q4_0", "2", "350.0", "250.0", "120.00", "60.0", "-", "-", "1.20",
            "350.0", "230.0", "80.0", "1.00x", "1.09x", "1.50x"]
    assert cells == want, (cells, want)
    assert rest == ["<!-- q4_0: 3 runs, ours pp128 280.0-350.0, pp1024 200.0-250.0, "
                    "tg64 80.0-120.0 -->"], rest
    # With the best reading's fraction (bench since December 2026), the comment gives both spreads.
    best = [json.dumps(dict(json.loads(r), decode_fraction_of_best_bandwidth=f)) for r, f in
            zip(short, (0.45, 0.35, 0.55))]
    cells, rest = row(script, best, long, their)
    assert cells == want, (cells, want)
    assert rest == ["<!-- q4_0: 3 runs, ours pp128 280.0-350.0, pp1024 200.0-250.0, "
                    "tg64 80.0-120.0, tg % of roofline 40.0-60.0 (of the best reading 35.0-55.0) -->"], rest
    cells, rest = row(script, short[:1], long[:1], [])
    assert cells == ["qwen2.5-0.5b", "q4_0", "2", "300.0", "250.0", "100.00", "50.0", "-", "-",
                     "1.10"], cells
    assert rest == [], rest
    # Long runs that decoded after their prompt (--depth 1024): the fastest one's speed and its
    # own fraction of the roofline, not the best fraction of another run.
    deep = [ours(250.0, 90.0, depth=1024), ours(200.0, 95.0, depth=1024, decode_fraction_of_roofline=0.4),
            ours(240.0, 70.0, depth=1024, decode_fraction_of_roofline=0.9)]
    cells, rest = row(script, short[:1], deep, [])
    assert cells == ["qwen2.5-0.5b", "q4_0", "2", "300.0", "250.0", "100.00", "50.0", "95.00",
                     "40.0", "1.10"], cells
    # A run whose stretches beat the bandwidth read beside them has its % starred (not reliable).
    moved = [ours(300.0, 100.0, stretches_above_roofline=2)]
    deep_moved = [ours(250.0, 90.0, depth=1024, stretches_above_roofline=1)]
    cells, rest = row(script, moved, deep_moved, [])
    assert cells[6] == "50.0*" and cells[8] == "45.0*", cells
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
