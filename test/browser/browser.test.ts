/**
 * /docs/ and the browsable /api/ in a real browser (Chromium through
 * playwright-core) against a real server: one browser and one server for the
 * file. Screenshots of each page go to test-artifacts/; UPDATE_DOCS_SCREENSHOT=1
 * also rewrites the README's docs/browse.png.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { chromiumAvailable, launch, screenshot } from '../helpers/browser.js';
import { EXAMPLE_NETWORKS } from '../helpers/ipam-example.js';
import { TestServer } from '../helpers/server.js';

const available = chromiumAvailable();
let s: TestServer;
let browser: Browser;
let secretKey: string;
/** Requests the pages made to anywhere but the server under test: the docs and the view must work offline. */
const elsewhere: string[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  if (!available) return;
  // The access log says which requests reached the server (the browser's cache answers the others).
  [s, browser] = await Promise.all([TestServer.start({ shards: 1, env: { LOG_LEVEL: 'info' } }), launch()]);
  secretKey = (await s.get('/api/users/0/?with_secret_key=true')).json.secret_key;
  expect((await s.post('/api/sites/', { name: 'lab' })).status).toBe(201);
  expect((await s.post('/api/sites/1/devices/', { hostname: 'r1' })).status).toBe(201);
  expect((await s.post('/api/sites/1/networks/', { cidr: '10.0.0.0/24' })).status).toBe(201);
  expect((await s.post('/api/sites/1/interfaces/', { device: 1, name: 'eth0', addresses: ['10.0.0.1/32'] })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

/** The requests the server has answered since `from` (an index into its output), from its access log. */
function served(from: number): { path: string; status: number; user?: string }[] {
  return s.output
    .slice(from)
    .join('')
    .split('\n')
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line));
}

/** Signs the page's tab in through the view's form. */
async function signIn(page: Page): Promise<void> {
  await page.goto(`${s.base}/api/`);
  await page.fill('#signin-email', 'admin@localhost');
  await page.fill('#signin-key', secretKey);
  await page.click('form.signin button');
  await page.locator('text=signed in as admin@localhost').waitFor();
}

/** The operations of the served document, by tag, in the document's order. */
async function operationsByTag(): Promise<Map<string, string[]>> {
  const doc = (await s.get('/docs/openapi.json', { as: null })).json;
  const byTag = new Map<string, string[]>();
  for (const ops of Object.values(doc.paths as Record<string, Record<string, { tags: string[]; operationId: string }>>))
    for (const op of Object.values(ops)) byTag.set(op.tags[0], [...(byTag.get(op.tags[0]) ?? []), op.operationId]);
  return byTag;
}

async function newPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(s.base) || url.startsWith('data:')) return route.continue();
    elsewhere.push(url);
    return route.abort();
  });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  // Fails a step well before the test's own timeout, so the report names the step.
  page.setDefaultTimeout(20_000);
  return page;
}

