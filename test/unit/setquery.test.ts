/**
 * Set-query evaluation (docs/api.md §21) on a hand-built AttributeIndex:
 * intersection, difference and union left to right, the symbolic "all" start
 * set, multi values, regex terms (unanchored, case-sensitive, JavaScript
 * syntax, invalid → 400), per-site evaluation with no leaks between sites,
 * and that evaluation never changes the index it reads.
 */
import { describe, expect, test } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { AttributeIndex, postingIds } from '../../src/query/attribute-index.js';
import {
  compileTermRegexes,
  emptyQueryError,
  evaluateSetQuery,
  UNIQUE_TEMPLATE,
  uniqueCountError,
  unknownAttributeError,
} from '../../src/query/setquery.js';
import { parseSetQuery } from '../../src/query/setquery-parse.js';

type Attrs = Record<string, string | string[]>;

/** Objects per site: id → attributes. */
const WORLD: Record<number, Record<number, Attrs>> = {
  // The example of docs/api.md §21, plus d4 with nothing and d5 with tags only.
  1: {
    1: { owner: 'jathan', role: 'br', tags: ['core', 'edge'] },
    2: { owner: 'jathan', tags: ['edge'], note: '' },
    3: { role: 'dr', note: 'has space' },
    4: {},
    5: { tags: ['Edge'] },
  },
  // Another site: the same values on other ids.
  2: {
    10: { owner: 'jathan', role: 'br' },
    11: { owner: 'jathan' },
    12: { role: 'dr' },
  },
};

function build(): AttributeIndex {
  const index = new AttributeIndex();
  for (const [site, objects] of Object.entries(WORLD)) {
    for (const [id, attrs] of Object.entries(objects)) index.add('device', Number(site), Number(id), attrs);
  }
  return index;
}

const index = build();

/** Ids the query selects per site: 'all' while the answer is still every object, else the ids. */
function run(query: string, sites: number[] = [1], idx: AttributeIndex = index): Record<number, number[] | 'all'> {
  const perSite = evaluateSetQuery({ attributeIndex: idx }, { kind: 'device', sites }, parseSetQuery(query));
  const out: Record<number, number[] | 'all'> = {};
  for (const [site, acc] of perSite) {
    if (!acc.all) {
      out[site] = [...acc.ids];
      continue;
    }
    // "every object except": the site's objects minus those.
    const except = new Set(acc.except);
    out[site] = Object.keys(WORLD[site] ?? {})
      .map(Number)
      .filter((id) => !except.has(id));
  }
  return out;
}

const in1 = (query: string) => run(query)[1];

function failure(fn: () => unknown): { status: number; body: unknown } {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return { status: (e as ApiError).status, body: (e as ApiError).body };
  }
  throw new Error('expected an ApiError');
}

describe('evaluateSetQuery on the example of docs/api.md §21', () => {
  test('evaluateSetQuery does intersect owner=jathan to d1 and d2', () => {
    expect(in1('owner=jathan')).toEqual([1, 2]);
  });

  test('evaluateSetQuery does subtract role=br from owner=jathan', () => {
    expect(in1('owner=jathan -role=br')).toEqual([2]);
  });

  test('evaluateSetQuery does union role=dr onto role=br', () => {
    expect(in1('role=br +role=dr')).toEqual([1, 3]);
  });

  test('evaluateSetQuery does start a leading difference from every object', () => {
    expect(in1('-role=br')).toEqual([2, 3, 4, 5]);
  });

  test('evaluateSetQuery does match role_regex=^b to d1', () => {
    expect(in1('role_regex=^b')).toEqual([1]);
  });
});

