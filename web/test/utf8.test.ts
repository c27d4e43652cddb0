// Chip grouping: a character split over byte-level tokens is one group (each token still an item
// of it), ASCII and whole characters are a group each, and ill-formed bytes close a group
// instead of swallowing the rest; whitespace is made visible.
import { describe, expect, it } from 'vitest';
import { endsIncomplete, groupTokens, hexToBytes, showWhitespace } from '../src/utf8';

const hex = (s: string) => Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, '0')).join(' ');
const group = (tokens: string[]) => groupTokens(tokens, hexToBytes).map((g) => ({ n: g.items.length, text: g.text }));

describe('hexToBytes', () => {
  it('reads the trace format', () => {
    expect(Array.from(hexToBytes('e5 8c 97'))).toEqual([0xe5, 0x8c, 0x97]);
    expect(hexToBytes('').length).toBe(0);
  });
});

describe('groupTokens', () => {
  it('joins a Chinese character split over 2 tokens', () => {
    expect(group(['e4 b8', 'ad'])).toEqual([{ n: 2, text: '中' }]);
  });

  it('joins a Chinese character split over 3 tokens', () => {
    expect(group(['e4', 'b8', 'ad'])).toEqual([{ n: 3, text: '中' }]);
  });

  it('keeps ASCII tokens and whole characters one group each', () => {
    expect(group([hex('Hello'), hex(' world'), hex('北京'), hex('\n')])).toEqual([
      { n: 1, text: 'Hello' },
      { n: 1, text: ' world' },
      { n: 1, text: '北京' },
      { n: 1, text: '\n' },
    ]);
  });

  it('groups only the split character in a mixed run', () => {
    expect(group([hex('The'), 'e4 b8', 'ad e6 96', '87', hex('!')])).toEqual([
      { n: 1, text: 'The' },
      { n: 3, text: '中文' },
      { n: 1, text: '!' },
    ]);
  });

  it('joins a 4-byte emoji split in two', () => {
    expect(group(['f0 9f', '98 80'])).toEqual([{ n: 2, text: '😀' }]);
  });

  it('closes a group whose character never completes', () => {
    expect(group(['e4 b8', hex('A')])).toEqual([
      { n: 1, text: '\ufffd' },
      { n: 1, text: 'A' },
    ]);
  });

  it('does not hang on stray continuation bytes or invalid leads', () => {
    expect(group(['80', '80', 'ff', 'c0 80'])).toHaveLength(4);
  });

  it('puts every token in exactly one group for random bytes', () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const tokens = Array.from({ length: 2000 }, () =>
      Array.from({ length: 1 + Math.floor(rand() * 3) }, () => Math.floor(rand() * 256).toString(16).padStart(2, '0')).join(' '),
    );
    const groups = groupTokens(tokens.map((t, i) => ({ t, i })), (x) => hexToBytes(x.t));
    expect(groups.flatMap((g) => g.items.map((x) => x.i))).toEqual(tokens.map((_, i) => i));
  });
});

describe('endsIncomplete', () => {
  it('knows an open multi-byte sequence', () => {
    expect(endsIncomplete(hexToBytes('e4 b8'))).toBe(true);
    expect(endsIncomplete(hexToBytes('e4 b8 ad'))).toBe(false);
    expect(endsIncomplete(hexToBytes('41'))).toBe(false);
    expect(endsIncomplete(hexToBytes('f0 9f 98'))).toBe(true);
  });
});

describe('showWhitespace', () => {
  it('marks spaces, newlines and tabs', () => {
    expect(showWhitespace(' a\tb\n')).toBe('·a→b↵');
    expect(showWhitespace('')).toBe('∅');
  });
});
