// The browsable view of /api/ (served by src/http/browse.ts): renders the JSON the page carries, then talks
// JSON to the API itself. What an endpoint takes (query parameters, writes, bodies) is read from
// /docs/openapi.json, the document generated from the route table. Credentials: the sign-in token is kept in
// this tab (sessionStorage) and sent as `Authorization: AuthToken <email>:<token>`; there is no cookie.
(() => {
  const AUTH_KEY = 'netsot.auth';
  const main = document.getElementById('main');
  const authBar = document.getElementById('auth');
  const initial = JSON.parse(document.getElementById('initial').textContent);
  let auth = readAuth();
  let spec = null;
  let current = { path: initial.path, status: initial.status, text: initial.body };
  /** Items a page of a list shows when its URL names no page (src/http/browse.ts BROWSE_PAGE_ITEMS). */
  const PAGE_ITEMS = 50;

  /** Field name → the collection its value names (an id, or a natural key). */
  const FIELD_COLLECTION = {
    site: 'sites',
    site_id: 'sites',
    device: 'devices',
    device_id: 'devices',
    device_hostname: 'devices',
    hostname: 'devices',
    interface: 'interfaces',
    interface_id: 'interfaces',
    network: 'networks',
    network_id: 'networks',
    networks: 'networks',
    addresses: 'networks',
    address: 'networks',
    cidr: 'networks',
    circuit: 'circuits',
    circuit_id: 'circuits',
    protocol_type: 'protocol_types',
    protocol_type_id: 'protocol_types',
    protocol: 'protocols',
    protocol_id: 'protocols',
    attribute: 'attributes',
    attribute_id: 'attributes',
    user: 'users',
    user_id: 'users',
  };
  /** Fields naming an object of the collection being shown. */
  const OWN_FIELDS = new Set(['id', 'parent', 'parent_id', 'name_slug']);

  function readAuth() {
    try {
      return JSON.parse(sessionStorage.getItem(AUTH_KEY) || 'null');
    } catch {
      return null;
    }
  }

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'value') el.value = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Number.POSITIVE_INFINITY))
      if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
    return el;
  }

  const link = (path, text) => h('a', { href: path, 'data-nav': true }, text);

  function headers(extra) {
    const out = { Accept: 'application/json', ...extra };
    if (auth) out.Authorization = `AuthToken ${auth.email}:${auth.token}`;
    return out;
  }

  async function loadSpec() {
    if (!spec) {
      try {
        // The versioned URL the page names: the browser keeps it, so the document is fetched once, not per page.
        spec = await (await fetch(initial.spec || '/docs/openapi.json', { headers: { Accept: 'application/json' } })).json();
      } catch {
        spec = { paths: {} };
      }
    }
    return spec;
  }

  /** The document's path template for `path`, and its parameters; the most literal template wins. */
  function templateOf(path) {
    let best = null;
    for (const [tpl, ops] of Object.entries(spec.paths)) {
      const literal = tpl.replace(/\{\w+\}/g, '').length;
      const re = new RegExp(`^${tpl.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '(?<$1>.+?)')}$`);
      const m = re.exec(path);
      if (m && (!best || literal > best.literal)) best = { tpl, ops, literal, params: m.groups || {} };
    }
    return best;
  }

  /** The collection a path shows: `/api/sites/1/devices/…` → devices, `/api/sites/1/` → sites. */
  function collectionOf(match, path) {
    const ok = match?.ops.get?.responses?.['200']?.content?.['application/json']?.schema;
    const ref = ok?.$ref || ok?.oneOf?.[0]?.items?.$ref;
    if (ref) {
      const name = ref.split('/').pop();
      for (const [tpl, ops] of Object.entries(spec.paths)) {
        const m = /^\/api\/(\w+)\/\{id\}\/$/.exec(tpl);
        if (m && ops.get?.responses?.['200']?.content?.['application/json']?.schema?.$ref?.endsWith(`/${name}`)) return m[1];
      }
    }
    const parts = path.split('/').filter(Boolean);
    return parts[1] === 'sites' && parts.length > 3 ? parts[3] : parts[1];
  }

  /** `text` as a URL (against this origin), or null when it is none: values from the server are shown, never trusted to parse. */
  function urlOf(text, base) {
    try {
      return new URL(text, base);
    } catch {
      return null;
    }
  }

  /** A path segment decoded for display, or as it is when it does not decode (`%zz`). */
  function decoded(segment) {
    try {
      return decodeURIComponent(segment);
    } catch {
      return segment;
    }
  }

  const detailPath = (collection, key) => `/api/${collection}/${String(key)}/`;
  const modelCollection = (name) => `${name.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase()}s`;

  function renderValue(value, key, collection, owner) {
    if (value === null || value === undefined) return h('span', { class: 'null' }, 'null');
    if (typeof value === 'string' && /^https?:\/\//.test(value)) {
      // A stored value that only looks like a URL (`http://[`) is shown as the text it is.
      const url = urlOf(value);
      return url?.host === location.host ? link(url.pathname + url.search, value) : value;
    }
    const target = OWN_FIELDS.has(key)
      ? collection
      : key === 'resource_id' && owner?.resource_name
        ? modelCollection(owner.resource_name)
        : FIELD_COLLECTION[key.replace(/_[az]$/, '')];
    if (Array.isArray(value)) {
      if (value.every((v) => v === null || typeof v !== 'object')) {
        return h(
          'span',
          { class: 'list' },
          value.map((v, i) => [i ? ', ' : '', renderValue(v, key, collection, owner)]),
        );
      }
      return table(value, target || collection);
    }
    if (typeof value === 'object') return dl(value, target || collection);
    if (target && (typeof value === 'number' || typeof value === 'string') && value !== '')
      return link(detailPath(target, value), String(value));
    return h('span', { class: typeof value }, typeof value === 'string' ? value : JSON.stringify(value));
  }

  function dl(obj, collection) {
    return h(
      'dl',
      { class: 'object' },
      Object.entries(obj).map(([k, v]) => [h('dt', {}, k), h('dd', {}, renderValue(v, k, collection, obj))]),
    );
  }

  function table(items, collection) {
    if (items.length === 0) return h('p', { class: 'empty' }, 'No objects.');
    if (items.every((v) => v === null || typeof v !== 'object')) return valueList(items, collection);
    const cols = [];
    for (const item of items.slice(0, 50)) for (const k of Object.keys(item || {})) if (!cols.includes(k)) cols.push(k);
    return h(
      'table',
      { class: 'objects' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          cols.map((c) => h('th', {}, c)),
        ),
      ),
      h(
        'tbody',
        {},
        items.map((item) =>
          h(
            'tr',
            {},
            cols.map((c) => h('td', {}, c in item ? renderValue(item[c], c, collection, item) : '')),
          ),
        ),
      ),
    );
  }

  /** A list of plain values (a page of free blocks, next_address's answer), one per line. */
  function valueList(items, collection) {
    return h(
      'ul',
      {},
      items.map((v) => h('li', {}, renderValue(v, '', collection))),
    );
  }

  // ---- networks: utilization and the block map (issue 25) ----

  /** An IPv4 or IPv6 address as a BigInt, for ordering blocks by address. */
  function addressValue(address) {
    if (!address.includes(':')) return address.split('.').reduce((a, o) => (a << 8n) | BigInt(o), 0n);
    const [head, tail = ''] = address.split('::');
    const groups = (s) => (s ? s.split(':') : []);
    const left = groups(head);
    const right = address.includes('::') ? groups(tail) : [];
    const all = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
    return all.reduce((a, g) => (a << 16n) | BigInt(`0x${g}`), 0n);
  }

  const cidrParts = (cidr) => {
    const [address, len] = cidr.split('/');
    return { address, len: Number(len), at: addressValue(address), width: address.includes(':') ? 128 : 32 };
  };

  /** A meter of how full a network is: an accessible <meter> with the figures as its label. */
  function utilizationMeter(u, compact) {
    const pct = `${(u.utilization * 100).toFixed(u.utilization > 0 && u.utilization < 0.001 ? 4 : 1)} %`;
    const words = `${u.used} of ${u.size} addresses used (${pct}), ${u.children} networks directly under it, ${u.addresses} host addresses`;
    const meter = h(
      'meter',
      {
        class: 'utilization',
        min: 0,
        max: 1,
        low: 0.7,
        high: 0.9,
        optimum: 0,
        value: u.utilization,
        'aria-label': `Utilization of ${u.network}`,
        title: words,
      },
      pct,
    );
    return compact ? h('span', { class: 'bar' }, meter, h('small', {}, ` ${pct}`)) : h('p', { class: 'utilization' }, meter, ' ', words);
  }

  const fetchJson = async (url) => {
    const res = await fetch(url, { headers: headers() });
    if (!res.ok) throw new Error(`${url}: ${res.status}`);
    return res.json();
  };

  /** Blocks the map shows at most of each kind (children, free blocks). */
  const MAP_BLOCKS = 256;

  /**
   * A network's page: its utilization as a meter, and a map of the prefix: its children (used) and its free
   * blocks in address order, drawn to scale along a strip and as coloured cells sized by the log of their size,
   * each a link (a child to its page, a free block to a page of the free blocks of its length). Filled in once
   * the three reads come back.
   */
  function networkPicture(collection, parsed) {
    if (collection !== 'networks' || !parsed || typeof parsed.cidr !== 'string' || parsed.id === undefined) return null;
    const base = `/api/sites/${parsed.site_id}/networks/${parsed.id}/`;
    const section = h('section', { class: 'ipam', 'aria-busy': 'true' }, h('h2', {}, 'Utilization'));
    (async () => {
      const [u, children, free] = await Promise.all([
        fetchJson(`${base}utilization/`),
        fetchJson(`${base}children/?limit=${MAP_BLOCKS}`),
        fetchJson(`${base}available/?limit=${MAP_BLOCKS}`),
      ]);
      const cells = [
        ...children.results.map((c) => ({
          ...cidrParts(c.cidr),
          cidr: c.cidr,
          used: true,
          href: `/api/sites/${c.site_id}/networks/${c.id}/`,
        })),
        ...free.results.map((cidr) => ({ ...cidrParts(cidr), cidr, used: false })),
      ].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
      // Of two lists cut short, the map stops where the first one ends, so it shows a whole stretch of the prefix.
      const ends = [children, free]
        .filter((l) => l.count > l.results.length)
        .map((l) => cidrParts(l.results.at(-1).cidr ?? l.results.at(-1)).at);
      let until = null;
      for (const end of ends) if (until === null || end < until) until = end;
      const shown = until === null ? cells : cells.filter((c) => c.at <= until);
      const map = h(
        'div',
        { class: 'blockmap', role: 'list', 'aria-label': `Blocks of ${parsed.cidr}` },
        shown.map((c) =>
          h(
            'a',
            {
              class: `block ${c.used ? 'used' : 'free'}`,
              role: 'listitem',
              href: c.used ? c.href : `${base}available/?limit=50&prefix_length=${c.len}`,
              'data-nav': true,
              title: `${c.cidr}: ${c.used ? 'used' : 'free'}`,
              style: `flex-grow: ${c.width - c.len + 1}`,
            },
            c.cidr,
          ),
        ),
      );
      // The same blocks to scale along the prefix (the cells above them are the links).
      const whole = cidrParts(parsed.cidr);
      const size = 2 ** (whole.width - whole.len);
      const strip = h(
        'div',
        { class: 'strip', 'aria-hidden': 'true' },
        shown.map((c) =>
          h('span', {
            class: `block ${c.used ? 'used' : 'free'}`,
            style: `left: ${(Number(c.at - whole.at) / size) * 100}%; width: ${(2 ** (c.width - c.len) / size) * 100}%`,
          }),
        ),
      );
      const legend = h(
        'p',
        { class: 'legend' },
        h('span', { class: 'block used' }, 'used'),
        ' networks under it, ',
        h('span', { class: 'block free' }, 'free'),
        ` blocks (${free.count} in all)`,
        until === null ? '' : `; the map shows the first ${shown.length} blocks`,
      );
      section.append(utilizationMeter(u, false), strip, map, legend);
      section.removeAttribute('aria-busy');
    })().catch((err) => {
      section.append(errorBox('network', null, String(err)));
      section.removeAttribute('aria-busy');
    });
    return section;
  }

  /** A list of networks: a small utilization bar in a column of its own, filled in row by row. */
  function withNetworkBars(tableEl, items, collection) {
    if (collection !== 'networks' || !items.length || !items.every((n) => n && typeof n.cidr === 'string' && n.id !== undefined))
      return tableEl;
    tableEl.querySelector('thead tr').append(h('th', {}, 'utilization'));
    tableEl.querySelectorAll('tbody tr').forEach((row, i) => {
      const n = items[i];
      const cell = h('td', { class: 'bar' });
      row.append(cell);
      if (n.is_ip) return;
      fetchJson(`/api/sites/${n.site_id}/networks/${n.id}/utilization/`).then(
        (u) => cell.append(utilizationMeter(u, true)),
        () => cell.append(h('span', { class: 'null' }, '?')),
      );
    });
    return tableEl;
  }

  function errorBox(status, parsed, text) {
    const message = parsed?.error?.message ?? text;
    const body =
      message && typeof message === 'object'
        ? h(
            'ul',
            {},
            Object.entries(message).map(([field, msgs]) =>
              h('li', {}, h('b', {}, field), ': ', Array.isArray(msgs) ? msgs.join(' ') : JSON.stringify(msgs)),
            ),
          )
        : h('p', {}, String(message));
    return h('div', { class: 'error', role: 'alert' }, h('strong', {}, `Error ${status}`), body);
  }

  /** `dataPath`: the URL the page was read from, which names its limit and offset (see dataPathOf). */
  function pager(page, dataPath) {
    const here = new URL(dataPath, location.origin);
    const limit = Number(here.searchParams.get('limit') || page.results.length || 1);
    const offset = Number(here.searchParams.get('offset') || 0);
    const to = (u) => {
      const url = urlOf(u, location.origin);
      return url ? url.pathname + url.search : u;
    };
    return h(
      'nav',
      { class: 'pager' },
      page.previous ? link(to(page.previous), '‹ previous') : h('span', { class: 'off' }, '‹ previous'),
      ` ${page.results.length ? offset + 1 : 0}–${offset + page.results.length} of ${page.count} (${limit} a page) `,
      page.next ? link(to(page.next), 'next ›') : h('span', { class: 'off' }, 'next ›'),
    );
  }

  const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

  /** A GET that answers a list, which takes `limit` (a page) and comes as CSV too. */
  const isList = (op) => Boolean(op?.parameters?.some((p) => p.name === 'limit'));

  /**
   * The URL a page's data is read from: a list whose URL names no page is read as its first page of
   * PAGE_ITEMS, as the server renders it (browse.ts browseQuery), so a long list is never fetched whole.
   */
  function dataPathOf(path) {
    const url = new URL(path, location.origin);
    const limit = url.searchParams.get('limit');
    if (!isList(templateOf(url.pathname)?.ops.get) || (/^\+?\d+$/.test(limit ?? '') && Number(limit) > 0)) return path;
    url.searchParams.set('limit', String(PAGE_ITEMS));
    return url.pathname + url.search;
  }

  /** The whole list as CSV (its filters kept, no page), fetched with the tab's credentials and saved as a file. */
  function csvDownload(path, collection) {
    const url = new URL(path, location.origin);
    for (const p of ['limit', 'offset', 'format']) url.searchParams.delete(p);
    const result = h('span', { class: 'result' });
    const button = h(
      'button',
      {
        type: 'button',
        class: 'csv',
        onclick: async () => {
          result.replaceChildren('…');
          const res = await fetch(url.pathname + url.search, { headers: headers({ Accept: 'text/csv' }) }).catch((err) => err);
          if (!(res instanceof Response) || !res.ok) {
            const text = res instanceof Response ? await res.text() : String(res);
            result.replaceChildren(errorBox(res.status ?? 'network', parseJson(text), text));
            return;
          }
          const a = h('a', { href: URL.createObjectURL(await res.blob()), download: `${collection}.csv` });
          document.body.append(a);
          a.click();
          a.remove();
          result.replaceChildren();
        },
      },
      'Download CSV',
    );
    return h('p', { class: 'download' }, button, ' the whole list (every page), one row per object ', result);
  }

  function parseJson(text) {
    try {
      return text ? JSON.parse(text) : null;
    } catch {
      return undefined;
    }
  }

  function queryForm(op, path) {
    const params = (op?.parameters || []).filter((p) => p.in === 'query');
    if (params.length === 0) return null;
    const here = new URL(path, location.origin);
    const inputs = params.map((p) => {
      const id = `q-${p.name}`;
      const now = here.searchParams.get(p.name) ?? '';
      const s = p.schema || {};
      const control = s.enum
        ? h(
            'select',
            { id, name: p.name },
            h('option', { value: '' }, ''),
            s.enum.map((v) => h('option', { value: v, selected: v === now }, v)),
          )
        : s.type === 'boolean'
          ? h(
              'select',
              { id, name: p.name },
              ['', 'true', 'false'].map((v) => h('option', { value: v, selected: v === now }, v)),
            )
          : h('input', { id, name: p.name, value: now, type: s.type === 'integer' ? 'number' : 'text', placeholder: s.default ?? '' });
      return h('label', { for: id, title: p.description || '' }, h('span', {}, p.name), control);
    });
    const form = h(
      'form',
      {
        class: 'query',
        onsubmit: (e) => {
          e.preventDefault();
          const q = new URLSearchParams();
          for (const el of form.querySelectorAll('[name]')) if (el.value !== '') q.append(el.name, el.value);
          const s = q.toString();
          navigate(here.pathname + (s ? `?${s}` : ''));
        },
      },
      inputs,
      h('button', { type: 'submit' }, 'Apply'),
    );
    const active = params.some((p) => here.searchParams.has(p.name));
    return h(
      'details',
      { class: 'params', open: active },
      h('summary', {}, `Query parameters (${params.length}): filters, fields, expand, pagination`),
      form,
    );
  }

  /** The schema a write body's objects follow (`…Input`), through the body's allOf, oneOf and array wrappers. */
  function bodySchema(op) {
    let s = op.requestBody?.content?.['application/json']?.schema;
    for (let depth = 0; s && !s.$ref && depth < 4; depth++) s = s.allOf?.[0] ?? s.oneOf?.[0] ?? s.items;
    return s?.$ref ? spec.components?.schemas?.[s.$ref.split('/').pop()] : undefined;
  }

  const isArrayBody = (op) => op.requestBody?.content?.['application/json']?.schema?.type === 'array';

  /** The objects a page shows: a list's (bare or the page's results), or none. */
  function shownObjects(parsed) {
    const items = Array.isArray(parsed) ? parsed : Array.isArray(parsed?.results) ? parsed.results : [];
    return items.filter((o) => o && typeof o === 'object' && !Array.isArray(o));
  }

  /**
   * The body a write form starts with: for a bulk PUT/PATCH the objects shown, each with its id and writable
   * fields; for an object's PUT/PATCH that object's writable fields; for a POST an object valid here
   * (newObject); nothing for a DELETE.
   */
  function startingBody(method, op, parsed, pathname) {
    if (method === 'DELETE') return undefined;
    const schema = bodySchema(op);
    const fields = new Set(Object.keys(schema?.properties || {}));
    const writable = (obj) => Object.fromEntries(Object.entries(obj).filter(([k]) => fields.has(k)));
    if (method === 'POST') return schema ? newObject(schema, shownObjects(parsed), pathname) : {};
    if (isArrayBody(op)) return shownObjects(parsed).map((o) => ({ id: o.id, ...writable(o) }));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return writable(parsed);
    return {};
  }

  /** The site a path is under: `/api/sites/3/devices/` → 3. */
  function siteOf(pathname) {
    const m = /^\/api\/sites\/(\d+)\/\w+\//.exec(pathname);
    return m ? Number(m[1]) : undefined;
  }

  /**
   * A new object that this site can take: the document's example, with the site set to the page's, no
   * attributes (a site defines its own), a related object kept only when an object shown names it too
   * (else left empty for the reader to fill), and a value already taken by an object shown (a hostname,
   * a name) counted up past them: `r1` → `r3`.
   */
  function newObject(schema, shown, pathname) {
    const example = schema.examples?.[0] ?? Object.fromEntries(Object.keys(schema.properties || {}).map((k) => [k, '']));
    const collection = collectionOf(templateOf(pathname), pathname);
    const site = siteOf(pathname) ?? shown[0]?.site_id ?? shown[0]?.site ?? '';
    const out = {};
    for (const [k, v] of Object.entries(example)) {
      if (!(k in (schema.properties || {}))) continue;
      const names = FIELD_COLLECTION[k];
      if (k === 'attributes') out[k] = {};
      else if (k === 'site_id' || k === 'site') out[k] = site;
      else if (names && names !== collection && v !== null) {
        // A list of them (addresses) is left empty: an object shown holding one says nothing of another taking it.
        const vouched = !Array.isArray(v) && shown.some((o) => o[k] === v);
        out[k] = vouched ? v : Array.isArray(v) ? [] : '';
      } else out[k] = untaken(v, new Set(shown.map((o) => o[k])));
    }
    return out;
  }

  /** `value`, or when an object shown has it, the same with its trailing number counted up until none has. */
  function untaken(value, taken) {
    if (typeof value !== 'string' || value === '' || !taken.has(value)) return value;
    const m = /^(.*?)(\d*)$/.exec(value);
    for (let n = m[2] === '' ? 2 : Number(m[2]) + 1; ; n++) if (!taken.has(`${m[1]}${n}`)) return `${m[1]}${n}`;
  }

  function writeForms(match, path, parsed) {
    if (!match) return null;
    const forms = [];
    for (const method of ['post', 'put', 'patch', 'delete']) {
      const op = match.ops[method];
      if (!op) continue;
      const M = method.toUpperCase();
      const start = startingBody(M, op, parsed, path);
      const id = `body-${method}`;
      const area = op.requestBody ? h('textarea', { id, name: 'body', rows: 8, spellcheck: 'false' }) : null;
      if (area) area.value = start === undefined ? '' : JSON.stringify(start, null, 2);
      const result = h('div', { class: 'result' });
      const form = h(
        'form',
        {
          class: `write write-${method}`,
          'data-method': M,
          onsubmit: async (e) => {
            e.preventDefault();
            if (M === 'DELETE' && !confirm(`${op.summary || 'Delete'}: ${path}?`)) return;
            await submit(M, path, area ? area.value : '', result);
          },
        },
        h('h3', {}, `${M} `, h('small', {}, op.summary || '')),
        area ? h('label', { for: id }, 'Body (JSON)') : null,
        area,
        h('button', { type: 'submit' }, M),
        result,
      );
      forms.push(form);
    }
    return forms.length ? h('section', { class: 'writes' }, h('h2', {}, 'Change'), forms) : null;
  }

  /** A failed write: its error under its form, and no earlier success left above it. */
  function showFailure(result, box) {
    main.querySelector('.notice')?.remove();
    result.replaceChildren(box);
  }

  /**
   * Where an object is after a PUT or PATCH: its URL may name it by a field the write changed (a device by
   * its hostname, an interface by its name_slug), and then the object is found under the new value.
   */
  function movedPath(path, before, after) {
    const key = templateOf(path)?.params?.id;
    if (!key || !before || !after || typeof before !== 'object' || typeof after !== 'object') return path;
    const name = decodeURIComponent(key);
    const field = Object.keys(before).find((k) => k !== 'id' && String(before[k]) === name);
    if (!field || after[field] === undefined || after[field] === before[field]) return path;
    const encoded = encodeURIComponent(String(after[field])).replace(/%2F/gi, '/').replace(/%3A/gi, ':');
    return `${path.slice(0, path.length - key.length - 1)}${encoded}/`;
  }

  async function submit(method, path, text, result) {
    result.replaceChildren(h('p', {}, '…'));
    let res;
    try {
      res = await fetch(path, {
        method,
        headers: headers(text.trim() ? { 'Content-Type': 'application/json' } : {}),
        body: text.trim() ? text : undefined,
      });
    } catch (err) {
      showFailure(result, errorBox('network', null, String(err)));
      return;
    }
    const body = await res.text();
    const parsed = parseJson(body) ?? null;
    if (!res.ok) {
      showFailure(result, errorBox(res.status, parsed, body));
      return;
    }
    const where = res.headers.get('Location');
    const detail = templateOf(path)?.tpl.endsWith('{id}/');
    if (method === 'DELETE' && detail) {
      // The object is gone: show the list it was in.
      return navigate(path.replace(/[^/]+\/$/, ''), `${method} ${path}: ${res.status}`);
    }
    const notice = `${method} ${path}: ${res.status}${where ? ` ${urlOf(where, location.origin)?.pathname ?? where}` : ''}`;
    const next = (method === 'PUT' || method === 'PATCH') && detail ? movedPath(path, parseJson(current.text), parsed) : current.path;
    await navigate(next, notice, next !== current.path);
  }

  function signIn() {
    const email = h('input', { id: 'signin-email', name: 'email', type: 'email', placeholder: 'email', autocomplete: 'username' });
    const key = h('input', {
      id: 'signin-key',
      name: 'secret_key',
      type: 'password',
      placeholder: 'secret key',
      autocomplete: 'current-password',
    });
    const result = h('span', { class: 'result' });
    return h(
      'form',
      {
        class: 'signin',
        onsubmit: async (e) => {
          e.preventDefault();
          const res = await fetch('/api/authenticate/', {
            method: 'POST',
            headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
            body: JSON.stringify({ email: email.value, secret_key: key.value }),
          });
          const body = await res.json().catch(() => null);
          if (!res.ok) {
            result.replaceChildren(errorBox(res.status, body, ''));
            return;
          }
          auth = { email: email.value, token: body.auth_token };
          sessionStorage.setItem(AUTH_KEY, JSON.stringify(auth));
          await navigate(current.path, null, false);
        },
      },
      email,
      key,
      h('button', { type: 'submit' }, 'Sign in'),
      result,
    );
  }

  function renderAuth() {
    if (auth) {
      authBar.replaceChildren(
        h('span', { class: 'who' }, `signed in as ${auth.email} `),
        h(
          'button',
          {
            type: 'button',
            onclick: () => {
              auth = null;
              sessionStorage.removeItem(AUTH_KEY);
              navigate(current.path, null, false);
            },
          },
          'Sign out',
        ),
      );
    } else authBar.replaceChildren(signIn());
  }

  async function render(notice) {
    await loadSpec();
    const { path, status, text } = current;
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = undefined;
    }
    const pathname = new URL(path, location.origin).pathname;
    const match = templateOf(pathname);
    const collection = collectionOf(match, pathname);
    const getOp = match?.ops.get;
    const out = [
      h('h1', {}, h('code', { class: `status s${Math.floor(status / 100)}` }, String(status)), ' ', h('code', {}, `GET ${path}`)),
    ];
    if (getOp?.summary) out.push(h('p', { class: 'summary' }, getOp.summary));
    if (notice) out.push(h('p', { class: 'notice', role: 'status' }, notice));
    out.push(crumbs(pathname));
    if (status === 401 && !auth) out.push(h('p', { class: 'hint' }, 'Sign in above with your email and secret key.'));
    if (status >= 400) out.push(errorBox(status, parsed, text));
    else if (parsed && !Array.isArray(parsed) && Array.isArray(parsed.results) && 'count' in parsed) {
      out.push(pager(parsed, dataPathOf(path)), withNetworkBars(table(parsed.results, collection), parsed.results, collection));
    } else if (Array.isArray(parsed)) {
      const plain = parsed.every((v) => v === null || typeof v !== 'object');
      out.push(h('p', { class: 'count' }, plural(parsed.length, plain ? 'item' : 'object')));
      out.push(plain ? valueList(parsed, collection) : withNetworkBars(table(parsed, collection), parsed, collection));
    } else if (parsed && typeof parsed === 'object') out.push(dl(parsed, collection), networkPicture(collection, parsed));
    else if (parsed !== undefined) out.push(h('p', {}, renderValue(parsed, '', collection)));
    else out.push(h('pre', {}, text));
    if (status < 400) {
      if (isList(getOp)) out.push(csvDownload(path, collection));
      out.push(related(match, pathname, parsed));
      out.push(queryForm(getOp, path));
      out.push(writeForms(match, pathname, parsed));
    }
    out.push(
      h('details', { class: 'raw' }, h('summary', {}, 'JSON'), h('pre', {}, parsed !== undefined ? JSON.stringify(parsed, null, 2) : text)),
    );
    main.replaceChildren(...out.filter(Boolean));
    document.title = `netsot ${path}`;
    renderAuth();
  }

  function crumbs(pathname) {
    const parts = pathname.split('/').filter(Boolean);
    const out = [];
    let at = '/';
    for (const p of parts) {
      at += `${p}/`;
      out.push(' / ', link(at, decoded(p)));
    }
    return h('nav', { class: 'crumbs' }, out);
  }

  /** The routes below this one (a device's interfaces, a site's devices), as links. */
  function related(match, pathname, parsed) {
    if (!match || !parsed || Array.isArray(parsed)) return null;
    const links = [];
    for (const [tpl, ops] of Object.entries(spec.paths)) {
      if (!ops.get || !tpl.startsWith(match.tpl) || tpl === match.tpl) continue;
      const rest = tpl.slice(match.tpl.length);
      let concrete = rest;
      if (match.tpl === '/api/sites/{id}/' && /^\{id\}\//.test(rest)) continue;
      if (/\{/.test(concrete)) continue;
      concrete = pathname + rest;
      links.push(h('li', {}, link(concrete, rest.replace(/\/$/, '')), ops.get.summary ? h('small', {}, ` ${ops.get.summary}`) : null));
    }
    // A site's own collections are nested under /api/sites/{site_id}/.
    if (match.tpl === '/api/sites/{id}/') {
      for (const [tpl, ops] of Object.entries(spec.paths)) {
        const m = /^\/api\/sites\/\{site_id\}\/(\w+)\/$/.exec(tpl);
        if (m && ops.get) links.push(h('li', {}, link(`${pathname}${m[1]}/`, m[1]), h('small', {}, ` ${ops.get.summary || ''}`)));
      }
    }
    return links.length ? h('section', { class: 'related' }, h('h2', {}, 'Related'), h('ul', {}, links)) : null;
  }

  async function navigate(path, notice, push = true) {
    await loadSpec();
    let res;
    try {
      res = await fetch(dataPathOf(path), { headers: headers() });
    } catch (err) {
      current = { path, status: 0, text: JSON.stringify({ error: { code: 0, message: String(err) } }) };
      return render(notice);
    }
    current = { path, status: res.status, text: await res.text() };
    if (push && path !== location.pathname + location.search) history.pushState({ path }, '', path);
    return render(notice);
  }

  document.addEventListener('click', (e) => {
    const a = e.target.closest?.('a[data-nav]');
    if (!a || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    navigate(a.getAttribute('href'));
  });
  window.addEventListener('popstate', () => navigate(location.pathname + location.search, null, false));

  // A page that came without credentials carries no answer (browse.ts): ask once, with the tab's sign-in if any.
  if (initial.deferred && auth) navigate(current.path, null, false);
  else render(null);
})();
