/**
 * Route templates (src/http/route-template.ts): one label per endpoint for
 * metrics and the access log, whatever site, id or key a request names.
 */
import { describe, expect, test } from 'vitest';
import { routeTemplate } from '../../src/http/route-template.js';
import { Router } from '../../src/http/router.js';
import { ROUTES } from '../../src/routes/table.js';

const router = new Router(ROUTES);
const template = (path: string) => routeTemplate(router.match(path));

describe('routeTemplate', () => {
  test.each([
    ['/api/', '/api/'],
    ['/api/authenticate/', '/api/authenticate/'],
    ['/api/verify_token/', '/api/verify_token/'],
    ['/api/sites/', '/api/sites/'],
    ['/api/sites/12/', '/api/sites/{key}/'],
    ['/api/sites/12/devices/', '/api/sites/{site}/devices/'],
    ['/api/sites/12/devices/query/', '/api/sites/{site}/devices/query/'],
    ['/api/sites/12/devices/lax-r1/', '/api/sites/{site}/devices/{key}/'],
    ['/api/devices/7/interfaces/', '/api/devices/{key}/interfaces/'],
    ['/api/sites/1/networks/10.0.0.0/8/next_address/', '/api/sites/{site}/networks/{key}/next_address/'],
    ['/api/networks/2001:db8::/32/next_network/', '/api/networks/{key}/next_network/'],
    ['/api/sites/3/networks/10.0.0.0/8/', '/api/sites/{site}/networks/{key}/'],
    ['/api/users/0/rotate_secret_key/', '/api/users/{key}/rotate_secret_key/'],
  ])('%s is labelled %s', (path, expected) => {
    expect(template(path)).toBe(expected);
  });

  test('a path no route matches is labelled unmatched, not by itself', () => {
    expect(template('/api/nothing-here/')).toBe('unmatched');
    expect(template('/wp-admin/login.php')).toBe('unmatched');
  });

  test('two requests for different objects of one endpoint share its template', () => {
    expect(template('/api/sites/1/devices/a/')).toBe(template('/api/sites/99/devices/b/'));
  });
});
