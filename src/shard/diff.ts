/**
 * resource_diff (gaps.md §10): Create maps every field to {old:null,new};
 * Update keeps only fields whose JSON value changed (deep); Delete maps every
 * field to {old,new:null}. Keys follow the canonical field order.
 */
export function resourceDiff(before: Record<string, unknown> | null, after: Record<string, unknown> | null): Record<string, { old: unknown; new: unknown }> {
  const out: Record<string, { old: unknown; new: unknown }> = {};
  if (!before && after) { for (const k of Object.keys(after)) out[k] = { old: null, new: after[k] }; return out; }
  if (before && !after) { for (const k of Object.keys(before)) out[k] = { old: before[k], new: null }; return out; }
  if (before && after) {
    for (const k of Object.keys(after)) {
      if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) out[k] = { old: before[k] ?? null, new: after[k] };
    }
  }
  return out;
}
