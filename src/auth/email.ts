/** The email rule of docs/api.md §3.5 (a dot-atom local part; `localhost` or a dotted domain). */
const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const LAST_LABEL = /^[A-Za-z0-9-]{2,63}$/;

/**
 * The longest address a new user may have (RFC 5321's 254: a 256-octet path less its angle brackets). Longer is
 * refused before the rule runs, so a 70,000-character header never becomes a user (users made earlier stay usable).
 */
export const MAX_EMAIL_LENGTH = 254;

export function isValidEmail(s: string): boolean {
  const at = s.lastIndexOf('@');
  if (at <= 0 || at === s.length - 1) return false;
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  if (!LOCAL.test(local)) return false;
  if (domain === 'localhost') return true;
  const labels = domain.split('.');
  if (labels.length < 2) return false;
  const last = labels[labels.length - 1];
  if (!LAST_LABEL.test(last) || last.endsWith('-')) return false;
  return labels.slice(0, -1).every((l) => LABEL.test(l));
}
