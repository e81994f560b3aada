/**
 * Every error the API can answer with, as a coded constructor with its HTTP
 * status. Handlers throw these; the front end (or a shard) turns one into the
 * envelope `{"error":{"code":<status>,"message":<M>}}` (gaps.md §6). Anything
 * thrown that is not an ApiError is a bug and becomes a logged 500.
 */
export type ErrorMessage = string | { [key: string]: unknown };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorMessage,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body === 'string' ? body : JSON.stringify(body));
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;

const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'AuthToken' };

/** `None` where the URL names no site, as existing clients expect. */
export const siteLabel = (site: number | string | null | undefined): string => (site == null ? 'None' : String(site));

export const Errors = {
  // 400
  validation: (message: ErrorMessage) => new ApiError(400, message),
  field: (field: string, text: string) => new ApiError(400, { [field]: [text] }),
  fieldPlain: (field: string, text: string) => new ApiError(400, { [field]: text }),
  jsonParse: (detail: string) => new ApiError(400, `JSON parse error - ${detail}`),
  // A user regex refused (gaps.md §6.2): `noun` is what the field calls it ('regex' in set queries, 'pattern' in constraints).
  regexRefused: (field: string, noun: 'regex' | 'pattern', reason: 'invalid' | 'not-linear' | 'too-long', pattern: string, max: number) => {
    const Noun = noun === 'regex' ? 'Regex' : 'Pattern';
    const text = reason === 'invalid' ? `Invalid ${noun}: '${pattern}'`
      : reason === 'too-long' ? `${Noun} too long: ${pattern.length} characters (at most ${max})`
        : `${Noun} cannot run in linear time: '${pattern}' `
          + '(backreferences, lookahead, lookbehind and large counted repeats are not supported)';
    return new ApiError(400, { [field]: text });
  },
  expectedDict: (type: string) => new ApiError(400, { non_field_errors: [`Invalid data. Expected a dictionary, but got ${type}.`] }),
  expectedList: (type: string) => new ApiError(400, { non_field_errors: [`Expected a list of items but got type "${type}".`] }),
  siteMissing: (id: unknown) => new ApiError(400, `Site with id number ${id} does not exist`),
  siteMismatch: (field: 'site_id' | 'site', body: unknown, url: number) =>
    new ApiError(400, { [field]: `Site in body (${body}) does not match site in URL (${url}).` }),
  multipleMatched: (plural: string, keyField: string, key: string) =>
    new ApiError(400, `Multiple ${plural} matched ${keyField}='${key}'. Use a site-specific endpoint or lookup by ID.`),
  bulkAcrossSites: () => new ApiError(400, { non_field_errors: ['A bulk request must keep to one site: send one request per site, or use /api/sites/<site_id>/<collection>/.'] }),
  invalidEmailHeader: () => new ApiError(400, 'Username must contain a valid email address'),

  // 401
  notAuthenticated: () => new ApiError(401, 'Authentication credentials were not provided.', WWW_AUTHENTICATE),
  authFailed: (message: ErrorMessage, status = 401) =>
    new ApiError(status, message, status === 401 ? WWW_AUTHENTICATE : {}),

  // 403
  forbidden: () => new ApiError(403, 'You do not have permission to perform this action.'),
  notYourSecret: () => new ApiError(403, "Can't access secret_key of user that isn't you."),

  // 404
  endpointNotFound: () => new ApiError(404, 'Endpoint not found.'),
  noSuch: (model: string, site: number | string | null | undefined, key: string | number | null) =>
    new ApiError(404, `No such ${model} found at (site_id, id) = (${siteLabel(site)}, ${key === null ? 'None' : key})`),

  noCircuitAt: (site: number | string | null | undefined, key: string) =>
    new ApiError(404, `No Circuit found at Interface (site_id, id) = (${siteLabel(site)}, ${key})`),

  // 405 / 406 / 409 / 413 / 415
  methodNotAllowed: (method: string, allow: string) => new ApiError(405, `Method "${method}" not allowed.`, { Allow: allow }),
  notAcceptable: () => new ApiError(406, 'Could not satisfy the request Accept header.'),
  conflict: (message: string) => new ApiError(409, message),
  protectedReference: (target: string, referrer: string) =>
    new ApiError(409, `Cannot delete some instances of model '${target}' because they are referenced through a protected foreign key: '${referrer}'`),
  bodyTooLarge: () => new ApiError(413, 'Request body too large.'),
  unsupportedMediaType: (type: string) => new ApiError(415, `Unsupported media type "${type}" in request.`),

  // 500 / 503
  internal: () => new ApiError(500, 'Internal server error.'),
  unavailable: () => new ApiError(503, 'Service temporarily unavailable; retry the request.'),
} as const;

/** The error envelope, compact JSON, keys in the documented order. */
export function errorEnvelope(err: ApiError): string {
  return JSON.stringify({ error: { code: err.status, message: err.body } });
}

/** Python-style type names used in messages (`got list`, `<type 'dict'>`). */
export function pyType(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  switch (typeof v) {
    case 'string': return 'str';
    case 'boolean': return 'bool';
    case 'number': return Number.isInteger(v) ? 'int' : 'float';
    case 'object': return 'dict';
    default: return typeof v;
  }
}
