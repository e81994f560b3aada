/**
 * Every item a request body holds, as MAX_REQUEST_ITEMS counts them (README, Hostile input: "Bulk lists are
 * bounded"; src/schema/list-items.ts counts them on the bytes): the top-level list's items, or 1 for any other
 * body, and every element of every list inside, at any depth.
 */
export function itemsOf(value: unknown): number {
  return (Array.isArray(value) ? 0 : 1) + nested(value);
}

/** The elements of every list in `value`, `value` itself included when it is one. */
function nested(value: unknown): number {
  if (Array.isArray(value)) return value.length + value.reduce((n: number, x) => n + nested(x), 0);
  if (value && typeof value === 'object') return Object.values(value).reduce((n: number, x) => n + nested(x), 0);
  return 0;
}
