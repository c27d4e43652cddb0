// The continuation tree's page logic: the inputs against the page's limits (naming the field as
// the server does), the flat node list nested under its parents in the server's order, the
// recorded branch found as far as the tree holds it, the collapsed rows of a large tree, and
// the sentence and tooltip text.
import { describe, expect, it } from 'vitest';
import { barWidth, initialCollapsed, nestTree, nodeTitle, OPEN_ALL, readParams, recordedPath, recordedSummary, TREE_MAX_NODES, treeRequest, treeSize } from '../src/tree';
import type { TreeNode, TreeResponse } from '../src/types';

function node(id: number, parent: number, depth: number, prob: number, pathLogprob: number): TreeNode {
  return { id, token: `t${id}`, parent, depth, prob, logprob: Math.log(prob), raw_logprob: Math.log(prob) - 1, path_logprob: pathLogprob, path_raw_logprob: pathLogprob - depth };
}

// k 2, depth 2, parents first: roots 10 (0.6) and 20 (0.3); 10 -> 11, 12; 20 -> 21, 22.
function response(): TreeResponse {
  const l = Math.log;
  return {
    object: 'logitscope.tree',
    context_tokens: 5,
    chain: 'temperature(t=0.7)',
    k: 2,
    depth: 2,
    min_prob: 0,
    forward_steps: 2,
    nodes: [
      node(10, -1, 1, 0.6, l(0.6)),
      node(20, -1, 1, 0.3, l(0.3)),
      node(11, 0, 2, 0.5, l(0.6) + l(0.5)),
      node(12, 0, 2, 0.25, l(0.6) + l(0.25)),
      node(21, 1, 2, 0.9, l(0.3) + l(0.9)),
      node(22, 1, 2, 0.05, l(0.3) + l(0.05)),
    ],
  };
}

describe('tree inputs', () => {
  it('counts k + k^2 + ... + k^depth nodes', () => {
    expect(treeSize(3, 3)).toBe(39);
    expect(treeSize(1, 8)).toBe(8);
    expect(treeSize(10, 3)).toBe(1110);
  });

  it('reads valid inputs and names the field of invalid ones', () => {
    expect(readParams('3', '3', '0')).toEqual({ params: { k: 3, depth: 3, minProb: 0 } });
    expect(readParams(' 2 ', '4', '')).toEqual({ params: { k: 2, depth: 4, minProb: 0 } });
    expect(readParams('0', '3', '0')).toMatchObject({ param: 'k' });
    expect(readParams('2.5', '3', '0')).toMatchObject({ param: 'k' });
    expect(readParams('3', '9', '0')).toMatchObject({ param: 'depth' });
    expect(readParams('3', 'x', '0')).toMatchObject({ param: 'depth' });
    expect(readParams('3', '3', '1.5')).toMatchObject({ param: 'min_prob' });
    expect(readParams('3', '3', '-0.1')).toMatchObject({ param: 'min_prob' });
    const big = readParams('10', '4', '0'); // 11110 nodes
    expect(big).toMatchObject({ param: 'max_nodes' });
    expect('message' in big && big.message).toContain('11110');
  });

  it('asks for a kept step with the server cap on max_nodes', () => {
    expect(treeRequest(7, 2, { k: 3, depth: 2, minProb: 0.01 })).toEqual({ generation: '7', step: 2, k: 3, depth: 2, min_prob: 0.01, max_nodes: TREE_MAX_NODES });
  });
});

describe('tree nesting', () => {
  it('puts every node under its parent, best first, with its path probability', () => {
    const roots = nestTree(response().nodes);
    expect(roots.map((r) => r.node.id)).toEqual([10, 20]);
    expect(roots[0].children.map((c) => c.node.id)).toEqual([11, 12]);
    expect(roots[1].children.map((c) => c.node.id)).toEqual([21, 22]);
    expect(roots[1].children[0].index).toBe(4);
    expect(roots[1].children[0].pathProb).toBeCloseTo(0.27, 12);
    expect(roots[0].children[0].children).toEqual([]);
    let count = 0;
    const walk = (items: typeof roots) => items.forEach((i) => (count++, walk(i.children)));
    walk(roots);
    expect(count).toBe(6);
  });

  it('refuses a parent that does not come first', () => {
    const nodes = response().nodes;
    nodes[2] = { ...nodes[2], parent: 4 };
    expect(() => nestTree(nodes)).toThrow(/node 2 names parent 4/);
  });

  it('finds the recorded branch as far as the tree holds it', () => {
    const nodes = response().nodes;
    expect(recordedPath(nodes, [20, 21, 99])).toEqual([1, 4]);
    expect(recordedPath(nodes, [20, 11])).toEqual([1]); // 11 is a child of 10, not of 20
    expect(recordedPath(nodes, [99])).toEqual([]);
    expect(recordedPath(nodes, [])).toEqual([]);
    const marked = nestTree(nodes, [1, 4]);
    expect(marked.map((r) => r.recorded)).toEqual([false, true]);
    expect(marked[1].children.map((c) => c.recorded)).toEqual([true, false]);
  });

  it('opens a small tree fully and a large one along the recorded branch only', () => {
    expect(initialCollapsed(response().nodes, [1]).size).toBe(0);
    const big: TreeNode[] = [];
    for (let i = 0; i < 10; i++) big.push(node(i, -1, 1, 0.1, Math.log(0.1)));
    for (let p = 0; big.length <= OPEN_ALL; p = (p + 1) % 10) big.push(node(1000 + big.length, p, 2, 0.1, Math.log(0.01)));
    const closed = initialCollapsed(big, [3]);
    expect([...closed].sort((a, b) => a - b)).toEqual([0, 1, 2, 4, 5, 6, 7, 8, 9]);
  });
});

describe('tree text', () => {
  const rec = (ids: number[]) => ids.map((id) => ({ id, text: `t${id}` }));

  it('says how far the recorded continuation follows the tree', () => {
    const t = response();
    expect(recordedSummary(t, [1, 4], rec([20, 21, 5]))).toBe('The recorded continuation “t20” “t21” follows the tree for all 2 levels.');
    expect(recordedSummary(t, [1], rec([20]))).toBe('The recorded continuation “t20” follows the tree for its one level (the generation ended after 1 token).');
    expect(recordedSummary(t, [1], rec([20, 7]))).toBe('The recorded continuation leaves the tree after “t20”: it chose “t7” (id 7), not among the top 2.');
    expect(recordedSummary({ ...t, min_prob: 0.1 }, [], rec([7]))).toBe('The recorded continuation leaves the tree right after the context: it chose “t7” (id 7), not among the top 2 with p ≥ 0.1.');
    expect(recordedSummary(t, [], [])).toMatch(/ended at this step/);
  });

  it('formats bars and tooltips', () => {
    expect(barWidth(0.5)).toBe('50.0%');
    expect(barWidth(1.5)).toBe('100.0%');
    expect(barWidth(Number.NaN)).toBe('0.0%');
    const item = nestTree(response().nodes, [1, 4])[1].children[0];
    expect(nodeTitle(item).split('\n')).toEqual([
      '“t21” (id 21), depth 2, the recorded branch',
      `p 0.9000 after the chain (logprob ${Math.log(0.9).toFixed(3)}), raw logprob ${(Math.log(0.9) - 1).toFixed(3)}`,
      `path p 0.2700 (logprob ${(Math.log(0.3) + Math.log(0.9)).toFixed(3)}), raw path logprob ${(Math.log(0.3) + Math.log(0.9) - 2).toFixed(3)}`,
    ]);
  });
});
