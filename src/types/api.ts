/**
 * Pieces of an API answer that several layers build and carry between threads:
 * an error's message and the base of the links in a page. Types only.
 */

/** The `message` of the error envelope `{"error": {"code", "message"}}`: text, or field → messages. */
export type ErrorMessage = string | { [key: string]: unknown };

/** Where a request arrived, for the absolute links of a page's envelope (query/pagination.ts). */
export interface LinkBase {
  scheme: string;
  host: string;
  path: string;
}
