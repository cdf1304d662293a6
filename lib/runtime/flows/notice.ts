import type { ParentPolicy } from '../../protocol/flow-scripts.js';

/** A finished child's news for its parent, as finishFlowJob-8 left it in the child's queue. */
export interface Notice {
  childId: string;
  parentKey: string;
  outcome: 'completed' | 'failed';
  value: string;
  policy: ParentPolicy;
}

const POLICIES: ReadonlySet<unknown> = new Set<ParentPolicy>(['', 'fail', 'ignore', 'remove', 'continue']);

/**
 * A notice's JSON (`[parentKey, outcome, value, policy]`, as finishFlowJob-8 writes it), or null
 * when it is none, by the rule of lua-src/includes/readNotice.lua (which removeJob-14 and
 * ackNotices-2 apply): not JSON, not an array, a parentKey that is not a non-empty string, an
 * outcome other than completed or failed, a value or policy that is neither a string nor null, a
 * policy not known. A field written as null (another runtime) reads as ""; one left out is missing.
 * JSON.parse and cjson differ at the edges (NaN, hex, a lone \ud800 escape), so data read here is
 * acked by its bytes, never by what either parser made of it (ackNotices-2).
 */
export function parseNotice(childId: string, json: string): Notice | null {
  let fields: unknown;
  try {
    fields = JSON.parse(json);
  } catch {
    return null;
  }
  if (!Array.isArray(fields) || fields.length < 4) return null;
  const [parentKey, outcome, rawValue, rawPolicy] = fields as unknown[];
  const value = rawValue === null ? '' : rawValue;
  const policy = rawPolicy === null ? '' : rawPolicy;
  if (typeof parentKey !== 'string' || parentKey === '' || (outcome !== 'completed' && outcome !== 'failed')) return null;
  if (typeof value !== 'string' || !POLICIES.has(policy)) return null;
  return { childId, parentKey, outcome, value, policy: policy as ParentPolicy };
}
