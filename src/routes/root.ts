/**
 * The routes at the API's root (docs/api.md §2–3): the index of
 * collections, token authentication and token verification. They run on the
 * main thread, which owns users and authentication.
 */
import type { MainCall, Route } from './route.js';

/** authenticate and verify_token answer bare at version 1.0, else in the `status`/`data` envelope (docs/api.md §2). */
function versioned(call: MainCall, payload: string): string {
  return call.version === '1.0' ? payload : `{"status":"ok","data":${payload}}`;
}

export const ROOT_ROUTES: Route[] = [
  {
    shape: 'root',
    segment: '',
    methods: {
      GET: {
        summary: 'Index: each collection and its absolute URL',
        permission: 'public',
        query: [],
        response: { status: 200, shape: 'json', help: 'Collection name → URL.' },
        main: (call) => ({ status: 200, body: JSON.stringify(call.index()) }),
      },
    },
  },
  {
    shape: 'root',
    segment: 'authenticate',
    publicPath: true,
    methods: {
      POST: {
        summary: 'Exchange email and secret_key for an auth_token',
        permission: 'public',
        query: [],
        body: 'credentials',
        response: { status: 200, shape: 'json', help: '{"auth_token": "…"}, enveloped at versions other than 1.0.' },
        main: (call) => ({ status: 200, body: versioned(call, JSON.stringify(call.auth.login(call.body))) }),
      },
    },
  },
  {
    shape: 'root',
    segment: 'verify_token',
    tokenOnly: true,
    methods: {
      POST: {
        summary: 'Check the credentials sent (an AuthToken header)',
        permission: 'read',
        query: [],
        response: { status: 200, shape: 'json', help: 'true, enveloped at versions other than 1.0.' },
        main: (call) => ({ status: 200, body: versioned(call, 'true') }),
      },
    },
  },
];
