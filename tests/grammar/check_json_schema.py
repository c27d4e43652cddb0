"""Reference test for json_schema_to_gbnf: for many schemas, generates (seeded, in
json_schema_cases.py) JSON texts that are valid, nearly valid (mutated by a character, re-spelled
with escapes and whitespace) or random, runs grammar_driver to ask the grammar which it accepts, and compares every answer with Python's
own verdict: json.loads plus the jsonschema package (Draft 2020-12), with the deliberate narrowings
json_schema.h documents stated here independently:
  - whitespace outside strings: each run nothing, one space, or a line feed followed by at most 20
    spaces or tabs;
  - strings the schema fixes (keys listed in `properties` or `required`, enum and const strings,
    keys inside enum/const values) only in their canonical spelling, json.dumps(s,
    ensure_ascii=False); the text is re-parsed with its spellings kept to check that; strings the
    model writes (type string, pattern, format, extra keys) in any spelling;
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
from json_schema_cases import CASES, ERROR_CASES, random_case, texts_for  # noqa: E402

MAX_INDENT = 20  # spaces or tabs after a line feed between tokens
RANDOM_SCHEMAS = 300
WS_RUN = re.compile(r"[ \t\n\r]+")
WS_OK = re.compile(r"(?: |\n[ \t]{0,%d})?" % MAX_INDENT)
STRING_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"')


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
    """Each whitespace run between tokens (outside strings): nothing, " ", or "\n" and an indent."""
    return all(WS_OK.fullmatch(run) for part in STRING_TOKEN.split(text)
               for run in WS_RUN.findall(part))


class RawStr(str):
    """A decoded string that remembers how the text spelled it (quotes included)."""
    def __new__(cls, raw):
        v = str.__new__(cls, json.loads(raw))
        v.raw = raw
        return v


class RawDict(dict):
    """An object whose raw_keys maps each decoded key to its spelling in the text."""


TOKEN = re.compile(r'[ \t\n\r]*(?:("(?:[^"\\]|\\.)*")|(-?[0-9][0-9.eE+-]*)|(true|false|null)|([][{},:]))')


def parse_spelled(text):
    """A text json.loads accepted, parsed again keeping every string's and number's spelling:
    RawStr, RawDict keys, RawInt, RawDec (what the spelling checks compare)."""
    tokens = [m.groups() for m in TOKEN.finditer(text)]
    at = 0

    def value():
        nonlocal at
        string, number, word, punct = tokens[at]
        at += 1
        if string is not None:
            return RawStr(string)
        if number is not None:
            return RawInt(number) if re.fullmatch(r"-?[0-9]+", number) else RawDec(number)
        if word is not None:
            return {"true": True, "false": False, "null": None}[word]
        if punct == "[":
            out = []
            while tokens[at][3] != "]":
                out.append(value())
                at += tokens[at][3] == ","
            at += 1
            return out
        out = RawDict()
        out.raw_keys = {}
        while tokens[at][3] != "}":
            key = RawStr(tokens[at][0])
            at += 2  # the key and ":"
            out[str(key)] = value()
            out.raw_keys[str(key)] = key.raw
            at += tokens[at][3] == ","
        at += 1
        return out
    return value()


# --- the validator: jsonschema with this converter's documented choices ---

def canon_instance(v):
    """The value as the text spelled it (strings and keys too), whitespace left out."""
    if isinstance(v, (RawInt, RawDec, RawStr)):
        return v.raw
    if isinstance(v, list):
        return "[" + ",".join(canon_instance(x) for x in v) + "]"
    if isinstance(v, RawDict):
        return "{" + ",".join(v.raw_keys[k] + ":" + canon_instance(x) for k, x in v.items()) + "}"
    return json.dumps(v, ensure_ascii=False)


def canonical_spelling(s):
    """Raw where JSON allows, else \\" \\\\ \\b \\f \\n \\r \\t, else \\u00xx in lowercase."""
    return json.dumps(s, ensure_ascii=False)


def canon_schema_value(v):
    """enum/const values as the grammar spells them: strings and keys canonically."""
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


def with_listed_spelling(base_name):
    """properties / required: besides the base check, each listed key present is spelled
    canonically (a key listed in one anyOf branch and not another is free in the other)."""
    base = jsonschema.Draft202012Validator.VALIDATORS[base_name]

    def check(validator, value, instance, schema):
        yield from base(validator, value, instance, schema)
        if isinstance(instance, RawDict):
            for k in value:
                if k in instance and instance.raw_keys[k] != canonical_spelling(k):
                    yield jsonschema.ValidationError(
                        f"listed key {k!r} spelled {instance.raw_keys[k]}, not canonically")
    return check


TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda checker, x: isinstance(x, int) and not isinstance(x, bool))
CHECKS = {"enum": enum_check, "const": const_check, "pattern": pattern_check, "format": format_check}
Values = validators.extend(jsonschema.Draft202012Validator, validators={
    **CHECKS, **{k: with_listed_spelling(k) for k in ("properties", "required")}},
    type_checker=TYPES)
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
        json.loads(text, parse_constant=no_constant, object_pairs_hook=pairs_hook)
    except Duplicate:
        return None
    except (ValueError, RecursionError):
        return False
    if not whitespace_ok(text):
        return False
    try:
        value = parse_spelled(text)
        if has_surrogate(value):
            return False
        return case["values"].is_valid(value) and case["order"].is_valid(value)
    except RecursionError:  # a $ref cycle the grammar never reaches (e.g. under maxItems 0)
        return None


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
