// Token bytes and characters: the trace's hex bytes ("e5 8c") decoded, tokens grouped so that a
// character split across byte-level tokens shows as one group (each token still its own chip),
// and whitespace made visible ("·" for a space, "↵" for a newline, "→" for a tab).

export function hexToBytes(hex: string): Uint8Array {
  const parts = hex.trim() === '' ? [] : hex.trim().split(/\s+/);
  const out = new Uint8Array(parts.length);
  parts.forEach((p, i) => {
    const v = parseInt(p, 16);
    out[i] = Number.isFinite(v) ? v & 0xff : 0xfd;
  });
  return out;
}

const lenient = new TextDecoder('utf-8');

/** Bytes as text, ill-formed sequences replaced by U+FFFD (as the trace's `text` is). */
export function decodeBytes(bytes: Uint8Array): string {
  return lenient.decode(bytes);
}

function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 1; // ASCII, a stray continuation byte or an invalid lead: complete on its own
}

const isContinuation = (b: number) => (b & 0xc0) === 0x80;

/** True when `bytes` ends inside a multi-byte character that later bytes could complete. */
export function endsIncomplete(bytes: Uint8Array): boolean {
  const n = bytes.length;
  for (let back = 1; back <= Math.min(4, n); back++) {
    const b = bytes[n - back];
    if (isContinuation(b)) continue;
    return sequenceLength(b) > back;
  }
  return false;
}

export interface TokenGroup<T> {
  items: T[];
  /** The group's bytes decoded together. */
  text: string;
  bytes: Uint8Array;
}

/**
 * Consecutive tokens joined while their bytes end inside a character and the next token goes
 * on with continuation bytes; anything else (ASCII, whole characters, invalid bytes) closes the
 * group, so every token lands in exactly one group.
 */
export function groupTokens<T>(items: readonly T[], bytesOf: (item: T) => Uint8Array): TokenGroup<T>[] {
  const groups: TokenGroup<T>[] = [];
  let cur: { items: T[]; parts: Uint8Array[] } | null = null;
  const close = () => {
    if (!cur) return;
    const total = cur.parts.reduce((n, p) => n + p.length, 0);
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const p of cur.parts) {
      bytes.set(p, at);
      at += p.length;
    }
    groups.push({ items: cur.items, text: decodeBytes(bytes), bytes });
    cur = null;
  };
  let pendingIncomplete = false;
  for (const item of items) {
    const b = bytesOf(item);
    if (cur && pendingIncomplete && b.length > 0 && isContinuation(b[0])) {
      cur.items.push(item);
      cur.parts.push(b);
    } else {
      close();
      cur = { items: [item], parts: [b] };
    }
    const joined = cur.parts.length === 1 ? b : concat(cur.parts);
    pendingIncomplete = endsIncomplete(joined);
    if (!pendingIncomplete) close();
  }
  close();
  return groups;
}

function concat(parts: Uint8Array[]): Uint8Array {
  // Only the last four bytes decide whether a character is still open.
  const tail: number[] = [];
  for (let i = parts.length - 1; i >= 0 && tail.length < 4; i--) {
    for (let j = parts[i].length - 1; j >= 0 && tail.length < 4; j--) tail.unshift(parts[i][j]);
  }
  return Uint8Array.from(tail);
}

/** Text with whitespace visible: each piece says whether it is a whitespace marker. */
export function visibleWhitespace(text: string): { text: string; ws: boolean; newline: boolean }[] {
  const out: { text: string; ws: boolean; newline: boolean }[] = [];
  let run = '';
  const flush = () => {
    if (run) out.push({ text: run, ws: false, newline: false });
    run = '';
  };
  for (const ch of text) {
    if (ch === ' ') {
      flush();
      out.push({ text: '·', ws: true, newline: false });
    } else if (ch === '\n') {
      flush();
      out.push({ text: '↵', ws: true, newline: true });
    } else if (ch === '\t') {
      flush();
      out.push({ text: '→', ws: true, newline: false });
    } else if (ch === '\r') {
      flush();
      out.push({ text: '␍', ws: true, newline: false });
    } else {
      run += ch;
    }
  }
  flush();
  if (out.length === 0) out.push({ text: '∅', ws: true, newline: false });
  return out;
}

/** Whitespace-visible text as one string (titles, tables). */
export function showWhitespace(text: string): string {
  return visibleWhitespace(text).map((p) => p.text).join('');
}
