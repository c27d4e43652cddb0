// The continuation tree as the page shows it (docs/lab.md's tree): the inputs k, depth and
// min_prob checked against the page's limits (k + k^2 + ... + k^depth nodes at most), the
// server's flat node list (parents first) nested into children lists, the branch the recorded
// generation took, which rows start collapsed, and each node's numbers for its row and tooltip.
import { fmtNum, fmtProb } from './format';
import type { TreeNode, TreeResponse } from './types';
import { showWhitespace } from './utf8';

export const TREE_K = { min: 1, max: 10, initial: 3 };
export const TREE_DEPTH = { min: 1, max: 8, initial: 3 };
/** The most nodes a request may ask for (the server's own cap on max_nodes). */
export const TREE_MAX_NODES = 2000;
/** Trees up to this many nodes start fully open; larger ones show level 1 and the recorded branch. */
export const OPEN_ALL = 120;

export interface TreeParams {
  k: number;
  depth: number;
  minProb: number;
}

/** k + k^2 + ... + k^depth: the most nodes a tree of these sizes can have. */
export function treeSize(k: number, depth: number): number {
  let total = 0;
  let level = 1;
  for (let d = 0; d < depth; d++) {
    level *= k;
    total += level;
  }
  return total;
}

/** The inputs as a request's parameters, or why they cannot be sent (naming the field as the server does). */
export function readParams(k: string, depth: string, minProb: string): { params: TreeParams } | { param: string; message: string } {
  const kk = Number(k.trim());
  const dd = Number(depth.trim());
  const mp = minProb.trim() === '' ? 0 : Number(minProb.trim());
  if (!Number.isInteger(kk) || kk < TREE_K.min || kk > TREE_K.max) return { param: 'k', message: `k must be a whole number from ${TREE_K.min} to ${TREE_K.max}` };
  if (!Number.isInteger(dd) || dd < TREE_DEPTH.min || dd > TREE_DEPTH.max) {
    return { param: 'depth', message: `depth must be a whole number from ${TREE_DEPTH.min} to ${TREE_DEPTH.max}` };
  }
  if (!Number.isFinite(mp) || mp < 0 || mp > 1) return { param: 'min_prob', message: 'min_prob must be a number from 0 to 1' };
  const size = treeSize(kk, dd);
  if (size > TREE_MAX_NODES) {
    return { param: 'max_nodes', message: `k ${kk} and depth ${dd} could make ${size} nodes; at most ${TREE_MAX_NODES}: lower k or depth` };
  }
  return { params: { k: kk, depth: dd, minProb: mp } };
}

/** The request body for a kept generation's step. */
export function treeRequest(generation: string | number, step: number, p: TreeParams): Record<string, unknown> {
  return { generation: String(generation), step, k: p.k, depth: p.depth, min_prob: p.minProb, max_nodes: TREE_MAX_NODES };
}

export interface TreeItem {
  /** Index into the response's nodes. */
  index: number;
  node: TreeNode;
  /** exp(path_logprob): the chain's probability of the whole path from the context. */
  pathProb: number;
  /** Whether this node lies on the branch the recorded generation took. */
  recorded: boolean;
  /** Best first, as the server lists them. */
  children: TreeItem[];
}

/**
 * The nodes nested under their parents (the roots are the context's children), each list in
 * the server's order; `recorded` holds the indices of the recorded branch (see recordedPath).
 * A parent index that does not come before its node is an error.
 */
export function nestTree(nodes: readonly TreeNode[], recorded: readonly number[] = []): TreeItem[] {
  const onPath = new Set(recorded);
  const items: TreeItem[] = [];
  const roots: TreeItem[] = [];
  nodes.forEach((node, index) => {
    const item: TreeItem = { index, node, pathProb: Math.exp(node.path_logprob), recorded: onPath.has(index), children: [] };
    items.push(item);
    if (node.parent === -1) roots.push(item);
    else if (Number.isInteger(node.parent) && node.parent >= 0 && node.parent < index) items[node.parent].children.push(item);
    else throw new Error(`tree node ${index} names parent ${node.parent}, which is not an earlier node`);
  });
  return roots;
}

/**
 * The indices of the nodes along `tokens` (the ids the generation chose after the step), from
 * the context down, as far as the tree holds them: shorter than `tokens` where the recorded
 * token was not among a node's children (or the tree ends).
 */
export function recordedPath(nodes: readonly TreeNode[], tokens: readonly number[]): number[] {
  const path: number[] = [];
  let parent = -1;
  for (const id of tokens) {
    const next = nodes.findIndex((n) => n.parent === parent && n.id === id);
    if (next < 0) break;
    path.push(next);
    parent = next;
  }
  return path;
}

/** Nodes whose children start hidden: none in a small tree, else all but the recorded branch's. */
export function initialCollapsed(nodes: readonly TreeNode[], recorded: readonly number[]): Set<number> {
  const out = new Set<number>();
  if (nodes.length <= OPEN_ALL) return out;
  const hasChildren = new Set(nodes.map((n) => n.parent));
  const keep = new Set(recorded);
  nodes.forEach((_, i) => {
    if (hasChildren.has(i) && !keep.has(i)) out.add(i);
  });
  return out;
}

/** The sentence under the tree: how far the recorded continuation follows it. */
export function recordedSummary(tree: TreeResponse, path: readonly number[], recorded: readonly { id: number; text: string }[]): string {
  const levels = Math.min(tree.depth, recorded.length);
  if (recorded.length === 0) return 'The generation ended at this step: there is no recorded continuation to follow.';
  const shown = path.map((i) => `“${showWhitespace(tree.nodes[i].token)}”`).join(' ');
  if (path.length >= levels) {
    const ended = recorded.length < tree.depth ? ` (the generation ended after ${recorded.length} token${recorded.length === 1 ? '' : 's'})` : '';
    return `The recorded continuation ${shown} follows the tree for ${levels === 1 ? 'its one level' : `all ${levels} levels`}${ended}.`;
  }
  const miss = recorded[path.length];
  const where = path.length === 0 ? 'right after the context' : `after ${shown}`;
  return `The recorded continuation leaves the tree ${where}: it chose “${showWhitespace(miss.text)}” (id ${miss.id}), not among the top ${tree.k}${tree.min_prob > 0 ? ` with p ≥ ${tree.min_prob}` : ''}.`;
}

/** A bar's width (CSS) for a probability: 0% to 100%. */
export function barWidth(p: number): string {
  const c = Number.isFinite(p) ? Math.min(1, Math.max(0, p)) : 0;
  return `${(100 * c).toFixed(1)}%`;
}

/** A node's tooltip: token, the chain's and the model's numbers, for the step and the path. */
export function nodeTitle(item: TreeItem): string {
  const n = item.node;
  return [
    `“${showWhitespace(n.token)}” (id ${n.id}), depth ${n.depth}${item.recorded ? ', the recorded branch' : ''}`,
    `p ${fmtProb(n.prob)} after the chain (logprob ${fmtNum(n.logprob)}), raw logprob ${fmtNum(n.raw_logprob)}`,
    `path p ${fmtProb(item.pathProb)} (logprob ${fmtNum(n.path_logprob)}), raw path logprob ${fmtNum(n.path_raw_logprob)}`,
  ].join('\n');
}
