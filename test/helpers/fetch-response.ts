/**
 * A fetch read whole, as the test servers' clients and the bench harness
 * want it. No `__dirname` or test-only import here: bench/ compiles this file
 * and runs it as an ES module.
 */
export interface Response {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function fetchResponse(url: string, init: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}