describe.skipIf(!available)('docs in a browser', { timeout: 150_000 }, () => {
  test('docs page runs a request with the proxy header and with an AuthToken, and shows the answers', async () => {
    const page = await newPage();
    // Swagger UI's bundle is large for a loaded test machine: give its first render time.
    page.setDefaultTimeout(60_000);
    await page.goto(`${s.base}/docs/#/sites/get_sites_list`);
    await page.locator('#operations-sites-get_sites_list').waitFor();
    page.setDefaultTimeout(20_000);
    // The proxy header scheme, then the token scheme, each through Swagger UI's Authorize dialog.
    const token = (await s.post('/api/authenticate/', { email: 'admin@localhost', secret_key: secretKey }, { as: null })).json.auth_token;
    for (const [scheme, value] of [
      ['proxyHeader', 'admin@localhost'],
      ['authToken', `AuthToken admin@localhost:${token}`],
    ]) {
      await page.locator('button.authorize').first().click();
      const dialog = page.locator('.modal-ux');
      const logout = dialog.locator('button', { hasText: 'Logout' });
      while ((await logout.count()) > 0) await logout.first().click();
      const box = dialog.locator('.auth-container').filter({ hasText: scheme });
      await box.locator('input').fill(value);
      await box.locator('button', { hasText: 'Authorize' }).click();
      await box.locator('button', { hasText: 'Logout' }).waitFor();
      await dialog.locator('button.btn-done').first().click();
      const op = page.locator('#operations-sites-get_sites_list');
      if ((await op.locator('button.execute').count()) === 0) await op.locator('.opblock-summary').click();
      await op.locator('button.execute').click();
      const live = op.locator('.live-responses-table');
      await expect.poll(() => live.locator('tr.response .response-col_status').first().textContent(), { timeout: 10_000 }).toContain('200');
      await expect.poll(() => live.locator('tr.response .response-col_description').first().textContent()).toContain('"name": "lab"');
      // The request as Swagger UI sent it carries this scheme's header.
      const header = scheme === 'proxyHeader' ? 'x-service-email: admin@localhost' : 'authorization: authtoken admin@localhost:';
      await expect.poll(async () => (await op.locator('.curl-command').first().textContent())?.toLowerCase()).toContain(header);
      await screenshot(page, `docs-try-it-${scheme}`);
    }
    expect(elsewhere).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!available)('every operation in the docs', { timeout: 300_000 }, () => {
  test('docs renders every tag and every operation of the document, tag by tag', async () => {
    const byTag = await operationsByTag();
    const page = await newPage();
    page.setDefaultTimeout(60_000);
    const consoleErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    await page.goto(`${s.base}/docs/`);
    await page.locator('.opblock-tag').first().waitFor();
    page.setDefaultTimeout(20_000);
    // Every tag is listed, closed: the page shows what the document holds before anything is opened.
    expect(await page.locator('.opblock-tag').evaluateAll((els) => els.map((e) => e.getAttribute('data-tag')))).toEqual([...byTag.keys()]);
    for (const [tag, ids] of byTag) {
      const heading = page.locator(`#operations-tag-${tag}`);
      if ((await heading.getAttribute('data-is-open')) !== 'true') await heading.click();
      const section = page.locator('.opblock-tag-section', { has: heading });
      await expect.poll(() => section.locator('.opblock').count(), { message: tag }).toBe(ids.length);
      const shown = await section.locator('.opblock').evaluateAll((els) => els.map((e) => e.id));
      expect(shown.sort(), tag).toEqual(ids.map((id) => `operations-${tag}-${id}`).sort());
      // Each one opens: its parameters, body and responses render.
      const last = section.locator('.opblock').last();
      await last.locator('.opblock-summary').click();
      await last.locator('.responses-wrapper').waitFor();
      await heading.click();
    }
    expect(await page.locator('.fallback').count()).toBe(0);
    expect(pageErrors).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await screenshot(page, 'docs-tags');
    await page.close();
  });

  test('docs deep link opens an operation far down the document', async () => {
    const page = await newPage();
    page.setDefaultTimeout(60_000);
    await page.goto(`${s.base}/docs/#/interfaces/get_interfaces_detail_route_siblings_in_site`);
    await page.locator('#operations-interfaces-get_interfaces_detail_route_siblings_in_site .opblock-body').waitFor();
    await page.close();
  });
});

describe.skipIf(!available)('browsable API in a browser', { timeout: 60_000 }, () => {
  let page: Page;

  test('browsable view signs in and browses from the index to a device and along its links', async () => {
    page = await newPage();
    await page.goto(`${s.base}/api/sites/`, { waitUntil: 'load' });
    // No credentials yet: the 401 is shown readably with the sign-in form.
    await expect.poll(() => page.locator('.error').textContent()).toContain('Error 401');
    await screenshot(page, 'browse-401');
    await page.fill('#signin-email', 'admin@localhost');
    await page.fill('#signin-key', secretKey);
    await page.click('form.signin button');
    await page.locator('text=signed in as admin@localhost').waitFor();
    await page.click('header a[href="/api/"]');
    await page.locator('dl.object a[href="/api/sites/"]').click();
    await page.locator('table.objects a[href="/api/sites/1/"]').first().click();
    await page.locator('.related a[href="/api/sites/1/devices/"]').click();
    await page.locator('table.objects a', { hasText: 'r1' }).first().click();
    await page.locator('h1', { hasText: 'GET /api/devices/r1/' }).waitFor();
    await screenshot(page, 'browse-device');
    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') {
      await screenshot(page, 'browse', resolve(__dirname, '../../docs/browse.png'));
    }
    await page.locator('.related a[href="/api/devices/r1/interfaces/"]').click();
    await page.locator('table.objects a', { hasText: '10.0.0.1/32' }).first().click();
    await page.locator('h1', { hasText: 'GET /api/networks/10.0.0.1/32/' }).waitFor();
    expect(await page.locator('main > dl.object').textContent()).toContain('10.0.0.0/24');
    await page.locator('main > dl.object a', { hasText: '10.0.0.0/24' }).first().click();
    await page.locator('h1', { hasText: 'GET /api/networks/10.0.0.0/24/' }).waitFor();
    await screenshot(page, 'browse-network');
    // Back goes back through the pages visited, still signed in.
    await page.goBack();
    await page.locator('h1', { hasText: 'GET /api/networks/10.0.0.1/32/' }).waitFor();
  });

  test('browsable view creates an object with its form and lists it', async () => {
    await page.goto(`${s.base}/api/sites/1/devices/`);
    await page.locator('h1', { hasText: 'GET /api/sites/1/devices/' }).waitFor();
    await page.fill('#body-post', '{"hostname": "r2"}');
    await page.click('form.write-post button');
    await page.locator('.notice', { hasText: 'POST /api/sites/1/devices/: 201' }).waitFor();
    expect(await page.locator('table.objects').textContent()).toContain('r2');
    expect((await s.get('/api/devices/r2/')).status).toBe(200);
    await screenshot(page, 'browse-created');
  });

  test('browsable view shows a validation error by field', async () => {
    await page.fill('#body-post', '{}');
    await page.click('form.write-post button');
    const error = page.locator('form.write-post .error');
    await error.waitFor();
    expect(await error.textContent()).toContain('Error 400');
    expect(await error.textContent()).toContain('hostname: This field is required.');
    await screenshot(page, 'browse-validation-error');
  });

  test('browsable view filters a list with the declared query parameters and pages through it', async () => {
    await page.locator('details.params summary').click();
    await page.fill('#q-limit', '1');
    await page.click('form.query button');
    await page.locator('.pager', { hasText: '1–1 of 2' }).waitFor();
    await page.locator('.pager a', { hasText: 'next' }).click();
    await page.locator('.pager', { hasText: '2–2 of 2' }).waitFor();
    await screenshot(page, 'browse-paged');
    expect(elsewhere).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!available)('browsable view forms and pages', { timeout: 90_000 }, () => {
  let page: Page;
  /** A site of its own: 120 networks, devices d1 and d2. */
  let site: number;
  /** Another, whose device `odd` holds a value that only looks like a URL. */
  let oddSite: number;

  beforeAll(async () => {
    if (!available) return;
    site = (await s.post('/api/sites/', { name: 'view' })).json.id;
    const networks = Array.from({ length: 120 }, (_, i) => ({ cidr: `10.50.${i}.0/24` }));
    expect((await s.post(`/api/sites/${site}/networks/`, networks)).status).toBe(201);
    expect((await s.post(`/api/sites/${site}/devices/`, [{ hostname: 'd1' }, { hostname: 'd2' }])).status).toBe(201);
    oddSite = (await s.post('/api/sites/', { name: 'odd' })).json.id;
    expect((await s.post(`/api/sites/${oddSite}/attributes/`, { name: 'url', resource_name: 'Device' })).status).toBe(201);
    expect((await s.post(`/api/sites/${oddSite}/devices/`, { hostname: 'odd', attributes: { url: 'http://[' } })).status).toBe(201);
    page = await newPage();
    await signIn(page);
  }, 60_000);

  afterAll(async () => {
    await page?.close();
  });

  test('browsable view shows an unpaged list of 120 networks as its first page of 50 with the pager', async () => {
    await page.goto(`${s.base}/api/sites/${site}/networks/`);
    await page.locator('.pager', { hasText: '1–50 of 120 (50 a page)' }).waitFor();
    expect(await page.locator('table.objects tbody tr').count()).toBe(50);
    await page.locator('.pager a', { hasText: 'next' }).click();
    await page.locator('.pager', { hasText: '51–100 of 120' }).waitFor();
    expect(await page.locator('table.objects tbody tr').count()).toBe(50);
    expect(page.url()).toContain('limit=50&offset=50');
  });

  test('browsable view loads a page once, with its token, and the OpenAPI document once across three pages', async () => {
    // Routing would turn the browser's cache off: this page is left unrouted.
    const own = await browser.newPage();
    own.on('pageerror', (e) => pageErrors.push(String(e)));
    await own.goto(`${s.base}/api/`);
    await own.fill('#signin-email', 'admin@localhost');
    await own.fill('#signin-key', secretKey);
    await own.click('form.signin button');
    await own.locator('text=signed in as admin@localhost').waitFor();
    const from = s.output.length;
    for (const path of [`/api/sites/${site}/`, `/api/sites/${site}/devices/`, '/api/devices/d1/']) {
      await own.goto(`${s.base}${path}`);
      await own.locator('h1', { hasText: `200 GET ${path}` }).waitFor();
    }
    // The access log is written asynchronously: the last read's line may follow the page that showed it.
    const deadline = Date.now() + 5_000;
    while (served(from).filter((r) => r.path === '/api/devices/d1/').length < 2 && Date.now() < deadline)
      await new Promise((ok) => setTimeout(ok, 20));
    const log = served(from);
    expect(log.filter((r) => r.path === '/docs/openapi.json')).toHaveLength(0);
    // Each page: the page itself (not run without credentials, so no 401) and one read of its data, signed in.
    expect(log.filter((r) => r.status === 401)).toEqual([]);
    for (const path of [`/api/sites/${site}/`, `/api/sites/${site}/devices/`, '/api/devices/d1/']) {
      expect(
        log.filter((r) => r.path === path).map((r) => [r.status, r.user ?? null]),
        path,
      ).toEqual([
        [200, null],
        [200, 'admin@localhost'],
      ]);
    }
    await own.close();
  });

  test('browsable view fetches the OpenAPI document once for a new tab', async () => {
    const own = await browser.newContext().then((c) => c.newPage());
    const from = s.output.length;
    for (const path of ['/api/', '/api/sites/', '/api/devices/']) {
      await own.goto(`${s.base}${path}`);
      await own.locator('main h1 code.status').waitFor();
    }
    expect(served(from).filter((r) => r.path === '/docs/openapi.json')).toHaveLength(1);
    await own.context().close();
  });

  test('browsable view starts a POST on a device list with a body that creates a device', async () => {
    await page.goto(`${s.base}/api/sites/${site}/devices/`);
    await page.locator('form.write-post h3', { hasText: 'Create a device' }).waitFor();
    const start = JSON.parse(await page.inputValue('#body-post'));
    expect(start).toEqual({ site_id: site, hostname: 'r1', attributes: {} });
    await page.click('form.write-post button');
    await page.locator('.notice', { hasText: `POST /api/sites/${site}/devices/: 201` }).waitFor();
    expect((await s.get(`/api/sites/${site}/devices/r1/`)).status).toBe(200);
    // The next one counts past what the page shows.
    expect(JSON.parse(await page.inputValue('#body-post')).hostname).toBe('r2');
  });

  test('browsable view fills bulk PUT and PATCH of a paged list with its objects, and PUT succeeds', async () => {
    await page.goto(`${s.base}/api/sites/${site}/devices/?limit=2`);
    await page.locator('.pager', { hasText: '1–2 of ' }).waitFor();
    for (const id of ['#body-put', '#body-patch']) {
      const body = JSON.parse(await page.inputValue(id));
      expect(Array.isArray(body), id).toBe(true);
      expect(body.map((d: { hostname: string }) => d.hostname)).toEqual(['d1', 'd2']);
      expect(Object.keys(body[0]).sort()).toEqual(['attributes', 'hostname', 'id', 'site_id']);
    }
    await page.click('form.write-put button');
    await page.locator('.notice', { hasText: `PUT /api/sites/${site}/devices/: 200` }).waitFor();
    expect(await page.locator('.error').count()).toBe(0);
  });

  test('browsable view renames a device with PATCH and ends on its new URL', async () => {
    await page.goto(`${s.base}/api/devices/d1/`);
    await page.locator('h1', { hasText: 'GET /api/devices/d1/' }).waitFor();
    await page.fill('#body-patch', '{"hostname": "d1-renamed"}');
    await page.click('form.write-patch button');
    await page.locator('h1', { hasText: '200 GET /api/devices/d1-renamed/' }).waitFor();
    await page.locator('.notice', { hasText: 'PATCH /api/devices/d1/: 200' }).waitFor();
    expect(await page.locator('.error').count()).toBe(0);
    expect(new URL(page.url()).pathname).toBe('/api/devices/d1-renamed/');
  });

  test('browsable view asks before DELETE, and deletes only once accepted', async () => {
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: 'gone' })).status).toBe(201);
    await page.goto(`${s.base}/api/devices/gone/`);
    await page.locator('h1', { hasText: 'GET /api/devices/gone/' }).waitFor();
    const asked: string[] = [];
    page.once('dialog', (d) => {
      asked.push(`${d.type()}: ${d.message()}`);
      void d.dismiss();
    });
    await page.click('form.write-delete button');
    await expect.poll(() => asked).toEqual(['confirm: Delete a device: /api/devices/gone/?']);
    expect((await s.get('/api/devices/gone/')).status).toBe(200);
    page.once('dialog', (d) => void d.accept());
    await page.click('form.write-delete button');
    await page.locator('h1', { hasText: '200 GET /api/devices/' }).waitFor();
    expect((await s.get('/api/devices/gone/')).status).toBe(404);
  });

  test('browsable view replaces the success banner by the error of a broken body', async () => {
    await page.goto(`${s.base}/api/sites/${site}/devices/`);
    await page.fill('#body-post', '{"hostname": "d9"}');
    await page.click('form.write-post button');
    await page.locator('.notice', { hasText: '201' }).waitFor();
    await page.fill('#body-post', '{"hostname": ');
    await page.click('form.write-post button');
    await page.locator('form.write-post .error', { hasText: 'Error 400' }).waitFor();
    expect(await page.locator('.notice').count()).toBe(0);
  });

  test('browsable view speaks of one object in the singular and of an interface with an', async () => {
    await page.goto(`${s.base}/api/sites/${site}/devices/?hostname=d2`);
    await page.locator('.pager', { hasText: '1–1 of 1' }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('1 objects');
    await page.goto(`${s.base}/api/sites/${site}/attributes/`);
    await page.locator('form.write-post h3', { hasText: 'Create an attribute' }).waitFor();
    expect((await s.post(`/api/sites/${site}/interfaces/`, { device: 'd2', name: 'eth0' })).status).toBe(201);
    await page.goto(`${s.base}/api/interfaces/d2:eth0/`);
    await page.locator('.summary', { hasText: 'Get an interface' }).waitFor();
    await page.goto(`${s.base}/api/sites/${site}/networks/10.50.0.0/24/next_address/`);
    await page.locator('.count', { hasText: /^1 item$/ }).waitFor();
  });

  test('browsable view shows a device whose attribute is http://[ with its forms and links', async () => {
    await page.goto(`${s.base}/api/devices/odd/`);
    await page.locator('form.write-patch').waitFor();
    expect(await page.locator('main > dl.object').textContent()).toContain('http://[');
    await page.locator('.related a[href="/api/devices/odd/interfaces/"]').waitFor();
    await page.goto(`${s.base}/api/sites/${oddSite}/devices/`);
    await page.locator('table.objects a', { hasText: 'odd' }).first().waitFor();
  });

  test('browsable view downloads a list as CSV', async () => {
    await page.goto(`${s.base}/api/sites/${site}/networks/?limit=10`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('button.csv')]);
    expect(download.suggestedFilename()).toBe('networks.csv');
    const text = readFileSync((await download.path())!, 'utf8');
    const lines = text.split('\r\n');
    expect(lines[0]).toBe('id,cidr,parent_id,parent,site_id,is_ip,ip_version,network_address,prefix_length,state,attributes');
    // The whole list, not the page shown: 120 networks, the header, and the empty string after the last CRLF.
    expect(lines).toHaveLength(122);
    expect(pageErrors).toEqual([]);
    expect(elsewhere).toEqual([]);
  });
});
describe.skipIf(!available)('the view and the docs under their security policy', { timeout: 120_000 }, () => {
  /** A page that records Content-Security-Policy violations, signed in by the proxy header. */
  async function watchedPage(): Promise<{ page: Page; violations: string[] }> {
    const page = await newPage();
    const violations: string[] = [];
    await page.exposeFunction('__cspViolation', (what: string) => violations.push(what));
    // As text: this file is compiled without the DOM's types.
    await page.addInitScript({
      content:
        "document.addEventListener('securitypolicyviolation', (e) => window.__cspViolation(e.violatedDirective + ' ' + e.blockedURI));",
    });
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/.test(m.text())) violations.push(m.text());
    });
    await page.setExtraHTTPHeaders({ 'X-Service-Email': 'admin@localhost' });
    return { page, violations };
  }

  test('HTML pages carry a Content-Security-Policy and X-Frame-Options; JSON answers do not need them', async () => {
    for (const path of ['/api/sites/', '/api/sites/?format=api', '/docs/']) {
      const r = await fetch(`${s.base}${path}`, { headers: { Accept: 'text/html', 'X-Service-Email': 'admin@localhost' } });
      expect(r.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(r.headers.get('content-security-policy'), path).toMatch(/default-src 'none'; script-src 'self';.*frame-ancestors 'none'/);
      expect(r.headers.get('x-frame-options'), path).toBe('DENY');
    }
    const json = await s.get('/api/sites/');
    expect(json.headers.get('content-security-policy')).toBeNull();
  });

  test('the docs page runs a request under its policy', async () => {
    const { page, violations } = await watchedPage();
    page.setDefaultTimeout(60_000);
    await page.goto(`${s.base}/docs/#/sites/get_sites_list`);
    const op = page.locator('#operations-sites-get_sites_list');
    await op.waitFor();
    page.setDefaultTimeout(20_000);
    if ((await op.locator('button.execute').count()) === 0) await op.locator('.opblock-summary').click();
    await op.locator('button.execute').click();
    await expect.poll(() => op.locator('.live-responses-table tr.response .response-col_status').first().textContent()).toContain('200');
    expect(violations).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  test('a stored value that looks like a URL but is none (`http://[`) is shown as text on every page that holds it', async () => {
    const made = [
      await s.post('/api/sites/1/attributes/', { name: 'homepage', resource_name: 'Device' }),
      await s.post('/api/sites/1/attributes/', { name: 'docs', resource_name: 'Interface', default: 'https://' }),
      await s.patch('/api/sites/1/devices/r1/', { attributes: { homepage: 'http://[' } }),
      await s.post('/api/sites/1/interfaces/', { device: 1, name: 'eth%zz', description: 'http://[', attributes: { docs: 'http://[x' } }),
    ];
    for (const r of made) expect(r.status, r.text).toBeLessThan(300);
    const change = (await s.get('/api/changes/?limit=1')).json.results[0].id;
    const { page, violations } = await watchedPage();
    for (const path of [
      '/api/sites/1/devices/r1/',
      '/api/devices/',
      '/api/sites/1/devices/',
      '/api/values/',
      '/api/sites/1/values/',
      '/api/sites/1/attributes/',
      '/api/interfaces/',
      '/api/sites/1/devices/r1/interfaces/',
      '/api/sites/1/interfaces/r1:eth%zz/',
      '/api/changes/',
      `/api/changes/${change}/`,
      '/api/sites/1/changes/',
      '/api/devices/%zz/',
    ]) {
      await page.goto(`${s.base}${path}`);
      // Rendered: the breadcrumbs are the view's own, not the raw JSON the page starts with.
      await page.locator('main nav.crumbs').waitFor();
      expect(await page.locator('main').textContent(), path).not.toContain('Failed to construct');
    }
    await page.goto(`${s.base}/api/sites/1/devices/r1/`);
    expect(await page.locator('main > dl.object').textContent()).toContain('http://[');
    await screenshot(page, 'browse-hostile-value');
    expect(violations).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!available)('networks in the browsable view', { timeout: 60_000 }, () => {
  let page: Page;
  let site: number;

  beforeAll(async () => {
    if (!available) return;
    site = (await s.post('/api/sites/', { name: 'ipam' })).json.id;
    const r = await s.post(
      `/api/sites/${site}/networks/`,
      EXAMPLE_NETWORKS.map((cidr) => ({ cidr })),
    );
    expect(r.status, r.text).toBe(201);
    page = await newPage();
    await page.goto(`${s.base}/api/sites/${site}/`);
    await page.fill('#signin-email', 'admin@localhost');
    await page.fill('#signin-key', secretKey);
    await page.click('form.signin button');
    await page.locator('text=signed in as admin@localhost').waitFor();
  });

  test('network page shows its utilization as a meter and a map of its children and free blocks', async () => {
    await page.goto(`${s.base}/api/sites/${site}/networks/10.0.0.0/16/`);
    const meter = page.locator('section.ipam meter');
    await meter.waitFor();
    const u = (await s.get(`/api/sites/${site}/networks/10.0.0.0/16/utilization/`)).json;
    expect(u.utilization).toBe(386 / 65536);
    expect(await meter.evaluate((m: { value: number }) => m.value)).toBe(u.utilization);
    expect(await meter.getAttribute('aria-label')).toBe('Utilization of 10.0.0.0/16');
    expect(await page.getByRole('meter', { name: 'Utilization of 10.0.0.0/16' }).count()).toBe(1);
    expect(await page.locator('section.ipam p.utilization').textContent()).toContain('386 of 65536 addresses used');
    const cells = page.locator('.blockmap a.block');
    const texts = await cells.allTextContents();
    expect(texts.slice(0, 5)).toEqual(['10.0.0.0/24', '10.0.1.0/25', '10.0.1.128/25', '10.0.2.0/32', '10.0.2.1/32']);
    expect(texts).toHaveLength(4 + 16);
    expect(await page.locator('.blockmap a.block.used').allTextContents()).toEqual([
      '10.0.0.0/24',
      '10.0.1.0/25',
      '10.0.2.1/32',
      '10.0.2.2/32',
    ]);
    expect(await page.locator('.blockmap a.block.free').count()).toBe(16);
    await screenshot(page, 'browse-network-utilization');
    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') {
      await screenshot(page, 'network-utilization', resolve(__dirname, '../../docs/network-utilization.png'));
    }
    // A free block leads to the free blocks of its length, a used one to its network.
    await page.locator('.blockmap a.block.free', { hasText: '10.0.1.128/25' }).click();
    await page.locator('h1', { hasText: 'available/?limit=50&prefix_length=25' }).waitFor();
    const free25 = (await s.get(`/api/sites/${site}/networks/10.0.0.0/16/available/?prefix_length=25&limit=1`)).json.count;
    expect(free25).toBe(508);
    await page.locator('.pager', { hasText: `1–50 of ${free25}` }).waitFor();
    expect((await page.locator('main > ul li').allTextContents()).slice(0, 3)).toEqual(['10.0.1.128/25', '10.0.2.128/25', '10.0.3.0/25']);
    await page.goBack();
    await page.locator('.blockmap a.block.used', { hasText: '10.0.0.0/24' }).click();
    await page.locator('h1', { hasText: '/networks/' }).waitFor();
    await expect.poll(() => page.locator('section.ipam p.utilization').textContent()).toContain('1 of 256 addresses used');
    expect(pageErrors).toEqual([]);
  });

  test('network list shows a utilization bar on each network row', async () => {
    await page.goto(`${s.base}/api/sites/${site}/networks/?include_ips=false`);
    await page.locator('table.objects th', { hasText: 'utilization' }).waitFor();
    const meters = page.locator('table.objects td.bar meter');
    await expect.poll(() => meters.count()).toBe(3);
    expect(await meters.evaluateAll((ms: { value: number }[]) => ms.map((m) => m.value))).toEqual([386 / 65536, 1 / 256, 0]);
    await screenshot(page, 'browse-network-list-utilization');
    expect(elsewhere).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
