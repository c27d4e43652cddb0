// The continuation tree of one step: the inputs (k, depth, min_prob) and the button that asks the
// server for it, then an indented, collapsible tree with one row per node (its token, a bar as
// wide as its probability after the chain given the path before, that probability and the
// whole path's), the branch the recorded generation took highlighted, and the chain it used.
import { useMemo, useState } from 'preact/hooks';
import { fmtProb } from './format';
import { probColor } from './colors';
import { barWidth, initialCollapsed, nestTree, nodeTitle, recordedPath, recordedSummary, TREE_DEPTH, TREE_K, treeSize, type TreeItem } from './tree';
import type { TraceToken, TreeResponse } from './types';
import { showWhitespace } from './utf8';

export interface TreeInputs {
  k: string;
  depth: string;
  minProb: string;
}

export function TreeControls(props: {
  inputs: TreeInputs;
  onInputs: (i: TreeInputs) => void;
  onCompute: () => void;
  pending: boolean;
  shown: boolean;
  problem: string | null;
}) {
  const { inputs } = props;
  const set = (key: keyof TreeInputs) => (e: Event) => props.onInputs({ ...inputs, [key]: (e.currentTarget as HTMLInputElement).value });
  const k = Number(inputs.k);
  const d = Number(inputs.depth);
  const size = Number.isInteger(k) && Number.isInteger(d) && k > 0 && d > 0 ? treeSize(k, d) : null;
  return (
    <form
      class="tree-controls"
      onSubmit={(e) => {
        e.preventDefault();
        props.onCompute();
      }}
    >
      <label>
        k <input type="number" data-testid="tree-k" min={TREE_K.min} max={TREE_K.max} step={1} value={inputs.k} onInput={set('k')} />
      </label>
      <label>
        depth <input type="number" data-testid="tree-depth" min={TREE_DEPTH.min} max={TREE_DEPTH.max} step={1} value={inputs.depth} onInput={set('depth')} />
      </label>
      <label>
        min p <input type="number" data-testid="tree-min-prob" min={0} max={1} step={0.01} value={inputs.minProb} onInput={set('minProb')} />
      </label>
      <button type="submit" data-testid="tree-compute" disabled={props.pending || props.problem !== null}>
        {props.pending ? 'Expanding…' : props.shown ? 'Expand again' : 'Expand the tree'}
      </button>
      {props.problem ? (
        <span class="inside-error" data-testid="tree-problem">
          {props.problem}
        </span>
      ) : (
        <span class="hint">
          the {TREE_K.min}–{TREE_K.max} most probable tokens after the chain at every node, {TREE_DEPTH.min}–{TREE_DEPTH.max} levels deep
          {size !== null ? ` (up to ${size} nodes, one batched step per level)` : ''}
        </span>
      )}
    </form>
  );
}

function Node(props: { item: TreeItem; collapsed: Set<number>; toggle: (i: number) => void }) {
  const { item, collapsed } = props;
  const n = item.node;
  const open = !collapsed.has(item.index);
  const hasKids = item.children.length > 0;
  return (
    <li
      role="treeitem"
      aria-level={n.depth}
      aria-expanded={hasKids ? open : undefined}
      class={item.recorded ? 'tree-node on-path' : 'tree-node'}
      data-testid="tree-node"
      data-index={item.index}
      data-id={n.id}
      data-depth={n.depth}
      data-prob={String(n.prob)}
      data-path-prob={String(item.pathProb)}
      data-recorded={item.recorded ? 'true' : undefined}
    >
      <div class="tree-row" title={nodeTitle(item)}>
        <span class="tree-label" style={{ paddingLeft: `${(n.depth - 1) * 14}px` }}>
          {hasKids ? (
            <button type="button" class="tree-toggle" aria-label={`${open ? 'collapse' : 'expand'} “${showWhitespace(n.token)}”`} onClick={() => props.toggle(item.index)}>
              {open ? '▾' : '▸'}
            </button>
          ) : (
<span class="tree-toggle leaf" aria-hidden="true" />
          )}
          <span class="tok">{showWhitespace(n.token)}</span>
          {item.recorded && <span class="badge">recorded</span>}
        </span>
        <span class="tree-bar" aria-hidden="true">
          <span style={{ width: barWidth(n.prob), background: probColor(n.prob) }} />
        </span>
        <span class="tree-p" data-testid="tree-prob">
          {fmtProb(n.prob)}
        </span>
        <span class="tree-path" data-testid="tree-path-prob">
          {fmtProb(item.pathProb)}
        </span>
      </div>
      {hasKids && (
        <ul role="group" hidden={!open}>
          {item.children.map((c) => (
            <Node key={c.index} item={c} collapsed={collapsed} toggle={props.toggle} />
          ))}
        </ul>
      )}
    </li>
  );
}

/** The tree of `tree`; `recorded` are the tokens the generation chose from the step on. */
export function TreeView(props: { tree: TreeResponse; recorded: TraceToken[] }) {
  const { tree, recorded } = props;
  const ids = recorded.map((t) => t.id);
  const path = useMemo(() => recordedPath(tree.nodes, ids), [tree, ids.join(',')]);
  const roots = useMemo(() => nestTree(tree.nodes, path), [tree, path]);
  const [collapsed, setCollapsed] = useState<{ tree: TreeResponse; set: Set<number> } | null>(null);
  const current = collapsed && collapsed.tree === tree ? collapsed.set : initialCollapsed(tree.nodes, path);
  const withKids = useMemo(() => new Set(tree.nodes.map((n) => n.parent).filter((p) => p >= 0)), [tree]);
  const toggle = (i: number) => {
    const next = new Set(current);
    if (!next.delete(i)) next.add(i);
    setCollapsed({ tree, set: next });
  };
  return (
    <div class="tree" data-testid="tree">
      <p class="tree-head" data-testid="tree-chain">
        k {tree.k} · depth {tree.depth} · min p {tree.min_prob} · {tree.nodes.length} nodes in {tree.forward_steps} forward step{tree.forward_steps === 1 ? '' : 's'} after {tree.context_tokens} context tokens, through{' '}
        <span class="muted chain">{tree.chain || 'no stage'}</span>
      </p>
      <p class="tree-summary" data-testid="tree-recorded">
        {recordedSummary(tree, path, recorded)}
      </p>
      <p class="tree-tools">
        <button type="button" class="small" onClick={() => setCollapsed({ tree, set: new Set() })}>
          Open all
        </button>{' '}
        <button type="button" class="small" onClick={() => setCollapsed({ tree, set: new Set(withKids) })}>
          Close all
        </button>
      </p>
      <div class="tree-row tree-columns" aria-hidden="true">
        <span>token</span>
        <span>p after the chain</span>
        <span>path p</span>
      </div>
      <ul role="tree" aria-label="continuations, best first" class="tree-list">
        {roots.map((r) => (
          <Node key={r.index} item={r} collapsed={current} toggle={toggle} />
        ))}
      </ul>
    </div>
  );
}
