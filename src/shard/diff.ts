/**
 * resource_diff (docs/api.md §10): Create maps every field to {old:null,new};
 * Update keeps only fields whose JSON value changed, compared deeply (object
 * key order does not count, array order does); Delete maps every field to
 * {old,new:null}. Keys follow the canonical field order of the snapshot.
 */
export type ResourceDiff = Record<string, { old: unknown; new: unknown }>;

export function resourceDiff(before: Record<string, unknown> | null, after: Record<string, unknown> | null): ResourceDiff {
  const out: ResourceDiff = {};
  if (!before && after) {
    for (const k of Object.keys(after)) out[k] = { old: null, new: json(after[k]) };
    return out;
  }
  if (before && !after) {
    for (const k of Object.keys(before)) out[k] = { old: json(before[k]), new: null };
    return out;
  }
  if (before && after) {
    for (const k of Object.keys(after)) {
      if (!jsonEqual(before[k], after[k])) out[k] = { old: json(before[k]), new: json(after[k]) };
    }
    // A field only the old snapshot had (shapes normally match) went to null.
    for (const k of Object.keys(before)) {
      if (!(k in after) && json(before[k]) !== null) out[k] = { old: json(before[k]), new: null };
    }
  }
  return out;
}

/** The value as JSON would carry it: undefined (absent) is null. */
const json = (v: unknown): unknown => (v === undefined ? null : v);

/** Equality of two JSON values: deep, object key order ignored, absent equals null. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  a = json(a);
  b = json(b);
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>,
    bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) if (!(k in bo) || !jsonEqual(ao[k], bo[k])) return false;
  return true;
}
