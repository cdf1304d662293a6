import type { ParentPolicy } from '../../protocol/flow-scripts.js';

/** A job's hash as a pickup hands it over: HGETALL's flat array (as the scripts return it) or its object form. */
export type PickupFields = string[] | Record<string, string>;

/**
 * A job of a flow (a child: `parentKey`; a parent: `fch`), with its policy on failure as stored
 * (`pfp`, whoever added it), read from the raw fields in one pass: a corrupt child still finishes
 * as a flow job, whose notice its parent needs. Undefined for any other job.
 */
export function flowLinkOf(fields: PickupFields): FlowLink | undefined {
  const record = Array.isArray(fields) ? undefined : fields;
  let child = record ? record.parentKey !== undefined : false;
  let parent = record ? record.fch === '1' : false;
  let policy = record?.pfp ?? '';
  let childFailed = record?.cfr;
  if (Array.isArray(fields)) {
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i];
      if (name === 'parentKey') child = true;
      else if (name === 'fch') parent = fields[i + 1] === '1';
      else if (name === 'pfp') policy = fields[i + 1];
      else if (name === 'cfr') childFailed = fields[i + 1];
    }
  }
  return child || parent ? { policy: policy as ParentPolicy, parent, childFailed } : undefined;
}

/** What the pickup's fields say of a job's place in a flow. */
export interface FlowLink {
  /** Its policy on failure (a child's pfp; '' for none). */
  policy: ParentPolicy;
  /** It has (had) children: fch. */
  parent: boolean;
  /** cfr: a child failed with failParentOnFailure while it was not waiting; it fails with this reason. */
  childFailed?: string;
}

/** One field of a job hash in either form the scripts and HGETALL give it. */
export function fieldOf(fields: PickupFields, name: string): string | undefined {
  if (!Array.isArray(fields)) return fields[name];
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
