"""Reference test for json_schema_to_gbnf: for many schemas, generates (seeded) JSON texts that
are valid, nearly valid (mutated by a character, re-spelled with escapes and whitespace) or random,
runs grammar_driver to ask the grammar which it accepts, and compares every answer with Python's
own verdict: json.loads plus the jsonschema package (Draft 2020-12), with the deliberate narrowings
json_schema.h documents stated here independently:
  - at most 20 whitespace characters in a row outside strings;
  - no escaped lone surrogates; texts with duplicate keys are not compared (JSON leaves them open);
  - "integer" means an integer literal (no fraction or exponent);
  - enum/const: numbers as json.dumps writes them, objects in the schema's key order;
  - listed properties in the order of `properties` (then required keys not listed), extra keys
    after them;
  - pattern: ECMA-262 semantics (translated to Python's re), oneOf as anyOf;
  - formats: RFC 3339 date/time/date-time (seconds up to 60, t/z in either case), RFC 4122 uuid,
    checked by hand below.

usage: /usr/bin/python3 check_json_schema.py PATH/TO/grammar_driver [SEED]"""
import calendar
import copy
import decimal
import json
import os
import random
import re
import subprocess
import sys
import tempfile

try:
    import jsonschema
    from jsonschema import validators
except ImportError:
    sys.exit("check_json_schema.py needs Python's jsonschema: apt-get install python3-jsonschema "
             "(scripts/setup.sh installs it)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from json_schema_cases import CASES, ERROR_CASES, random_case  # noqa: E402

MAX_WS = 20
RANDOM_SCHEMAS = 300
WS = " \t\n\r"


# --- parsing with the spellings kept ---

class RawInt(int):
    def __new__(cls, text):
        v = int.__new__(cls, text)
        v.raw = text
        return v


class RawDec(decimal.Decimal):
    def __new__(cls, text):
        try:
            v = decimal.Decimal.__new__(cls, text)
        except decimal.InvalidOperation:
            # An exponent beyond Decimal's range: a stand-in with the same sign and the same
            # side of 1 (what every bound the cases use compares the same).
            m = re.fullmatch(r"(-?)([0-9.]+)[eE]([-+]?)[0-9]+", text)
            zero = set(m[2]) <= set("0.")
            v = decimal.Decimal.__new__(cls, "0" if zero else m[1] + ("1e-99999" if m[3] == "-" else "1e99999"))
        v.raw = text
        return v


class Duplicate(Exception):
    pass


def pairs_hook(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise Duplicate(k)
        out[k] = v
    return out


def no_constant(name):
    raise ValueError("not JSON: " + name)


def has_surrogate(v):
    if isinstance(v, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, list):
        return any(has_surrogate(x) for x in v)
    if isinstance(v, dict):
        return any(has_surrogate(k) or has_surrogate(x) for k, x in v.items())
    return False


def whitespace_ok(text):
    run, in_string, escaped = 0, False, False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            continue
        if c in WS:
            run += 1
            if run > MAX_WS:
                return False
            continue
        run = 0
        in_string = c == '"'
    return True


# --- the validator: jsonschema with this converter's documented choices ---

def canon_instance(v):
    if isinstance(v, (RawInt, RawDec)):
        return v.raw
    if isinstance(v, list):
        return "[" + ",".join(canon_instance(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canon_instance(x)
                              for k, x in v.items()) + "}"
    return json.dumps(v, ensure_ascii=False)


def canon_schema_value(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def enum_check(validator, enums, instance, schema):
    if all(canon_instance(instance) != canon_schema_value(e) for e in enums):
        yield jsonschema.ValidationError(f"{instance!r} is not one of {enums!r} as spelled")


def const_check(validator, const, instance, schema):
    if canon_instance(instance) != canon_schema_value(const):
        yield jsonschema.ValidationError(f"{instance!r} is not {const!r} as spelled")


ECMA_SPACE = ("\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f"
              "\\u3000\\ufeff")
CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": ECMA_SPACE}


def ecma_to_python(p):
    """ECMA-262 pattern (the subset the tests use) -> Python re with the same meaning."""
    out, i, in_class = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            e = p[i + 1]
            if e in CLASS_ESCAPES:
                out.append(CLASS_ESCAPES[e] if in_class else "[" + CLASS_ESCAPES[e] + "]")
            elif e in "DWS":
                if in_class:
                    raise ValueError("negated class escape inside a class: " + p)
                out.append("[^" + CLASS_ESCAPES[e.lower()] + "]")
            else:
                out.append(p[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif c == "$":
            out.append("\\Z")
        elif p.startswith("(?<", i) and p[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def pattern_check(validator, pattern, instance, schema):
    if isinstance(instance, str) and not re.search(ecma_to_python(pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def days_in_month(y, m):
    if m == 2:
        return 29 if calendar.isleap(y) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def is_date(s):
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", s)
    if not m:
        return False
    y, mo, d = (int(x) for x in m.groups())
    return 1 <= mo <= 12 and 1 <= d <= days_in_month(y, mo)


def is_time(s):
    m = re.fullmatch(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-]([0-9]{2}):([0-9]{2}))", s)
    if not m:
        return False
    h, mi, se = int(m[1]), int(m[2]), int(m[3])
    if h > 23 or mi > 59 or se > 60:
        return False
    return m[6] is None or (int(m[6]) <= 23 and int(m[7]) <= 59)


def is_format(f, s):
    if f == "date":
        return is_date(s)
    if f == "time":
        return is_time(s)
    if f == "date-time":
        return len(s) > 11 and s[10] in "Tt" and is_date(s[:10]) and is_time(s[11:])
    if f == "uuid":
        return re.fullmatch(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", s) is not None
    raise ValueError(f)


def format_check(validator, f, instance, schema):
    if isinstance(instance, str) and not is_format(f, instance):
        yield jsonschema.ValidationError(f"{instance!r} is not a {f}")


def listed_keys(schema):
    props = list(schema.get("properties", {}))
    return props + [r for r in schema.get("required", []) if r not in props]


def order_check(instance, schema):
    """Listed keys in their order, then the others."""
    listed = listed_keys(schema)
    last, seen_extra = -1, False
    for k in instance:
        if k in listed:
            if seen_extra or listed.index(k) < last:
                yield jsonschema.ValidationError(f"key {k!r} out of order")
                return
            last = listed.index(k)
        else:
            seen_extra = True


def with_order(base_name):
    base = jsonschema.Draft202012Validator.VALIDATORS[base_name]

    def check(validator, value, instance, schema):
        yield from base(validator, value, instance, schema)
        # Once per schema: at its first object keyword.
        first = next(k for k in schema if k in ("properties", "required", "additionalProperties"))
        if first == base_name and isinstance(instance, dict):
            yield from order_check(instance, schema)
    return check


TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda checker, x: isinstance(x, int) and not isinstance(x, bool))
CHECKS = {"enum": enum_check, "const": const_check, "pattern": pattern_check, "format": format_check}
Values = validators.extend(jsonschema.Draft202012Validator, validators=CHECKS, type_checker=TYPES)
Ordered = validators.extend(jsonschema.Draft202012Validator, validators={
    **CHECKS, **{k: with_order(k) for k in ("properties", "required", "additionalProperties")}},
    type_checker=TYPES)


def one_of_as_any_of(s):
    if isinstance(s, list):
        return [one_of_as_any_of(x) for x in s]
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k in ("properties", "$defs", "definitions"):
            out[k] = {name: one_of_as_any_of(x) for name, x in v.items()}
        elif k in ("enum", "const", "required", "pattern", "format", "type"):
            out[k] = v
        else:
            out["anyOf" if k == "oneOf" else k] = one_of_as_any_of(v)
    return out


def verdict(case, text):
    """True/False, or None when the text is outside what is compared (duplicate keys, a schema
    jsonschema cannot decide)."""
    try:
        value = json.loads(text, parse_int=RawInt, parse_float=RawDec,
                           parse_constant=no_constant, object_pairs_hook=pairs_hook)
    except Duplicate:
        return None
    except (ValueError, RecursionError):
        return False
    if not whitespace_ok(text) or has_surrogate(value):
        return False
    try:
        return case["values"].is_valid(value) and case["order"].is_valid(value)
    except RecursionError:  # a $ref cycle the grammar never reaches (e.g. under maxItems 0)
        return None


# --- texts ---

ALPHABET = "az AZ09_-\"\\/\n\x01\x1f\u007fé中😀\u2028"
STRING_CHARS = [c for c in ALPHABET]


def spell_string(rng, s):
    out = ['"']
    for c in s:
        cp = ord(c)
        short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
                 "\f": "\\f", "/": "\\/"}
        r = rng.random()
        if cp > 0xFFFF and r < 0.3:
            v = cp - 0x10000
            pair = "\\u%04x\\u%04x" % (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
            out.append(pair.upper().replace("\\U", "\\u") if rng.random() < 0.5 else pair)
        elif cp <= 0xFFFF and (cp < 0x20 or r < 0.1):
            esc = "\\u%04x" % cp
            out.append(esc.upper().replace("\\U", "\\u") if rng.random() < 0.5 else esc)
        elif c in short and (c in '"\\\n\r\t\b\f' or r < 0.3):
            out.append(short[c])
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def ws(rng):
    r = rng.random()
    if r < 0.6:
        return ""
    if r < 0.97:
        return "".join(rng.choice(WS) for _ in range(rng.randint(1, 3)))
    return "".join(rng.choice(WS) for _ in range(rng.choice([MAX_WS, MAX_WS + 1])))


def spell_number(rng, v):
    if isinstance(v, int):
        return str(v)
    d = decimal.Decimal(v)
    forms = [str(v), format(d, "f"), format(d, "e").replace("+", ""), format(d, "E")]
    return rng.choice([f for f in forms if re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?", f)]
                      or [str(v)])


def serialize(rng, v):
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, (int, float, decimal.Decimal)):
        return spell_number(rng, v)
    if isinstance(v, str):
        return spell_string(rng, v)
    if isinstance(v, list):
        if not v:
            return "[" + ws(rng) + "]"
        return "[" + ws(rng) + ("," ).join(serialize(rng, x) + ws(rng) for x in v) + "]"
    items = [spell_string(rng, k) + ws(rng) + ":" + ws(rng) + serialize(rng, x) for k, x in v.items()]
    if not items:
        return "{" + ws(rng) + "}"
    return "{" + ws(rng) + ",".join(i + ws(rng) for i in items) + "}"


def random_value(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.5:
        return rng.choice([None, True, False, 0, -1, 7, 1.5, -0.25, 123456789012, "", "a",
                           rng.choice(STRING_CHARS) * rng.randint(0, 3)])
    if r < 0.75:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "b", "c", "x", "id", "é"]): random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def resolve(root, ref):
    node = root
    for token in ref.lstrip("#").split("/")[1:]:
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node


def generate(rng, root, s, depth=0):
    """A value meant to be valid under s (a guess: the oracle decides)."""
    if s is True or s == {} or depth > 6:
        return random_value(rng, 2) if depth > 6 else random_value(rng)
    if s is False:
        return None
    if "$ref" in s:
        return generate(rng, root, resolve(root, s["$ref"]), depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in s:
            branch = rng.choice(s[key])
            if isinstance(branch, bool):
                return generate(rng, root, branch, depth + 1)
            return generate(rng, root, {**{k: v for k, v in s.items() if k != key}, **branch}, depth + 1)
    if "allOf" in s:
        merged = {}
        for part in s["allOf"]:
            merged.update(part)
        return generate(rng, root, merged, depth + 1)
    if "const" in s:
        return copy.deepcopy(s["const"])
    if "enum" in s:
        return copy.deepcopy(rng.choice(s["enum"]))
    types = s.get("type", ["object", "array", "string", "integer", "number", "boolean", "null"])
    t = rng.choice(types if isinstance(types, list) else [types])
    if t == "null":
        return None
    if t == "boolean":
        return rng.random() < 0.5
    if t in ("integer", "number"):
        lo = s.get("minimum", s.get("exclusiveMinimum", -200))
        hi = s.get("maximum", s.get("exclusiveMaximum", 200))
        if t == "integer":
            lo, hi = int(lo) - 1, int(hi) + 1
            return rng.randint(min(lo, hi), max(lo, hi))
        return rng.choice([round(rng.uniform(lo - 1, hi + 1), rng.randint(0, 3)), 0, 0.0, lo, hi])
    if t == "string":
        if "format" in s:
            return "x"  # (the case's samples are the real ones)
        n = rng.randint(s.get("minLength", 0), s.get("maxLength", s.get("minLength", 0) + 5))
        return "".join(rng.choice(STRING_CHARS) for _ in range(n))
    if t == "array":
        prefix = s.get("prefixItems", [])
        n = rng.randint(s.get("minItems", 0), s.get("maxItems", max(len(prefix), s.get("minItems", 0)) + 3))
        items = s.get("items", True)
        return [generate(rng, root, prefix[i] if i < len(prefix) else items, depth + 1) for i in range(n)]
    props = s.get("properties", {})
    required = s.get("required", [])
    out = {}
    for k, sub in props.items():
        if k in required or rng.random() < 0.6:
            out[k] = generate(rng, root, sub, depth + 1)
    extra = s.get("additionalProperties", True)
    for r in required:
        if r not in out:
            out[r] = generate(rng, root, extra, depth + 1)
    if extra is not False and rng.random() < 0.4:
        for _ in range(rng.randint(1, 2)):
            out[rng.choice(["zz", "extra", "a", "é"])] = generate(rng, root, extra, depth + 1)
    return out


def mutate(rng, text):
    if not text:
        return rng.choice(ALPHABET)
    i = rng.randrange(len(text))
    r = rng.random()
    junk = rng.choice(list(ALPHABET) + ["{", "}", "[", "]", ",", ":", "0", "1", "-", ".", "e", "u",
                                        "null", "true", "\\u00", " " * 21])
    if r < 0.3:
        return text[:i] + text[i + 1:]
    if r < 0.6:
        return text[:i] + junk + text[i:]
    if r < 0.85:
        return text[:i] + junk + text[i + 1:]
    j = rng.randrange(len(text))
    a, b = min(i, j), max(i, j)
    return text[:a] + text[a:b] * 2 + text[b:]


def texts_for(rng, case):
    schema = case["schema"]
    values = [generate(rng, schema, schema) for _ in range(120)] + list(case.get("samples", []))
    texts = [serialize(rng, v) for v in values for _ in range(2)]
    texts += [mutate(rng, rng.choice(texts)) for _ in range(250)]
    texts += [serialize(rng, random_value(rng)) for _ in range(40)]
    texts += list(case.get("texts", []))
    return list(dict.fromkeys(texts))


def run_driver(driver, cases):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f)
        path = f.name
    try:
        out = subprocess.run([driver, path], capture_output=True, text=True, check=True)
    finally:
        os.unlink(path)
    return json.loads(out.stdout)


def main():
    driver = sys.argv[1]
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 20240611)
    prepared = []
    for case in CASES + [random_case(rng, i) for i in range(RANDOM_SCHEMAS)]:
        schema = case["schema"]
        c = dict(case)
        c["values"] = Values(one_of_as_any_of(schema))
        c["order"] = Ordered(one_of_as_any_of(case.get("order_schema", schema)))
        c["all_texts"] = texts_for(rng, case)
        prepared.append(c)
    results = run_driver(driver, [{"schema": c["schema"], "texts": c["all_texts"]} for c in prepared])
    failures, compared, accepted, refused = 0, 0, 0, 0
    for c, r in zip(prepared, results):
        if r["error"]:
            # A random schema may be one the converter refuses (an unsatisfiable bound, a $ref
            # cycle that consumes nothing): that is counted, and checked for a path.
            if not c.get("random") or " at $" not in r["error"] and "can begin with itself" not in r["error"]:
                print(f"FAIL {c['name']}: the converter refused {json.dumps(c['schema'])}: {r['error']}")
                failures += 1
            refused += 1
            continue
        for text, got in zip(c["all_texts"], r["accept"]):
            want = verdict(c, text)
            if want is None:
                continue
            compared += 1
            accepted += want
            if want != got:
                failures += 1
                if failures <= 40:
                    print(f"FAIL {c['name']} {json.dumps(c['schema'])}: {text!r}: Python says "
                          f"{'valid' if want else 'invalid'}, the grammar {'accepts' if got else 'rejects'}")
    errors = run_driver(driver, [{"schema": s, "texts": []} for _, s, _ in ERROR_CASES])
    for (name, schema, expected), r in zip(ERROR_CASES, errors):
        if not r["error"] or any(e not in r["error"] for e in expected):
            failures += 1
            print(f"FAIL error case {name}: got {r['error']!r}, expected it to contain {expected!r}")
    print(f"{len(CASES)} schemas and {RANDOM_SCHEMAS} random ones ({refused} refused), "
          f"{compared} texts compared ({accepted} valid), "
          f"{len(ERROR_CASES)} refused schemas, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
