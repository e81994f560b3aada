import { describe, expect, test } from 'vitest';
import { kindOfResource, RESOURCE_NAMES } from '../../src/model/_attributes.js';
import { kindTableDisagreements, MODELS, modelByKind } from '../../src/model/registry.js';
import { CHANGE_RESOURCES, eventCode, resourceCode } from '../../src/store/change-names.js';
import { kindOfName, MODEL_NAMES } from '../../src/store/kinds.js';

describe('kind tables', () => {
  test('the registered models agree with every kind table', () => {
    expect(kindTableDisagreements(MODELS)).toEqual([]);
  });

  test('the agreement check names a model whose name, attributes, writes or permission type disagree', () => {
    const renamed = MODELS.map((m) => (m.kind === 'network' ? { ...m, name: 'Prefix' } : m));
    expect(kindTableDisagreements(renamed)).toEqual(["model network is named 'Prefix' but MODEL_NAMES says 'Network'"]);
    const bare = MODELS.map((m) => (m.kind === 'device' ? { ...m, reads: { ...m.reads, attributes: undefined } } : m));
    expect(kindTableDisagreements(bare)).toEqual(['model device has no reads.attributes but is in ATTRIBUTE_KINDS']);
    const readOnly = MODELS.map((m) => (m.kind === 'circuit' ? { ...m, writes: undefined } : m));
    expect(kindTableDisagreements(readOnly)).toEqual(['model circuit has no writes but is in CHANGE_KINDS']);
    const device = MODELS.find((m) => m.kind === 'device')!;
    const writableValues = MODELS.map((m) => (m.kind === 'value' ? { ...m, writes: device.writes } : m));
    expect(kindTableDisagreements(writableValues)).toEqual(['model value has writes but is not in CHANGE_KINDS']);
    const withoutChanges = MODELS.filter((m) => m.kind !== 'change');
    expect(kindTableDisagreements(withoutChanges)).toEqual(['MODEL_NAMES has kind change, which no model has']);
    const unguarded = MODELS.map((m) => (m.kind === 'circuit' ? { ...m, grants: undefined } : m));
    expect(kindTableDisagreements(unguarded)).toEqual(['PERMISSION_TYPES has circuit, which no model uses']);
    expect(kindTableDisagreements([...MODELS, MODELS[0]])).toEqual(['two models of kind site', 'two models at collection sites']);
  });

  test('the derived name lists keep the order clients see', () => {
    expect(CHANGE_RESOURCES).toEqual(['Site', 'Network', 'Attribute', 'Device', 'Interface', 'Circuit', 'Protocol', 'ProtocolType']);
    expect(RESOURCE_NAMES).toEqual(['Device', 'Network', 'Interface', 'Circuit', 'Protocol']);
  });

  test('kind and name map both ways for every model', () => {
    for (const m of MODELS) expect(kindOfName(m.name)).toBe(m.kind);
    for (const name of RESOURCE_NAMES) expect(modelByKind(kindOfResource(name)).name).toBe(name);
    expect(kindOfName('Nope')).toBeUndefined();
    expect(Object.keys(MODEL_NAMES).length).toBe(MODELS.length);
  });
});

describe('Change codes', () => {
  test('a Change of a kind CHANGE_KINDS does not list fails rather than storing a code of -1', () => {
    expect(resourceCode('Network')).toBe(CHANGE_RESOURCES.indexOf('Network'));
    expect(eventCode('Delete')).toBe(2);
    expect(() => resourceCode('Value')).toThrowError(/unknown resource .*CHANGE_KINDS.*: Value/);
    expect(() => eventCode('Upsert')).toThrowError(/unknown event: Upsert/);
  });
});
