/**
 * Compiled JSON writers. Each resource schema compiles, with fast-json-stringify,
 * into one writer per selection of fields (fields=/omit=), cached, so the hot
 * path never walks a schema. Keys come out in canonical order (docs/api.md §20.1).
 */

import type { TSchema } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import type { ResourceSchema } from './fields.js';

export type Writer = (obj: object) => string;

function plain(schema: TSchema): object {
  return JSON.parse(JSON.stringify(schema, (k, v) => (k === 'x-field' || k === 'readOnly' ? undefined : v)));
}

const bySchema = new WeakMap<ResourceSchema<any>, SchemaWriters>();

export class SchemaWriters {
  private readonly cache = new Map<string, Writer>();
  private constructor(private readonly schema: ResourceSchema<any>) {}

  /** The writers of `schema`, made once. */
  static of(schema: ResourceSchema<any>): SchemaWriters {
    let w = bySchema.get(schema);
    if (!w) bySchema.set(schema, (w = new SchemaWriters(schema)));
    return w;
  }

  /** Canonical keys kept by fields/omit (fields first, then omit; unknown names ignored). */
  select(fields: string[] | null, omit: string[] | null): string[] {
    let keys = this.schema.order;
    if (fields) {
      const f = new Set(fields);
      keys = keys.filter((k) => f.has(k));
    }
    if (omit) {
      const o = new Set(omit);
      keys = keys.filter((k) => !o.has(k));
    }
    return keys;
  }

  writer(keys: string[] = this.schema.order): Writer {
    const cacheKey = keys.join(',');
    let w = this.cache.get(cacheKey);
    if (!w) {
      const properties: Record<string, object> = {};
      for (const k of keys) properties[k] = plain(this.schema.fields[k]);
      w = fastJson({ type: 'object', properties, required: keys }) as Writer;
      this.cache.set(cacheKey, w);
    }
    return w;
  }
}
