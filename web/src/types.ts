// Shapes of what the server sends: the trace step and header objects (docs/trace-format.md,
// as `generate --json` writes them and `logitscope.trace` / `logitscope.header` stream them),
// the /v1/logitscope routes' answers (docs/server-api.md, docs/lens.md, docs/lab.md), and the
// page's own settings and generation rows ("branches").

export type Preset = 'hf' | 'vllm' | 'llama_cpp';
export const PRESETS: readonly Preset[] = ['hf', 'vllm', 'llama_cpp'];

/** A token as the trace writes it: `bytes` is hex ("e5 8c"), `text` the bytes as UTF-8. */
export interface TraceToken {
  id: number;
  text: string;
  bytes: string;
}
export interface TopEntry extends TraceToken {
  logit: number;
  prob: number;
}
export interface StageTrace {
  name: string;
  description: string;
  candidates: number;
  entropy: number;
  mass_removed: number;
  /** The rank under the stage's input of the best token left (above 1: it removed every better one). */
  best_kept_rank?: number;
  top: TopEntry[];
}
export interface ChosenToken extends TraceToken {
  raw_rank: number;
  logit: number;
  raw_prob: number;
  raw_logprob: number;
  prob: number;
  logprob: number;
}
/** One `{"type": "step"}` object (greedy or sampling). Non-finite numbers arrive as null. */
export interface Step {
  type?: 'step';
  sequence: number;
  step: number;
  mode: string;
  raw: { candidates: number; entropy: number; top: TopEntry[] };
  stages: StageTrace[];
  chosen: ChosenToken;
  runner_up: TraceToken | null;
  margin_prob: number | null;
  margin_logit: number | null;
  entropy_before: number;
  entropy_after: number;
  final_candidates: number;
  mass_removed: number;
  draw: number | null;
  sequence_logprob: number;
  /** A mixture-of-experts model asked with logitscope.experts: per layer, [[expert, weight], ...] ([] for a dense layer). */
  experts?: [number, number][][];
  [key: string]: unknown;
}

export interface SettingEntry {
  value: unknown;
  source: string;
}
/** The `{"type": "header"}` object, plus the server's `generation` and `prompt_token_ids`. */
export interface Header {
  type?: 'header';
  mode: string;
  /** A BigInt when the number is too large for a double (64-bit seeds), see json_big.ts. */
  seed: number | bigint;
  stages: string[];
  chain?: string;
  order_preset?: string;
  settings: Record<string, SettingEntry>;
  generation?: string | number;
  prompt_token_ids?: number[];
  [key: string]: unknown;
}

export interface InfoResponse {
  model: string;
  vocab_size: number;
  max_model_len: number;
  has_chat_template: boolean;
  order_presets: string[];
  settings: Record<string, SettingEntry>;
  /** The second model of `serve --model-b` (same vocabulary), or null/absent. */
  model_b?: string | null;
  /** The router's top-k of a mixture of experts (0 or absent: a dense model). */
  experts_per_token?: number;
}

export interface GenerationInfo {
  id: string | number;
  prompt_token_ids: number[];
  tokens: number[];
  draws: (number | null)[];
  kept_steps: number;
  finished: boolean;
  vocab_size: number;
  header: Header;
}

export interface ReplayStepSummary {
  step: number;
  recorded: number;
  chosen: number;
  changed: boolean;
  pool: number;
  entropy: number;
  recorded_prob: number;
  chosen_prob: number;
  draw: number | null;
  /** With `"boundaries"` in the request: this step's decision boundaries (docs/lab.md, replay --boundaries). */
  boundaries?: StepBoundaries;
}
export interface ReplayResponse {
  generation: string | number;
  chain: string;
  steps: ReplayStepSummary[];
  changed: number[];
  focus: Step | null;
}

export type BoundaryName = 'temperature' | 'top_k' | 'top_p' | 'min_p' | 'repetition_penalty';
/**
 * One setting's decision boundary: varied alone (the others and the step's draw kept), the
 * choice stays over [lo, hi] within the range searched [min, max]; `below`/`above` are the
 * tokens chosen just past each end (null: no change down to min / up to max). A setting that
 * takes no part (the warpers of a greedy step) has only `applies: false` and `note`.
 */
export type BoundarySetting =
  | {
      applies: true;
      value: number;
      lo: number;
      hi: number;
      min: number;
      max: number;
      below: number | null;
      above: number | null;
      fragile: boolean;
      note: string;
    }
  | { applies: false; note: string };
