// JSON with integers beyond 2^53 kept exact: seeds are 64-bit (the header reports a random one),
// which JSON.parse would round. parseJson() turns such integer literals into BigInt values;
// stringifyJson() writes BigInt values back as plain JSON integers, and a RawJson's text as
// written (a user's JSON Schema: its keys' order and numbers exactly as typed).

const TAG = '\u0000bigint:';

/** Integer literals outside strings whose magnitude exceeds Number.MAX_SAFE_INTEGER, quoted and tagged. */
function tagBigIntegers(text: string): string {
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      continue;
    }
    if (c !== '-' && (c < '0' || c > '9')) continue;
    let j = i + 1;
    while (j < text.length && '0123456789.eE+-'.includes(text[j])) j++;
    const literal = text.slice(i, j);
    if (/^-?\d{16,}$/.test(literal) && !Number.isSafeInteger(Number(literal))) {
      out += text.slice(last, i) + JSON.stringify(TAG + literal);
      last = j;
    }
    i = j - 1;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** An integer literal of 16+ digits (not a float's digits) somewhere: only then scan. */
const MAYBE_BIG = /[:[,]\s*-?\d{16,}\s*[,\]}]/;

export function parseJson(text: string): unknown {
  if (!MAYBE_BIG.test(text)) return JSON.parse(text);
  return JSON.parse(tagBigIntegers(text), (_key, value) =>
    typeof value === 'string' && value.startsWith(TAG) ? BigInt(value.slice(TAG.length)) : value,
  );
}

/** JSON text sent as written; the caller makes sure it is valid JSON (JSON.parse accepts it). */
export class RawJson {
  constructor(readonly text: string) {}
}

const RAW = '\u0000raw:';

/** JSON.stringify that writes BigInt values as JSON integers and RawJson values as their text. */
export function stringifyJson(value: unknown): string {
  let big = false;
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v) => {
    if (v instanceof RawJson) {
      raws.push(v.text);
      return RAW + (raws.length - 1);
    }
    if (typeof v !== 'bigint') return v;
    big = true;
    return TAG + v.toString();
  });
  const unbig = big ? text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1') : text;
  return raws.length === 0 ? unbig : unbig.replace(/"\\u0000raw:(\d+)"/g, (_m, i: string) => raws[Number(i)]);
}
