/**
 * /docs/ and the browsable /api/ in a real browser (Chromium through
 * playwright-core) against a real server: one browser and one server for the
 * file. Screenshots of each page go to test-artifacts/; UPDATE_DOCS_SCREENSHOT=1
 * also rewrites the README's docs/browse.png.
 */
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
  [s, browser] = await Promise.all([TestServer.start({ shards: 1 }), launch()]);
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