export interface StepBoundaries {
  greedy: boolean;
  /** Any setting fragile: its value within 10 % of an end. */
  fragile: boolean;
  settings: Partial<Record<BoundaryName, BoundarySetting>>;
}

/** A token as the lens and attribution routes name it: id and text (UTF-8, lossy for byte tokens). */
export interface InsideToken {
  id: number;
  token: string;
}
export interface LensCandidate extends InsideToken {
  logprob: number;
}
/** One row of the logit lens: the residual stream after `layer` decoder layers (0: the embedding). */
export interface LensLayer {
  layer: number;
  top: LensCandidate[];
  entropy: number;
  /** By token id (as a string): 1-based raw rank and raw logprob, for chosen, runner-up and tracked ids. */
  rank_of: Record<string, number>;
  logprob_of: Record<string, number>;
  sampler_choice: InsideToken;
  /** The chosen token's probability after the chain (0: the chain removed it). */
  chosen_prob: number;
}
/** POST /v1/logitscope/lens (docs/lens.md). */
export interface LensResponse {
  object: 'logitscope.lens';
  n_layers: number;
  position: number;
  context_tokens: number;
  chain: string;
  draw: number | null;
  chosen: InsideToken;
  runner_up: InsideToken | null;
  first_chosen_layer: number | null;
  settled_layer: number | null;
  runner_up_lost_at: number | null;
  layers: LensLayer[];
  generation?: string | number;
  step?: number;
}
export interface Attribution extends InsideToken {
  position: number;
  /** The target's logprob with this context token removed (or replaced). */
  logprob: number;
  /** base_logprob - logprob: positive when the token made the target likelier. */
  delta: number;
}
/** POST /v1/logitscope/attribute (docs/lens.md). */
export interface AttributionResponse {
  object: 'logitscope.attribution';
  context_tokens: number;
  target: InsideToken;
  base_logprob: number;
  mode: string;
  replacement: InsideToken | null;
  attributions: Attribution[];
  generation?: string | number;
  step?: number;
}

/** One node of a continuation tree: a token after its parent's path (`parent` -1: after the context). */
export interface TreeNode {
  /** The token id, and its text (UTF-8, lossy for byte tokens). */
  id: number;
  token: string;
  /** Index of the parent in `nodes` (parents come first), -1 for a child of the context. */
  parent: number;
  depth: number;
  /** After the chain, given the context and the path before it; raw_logprob is log_softmax of the raw logits. */
  prob: number;
  logprob: number;
  raw_logprob: number;
  /** Sums from the context down to this node (the chain's, and the model's own). */
  path_logprob: number;
  path_raw_logprob: number;
}
/** POST /v1/logitscope/tree (docs/lab.md). */
export interface TreeResponse {
  object: 'logitscope.tree';
  context_tokens: number;
  chain: string;
  k: number;
  depth: number;
  min_prob: number;
  forward_steps: number;
  nodes: TreeNode[];
  generation?: string | number;
  step?: number;
}

/** The settings the sliders edit: what the next request uses and what the what-if re-scores. */
export interface Settings {
  temperature: number;
  top_k: number;
  top_p: number;
  min_p: number;
  repetition_penalty: number;
  order_preset: Preset;
}

/** One row of generated chips: the original generation or a fork of another row. */
export interface Branch {
  id: number;
  label: string;
  fork: { parent: number; step: number; token: TraceToken; sharedTokens: TraceToken[] } | null;
  header: Header | null;
  steps: Step[];
  text: string;
  finishReason: string | null;
  status: 'streaming' | 'done' | 'stopped' | 'error';
  settings: Settings;
  maxTokens: number;
  /** The structured output asked for ("JSON object", ...), null for none: such a row is not kept. */
  constraint: string | null;
}

/** One generation request and its forks (a chat turn, or one raw completion). */
export interface View {
  id: number;
  title: string;
  branches: Branch[];
}

/** One kept step of POST /v1/logitscope/side_by_side: model A (the kept logits) against model B. */
export interface SideStep {
  step: number;
  token: number;
  kl: number | null;
  top_a: number;
  top_b: number;
  flip: boolean;
  prob_b: number | null;
  rank_b: number;
}

export interface SideCandidate {
  id: number;
  token: string;
  logprob: number | null;
  prob: number;
}

export interface SideBySideResponse {
  object: string;
  generation: string | number;
  model_a: string;
  model_b: string;
  steps: SideStep[];
  kl_mean: number | null;
  same_top1: number | null;
  focus: null | { step: number; a: SideCandidate[]; b: SideCandidate[] };
}
