// On-demand requests of the "Inside the model" section: a job runs only when start() is called
// (a button), and its state is kept by key (lens, attribution or tree, generation, step)
// outside the component, so a step selected again shows its answer at once, and one left while
// the server computes picks the same request up again instead of sending another.
import { useEffect, useState } from 'preact/hooks';

export type Job<T> = { state: 'idle' } | { state: 'pending' } | { state: 'done'; value: T } | { state: 'error'; error: unknown };

interface Entry {
  job: Job<unknown>;
  listeners: Set<() => void>;
}

const IDLE: Job<never> = { state: 'idle' };
const KEEP = 64; // finished entries kept (the least recently started go first)
const entries = new Map<string, Entry>();

function publish(e: Entry, job: Job<unknown>) {
  e.job = job;
  e.listeners.forEach((l) => l());
}

function evict() {
  for (const [key, e] of entries) {
    if (entries.size <= KEEP) return;
    if (e.job.state !== 'pending' && e.listeners.size === 0) entries.delete(key);
  }
}

/**
 * The job under `key` (null: none) and start(arg), which runs `run(arg)` unless the job is
 * pending or done already. A failed job can be started again (with another arg, say); with
 * `rerun`, a done one too (its answer gives way to the new request's).
 */
export function useJob<T, A>(key: string | null, run: (arg: A) => Promise<T>, rerun = false): [Job<T>, (arg: A) => void] {
  const [, rerender] = useState(0);
  useEffect(() => {
    if (key === null) return;
    let e = entries.get(key);
    if (!e) entries.set(key, (e = { job: IDLE, listeners: new Set() }));
    const listener = () => rerender((n) => n + 1);
    e.listeners.add(listener);
    listener(); // it may have changed between the render and this effect
    return () => void e.listeners.delete(listener);
  }, [key]);

  const job = (key === null ? IDLE : entries.get(key)?.job ?? IDLE) as Job<T>;
  const start = (arg: A) => {
    if (key === null) return;
    let e = entries.get(key);
    if (!e) entries.set(key, (e = { job: IDLE, listeners: new Set() }));
    if (e.job.state === 'pending' || (e.job.state === 'done' && !rerun)) return;
    const entry = e;
    entries.delete(key); // most recently started last
    entries.set(key, entry);
    publish(entry, { state: 'pending' });
    run(arg).then(
      (value) => publish(entry, { state: 'done', value }),
      (error) => publish(entry, { state: 'error', error }),
    );
    evict();
  };
  return [job, start];
}
