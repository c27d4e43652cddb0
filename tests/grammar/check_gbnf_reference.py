"""GBNF grammars against a reference recogniser written here in Python: its own parser of the
GBNF text, and membership decided by memoised sets of end positions per (expression, position),
over code points (another algorithm than the matcher's stack states). Three grammars: arithmetic
expressions, a list of names, and JSON (written here from the JSON grammar of RFC 8259). Texts:
members generated from each grammar by random expansion, single-character mutations of them,
and random strings over the grammar's alphabet; every one must get the same verdict from
grammar_driver (parse_gbnf + the matcher).

usage: /usr/bin/python3 check_gbnf_reference.py PATH/TO/grammar_driver"""
import functools
import json
import os
import random
import subprocess
import sys
import tempfile

GRAMMARS = {
    "arithmetic": r'''
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= "-"? (num | "(" expr ")")
num ::= [0-9]+ ("." [0-9]{1,3})?
''',
    "names": r'''
root ::= name (", " name){0,4} "."
name ::= [A-Z] [a-z]{1,6} (" " [A-Z] "."?)?  # a first name, perhaps an initial
''',
    "json": r'''
root ::= ws value ws
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (member (ws "," ws member)*)? ws "}"
member ::= string ws ":" ws value
array ::= "[" ws (value (ws "," ws value)*)? ws "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws ::= [ \t\n]{0,3}
''',
}
ALPHABETS = {"arithmetic": "0123456789.+-*/() ", "names": "AbcZyx., ",
             "json": '{}[]":, \\/0123456789-+.eEtruefalsn\nabé\u00e9'}


# --- the reference: parse GBNF into tuples, recognise by end-position sets ---
def parse(text):
    rules, pos = {}, 0

    def skip():
        nonlocal pos
        while pos < len(text):
            if text[pos] == "#":
                while pos < len(text) and text[pos] != "\n":
                    pos += 1
            elif text[pos] in " \t\r\n":
                pos += 1
            else:
                break

    def name():
        nonlocal pos
        start = pos
        while pos < len(text) and (text[pos].isalnum() or text[pos] in "-_"):
            pos += 1
        return text[start:pos]

    def char():
        nonlocal pos
        c = text[pos]
        pos += 1
        if c != "\\":
            return c
        e = text[pos]
        pos += 1
        if e in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[e]
            v = int(text[pos:pos + n], 16)
            pos += n
            return chr(v)
        return {"n": "\n", "r": "\r", "t": "\t"}.get(e, e)

    def at_definition():
        save = pos
        n = name()
        rest = text[pos:].lstrip(" \t")
        ok = bool(n) and rest.startswith("::=")
        return ok, save

    def alternatives():
        nonlocal pos
        alts = [sequence()]
        while pos < len(text) and text[pos] == "|":
            pos += 1
            alts.append(sequence())
        return ("alt", alts)

    def sequence():
        nonlocal pos
        items = []
        while True:
            skip()
            if pos >= len(text) or text[pos] in "|)":
                return ("seq", items)
            ok, save = at_definition()
            pos = save
            if ok:
                return ("seq", items)
            items.append(postfix(item()))

    def item():
        nonlocal pos
        c = text[pos]
        if c == '"':
            pos += 1
            chars = []
            while text[pos] != '"':
                chars.append(("set", [(char(),) * 2], False))
            pos += 1
            return ("seq", chars)
        if c == "[":
            pos += 1
            neg = text[pos] == "^"
            pos += neg
            ranges = []
            while text[pos] != "]":
                lo = char()
                hi = lo
                if text[pos] == "-" and text[pos + 1] != "]":
                    pos += 1
                    hi = char()
                ranges.append((lo, hi))
            pos += 1
            return ("set", ranges, neg)
        if c == ".":
            pos += 1
            return ("set", [], True)
        if c == "(":
            pos += 1
            a = alternatives()
            skip()
            pos += 1
            return a
        return ("ref", name())

    def postfix(x):
        nonlocal pos
        skip()
        if pos >= len(text):
            return x
        c = text[pos]
        if c in "*+?":
            pos += 1
            return ("rep", x, {"*": 0, "+": 1, "?": 0}[c], 1 if c == "?" else None)
        if c == "{":
            close = text.index("}", pos)
            body = text[pos + 1:close]
            pos = close + 1
            lo, _, hi = body.partition(",")
            return ("rep", x, int(lo), int(lo) if "," not in body else (int(hi) if hi.strip() else None))
        return x

    while True:
        skip()
        if pos >= len(text):
            return rules
        n = name()
        skip()
        assert text.startswith("::=", pos), text[pos:pos + 20]
        pos += 3
        rules[n] = alternatives()