describe('evaluateSetQuery operations', () => {
  test('evaluateSetQuery does keep a leading union symbolic as all', () => {
    const everything = Object.keys(WORLD[1]).map(Number);
    expect(in1('+role=br')).toEqual(everything);
    expect(in1('+nothing=here')).toEqual(everything);
    // …and symbolic: nothing was read from the collection.
    const [answer] = evaluateSetQuery({ attributeIndex: index }, { kind: 'device', sites: [1] }, parseSetQuery('+role=br')).values();
    expect(answer).toEqual({ all: true, except: new Int32Array(0) });
  });

  test('evaluateSetQuery does keep no terms as all', () => {
    expect(in1('')).toEqual(Object.keys(WORLD[1]).map(Number));
  });

  test('evaluateSetQuery does apply terms left to right', () => {
    expect(in1('role=dr +owner=jathan')).toEqual([1, 2, 3]);
    expect(in1('+owner=jathan role=dr')).toEqual([3]);
    expect(in1('owner=jathan +role=dr -role=br')).toEqual([2, 3]);
    expect(in1('owner=jathan -role=br +role=br')).toEqual([1, 2]);
    expect(in1('-role=br +role=br')).toEqual([1, 2, 3, 4, 5]);
    expect(in1('-role=br -role=dr')).toEqual([2, 4, 5]);
  });

  test('evaluateSetQuery does give an empty set for an unknown value or name', () => {
    expect(in1('owner=nobody')).toEqual([]);
    expect(in1('ghost=1')).toEqual([]);
    expect(in1('owner=jathan ghost=1')).toEqual([]);
    expect(in1('-ghost=1')).toEqual([1, 2, 3, 4, 5]);
  });

  test('evaluateSetQuery does intersect to empty and stay empty', () => {
    expect(in1('owner=jathan role=dr')).toEqual([]);
    expect(in1('owner=jathan role=dr -tags=edge')).toEqual([]);
    expect(in1('owner=jathan role=dr +role=dr')).toEqual([3]);
  });

  test('evaluateSetQuery does match any element of a multi value', () => {
    expect(in1('tags=edge')).toEqual([1, 2]);
    expect(in1('tags=core')).toEqual([1]);
    expect(in1('tags=edge tags=core')).toEqual([1]);
    expect(in1('-tags=edge')).toEqual([3, 4, 5]);
  });

  test('evaluateSetQuery does match the empty value for a term without =', () => {
    expect(in1('note')).toEqual([2]);
    expect(in1('-note')).toEqual([1, 3, 4, 5]);
  });

  test('evaluateSetQuery does compare plain values exactly', () => {
    expect(in1('tags=Edge')).toEqual([5]);
    expect(in1('owner=jath')).toEqual([]);
    expect(in1('note=has')).toEqual([]);
    expect(in1('"note=has space"')).toEqual([3]);
  });
});

describe('evaluateSetQuery regex terms', () => {
  test('evaluateSetQuery does match regexes unanchored', () => {
    expect(in1('owner_regex=ath')).toEqual([1, 2]);
    expect(in1('role_regex=r')).toEqual([1, 3]);
    expect(in1('note_regex=')).toEqual([2, 3]);
  });

  test('evaluateSetQuery does match regexes case-sensitively', () => {
    expect(in1('tags_regex=^E')).toEqual([5]);
    expect(in1('tags_regex=^e')).toEqual([1, 2]);
  });

  test('evaluateSetQuery does list an object once when several of its values match', () => {
    expect(in1('tags_regex=e')).toEqual([1, 2, 5]);
    expect(in1('tags_regex=^(?:core|edge)$')).toEqual([1, 2]);
  });

  test('evaluateSetQuery does use JavaScript regex syntax', () => {
    expect(in1('note_regex=\\s')).toEqual([3]);
    expect(in1('role_regex=^(?<first>[bd])r$')).toEqual([1, 3]);
  });

  test('evaluateSetQuery does combine regex terms with the operators', () => {
    expect(in1('owner=jathan -role_regex=^b')).toEqual([2]);
    expect(in1('role_regex=^d +tags_regex=^c')).toEqual([1, 3]);
    expect(in1('-tags_regex=.')).toEqual([3, 4]);
  });

  test('evaluateSetQuery does reject an invalid regex with 400 naming the pattern', () => {
    expect(failure(() => in1('role_regex=('))).toEqual({ status: 400, body: { query: "Invalid regex: '('" } });
    expect(failure(() => in1('owner=jathan -role_regex=[a-'))).toEqual({ status: 400, body: { query: "Invalid regex: '[a-'" } });
  });

  test('evaluateSetQuery does reject an invalid regex even with no site to evaluate', () => {
    expect(failure(() => run('role_regex=*', []))).toEqual({ status: 400, body: { query: "Invalid regex: '*'" } });
  });

  test('compileTermRegexes does compile regex terms only', () => {
    const res = compileTermRegexes(parseSetQuery('a=( b_regex=x+ -c'));
    expect(res[0]).toBeNull();
    expect(res[1]).toBeInstanceOf(RegExp);
    expect(res[1]!.source).toBe('x+');
    expect(res[1]!.flags).toBe('l');
    expect(res[2]).toBeNull();
  });
});

