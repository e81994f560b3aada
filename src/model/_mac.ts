/**
 * MAC addresses as interfaces take them (docs/api.md §15.2): a 48-bit integer
 * held as a number (2^48 fits a double exactly), read from a JSON integer, a
 * decimal digit string, or hex text with one separator style, and written as
 * upper-case colon-separated pairs.
 */

export const MAC_MAX = 2 ** 48 - 1;

/** Each accepted hex spelling: group count, digits per group, separators. */
const HEX_FORMS: { groups: number; min: number; max: number; seps: string }[] = [
  { groups: 6, min: 1, max: 2, seps: ':-' },
  { groups: 3, min: 1, max: 4, seps: ':-.' },
  { groups: 2, min: 5, max: 6, seps: ':-' },
];

const HEX = /^[0-9a-fA-F]+$/;

function fromGroups(groups: string[], digitsPerGroup: number): number {
  let v = 0;
  for (const g of groups) v = v * 16 ** digitsPerGroup + parseInt(g, 16);
  return v;
}

/** The MAC a value denotes, or null when it is not one. */
export function parseMac(raw: unknown): number | null {
  if (typeof raw === 'number') return Number.isSafeInteger(raw) && raw >= 0 && raw <= MAC_MAX ? raw : null;
  if (typeof raw !== 'string') return null;
  const s = raw.trim();
  if (/^\d+$/.test(s)) {
    // All digits is always decimal, whatever its length.
    const n = Number(s);
    return Number.isSafeInteger(n) && n <= MAC_MAX ? n : null;
  }
  if (s.length === 12 && HEX.test(s)) return parseInt(s, 16); // has a letter: the digits-only case is above
  const sep = [':', '-', '.'].find((c) => s.includes(c));
  if (!sep) return null;
  const groups = s.split(sep);
  for (const form of HEX_FORMS) {
    if (groups.length !== form.groups || !form.seps.includes(sep)) continue;
    if (groups.every((g) => g.length >= form.min && g.length <= form.max && HEX.test(g))) {
      return fromGroups(groups, form.groups === 6 ? 2 : form.groups === 3 ? 4 : 6);
    }
  }
  return null;
}

/** `00:1C:73:2A:60:62`. */
export function formatMac(mac: number): string {
  const hex = mac.toString(16).toUpperCase().padStart(12, '0');
  return hex.match(/../g)!.join(':');
}
