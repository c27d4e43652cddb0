// Server-sent events from a fetch body: bytes in (chunks split anywhere, even inside a UTF-8
// character), one event's `data` out per blank line. classify() turns a data payload into the
// stream's three kinds: a JSON chunk, the `[DONE]` marker, or `{"error": {...}}`.
import { parseJson } from './json_big';

export class SseParser {
  private decoder = new TextDecoder('utf-8');
  private buffer = '';
  private data: string[] = [];
  private sawCR = false;

  /** Feeds bytes; returns the data of every event they complete. */
  push(bytes: Uint8Array): string[] {
    return this.lines(this.decoder.decode(bytes, { stream: true }));
  }

  /** The end of the stream: a last event without its blank line is still delivered. */
  end(): string[] {
    const out = this.lines(this.decoder.decode() + '\n');
    if (this.data.length > 0) out.push(this.data.join('\n'));
    this.data = [];
    return out;
  }

  private lines(text: string): string[] {
    const out: string[] = [];
    let s = this.buffer + text;
    if (this.sawCR && s.startsWith('\n')) s = s.slice(1); // the \n of a \r\n split across chunks
    this.sawCR = false;
    let start = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(s.slice(start, i), out);
      if (c === 13) {
        if (i + 1 < s.length) {
          if (s.charCodeAt(i + 1) === 10) i++;
        } else {
          this.sawCR = true;
        }
      }
      start = i + 1;
    }
    this.buffer = s.slice(start);
    return out;
  }

  private line(line: string, out: string[]): void {
    if (line === '') {
      if (this.data.length > 0) out.push(this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return; // a comment (keep-alive)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
  }
}

export interface ServerError {
  message: string;
  type?: string;
  param?: string | null;
  code?: string | null;
}

export type SseEvent =
  | { kind: 'done' }
  | { kind: 'error'; error: ServerError }
  | { kind: 'chunk'; json: Record<string, unknown> };

/** What one event's data is; text that is not JSON is reported as an error event. */
export function classify(data: string): SseEvent {
  if (data.trim() === '[DONE]') return { kind: 'done' };
  let json: unknown;
  try {
    json = parseJson(data);
  } catch {
    return { kind: 'error', error: { message: `the server sent an event that is not JSON: ${data.slice(0, 200)}` } };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return { kind: 'error', error: { message: `the server sent an event that is not an object: ${data.slice(0, 200)}` } };
  }
  const obj = json as Record<string, unknown>;
  if ('error' in obj && obj.error) {
    const e = obj.error as Partial<ServerError> | string;
    return { kind: 'error', error: typeof e === 'string' ? { message: e } : { ...e, message: String(e.message ?? 'error') } };
  }
  return { kind: 'chunk', json: obj };
}