describe('evaluateSetQuery sites', () => {
  test('evaluateSetQuery does evaluate each site on its own', () => {
    expect(run('owner=jathan', [1, 2])).toEqual({ 1: [1, 2], 2: [10, 11] });
    expect(run('owner=jathan -role=br', [1, 2])).toEqual({ 1: [2], 2: [11] });
  });

  test('evaluateSetQuery does not leak other sites into a union', () => {
    expect(run('role=nobody +owner=jathan', [2])).toEqual({ 2: [10, 11] });
    expect(run('role=dr +owner=jathan', [1])).toEqual({ 1: [1, 2, 3] });
  });

  test('evaluateSetQuery does start a difference from the site only', () => {
    expect(run('-role=br', [2])).toEqual({ 2: [11, 12] });
  });

  test('evaluateSetQuery does answer an empty site list with nothing', () => {
    expect(run('owner=jathan', [])).toEqual({});
  });

  test('evaluateSetQuery does give a site without the attribute an empty set', () => {
    expect(run('tags=edge', [1, 2])).toEqual({ 1: [1, 2], 2: [] });
    expect(run('-tags=edge', [2])).toEqual({ 2: [10, 11, 12] });
  });

  test('evaluateSetQuery does keep to the kind it is asked about', () => {
    const idx = build();
    idx.add('network', 1, 100, { owner: 'jathan' });
    expect(run('owner=jathan', [1], idx)).toEqual({ 1: [1, 2] });
  });
});

describe('evaluateSetQuery and the index', () => {
  test('evaluateSetQuery does not change the postings it reads', () => {
    const idx = build();
    const before = [...postingIds(idx.matching('device', 1, 'owner', 'jathan'))];
    run('owner=jathan +role=dr -tags=core', [1], idx);
    run('tags=edge -owner=jathan', [1], idx);
    expect([...postingIds(idx.matching('device', 1, 'owner', 'jathan'))]).toEqual(before);
    expect([...postingIds(idx.matching('device', 1, 'tags', 'edge'))].sort()).toEqual([1, 2]);
    expect([...postingIds(idx.matching('device', 1, 'role', 'dr'))]).toEqual([3]);
  });

  test('evaluateSetQuery does follow removals from the index', () => {
    const idx = build();
    idx.remove('device', 1, 1, WORLD[1][1]);
    expect(run('owner=jathan', [1], idx)).toEqual({ 1: [2] });
    expect(run('tags=edge', [1], idx)).toEqual({ 1: [2] });
  });
});

describe('set-query error texts', () => {
  test('unknownAttributeError does name the attribute in the query key', () => {
    const e = unknownAttributeError('fake');
    expect([e.status, e.body]).toEqual([400, { query: "Attribute matching query does not exist: 'fake'" }]);
  });

  test('emptyQueryError does name the model', () => {
    const e = emptyQueryError('Device');
    expect([e.status, e.body]).toEqual([400, { query: 'Query empty, unable to provide Device' }]);
  });

  test('uniqueCountError does give the count text', () => {
    expect(uniqueCountError(2).body).toEqual({ query: 'Query returned 2 results, but exactly 1 expected' });
    expect(uniqueCountError(0).body).toEqual({ query: 'Query returned 0 results, but exactly 1 expected' });
    expect(UNIQUE_TEMPLATE.replace('{n}', '7')).toBe('Query returned 7 results, but exactly 1 expected');
  });
});