def recogniser(rules, s):
    @functools.lru_cache(maxsize=None)
    def ends(node, i):
        kind = node[0]
        if kind == "set":
            if i >= len(s):
                return frozenset()
            inside = any(lo <= s[i] <= hi for lo, hi in node[1])
            return frozenset([i + 1]) if inside != node[2] else frozenset()
        if kind == "ref":
            return ends(rules[node[1]], i)
        if kind == "alt":
            return frozenset().union(*(ends(a, i) for a in node[1]))
        if kind == "seq":
            at = frozenset([i])
            for x in node[1]:
                at = frozenset().union(*(ends(x, p) for p in at)) if at else at
            return at
        _, x, lo, hi = node  # repetition: breadth-first over counts
        at, seen, count = frozenset([i]), set(), 0
        out = set(at) if lo == 0 else set()
        while at and (hi is None or count < hi):
            at = frozenset().union(*(ends(x, p) for p in at)) - (seen if hi is None else set())
            seen |= at
            count += 1
            if count >= lo:
                out |= at
        return frozenset(out)

    return len(s) in ends(rules["root"], 0)


def freeze(node):
    if isinstance(node, list):
        return tuple(freeze(x) for x in node)
    if isinstance(node, tuple):
        return tuple(freeze(x) for x in node)
    return node


def generate(rules, rng, node, depth=0):
    kind = node[0]
    if kind == "set":
        if node[2]:
            return rng.choice([c for c in "aZ9 é日" if not any(lo <= c <= hi for lo, hi in node[1])])
        lo, hi = rng.choice(node[1])
        return chr(rng.randint(ord(lo), ord(hi)))
    if kind == "ref":
        return generate(rules, rng, rules[node[1]], depth + 1)
    if kind == "alt":
        alts = node[1] if depth < 12 else node[1][-1:] + node[1][:1]
        return generate(rules, rng, rng.choice(alts) if depth < 12 else alts[0], depth + 1)
    if kind == "seq":
        return "".join(generate(rules, rng, x, depth + 1) for x in node[1])
    _, x, lo, hi = node
    n = rng.randint(lo, min(hi if hi is not None else lo + 3, lo + 3) if depth < 10 else lo)
    return "".join(generate(rules, rng, x, depth + 1) for _ in range(n))


def main():
    driver = sys.argv[1]
    rng = random.Random(44)
    cases, expected = [], []
    for name, text in GRAMMARS.items():
        rules = {k: freeze(v) for k, v in parse(text).items()}
        texts = set()
        for _ in range(300):
            try:
                m = generate(rules, rng, rules["root"])
            except (IndexError, ValueError, RecursionError):
                continue
            texts.add(m)
            if m:
                i = rng.randrange(len(m))
                texts.add(m[:i] + rng.choice(ALPHABETS[name]) + m[i + 1:])
                texts.add(m[:i] + m[i + 1:])
        for _ in range(300):
            texts.add("".join(rng.choice(ALPHABETS[name]) for _ in range(rng.randint(0, 8))))
        texts = sorted(texts)
        cases.append({"gbnf": text, "texts": texts})
        expected.append([recogniser(rules, t) for t in texts])
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f)
    try:
        out = json.loads(subprocess.run([driver, f.name], capture_output=True, text=True,
                                        check=True).stdout)
    finally:
        os.unlink(f.name)
    failures = 0
    for name, case, want, got in zip(GRAMMARS, cases, expected, out):
        if got["error"]:
            print(f"FAIL {name}: parse_gbnf refused it: {got['error']}")
            failures += 1
            continue
        bad = [(t, w) for t, w, g in zip(case["texts"], want, got["accept"]) if w != g]
        members = sum(want)
        print(f"{'ok  ' if not bad else 'FAIL'} {name}: {len(want)} texts, {members} members, "
              f"{len(bad)} disagreements {bad[:3]}")
        failures += bool(bad) or members < 50 or members == len(want)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
